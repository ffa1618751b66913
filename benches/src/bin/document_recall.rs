//! `document-recall`: how often a document's own vector finds it again by meaning, per
//! embedder and per way of making document vectors. These vectors rank `find_by_meaning`'s
//! documents by query; the measure decides how the pipeline makes them.
//!
//! ```text
//! bash scripts/fetch-model.sh
//! cargo run -p agrag-benches --release --bin document-recall -- \
//!     [--embedders minilm,hash] [--threads 2] [--documents FILE.jsonl] [--conclusions FILE.jsonl]
//! ```
//!
//! Query sets, as in `theme-recall`: each document's title, and each abstract's own conclusion
//! (PubMedQA `LONG_ANSWER`, not among its passages). Every document of the corpus is ranked by
//! the dot product of its unit vector with the question's; ties go to the lower row, which
//! counts against the question. Document vectors:
//! - **text**: the document's title and passages as one text (`title\npassage\n…`), embedded
//!   whole; all-MiniLM-L6-v2 reads a text past 256 word pieces as the mean of 254-piece windows.
//! - **title + passages**: [`agrag_pipeline::embed::document_vector`], the normalised sum of the
//!   unit vectors of the title and of each passage, embedded one by one (what the pipeline
//!   publishes: the passage vectors are the ones theme search already needs).
//! - **passages**: the same without the title.
//!
//! The seconds are those of embedding what each way needs, cache misses only: the passages are
//! embedded once and shared by the last two.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agrag_benches::common::workspace;
use agrag_benches::measure::load_average;
use agrag_benches::retrieval::{
    CachingEmbedder, EMBEDDERS, Ranks, candidates, default_conclusions, embed_all, read_conclusions,
};
use agrag_engine::embed::{Embedder, dot};
use agrag_pipeline::embed::document_vector;
use agrag_pipeline::ingest::read_jsonl;
use agrag_pipeline::run::EMBED_CHUNK_TEXTS;
use clap::Parser;
use rayon::prelude::*;

/// Command line of `document-recall` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "document-recall",
    about = "How often a document's vector finds it again from its title or its conclusion, per embedder and way of making document vectors, as markdown tables"
)]
struct Cli {
    /// Embedders to measure.
    #[arg(long, value_delimiter = ',', default_value = "minilm,hash", value_parser = clap::builder::PossibleValuesParser::new(EMBEDDERS))]
    embedders: Vec<String>,
    /// Threads of the embedding (1..=1024).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Corpus (JSON lines) [default: the shipped PubMedQA documents].
    #[arg(long)]
    documents: Option<PathBuf>,
    /// Conclusions, JSON lines of `{"document_key", "query"}` [default:
    /// ../shared/data/pubmedqa/conclusions.jsonl next to the workspace].
    #[arg(long)]
    conclusions: Option<PathBuf>,
}

/// The rank (1-based) of row `own` of `matrix` by dot product with `q`, ties counting against it.
fn rank_of(matrix: &[Vec<f32>], q: &[f32], own: usize) -> usize {
    let s = dot(&matrix[own], q);
    1 + matrix
        .iter()
        .enumerate()
        .filter(|&(i, row)| {
            let t = dot(row, q);
            t > s || (t == s && i < own)
        })
        .count()
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64())
}

fn main() {
    let cli = Cli::parse();
    let documents = cli
        .documents
        .clone()
        .unwrap_or_else(|| workspace().join("data/pubmedqa/documents.jsonl"));
    let conclusions = cli.conclusions.clone().unwrap_or_else(default_conclusions);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(usize::from(cli.threads))
        .build()
        .expect("thread pool");
    let names: Vec<&str> = cli.embedders.iter().map(String::as_str).collect();
    let (cands, notices) = candidates(&names);
    for n in &notices {
        eprintln!("notice: {n}");
    }
    let corpus = read_jsonl(&documents).expect("documents");
    let titles: Vec<(String, usize)> = corpus
        .documents
        .iter()
        .enumerate()
        .map(|(i, d)| (d.title.clone(), i))
        .collect();
    let sets = [
        ("titles", titles),
        ("conclusions", read_conclusions(&conclusions, &corpus)),
    ];
    let whole: Vec<String> = corpus
        .documents
        .iter()
        .map(|d| format!("{}\n{}", d.title, d.passages.join("\n")))
        .collect();
    let load_before = load_average();
    let started = Instant::now();
    let mut lines = Vec::new();
    for c in &cands {
        let cached: Arc<dyn Embedder> = Arc::new(CachingEmbedder::new(c.embedder.clone()));
        pool.install(|| {
            let refs: Vec<&str> = whole.iter().map(String::as_str).collect();
            let (text_vectors, text_s) =
                timed(|| embed_all(cached.as_ref(), &refs, EMBED_CHUNK_TEXTS));
            let parts: Vec<Vec<&str>> = corpus
                .documents
                .iter()
                .map(|d| {
                    let mut v = vec![d.title.as_str()];
                    v.extend(d.passages.iter().map(String::as_str));
                    v
                })
                .collect();
            let flat: Vec<&str> = parts.iter().flatten().copied().collect();
            let (flat_vectors, flat_s) =
                timed(|| embed_all(cached.as_ref(), &flat, EMBED_CHUNK_TEXTS));
            let mut at = 0;
            let mut with_title = Vec::new();
            let mut passages_only = Vec::new();
            for p in &parts {
                let v = &flat_vectors[at..at + p.len()];
                at += p.len();
                let refs: Vec<&[f32]> = v.iter().map(Vec::as_slice).collect();
                with_title.push(document_vector(&refs));
                passages_only.push(document_vector(&refs[1..]));
            }
            let ways = [
                ("text", text_vectors, text_s),
                ("title + passages", with_title, flat_s),
                ("passages", passages_only, flat_s),
            ];
            for (name, questions) in &sets {
                let qs: Vec<&str> = questions.iter().map(|(q, _)| q.as_str()).collect();
                let qv = embed_all(cached.as_ref(), &qs, EMBED_CHUNK_TEXTS);
                for (way, matrix, secs) in &ways {
                    let ranks = Ranks(
                        questions
                            .par_iter()
                            .zip(&qv)
                            .map(|((_, d), q)| Some(rank_of(matrix, q, *d)))
                            .collect(),
                    );
                    lines.push(format!(
                        "| {} | {name} ({}) | {way} | {:.3} | {:.3} | {:.3} | {:.3} | {secs:.1} |",
                        c.name,
                        questions.len(),
                        ranks.recall(1),
                        ranks.recall(5),
                        ranks.recall(10),
                        ranks.mrr(),
                    ));
                }
            }
        });
    }
    println!(
        "\nRecall of the source document among {} documents by its vector; {} threads; load average before {load_before}, after {}; {:.0} s in all\n",
        corpus.documents.len(),
        cli.threads,
        load_average(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "| embedder | questions | document vector | recall@1 | recall@5 | recall@10 | MRR | embedding s |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    for l in lines {
        println!("{l}");
    }
}
