//! Small runs written through the real writer (`format::write_run`), for engine tests.

use std::path::Path;
use std::process::{Command, Output};

use agrag_engine::embed::{Embedder, HashEmbedder};
use agrag_engine::format::tables::{ConceptRecord, DocumentRecord, PassageRecord};
use agrag_engine::format::{Layout, RunData, new_run_id, write_run};

/// A tiny vocabulary-and-documents run with no graph: `docs` are `(key, text)` (one passage
/// each), `concepts` `(id, preferred term, synonyms)`, `edges` `(child, parent)`,
/// `annotations` `(node_field, document key, concept id)`. Returns the run id.
pub fn concept_run(
    root: &Path,
    docs: &[(&str, &str)],
    concepts: &[(&str, &str, &[&str])],
    edges: &[(&str, &str)],
    annotations: &[(&str, &str, &str)],
) -> String {
    let embedder = HashEmbedder::new(16);
    let mut docs: Vec<(&str, &str)> = docs.to_vec();
    docs.sort();
    let linked = |k: &str| annotations.iter().any(|a| a.0 == "concept" && a.1 == k);
    let data = RunData {
        documents: docs
            .iter()
            .map(|(k, t)| DocumentRecord {
                key: (*k).to_owned(),
                title: (*t).to_owned(),
                year: None,
                num_passages: 1,
                linked: linked(k),
            })
            .collect(),
        passages: docs
            .iter()
            .map(|(k, t)| PassageRecord {
                passage_id: format!("{k}#0"),
                document_key: (*k).to_owned(),
                position: 0,
                text: (*t).to_owned(),
            })
            .collect(),
        concepts: concepts
            .iter()
            .map(|(id, t, s)| ConceptRecord {
                concept_id: (*id).to_owned(),
                preferred_term: (*t).to_owned(),
                synonyms: s.iter().map(|x| (*x).to_owned()).collect(),
            })
            .collect(),
        concept_edges: edges
            .iter()
            .map(|(c, p)| ((*c).to_owned(), (*p).to_owned(), "subclass_of".to_owned()))
            .collect(),
        document_concepts: annotations
            .iter()
            .map(|(f, d, c)| ((*f).to_owned(), (*d).to_owned(), (*c).to_owned()))
            .collect(),
        document_embeddings: docs
            .iter()
            .flat_map(|(_, t)| embedder.embed(t).unwrap())
            .collect(),
        ..RunData::default()
    };
    publish(root, &data, &embedder)
}

/// Writes `data` as a new run under `root` through the real writer and points `LATEST` at it.
/// Returns the run id.
pub fn publish(root: &Path, data: &RunData, embedder: &dyn Embedder) -> String {
    let run_id = new_run_id();
    let layout = Layout::new(root);
    write_run(
        &layout,
        &run_id,
        data,
        embedder.identity(),
        serde_json::json!({}),
        "test".into(),
        serde_json::json!({}),
    )
    .unwrap();
    layout.write_latest(&run_id).unwrap();
    run_id
}

/// Runs `agrag-engine ARGS --root ROOT` (with `AGRAG_ROOT` unset) and returns its output.
pub fn engine_at(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agrag-engine"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env_remove("AGRAG_ROOT")
        .output()
        .unwrap()
}

/// Exit code, standard output and standard error of `o`, for assertion messages.
pub fn describe(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
