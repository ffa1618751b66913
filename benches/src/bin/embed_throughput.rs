//! `embed-throughput`: passages embedded per second (batched and parallel as the pipeline
//! does it) and query-embedding latency, per embedder, next to the machine's dense f32 matrix
//! multiply rate. Prints markdown tables.
//!
//! ```text
//! bash scripts/fetch-model.sh
//! cargo run -p agrag-benches --release --bin embed-throughput -- \
//!     [--embedders minilm,hash] [--threads 1,2] [--chunks 1,32] [--documents FILE.jsonl]
//!     [--limit N] [--queries N] [--gemm-size 2048] [--repeat 1]
//! ```
//!
//! GEMM: `C = A·B` of two `n × n` f32 matrices (`--gemm-size`, 2,048 by default; `2n³`
//! flops) through the `gemm` crate (the kernels all-MiniLM-L6-v2 runs on; AVX-512 or AVX2
//! chosen at run time) on a pool of each `--threads` count: one warm-up, then the median of 5.
//!
//! Throughput: every passage of the corpus (2,999 for the shipped PubMedQA), sorted by length,
//! in chunks of `--chunks` texts run in parallel on a pool of `--threads` threads (the pipeline
//! uses chunks of 32 on every core), `--repeat` times (each row one run). For MiniLM also word
//! pieces per second and the achieved GFLOP/s at 21.2 MFLOP per word piece (the dense layers:
//! 6 × (384·1152 + 384·384 + 2·384·1536) multiply-adds; attention's share, under 5 % at 90
//! pieces, is not counted) and that rate as a share of the GEMM rate at the same thread count.
//!
//! Latency: each document title (a question, at most `--queries` of them) embedded alone, one
//! after the other, on a 2-thread pool after 10 warm-up queries; p50 and p99 in ms.

use std::path::{Path, PathBuf};

use clap::Parser;

use agrag_benches::common::gemm_rate::gemm_f32_gflops;
use agrag_benches::measure::load_average;
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
    /// Time at most this many queries [default: every title].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    queries: Option<u64>,
    /// Side of the square matrices of the GEMM measurement (64..=8192).
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u16).range(64..=8192))]
    gemm_size: u16,
    /// Runs of each throughput configuration (1..=100).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=100))]
    repeat: u16,
}

/// Dense multiply-adds of all-MiniLM-L6-v2 per word piece, ×2 flops: 6 layers of the Q, K, V
/// and output projections (4 · 384²) and the feed-forward pair (2 · 384 · 1536).
const MINILM_FLOP_PER_PIECE: f64 = 2.0 * 6.0 * (4.0 * 384.0 * 384.0 + 2.0 * 384.0 * 1536.0);

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
    let queries = cli
        .queries
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let titles: Vec<&str> = corpus
        .documents
        .iter()
        .map(|d| d.title.as_str())
        .take(queries)
        .collect();
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
    let n = usize::from(cli.gemm_size);
    println!("| GEMM f32 {n}² (gemm crate) | threads | GFLOP/s | load average |");
    println!("|---|---|---|---|");
    let gemm: Vec<(usize, f64)> = threads
        .iter()
        .map(|&t| {
            let g = gemm_f32_gflops(n, t, 5).expect("GEMM rate").median_gflops;
            println!("| {n}×{n}·{n}×{n} | {t} | {g:.1} | {} |", load_average());
            (t, g)
        })
        .collect();
    println!(
        "\n| embedder | threads | chunk | seconds | passages/s | word pieces/s | GFLOP/s | % of GEMM | load average |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for c in &cands {
        for &t in &threads {
            for &chunk in &chunks {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .expect("thread pool");
                for _ in 0..cli.repeat {
                    eprintln!("{}: {t} threads, chunks of {chunk}", c.name);
                    let (_, ms) = timed_ms(|| {
                        pool.install(|| embed_all(c.embedder.as_ref(), &passages, chunk))
                    });
                    let s = ms / 1e3;
                    let (pieces, gflops, share) = match tokens {
                        Some(tok) if c.name == "minilm" => {
                            let g = tok as f64 * MINILM_FLOP_PER_PIECE / s / 1e9;
                            let gemm_t = gemm.iter().find(|(gt, _)| *gt == t).map_or(0.0, |x| x.1);
                            (
                                format!("{:.0}", tok as f64 / s),
                                format!("{g:.1}"),
                                format!("{:.0} %", 100.0 * g / gemm_t),
                            )
                        }
                        _ => Default::default(),
                    };
                    println!(
                        "| {} | {t} | {chunk} | {s:.2} | {:.1} | {pieces} | {gflops} | {share} | {} |",
                        c.name,
                        passages.len() as f64 / s,
                        load_average()
                    );
                }
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
