//! `theme-recall`: how often theme search leads a question back to its own document, per
//! embedder, per query set and per recipe of community vectors, next to plain passage search
//! by cosine over the same passages. Prints markdown tables and the targets met or not.
//!
//! ```text
//! bash scripts/fetch-model.sh
//! cargo run -p agrag-benches --release --bin theme-recall -- \
//!     [--embedders minilm,hash] [--vectors nosources+p3,full] [--threads 2]
//!     [--documents FILE.jsonl] [--conclusions FILE.jsonl] [--vocabulary DIR]
//! ```
//!
//! Query sets, each question paired with the document it came from:
//! - **titles**: each document's `title` (a PubMedQA question). It shares most of its words
//!   with its abstract, so it rewards word overlap.
//! - **conclusions**: each abstract's own conclusion (PubMedQA `LONG_ANSWER`,
//!   `../shared/data/pubmedqa/conclusions.jsonl` by default), which is not among the passages:
//!   it restates what the abstract found in other words, so it rewards matching by meaning.
//!
//! For each embedder the question vectors, the passage vectors and every text a recipe
//! embeds are computed once ([`CachingEmbedder`]) and shared by all recipes. Then:
//! - **passages (cosine)**, the reference: every passage of the corpus ranked by cosine with
//!   the question; the rank of the question's document is that of its best passage.
//! - **themes, per recipe** (`--vectors`, see [`CommunityVectors`]): the pipeline runs on the
//!   corpus into a temporary root with that recipe, and each question's vector is asked with
//!   `search_themes(limit = 10, support_limit = 10)`; the rank of the question's document is
//!   that of the first theme that returns one of its passages. Recall@5 is therefore that of
//!   `search_themes(limit = 5, support_limit = 10)`: with nothing hidden the first five themes
//!   of the longer answer are the shorter answer.
//!
//! Recall@k is the share of questions whose document ranks at most k; MRR is the mean of
//! 1 / rank (0 past rank 10 for themes, past rank 100 for passages). The targets are checked on
//! the first recipe listed (the shipped [`CommunityVectors::default`] unless told otherwise);
//! the latency target of `search_themes` at 10⁵ communities is `query-bench`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agrag_benches::common::workspace;
use agrag_benches::measure::load_average;
use agrag_benches::retrieval::{
    CachingEmbedder, Candidate, EMBEDDERS, Ranks, candidates, default_conclusions, embed_all,
    percentile, read_conclusions, timed_ms,
};
use agrag_engine::embed::dot;
use agrag_engine::query::theme::Status;
use agrag_engine::{Engine, EngineConfig, QueryInput, Scope, ThemeRequest};
use agrag_pipeline::ingest::{Corpus, read_jsonl};
use agrag_pipeline::leiden::LeidenConfig;
use agrag_pipeline::link::LinkConfig;
use agrag_pipeline::report::{CommunityVectors, ExtractiveReportWriter};
use agrag_pipeline::run::{EMBED_CHUNK_TEXTS, RunConfig, run};
use clap::Parser;

/// Command line of `theme-recall` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "theme-recall",
    about = "How often theme search leads a question (title or conclusion) back to its own document, per embedder and recipe of community vectors, as markdown tables"
)]
struct Cli {
    /// Embedders to measure.
    #[arg(long, value_delimiter = ',', default_value = "minilm,hash", value_parser = clap::builder::PossibleValuesParser::new(EMBEDDERS))]
    embedders: Vec<String>,
    /// Recipes of community vectors to measure, `REPORT[+pN][+cN]` (REPORT: none, full,
    /// nosources, title-summary, findings) [default: the shipped recipe]. The first one is
    /// checked against the targets.
    #[arg(long, value_delimiter = ',')]
    vectors: Vec<CommunityVectors>,
    /// Threads of the pipeline and the queries (1..=1024).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Corpus (JSON lines) [default: the shipped PubMedQA documents].
    #[arg(long)]
    documents: Option<PathBuf>,
    /// Conclusions, JSON lines of `{"document_key", "query"}` [default:
    /// ../shared/data/pubmedqa/conclusions.jsonl next to the workspace].
    #[arg(long)]
    conclusions: Option<PathBuf>,
    /// MeSH vocabulary folder [default: the shipped data/mesh].
    #[arg(long)]
    vocabulary: Option<PathBuf>,
}

/// One question set: `(question, document index)`.
struct QuerySet {
    name: &'static str,
    questions: Vec<(String, usize)>,
}

/// One recipe's run.
struct RecipeRow {
    recipe: CommunityVectors,
    communities: usize,
    vectors: usize,
    embed_s: f64,
    texts_embedded: usize,
    ranks: Vec<Ranks>,
    not_ok: usize,
    search_ms: Vec<f64>,
}

/// One embedder's figures.
struct EmbedderRow {
    name: String,
    model: String,
    passages: Vec<Ranks>,
    recipes: Vec<RecipeRow>,
}

#[allow(clippy::too_many_lines)]
fn main() {
    let cli = Cli::parse();
    let names: Vec<&str> = cli.embedders.iter().map(String::as_str).collect();
    let threads = usize::from(cli.threads);
    let documents = cli
        .documents
        .clone()
        .unwrap_or_else(|| workspace().join("data/pubmedqa/documents.jsonl"));
    let conclusions = cli.conclusions.clone().unwrap_or_else(default_conclusions);
    let vocabulary = cli
        .vocabulary
        .clone()
        .unwrap_or_else(|| workspace().join("data/mesh"));
    let recipes = if cli.vectors.is_empty() {
        vec![CommunityVectors::default()]
    } else {
        cli.vectors.clone()
    };

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let (cands, notices) = candidates(&names);
    for n in &notices {
        eprintln!("notice: {n}");
    }
    let corpus = read_jsonl(&documents).expect("documents");
    let sets = vec![
        QuerySet {
            name: "titles",
            questions: corpus
                .documents
                .iter()
                .enumerate()
                .map(|(i, d)| (d.title.clone(), i))
                .collect(),
        },
        QuerySet {
            name: "conclusions",
            questions: read_conclusions(&conclusions, &corpus),
        },
    ];
    let load_before = load_average();
    let started = std::time::Instant::now();
    let mut rows = Vec::new();
    for c in &cands {
        rows.push(pool.install(|| {
            measure(
                c,
                &corpus,
                &sets,
                &recipes,
                &documents,
                &vocabulary,
                threads,
            )
        }));
    }
    let load_after = load_average();

    println!(
        "\nRecall of the source document: {} documents, {} passages; {threads} threads; load average before {load_before}, after {load_after}; {:.0} s in all\n",
        corpus.documents.len(),
        corpus.num_passages(),
        started.elapsed().as_secs_f64()
    );
    for set in &sets {
        println!("### {} ({} questions)\n", set.name, set.questions.len());
        println!(
            "| embedder | search | recall@1 | recall@5 | recall@10 | MRR |\n|---|---|---:|---:|---:|---:|"
        );
        let s = sets.iter().position(|x| x.name == set.name).unwrap_or(0);
        for r in &rows {
            let p = &r.passages[s];
            println!(
                "| {} | passages (cosine) | {:.3} | {:.3} | {:.3} | {:.3} |",
                r.name,
                p.recall(1),
                p.recall(5),
                p.recall(10),
                p.mrr()
            );
            for rr in &r.recipes {
                let t = &rr.ranks[s];
                println!(
                    "| {} | themes `{}` | {:.3} | {:.3} | {:.3} | {:.3} |",
                    r.name,
                    rr.recipe,
                    t.recall(1),
                    t.recall(5),
                    t.recall(10),
                    t.mrr()
                );
            }
        }
        println!();
    }
    println!(
        "| embedder | recipe | communities | vectors | texts embedded (new) | embed s | search_themes p50 ms | p99 ms (vector given) | not ok |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in &rows {
        for rr in &r.recipes {
            println!(
                "| {} ({}) | `{}` | {} | {} | {} | {:.1} | {:.3} | {:.3} | {} |",
                r.name,
                r.model,
                rr.recipe,
                rr.communities,
                rr.vectors,
                rr.texts_embedded,
                rr.embed_s,
                percentile(&rr.search_ms, 50.0),
                percentile(&rr.search_ms, 99.0),
                rr.not_ok
            );
        }
    }

    // Targets, on the first recipe.
    let find = |name: &str| rows.iter().find(|r| r.name == name);
    let recall5 = |r: &EmbedderRow, set: usize| r.recipes.first().map(|x| x.ranks[set].recall(5));
    println!("\nTargets (first recipe, `{}`):\n", recipes[0]);
    let mark = |ok: bool| if ok { "✓ met" } else { "✗ not met" };
    if let Some(m) = find("minilm") {
        let (t, c) = (recall5(m, 0).unwrap_or(0.0), recall5(m, 1).unwrap_or(0.0));
        let pc = m.passages[1].recall(5);
        println!(
            "- MiniLM conclusions recall@5 ≥ 0.92: {c:.3} {}",
            mark(c >= 0.92)
        );
        println!(
            "- MiniLM titles recall@5 ≥ 0.97: {t:.3} {}",
            mark(t >= 0.97)
        );
        println!(
            "- MiniLM themes at most 3 points below MiniLM passage search on conclusions (recall@5): {c:.3} vs {pc:.3} ({:+.1} points) {}",
            100.0 * (c - pc),
            mark(c >= pc - 0.03 - 1e-9)
        );
        if let Some(h) = find("hash") {
            let hc = recall5(h, 1).unwrap_or(0.0);
            println!(
                "- MiniLM ahead of the hashing embedder on conclusions by ≥ 10 points (recall@5): {c:.3} vs {hc:.3} ({:+.1} points) {}",
                100.0 * (c - hc),
                mark(c - hc >= 0.10 - 1e-9)
            );
        } else {
            println!(
                "- MiniLM ahead of the hashing embedder on conclusions: not measured (no hash run)"
            );
        }
    } else {
        println!("- MiniLM targets: not measured (no minilm run)");
    }
    println!(
        "- search_themes p99 ≤ 1 ms at 10⁵ communities: measured by `query-bench --themes-only`"
    );
}

/// Rank (1-based) of document `d` among passages ranked by cosine with `q`: one more than the
/// number of passages scoring above its best passage (`None` past 100).
fn passage_rank(matrix: &[Vec<f32>], owner: &[usize], q: &[f32], d: usize) -> Option<usize> {
    let scores: Vec<f32> = matrix.iter().map(|p| dot(p, q)).collect();
    let best = scores
        .iter()
        .zip(owner)
        .filter(|(_, o)| **o == d)
        .map(|(s, _)| *s)
        .fold(f32::NEG_INFINITY, f32::max);
    if best == f32::NEG_INFINITY {
        return None;
    }
    // Ties count against the document (the bench's passage order is arbitrary).
    let above = scores
        .iter()
        .zip(owner)
        .filter(|(s, o)| **o != d && **s >= best)
        .count();
    (above < 100).then_some(above + 1)
}

fn measure(
    c: &Candidate,
    corpus: &Corpus,
    sets: &[QuerySet],
    recipes: &[CommunityVectors],
    documents: &Path,
    vocabulary: &Path,
    threads: usize,
) -> EmbedderRow {
    let cached = Arc::new(CachingEmbedder::new(c.embedder.clone()));
    let model = c.embedder.identity().model.clone();

    eprintln!(
        "{}: embedding every passage (the reference) [load {}]",
        c.name,
        load_average()
    );
    let mut owner = Vec::new();
    let mut texts = Vec::new();
    for (i, d) in corpus.documents.iter().enumerate() {
        for p in &d.passages {
            owner.push(i);
            texts.push(p.as_str());
        }
    }
    let (matrix, ms) = timed_ms(|| embed_all(cached.as_ref(), &texts, EMBED_CHUNK_TEXTS));
    eprintln!("{}: {} passages in {:.1} s", c.name, texts.len(), ms / 1e3);
    let mut query_vectors = Vec::new();
    let mut passages = Vec::new();
    for set in sets {
        let qs: Vec<&str> = set.questions.iter().map(|q| q.0.as_str()).collect();
        let (v, ms) = timed_ms(|| embed_all(cached.as_ref(), &qs, EMBED_CHUNK_TEXTS));
        eprintln!(
            "{}: {} {} embedded in {:.1} s",
            c.name,
            qs.len(),
            set.name,
            ms / 1e3
        );
        passages.push(Ranks(
            set.questions
                .iter()
                .zip(&v)
                .map(|((_, d), q)| passage_rank(&matrix, &owner, q, *d))
                .collect(),
        ));
        query_vectors.push(v);
    }

    let mut out = Vec::new();
    for &recipe in recipes {
        let before = cached.misses();
        eprintln!(
            "{}: pipeline run with `{recipe}` [load {}]",
            c.name,
            load_average()
        );
        let root = tempfile::tempdir().expect("temp root");
        let cfg = RunConfig {
            root: root.path().to_owned(),
            documents: documents.to_owned(),
            vocabulary: vocabulary.to_owned(),
            threads: Some(threads),
            link: LinkConfig::default(),
            leiden: LeidenConfig::default(),
            embedder: cached.clone(),
            report_writer: Arc::new(ExtractiveReportWriter),
            community_vectors: recipe,
            progress: false,
            allow_empty: false,
            full: false,
        };
        let summary = run(&cfg).expect("pipeline run");
        let communities: usize = summary.communities_per_level.iter().sum();
        let embed_s = ["embed", "embed_passages", "embed_documents"]
            .iter()
            .filter_map(|k| summary.seconds.get(*k))
            .sum();
        let engine = Engine::open(
            root.path(),
            EngineConfig {
                embedder: Some(cached.clone()),
                model_path: None,
                ..EngineConfig::default()
            },
        )
        .expect("engine");
        let vectors = {
            let view = engine.view().expect("view");
            view.snapshot().expect("snapshot").num_report_vectors()
        };
        let mut ranks = Vec::new();
        let mut not_ok = 0;
        let mut search_ms = Vec::new();
        for (set, qv) in sets.iter().zip(&query_vectors) {
            let mut r = Vec::with_capacity(set.questions.len());
            for ((_, d), v) in set.questions.iter().zip(qv) {
                let req = ThemeRequest {
                    query: QueryInput::Vector {
                        model: model.clone(),
                        vector: v.clone(),
                    },
                    scope: Scope::All,
                    limit: 10,
                    support_limit: 10,
                    timeout: None,
                };
                let (answer, ms) = timed_ms(|| engine.search_themes(&req).expect("search"));
                search_ms.push(ms);
                if answer.status != Status::Ok {
                    not_ok += 1;
                }
                let key = &corpus.documents[*d].key;
                r.push(
                    answer
                        .themes
                        .iter()
                        .position(|t| t.passages.iter().any(|p| &p.document_key == key))
                        .map(|i| i + 1),
                );
            }
            ranks.push(Ranks(r));
        }
        let row = RecipeRow {
            recipe,
            communities,
            vectors,
            embed_s,
            texts_embedded: cached.misses() - before,
            ranks,
            not_ok,
            search_ms,
        };
        eprintln!(
            "{}: `{recipe}`: {communities} communities, {vectors} vectors; recall@5 titles {:.3}, conclusions {:.3} [load {}]",
            c.name,
            row.ranks[0].recall(5),
            row.ranks.get(1).map_or(0.0, |x| x.recall(5)),
            load_average()
        );
        out.push(row);
    }
    EmbedderRow {
        name: c.name.clone(),
        model,
        passages,
        recipes: out,
    }
}
