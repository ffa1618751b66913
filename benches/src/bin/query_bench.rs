//! Query latency of the engine on synthetic runs written through the real writer.
//!
//! * `search_themes` at 1k, 10k and 100k communities (384-dim report embeddings), with the
//!   query vector given (embedding excluded) and with the built-in embedder, with 0 % and 1 % of
//!   passages hidden;
//! * `find_by_meaning` (count + sample, no query, and with a BM25 query) on the full shipped
//!   MeSH vocabulary with 1,000,000 synthetic documents whose concept sets are copies of the
//!   real PubMedQA documents' MeSH sets, two of ten concepts replaced at random.
//!
//! Prints markdown tables. `cargo run --release -p agrag-benches --bin query-bench -- --help`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agrag_benches::common::XorShift;
use agrag_benches::measure::{ThreadCounters, rss_bytes, steal_ns_per_cpu};
use agrag_engine::embed::hash::HASH_MODEL;
use agrag_engine::embed::{Embedder, HashEmbedder, dot, l2_normalize};
use agrag_engine::format::tables::{
    CommunityRecord, ConceptRecord, DocumentRecord, EntityRecord, MembershipRecord, PassageRecord,
    ReportRecord,
};
use agrag_engine::format::{Layout, RunData, Verify, new_run_id, write_run};
use agrag_engine::ivf::{CandidateSearch, Probe};
use agrag_engine::query::theme::top_k;
use agrag_engine::visibility::{Target, Visibility, VisibilityStore};
use agrag_engine::{
    ConceptRequest, ConceptSelector, Direction, Engine, EngineConfig, PassageRow, QueryInput,
    Scope, ThemeRequest,
};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Latency percentiles of one row, in milliseconds: wall clock, and the calling thread's CPU
/// time (which excludes time the thread waited for a core: on a loaded machine the wall p99 is
/// mostly scheduler quanta, the CPU p99 is the work).
struct Latency {
    p50: f64,
    p99: f64,
    cpu_p50: f64,
    cpu_p99: f64,
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.3} | {:.3} | {:.3} | {:.3}",
            self.p50, self.p99, self.cpu_p50, self.cpu_p99
        )
    }
}

fn timed<F: FnMut(usize)>(n: usize, mut f: F) -> Latency {
    // Warm up, then measure each call in milliseconds.
    for i in 0..n.min(20) {
        f(i);
    }
    let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) = (0..n)
        .map(|i| {
            let c = cpu_time::ThreadTime::now();
            let t = Instant::now();
            f(i);
            (
                t.elapsed().as_secs_f64() * 1e3,
                c.elapsed().as_secs_f64() * 1e3,
            )
        })
        .unzip();
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    Latency {
        p50: percentile(&wall, 0.5),
        p99: percentile(&wall, 0.99),
        cpu_p50: percentile(&cpu, 0.5),
        cpu_p99: percentile(&cpu, 0.99),
    }
}

/// The theme search every latency row times: `vector` given (built-in embedder's model), all
/// documents, limit 5, support_limit 3.
fn vector_request(vector: &[f32]) -> ThemeRequest {
    ThemeRequest {
        query: QueryInput::Vector {
            model: HASH_MODEL.into(),
            vector: vector.to_vec(),
        },
        scope: Scope::All,
        limit: 5,
        support_limit: 3,
        timeout: None,
    }
}

fn random_unit(rng: &mut XorShift, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim)
        .map(|_| (rng.below(2_000_001) as f32 / 1e6) - 1.0)
        .collect();
    l2_normalize(&mut v);
    v
}

fn publish(root: &Path, data: &RunData, embedder: &dyn Embedder) -> f64 {
    let layout = Layout::new(root);
    let run_id = new_run_id();
    let t = Instant::now();
    write_run(
        &layout,
        &run_id,
        data,
        embedder.identity(),
        serde_json::json!({"synthetic": true}),
        "synthetic".into(),
        serde_json::json!({}),
    )
    .expect("write the synthetic run");
    layout.write_latest(&run_id).expect("publish");
    t.elapsed().as_secs_f64()
}

/// Synthetic report embeddings: `Uniform` (independent random unit vectors: no structure, the
/// worst case of any partitioning index) or `Clustered` (one topic per 100 communities; each
/// vector is its topic's centre plus noise of equal norm, cosine ≈ 0.5 within a topic, ≈ 0
/// across; queries are drawn the same way, like a question about one topic).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Space {
    Uniform,
    Clustered,
}

/// Draws vectors of `space`: `topic_vector(rng, i)` for row `i`.
struct Vectors {
    space: Space,
    centres: Vec<Vec<f32>>,
}

impl Vectors {
    fn new(space: Space, n: usize, rng: &mut XorShift) -> Self {
        let topics = (n / 100).max(10);
        Self {
            space,
            centres: (0..topics).map(|_| random_unit(rng, 384)).collect(),
        }
    }
    fn draw(&self, rng: &mut XorShift) -> Vec<f32> {
        let topic = rng.below(self.centres.len() as u64) as usize;
        self.draw_in(rng, topic)
    }
    /// A vector of topic `topic` (any vector for `Uniform`).
    fn draw_in(&self, rng: &mut XorShift, topic: usize) -> Vec<f32> {
        match self.space {
            Space::Uniform => random_unit(rng, 384),
            Space::Clustered => {
                let c = &self.centres[topic % self.centres.len()];
                let noise = random_unit(rng, 384);
                let mut v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + b).collect();
                l2_normalize(&mut v);
                v
            }
        }
    }
}

/// A run of `n` communities: 5 entities each, 5 passages each (3 per document), each entity
/// mentioned by 2 of its community's passages.
fn theme_run(
    n: usize,
    rng: &mut XorShift,
    embedder: &HashEmbedder,
    space: &Vectors,
    per_community: usize,
) -> RunData {
    let dim = embedder.identity().dim;
    let num_passages = 5 * n;
    let num_docs = num_passages.div_ceil(3);
    let doc_key = |d: usize| format!("doc{d:08}");
    let mut data = RunData {
        documents: (0..num_docs)
            .map(|d| DocumentRecord {
                key: doc_key(d),
                title: format!("document {d}"),
                year: None,
                num_passages: (num_passages - 3 * d).min(3) as u32,
                linked: true,
            })
            .collect(),
        passages: (0..num_passages)
            .map(|p| PassageRecord {
                passage_id: format!("{}#{}", doc_key(p / 3), p % 3),
                document_key: doc_key(p / 3),
                position: (p % 3) as u32,
                text: format!("passage {p} about topic {}", p / 5),
            })
            .collect(),
        concepts: vec![ConceptRecord {
            concept_id: "C0".into(),
            preferred_term: "Topic".into(),
            synonyms: vec![],
        }],
        ..RunData::default()
    };
    for c in 0..n {
        for k in 0..5 {
            let e = (5 * c + k) as u32;
            data.entities.push(EntityRecord {
                concept_id: "C0".into(),
                name: format!("entity {e}"),
                num_passages: 2,
                degree: 1.0,
            });
            for j in [k, (k + 1) % 5] {
                let p = 5 * c + j;
                data.mentions
                    .push((e, format!("{}#{}", doc_key(p / 3), p % 3), 1));
            }
            data.membership.push(MembershipRecord {
                level: 0,
                entity: e,
                community: c as u32,
                parent: None,
                is_leaf: true,
            });
        }
        data.communities.push(CommunityRecord {
            level: 0,
            parent: None,
            size: 5,
            is_leaf: true,
        });
        data.reports.push(ReportRecord {
            level: 0,
            title: format!("theme {c}"),
            summary: String::new(),
            findings: vec![],
            rank: 1.0,
            full_content: format!("theme {c}"),
        });
        // A community's vectors (its report text, its best passages) are about one topic.
        let topic = rng.below(space.centres.len() as u64) as usize;
        for _ in 0..per_community.max(1) {
            data.report_embeddings.extend(space.draw_in(rng, topic));
            data.report_embedding_communities.push(c as u32);
        }
    }
    data.document_embeddings = (0..num_docs).flat_map(|_| random_unit(rng, dim)).collect();
    data
}

fn themes(
    root: &Path,
    sizes: &[usize],
    queries: usize,
    space: Space,
    per_community: usize,
    sweep_rounds: usize,
) {
    println!(
        "\n## search_themes (limit 5, support_limit 3; {queries} queries per row; {space:?} report embeddings, {per_community} per community)\n"
    );
    println!(
        "| communities | passages | query | candidates | hidden | p50 ms | p99 ms | CPU p50 ms | CPU p99 ms | open ms | RSS after open MiB |"
    );
    println!("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let embedder = HashEmbedder::default();
    let words = [
        "mortality",
        "stroke",
        "insulin",
        "asthma",
        "sepsis",
        "statin",
        "cancer",
        "surgery",
    ];
    let mut recall_rows = Vec::new();
    let mut sweep_rows = Vec::new();
    for &n in sizes {
        let mut rng = XorShift::new(42 + n as u64);
        let dir = root.join(format!("themes-{n}"));
        let vectors_of = Vectors::new(space, n, &mut rng);
        let data = theme_run(n, &mut rng, &embedder, &vectors_of, per_community);
        let publish_s = publish(&dir, &data, &embedder);
        let num_passages = data.passages.len();
        let ids: Vec<String> = data.passages.iter().map(|p| p.passage_id.clone()).collect();
        drop(data);
        let t = Instant::now();
        let engine = Engine::open(&dir, EngineConfig::default()).expect("open");
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        let rss = rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64;
        let exact = Engine::open(
            &dir,
            EngineConfig {
                candidate_search: CandidateSearch::Exact,
                ..EngineConfig::default()
            },
        )
        .expect("open");
        let vectors: Vec<Vec<f32>> = (0..queries).map(|_| vectors_of.draw(&mut rng)).collect();
        let has_ivf = {
            let view = engine.view().expect("view");
            let snap = view.snapshot().expect("snapshot");
            snap.report_ivf().map(|ivf| {
                // Recall of the candidate window (15 = limit 5 × 3) against the exact scan.
                let matrix = snap.embedding_matrix();
                let (mut found, mut total, mut scanned) = (0usize, 0usize, 0usize);
                for v in &vectors {
                    let scores = agrag_engine::query::theme::community_scores(snap, v);
                    let truth = top_k(&scores, 15);
                    let best = |c: u32| {
                        snap.community(agrag_engine::CommunityRow(c))
                            .report_rows()
                            .map(|r| dot(v, &matrix[r * 384..(r + 1) * 384]))
                            .fold(f32::NEG_INFINITY, f32::max)
                    };
                    let (hits, stats) = ivf.search_by(v, 15, Probe::default(), best);
                    scanned += stats.rows_scored;
                    total += truth.len();
                    found += truth
                        .iter()
                        .filter(|t| hits.iter().any(|h| h.0 == t.0))
                        .count();
                }
                recall_rows.push(format!(
                    "| {n} | {space:?} | {} | {:.1} % | {:.4} | {publish_s:.1} |",
                    ivf.lists(),
                    100.0 * scanned as f64 / (vectors.len() * snap.num_report_vectors()) as f64,
                    found as f64 / total as f64
                ));
            })
        }
        .is_some();
        if has_ivf && sweep_rounds > 0 {
            sweep_rows.extend(probe_sweep(&dir, n, &vectors, sweep_rounds));
        }
        for hidden_pct in [0usize, 1] {
            if hidden_pct == 1 {
                let mut store =
                    VisibilityStore::open(&Layout::new(&dir).visibility_path()).expect("store");
                for (i, id) in ids.iter().enumerate() {
                    if i % 100 == 7 {
                        store
                            .set(Target::Passage, id, Visibility::Hidden, None)
                            .expect("hide");
                    }
                }
            }
            let modes: &[(&Engine, &str)] = if has_ivf {
                &[(&engine, "IVF"), (&exact, "exact")]
            } else {
                &[(&exact, "exact")]
            };
            for &(e, mode) in modes {
                let lat = timed(queries, |i| {
                    let req = vector_request(&vectors[i % vectors.len()]);
                    let a = e.search_themes(&req).expect("search");
                    assert!(!a.themes.is_empty());
                });
                println!(
                    "| {n} | {num_passages} | vector given | {mode} | {hidden_pct} % | {lat} | {open_ms:.0} | {rss:.0} |"
                );
            }
            let lat = timed(queries, |i| {
                let q = format!("{} and {} outcomes", words[i % 8], words[(i / 8) % 8]);
                let a = engine
                    .search_themes(&ThemeRequest::text(q))
                    .expect("search");
                assert!(!a.themes.is_empty());
            });
            println!(
                "| {n} | {num_passages} | built-in embedder | {} | {hidden_pct} % | {lat} | {open_ms:.0} | {rss:.0} |",
                modes[0].1
            );
        }
    }
    if !sweep_rows.is_empty() {
        println!(
            "\nProbes of the IVF read, vector given, nothing hidden, limit 5 (window 15); latency: medians over {sweep_rounds} interleaved rounds of each round's percentile:\n"
        );
        println!(
            "| communities | vectors | probe | cells probed | rows scored | window recall@15 | p50 ms | p99 ms | CPU p50 ms | CPU p99 ms |"
        );
        println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
        for r in sweep_rows {
            println!("{r}");
        }
    }
    if !recall_rows.is_empty() {
        println!(
            "\nCandidate-window recall of the IVF read (default probe) against the exact scan, 15 candidates:\n"
        );
        println!(
            "| communities | embeddings | cells | rows scored by int8 codes | recall@15 | publish s |"
        );
        println!("|---:|---|---:|---:|---:|---:|");
        for r in recall_rows {
            println!("{r}");
        }
    }
}

/// `search_themes` through the IVF index of the run in `dir` with several probes, `rounds`
/// times over all of them in turn (interleaved, so a burst of load on the shared machine
/// falls on every probe alike): per probe the cells probed and rows scored (means), the
/// recall of the candidate window (15 = limit 5 × 3) against the exact scan, and the medians
/// over rounds of each round's latency percentiles. One row per probe, as markdown.
fn probe_sweep(dir: &Path, n: usize, vectors: &[Vec<f32>], rounds: usize) -> Vec<String> {
    let exact = Engine::open(
        dir,
        EngineConfig {
            candidate_search: CandidateSearch::Exact,
            ..EngineConfig::default()
        },
    )
    .expect("open");
    let view = exact.view().expect("view");
    let snap = view.snapshot().expect("snapshot");
    let ivf = snap.report_ivf().expect("an IVF index");
    let per_group = ivf.rows() as f32 / ivf.groups() as f32;
    let d = Probe::default();
    // The probe of one vector per community applied to every vector (what the index did
    // before the cell fraction counted communities): the same cells as `d` scaled back up.
    let by_vectors = Probe {
        min_list_fraction: (d.min_list_fraction * per_group).min(1.0),
        ..d
    };
    let probes: Vec<(String, Probe)> = vec![
        ("1/32 of cells (by vectors)".into(), by_vectors),
        ("default: 1/32 per community".into(), d),
        (
            "1/16 per community".into(),
            Probe {
                min_list_fraction: 1.0 / 16.0,
                ..d
            },
        ),
        (
            "1/64 per community".into(),
            Probe {
                min_list_fraction: 1.0 / 64.0,
                ..d
            },
        ),
    ];
    let matrix = snap.embedding_matrix();
    let dim = snap.dim();
    let truths: Vec<Vec<(u32, f32)>> = vectors
        .iter()
        .map(|v| top_k(&agrag_engine::query::theme::community_scores(snap, v), 15))
        .collect();
    let engines: Vec<Engine> = probes
        .iter()
        .map(|(_, p)| {
            Engine::open(
                dir,
                EngineConfig {
                    candidate_search: CandidateSearch::Ivf(*p),
                    ..EngineConfig::default()
                },
            )
            .expect("open")
        })
        .collect();
    let mut lat: Vec<Vec<Latency>> = probes.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for (e, l) in engines.iter().zip(&mut lat) {
            l.push(timed(vectors.len(), |i| {
                let req = vector_request(&vectors[i]);
                assert!(!e.search_themes(&req).expect("search").themes.is_empty());
            }));
        }
    }
    let median = |mut x: Vec<f64>| {
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    probes
        .iter()
        .zip(lat)
        .map(|((name, p), l)| {
            let (mut lists, mut rows, mut found, mut total) = (0, 0, 0, 0);
            for (v, truth) in vectors.iter().zip(&truths) {
                let best = |c: u32| {
                    snap.community(agrag_engine::CommunityRow(c))
                        .report_rows()
                        .map(|r| dot(v, &matrix[r * dim..(r + 1) * dim]))
                        .fold(f32::NEG_INFINITY, f32::max)
                };
                let (hits, stats) = ivf.search_by(v, 15, *p, best);
                lists += stats.lists_probed;
                rows += stats.rows_scored;
                total += truth.len();
                found += truth
                    .iter()
                    .filter(|t| hits.iter().any(|h| h.0 == t.0))
                    .count();
            }
            let q = vectors.len() as f64;
            format!(
                "| {n} | {} | {name} | {:.1} | {:.0} | {:.4} | {:.3} | {:.3} | {:.3} | {:.3} |",
                ivf.rows(),
                lists as f64 / q,
                rows as f64 / q,
                found as f64 / total as f64,
                median(l.iter().map(|x| x.p50).collect()),
                median(l.iter().map(|x| x.p99).collect()),
                median(l.iter().map(|x| x.cpu_p50).collect()),
                median(l.iter().map(|x| x.cpu_p99).collect()),
            )
        })
        .collect()
}

fn concepts(root: &Path, num_docs: usize, queries: usize) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let vocab = agrag_pipeline::link::load_vocabulary(&repo.join("data/mesh")).expect("MeSH");
    let corpus = agrag_pipeline::ingest::read_jsonl(&repo.join("data/pubmedqa/documents.jsonl"))
        .expect("corpus");
    let mut by_term = std::collections::HashMap::new();
    for (i, c) in vocab.concepts.iter().enumerate() {
        by_term.insert(c.preferred_term.to_lowercase(), i);
    }
    let sets: Vec<Vec<usize>> = corpus
        .documents
        .iter()
        .map(|d| {
            d.headings
                .iter()
                .filter_map(|h| by_term.get(&h.to_lowercase()).copied())
                .collect()
        })
        .collect();
    let mut rng = XorShift::new(7);
    let embedder = HashEmbedder::new(8);
    let t = Instant::now();
    let mut data = RunData {
        concepts: vocab
            .concepts
            .iter()
            .map(|c| ConceptRecord {
                concept_id: c.id.clone(),
                preferred_term: c.preferred_term.clone(),
                synonyms: c.synonyms.clone(),
            })
            .collect(),
        concept_edges: vocab
            .broader
            .iter()
            .map(|&(c, p)| {
                (
                    vocab.concepts[c as usize].id.clone(),
                    vocab.concepts[p as usize].id.clone(),
                    "subclass_of".into(),
                )
            })
            .collect(),
        ..RunData::default()
    };
    let titles = [
        "statin therapy after infarction",
        "asthma in children",
        "sepsis mortality",
        "insulin resistance",
    ];
    for d in 0..num_docs {
        let key = format!("doc{d:08}");
        let mut set = sets[rng.below(sets.len() as u64) as usize].clone();
        for _ in 0..2 {
            if !set.is_empty() {
                let k = rng.below(set.len() as u64) as usize;
                set[k] = rng.below(vocab.concepts.len() as u64) as usize;
            }
        }
        for c in &set {
            data.document_concepts.push((
                "concept".into(),
                key.clone(),
                vocab.concepts[*c].id.clone(),
            ));
        }
        data.documents.push(DocumentRecord {
            key,
            title: titles[d % 4].into(),
            year: None,
            num_passages: 0,
            linked: !set.is_empty(),
        });
    }
    data.document_embeddings = vec![0.0; num_docs * 8];
    let build_s = t.elapsed().as_secs_f64();
    let dir = root.join("concepts");
    let write_s = publish(&dir, &data, &embedder);
    let rows = data.document_concepts.len();
    drop(data);
    let t = Instant::now();
    let engine = Engine::open(&dir, EngineConfig::default()).expect("open");
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let rss = rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64;
    // Query terms: the headings the real corpus uses (so they match), in a fixed order.
    let mut terms: Vec<String> = corpus
        .documents
        .iter()
        .flat_map(|d| d.headings.clone())
        .collect();
    terms.sort();
    terms.dedup();
    println!(
        "\n## find_by_meaning on MeSH 2024 (30,764 concepts) with {num_docs} documents ({rows} concept rows)\n"
    );
    println!(
        "(build {build_s:.1} s, write {write_s:.1} s, open {open_ms:.0} ms, RSS after open {rss:.0} MiB; {queries} queries per row)\n"
    );
    let mut tails = Vec::new();
    println!("| request | p50 ms | p99 ms | CPU p50 ms | CPU p99 ms | mean matches |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, query, direction) in [
        ("count + sample 10, no query", None, Direction::Forward),
        (
            "count + sample 10, BM25 query",
            Some("statin mortality"),
            Direction::Forward,
        ),
        // Not under a target: the same terms expanded downwards, to their narrower concepts
        // (a broad heading takes in thousands of descendants).
        (
            "count + sample 10, no query, downwards",
            None,
            Direction::Reverse,
        ),
    ] {
        let mut matches = 0u64;
        // (wall ms, index of the term, concepts in the expanded set, matches) of every call;
        // the term itself is looked up after the timing.
        let mut slow: Vec<(f64, usize, usize, u64)> = Vec::new();
        let lat = timed(queries, |i| {
            let mut r = ConceptRequest::new(ConceptSelector::Term(
                terms[(i * 7919) % terms.len()].clone(),
            ));
            r.query = query.map(str::to_owned);
            r.direction = direction;
            let t0 = Instant::now();
            let a = engine.find_by_meaning(&r).expect("query");
            slow.push((
                t0.elapsed().as_secs_f64() * 1e3,
                (i * 7919) % terms.len(),
                a.num_expanded,
                a.total,
            ));
            matches += a.total;
        });
        println!(
            "| {label} | {lat} | {:.0} |",
            matches as f64 / (queries + queries.min(20)) as f64
        );
        slow.sort_by(|a, b| b.0.total_cmp(&a.0));
        tails.push(format!(
            "- slowest of \"{label}\": {}",
            slow.iter()
                .take(3)
                .map(|&(ms, term, set, total)| format!(
                    "{:?} {ms:.3} ms ({set} concepts, {total} matches)",
                    terms[term]
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    println!();
    for t in tails {
        println!("{t}");
    }
}

/// Command line of `query-bench` (see the crate-level docs of this binary).
#[derive(Debug, clap::Parser)]
#[command(
    name = "query-bench",
    about = "Query latency of the engine (search_themes, find_by_meaning) on synthetic runs, as markdown tables"
)]
struct Cli {
    /// 1k/10k communities and 100k documents (instead of up to 100k communities and 1M
    /// documents).
    #[arg(long)]
    quick: bool,
    /// Only the `search_themes` tables.
    #[arg(long, conflicts_with = "concepts_only")]
    themes_only: bool,
    /// Only the `find_by_meaning` tables.
    #[arg(long)]
    concepts_only: bool,
    /// Independent random report embeddings (default: clustered by topic).
    #[arg(long)]
    uniform: bool,
    /// Report vectors per community [default: as many as the pipeline's shipped recipe makes,
    /// see `CommunityVectors::default`].
    #[arg(long)]
    vectors_per_community: Option<usize>,
    /// Numbers of communities of the `search_themes` runs [default: 1000,10000,100000; with
    /// `--quick` 1000,10000].
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Time several IVF probes against each other in N interleaved rounds (0: not).
    #[arg(long, default_value_t = 0, value_name = "N")]
    probe_sweep: usize,
    /// Write the runs under DIR and leave them there (to profile an open).
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Only the hot-swap table: two runs of N communities, 4 threads querying while the served
    /// run is swapped back and forth (see `hot_swap`).
    #[arg(long, value_name = "N", conflicts_with_all = ["themes_only", "concepts_only"])]
    hot_swap: Option<usize>,
    /// Swaps of the hot-swap table.
    #[arg(long, default_value_t = 20, value_name = "K")]
    swaps: usize,
    /// Percentages of passages hidden in the visibility store during the hot-swap table, one
    /// pass each, in ascending order (a service serves with some passages hidden: a swap then
    /// also resolves the flags against the incoming run).
    #[arg(long, value_delimiter = ',', default_value = "0,1", value_name = "PCT", value_parser = clap::value_parser!(u32).range(0..=100))]
    swap_hidden: Vec<u32>,
    /// Query threads of the hot-swap table (the target names 4).
    #[arg(long, default_value_t = 4, value_name = "T", value_parser = clap::value_parser!(u16).range(1..=256))]
    swap_threads: u16,
}

fn main() {
    let cli = <Cli as clap::Parser>::parse();
    let quick = cli.quick;
    let keep = cli.keep.clone();
    let dir = match &keep {
        Some(d) => {
            std::fs::create_dir_all(d).expect("--keep DIR");
            d.clone()
        }
        None => tempfile_dir(),
    };
    if let Some(n) = cli.hot_swap {
        let recipe = agrag_pipeline::report::CommunityVectors::default();
        let shipped = recipe.max_vectors() + if recipe.assigned { 5 } else { 0 };
        hot_swap(
            &dir,
            n,
            cli.vectors_per_community.unwrap_or(shipped),
            cli.swaps,
            usize::from(cli.swap_threads),
            &cli.swap_hidden,
        );
        if keep.is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return;
    }
    if !cli.concepts_only {
        let sizes: &[usize] = if !cli.sizes.is_empty() {
            &cli.sizes
        } else if quick {
            &[1_000, 10_000]
        } else {
            &[1_000, 10_000, 100_000]
        };
        let space = if cli.uniform {
            Space::Uniform
        } else {
            Space::Clustered
        };
        let recipe = agrag_pipeline::report::CommunityVectors::default();
        // Assigned passages: each of the synthetic run's 5 passages per community goes to
        // one community, so about 5 more vectors per community.
        let shipped = recipe.max_vectors() + if recipe.assigned { 5 } else { 0 };
        let per_community = cli.vectors_per_community.unwrap_or(shipped);
        themes(
            &dir,
            sizes,
            if quick { 200 } else { 1_000 },
            space,
            per_community,
            cli.probe_sweep,
        );
    }
    if !cli.themes_only {
        concepts(
            &dir,
            if quick { 100_000 } else { 1_000_000 },
            if quick { 200 } else { 2_000 },
        );
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("agrag-query-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Queries of the hot-swap table's first second (warm-up) are not counted, in microseconds.
const WARM_UP_US: u64 = 1_000_000;
/// Target: no query stalls longer than this while the served run is swapped (milliseconds).
const TARGET_SWAP_STALL_MS: f64 = 5.0;

/// Lines of `/proc/self/maps` naming a file under `dir`: the run's files this process still
/// has mapped (0 when the run's memory is released). `None` off Linux.
fn mapped_files_under(dir: &Path) -> Option<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let dir = dir.to_str()?;
    Some(maps.lines().filter(|l| l.contains(dir)).count())
}

/// One query of the hot-swap table: start (µs since the table's epoch), wall, thread CPU and
/// stall (wall less run-queue wait) in milliseconds, and the thread's counters over the query.
#[derive(Clone, Copy)]
struct SwapQuery {
    start_us: u64,
    wall_ms: f64,
    cpu_ms: f64,
    stall_ms: f64,
    counters: Option<ThreadCounters>,
    /// The CPU the query started on.
    first_cpu: Option<u32>,
}

impl SwapQuery {
    fn end_us(&self) -> u64 {
        self.start_us + (self.wall_ms * 1e3) as u64
    }

    /// Whether the query ran start to end on one CPU without giving up its core or being
    /// descheduled: then every stolen nanosecond of that CPU in its window was its own.
    fn ran_alone_on_one_cpu(&self) -> Option<u32> {
        let c = self.counters?;
        (c.voluntary_switches == 0
            && c.involuntary_switches == 0
            && c.major_faults == 0
            && self.first_cpu == Some(c.cpu))
        .then_some(c.cpu)
    }
}

/// Hides every passage whose row in the served run of `layout` is below `pct` modulo 100, in
/// the visibility store (the keys are the same in both runs of the hot-swap table).
fn hide_passages(layout: &Layout, pct: u32) {
    let engine = Engine::open(layout.root(), EngineConfig::default()).expect("open");
    let view = engine.view().expect("view");
    let snap = view.snapshot().expect("a run");
    let mut store = VisibilityStore::open(&layout.visibility_path()).expect("store");
    for p in 0..snap.num_passages() {
        if (p % 100) < pct as usize {
            let id = snap.passage(PassageRow(p as u32)).id();
            store
                .set(Target::Passage, &id, Visibility::Hidden, None)
                .expect("hide");
        }
    }
}

/// A query of the hot-swap table that stalled over the target, with what explains it.
struct StalledQuery {
    verify: &'static str,
    hidden_pct: u32,
    phase: &'static str,
    own_stall_ms: f64,
    /// Steal of its CPU during it, for a query that ran alone on one CPU.
    steal_ms: Option<f64>,
    query: SwapQuery,
}

/// The worst query near a swap, for one verification mode (milliseconds).
struct SwapVerdict {
    verify: &'static str,
    hidden_pct: u32,
    wall_max: f64,
    stall_max: f64,
    own_stall_max: f64,
    cpu_max: f64,
}

/// Samples of the machine's per-CPU steal time, (µs since the epoch, steal ns per CPU), taken
/// every millisecond by a thread of the hot-swap table.
struct StealSamples(Vec<(u64, Vec<u64>)>);

impl StealSamples {
    /// Steal of `cpu` between the last sample at or before `start_us` and the first at or
    /// after `end_us`, in milliseconds (`None` without samples around the window). The
    /// counter moves in 10 ms steps, so a window's figure is within one step of the truth.
    fn during(&self, cpu: u32, start_us: u64, end_us: u64) -> Option<f64> {
        let s = &self.0;
        let i = s.partition_point(|(t, _)| *t <= start_us).checked_sub(1)?;
        let j = s.partition_point(|(t, _)| *t < end_us);
        let (a, b) = (
            s.get(i)?.1.get(cpu as usize)?,
            s.get(j)?.1.get(cpu as usize)?,
        );
        Some(b.saturating_sub(*a) as f64 / 1e6)
    }
}

/// `reload()` under load: two runs of `n` communities (`per_community` vectors each) under one
/// root; `threads` threads run `search_themes` (vector given, IVF, limit 5) in a loop,
/// first for a warm-up second and a baseline period of 3 s without swaps, then while the main thread moves `LATEST` to the
/// other run and calls `reload()` `swaps` times (sizes verified, then checksums), 300 ms apart;
/// once per percentage of `hidden_pcts` of passages hidden in the visibility store.
/// A query's *stall* is its wall time less the time it waited for a core (run-queue wait, from
/// the kernel's scheduler statistics): with more query threads than cores, any query may wait
/// a scheduler slice whatever the engine does, while a query blocked by the engine (a lock,
/// a page fault on the old or new run, a free of the old run) sleeps or runs longer, which
/// the stall keeps.
/// Prints each query's wall latency, stall (and thread CPU time) for the baseline and for the queries
/// that overlap a reload or start within 100 ms after it (the first queries on the new run), the
/// reload's own duration, and whether the old run's files are unmapped once the last query
/// holding it ends.
fn hot_swap(
    root: &Path,
    n: usize,
    per_community: usize,
    swaps: usize,
    threads: usize,
    hidden_pcts: &[u32],
) {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    let embedder = HashEmbedder::default();
    let mut rng = XorShift::new(7 + n as u64);
    let space = Vectors::new(Space::Clustered, n, &mut rng);
    let dir = root.join(format!("swap-{n}"));
    let layout = Layout::new(&dir);
    let mut runs = Vec::new();
    for _ in 0..2 {
        let data = theme_run(n, &mut rng, &embedder, &space, per_community);
        publish(&dir, &data, &embedder);
        runs.push(layout.read_latest().expect("LATEST").expect("a run"));
    }
    let vectors: Vec<Vec<f32>> = (0..512).map(|_| space.draw(&mut rng)).collect();
    println!(
        "\n## Hot swap: reload() while {threads} threads query ({n} communities, {per_community} vectors each; search_themes, vector given, IVF, limit 5, support_limit 3)\n"
    );
    println!(
        "| verify | hidden | queries | phase | wall p50 ms | wall p99 ms | wall p99.9 ms | wall max ms | wall over {TARGET_SWAP_STALL_MS} ms | stall p99.9 ms | stall max ms | stall over {TARGET_SWAP_STALL_MS} ms | own stall max ms | own stall over {TARGET_SWAP_STALL_MS} ms | CPU max ms | reload ms (median / max) |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut verdicts: Vec<SwapVerdict> = Vec::new();
    let mut stalls: Vec<StalledQuery> = Vec::new();
    let mut steal_lines: Vec<String> = Vec::new();
    let mut hidden_pcts = hidden_pcts.to_vec();
    hidden_pcts.sort_unstable();
    hidden_pcts.dedup();
    let passes = hidden_pcts
        .iter()
        .flat_map(|&h| [(h, Verify::Sizes), (h, Verify::Checksums)]);
    let mut flagged = 0;
    for (hidden_pct, verify) in passes {
        if hidden_pct > flagged {
            hide_passages(&layout, hidden_pct);
            flagged = hidden_pct;
        }
        let engine = Engine::open(
            &dir,
            EngineConfig {
                verify,
                ..EngineConfig::default()
            },
        )
        .expect("open");
        let epoch = Instant::now();
        let stop = AtomicBool::new(false);
        let records: Mutex<Vec<SwapQuery>> = Mutex::new(Vec::new());
        let mut reloads: Vec<(u64, u64)> = Vec::new();
        let (baseline_end, steal) = std::thread::scope(|s| {
            // The machine's steal per CPU, every millisecond (a read of /proc/stat is tens of
            // microseconds of one core a millisecond).
            let sampler = s.spawn(|| {
                let mut samples = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let Some(steal) = steal_ns_per_cpu() else {
                        break;
                    };
                    samples.push((epoch.elapsed().as_micros() as u64, steal));
                    std::thread::sleep(Duration::from_millis(1));
                }
                StealSamples(samples)
            });
            for t in 0..threads {
                let (engine, stop, records, vectors) = (&engine, &stop, &records, &vectors);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    let mut i = t;
                    while !stop.load(Ordering::Relaxed) {
                        let req = vector_request(&vectors[i % vectors.len()]);
                        let c = cpu_time::ThreadTime::now();
                        let start = Instant::now();
                        // Read inside the timed window, so the wait never exceeds the wall.
                        let before = ThreadCounters::read();
                        let a = engine.search_themes(&req).expect("search");
                        let after = ThreadCounters::read();
                        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
                        assert!(!a.themes.is_empty());
                        let counters = before.zip(after).map(|(b, a)| a.since(&b));
                        let waited = counters.map_or(0.0, |c| c.run_queue_wait_ns as f64 / 1e6);
                        mine.push(SwapQuery {
                            start_us: start.duration_since(epoch).as_micros() as u64,
                            wall_ms,
                            cpu_ms: c.elapsed().as_secs_f64() * 1e3,
                            stall_ms: (wall_ms - waited).max(0.0),
                            counters,
                            first_cpu: before.map(|b| b.cpu),
                        });
                        i += threads;
                    }
                    records.lock().expect("records").extend(mine);
                });
            }
            // The first second warms up (the first queries on a freshly opened run fault its
            // mapped pages in); the baseline is the next 3 s.
            std::thread::sleep(Duration::from_secs(4));
            let baseline_end = epoch.elapsed().as_micros() as u64;
            for k in 0..swaps {
                layout.write_latest(&runs[k % 2]).expect("LATEST");
                let t0 = epoch.elapsed().as_micros() as u64;
                engine.reload().expect("reload");
                reloads.push((t0, epoch.elapsed().as_micros() as u64));
                std::thread::sleep(Duration::from_millis(300));
            }
            stop.store(true, Ordering::Relaxed);
            (baseline_end, sampler.join().expect("steal sampler"))
        });
        let records = records.into_inner().expect("records");
        let near_swap = |q: &SwapQuery| {
            reloads
                .iter()
                .any(|&(a, b)| q.start_us <= b + 100_000 && q.end_us() >= a)
        };
        let mut reload_ms: Vec<f64> = reloads.iter().map(|&(a, b)| (b - a) as f64 / 1e3).collect();
        reload_ms.sort_by(f64::total_cmp);
        let verify_name = match verify {
            Verify::Sizes => "sizes",
            _ => "checksums",
        };
        // The engine's own share of a query's time. A thread that never gave its core up (no
        // voluntary switch, no major fault) was, over its wall time, either running, which its
        // CPU time counts, or runnable without a core, or on a virtual CPU the hypervisor
        // did not run (steal, host interrupts): only its CPU time is the engine's. A thread
        // that slept (a lock, a futex, I/O) may have slept on the engine: all of its stall
        // (wall less run-queue wait) counts.
        let own_stall = |q: &SwapQuery| match q.counters {
            Some(c) if c.voluntary_switches == 0 && c.major_faults == 0 => q.cpu_ms.min(q.stall_ms),
            _ => q.stall_ms,
        };
        for (phase, during) in [("baseline, no swap", false), ("during a swap", true)] {
            let phase_records: Vec<&SwapQuery> = records
                .iter()
                .filter(|q| {
                    if during {
                        near_swap(q)
                    } else {
                        q.start_us >= WARM_UP_US && q.end_us() <= baseline_end
                    }
                })
                .collect();
            if phase_records.is_empty() {
                continue;
            }
            let sorted = |f: &dyn Fn(&SwapQuery) -> f64| {
                let mut v: Vec<f64> = phase_records.iter().map(|q| f(q)).collect();
                v.sort_by(f64::total_cmp);
                v
            };
            let (wall, cpu, stall, own) = (
                sorted(&|q| q.wall_ms),
                sorted(&|q| q.cpu_ms),
                sorted(&|q| q.stall_ms),
                sorted(&own_stall),
            );
            let over = |v: &[f64]| v.iter().filter(|&&w| w > TARGET_SWAP_STALL_MS).count();
            let reload_cell = if during {
                format!(
                    "{:.1} / {:.1}",
                    percentile(&reload_ms, 0.5),
                    reload_ms[reload_ms.len() - 1]
                )
            } else {
                "–".to_owned()
            };
            println!(
                "| {verify_name} | {hidden_pct} % | {} | {phase} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {:.3} | {} | {:.3} | {} | {:.3} | {reload_cell} |",
                wall.len(),
                percentile(&wall, 0.5),
                percentile(&wall, 0.99),
                percentile(&wall, 0.999),
                wall[wall.len() - 1],
                over(&wall),
                percentile(&stall, 0.999),
                stall[stall.len() - 1],
                over(&stall),
                own[own.len() - 1],
                over(&own),
                cpu[cpu.len() - 1],
            );
            stalls.extend(
                phase_records
                    .iter()
                    .filter(|q| q.stall_ms > TARGET_SWAP_STALL_MS)
                    .map(|q| StalledQuery {
                        verify: verify_name,
                        hidden_pct,
                        phase,
                        own_stall_ms: own_stall(q),
                        steal_ms: q
                            .ran_alone_on_one_cpu()
                            .and_then(|cpu| steal.during(cpu, q.start_us, q.end_us())),
                        query: **q,
                    }),
            );
            if during {
                verdicts.push(SwapVerdict {
                    verify: verify_name,
                    hidden_pct,
                    wall_max: wall[wall.len() - 1],
                    stall_max: stall[stall.len() - 1],
                    own_stall_max: own[own.len() - 1],
                    cpu_max: cpu[cpu.len() - 1],
                });
            }
        }
        let (first, last) = (steal.0.first(), steal.0.last());
        if let (Some((t0, s0)), Some((t1, s1))) = (first, last) {
            let per_cpu: Vec<String> = s0
                .iter()
                .zip(s1)
                .enumerate()
                .map(|(cpu, (a, b))| {
                    format!("cpu{cpu} {:.0} ms", b.saturating_sub(*a) as f64 / 1e6)
                })
                .collect();
            steal_lines.push(format!(
                "{verify_name} verified, {hidden_pct} % hidden: {} over {:.1} s",
                per_cpu.join(", "),
                (t1 - t0) as f64 / 1e6
            ));
        }
    }

    println!(
        "\nThe machine's steal time (the hypervisor ran something else on a virtual CPU that wanted to run), from /proc/stat:\n"
    );
    for line in &steal_lines {
        println!("- {line}");
    }
    println!(
        "\nEach query that stalled over {TARGET_SWAP_STALL_MS} ms (longest 40): the thread's counters over the query; *own stall* is the query's CPU time when it never gave its core up (no voluntary switch, no major fault), else the whole stall; the steal column is that of its CPU when it ran start to end on one:\n"
    );
    println!(
        "| verify | hidden | phase | wall ms | stall ms | own stall ms | thread CPU ms | run-queue wait ms | voluntary / involuntary switches | minor / major faults | CPU (first → last) | steal of that CPU during it ms |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---:|");
    stalls.sort_by(|a, b| b.query.stall_ms.total_cmp(&a.query.stall_ms));
    for row in stalls.iter().take(40) {
        let (q, c) = (&row.query, row.query.counters.unwrap_or_default());
        println!(
            "| {} | {} % | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} / {} | {} / {} | {} → {} | {} |",
            row.verify,
            row.hidden_pct,
            row.phase,
            q.wall_ms,
            q.stall_ms,
            row.own_stall_ms,
            q.cpu_ms,
            c.run_queue_wait_ns as f64 / 1e6,
            c.voluntary_switches,
            c.involuntary_switches,
            c.minor_faults,
            c.major_faults,
            q.first_cpu.map_or("?".to_owned(), |c| c.to_string()),
            c.cpu,
            row.steal_ms.map_or("–".to_owned(), |st| format!("{st:.0}")),
        );
    }

    // Memory: a query holding the old run keeps its files mapped; when it ends they go.
    let engine = Engine::open(&dir, EngineConfig::default()).expect("open");
    let served = engine.run_id().expect("a run");
    let other = runs
        .iter()
        .find(|r| **r != served)
        .expect("two runs")
        .clone();
    let in_flight = engine.view().expect("view");
    layout.write_latest(&other).expect("LATEST");
    engine.reload().expect("reload");
    let old_dir = layout.run_dir(&served);
    let held = mapped_files_under(&old_dir);
    drop(in_flight);
    // The engine releases a swapped-out run from a thread of its own once the last query
    // holding it ends: wait up to a second for it.
    let ended = Instant::now();
    let mut released = mapped_files_under(&old_dir);
    while released.is_some_and(|n| n > 0) && ended.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(1));
        released = mapped_files_under(&old_dir);
    }
    println!(
        "\nOld run's mappings in /proc/self/maps: {} while a query holds it, {} {:.1} ms after that query ends.",
        held.map_or("n/a".into(), |v| v.to_string()),
        released.map_or("n/a".into(), |v| v.to_string()),
        ended.elapsed().as_secs_f64() * 1e3
    );
    println!("\nTargets:\n");
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let measured_waits = ThreadCounters::read().is_some();
    for v in verdicts {
        let SwapVerdict {
            verify,
            hidden_pct,
            wall_max,
            stall_max,
            own_stall_max,
            cpu_max,
        } = v;
        if measured_waits {
            println!(
                "- no query stalls more than {TARGET_SWAP_STALL_MS} ms during a swap ({verify} verified, {hidden_pct} % hidden): own stall (a query's CPU time when it never slept, else its wall less run-queue wait) max {own_stall_max:.3} ms: {}; stall max {stall_max:.3} ms, wall max {wall_max:.3} ms, thread CPU max {cpu_max:.3} ms",
                verdict(own_stall_max <= TARGET_SWAP_STALL_MS)
            );
        } else {
            println!(
                "- no query stalls more than {TARGET_SWAP_STALL_MS} ms during a swap ({verify} verified, {hidden_pct} % hidden): wall max {wall_max:.3} ms (no scheduler statistics here to take out waiting for a core; thread CPU max {cpu_max:.3} ms): {}",
                verdict(wall_max <= TARGET_SWAP_STALL_MS)
            );
        }
    }
    println!(
        "- the old run's memory is released when its last query ends: {}",
        match (held, released) {
            (Some(h), Some(0)) if h > 0 => "met",
            (Some(_), Some(_)) => "NOT met",
            _ => "not measured (no /proc/self/maps)",
        }
    );
}
