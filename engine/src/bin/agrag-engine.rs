//! `agrag-engine`: query a published snapshot from the command line.
//! Exit codes: 0 success, 1 failure of the work, 2 bad usage or bad input.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agrag_engine::embed::EmbedderSettings;
use agrag_engine::format::{Layout, Verify};
use agrag_engine::query::concept::ConceptStatus;
use agrag_engine::query::evidence::{Evidence, EvidenceStatus};
use agrag_engine::query::theme::{Status, ThemeAnswer};
use agrag_engine::stdout_line as println;
use agrag_engine::tools::settings::parse_seconds;
use agrag_engine::visibility::{Target, Visibility};
use agrag_engine::{
    ConceptRequest, ConceptSelector, Direction, Engine, EngineConfig, EngineError, QueryInput,
    Scope, ThemeRequest,
};
use anyhow::Context;
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "agrag-engine",
    version,
    about = "Answer theme and concept questions over an agrag snapshot"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct RootArg {
    /// Snapshot root [default: $AGRAG_ROOT, else ./.agrag]
    #[arg(long, env = "AGRAG_ROOT", global = true)]
    root: Option<PathBuf>,
    /// How the run is checked before it answers: `checksums` reads every file once (BLAKE3,
    /// about 1 s per 4 GB), `sizes` only compares file sizes with the manifest (a bit flip
    /// that keeps a size then goes unnoticed; for a run already verified, by `verify` or by
    /// the job that published it)
    #[arg(
        long,
        env = "AGRAG_VERIFY",
        global = true,
        value_enum,
        default_value_t = VerifyArg::Checksums
    )]
    verify: VerifyArg,
}

/// `--verify` values.
#[derive(Clone, Copy, clap::ValueEnum)]
enum VerifyArg {
    Sizes,
    Checksums,
}

impl RootArg {
    fn path(&self) -> PathBuf {
        self.root.clone().unwrap_or_else(|| PathBuf::from(".agrag"))
    }

    fn verify(&self) -> Verify {
        match self.verify {
            VerifyArg::Sizes => Verify::Sizes,
            VerifyArg::Checksums => Verify::Checksums,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Themes that match a question, with their supporting passages.
    Themes {
        #[command(flatten)]
        root: RootArg,
        /// Only these document keys (comma-separated)
        #[arg(long, value_delimiter = ',')]
        scope: Option<Vec<String>>,
        /// Most themes (≥ 1)
        #[arg(long, default_value_t = 5, allow_negative_numbers = true)]
        limit: i64,
        /// Most passages per theme (≥ 1)
        #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
        support_limit: i64,
        /// Deadline of the search in seconds (e.g. 0.5), from the call (opening the run is not
        /// counted); past it the answer is `failed` with a `timeout` failure
        #[arg(long)]
        timeout: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// The question
        question: String,
    },
    /// Every document about a concept, expanded along the vocabulary hierarchy.
    Concepts {
        #[command(flatten)]
        root: RootArg,
        /// A term (preferred term or synonym)
        #[arg(long, conflicts_with = "concept", required_unless_present = "concept")]
        term: Option<String>,
        /// A concept id (e.g. D009203)
        #[arg(long)]
        concept: Option<String>,
        /// Text that ranks the matches (BM25); it never narrows
        #[arg(long)]
        query: Option<String>,
        /// Keyword clause (BM25 hits), combined with the concept filter
        #[arg(long)]
        keyword: Option<String>,
        /// Vector clause: text whose nearest documents (by the run's embedder) are hits
        #[arg(long)]
        vector: Option<String>,
        /// How many nearest documents the vector clause hits
        #[arg(long, default_value_t = 100)]
        vector_k: usize,
        /// How clauses combine: bool (intersect), rrf or weighted (hybrid)
        #[arg(long, default_value = "bool")]
        combine: String,
        /// Weight of the keyword clause in a weighted hybrid, in [0, 1]
        #[arg(long, default_value_t = 0.5)]
        keyword_weight: f32,
        /// Most documents listed (the count covers all)
        #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
        sample: i64,
        /// up: broader concepts are included; down: narrower ones
        #[arg(long, default_value = "up")]
        direction: String,
        /// Most hops of expansion [default: unlimited, the whole hierarchy]
        #[arg(long)]
        depth: Option<usize>,
        /// Node field: concept (linked) or mesh (the input's headings)
        #[arg(long, default_value = "concept")]
        node_field: String,
        /// Relation to expand along
        #[arg(long, default_value = "subclass_of")]
        relation: String,
        /// Only these document keys (comma-separated)
        #[arg(long, value_delimiter = ',')]
        scope: Option<Vec<String>>,
        /// Deadline of the search in seconds (e.g. 0.5), from the call (opening the run is not
        /// counted); past it the answer is `failed` with a `timeout` failure
        #[arg(long)]
        timeout: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// The text and location behind evidence ids. With no run served it answers
    /// index_not_ready and exits 1.
    Evidence {
        #[command(flatten)]
        root: RootArg,
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Evidence ids (passage ids)
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Live visibility flags of passages and documents.
    Visibility {
        #[command(subcommand)]
        command: VisibilityCommand,
    },
    /// The figures of a run for its operator: a self-contained HTML page (--html) and/or one
    /// JSON document (--json) with levels, sizes, modularity, the hierarchy, the largest
    /// communities, lineage and visibility.
    Report {
        #[command(flatten)]
        root: RootArg,
        /// The run [default: the one LATEST names]
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
        /// Write the page to this file
        #[arg(long, value_name = "OUT.html", required_unless_present = "json")]
        html: Option<PathBuf>,
        /// Print the figures as JSON
        #[arg(long)]
        json: bool,
    },
    /// Check the run LATEST names: manifest, sizes and checksums of every file (sizes only
    /// with --verify sizes).
    Verify {
        #[command(flatten)]
        root: RootArg,
    },
    /// Serve search_themes, find_by_meaning and fetch_evidence over MCP (stdio, or
    /// streamable HTTP with --http). Settings: AGRAG_ROOT, MCP_MAX_HITS, MCP_SCOPE,
    /// EMBEDDING_* from the environment, over the config file (see the README).
    Serve {
        /// Snapshot root [default: $AGRAG_ROOT, else the config file's `root`, else ./.agrag]
        #[arg(long)]
        root: Option<PathBuf>,
        /// TOML config file (root, [mcp] max_hits/scope, [embedding] ...)
        #[arg(long, env = "AGRAG_CONFIG")]
        config: Option<PathBuf>,
        /// Serve streamable HTTP at ADDR (HOST:PORT, or a bare PORT on 127.0.0.1) under /mcp
        /// instead of stdio
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// How often LATEST is polled: a newly published run is swapped in (and the swap logged
        /// on stderr) within about this long, queries in flight finishing on the old run.
        /// A duration such as 500ms, 2s or 1m; `off` (or `0`) serves the run found at start
        /// only
        #[arg(
            long,
            env = "AGRAG_WATCH_INTERVAL",
            value_name = "DURATION",
            default_value = "2s",
            value_parser = parse_watch_interval
        )]
        watch_interval: WatchInterval,
    },
}

#[derive(Args)]
#[group(required = true, multiple = false)]
struct TargetArgs {
    /// A passage id
    #[arg(long)]
    passage: Option<String>,
    /// A document key (applies to all its passages)
    #[arg(long)]
    document: Option<String>,
}

impl TargetArgs {
    fn get(&self) -> (Target, &str) {
        match (&self.passage, &self.document) {
            (Some(p), _) => (Target::Passage, p),
            (None, Some(d)) => (Target::Document, d),
            (None, None) => (Target::Passage, ""),
        }
    }
}

#[derive(Subcommand)]
enum VisibilityCommand {
    /// Set the state of a passage or document.
    Set {
        #[command(flatten)]
        root: RootArg,
        #[command(flatten)]
        target: TargetArgs,
        /// visible | hidden | deleted | superseded
        #[arg(long)]
        state: String,
        /// Why
        #[arg(long)]
        reason: Option<String>,
        /// Store the flag even though the served run holds no such passage or document (it
        /// applies once a run holds it); without this, an unknown key is refused as a typo
        #[arg(long)]
        allow_unknown: bool,
    },
    /// Print the effective state of a passage or document and the flag that decides it (a
    /// passage is as restricted as its document).
    Get {
        #[command(flatten)]
        root: RootArg,
        #[command(flatten)]
        target: TargetArgs,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// List every flag that is not visible.
    List {
        #[command(flatten)]
        root: RootArg,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

type CmdResult = Result<(), (u8, anyhow::Error)>;

/// `serve --watch-interval`: how often `LATEST` is polled, `None` for never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WatchInterval(Option<Duration>);

/// Longest `--watch-interval`: one day, in milliseconds.
const MAX_WATCH_INTERVAL_MS: f64 = 86_400_000.0;

/// Parses `--watch-interval`: a number with a unit (`ms`, `s`, `m`), or `off` (or `0`).
fn parse_watch_interval(spec: &str) -> Result<WatchInterval, String> {
    let spec = spec.trim();
    if spec.eq_ignore_ascii_case("off") || spec == "0" {
        return Ok(WatchInterval(None));
    }
    let expected = "expected a duration with its unit (500ms, 2s, 1m) or `off`";
    let split = spec
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(spec.len());
    let (number, unit) = spec.split_at(split);
    let number: f64 = number.parse().map_err(|_| expected.to_owned())?;
    let ms = number
        * match unit.trim() {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" | "min" => 60_000.0,
            _ => return Err(expected.to_owned()),
        };
    if !(1.0..=MAX_WATCH_INTERVAL_MS).contains(&ms) {
        return Err("expected a duration from 1ms to 24h, or `off`".to_owned());
    }
    Ok(WatchInterval(Some(
        Duration::from_millis(ms.round() as u64),
    )))
}

/// The root of a command that writes or lists visibility flags. A root that holds no snapshot
/// (no `runs/` folder) and no visibility store is refused: a mistyped `--root` would otherwise
/// create a new folder and database and look like success.
fn snapshot_root(root: &RootArg) -> Result<PathBuf, (u8, anyhow::Error)> {
    let path = root.path();
    let layout = Layout::new(&path);
    if layout.runs_dir().is_dir() || layout.visibility_path().exists() {
        return Ok(path);
    }
    Err(usage(anyhow::anyhow!(
        "{} is not a snapshot root (it has no runs/ folder and no {}): check --root or AGRAG_ROOT",
        path.display(),
        agrag_engine::format::layout::VISIBILITY_FILE
    )))
}

fn usage(e: impl Into<anyhow::Error>) -> (u8, anyhow::Error) {
    (2, e.into())
}

fn work(e: impl Into<anyhow::Error>) -> (u8, anyhow::Error) {
    (1, e.into())
}

fn engine_code(e: &EngineError) -> u8 {
    if matches!(e, EngineError::InvalidArgument { .. }) {
        2
    } else {
        1
    }
}

/// The engine configuration from `EMBEDDING_*`: an explicit embedder when the settings name
/// one, else the run's own (MiniLM read from `EMBEDDING_MODEL_PATH` or the default folder).
fn engine_config(verify: Verify) -> Result<EngineConfig, (u8, anyhow::Error)> {
    let settings = EmbedderSettings::from_env().map_err(usage)?;
    let embedder = if settings.is_explicit() {
        let choice = settings
            .build()
            .context("building the query embedder from EMBEDDING_*")
            .map_err(usage)?;
        Some(choice.embedder)
    } else {
        None
    };
    Ok(EngineConfig {
        embedder,
        model_path: Some(settings.model_path),
        verify,
        ..EngineConfig::default()
    })
}

fn to_count(field: &'static str, v: i64) -> Result<usize, (u8, anyhow::Error)> {
    usize::try_from(v).ok().filter(|&n| n >= 1).ok_or_else(|| {
        usage(EngineError::InvalidArgument {
            field,
            value: v.to_string(),
            expected: "an integer ≥ 1",
        })
    })
}

/// Refuses a question the MCP tools would refuse: longer than
/// [`MAX_QUERY_CHARS`](agrag_engine::tools::args::MAX_QUERY_CHARS), or blank. One rule whichever
/// way a question arrives: a pasted file is named as a mistake instead of being embedded, and an
/// empty `--keyword` or question is not read as "match everything" or "match nothing".
fn check_question(field: &'static str, text: &str) -> Result<(), (u8, anyhow::Error)> {
    use agrag_engine::tools::args::MAX_QUERY_CHARS;
    // The message below spells the cap out.
    const _: () = assert!(MAX_QUERY_CHARS == 1000);
    let n = text.chars().count();
    if n > MAX_QUERY_CHARS || text.trim().is_empty() {
        return Err(usage(EngineError::InvalidArgument {
            field,
            value: if n == 0 {
                "an empty text".to_owned()
            } else if n > MAX_QUERY_CHARS {
                format!("{n} characters")
            } else {
                format!("{n} characters of white space")
            },
            expected: "1 to 1000 characters, not all white space",
        }));
    }
    Ok(())
}

fn snippet(text: &str, n: usize) -> String {
    let t: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        format!("{}…", t.trim_end())
    } else {
        t
    }
}

/// The snake_case name of a status or state (its JSON form).
fn name_of(value: impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Exit 1 after printing an answer whose `status` says the work could not be done (`failed`,
/// `index_not_ready`): README's "1 failure of the work".
fn unanswered(tool: &str, status: impl serde::Serialize) -> CmdResult {
    Err(work(anyhow::anyhow!(
        "{tool} answered {} (see the answer above)",
        name_of(status)
    )))
}

fn print_themes(engine: &Engine, a: &ThemeAnswer) -> CmdResult {
    let state = match a.index_state {
        Some(s) => name_of(s),
        None => "null".to_owned(),
    };
    println!(
        "status: {}  truncated: {}  index_state: {}  run: {}",
        name_of(a.status),
        a.truncated,
        state,
        a.run_id.as_deref().unwrap_or("-")
    );
    for f in &a.failures {
        println!("failure [{}]: {}", f.leg, f.message);
    }
    for (i, t) in a.themes.iter().enumerate() {
        println!(
            "\n{}. theme {} (level {}, score {:.3}): {}",
            i + 1,
            t.theme_id,
            t.level,
            t.score,
            t.entities.join(" · ")
        );
        let ids: Vec<String> = t.passages.iter().map(|p| p.evidence_id.clone()).collect();
        let ev = engine.fetch_evidence(&ids).map_err(work)?;
        for (p, e) in t.passages.iter().zip(ev) {
            println!(
                "   - {} (mentions {} of its concepts): {}",
                p.evidence_id,
                p.num_members,
                snippet(e.text.as_deref().unwrap_or(""), 160)
            );
        }
    }
    Ok(())
}

/// `s` with control characters written as escapes (`\u{1b}`): an id echoed from the command
/// line must not drive the terminal.
fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return s.into();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

fn print_evidence(ev: &[Evidence]) {
    for e in ev {
        let id = printable(&e.evidence_id);
        match e.status {
            EvidenceStatus::Found => println!(
                "{} — {} (passage {}): {}\n  {}\n",
                id,
                e.document_key.as_deref().unwrap_or(""),
                e.location.map_or(0, |l| l.position),
                e.title.as_deref().unwrap_or(""),
                e.text.as_deref().unwrap_or("")
            ),
            EvidenceStatus::NotVisible => println!(
                "{}: not visible ({})\n",
                id,
                e.visibility.map_or("?", Visibility::as_str)
            ),
            EvidenceStatus::Unknown => println!("{id}: unknown evidence id\n"),
        }
    }
}

/// An answer as a JSON object with `not_ready_reason` beside its fields (null while a run is
/// served), as every `--json` answer of the CLI carries it.
fn with_not_ready_reason<T: serde::Serialize>(
    answer: &T,
    engine: &Engine,
) -> Result<serde_json::Value, (u8, anyhow::Error)> {
    let mut value = serde_json::to_value(answer).map_err(work)?;
    if let serde_json::Value::Object(fields) = &mut value {
        fields.insert(
            "not_ready_reason".to_owned(),
            engine.not_ready_reason().into(),
        );
    }
    Ok(value)
}

fn json_out<T: serde::Serialize>(v: &T) -> CmdResult {
    println!("{}", serde_json::to_string_pretty(v).map_err(work)?);
    Ok(())
}

fn run(cli: Cli) -> CmdResult {
    match cli.command {
        Command::Themes {
            root,
            scope,
            limit,
            support_limit,
            timeout,
            json,
            question,
        } => {
            let timeout = timeout
                .map(|t| parse_seconds("timeout", &t))
                .transpose()
                .map_err(usage)?;
            let limit = to_count("limit", limit)?;
            let support_limit = to_count("support_limit", support_limit)?;
            check_question("question", &question)?;
            let engine = Engine::open(root.path(), engine_config(root.verify())?).map_err(work)?;
            let req = ThemeRequest {
                query: QueryInput::Text(question),
                scope: scope.map_or(Scope::All, |keys| {
                    Scope::Documents(
                        keys.into_iter()
                            .map(|k| k.trim().to_owned())
                            .filter(|k| !k.is_empty())
                            .collect(),
                    )
                }),
                limit,
                support_limit,
                timeout,
            };
            let answer = engine
                .search_themes(&req)
                .map_err(|e| (engine_code(&e), e.into()))?;
            if json {
                json_out(&with_not_ready_reason(&answer, &engine)?)?;
            } else {
                print_themes(&engine, &answer)?;
                if let Some(r) = engine.not_ready_reason() {
                    println!("not ready: {r}");
                }
            }
            // The answer is printed either way; the exit code says the work could not be done.
            match answer.status {
                Status::Failed | Status::IndexNotReady => {
                    unanswered("search_themes", answer.status)
                }
                _ => Ok(()),
            }
        }
        Command::Concepts {
            root,
            term,
            concept,
            query,
            keyword,
            vector,
            vector_k,
            combine,
            keyword_weight,
            sample,
            direction,
            depth,
            node_field,
            relation,
            scope,
            timeout,
            json,
        } => {
            use agrag_engine::query::concept::{Combine, Fusion, VectorClause};
            let timeout = timeout
                .map(|t| parse_seconds("timeout", &t))
                .transpose()
                .map_err(usage)?;
            let sample = to_count("sample", sample)?;
            for (field, text) in [
                ("query", &query),
                ("keyword", &keyword),
                ("vector", &vector),
            ] {
                if let Some(t) = text {
                    check_question(field, t)?;
                }
            }
            let direction = match direction.as_str() {
                "up" | "forward" => Direction::Forward,
                "down" | "reverse" => Direction::Reverse,
                other => {
                    return Err(usage(EngineError::InvalidArgument {
                        field: "direction",
                        value: other.to_owned(),
                        expected: "up or down",
                    }));
                }
            };
            let combine = match combine.as_str() {
                "bool" => Combine::Bool,
                "rrf" => Combine::Hybrid(Fusion::Rrf { k: 60.0 }),
                "weighted" => Combine::Hybrid(Fusion::WeightedSum { keyword_weight }),
                other => {
                    return Err(usage(EngineError::InvalidArgument {
                        field: "combine",
                        value: other.to_owned(),
                        expected: "bool, rrf or weighted",
                    }));
                }
            };
            let selector = match (term, concept) {
                (Some(t), _) => ConceptSelector::Term(t),
                (None, Some(c)) => ConceptSelector::Concept(c),
                (None, None) => unreachable!("clap requires one of --term and --concept"),
            };
            let mut req = ConceptRequest::new(selector);
            req.node_field = node_field;
            req.relation = relation;
            req.direction = direction;
            req.depth = depth;
            req.query = query;
            req.keyword = keyword;
            req.vector = vector.map(|v| VectorClause {
                input: QueryInput::Text(v),
                k: vector_k,
            });
            req.combine = combine;
            req.sample = sample;
            req.timeout = timeout;
            req.scope = scope.map_or(Scope::All, |keys| {
                Scope::Documents(
                    keys.into_iter()
                        .map(|k| k.trim().to_owned())
                        .filter(|k| !k.is_empty())
                        .collect(),
                )
            });
            // EMBEDDING_* applies to the vector clause as to `themes`.
            let engine = Engine::open(root.path(), engine_config(root.verify())?).map_err(work)?;
            let answer = engine
                .find_by_meaning(&req)
                .map_err(|e| (engine_code(&e), e.into()))?;
            let outcome = match answer.status {
                ConceptStatus::Failed | ConceptStatus::IndexNotReady => {
                    unanswered("find_by_meaning", answer.status)
                }
                _ => Ok(()),
            };
            if json {
                json_out(&with_not_ready_reason(&answer, &engine)?)?;
                return outcome;
            }
            println!("status: {}", name_of(answer.status));
            if let Some(r) = engine.not_ready_reason() {
                println!("not ready: {r}");
            }
            println!("{}", answer.text);
            for f in &answer.failures {
                println!("failure [{}]: {}", f.leg, f.message);
            }
            for (i, h) in answer.sample.iter().enumerate() {
                let score = h.score.map_or(String::new(), |s| format!(" [{s:.3}]"));
                println!(
                    "{:>3}. {}{score} {} — via {}",
                    i + 1,
                    h.document_key,
                    snippet(&h.title, 100),
                    h.matched.join(", ")
                );
            }
            outcome
        }
        Command::Evidence { root, json, ids } => {
            if let Some(i) = ids.iter().position(|id| id.trim().is_empty()) {
                return Err(usage(EngineError::InvalidArgument {
                    field: "id",
                    value: format!("an empty id (argument {})", i + 1),
                    expected: "an evidence id such as pmid:123#0",
                }));
            }
            let engine = Engine::open(root.path(), engine_config(root.verify())?).map_err(work)?;
            let run_id = engine.run_id();
            // With no run served every id would look unknown; say that nothing was looked up.
            let status = if run_id.is_some() {
                "ok"
            } else {
                "index_not_ready"
            };
            let ev = match run_id {
                Some(_) => engine.fetch_evidence(&ids).map_err(work)?,
                None => Vec::new(),
            };
            let reason = engine.not_ready_reason();
            if json {
                json_out(&serde_json::json!({
                    "status": status,
                    "run_id": run_id,
                    "not_ready_reason": reason,
                    "evidence": ev,
                }))?;
            } else if run_id.is_some() {
                print_evidence(&ev);
            } else {
                println!("status: {status}  run: -");
                if let Some(r) = reason {
                    println!("not ready: {r}");
                }
            }
            match run_id {
                Some(_) => Ok(()),
                None => unanswered("fetch_evidence", status),
            }
        }
        Command::Visibility { command } => match command {
            VisibilityCommand::Set {
                root,
                target,
                state,
                reason,
                allow_unknown,
            } => {
                let state: Visibility = state.parse().map_err(usage)?;
                let (t, key) = target.get();
                let verify = root.verify();
                let root = snapshot_root(&root)?;
                let engine = Engine::open(root, engine_config(verify)?).map_err(work)?;
                // Flags are keyed by stable ids and may name what a later run will hold, but a
                // typo must not pass as success: an id the served run lacks is stored only
                // when asked for.
                if let Some(run_id) = engine.served_run_lacking(t, key) {
                    if !allow_unknown {
                        return Err(usage(anyhow::anyhow!(
                            "the served run {run_id} has no {} {key:?}; check the id, or pass \
                             --allow-unknown to store the flag for a later run",
                            t.as_str()
                        )));
                    }
                    eprintln!(
                        "note: the served run {run_id} has no {} {key:?}; the flag is stored and applies once a run holds it",
                        t.as_str()
                    );
                }
                engine
                    .set_visibility(t, key, state, reason.as_deref())
                    .map_err(|e| (engine_code(&e), e.into()))?;
                println!("{key}: {}", state.as_str());
                Ok(())
            }
            VisibilityCommand::Get { root, target, json } => {
                let (t, key) = target.get();
                let verify = root.verify();
                let root = snapshot_root(&root)?;
                let engine = Engine::open(root, engine_config(verify)?).map_err(work)?;
                let effective = engine.effective_visibility(t, key).map_err(work)?;
                if json {
                    return json_out(&effective);
                }
                println!("{}", effective.describe());
                // A flag may name what no run holds yet; say so, so a typo is not read as
                // "visible".
                if let Some(run_id) = engine.served_run_lacking(t, key) {
                    println!(
                        "note: the served run {run_id} has no {} {key:?}",
                        t.as_str()
                    );
                }
                Ok(())
            }
            VisibilityCommand::List { root, json } => {
                let engine = Engine::open(snapshot_root(&root)?, engine_config(root.verify())?)
                    .map_err(work)?;
                let flags = engine.visibility_flags().map_err(work)?;
                if json {
                    return json_out(&flags);
                }
                for f in flags {
                    println!(
                        "{:<8} {:<30} {:<10} {} {}",
                        format!("{:?}", f.target).to_lowercase(),
                        f.key,
                        f.state.as_str(),
                        f.changed_at,
                        f.reason.unwrap_or_default()
                    );
                }
                Ok(())
            }
        },
        Command::Serve {
            root,
            config,
            http,
            watch_interval,
        } => serve(root, config, http, watch_interval),
        Command::Report {
            root,
            run,
            html,
            json,
        } => {
            use agrag_engine::run_report::{Options, write_page};
            let options = Options {
                run_id: run,
                progress: true,
                ..Options::default()
            };
            let (report, page) =
                write_page(&root.path(), &options, html.as_deref()).map_err(|e| {
                    // No run, an unknown run id, an unwritable page: bad input.
                    let bad_input = matches!(
                        e,
                        EngineError::NotReady { .. }
                            | EngineError::UnknownRun { .. }
                            | EngineError::InvalidArgument { .. }
                            | EngineError::Output { .. }
                    );
                    (if bad_input { 2 } else { 1 }, e.into())
                })?;
            if json {
                json_out(&report.figures)?;
            }
            if let Some((path, bytes)) = page {
                let line = format!(
                    "wrote {} ({bytes} bytes): run {}",
                    path.display(),
                    report.figures.run.run_id
                );
                if json {
                    eprintln!("{line}");
                } else {
                    println!("{line}");
                }
            }
            Ok(())
        }
        Command::Verify { root } => {
            let engine = Engine::open(root.path(), engine_config(root.verify())?).map_err(work)?;
            // Open serves the run only when it passed; when it did not, hand on the error that
            // refused it, causes included.
            if let Some(e) = engine.not_ready_error() {
                return Err(work(e));
            }
            let view = engine.view().map_err(work)?;
            let snap = view.snapshot().context("no run is served").map_err(work)?;
            println!(
                "run {}: {} files verified ({}, schemas)",
                snap.run_id(),
                snap.manifest.files.len(),
                match root.verify() {
                    Verify::Sizes => "sizes",
                    Verify::Checksums => "sizes, BLAKE3 checksums",
                }
            );
            Ok(())
        }
    }
}

#[cfg(feature = "mcp")]
/// `--http` value → socket address: a bare port binds 127.0.0.1.
fn http_addr(spec: &str) -> Result<std::net::SocketAddr, (u8, anyhow::Error)> {
    use std::net::ToSocketAddrs;
    if let Ok(port) = spec.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    spec.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            usage(anyhow::anyhow!(
                "invalid --http {spec:?}: expected HOST:PORT (e.g. 127.0.0.1:8765) or a port"
            ))
        })
}

#[cfg(feature = "mcp")]
fn serve(
    root: Option<PathBuf>,
    config: Option<PathBuf>,
    http: Option<String>,
    watch_interval: WatchInterval,
) -> CmdResult {
    use agrag_engine::tools::{Settings, ToolBox};
    let mut settings =
        Settings::load(config.as_deref(), |k| std::env::var(k).ok()).map_err(usage)?;
    if let Some(r) = root {
        settings.root = r;
    }
    let addr = http.as_deref().map(http_addr).transpose()?;
    let tools = ToolBox::open(settings).map_err(|e| (engine_code(&e), e.into()))?;
    if let Some(r) = tools.engine().not_ready_reason() {
        eprintln!("agrag-engine: no run served yet ({r}); searches answer index_not_ready");
    }
    // Held until the server stops; dropping it stops the polling thread.
    let _watcher = match watch_interval.0 {
        Some(interval) => {
            tracing::info!(
                "watching {} every {interval:?} for a new run",
                Layout::new(tools.engine().root()).latest_path().display()
            );
            Some(tools.engine().watch(interval).map_err(work)?)
        }
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(work)?;
    rt.block_on(async move {
        match addr {
            Some(a) => agrag_engine::mcp::serve_http(tools, a).await,
            None => agrag_engine::mcp::serve_stdio(tools).await,
        }
    })
    .map_err(work)
}

#[cfg(not(feature = "mcp"))]
fn serve(
    _root: Option<PathBuf>,
    _config: Option<PathBuf>,
    _http: Option<String>,
    _watch_interval: WatchInterval,
) -> CmdResult {
    Err(usage(anyhow::anyhow!(
        "this agrag-engine was built without the `mcp` feature; rebuild with `--features mcp`"
    )))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server's log is its operator's view (runs swapped in, reloads refused; rmcp's warning
    // for every error answer it sends is left out); a one-shot command prints only errors.
    // RUST_LOG overrides both.
    let default_filter = match cli.command {
        Command::Serve { .. } => "warn,rmcp=error,agrag_engine=info",
        _ => "error",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a log file or pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(code)
        }
    }
}
