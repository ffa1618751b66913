//! Every table of a run opens with polars (issue 8), with the column names and types README.md
//! documents and the row counts its manifest records.
//!
//! Runs checked: the committed golden run of format version 1 (`data/fixtures/snapshots/v1`,
//! always), and every snapshot root listed in `AGRAG_POLARS_ROOTS` (separated by `:`), whose
//! `LATEST` run is checked; `.ci/run` sets it to the run it publishes from the shipped fixture.

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md's snapshot table as polars types (`dim`: the run's embedding dimension).
fn documented(table: &str, dim: usize) -> Vec<(&'static str, DataType)> {
    use DataType::{Binary, Boolean, Float32, Float64, Int8, Int32, String as Str, UInt32, UInt64};
    let list = |t: DataType| DataType::List(Box::new(t));
    let array = |t: DataType| DataType::Array(Box::new(t), dim);
    match table {
        "documents" => vec![
            ("document_key", Str),
            ("title", Str),
            ("year", Int32),
            ("num_passages", UInt32),
            ("linked", Boolean),
        ],
        "passages" => vec![
            ("passage_id", Str),
            ("document_key", Str),
            ("position", UInt32),
            ("text", Str),
        ],
        "concepts" => vec![
            ("concept_id", Str),
            ("preferred_term", Str),
            ("synonyms", list(Str)),
        ],
        "concept_edges" => vec![("child", Str), ("parent", Str), ("relation", Str)],
        "document_concepts" => vec![
            ("document_key", Str),
            ("node_field", Str),
            ("concept_id", Str),
        ],
        "entities" => vec![
            ("entity_id", UInt32),
            ("concept_id", Str),
            ("name", Str),
            ("num_passages", UInt32),
            ("degree", Float64),
        ],
        "mentions" => vec![
            ("entity_id", UInt32),
            ("passage_id", Str),
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
            ("run_id", Str),
            ("level", UInt32),
            ("entity_id", UInt32),
            ("community_id", UInt32),
            ("parent_community_id", UInt32),
            ("is_leaf", Boolean),
        ],
        "reports" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("title", Str),
            ("summary", Str),
            ("findings", list(Str)),
            ("rank", Float64),
            ("full_content", Str),
        ],
        "report_embeddings" => vec![("community_id", UInt32), ("embedding", array(Float32))],
        "document_embeddings" => vec![("document_key", Str), ("embedding", array(Float32))],
        "text_embeddings" => vec![("text_blake3", Binary), ("embedding", array(Float32))],
        "document_links" => vec![("document_blake3", Binary), ("links", Binary)],
        "concept_evidence" => vec![
            ("document_key", Str),
            ("concept_id", Str),
            ("way", UInt32),
            ("passage_id", Str),
        ],
        "report_sources" => vec![("community_id", UInt32), ("passage_id", Str)],
        "community_lineage" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("event", Str),
            ("predecessor", UInt32),
            ("jaccard", Float64),
            ("predecessors", list(UInt32)),
            ("successor", UInt32),
            ("size", UInt32),
            ("previous_size", UInt32),
            ("fingerprint", Str),
        ],
        "concept_postings" => vec![
            ("node_field", Str),
            ("concept_id", Str),
            ("num_documents", UInt64),
            ("documents", Binary),
        ],
        // The column files the engine maps (format 2 on), named with their extension since
        // three share a stem with a Parquet table; text is Binary holding UTF-8.
        "documents.arrow" => vec![
            ("document_key", Binary),
            ("title", Binary),
            ("year", Int32),
            ("linked", Boolean),
            ("first_passage", UInt32),
        ],
        "passages.arrow" => vec![("document", UInt32), ("position", UInt32), ("text", Binary)],
        "entities.arrow" => vec![
            ("concept_id", Binary),
            ("name", Binary),
            ("degree", Float64),
            ("passages", list(UInt32)),
        ],
        "communities.arrow" => vec![
            ("community_id", UInt32),
            ("level", UInt32),
            ("parent_row", UInt32),
            ("members", list(UInt32)),
            ("report_sources", list(UInt32)),
        ],
        "concepts.arrow" => vec![("concept_id", Binary), ("preferred_term", Binary)],
        "terms.arrow" => vec![("term", Binary), ("concepts", list(UInt32))],
        "concept_edges.arrow" => vec![("child", UInt32), ("parent", UInt32), ("relation", Binary)],
        "report_ivf_centroids" => vec![("list_id", UInt32), ("centroid", array(Float32))],
        "report_ivf_lists" => vec![
            ("list_id", UInt32),
            ("community_id", UInt32),
            ("scale", Float32),
            ("code", array(Int8)),
        ],
        other => panic!("table {other} is not documented in README.md's snapshot table"),
    }
}

/// The run `LATEST` names under a snapshot root.
fn latest_run(root: &Path) -> PathBuf {
    let latest = std::fs::read_to_string(root.join("LATEST"))
        .unwrap_or_else(|e| panic!("{}: {e}", root.join("LATEST").display()));
    root.join("runs").join(latest.trim())
}

/// Opens every Parquet and Arrow IPC file of the run in `dir` with polars and checks it; returns
/// the file names checked.
fn check_run(dir: &Path) -> Vec<String> {
    let manifest: Value = serde_json::from_reader(
        File::open(dir.join("manifest.json")).unwrap_or_else(|e| panic!("{}: {e}", dir.display())),
    )
    .unwrap();
    let run_id = manifest["run_id"].as_str().unwrap().to_owned();
    let dim = manifest["embedder"]["dim"].as_u64().unwrap() as usize;
    let mut checked = Vec::new();
    for file in manifest["files"].as_array().unwrap() {
        let name = file["name"].as_str().unwrap();
        let (table, parquet) = match name.rsplit_once('.') {
            Some((t, "parquet")) => (t, true),
            Some((t, "arrow")) => (t, false),
            _ => continue, // the text index's own files
        };
        let path = dir.join(name);
        let open = File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let df = if parquet {
            ParquetReader::new(open).finish()
        } else {
            IpcReader::new(open).finish()
        }
        .unwrap_or_else(|e| panic!("polars cannot read {}: {e}", path.display()));
        assert_eq!(
            df.height() as u64,
            file["rows"].as_u64().unwrap(),
            "{}: rows against the manifest",
            path.display()
        );
        let got: Vec<(String, DataType)> = df
            .columns()
            .iter()
            .map(|c| (c.name().to_string(), c.dtype().clone()))
            .collect();
        let key = if !parquet && MAPPED.contains(&name) {
            name
        } else {
            table
        };
        let want: Vec<(String, DataType)> = documented(key, dim)
            .into_iter()
            .map(|(n, t)| (n.to_owned(), t))
            .collect();
        assert_eq!(got, want, "{}: columns and types", path.display());
        if table == "membership" && df.height() > 0 {
            let ids = df.column("run_id").unwrap().str().unwrap();
            assert!(
                (0..ids.len()).all(|i| ids.get(i) == Some(run_id.as_str())),
                "{}: run_id column",
                path.display()
            );
        }
        if table.ends_with("embeddings") && df.height() > 0 {
            // Values arrive as float32 vectors of the manifest's dimension, unit length when the
            // manifest says the embedder normalizes.
            let first = df
                .column("embedding")
                .unwrap()
                .array()
                .unwrap()
                .get_as_series(0);
            let v: Vec<f32> = first.unwrap().f32().unwrap().into_no_null_iter().collect();
            assert_eq!(v.len(), dim);
            if manifest["embedder"]["normalized"].as_bool() == Some(true) {
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                assert!((norm - 1.0).abs() < 1e-3, "{}: norm {norm}", path.display());
            }
        }
        checked.push(name.to_owned());
    }
    checked
}

/// The column files the engine maps, in every run of format 2 on.
const MAPPED: &[&str] = &[
    "documents.arrow",
    "passages.arrow",
    "entities.arrow",
    "communities.arrow",
    "concepts.arrow",
    "terms.arrow",
    "concept_edges.arrow",
];

/// The tables every run of every format version holds.
const CORE_TABLES: &[&str] = &[
    "documents.parquet",
    "passages.parquet",
    "concepts.parquet",
    "concept_edges.parquet",
    "document_concepts.parquet",
    "entities.parquet",
    "mentions.parquet",
    "relationships.parquet",
    "communities.parquet",
    "membership.parquet",
    "reports.parquet",
    "report_embeddings.parquet",
    "report_embeddings.arrow",
    "document_embeddings.parquet",
    "document_embeddings.arrow",
];

fn assert_core(checked: &[String], what: &str) {
    for t in CORE_TABLES {
        assert!(
            checked.iter().any(|c| c == t),
            "{what}: {t} was not checked"
        );
    }
}

#[test]
fn golden_run_of_format_1_opens_with_polars() {
    let root = repo().join("data/fixtures/snapshots/v1");
    let checked = check_run(&latest_run(&root));
    assert_core(&checked, "golden run");
    eprintln!("golden run: {} files opened with polars", checked.len());
}

#[test]
fn runs_named_in_agrag_polars_roots_open_with_polars() {
    let Some(roots) = std::env::var_os("AGRAG_POLARS_ROOTS") else {
        eprintln!(
            "AGRAG_POLARS_ROOTS is not set: only the golden run was checked (.ci/run sets it to a fresh run)"
        );
        return;
    };
    let roots: Vec<PathBuf> = std::env::split_paths(&roots).collect();
    assert!(!roots.is_empty(), "AGRAG_POLARS_ROOTS is empty");
    for root in roots {
        let checked = check_run(&latest_run(&root));
        assert_core(&checked, &root.display().to_string());
        for m in MAPPED {
            assert!(
                checked.iter().any(|c| c == m),
                "{}: {m} was not checked",
                root.display()
            );
        }
        eprintln!(
            "{}: {} files opened with polars: {checked:?}",
            root.display(),
            checked.len()
        );
    }
}
