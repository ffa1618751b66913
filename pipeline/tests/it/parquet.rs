//! Parquet that data engineers open (issue 8): every file of a run opens with the arrow-rs
//! Parquet and IPC readers, with the column names and Arrow types README.md documents; the Parquet metadata carries `run_id` and
//! `format_version`, statistics and scan-sized row groups; the committed golden run of format
//! version 1 still opens and answers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agrag_engine::embed::HashEmbedder;
use agrag_engine::format::writer::ROW_GROUP_ROWS;
use agrag_engine::format::{FORMAT_VERSION, Layout, Manifest, Verify, verify_run};
use agrag_engine::query::theme::Status;
use agrag_engine::{ConceptRequest, ConceptSelector, Engine, EngineConfig, ThemeRequest};
use agrag_pipeline::leiden::LeidenConfig;
use agrag_pipeline::link::LinkConfig;
use agrag_pipeline::report::ExtractiveReportWriter;
use agrag_pipeline::run::{RunConfig, run};
use arrow_schema::{DataType, Field};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{FileReader, SerializedFileReader};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed golden snapshot root of format version 1.
pub(crate) fn golden_root() -> PathBuf {
    repo().join("data/fixtures/snapshots/v1")
}

fn list_of(t: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", t, true)))
}

fn fixed_list(t: DataType, n: usize) -> DataType {
    DataType::FixedSizeList(
        Arc::new(Field::new("item", t, true)),
        i32::try_from(n).unwrap(),
    )
}

/// Types equal up to the names and nullability of list items.
fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::List(x), DataType::List(y)) => same_type(x.data_type(), y.data_type()),
        (DataType::FixedSizeList(x, n), DataType::FixedSizeList(y, m)) => {
            n == m && same_type(x.data_type(), y.data_type())
        }
        _ => a == b,
    }
}

/// The README's table, as Arrow types (`dim` = the run's embedding dimension).
fn documented(file: &str, dim: usize) -> Vec<(&'static str, DataType)> {
    use DataType::{Boolean, Float32, Float64, Int32, UInt32, Utf8 as Str};
    let s = || Str;
    match file {
        "documents" => vec![
            ("document_key", s()),
            ("title", s()),
            ("year", Int32),
            ("num_passages", UInt32),
            ("linked", Boolean),
        ],
        "passages" => vec![
            ("passage_id", s()),
            ("document_key", s()),
            ("position", UInt32),
            ("text", s()),
        ],
        "concepts" => vec![
            ("concept_id", s()),
            ("preferred_term", s()),
            ("synonyms", list_of(s())),
        ],
        "concept_edges" => vec![("child", s()), ("parent", s()), ("relation", s())],
        "document_concepts" => vec![
            ("document_key", s()),
            ("node_field", s()),
            ("concept_id", s()),
        ],
        "entities" => vec![
            ("entity_id", UInt32),
            ("concept_id", s()),
            ("name", s()),
            ("num_passages", UInt32),
            ("degree", Float64),
        ],
        "mentions" => vec![
            ("entity_id", UInt32),
            ("passage_id", s()),
            ("num_occurrences", UInt32),
        ],
        "relationships" => vec![("source", UInt32), ("target", UInt32), ("weight", Float64)],
        "communities" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("parent", UInt32),
            ("size", UInt32),
            ("is_leaf", Boolean),
        ],
        "membership" => vec![
            ("run_id", s()),
            ("level", UInt32),
            ("entity_id", UInt32),
            ("community_id", UInt32),
            ("parent_community_id", UInt32),
            ("is_leaf", Boolean),
        ],
        "reports" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("title", s()),
            ("summary", s()),
            ("findings", list_of(s())),
            ("rank", Float64),
            ("full_content", s()),
        ],
        "report_embeddings" => vec![
            ("community_id", UInt32),
            ("embedding", fixed_list(Float32, dim)),
        ],
        "document_embeddings" => vec![
            ("document_key", s()),
            ("embedding", fixed_list(Float32, dim)),
        ],
        "text_embeddings" => vec![
            ("text_blake3", DataType::FixedSizeBinary(32)),
            ("embedding", fixed_list(Float32, dim)),
        ],
        "document_links" => vec![
            ("document_blake3", DataType::FixedSizeBinary(32)),
            ("links", DataType::Binary),
        ],
        "concept_evidence" => vec![
            ("document_key", s()),
            ("concept_id", s()),
            ("way", UInt32),
            ("passage_id", s()),
        ],
        "report_sources" => vec![("community_id", UInt32), ("passage_id", s())],
        "community_lineage" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("event", s()),
            ("predecessor", UInt32),
            ("jaccard", Float64),
            ("predecessors", list_of(UInt32)),
            ("successor", UInt32),
            ("size", UInt32),
            ("previous_size", UInt32),
            ("fingerprint", s()),
        ],
        "concept_postings" => vec![
            ("node_field", s()),
            ("concept_id", s()),
            ("num_documents", DataType::UInt64),
            ("documents", DataType::Binary),
        ],
        // The column files the engine maps (format 2 on), by file name: three share a stem
        // with a Parquet table. Text is Binary holding UTF-8.
        "documents.arrow" => vec![
            ("document_key", DataType::Binary),
            ("title", DataType::Binary),
            ("year", Int32),
            ("linked", Boolean),
            ("first_passage", UInt32),
        ],
        "passages.arrow" => vec![
            ("document", UInt32),
            ("position", UInt32),
            ("text", DataType::Binary),
        ],
        "entities.arrow" => vec![
            ("concept_id", DataType::Binary),
            ("name", DataType::Binary),
            ("degree", Float64),
            ("passages", list_of(UInt32)),
        ],
        "communities.arrow" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("parent_row", UInt32),
            ("members", list_of(UInt32)),
            ("report_sources", list_of(UInt32)),
        ],
        "concepts.arrow" => vec![
            ("concept_id", DataType::Binary),
            ("preferred_term", DataType::Binary),
        ],
        "terms.arrow" => vec![("term", DataType::Binary), ("concepts", list_of(UInt32))],
        "concept_edges.arrow" => vec![
            ("child", UInt32),
            ("parent", UInt32),
            ("relation", DataType::Binary),
        ],
        other => panic!("{other} is not documented in README.md's snapshot table"),
    }
}

/// The column files the engine maps, in every run of format 2 on.
pub(crate) const MAPPED: &[&str] = &[
    "documents.arrow",
    "passages.arrow",
    "entities.arrow",
    "communities.arrow",
    "concepts.arrow",
    "terms.arrow",
    "concept_edges.arrow",
];

/// Opens every table file of the run in `dir` and checks it against the README,
/// the manifest's row counts and the Parquet metadata contract. Returns the files checked.
fn check_run_files(dir: &Path) -> Vec<String> {
    let manifest = Manifest::read(dir).unwrap();
    verify_run(dir, &manifest, Verify::Checksums).unwrap();
    let dim = manifest.embedder.dim;
    let mut checked = Vec::new();
    for entry in &manifest.files {
        let path = dir.join(&entry.name);
        let (stem, schema, height) = if let Some(stem) = entry.name.strip_suffix(".parquet") {
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap())
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", entry.name));
            let schema = builder.schema().clone();
            let height: usize = builder
                .build()
                .unwrap()
                .map(|b| b.unwrap().num_rows())
                .sum();
            check_parquet_metadata(&path, &manifest.run_id, manifest.format_version);
            if manifest.format_version >= 2 {
                // What pyarrow shows as the table's metadata: the embedded Arrow schema's.
                assert_eq!(
                    schema.metadata().get("run_id"),
                    Some(&manifest.run_id),
                    "{}: run_id in the Arrow schema metadata",
                    entry.name
                );
                assert_eq!(
                    schema.metadata().get("format_version"),
                    Some(&manifest.format_version.to_string()),
                    "{}: format_version in the Arrow schema metadata",
                    entry.name
                );
            }
            (stem, schema, height)
        } else if let Some(stem) = entry.name.strip_suffix(".arrow") {
            let reader =
                arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&path).unwrap(), None)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", entry.name));
            let schema = reader.schema();
            assert_eq!(
                schema.metadata().get("run_id"),
                Some(&manifest.run_id),
                "{}",
                entry.name
            );
            let height: usize = reader.map(|b| b.unwrap().num_rows()).sum();
            let key = MAPPED
                .iter()
                .find(|m| **m == entry.name)
                .copied()
                .unwrap_or(stem);
            (key, schema, height)
        } else {
            assert!(entry.name.starts_with("text_index/"), "{}", entry.name);
            continue;
        };
        let want = documented(stem, dim);
        let found: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let names: Vec<&str> = want.iter().map(|w| w.0).collect();
        assert_eq!(found, names, "{}: columns", entry.name);
        for (f, (n, t)) in schema.fields().iter().zip(&want) {
            assert!(
                same_type(f.data_type(), t),
                "{} column {n}: {} is not {t}",
                entry.name,
                f.data_type()
            );
        }
        assert_eq!(height as u64, entry.rows, "{}: rows", entry.name);
        checked.push(entry.name.clone());
    }
    checked
}

/// Key-value metadata, statistics on every column chunk, row groups of at most
/// `ROW_GROUP_ROWS`, declared sort order.
fn check_parquet_metadata(path: &Path, run_id: &str, format_version: u32) {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = reader.metadata();
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    let get = |k: &str| {
        kv.iter()
            .find(|x| x.key == k)
            .and_then(|x| x.value.clone())
            .unwrap_or_else(|| panic!("{}: no {k} metadata", path.display()))
    };
    assert_eq!(get("run_id"), run_id, "{}", path.display());
    assert_eq!(
        get("format_version"),
        format_version.to_string(),
        "{}",
        path.display()
    );
    for rg in meta.row_groups() {
        assert!(
            rg.num_rows() as usize <= ROW_GROUP_ROWS,
            "{}",
            path.display()
        );
        assert!(
            rg.sorting_columns().is_some_and(|s| !s.is_empty()),
            "{}: no sort order declared",
            path.display()
        );
        for col in rg.columns() {
            assert!(
                col.statistics().is_some(),
                "{}: column {} has no statistics",
                path.display(),
                col.column_path()
            );
        }
    }
}

/// Every documented table, Parquet and (for the embeddings) Arrow IPC; runs written since the
/// postings were precomputed also hold `concept_postings.arrow`, and runs written since
/// visibility reached concept evidence and report sources hold those two tables, and runs
/// written since community ids survive across runs hold `community_lineage.parquet`, and
/// runs written since title and passage vectors are reused hold `text_embeddings.arrow` (and
/// since links are, `document_links.arrow`), and
/// runs of format 2 the column files the engine maps, [`MAPPED`] (the golden run predates them all).
fn assert_all_tables(checked: &[String], with_postings: bool) {
    let mut names: Vec<&str> = checked.iter().map(String::as_str).collect();
    names.sort_unstable();
    let mut want = vec![
        "communities.parquet",
        "concept_edges.parquet",
        "concepts.parquet",
        "document_concepts.parquet",
        "document_embeddings.arrow",
        "document_embeddings.parquet",
        "documents.parquet",
        "entities.parquet",
        "membership.parquet",
        "mentions.parquet",
        "passages.parquet",
        "relationships.parquet",
        "report_embeddings.arrow",
        "report_embeddings.parquet",
        "reports.parquet",
    ];
    if with_postings {
        want.extend([
            "community_lineage.parquet",
            "concept_postings.arrow",
            "concept_evidence.parquet",
            "report_sources.parquet",
            "text_embeddings.arrow",
            "document_links.arrow",
        ]);
        want.extend(MAPPED);
        want.sort_unstable();
    }
    assert_eq!(names, want);
}

#[test]
fn every_file_of_a_fresh_run_opens_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let vocabulary = dir.path().join("vocabulary");
    crate::crash::write_small_vocabulary(&vocabulary);
    let cfg = RunConfig {
        root: dir.path().join("root"),
        documents: repo().join("data/fixtures/pubmedqa-60.jsonl"),
        vocabulary,
        threads: Some(1),
        link: LinkConfig::default(),
        leiden: LeidenConfig::default(),
        embedder: Arc::new(HashEmbedder::default()),
        report_writer: Arc::new(ExtractiveReportWriter),
        community_vectors: agrag_pipeline::report::CommunityVectors::default(),
        progress: false,
        allow_empty: false,
        full: false,
    };
    let summary = run(&cfg).unwrap();
    let run_dir = Layout::new(&cfg.root).run_dir(&summary.run_id);
    assert_all_tables(&check_run_files(&run_dir), true);
    assert_eq!(
        Manifest::read(&run_dir).unwrap().format_version,
        FORMAT_VERSION
    );
}

#[test]
fn the_golden_run_of_format_1_still_opens_and_answers() {
    let layout = Layout::new(golden_root());
    let run_id = layout.read_latest().unwrap().unwrap();
    let run_dir = layout.run_dir(&run_id);
    let manifest = Manifest::read(&run_dir).unwrap();
    assert_eq!(manifest.format_version, 1);
    assert!(manifest.file("concept_postings.arrow").is_none());
    assert_all_tables(&check_run_files(&run_dir), false);

    // The engine serves it (from a copy: serving must not write into the repository).
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&golden_root(), copy.path());
    let engine = Engine::open(copy.path(), EngineConfig::default()).unwrap();
    assert_eq!(engine.run_id().as_deref(), Some(run_id.as_str()));
    let a = engine
        .search_themes(&ThemeRequest::text("surgery outcomes and mortality"))
        .unwrap();
    assert_eq!(a.status, Status::Ok, "{a:?}");
    assert!(!a.themes.is_empty() && !a.themes[0].passages.is_empty());
    let c = engine
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term("Humans".into())))
        .unwrap();
    assert!(c.total > 0, "{c:?}");
    let ev = engine
        .fetch_evidence(&[a.themes[0].passages[0].evidence_id.clone()])
        .unwrap();
    assert!(ev[0].text.is_some());
}

/// Copies the folder `from` into `to` (created), recursively.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}
