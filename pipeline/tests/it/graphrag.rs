//! A GraphRAG index as input, through the binary: the shipped index (Operation Dulce) publishes
//! a run the engine answers from; GraphRAG's own communities come in as a membership table;
//! a missing file, a missing column, an unknown entity and a bad weight are refused with exit
//! 2 naming the file and the field, and nothing is published.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use agrag_engine::format::Layout;
use agrag_engine::query::theme::Status;
use agrag_engine::{ConceptRequest, ConceptSelector, Engine, EngineConfig, ThemeRequest};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use polars_core::prelude::*;
use polars_io::SerReader;
use polars_io::parquet::read::ParquetReader;
use polars_io::parquet::write::ParquetWriter;

fn index() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/graphrag/operation-dulce")
}

fn run(root: &Path, dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agrag-pipeline"))
        .env("EMBEDDING_PROVIDER", "hash")
        .env_remove("EMBEDDING_MODEL")
        .env_remove("EMBEDDING_DIM")
        .env_remove("AGRAG_ROOT")
        .args(["run", "--json", "--threads", "2", "--root"])
        .arg(root)
        .arg("--graphrag")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

fn summary(o: &Output) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn batches(path: &Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn the_shipped_graphrag_index_publishes_a_run_the_engine_answers_from() {
    let dir = tempfile::tempdir().unwrap();
    let s = summary(&run(dir.path(), &index(), &[]));
    assert_eq!(s["entities"], 39, "{s}");
    assert_eq!(s["documents"], 1);
    assert_eq!(s["passages"], 5);
    assert!(s["edges"].as_u64().unwrap() > 50, "{s}");

    let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
    let mut req = ThemeRequest::text("the team's mission at Dulce base and alien communication");
    req.support_limit = 3;
    let a = engine.search_themes(&req).unwrap();
    assert_eq!(a.status, Status::Ok, "{a:?}");
    assert!(!a.themes.is_empty() && !a.themes[0].passages.is_empty());
    // Document keys are GraphRAG's document ids.
    let doc_id = "6e81f882f89dd5596e1925dd3ae8a4f0a0edcb55b35a802315e93219034d3cd62ced4573c62528f68d35d81515039d1304fa2151d684086927a8f400cd3e4d9d";
    assert!(
        a.themes
            .iter()
            .all(|t| t.passages.iter().all(|p| p.document_key == doc_id))
    );
    // Every entity is a concept: its title finds its document.
    let c = engine
        .find_by_meaning(&ConceptRequest::new(ConceptSelector::Term(
            "DULCE BASE".into(),
        )))
        .unwrap();
    assert_eq!(c.total, 1, "{c:?}");
}

/// GraphRAG's own communities as a membership table keyed by entity title.
fn graphrag_membership(path: &Path) {
    let mut title_of: HashMap<String, String> = HashMap::new();
    for b in batches(&index().join("entities.parquet")) {
        let ids = b.column_by_name("id").unwrap().as_string::<i32>();
        let titles = b.column_by_name("title").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            title_of.insert(ids.value(i).to_owned(), titles.value(i).to_owned());
        }
    }
    let (mut level, mut entity, mut community, mut parent) = (vec![], vec![], vec![], vec![]);
    for b in batches(&index().join("communities.parquet")) {
        let comm = b
            .column_by_name("community")
            .unwrap()
            .as_primitive::<Int64Type>();
        let lev = b
            .column_by_name("level")
            .unwrap()
            .as_primitive::<Int64Type>();
        let par = b
            .column_by_name("parent")
            .unwrap()
            .as_primitive::<Int64Type>();
        let ents = b.column_by_name("entity_ids").unwrap().as_list::<i32>();
        for i in 0..b.num_rows() {
            let members = ents.value(i);
            for e in members.as_string::<i32>().iter().flatten() {
                level.push(lev.value(i));
                entity.push(title_of[e].clone());
                community.push(comm.value(i));
                parent.push((par.value(i) >= 0).then(|| par.value(i)));
            }
        }
    }
    let batch = RecordBatch::try_from_iter([
        ("level", Arc::new(Int64Array::from(level)) as ArrayRef),
        ("entity", Arc::new(StringArray::from(entity)) as ArrayRef),
        (
            "community_id",
            Arc::new(Int64Array::from(community)) as ArrayRef,
        ),
        (
            "parent_community_id",
            Arc::new(Int64Array::from(parent)) as ArrayRef,
        ),
    ])
    .unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn graphrag_communities_come_in_as_a_membership_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("membership.parquet");
    graphrag_membership(&table);
    let root = dir.path().join("root");
    let s = summary(&run(
        &root,
        &index(),
        &["--membership", table.to_str().unwrap()],
    ));
    // GraphRAG's hierarchy: seven communities at level 0, one of them split into three.
    assert_eq!(s["communities_per_level"], serde_json::json!([7, 3]), "{s}");
    let engine = Engine::open(&root, EngineConfig::default()).unwrap();
    let a = engine
        .search_themes(&ThemeRequest::text("Dulce base"))
        .unwrap();
    assert_eq!(a.status, Status::Ok, "{a:?}");
}

fn read_df(path: &Path) -> DataFrame {
    ParquetReader::new(File::open(path).unwrap())
        .finish()
        .unwrap()
}

fn write_df(path: &Path, df: &mut DataFrame) {
    ParquetWriter::new(File::create(path).unwrap())
        .finish(df)
        .unwrap();
}

/// A copy of the shipped index in `to`, with `change` applied to it.
fn broken_index(to: &Path, change: impl FnOnce(&Path)) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    for f in [
        "entities.parquet",
        "relationships.parquet",
        "text_units.parquet",
        "documents.parquet",
    ] {
        std::fs::copy(index().join(f), to.join(f)).unwrap();
    }
    change(to);
    to.to_owned()
}

/// An edit of a copied index.
type Change = Box<dyn FnOnce(&Path)>;

#[test]
fn a_broken_graphrag_index_is_refused_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let latest = summary(&run(&root, &index(), &[]))["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first_entity_id = read_df(&index().join("entities.parquet"))
        .column("id")
        .unwrap()
        .str()
        .unwrap()
        .get(0)
        .unwrap()
        .to_owned();
    let cases: Vec<(&str, Change, Vec<String>)> = vec![
        (
            "missing-file",
            Box::new(|d: &Path| std::fs::remove_file(d.join("text_units.parquet")).unwrap()),
            vec!["text_units.parquet".into()],
        ),
        (
            "missing-column",
            Box::new(|d: &Path| {
                let p = d.join("entities.parquet");
                let mut df = read_df(&p).drop("title").unwrap();
                write_df(&p, &mut df);
            }),
            vec![
                "entities.parquet".into(),
                "\"title\"".into(),
                "missing".into(),
            ],
        ),
        (
            "unknown-entity",
            // Without its first entity, the text units that list it name an unknown id.
            Box::new(|d: &Path| {
                let p = d.join("entities.parquet");
                let df = read_df(&p);
                let mut df = df.slice(1, df.height() - 1);
                write_df(&p, &mut df);
            }),
            vec![
                "text_units.parquet".into(),
                "entity_ids".into(),
                first_entity_id.clone(),
            ],
        ),
        (
            "nan-weight",
            Box::new(|d: &Path| {
                let p = d.join("relationships.parquet");
                let mut df = read_df(&p);
                let mut w: Vec<f64> = df
                    .column("weight")
                    .unwrap()
                    .f64()
                    .unwrap()
                    .into_no_null_iter()
                    .collect();
                w[3] = f64::NAN;
                df.with_column(Column::new("weight".into(), w)).unwrap();
                write_df(&p, &mut df);
            }),
            vec![
                "relationships.parquet".into(),
                "row 3".into(),
                "weight".into(),
            ],
        ),
    ];
    for (name, change, needles) in cases {
        let bad = broken_index(&dir.path().join(name), change);
        let o = run(&root, &bad, &[]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        for n in &needles {
            assert!(e.contains(n.as_str()), "{name}: {n:?} not in: {e}");
        }
        assert!(e.contains("nothing was published"), "{name}: {e}");
        let layout = Layout::new(&root);
        assert_eq!(
            layout.read_latest().unwrap().as_deref(),
            Some(latest.as_str())
        );
        assert_eq!(layout.list_runs().unwrap(), vec![latest.clone()]);
    }
}
