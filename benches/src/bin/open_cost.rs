//! Cost of opening a run: milliseconds per million rows and resident memory after open.
//!
//! For each size, writes a synthetic run (see `common::synthetic_run`, about 20 rows per
//! document over all tables, 384-dim embeddings) through the real writer, then opens it with
//! `Engine::open` in a fresh child process (so the RSS is the engine's alone), three times per
//! verify level, and prints a markdown table of the medians.
//!
//! `cargo run --release -p agrag-benches --bin open-cost -- [DOCUMENTS...]` (default 10000
//! 60000; `--help` lists the options). Child mode (internal): `open-cost --open ROOT
//! sizes|checksums`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agrag_benches::common::{XorShift, synthetic_run_with_passages};
use agrag_benches::measure::rss_bytes;
use agrag_engine::embed::{Embedder, HashEmbedder};
use agrag_engine::format::{Layout, Manifest, Verify, new_run_id, write_run};
use agrag_engine::{Engine, EngineConfig};
use clap::Parser;

/// Command line of `open-cost` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "open-cost",
    about = "Cost of opening a run: milliseconds per million rows and resident memory after open"
)]
struct Cli {
    /// Sizes of the synthetic runs, in documents (each 1..=10000000).
    #[arg(default_values_t = [10_000u32, 60_000], value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    documents: Vec<u32>,
    /// Internal: open the run under ROOT in this process (with `VERIFY`: sizes or checksums) and
    /// print the milliseconds and resident bytes.
    #[arg(long, hide = true, num_args = 2, value_names = ["ROOT", "VERIFY"])]
    open: Option<Vec<String>>,
    /// Write the runs under DIR (as `DIR/n<documents>`) and leave them there, to query them
    /// with `agrag-engine --root DIR/n<documents>` afterwards.
    #[arg(long, value_name = "DIR")]
    keep: Option<std::path::PathBuf>,
    /// Passages per document of the synthetic runs (10 with 10⁶ documents: 10⁷ passages).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    passages_per_document: u32,
}

const MIB: f64 = (1u64 << 20) as f64;
/// Target: milliseconds to open a run of 10⁶ documents, sizes verified.
const TARGET_OPEN_MS: f64 = 50.0;
/// Target: resident MiB after opening a run of 10⁶ documents.
const TARGET_RSS_MIB: f64 = 100.0;

/// Child: open `root` at `verify`, print `open_ms rss_before_bytes rss_after_bytes`.
fn open_child(root: &Path, verify: &str) {
    let verify = match verify {
        "sizes" => Verify::Sizes,
        _ => Verify::Checksums,
    };
    let before = rss_bytes().unwrap_or(0);
    let t = Instant::now();
    let engine = Engine::open(
        root,
        EngineConfig {
            verify,
            ..EngineConfig::default()
        },
    )
    .expect("open");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(
        engine.run_id().is_some(),
        "no run served: {:?}",
        engine.not_ready_reason()
    );
    let after = rss_bytes().unwrap_or(0);
    #[allow(clippy::print_stdout)]
    {
        println!("{ms} {before} {after}");
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[allow(clippy::print_stdout)]
fn main() {
    let cli = Cli::parse();
    if let Some(open) = &cli.open {
        open_child(Path::new(&open[0]), &open[1]);
        return;
    }
    let sizes: Vec<usize> = cli.documents.iter().map(|&n| n as usize).collect();
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = cli.keep.clone().unwrap_or_else(|| temp.path().to_owned());
    println!(
        "| documents | passages | rows (all tables) | run MiB | verify | open ms | ms per million rows | RSS after open MiB | RSS growth MiB |"
    );
    println!("|---:|---:|---:|---:|---|---:|---:|---:|---:|");
    // (documents, open ms, RSS after open MiB) of the runs the targets judge.
    let mut targets: Vec<(usize, f64, f64)> = Vec::new();
    for n in sizes {
        let root = dir.join(format!("n{n}"));
        let embedder = HashEmbedder::default();
        let data = synthetic_run_with_passages(
            n,
            cli.passages_per_document as usize,
            embedder.identity().dim,
            &mut XorShift::new(n as u64),
        );
        let run_id = new_run_id();
        let layout = Layout::new(&root);
        let manifest: Manifest = write_run(
            &layout,
            &run_id,
            &data,
            embedder.identity(),
            serde_json::json!({}),
            "synthetic".into(),
            serde_json::json!({}),
        )
        .expect("write");
        layout.write_latest(&run_id).expect("publish");
        drop(data);
        let rows: u64 = manifest.files.iter().map(|f| f.rows).sum();
        let bytes: u64 = manifest.files.iter().map(|f| f.bytes).sum();
        for verify in ["sizes", "checksums"] {
            let mut ms = Vec::new();
            let mut after = Vec::new();
            let mut growth = Vec::new();
            for _ in 0..3 {
                let out = Command::new(std::env::current_exe().expect("exe"))
                    .args(["--open"])
                    .arg(&root)
                    .arg(verify)
                    .output()
                    .expect("child");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let s = String::from_utf8_lossy(&out.stdout);
                let v: Vec<f64> = s
                    .split_whitespace()
                    .map(|x| x.parse().expect("number"))
                    .collect();
                ms.push(v[0]);
                after.push(v[2] / MIB);
                growth.push((v[2] - v[1]) / MIB);
            }
            let ms = median(ms);
            if n >= 1_000_000 && verify == "sizes" {
                targets.push((n, ms, median(after.clone())));
            }
            println!(
                "| {n} | {} | {rows} | {:.1} | {verify} | {ms:.0} | {:.0} | {:.0} | {:.0} |",
                n * cli.passages_per_document as usize,
                bytes as f64 / MIB,
                ms / (rows as f64 / 1e6),
                median(after),
                median(growth)
            );
        }
    }
    println!();
    if targets.is_empty() {
        println!(
            "targets (open <= {TARGET_OPEN_MS} ms and RSS after open <= {TARGET_RSS_MIB} MiB at 10^6 documents, sizes verified): not measured (no size >= 1000000)"
        );
    }
    for (n, ms, rss) in targets {
        let met = |ok: bool| if ok { "met" } else { "NOT met" };
        println!(
            "target at {n} documents: open {ms:.0} ms <= {TARGET_OPEN_MS} ms {}; RSS after open {rss:.0} MiB <= {TARGET_RSS_MIB} MiB {}",
            met(ms <= TARGET_OPEN_MS),
            met(rss <= TARGET_RSS_MIB)
        );
    }
}
