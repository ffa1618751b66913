//! Inputs as tables, through the binary: documents as Parquet and CSV give the same run as
//! JSON Lines; communities computed elsewhere (`--membership`) round-trip with `detect-graph`
//! and the run's own table; each broken rule of either is refused with exit 2 naming the file
//! and the field, and nothing is published.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use agrag_engine::format::Layout;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt32Array};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use polars_core::df;
use polars_core::prelude::*;
use polars_io::SerWriter;
use polars_io::csv::write::CsvWriter;
use polars_io::parquet::write::ParquetWriter;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn pipeline() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"));
    c.env("EMBEDDING_PROVIDER", "hash")
        .env_remove("EMBEDDING_MODEL")
        .env_remove("EMBEDDING_DIM")
        .env_remove("AGRAG_ROOT");
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `agrag-pipeline run --json` on `documents` with the shipped MeSH, 2 threads.
fn run(root: &Path, documents: &Path, extra: &[&str]) -> Output {
    pipeline()
        .args(["run", "--json", "--threads", "2", "--root"])
        .arg(root)
        .arg("--documents")
        .arg(documents)
        .arg("--vocabulary")
        .arg(repo().join("data/mesh"))
        .args(extra)
        .output()
        .unwrap()
}

/// The run id of a successful run.
fn run_id(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    s["run_id"].as_str().unwrap().to_owned()
}

/// Every Parquet table of a run: file name → (column name → column), without `run_id`.
fn tables(run_dir: &Path) -> BTreeMap<String, Vec<(String, ArrayRef)>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(run_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "parquet") {
            continue;
        }
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let mut columns = Vec::new();
        for b in &batches {
            for (f, c) in b.schema().fields().iter().zip(b.columns()) {
                if f.name() != "run_id" {
                    columns.push((f.name().clone(), c.clone()));
                }
            }
        }
        out.insert(
            path.file_name().unwrap().to_string_lossy().into_owned(),
            columns,
        );
    }
    out
}

fn run_dir(root: &Path, id: &str) -> PathBuf {
    Layout::new(root).run_dir(id)
}

/// The shipped 60-document fixture as a polars frame with the JSON shape's columns.
fn fixture_frame(lists_as_json: bool) -> DataFrame {
    let text = std::fs::read_to_string(repo().join("data/fixtures/pubmedqa-60.jsonl")).unwrap();
    let (mut keys, mut titles, mut years) = (Vec::new(), Vec::new(), Vec::new());
    let (mut passages, mut mesh): (Vec<Series>, Vec<Series>) = (Vec::new(), Vec::new());
    let (mut passages_json, mut mesh_json) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        keys.push(v["document_key"].as_str().unwrap().to_owned());
        titles.push(v["title"].as_str().map(str::to_owned));
        years.push(v["year"].as_i64());
        let strings = |f: &str| -> Vec<String> {
            v[f].as_array()
                .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default()
        };
        passages_json.push(serde_json::to_string(&strings("passages")).unwrap());
        mesh_json.push(serde_json::to_string(&strings("mesh")).unwrap());
        passages.push(Series::new("".into(), strings("passages")));
        mesh.push(Series::new("".into(), strings("mesh")));
    }
    let mut columns = vec![
        Column::new("document_key".into(), keys),
        Column::new("title".into(), titles),
        Column::new("year".into(), years),
    ];
    if lists_as_json {
        columns.push(Column::new("passages".into(), passages_json));
        columns.push(Column::new("mesh".into(), mesh_json));
    } else {
        columns.push(Column::new("passages".into(), passages));
        columns.push(Column::new("mesh".into(), mesh));
    }
    DataFrame::new_infer_height(columns).unwrap()
}

fn write_parquet(path: &Path, df: &mut DataFrame) {
    ParquetWriter::new(File::create(path).unwrap())
        .finish(df)
        .unwrap();
}

#[test]
fn documents_as_parquet_and_csv_give_the_same_tables_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("docs.parquet");
    write_parquet(&parquet, &mut fixture_frame(false));
    let csv = dir.path().join("docs.csv");
    CsvWriter::new(File::create(&csv).unwrap())
        .finish(&mut fixture_frame(true))
        .unwrap();
    let jsonl = repo().join("data/fixtures/pubmedqa-60.jsonl");
    let mut runs = Vec::new();
    for (name, docs) in [("jsonl", &jsonl), ("parquet", &parquet), ("csv", &csv)] {
        let root = dir.path().join(name);
        let id = run_id(&run(&root, docs, &[]));
        runs.push((name, tables(&run_dir(&root, &id))));
    }
    let (_, reference) = &runs[0];
    assert!(reference.len() >= 10, "{:?}", reference.keys());
    for (name, t) in &runs[1..] {
        assert_eq!(
            t.keys().collect::<Vec<_>>(),
            reference.keys().collect::<Vec<_>>()
        );
        for (file, columns) in reference {
            assert_eq!(&t[file], columns, "{file} differs between jsonl and {name}");
        }
    }
    // The format can also be given, whatever the extension.
    let renamed = dir.path().join("docs.table");
    std::fs::copy(&parquet, &renamed).unwrap();
    let root = dir.path().join("forced");
    run_id(&run(&root, &renamed, &["--documents-format", "parquet"]));
}

#[test]
fn a_text_column_is_split_and_columns_can_be_renamed() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.parquet");
    let mut df = df!(
        "pmid" => ["a1", "a2"],
        "headline" => ["Aspirin", "Stroke"],
        "body" => [
            "Aspirin lowers the risk of myocardial infarction.\n\nStroke and myocardial infarction share risk factors.",
            "Aspirin was given after the stroke. Heart attack and stroke are cardiovascular diseases.",
        ],
    )
    .unwrap();
    write_parquet(&docs, &mut df);
    let root = dir.path().join("root");
    let o = run(
        &root,
        &docs,
        &[
            "--key-column",
            "pmid",
            "--text-column",
            "body",
            "--title-column",
            "headline",
        ],
    );
    let id = run_id(&o);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["documents"], 2);
    // Split at the blank line; the second text is short enough to stay one passage.
    assert_eq!(s["passages"], 3);
    let t = tables(&run_dir(&root, &id));
    let (_, keys) = t["passages.parquet"]
        .iter()
        .find(|(n, _)| n == "passage_id")
        .unwrap();
    let keys: Vec<&str> = keys.as_string::<i32>().iter().flatten().collect();
    assert_eq!(keys, ["a1#0", "a1#1", "a2#0"]);
}

/// A root with one run published from the fixture; returns (root, run id).
fn published(dir: &Path) -> (PathBuf, String) {
    let root = dir.join("root");
    let id = run_id(&run(
        &root,
        &repo().join("data/fixtures/pubmedqa-60.jsonl"),
        &[],
    ));
    (root, id)
}

/// Exit 2, every needle in the message, LATEST and the runs as they were.
fn assert_refused(o: &Output, needles: &[&str], root: &Path, latest: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for n in needles {
        assert!(e.contains(n), "{n:?} not in: {e}");
    }
    assert!(e.contains("nothing was published"), "{e}");
    let layout = Layout::new(root);
    assert_eq!(layout.read_latest().unwrap().as_deref(), Some(latest));
    assert_eq!(layout.list_runs().unwrap(), vec![latest.to_owned()]);
}

#[test]
fn bad_document_tables_are_refused_naming_file_and_column_or_row() {
    let dir = tempfile::tempdir().unwrap();
    let (root, good) = published(dir.path());
    let fixture = repo().join("data/fixtures/pubmedqa-60.jsonl");
    let cases: Vec<(&str, DataFrame, Vec<&str>)> = vec![
        (
            "no_key.parquet",
            df!("title" => ["t"], "text" => ["Aspirin."]).unwrap(),
            vec!["no_key.parquet", "column \"document_key\"", "missing"],
        ),
        (
            "int_key.parquet",
            df!("document_key" => [1i64], "text" => ["Aspirin."]).unwrap(),
            vec!["int_key.parquet", "column \"document_key\"", "is of type i64", "expected string"],
        ),
        (
            "null_key.parquet",
            df!("document_key" => [Some("a"), None], "text" => ["Aspirin.", "Stroke."]).unwrap(),
            vec!["null_key.parquet", "row 1", "document_key is null"],
        ),
        (
            "dup_key.parquet",
            df!("document_key" => ["a", "a"], "text" => ["Aspirin.", "Stroke."]).unwrap(),
            vec!["dup_key.parquet", "row 1", "duplicate document_key \"a\" (first seen in row 0)"],
        ),
        (
            "both.parquet",
            df!("document_key" => ["a"], "text" => ["Aspirin."], "passages" => [Series::new("".into(), ["Stroke."])]).unwrap(),
            vec!["both.parquet", "row 0", "has both `passages` and `text`"],
        ),
        (
            "no_text.parquet",
            df!("document_key" => ["a"], "title" => ["t"]).unwrap(),
            vec!["no_text.parquet", "column \"text\"", "missing"],
        ),
        (
            "bad_year.parquet",
            df!("document_key" => ["a"], "text" => ["Aspirin."], "year" => [1.5f64]).unwrap(),
            vec!["bad_year.parquet", "column \"year\"", "expected an integer"],
        ),
    ];
    for (name, mut df, needles) in cases {
        let path = dir.path().join(name);
        write_parquet(&path, &mut df);
        assert_refused(&run(&root, &path, &[]), &needles, &root, &good);
    }
    let csv = dir.path().join("bad.csv");
    std::fs::write(
        &csv,
        "document_key,passages\na,\"[\"\"x\"\"]\"\nb,not json\n",
    )
    .unwrap();
    assert_refused(
        &run(&root, &csv, &[]),
        &["bad.csv", "row 1", "passages: not a JSON array of strings"],
        &root,
        &good,
    );
    let truncated = dir.path().join("truncated.parquet");
    std::fs::write(&truncated, b"PAR1 not really").unwrap();
    assert_refused(
        &run(&root, &truncated, &[]),
        &["truncated.parquet", "not a readable Parquet file"],
        &root,
        &good,
    );
    // Renaming columns of JSON Lines is refused: its field names are fixed.
    assert_refused(
        &run(&root, &fixture, &["--key-column", "id"]),
        &["key-column"],
        &root,
        &good,
    );
}

/// Reads `membership.parquet` of a run: (level, entity_id, community_id, parent, is_leaf) rows.
fn membership_rows(run_dir: &Path) -> Vec<(u32, u32, u32, Option<u32>, bool)> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(
        File::open(run_dir.join("membership.parquet")).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let col = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_primitive::<UInt32Type>()
                .clone()
        };
        let (l, e, c, p) = (
            col("level"),
            col("entity_id"),
            col("community_id"),
            col("parent_community_id"),
        );
        let leaf = b.column_by_name("is_leaf").unwrap().as_boolean().clone();
        for i in 0..b.num_rows() {
            out.push((
                l.value(i),
                e.value(i),
                c.value(i),
                (!p.is_null(i)).then(|| p.value(i)),
                leaf.value(i),
            ));
        }
    }
    out
}

#[test]
fn a_membership_from_detect_graph_or_a_run_gives_the_same_hierarchy() {
    let dir = tempfile::tempdir().unwrap();
    let (root, good) = published(dir.path());
    let first = run_dir(&root, &good);
    let expected = membership_rows(&first);
    assert!(
        expected.iter().any(|r| r.0 > 0),
        "the fixture gives one level only"
    );

    // The run's own table fed back.
    let o = run(
        &dir.path().join("again"),
        &repo().join("data/fixtures/pubmedqa-60.jsonl"),
        &[
            "--membership",
            first.join("membership.parquet").to_str().unwrap(),
        ],
    );
    let again = run_dir(&dir.path().join("again"), &run_id(&o));
    assert_eq!(membership_rows(&again), expected);
    assert_eq!(
        tables(&again)["reports.parquet"],
        tables(&first)["reports.parquet"]
    );

    // detect-graph on the run's relationships (every entity named by a zero-weight self-loop,
    // so isolated entities are nodes too), its table fed back.
    let reader = ParquetRecordBatchReaderBuilder::try_new(
        File::open(first.join("relationships.parquet")).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let num_entities = expected.iter().map(|r| r.1).max().unwrap() + 1;
    let mut tsv: String = (0..num_entities)
        .map(|e| format!("{e}\t{e}\t0\n"))
        .collect();
    for b in reader {
        let b = b.unwrap();
        let s = b
            .column_by_name("source")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        let t = b
            .column_by_name("target")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        let w = b
            .column_by_name("weight")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        for i in 0..b.num_rows() {
            tsv.push_str(&format!("{}\t{}\t{}\n", s.value(i), t.value(i), w.value(i)));
        }
    }
    let edges = dir.path().join("edges.tsv");
    std::fs::write(&edges, tsv).unwrap();
    let table = dir.path().join("detected.parquet");
    let o = pipeline()
        .args(["detect-graph", "--threads", "2", "--edges"])
        .arg(&edges)
        .arg("--membership-out")
        .arg(&table)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(
        &dir.path().join("detected"),
        &repo().join("data/fixtures/pubmedqa-60.jsonl"),
        &["--membership", table.to_str().unwrap()],
    );
    let detected = run_dir(&dir.path().join("detected"), &run_id(&o));
    assert_eq!(membership_rows(&detected), expected);
}

/// Rows of a hand-made membership table: (level, entity, community_id, parent_community_id).
type MembershipRows = Vec<(i64, &'static str, i64, Option<i64>)>;

/// Writes a membership table keyed by entity (concept id) or entity row.
fn write_membership(path: &Path, rows: &[(i64, &str, i64, Option<i64>)], by_key: bool) {
    let mut fields: Vec<(&str, ArrayRef)> = vec![(
        "level",
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
    )];
    if by_key {
        fields.push((
            "entity",
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ));
    } else {
        fields.push((
            "entity_id",
            Arc::new(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.1.parse::<u32>().unwrap()),
            )),
        ));
    }
    fields.push((
        "community_id",
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
    ));
    fields.push((
        "parent_community_id",
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.3))),
    ));
    let batch = RecordBatch::try_from_iter(fields).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn hand_made_memberships_breaking_each_rule_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (root, good) = published(dir.path());
    let first = run_dir(&root, &good);
    // The run's entities by concept id, in entity order.
    let reader = ParquetRecordBatchReaderBuilder::try_new(
        File::open(first.join("entities.parquet")).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let mut keys: Vec<String> = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let c = b
            .column_by_name("concept_id")
            .unwrap()
            .as_string::<i32>()
            .clone();
        keys.extend(c.iter().map(|s| s.unwrap().to_owned()));
    }
    // 'static keys, so that the cases below can be written as closures over them.
    let k: Vec<&'static str> = keys.into_iter().map(|s| &*s.leak()).collect();
    // A valid two-level table: entities alternate between communities 10 and 11 at level 0;
    // 10 is split into 20 and 21 at level 1, 11 is a leaf.
    let valid = |extra: &dyn Fn(&mut MembershipRows)| {
        let mut rows: MembershipRows = Vec::new();
        for (i, key) in k.iter().enumerate() {
            rows.push((0, key, 10 + (i % 2) as i64, None));
            if i % 2 == 0 {
                rows.push((1, key, 20 + (i % 4 / 2) as i64, Some(10)));
            }
        }
        extra(&mut rows);
        rows
    };
    let docs = repo().join("data/fixtures/pubmedqa-60.jsonl");
    let ok = dir.path().join("ok.parquet");
    write_membership(&ok, &valid(&|_| {}), true);
    let o = run(
        &dir.path().join("ok"),
        &docs,
        &["--membership", ok.to_str().unwrap()],
    );
    let s: serde_json::Value = {
        run_id(&o);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert_eq!(s["communities_per_level"], serde_json::json!([2, 2]));

    let twice = format!(
        "entity {:?} (entity_id 0) is in communities 20 and 21 at level 1",
        k[0]
    );
    let moved = format!(
        "entity {:?} (entity_id 0) is in community 22 at level 1 whose parent is 11, but at level 0 it is in community 10",
        k[0]
    );
    let missing = format!(
        "entity {:?} (entity_id 0) has no community at level 0",
        k[0]
    );
    let cases: Vec<(&str, MembershipRows, Vec<&str>)> = vec![
        (
            "twice",
            valid(&|r| r.push((1, k[0], 21, Some(10)))),
            vec![twice.as_str()],
        ),
        (
            "parents",
            valid(&|r| {
                r.retain(|x| !(x.0 == 1 && x.1 == k[0]));
                r.push((1, k[0], 22, Some(11)));
            }),
            vec![moved.as_str()],
        ),
        (
            "empty_parent",
            valid(&|r| {
                for x in r.iter_mut().filter(|x| x.0 == 1 && x.2 == 21) {
                    x.3 = Some(99);
                }
            }),
            vec!["community 99, the parent of community 21, holds no entity"],
        ),
        (
            "gap",
            valid(&|r| {
                for x in r.iter_mut().filter(|x| x.0 == 1) {
                    x.0 = 2;
                }
            }),
            vec!["level 1 is missing"],
        ),
        (
            "not_whole",
            valid(&|r| r.retain(|x| !(x.0 == 1 && x.1 == k[2]))),
            vec!["is in none of its children at level 1"],
        ),
        (
            "no_level_0",
            valid(&|r| r.retain(|x| x.1 != k[0])),
            vec![missing.as_str()],
        ),
        (
            "unknown",
            valid(&|r| r.push((0, "NOT-A-CONCEPT", 12, None))),
            vec!["entity \"NOT-A-CONCEPT\" is not an entity of the input"],
        ),
    ];
    for (name, rows, needles) in cases {
        let path = dir.path().join(format!("{name}.parquet"));
        write_membership(&path, &rows, true);
        let mut all = vec![format!("{name}.parquet")];
        all.extend(needles.iter().map(|s| (*s).to_owned()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        assert_refused(
            &run(&root, &docs, &["--membership", path.to_str().unwrap()]),
            &all,
            &root,
            &good,
        );
    }
    // By row: an entity_id past the entities, and a missing column.
    let path = dir.path().join("rows.parquet");
    write_membership(&path, &[(0, "100000", 1, None)], false);
    assert_refused(
        &run(&root, &docs, &["--membership", path.to_str().unwrap()]),
        &[
            "rows.parquet",
            "row 0",
            "entity_id 100000 is not a row of entities.parquet",
        ],
        &root,
        &good,
    );
    let batch =
        RecordBatch::try_from_iter([("level", Arc::new(Int64Array::from(vec![0i64])) as ArrayRef)])
            .unwrap();
    let path = dir.path().join("columns.parquet");
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    assert_refused(
        &run(&root, &docs, &["--membership", path.to_str().unwrap()]),
        &["columns.parquet", "column \"community_id\"", "missing"],
        &root,
        &good,
    );
}
