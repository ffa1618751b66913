//! `agrag-pipeline`: the nightly batch job (`run`) and detection on a graph you bring
//! (`detect-graph`). Exit codes: 0 success, 1 failure of the work, 2 bad usage or bad input.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agrag_engine::embed::{EmbedderSettings, Provider};
use agrag_engine::stdout_line as println;
use agrag_pipeline::PipelineError;
use agrag_pipeline::detect::{DetectGraphConfig, detect_graph, oversized_line};
use agrag_pipeline::ingest::{ColumnNames, DocumentsFormat};
use agrag_pipeline::leiden::{Algorithm, LeidenConfig, Objective};
use agrag_pipeline::link::LinkConfig;
use agrag_pipeline::report::ExtractiveReportWriter;
use agrag_pipeline::run::{RunConfig, RunSummary, Sources, run_with};
use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "agrag-pipeline",
    version,
    about = "Documents + vocabulary → themes, published as a Parquet snapshot"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ingest, link, build the entity graph, detect communities, write reports and embeddings,
    /// publish runs/<run_id>/ and move LATEST.
    Run(RunArgs),
    /// Community detection on a graph you bring: a `u<TAB>v[<TAB>w]` edge list (optionally
    /// gzipped, `#` comments). Prints statistics per level; writes membership Parquet on request.
    DetectGraph(DetectArgs),
    /// Remove old runs: keep the newest N and always the run LATEST names.
    Gc {
        /// Snapshot root [default: $AGRAG_ROOT, else ./.agrag]
        #[arg(long, env = "AGRAG_ROOT")]
        root: Option<PathBuf>,
        /// How many of the newest runs to keep (≥ 1)
        #[arg(long)]
        keep: usize,
    },
}

#[derive(Args)]
struct DetectArgs {
    /// Edge list file (.tsv or .tsv.gz)
    #[arg(long)]
    edges: PathBuf,
    #[command(flatten)]
    detection: DetectionArgs,
    /// Write the membership table to this Parquet file
    #[arg(long)]
    membership_out: Option<PathBuf>,
    /// Print the statistics as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Jsonl,
    Parquet,
    Csv,
}

#[derive(Clone, Copy, ValueEnum)]
enum ObjectiveArg {
    Modularity,
    Cpm,
}

#[derive(Clone, Copy, ValueEnum)]
enum AlgorithmArg {
    Leiden,
    Louvain,
}

/// Detection parameters shared by `run` and `detect-graph`.
#[derive(Args)]
struct DetectionArgs {
    /// Random seed of detection
    #[arg(long, default_value_t = LeidenConfig::default().seed)]
    seed: u64,
    /// Worker threads (results do not depend on it) [default: one per core]
    #[arg(long)]
    threads: Option<usize>,
    /// Quality function
    #[arg(long, value_enum, default_value = "modularity")]
    objective: ObjectiveArg,
    /// Detection algorithm
    #[arg(long, value_enum, default_value = "leiden")]
    algorithm: AlgorithmArg,
    /// Resolution γ (> 0)
    #[arg(long, allow_negative_numbers = true, default_value_t = LeidenConfig::default().resolution)]
    resolution: f64,
    /// Randomness θ of Leiden's refinement (> 0)
    #[arg(long, allow_negative_numbers = true, default_value_t = LeidenConfig::default().randomness)]
    randomness: f64,
    /// Convergence threshold in quality units (≥ 0): an iteration after the first ends after
    /// its first local moving when that gained no more than this; 0 runs every iteration in
    /// full (igraph's way: slower, a little higher NMI on graphs with weak communities)
    #[arg(long, allow_negative_numbers = true, default_value_t = LeidenConfig::default().tolerance)]
    tolerance: f64,
    /// Communities larger than this are split into a deeper level
    #[arg(long, default_value_t = LeidenConfig::default().max_cluster_size)]
    max_cluster_size: usize,
    /// Most levels of the hierarchy
    #[arg(long, default_value_t = LeidenConfig::default().max_levels)]
    max_levels: usize,
    /// Skip the final local moving of single nodes (faster; a later run warm-started from
    /// this one reshuffles more communities)
    #[arg(long)]
    no_polish: bool,
}

impl DetectionArgs {
    /// The defaults of [`LeidenConfig`] with what the user set.
    fn leiden(&self) -> LeidenConfig {
        let d = LeidenConfig::default();
        LeidenConfig {
            objective: match self.objective {
                ObjectiveArg::Modularity => Objective::Modularity,
                ObjectiveArg::Cpm => Objective::Cpm,
            },
            algorithm: match self.algorithm {
                AlgorithmArg::Leiden => Algorithm::Leiden,
                AlgorithmArg::Louvain => Algorithm::Louvain,
            },
            seed: self.seed,
            resolution: self.resolution,
            randomness: self.randomness,
            tolerance: self.tolerance,
            max_cluster_size: self.max_cluster_size,
            max_levels: self.max_levels,
            polish: !self.no_polish,
            ..d
        }
    }
}

#[derive(Args)]
struct RunArgs {
    /// Snapshot root [default: $AGRAG_ROOT, else ./.agrag]
    #[arg(long, env = "AGRAG_ROOT")]
    root: Option<PathBuf>,
    /// Documents: JSON Lines, Parquet or CSV (by extension, or --documents-format) [default:
    /// the shipped PubMedQA corpus]
    #[arg(long)]
    documents: Option<PathBuf>,
    /// Format of --documents [default: by extension: .parquet, .csv, else JSON Lines]
    #[arg(long, value_enum)]
    documents_format: Option<FormatArg>,
    /// Column of a documents table holding the document key
    #[arg(long, default_value = "document_key")]
    key_column: String,
    /// Column of a documents table holding running text, split into passages
    #[arg(long, default_value = "text")]
    text_column: String,
    /// Column of a documents table holding the title
    #[arg(long, default_value = "title")]
    title_column: String,
    /// Membership table computed elsewhere (Parquet: level, entity_id or entity,
    /// community_id, parent_community_id); replaces detection
    #[arg(long)]
    membership: Option<PathBuf>,
    /// GraphRAG index folder (entities, relationships, text_units and documents .parquet);
    /// replaces --documents, --vocabulary, linking and the co-occurrence graph
    #[arg(long, conflicts_with_all = ["documents", "vocabulary"])]
    graphrag: Option<PathBuf>,
    /// Vocabulary folder with concepts.tsv and broader.tsv [default: the shipped MeSH]
    #[arg(long)]
    vocabulary: Option<PathBuf>,
    #[command(flatten)]
    detection: DetectionArgs,
    /// A run that continues a published run: the margin, per unit of weighted degree, by which
    /// a move must beat staying before an entity leaves its previous community (>= 0; 0 is
    /// plain DF Leiden; higher keeps more community ids at a small cost in modularity)
    #[arg(long, allow_negative_numbers = true, default_value_t = LeidenConfig::default().stickiness)]
    stickiness: f64,
    /// Publish the run even if it has no entity, no community or no document linked to a
    /// concept (refused by default: it would replace a good run with one that answers nothing)
    #[arg(long)]
    allow_empty: bool,
    /// Recompute everything: link every document, start detection from nothing instead of
    /// from the published run's communities, and embed every text again (community ids are
    /// still carried over where a community continues one)
    #[arg(long)]
    full: bool,
    /// Print the summary as JSON
    #[arg(long)]
    json: bool,
}

/// The folder of the shipped data: `./data` when it holds the corpus, else the repository's.
fn shipped(rel: &str) -> PathBuf {
    let local = PathBuf::from("data").join(rel);
    if local.exists() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("data")
        .join(rel)
}

fn default_root() -> PathBuf {
    PathBuf::from(".agrag")
}

fn is_bad_input(e: &PipelineError) -> bool {
    matches!(
        e,
        PipelineError::Io { .. }
            | PipelineError::Write { .. }
            | PipelineError::Parse { .. }
            | PipelineError::Row { .. }
            | PipelineError::Unreadable { .. }
            | PipelineError::Column { .. }
            | PipelineError::Membership { .. }
            | PipelineError::EmptyInput { .. }
            | PipelineError::UnsupportedEncoding { .. }
            | PipelineError::NothingToPublish { .. }
            | PipelineError::DuplicateKey { .. }
            | PipelineError::InvalidWeight { .. }
            | PipelineError::NodeOutOfRange { .. }
            | PipelineError::InvalidConfig { .. }
            | PipelineError::RunInProgress { .. }
    )
}

fn print_summary(s: &RunSummary) {
    println!("published run {} at {}", s.run_id, s.run_dir.display());
    println!(
        "  documents            {:>8}  ({} linked to a concept)",
        s.documents, s.linked_documents
    );
    println!(
        "  passages             {:>8}  ({} left out: deleted or superseded; {} empty dropped)",
        s.passages, s.excluded_passages, s.empty_passages_dropped
    );
    println!(
        "  mentions             {:>8}  ({:.2} distinct concepts per passage)",
        s.mentions, s.mean_mentions_per_passage
    );
    println!(
        "  entities             {:>8}  ({} isolated)",
        s.entities, s.isolates
    );
    println!("  edges                {:>8}", s.edges);
    println!("  communities/level    {:?}", s.communities_per_level);
    println!(
        "  {}",
        oversized_line(
            s.oversized_leaves,
            s.detection.oversized_leaves_at_max_levels,
            s.largest_leaf,
            s.max_cluster_size
        )
    );
    println!("  modularity (level 0) {:>8.4}", s.modularity);
    println!("  embedder             {}", s.embedder);
    let secs: Vec<String> = s
        .seconds
        .iter()
        .map(|(k, v)| format!("{k} {v:.2}"))
        .collect();
    println!("  seconds              {}", secs.join(", "));
}

fn run_cmd(a: RunArgs) -> Result<(), (u8, anyhow::Error)> {
    let leiden = LeidenConfig {
        stickiness: a.stickiness,
        ..a.detection.leiden()
    };
    // EMBEDDING_*: MiniLM when its folder is there (or as told), else the built-in embedder
    // with a one-line notice.
    let settings = EmbedderSettings::from_env()
        .context("reading EMBEDDING_*")
        .map_err(|e| (2, e))?;
    if settings.resolved_provider() == Provider::Precomputed {
        return Err((
            2,
            anyhow::anyhow!(
                "EMBEDDING_PROVIDER=precomputed (or an EMBEDDING_MODEL agrag cannot run) tells the engine that queries come as vectors; the pipeline must embed reports itself: use minilm or hash"
            ),
        ));
    }
    let choice = settings
        .build()
        .context("choosing the report embedder (EMBEDDING_*)")
        .map_err(|e| (2, e))?;
    if let Some(notice) = &choice.notice {
        eprintln!("{notice}");
    }
    let cfg = RunConfig {
        root: a.root.unwrap_or_else(default_root),
        documents: a
            .documents
            .unwrap_or_else(|| shipped("pubmedqa/documents.jsonl")),
        vocabulary: a.vocabulary.unwrap_or_else(|| shipped("mesh")),
        threads: a.detection.threads,
        link: LinkConfig::default(),
        leiden,
        embedder: choice.embedder,
        report_writer: Arc::new(ExtractiveReportWriter),
        community_vectors: agrag_pipeline::report::CommunityVectors::default(),
        progress: !a.json && std::io::stderr().is_terminal(),
        allow_empty: a.allow_empty,
        full: a.full,
    };
    let sources = Sources {
        documents_format: a.documents_format.map(|f| match f {
            FormatArg::Jsonl => DocumentsFormat::Jsonl,
            FormatArg::Parquet => DocumentsFormat::Parquet,
            FormatArg::Csv => DocumentsFormat::Csv,
        }),
        columns: ColumnNames {
            key: a.key_column,
            text: a.text_column,
            title: a.title_column,
        },
        membership: a.membership,
        graphrag: a.graphrag,
    };
    let summary = run_with(&cfg, &sources).map_err(|e| {
        let code = if is_bad_input(&e) { 2 } else { 1 };
        (
            code,
            anyhow::Error::new(e).context("the run failed; nothing was published"),
        )
    })?;
    if a.json {
        let json = serde_json::to_string_pretty(&summary)
            .context("summary to JSON")
            .map_err(|e| (1, e))?;
        println!("{json}");
    } else {
        print_summary(&summary);
    }
    Ok(())
}

fn detect_cmd(a: DetectArgs) -> Result<(), (u8, anyhow::Error)> {
    let leiden = a.detection.leiden();
    let cfg = DetectGraphConfig {
        edges: a.edges,
        leiden,
        threads: a.detection.threads,
        membership_out: a.membership_out,
    };
    let report = detect_graph(&cfg).map_err(|e| {
        let code = if is_bad_input(&e) { 2 } else { 1 };
        (code, anyhow::Error::new(e).context("detection failed"))
    })?;
    if a.json {
        let json = serde_json::to_string_pretty(&report)
            .context("report to JSON")
            .map_err(|e| (1, e))?;
        println!("{json}");
    } else {
        println!("{report}");
    }
    Ok(())
}

fn main() -> ExitCode {
    // On a terminal the progress bars show each phase; elsewhere (a scheduler's log, a pipe)
    // the phases' start and end are logged instead, so a long run is never silent.
    let terminal = std::io::stderr().is_terminal();
    let default_filter = if terminal {
        "warn"
    } else {
        "warn,agrag_pipeline=info"
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_ansi(terminal)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run_cmd(a),
        Command::DetectGraph(a) => detect_cmd(a),
        Command::Gc { root, keep } => {
            let root = root.unwrap_or_else(default_root);
            let layout = agrag_engine::format::Layout::new(&root);
            if !root.join("runs").is_dir() {
                // A mistyped --root would otherwise report "0 runs removed" and look like success.
                Err((
                    2,
                    anyhow::anyhow!(
                        "gc failed: {} is not a snapshot root (it has no runs/ folder)",
                        root.display()
                    ),
                ))
            } else {
                match layout.gc(keep) {
                    Ok(removed) => {
                        for id in &removed {
                            println!("removed run {id}");
                        }
                        println!(
                            "{} runs removed, {} kept",
                            removed.len(),
                            layout.list_runs().map_or(0, |r| r.len())
                        );
                        Ok(())
                    }
                    Err(e) => {
                        let code = if matches!(e, agrag_engine::EngineError::InvalidArgument { .. })
                        {
                            2
                        } else {
                            1
                        };
                        Err((code, anyhow::Error::new(e).context("gc failed")))
                    }
                }
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(code)
        }
    }
}
