#!/usr/bin/env python3
"""Open every table file of agrag runs with pyarrow and DuckDB and check README's contract.

Usage: parquet_check.py RUN_DIR...

For each run folder: every `*.parquet` file opens with `pyarrow.parquet.read_table` and with
DuckDB's `read_parquet`, with the column names and types README.md documents, the row count the
manifest lists, `run_id` and `format_version` in the key-value metadata, statistics on every
column chunk and row groups of at most 128Ki rows. Every `*.arrow` file (Arrow IPC, mapped by
the engine) opens with `pyarrow.ipc.open_file`, and DuckDB queries it through pyarrow.
Exits 1 naming the file and column at fault.
"""

import json
import pathlib
import sys

import duckdb
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 128 * 1024
STR, U32, I32, F64, BOOL = pa.string(), pa.uint32(), pa.int32(), pa.float64(), pa.bool_()
LIST_STR = pa.list_(pa.string())

# README.md's snapshot table: (column, pyarrow type, DuckDB type). None = embedding (see below).
DOCUMENTED = {
    "documents": [("document_key", STR, "VARCHAR"), ("title", STR, "VARCHAR"),
                  ("year", I32, "INTEGER"), ("num_passages", U32, "UINTEGER"),
                  ("linked", BOOL, "BOOLEAN")],
    "passages": [("passage_id", STR, "VARCHAR"), ("document_key", STR, "VARCHAR"),
                 ("position", U32, "UINTEGER"), ("text", STR, "VARCHAR")],
    "concepts": [("concept_id", STR, "VARCHAR"), ("preferred_term", STR, "VARCHAR"),
                 ("synonyms", LIST_STR, "VARCHAR[]")],
    "concept_edges": [("child", STR, "VARCHAR"), ("parent", STR, "VARCHAR"),
                      ("relation", STR, "VARCHAR")],
    "document_concepts": [("document_key", STR, "VARCHAR"), ("node_field", STR, "VARCHAR"),
                          ("concept_id", STR, "VARCHAR")],
    "concept_evidence": [("document_key", STR, "VARCHAR"), ("concept_id", STR, "VARCHAR"),
                         ("way", U32, "UINTEGER"), ("passage_id", STR, "VARCHAR")],
    "report_sources": [("community_id", U32, "UINTEGER"), ("passage_id", STR, "VARCHAR")],
    "community_lineage": [("community_id", U32, "UINTEGER"), ("level", U32, "UINTEGER"),
                          ("event", STR, "VARCHAR"), ("predecessor", U32, "UINTEGER"),
                          ("jaccard", F64, "DOUBLE"), ("predecessors", pa.list_(U32), "UINTEGER[]"),
                          ("successor", U32, "UINTEGER"), ("size", U32, "UINTEGER"),
                          ("previous_size", U32, "UINTEGER"), ("fingerprint", STR, "VARCHAR")],
    "entities": [("entity_id", U32, "UINTEGER"), ("concept_id", STR, "VARCHAR"),
                 ("name", STR, "VARCHAR"), ("num_passages", U32, "UINTEGER"),
                 ("degree", F64, "DOUBLE")],
    "mentions": [("entity_id", U32, "UINTEGER"), ("passage_id", STR, "VARCHAR"),
                 ("num_occurrences", U32, "UINTEGER")],
    "relationships": [("source", U32, "UINTEGER"), ("target", U32, "UINTEGER"),
                      ("weight", F64, "DOUBLE")],
    "communities": [("community_id", U32, "UINTEGER"), ("level", U32, "UINTEGER"),
                    ("parent", U32, "UINTEGER"), ("size", U32, "UINTEGER"),
                    ("is_leaf", BOOL, "BOOLEAN")],
    "membership": [("run_id", STR, "VARCHAR"), ("level", U32, "UINTEGER"),
                   ("entity_id", U32, "UINTEGER"), ("community_id", U32, "UINTEGER"),
                   ("parent_community_id", U32, "UINTEGER"), ("is_leaf", BOOL, "BOOLEAN")],
    "reports": [("community_id", U32, "UINTEGER"), ("level", U32, "UINTEGER"),
                ("title", STR, "VARCHAR"), ("summary", STR, "VARCHAR"),
                ("findings", LIST_STR, "VARCHAR[]"), ("rank", F64, "DOUBLE"),
                ("full_content", STR, "VARCHAR")],
    "report_embeddings": [("community_id", U32, "UINTEGER"), ("embedding", None, None)],
    "document_embeddings": [("document_key", STR, "VARCHAR"), ("embedding", None, None)],
    # Engine accelerators (Arrow IPC only, see ACCELERATORS); the IVF files exist in runs of
    # >= 8,192 communities.
    "concept_postings": [("node_field", STR, "VARCHAR"), ("concept_id", STR, "VARCHAR"),
                         ("num_documents", pa.uint64(), "UBIGINT"),
                         ("documents", pa.binary(), "BLOB")],
    "report_ivf_centroids": [("list_id", U32, "UINTEGER"), ("centroid", None, None)],
    "report_ivf_lists": [("list_id", U32, "UINTEGER"), ("community_id", U32, "UINTEGER"),
                         ("scale", pa.float32(), "FLOAT"), ("code", "int8", None)],
    # The vectors of every distinct title and passage, keyed by the BLAKE3 of the text, which the
    # next run on the root reuses (Arrow IPC only; runs written before it lack it).
    "text_embeddings": [("text_blake3", pa.binary(32), "BLOB"), ("embedding", None, None)],
    # What linking found in every distinct document, keyed by the BLAKE3 of the linker's input,
    # which the next run on the root reuses (Arrow IPC only; runs written before it lack it).
    "document_links": [("document_blake3", pa.binary(32), "BLOB"), ("links", pa.binary(), "BLOB")],
}


# The column files the engine maps (format 2 on; README's "Mapped column files"), keyed by file
# name since three share a stem with a Parquet table. Text is Binary holding UTF-8.
BIN, LIST_U32 = pa.binary(), pa.list_(pa.uint32())
MAPPED = {
    "documents.arrow": [("document_key", BIN, "BLOB"), ("title", BIN, "BLOB"),
                        ("year", I32, "INTEGER"), ("linked", BOOL, "BOOLEAN"),
                        ("first_passage", U32, "UINTEGER")],
    "passages.arrow": [("document", U32, "UINTEGER"), ("position", U32, "UINTEGER"),
                       ("text", BIN, "BLOB")],
    "entities.arrow": [("concept_id", BIN, "BLOB"), ("name", BIN, "BLOB"), ("degree", F64, "DOUBLE"),
                       ("passages", LIST_U32, "UINTEGER[]")],
    "communities.arrow": [("community_id", U32, "UINTEGER"), ("level", U32, "UINTEGER"),
                          ("parent_row", U32, "UINTEGER"), ("members", LIST_U32, "UINTEGER[]"),
                          ("report_sources", LIST_U32, "UINTEGER[]")],
    "concepts.arrow": [("concept_id", BIN, "BLOB"), ("preferred_term", BIN, "BLOB")],
    "terms.arrow": [("term", BIN, "BLOB"), ("concepts", LIST_U32, "UINTEGER[]")],
    "concept_edges.arrow": [("child", U32, "UINTEGER"), ("parent", U32, "UINTEGER"),
                            ("relation", BIN, "BLOB")],
}

ACCELERATORS = ("concept_postings", "report_ivf_centroids", "report_ivf_lists", "text_embeddings",
                "document_links")
# Tables added after the golden run of format 1 was written: every new run has them.
ADDED_LATER = ("concept_evidence", "report_sources", "community_lineage")
TABLES = [t for t in DOCUMENTED if t not in ACCELERATORS and t not in ADDED_LATER]


class Failure(Exception):
    pass


def expect(cond, where, what):
    if not cond:
        raise Failure(f"{where}: {what}")


def types_of(stem, dim, where, file_name=None):
    if file_name in MAPPED:
        return MAPPED[file_name]
    expect(stem in DOCUMENTED, where, "file not documented in README.md's snapshot table")
    out = []
    for name, pa_type, duck_type in DOCUMENTED[stem]:
        if pa_type == "int8":
            pa_type, duck_type = pa.list_(pa.int8(), dim), (f"TINYINT[{dim}]", "TINYINT[]")
        elif pa_type is None:
            # Fixed-size list of float32. Parquet has no fixed-size list: DuckDB sees the list
            # (FLOAT[]) and the dimension is checked on the values; via Arrow it is FLOAT[dim].
            pa_type, duck_type = pa.list_(pa.float32(), dim), (f"FLOAT[{dim}]", "FLOAT[]")
        out.append((name, pa_type, duck_type))
    return out


def check_arrow_schema(schema, want, where):
    names = [f.name for f in schema]
    expect(names == [w[0] for w in want], where, f"columns {names}, README says {[w[0] for w in want]}")
    for field, (name, pa_type, _) in zip(schema, want):
        found = field.type
        if pa.types.is_list(found) or pa.types.is_fixed_size_list(found):
            # Item field names and nullability are not part of the contract.
            same = type(found) is type(pa_type) and found.value_type == pa_type.value_type and (
                not pa.types.is_fixed_size_list(found) or found.list_size == pa_type.list_size)
        else:
            same = found == pa_type
        expect(same, f"{where} column {name}", f"type {found}, README says {pa_type}")


def check_duckdb(con, relation, want, rows, dim, where):
    described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    names = [r[0] for r in described]
    expect(names == [w[0] for w in want], where, f"DuckDB columns {names}")
    for (name, duck_type, *_), (_, _, want_type) in zip(described, want):
        ok = duck_type in want_type if isinstance(want_type, tuple) else duck_type == want_type
        expect(ok, f"{where} column {name}", f"DuckDB type {duck_type}, expected {want_type}")
    (n,) = con.execute(f"SELECT count(*) FROM {relation}").fetchall()[0]
    expect(n == rows, where, f"DuckDB counts {n} rows, the manifest says {rows}")
    if "embedding" in names:
        (bad,) = con.execute(
            f"SELECT count(*) FROM {relation} WHERE len(embedding) <> {dim}").fetchall()[0]
        expect(bad == 0, f"{where} column embedding", f"{bad} rows are not of length {dim}")


def check_run(run_dir):
    manifest = json.loads((run_dir / "manifest.json").read_text())
    run_id, version, dim = manifest["run_id"], manifest["format_version"], manifest["embedder"]["dim"]
    con = duckdb.connect()
    checked = []
    for entry in manifest["files"]:
        name, path = entry["name"], run_dir / entry["name"]
        where = str(path)
        if name.endswith(".parquet"):
            want = types_of(name[: -len(".parquet")], dim, where)
            table = pq.read_table(path)
            check_arrow_schema(table.schema, want, f"{where} (pyarrow)")
            expect(table.num_rows == entry["rows"], where, f"{table.num_rows} rows, manifest says {entry['rows']}")
            meta = pq.ParquetFile(path).metadata
            kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
            expect(kv.get("run_id") == run_id, where, f"run_id metadata {kv.get('run_id')!r}")
            expect(kv.get("format_version") == str(version), where,
                   f"format_version metadata {kv.get('format_version')!r}")
            if version >= 2:
                # pyarrow shows the Arrow schema's metadata (not the Parquet key-value pairs):
                # from format 2 on it carries run_id and format_version as well.
                sm = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
                expect(sm.get("run_id") == run_id and sm.get("format_version") == str(version),
                       f"{where} (pyarrow schema metadata)",
                       f"run_id {sm.get('run_id')!r}, format_version {sm.get('format_version')!r}")
            for g in range(meta.num_row_groups):
                rg = meta.row_group(g)
                expect(rg.num_rows <= ROW_GROUP_ROWS, where, f"row group {g} has {rg.num_rows} rows")
                for c in range(rg.num_columns):
                    col = rg.column(c)
                    expect(col.is_stats_set, where, f"row group {g} column {col.path_in_schema} has no statistics")
            duck_want = [(n, t, d if not isinstance(d, tuple) else d[1]) for n, t, d in want]
            check_duckdb(con, f"read_parquet('{path}')", duck_want, entry["rows"], dim, f"{where} (DuckDB)")
        elif name.endswith(".arrow"):
            want = types_of(name[: -len(".arrow")], dim, where, name)
            with pa.memory_map(str(path)) as source:
                table = pyarrow.ipc.open_file(source).read_all()
            check_arrow_schema(table.schema, want, f"{where} (pyarrow IPC)")
            meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
            expect(meta.get("run_id") == run_id, where, f"run_id metadata {meta.get('run_id')!r}")
            con.register("ipc_table", table)
            duck_want = [(n, t, d if not isinstance(d, tuple) else d[0]) for n, t, d in want]
            check_duckdb(con, "ipc_table", duck_want, entry["rows"], dim, f"{where} (DuckDB via Arrow)")
            con.unregister("ipc_table")
        else:
            expect(name.startswith("text_index/"), where, "unexpected file in the manifest")
            continue
        checked.append(name)
    # Every table as Parquet, the two embedding tables also as Arrow IPC; the engine's
    # accelerators (concept postings, IVF) are optional: older and smaller runs lack them.
    required = {f"{t}.parquet" for t in TABLES} | {f"{t}.arrow" for t in ("report_embeddings", "document_embeddings")}
    optional = {f"{t}.arrow" for t in ACCELERATORS}
    later = {f"{t}.parquet" for t in ADDED_LATER}
    found_later = later & set(checked)
    expect(not found_later or found_later == later, str(run_dir),
           f"holds {sorted(found_later)} of {sorted(later)}: a run has all or none")
    optional |= later
    if version >= 2:
        required |= set(MAPPED)
    missing, extra = required - set(checked), set(checked) - required - optional
    expect(not missing and not extra, str(run_dir), f"missing {sorted(missing)}, unexpected {sorted(extra)}")
    return len(checked)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        for arg in argv[1:]:
            n = check_run(pathlib.Path(arg))
            print(f"{arg}: {n} files open in pyarrow {pa.__version__} and DuckDB {duckdb.__version__} as documented")
    except Failure as e:
        print(f"parquet check failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
