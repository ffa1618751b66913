//! The ceiling of theme search's recall on a corpus, whatever the embedder and the community
//! vectors: the share of documents that some theme can return at all.
//!
//! A theme returns the passages of its community that mention its members, best first (the
//! number of distinct members they mention, then position; see `engine::query::theme`), at
//! most `support_limit`. A document none of whose passages is among the first
//! `support_limit` of any community is never returned by theme search, however well its
//! question matches a vector. `theme-recall` counts a question as found when a theme returns
//! a passage of its document, so these shares bound its recall@k from above for every k.
//!
//! ```text
//! cargo run --release -p agrag-benches --example theme_ceiling -- [DOCUMENTS.jsonl]
//! ```
//!
//! Runs the pipeline with the hashing embedder (the communities and the passages they rank
//! do not depend on the embedder) into a temporary root, then prints the shares for
//! `support_limit` 1, 3, 5 and 10.

use std::collections::HashMap;
use std::sync::Arc;

use agrag_benches::common::workspace;
use agrag_engine::embed::HashEmbedder;
use agrag_engine::{PassageRow, Snapshot};
use agrag_pipeline::leiden::LeidenConfig;
use agrag_pipeline::link::LinkConfig;
use agrag_pipeline::report::{CommunityVectors, ExtractiveReportWriter};
use agrag_pipeline::run::{RunConfig, run};

fn main() {
    let documents = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace().join("data/pubmedqa/documents.jsonl"));
    let root = tempfile::tempdir().expect("temp root");
    let cfg = RunConfig {
        root: root.path().to_owned(),
        documents: documents.clone(),
        vocabulary: workspace().join("data/mesh"),
        threads: Some(2),
        link: LinkConfig::default(),
        leiden: LeidenConfig::default(),
        embedder: Arc::new(HashEmbedder::default()),
        report_writer: Arc::new(ExtractiveReportWriter),
        community_vectors: CommunityVectors::default(),
        progress: false,
        allow_empty: false,
        full: false,
    };
    run(&cfg).expect("pipeline run");
    let snap = Snapshot::open_latest(root.path()).expect("open the run");
    let docs = snap.num_documents();
    // Per document, the best rank (1-based) any community gives one of its passages.
    let mut best_rank: Vec<Option<usize>> = vec![None; docs];
    for c in snap.communities() {
        let mut per_passage: HashMap<PassageRow, u32> = HashMap::new();
        for e in snap.community(c).members() {
            for p in snap.entity(e).passages() {
                *per_passage.entry(p).or_insert(0) += 1;
            }
        }
        let mut ranked: Vec<(PassageRow, u32)> = per_passage.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(
                    snap.passage(a.0)
                        .position()
                        .cmp(&snap.passage(b.0).position()),
                )
                .then(a.0.cmp(&b.0))
        });
        for (rank, &(p, _)) in ranked.iter().enumerate() {
            let d = snap.passage(p).document().index();
            if best_rank[d].is_none_or(|r| rank + 1 < r) {
                best_rank[d] = Some(rank + 1);
            }
        }
    }
    let linked = best_rank.iter().filter(|r| r.is_some()).count();
    println!(
        "{} documents, {} passages, {} communities; {linked} documents with a passage in some community",
        docs,
        snap.num_passages(),
        snap.num_communities()
    );
    println!("\n| support_limit | documents some theme can return | share |\n|---:|---:|---:|");
    for s in [1, 3, 5, 10] {
        let n = best_rank
            .iter()
            .filter(|r| r.is_some_and(|r| r <= s))
            .count();
        println!("| {s} | {n} | {:.3} |", n as f64 / docs as f64);
    }
}
