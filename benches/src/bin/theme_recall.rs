//! `theme-recall`: how often theme search leads a question back to its own document, per
//! embedder, next to plain passage search by cosine. Prints a markdown table.
//!
//! ```text
//! bash scripts/fetch-model.sh
//! cargo run -p agrag-benches --release --bin theme-recall -- \
//!     [--embedders minilm,minilm-truncate,hash] [--threads 2] [--documents FILE.jsonl]
//!     [--vocabulary DIR]
//! ```
//!
//! Embedders: `minilm` (all-MiniLM-L6-v2, long texts as the mean of 254-word-piece windows,
//! the default), `minilm-truncate` (long texts truncated at 256 word pieces, as
//! sentence-transformers does) and `hash` (the built-in `agrag-hash-v2`).
//!
//! For each embedder: the pipeline runs on the shipped PubMedQA corpus (900 documents, MeSH)
//! into a temporary root; then, for each document, its `title` (a PubMedQA question) is asked
//! with `search_themes(question, limit = 5, support_limit = 10)`. A hit is a returned passage of
//! the question's own document: **recall@5 through themes** is hits / 900. The reference embeds
//! every passage with the same embedder and ranks them by cosine against the question: recall
//! at 5 passages, and at 50 (the most passages a theme answer can hold, 5 × 10).
//!
//! Also printed: report embedding throughput in the pipeline (reports/s), passage embedding
//! throughput (passages/s), and the latency of `search_themes` (p50/p99, embedding included).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agrag_benches::common::workspace;
use agrag_benches::retrieval::{
    Candidate, EMBEDDERS, candidates, embed_all, percentile, timed_ms, top_k,
};
use agrag_engine::query::theme::Status;
use agrag_engine::{Engine, EngineConfig, QueryInput, Scope, ThemeRequest};
use agrag_pipeline::ingest::read_jsonl;
use agrag_pipeline::leiden::LeidenConfig;
use agrag_pipeline::link::LinkConfig;
use agrag_pipeline::report::ExtractiveReportWriter;
use agrag_pipeline::run::{EMBED_CHUNK_TEXTS, RunConfig, run};
use clap::Parser;

/// Command line of `theme-recall` (see the crate-level docs of this binary).
#[derive(Debug, Parser)]
#[command(
    name = "theme-recall",
    about = "How often theme search leads a question back to its own document, per embedder, as a markdown table"
)]
struct Cli {
    /// Embedders to measure.
    #[arg(long, value_delimiter = ',', default_value = "minilm,minilm-truncate,hash", value_parser = clap::builder::PossibleValuesParser::new(EMBEDDERS))]
    embedders: Vec<String>,
    /// Threads of the pipeline and the queries (1..=1024).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Corpus (JSON lines) [default: the shipped PubMedQA documents].
    #[arg(long)]
    documents: Option<PathBuf>,
    /// MeSH vocabulary folder [default: the shipped data/mesh].
    #[arg(long)]
    vocabulary: Option<PathBuf>,
}

/// One embedder's figures.
struct Row {
    name: String,
    model: String,
    reports: usize,
    report_embed_s: f64,
    themes_hits: usize,
    themes_not_ok: usize,
    mean_passages_returned: f64,
    search_ms: Vec<f64>,
    passages: usize,
    passage_embed_s: f64,
    cosine_hits_5: usize,
    cosine_hits_50: usize,
    questions: usize,
}

fn main() {
    let cli = Cli::parse();
    let names: Vec<&str> = cli.embedders.iter().map(String::as_str).collect();
    let threads = usize::from(cli.threads);
    let documents = cli
        .documents
        .clone()
        .unwrap_or_else(|| workspace().join("data/pubmedqa/documents.jsonl"));
    let vocabulary = cli
        .vocabulary
        .clone()
        .unwrap_or_else(|| workspace().join("data/mesh"));

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let (cands, notices) = candidates(&names);
    for n in &notices {
        eprintln!("notice: {n}");
    }
    let corpus = read_jsonl(&documents).expect("documents");
    let mut rows = Vec::new();
    for c in &cands {
        eprintln!("{}: pipeline run ...", c.name);
        rows.push(pool.install(|| measure(c, &corpus, &documents, &vocabulary, threads)));
    }

    println!(
        "\nRecall of the source document, {} PubMedQA questions (document titles), {threads} threads\n",
        corpus.documents.len()
    );
    println!(
        "| embedder | themes: recall@5 (limit 5, support 10) | passages returned (mean) | passage cosine: recall@5 | passage cosine: recall@50 |"
    );
    println!("|---|---|---|---|---|");
    for r in &rows {
        let q = r.questions as f64;
        println!(
            "| {} ({}) | {:.3} ({} / {}{}) | {:.1} | {:.3} | {:.3} |",
            r.name,
            r.model,
            r.themes_hits as f64 / q,
            r.themes_hits,
            r.questions,
            if r.themes_not_ok > 0 {
                format!(", {} not ok", r.themes_not_ok)
            } else {
                String::new()
            },
            r.mean_passages_returned,
            r.cosine_hits_5 as f64 / q,
            r.cosine_hits_50 as f64 / q,
        );
    }
    println!(
        "\n| embedder | reports embedded in the pipeline | reports/s | passages/s | search_themes p50 ms | p99 ms |"
    );
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} in {:.2} s | {:.1} | {:.1} | {:.2} | {:.2} |",
            r.name,
            r.reports,
            r.report_embed_s,
            r.reports as f64 / r.report_embed_s.max(1e-9),
            r.passages as f64 / r.passage_embed_s.max(1e-9),
            percentile(&r.search_ms, 50.0),
            percentile(&r.search_ms, 99.0),
        );
    }
}

fn measure(
    c: &Candidate,
    corpus: &agrag_pipeline::ingest::Corpus,
    documents: &Path,
    vocabulary: &Path,
    threads: usize,
) -> Row {
    let root = tempfile::tempdir().expect("temp root");
    let cfg = RunConfig {
        root: root.path().to_owned(),
        documents: documents.to_owned(),
        vocabulary: vocabulary.to_owned(),
        threads: Some(threads),
        link: LinkConfig::default(),
        leiden: LeidenConfig::default(),
        embedder: c.embedder.clone(),
        report_writer: Arc::new(ExtractiveReportWriter),
        progress: false,
        allow_empty: false,
    };
    let summary = run(&cfg).expect("pipeline run");
    let reports: usize = summary.communities_per_level.iter().sum();
    let report_embed_s = summary.seconds.get("embed").copied().unwrap_or(0.0);
    eprintln!(
        "{}: {reports} reports embedded in {report_embed_s:.2} s; asking {} questions",
        c.name,
        corpus.documents.len()
    );

    let engine = Engine::open(
        root.path(),
        EngineConfig {
            embedder: Some(c.embedder.clone()),
            model_path: None,
            ..EngineConfig::default()
        },
    )
    .expect("engine");
    let mut themes_hits = 0;
    let mut themes_not_ok = 0;
    let mut returned = 0usize;
    let mut search_ms = Vec::with_capacity(corpus.documents.len());
    for d in &corpus.documents {
        let req = ThemeRequest {
            query: QueryInput::Text(d.title.clone()),
            scope: Scope::All,
            limit: 5,
            support_limit: 10,
        };
        let (answer, ms) = timed_ms(|| engine.search_themes(&req).expect("search"));
        search_ms.push(ms);
        if answer.status != Status::Ok {
            themes_not_ok += 1;
        }
        let ids: HashSet<&str> = answer
            .themes
            .iter()
            .flat_map(|t| t.passages.iter().map(|p| p.evidence_id.as_str()))
            .collect();
        returned += ids.len();
        if answer
            .themes
            .iter()
            .any(|t| t.passages.iter().any(|p| p.document_key == d.key))
        {
            themes_hits += 1;
        }
    }

    eprintln!("{}: embedding every passage for the reference", c.name);
    let mut owner = Vec::new();
    let mut texts = Vec::new();
    for (i, d) in corpus.documents.iter().enumerate() {
        for p in &d.passages {
            owner.push(i);
            texts.push(p.as_str());
        }
    }
    let (matrix, passage_ms) =
        timed_ms(|| embed_all(c.embedder.as_ref(), &texts, EMBED_CHUNK_TEXTS));
    let titles: Vec<&str> = corpus.documents.iter().map(|d| d.title.as_str()).collect();
    let queries = embed_all(c.embedder.as_ref(), &titles, EMBED_CHUNK_TEXTS);
    let (mut hits_5, mut hits_50) = (0, 0);
    for (i, q) in queries.iter().enumerate() {
        let top = top_k(&matrix, q, 50);
        if top.iter().take(5).any(|&p| owner[p] == i) {
            hits_5 += 1;
        }
        if top.iter().any(|&p| owner[p] == i) {
            hits_50 += 1;
        }
    }
    Row {
        name: c.name.clone(),
        model: c.embedder.identity().model.clone(),
        reports,
        report_embed_s,
        themes_hits,
        themes_not_ok,
        mean_passages_returned: returned as f64 / corpus.documents.len().max(1) as f64,
        search_ms,
        passages: texts.len(),
        passage_embed_s: passage_ms / 1e3,
        cosine_hits_5: hits_5,
        cosine_hits_50: hits_50,
        questions: corpus.documents.len(),
    }
}
