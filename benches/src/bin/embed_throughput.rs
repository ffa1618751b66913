//! `embed-throughput`: passages embedded per second (batched and parallel as the pipeline
//! does it) and query-embedding latency, per embedder. Prints a markdown table.
//!
//! ```text
//! bash scripts/fetch-model.sh
//! cargo run -p agrag-benches --release --bin embed-throughput -- \
//!     [--embedders minilm,hash] [--threads 1,2] [--chunks 1,32] [--documents FILE.jsonl]
//!     [--limit N]
//! ```
//!
//! Throughput: every passage of the corpus (2,999 for the shipped PubMedQA), sorted by length,
//! in chunks of `--chunks` texts run in parallel on a pool of `--threads` threads (the pipeline
//! uses chunks of 32 on every core). Latency: each document title (a question) embedded alone,
//! one after the other, on a 2-thread pool after 10 warm-up queries; p50 and p99 in ms.

use std::path::{Path, PathBuf};

use clap::Parser;

use agrag_benches::retrieval::{EMBEDDERS, candidates, embed_all, percentile, timed_ms};
use agrag_engine::embed::MiniLmEmbedder;
use agrag_engine::embed::settings::model_path_from_env;
use agrag_pipeline::ingest::read_jsonl;

/// Command line of `embed-throughput` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "embed-throughput",
    about = "Passages embedded per second and query-embedding latency, per embedder, as a markdown table"
)]
struct Cli {
    /// Embedders to measure.
    #[arg(long, value_delimiter = ',', default_value = "minilm,hash", value_parser = clap::builder::PossibleValuesParser::new(EMBEDDERS))]
    embedders: Vec<String>,
    /// Thread counts of the embedding pool (each 1..=1024).
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Texts per parallel chunk (each 1..=4096).
    #[arg(long, value_delimiter = ',', default_value = "1,32", value_parser = clap::value_parser!(u16).range(1..=4096))]
    chunks: Vec<u16>,
    /// Corpus (JSON lines) [default: the shipped PubMedQA documents].
    #[arg(long)]
    documents: Option<PathBuf>,
    /// Embed at most this many passages.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
}

fn main() {
    let cli = Cli::parse();
    let names: Vec<&str> = cli.embedders.iter().map(String::as_str).collect();
    let threads: Vec<usize> = cli.threads.iter().map(|&t| usize::from(t)).collect();
    let chunks: Vec<usize> = cli.chunks.iter().map(|&c| usize::from(c)).collect();
    let documents = cli.documents.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/pubmedqa/documents.jsonl")
    });
    let corpus = read_jsonl(&documents).expect("documents");
    let limit = cli
        .limit
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let passages: Vec<&str> = corpus
        .documents
        .iter()
        .flat_map(|d| d.passages.iter().map(String::as_str))
        .take(limit)
        .collect();
    let titles: Vec<&str> = corpus.documents.iter().map(|d| d.title.as_str()).collect();
    let chars: usize = passages.iter().map(|p| p.len()).sum();
    let tokens = MiniLmEmbedder::load(&model_path_from_env()).ok().map(|m| {
        passages
            .iter()
            .map(|p| m.num_tokens(p).unwrap_or(0))
            .sum::<usize>()
    });

    let (cands, notices) = candidates(&names);
    for n in &notices {
        eprintln!("notice: {n}");
    }
    println!(
        "\n{} passages ({:.0} bytes mean{}), {} queries\n",
        passages.len(),
        chars as f64 / passages.len().max(1) as f64,
        tokens.map_or(String::new(), |t| format!(
            ", {:.0} MiniLM word pieces mean",
            t as f64 / passages.len().max(1) as f64
        )),
        titles.len()
    );
    println!("| embedder | threads | chunk | seconds | passages/s |");
    println!("|---|---|---|---|---|");
    for c in &cands {
        for &t in &threads {
            for &chunk in &chunks {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .expect("thread pool");
                eprintln!("{}: {t} threads, chunks of {chunk}", c.name);
                let (_, ms) =
                    timed_ms(|| pool.install(|| embed_all(c.embedder.as_ref(), &passages, chunk)));
                println!(
                    "| {} | {t} | {chunk} | {:.2} | {:.1} |",
                    c.name,
                    ms / 1e3,
                    passages.len() as f64 / (ms / 1e3)
                );
            }
        }
    }
    println!("\n| embedder | query embedding p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("thread pool");
    for c in &cands {
        let samples: Vec<f64> = pool.install(|| {
            for t in titles.iter().take(10) {
                c.embedder.embed(t).expect("embed");
            }
            titles
                .iter()
                .map(|t| timed_ms(|| c.embedder.embed(t).expect("embed")).1)
                .collect()
        });
        println!(
            "| {} | {:.2} | {:.2} | {:.2} |",
            c.name,
            percentile(&samples, 50.0),
            percentile(&samples, 99.0),
            percentile(&samples, 100.0)
        );
    }
}
