//! `leiden-compare`: our Leiden (1 and 2 threads) side by side with peer implementations on the
//! same edge lists, printed as a markdown table.
//!
//! ```text
//! cargo run -p agrag-benches --release --bin leiden-compare -- \
//!     [--graphs lfr-100k,ca-condmat] [--data DIR] [--peers igraph-leiden,...|none]
//!     [--ours agrag-leiden,...] [--threads 1,2] [--python benches/.venv/bin/python]
//!     [--timeout 900] [--repeat 3] [--json OUT.json]
//! ```
//!
//! `--help` lists the options with their defaults; an unknown option, graph, peer or
//! implementation, or an out-of-range count, is an error before anything runs.
//!
//! Each implementation runs `--repeat` times (in rounds, so load on the machine hits all alike)
//! and the run of median wall time is reported, with its CPU seconds and memory. Under the table,
//! one line per graph judges our 2-thread run against the targets of issue 3 (✓ or ✗): 2 threads
//! at least 1.6 × faster than 1, peak RSS within `2 × CSR + 64 MiB`, at least 5 × faster than
//! igraph-leiden, and modularity at least 0.997 × igraph-leiden's.
//!
//! Every measurement runs in a child process (this binary with `--child`, or
//! `benches/peers/run_peer.py`), so peak RSS is per implementation. Wall and CPU seconds cover the
//! algorithm alone (loading and conversion excluded); peak RSS is the whole child process; the
//! "algo" RSS is the peak during the algorithm (reset through `/proc/self/clear_refs`).
//! Modularity (γ = 1, igraph's definition) and NMI against the ground truth (where a
//! `<graph>.communities.tsv.gz` exists) are computed here, the same way for every row.
//! Peers missing from the venv are skipped; run `benches/peers/setup_venv.sh` first.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agrag_benches::common::workspace;
use agrag_benches::measure::{cpu_seconds, peak_rss_bytes, reset_peak_rss};
use agrag_benches::nmi::{nmi, read_ground_truth};
use agrag_pipeline::graph::{Graph, read_edge_list};
use agrag_pipeline::leiden::quality::modularity;
use agrag_pipeline::leiden::{Algorithm, LeidenConfig, hierarchical_leiden, leiden};
use clap::Parser;
use serde_json::{Value, json};

const PEERS: [&str; 5] = [
    "igraph-leiden",
    "leidenalg",
    "graspologic-native",
    "networkit-leiden",
    "networkit-plm",
];

/// Targets of issue 3, judged in the summary lines under the table (2 threads): wall time
/// against igraph-leiden's, 2 threads against 1, and modularity against igraph-leiden's.
const SPEED_TARGET: f64 = 5.0;
const SCALING_TARGET: f64 = 1.6;
const QUALITY_TARGET: f64 = 0.997;

/// `✓` when a target is met, `✗` when not (NaN, from a failed run, is not met).
fn verdict(met: bool) -> &'static str {
    if met { "✓" } else { "✗" }
}

/// Our implementations that can be measured.
const OURS: [&str; 3] = ["agrag-leiden", "agrag-louvain", "agrag-hierarchical"];

/// Command line of `leiden-compare` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "leiden-compare",
    about = "Our Leiden (1 and 2 threads) side by side with peer implementations on the same edge lists, as a markdown table"
)]
struct Cli {
    /// Graphs to run, by name: `<DATA>/<name>.edges.tsv.gz` (and the ground truth
    /// `<name>.communities.tsv.gz` when it exists).
    #[arg(long, value_delimiter = ',', default_value = "lfr-100k,ca-condmat")]
    graphs: Vec<String>,
    /// Folder of the edge lists [default: ../shared/data/graphs beside the workspace].
    #[arg(long)]
    data: Option<PathBuf>,
    /// Peers to run (`none` for ours alone) [default: every peer].
    #[arg(long, value_delimiter = ',', value_parser = peer_name)]
    peers: Option<Vec<String>>,
    /// Our implementations to run.
    #[arg(long, value_delimiter = ',', default_value = "agrag-leiden", value_parser = clap::builder::PossibleValuesParser::new(OURS))]
    ours: Vec<String>,
    /// Thread counts of our implementations (each 1..=1024).
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Python of the peers' venv (made by `benches/peers/setup_venv.sh`)
    /// [default: benches/.venv/bin/python].
    #[arg(long)]
    python: Option<PathBuf>,
    /// Seconds a single run may take before it is stopped and reported as failed.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Runs of every implementation; the run of median wall time is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Also write every run's measurements to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Internal: one measurement of this implementation in this process (with `--edges`, `--out`
    /// and one `--threads` value), printed as one JSON line.
    #[arg(long, hide = true, requires_all = ["edges", "out"])]
    child: Option<String>,
    /// Internal (`--child`): the edge list.
    #[arg(long, hide = true)]
    edges: Option<PathBuf>,
    /// Internal (`--child`): where the membership goes (little-endian `u32` per node).
    #[arg(long, hide = true)]
    out: Option<PathBuf>,
}

/// A peer name for `--peers`: one of [`PEERS`], `graphrs-louvain`, or `none`.
fn peer_name(s: &str) -> Result<String, String> {
    if PEERS.contains(&s) || s == "graphrs-louvain" || s == "none" {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown peer; expected one of {}, graphrs-louvain, none",
            PEERS.join(", ")
        ))
    }
}

fn main() {
    let cli = Cli::parse();
    let code = match &cli.child {
        Some(which) => child(which, &cli),
        None => parent(&cli),
    };
    std::process::exit(code);
}

/// `--child IMPL --edges FILE --out FILE --threads N`: one measurement, one JSON line.
fn child(which: &str, cli: &Cli) -> i32 {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let (Some(edges), Some(out)) = (&cli.edges, &cli.out) else {
        eprintln!("--child needs --edges and --out");
        return 2;
    };
    let threads = match cli.threads[..] {
        [t] => usize::from(t),
        _ => {
            eprintln!("--child takes one --threads value");
            return 2;
        }
    };
    let graph = match read_edge_list(edges) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let result = if which == "graphrs-louvain" {
        run_graphrs(&graph, &pool)
    } else {
        run_ours(which, &graph, &pool)
    };
    let Some((membership, wall, cpu, peak_load, peak_algo, reset, extra)) = result else {
        eprintln!("unknown implementation {which}");
        return 2;
    };
    let bytes: Vec<u8> = membership.iter().flat_map(|c| c.to_le_bytes()).collect();
    if let Err(e) = std::fs::write(out, bytes) {
        eprintln!("{}: {e}", out.display());
        return 1;
    }
    let communities = membership
        .iter()
        .copied()
        .max()
        .map_or(0, |m| m as usize + 1);
    let line = json!({
        "peer": which,
        "version": env!("CARGO_PKG_VERSION"),
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_bytes": peak_load.max(peak_algo),
        "peak_rss_algo_bytes": reset.then_some(peak_algo),
        "communities": communities,
        "threads": threads,
        "graph_bytes": graph.size_bytes(),
        "extra": extra,
    });
    println!("{line}");
    0
}

type Measured = (Vec<u32>, f64, f64, u64, u64, bool, Value);

fn run_ours(which: &str, graph: &Graph, pool: &rayon::ThreadPool) -> Option<Measured> {
    let config = match which {
        "agrag-leiden" | "agrag-hierarchical" => LeidenConfig::default(),
        "agrag-louvain" => LeidenConfig {
            algorithm: Algorithm::Louvain,
            ..LeidenConfig::default()
        },
        _ => return None,
    };
    let peak_load = peak_rss_bytes().unwrap_or(0);
    let reset = reset_peak_rss();
    let cpu0 = cpu_seconds().unwrap_or(0.0);
    let t0 = Instant::now();
    let (membership, extra) = if which == "agrag-hierarchical" {
        let h = pool
            .install(|| hierarchical_leiden(graph, &config))
            .expect("valid config");
        // Report the level-0 (coarsest) partition; the hierarchy's shape goes in `extra`.
        let mut m = vec![0u32; graph.num_nodes()];
        for c in h.level(0) {
            for &v in &c.members {
                m[v as usize] = c.id;
            }
        }
        (
            m,
            json!({"levels": h.num_levels(), "communities": h.stats.communities, "leaves": h.stats.leaves}),
        )
    } else {
        let p = pool
            .install(|| leiden(graph, &config))
            .expect("valid config");
        (p.membership, json!({"iterations": p.iterations}))
    };
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds().unwrap_or(0.0) - cpu0;
    let peak_algo = peak_rss_bytes().unwrap_or(0);
    Some((membership, wall, cpu, peak_load, peak_algo, reset, extra))
}

fn run_graphrs(graph: &Graph, pool: &rayon::ThreadPool) -> Option<Measured> {
    use graphrs::{Edge, Graph as GGraph, GraphSpecs, Node};
    let n = graph.num_nodes();
    let nodes: Vec<_> = (0..n as u32).map(Node::<u32, ()>::from_name).collect();
    let mut edges = Vec::with_capacity(graph.num_edges());
    for u in 0..n as u32 {
        for (v, w) in graph.neighbors(u) {
            if u < v {
                edges.push(Edge::<u32, ()>::with_weight(u, v, w));
            }
        }
    }
    let g = GGraph::<u32, ()>::new_from_nodes_and_edges(nodes, edges, GraphSpecs::undirected())
        .expect("graphrs graph");
    let peak_load = peak_rss_bytes().unwrap_or(0);
    let reset = reset_peak_rss();
    let cpu0 = cpu_seconds().unwrap_or(0.0);
    let t0 = Instant::now();
    let communities = pool
        .install(|| {
            graphrs::algorithms::community::louvain::louvain_communities(
                &g,
                true,
                None,
                None,
                Some(42),
            )
        })
        .expect("graphrs louvain");
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds().unwrap_or(0.0) - cpu0;
    let peak_algo = peak_rss_bytes().unwrap_or(0);
    let mut membership = vec![u32::MAX; n];
    for (c, set) in communities.iter().enumerate() {
        for &v in set {
            membership[v as usize] = c as u32;
        }
    }
    let mut next = communities.len() as u32;
    for m in &mut membership {
        if *m == u32::MAX {
            *m = next;
            next += 1;
        }
    }
    Some((
        membership,
        wall,
        cpu,
        peak_load,
        peak_algo,
        reset,
        json!({}),
    ))
}

/// Runs `cmd` with a timeout; returns its stdout, or an error text.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Result<String, String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                let mut err = String::new();
                if let Some(mut s) = child.stdout.take() {
                    let _ = s.read_to_string(&mut out);
                }
                if let Some(mut s) = child.stderr.take() {
                    let _ = s.read_to_string(&mut err);
                }
                return if status.success() {
                    Ok(out)
                } else {
                    Err(format!(
                        "exit {status}: {}",
                        err.lines().last().unwrap_or("")
                    ))
                };
            }
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timeout after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

struct Row {
    graph: String,
    name: String,
    threads: usize,
    result: Result<Value, String>,
    modularity: Option<f64>,
    nmi: Option<f64>,
}

fn parent(cli: &Cli) -> i32 {
    let data = cli
        .data
        .clone()
        .unwrap_or_else(|| workspace().join("../shared/data/graphs"));
    let graphs = &cli.graphs;
    let missing: Vec<String> = graphs
        .iter()
        .map(|name| data.join(format!("{name}.edges.tsv.gz")))
        .filter(|path| !path.exists())
        .map(|path| path.display().to_string())
        .collect();
    if !missing.is_empty() {
        eprintln!("leiden-compare: no edge list at {}", missing.join(", "));
        return 2;
    }
    let peers: Vec<String> = match &cli.peers {
        Some(p) => p.iter().filter(|p| *p != "none").cloned().collect(),
        None => PEERS
            .iter()
            .map(|s| (*s).to_string())
            .chain(["graphrs-louvain".to_string()])
            .collect(),
    };
    let ours = &cli.ours;
    let thread_counts: Vec<usize> = cli.threads.iter().map(|&t| usize::from(t)).collect();
    let python = cli
        .python
        .clone()
        .unwrap_or_else(|| workspace().join("benches/.venv/bin/python"));
    let timeout = Duration::from_secs(cli.timeout);
    let repeat = cli.repeat as usize;
    let peer_script = workspace().join("benches/peers/run_peer.py");
    let me = std::env::current_exe().expect("current exe");
    let tmp = std::env::temp_dir().join(format!("leiden-compare-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");

    let mut rows: Vec<Row> = Vec::new();
    let mut csr_bytes: BTreeMap<String, usize> = BTreeMap::new();
    for name in graphs {
        let edges = data.join(format!("{name}.edges.tsv.gz"));
        let graph = read_edge_list(&edges).expect("edge list");
        csr_bytes.insert(name.clone(), graph.size_bytes());
        let truth_path = data.join(format!("{name}.communities.tsv.gz"));
        let truth = truth_path
            .exists()
            .then(|| read_ground_truth(&truth_path, graph.num_nodes()).expect("ground truth"));
        eprintln!(
            "{name}: {} nodes, {} edges, CSR {:.1} MiB",
            graph.num_nodes(),
            graph.num_edges(),
            graph.size_bytes() as f64 / 1048576.0
        );
        // (implementation, threads, program, arguments before `--edges`/positional files).
        let mut jobs: Vec<(String, usize, PathBuf, Vec<String>)> = Vec::new();
        let child = |which: &str, t: usize| {
            let args = vec![
                "--child".into(),
                which.into(),
                "--threads".into(),
                t.to_string(),
            ];
            (which.to_string(), t, me.clone(), args)
        };
        for which in ours {
            for &t in &thread_counts {
                jobs.push(child(which, t));
            }
        }
        for peer in &peers {
            if peer == "graphrs-louvain" {
                jobs.push(child("graphrs-louvain", 2));
            } else {
                let t = if peer.starts_with("networkit") { 2 } else { 1 };
                let args = vec![
                    peer_script.display().to_string(),
                    peer.clone(),
                    "--threads".into(),
                    t.to_string(),
                ];
                jobs.push((peer.clone(), t, python.clone(), args));
            }
        }
        // Every job runs `repeat` times, in rounds (one run of each job per round, so a burst of
        // load on the machine hits every implementation alike); the run of median wall time is
        // reported.
        let mut runs: Vec<Vec<Result<Value, String>>> = vec![Vec::new(); jobs.len()];
        for round in 0..repeat {
            for (j, (which, threads, program, args)) in jobs.iter().enumerate() {
                let out = tmp.join(format!("{name}-{which}-{threads}-{round}.bin"));
                let _ = std::fs::remove_file(&out);
                let mut cmd = Command::new(program);
                if program == &me {
                    cmd.args(args)
                        .arg("--edges")
                        .arg(&edges)
                        .arg("--out")
                        .arg(&out);
                } else {
                    // run_peer.py takes EDGES OUT positionally after the peer name.
                    cmd.args(&args[..2]).arg(&edges).arg(&out).args(&args[2..]);
                }
                eprintln!(
                    "  running {which} ({threads} thread(s)), round {} of {repeat} ...",
                    round + 1
                );
                let result = run_with_timeout(cmd, timeout).and_then(|stdout| {
                    let line = stdout.lines().last().unwrap_or("").to_string();
                    serde_json::from_str::<Value>(&line)
                        .map_err(|e| format!("bad output {line:?}: {e}"))
                });
                let result = match result {
                    Ok(v) if v.get("skipped").is_some() => {
                        Err(format!("skipped: {}", v["skipped"]))
                    }
                    Ok(mut v) => {
                        v["membership_file"] = json!(out.display().to_string());
                        Ok(v)
                    }
                    Err(e) => Err(e),
                };
                if let Err(e) = &result {
                    eprintln!("    {which}: {e}");
                }
                runs[j].push(result);
            }
        }
        for ((which, threads, _, _), results) in jobs.into_iter().zip(runs) {
            let mut ok: Vec<Value> = results.iter().filter_map(|r| r.clone().ok()).collect();
            ok.sort_by(|a, b| {
                let w = |v: &Value| v["wall_s"].as_f64().unwrap_or(f64::INFINITY);
                w(a).total_cmp(&w(b))
            });
            let (mut modularity_value, mut nmi_value) = (None, None);
            let result = match ok.get(ok.len().saturating_sub(1) / 2) {
                None => Err(results
                    .into_iter()
                    .find_map(Result::err)
                    .unwrap_or_else(|| "no run".into())),
                Some(v) => {
                    let file = PathBuf::from(v["membership_file"].as_str().unwrap_or_default());
                    let bytes = std::fs::read(&file).unwrap_or_default();
                    let membership: Vec<u32> = bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    if membership.len() == graph.num_nodes() {
                        modularity_value = Some(modularity(&graph, &membership, 1.0));
                        nmi_value = truth.as_ref().map(|t| nmi(t, &membership));
                        let mut v = v.clone();
                        v["runs"] = json!(ok.len());
                        Ok(v)
                    } else {
                        Err(format!(
                            "membership has {} entries, expected {}",
                            membership.len(),
                            graph.num_nodes()
                        ))
                    }
                }
            };
            rows.push(Row {
                graph: name.clone(),
                name: which,
                threads,
                result,
                modularity: modularity_value,
                nmi: nmi_value,
            });
        }
    }
    println!(
        "| graph | implementation | threads | wall s | CPU s | peak RSS MiB | algo RSS MiB | communities | modularity | NMI |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mib = |v: &Value| {
        v.as_f64()
            .map_or("–".to_string(), |b| format!("{:.0}", b / 1048576.0))
    };
    for r in &rows {
        match &r.result {
            Ok(v) => println!(
                "| {} | {} | {} | {:.3} | {:.2} | {} | {} | {} | {:.4} | {} |",
                r.graph,
                r.name,
                r.threads,
                v["wall_s"].as_f64().unwrap_or(f64::NAN),
                v["cpu_s"].as_f64().unwrap_or(f64::NAN),
                mib(&v["peak_rss_bytes"]),
                mib(&v["peak_rss_algo_bytes"]),
                v["communities"],
                r.modularity.unwrap_or(f64::NAN),
                r.nmi.map_or("–".to_string(), |x| format!("{x:.3}")),
            ),
            Err(e) => println!(
                "| {} | {} | {} | {e} | | | | | | |",
                r.graph, r.name, r.threads
            ),
        }
    }
    // Targets: vs igraph, 2 vs 1 thread, memory.
    println!();
    for (name, bytes) in &csr_bytes {
        let find = |n: &str, t: usize| {
            rows.iter()
                .find(|r| &r.graph == name && r.name == n && r.threads == t && r.result.is_ok())
        };
        let wall = |r: &Row| {
            r.result
                .as_ref()
                .ok()
                .and_then(|v| v["wall_s"].as_f64())
                .unwrap_or(f64::NAN)
        };
        if let (Some(two), Some(one)) = (find("agrag-leiden", 2), find("agrag-leiden", 1)) {
            let limit = 2.0 * *bytes as f64 + 64.0 * 1048576.0;
            let peak = two
                .result
                .as_ref()
                .ok()
                .and_then(|v| v["peak_rss_bytes"].as_f64())
                .unwrap_or(f64::NAN);
            let membership = |r: &Row| {
                r.result
                    .as_ref()
                    .ok()
                    .and_then(|v| v["membership_file"].as_str())
                    .and_then(|f| std::fs::read(f).ok())
            };
            let same = match (membership(one), membership(two)) {
                (Some(a), Some(b)) if a == b => "identical",
                _ => "DIFFERENT",
            };
            let speedup = wall(one) / wall(two);
            print!(
                "- {name}: 2 threads {speedup:.2}x faster than 1 thread {} (target {SCALING_TARGET}x; membership {same}); peak RSS {:.0} MiB vs limit 2 x CSR + 64 MiB = {:.0} MiB {}",
                verdict(speedup >= SCALING_TARGET),
                peak / 1048576.0,
                limit / 1048576.0,
                verdict(peak <= limit)
            );
            if let Some(ig) = find("igraph-leiden", 1) {
                let faster = wall(ig) / wall(two);
                let ratio = two.modularity.unwrap_or(f64::NAN) / ig.modularity.unwrap_or(f64::NAN);
                print!(
                    "; {faster:.2}x faster than igraph-leiden {} (target {SPEED_TARGET}x), modularity {:.4} = {ratio:.4} x igraph's {} (target {QUALITY_TARGET})",
                    verdict(faster >= SPEED_TARGET),
                    two.modularity.unwrap_or(f64::NAN),
                    verdict(ratio >= QUALITY_TARGET)
                );
            }
            println!();
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if let Some(path) = &cli.json {
        let all: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "graph": r.graph, "implementation": r.name, "threads": r.threads,
                    "result": r.result.as_ref().map_or_else(|e| json!({"error": e}), Clone::clone),
                    "modularity": r.modularity, "nmi": r.nmi,
                })
            })
            .collect();
        if let Err(e) = std::fs::write(path, serde_json::to_string_pretty(&all).unwrap_or_default())
        {
            eprintln!("{}: {e}", path.display());
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("leiden-compare").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_and_lists() {
        let cli = parse(&[]).unwrap();
        assert_eq!(cli.graphs, ["lfr-100k", "ca-condmat"]);
        assert_eq!(cli.threads, [1, 2]);
        assert_eq!(cli.repeat, 3);
        assert!(cli.peers.is_none() && cli.child.is_none());
        let cli = parse(&[
            "--peers",
            "none",
            "--threads",
            "2",
            "--ours",
            "agrag-louvain",
        ])
        .unwrap();
        assert_eq!(cli.peers.unwrap(), ["none"]);
        assert_eq!(cli.ours, ["agrag-louvain"]);
        let cli = parse(&[
            "--child",
            "agrag-leiden",
            "--threads",
            "2",
            "--edges",
            "e.tsv",
            "--out",
            "m.bin",
        ])
        .unwrap();
        assert_eq!(cli.child.as_deref(), Some("agrag-leiden"));
    }

    #[test]
    fn bad_input_is_an_error_before_anything_runs() {
        for args in [
            &["--repeats", "3"][..],
            &["--repeat", "0"],
            &["--threads", "0"],
            &["--threads", "1,x"],
            &["--peers", "igraf"],
            &["--ours", "agrag-leidn"],
            &["--timeout", "0"],
            &["--child", "agrag-leiden"],
            &["--help"],
        ] {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }
}
