//! Agent tools over the engine: specs (name, description, JSON Schema), one argument checker,
//! and a call path shared by the MCP server and agent loops.
//!
//! ```text
//! model / MCP client ─► name + JSON args ─► check_arguments (pure; every bad field named)
//!                                              │ Checked
//!                                              ▼
//!                               ToolBox::run ─► Engine (scope and MCP_MAX_HITS from Settings)
//!                                              │
//!                                              ▼
//!                          ToolOutput { text, structured, is_error, partial_retrieval }
//! ```
//!
//! A call never fails on bad arguments: the output is an error whose text begins
//! `Invalid arguments.` and names each bad field and why, so a model can correct the call.
//! [`AgentRun`] records the calls of one agent run and marks it `partial_retrieval` when a
//! theme search ended in `index_not_ready` or `failed`, or was truncated.
//!
//! # Examples
//! ```
//! use agrag_engine::tools::{AgentRun, Settings, ToolBox};
//! let dir = std::env::temp_dir().join("agrag-doc-tools-empty-root");
//! let tools = ToolBox::open(Settings { root: dir, ..Settings::default() }).unwrap();
//! let mut run = AgentRun::new(tools);
//! let out = run.call_json("search_themes", r#"{"query": "", "limit": 99}"#);
//! assert!(out.is_error);
//! assert!(out.text.starts_with("Invalid arguments."));
//! assert!(out.text.contains("`query`") && out.text.contains("`limit`"));
//! // A root without a run answers index_not_ready: the run is marked partial.
//! let out = run.call_json("search_themes", r#"{"query": "statins"}"#);
//! assert!(!out.is_error && run.partial_retrieval());
//! ```

pub mod args;
pub mod settings;

use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

pub use args::{ArgError, ArgErrors, Checked, TOOLS, ToolSpec, check_arguments};
pub use settings::{EmbeddingSettings, Settings};

use crate::engine::{Engine, EngineConfig, QueryInput, ThemeRequest};
use crate::error::{EngineError, Result};
use crate::query::concept::{ConceptAnswer, ConceptRequest};
use crate::query::evidence::{Evidence, EvidenceStatus};
use crate::query::theme::{Status, ThemeAnswer};

/// The result of one tool call, for a model (`text`) and for programs (`structured`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// The tool called (as asked, at most 200 characters).
    pub tool: String,
    /// A short rendering for models that read text; for errors, the whole message
    /// (`Invalid arguments. …`, `Unknown tool …`, or `The search failed: …`).
    pub text: String,
    /// The answer as JSON: the library's answer with the same fields and statuses
    /// ([`ThemeAnswer`], [`ConceptAnswer`], or `{"evidence": [Evidence…]}`); for rejected
    /// arguments `{"error": "invalid_arguments" | "unknown_tool", "errors": [{field, reason}]}`.
    pub structured: Value,
    /// Whether the call was rejected or the engine raised an error.
    pub is_error: bool,
    /// Whether the call was rejected before any search ran (bad arguments or unknown tool).
    pub rejected: bool,
    /// Whether this call's retrieval was incomplete: a theme search whose status is not
    /// `ok`, `no_match` or `empty_scope`, or that is truncated.
    pub partial_retrieval: bool,
}

/// The engine plus the settings every call obeys. Cheap to clone and share across threads.
#[derive(Debug, Clone)]
pub struct ToolBox {
    engine: Arc<Engine>,
    settings: Arc<Settings>,
}

/// Whether a theme answer makes the retrieval partial.
pub fn is_partial(a: &ThemeAnswer) -> bool {
    a.truncated || !matches!(a.status, Status::Ok | Status::NoMatch | Status::EmptyScope)
}

fn status_str<T: Serialize>(s: &T) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let t: String = s.chars().take(n).collect();
        format!("{}…", t.trim_end())
    }
}

impl ToolBox {
    /// Opens the engine on `settings.root` with the query embedder the `EMBEDDING_*` settings
    /// ask for.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] from [`EmbeddingSettings::build_embedder`]; the
    /// engine's open errors. A root without a run still opens (calls answer
    /// `index_not_ready`).
    pub fn open(settings: Settings) -> Result<Self> {
        // The one place EMBEDDING_* becomes the engine's query embedder.
        let config = EngineConfig {
            embedder: settings.embedding.build_embedder()?,
            model_path: settings.embedding.model_path(),
            ..EngineConfig::default()
        };
        let engine = Engine::open(settings.root.clone(), config)?;
        Ok(Self::new(Arc::new(engine), settings))
    }

    /// A tool box over an engine that is already open.
    pub fn new(engine: Arc<Engine>, settings: Settings) -> Self {
        Self {
            engine,
            settings: Arc::new(settings),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Checks `args` and, when they pass, runs the tool. Never panics and never returns an
    /// error: rejected arguments and engine errors are outputs with `is_error = true`.
    /// Blocking (runs the search on the calling thread).
    pub fn call(&self, name: &str, args: &Value) -> ToolOutput {
        match check_arguments(name, args) {
            Ok(checked) => self.run(&checked),
            Err(e) => Self::rejected(name, &e),
        }
    }

    /// The output for arguments [`check_arguments`] rejected.
    pub fn rejected(name: &str, e: &ArgErrors) -> ToolOutput {
        let structured = match e {
            ArgErrors::UnknownTool { name } => json!({
                "error": "unknown_tool", "tool": name,
                "tools": TOOLS.iter().map(|t| t.name).collect::<Vec<_>>(),
            }),
            ArgErrors::Invalid { tool, errors } => json!({
                "error": "invalid_arguments", "tool": tool, "errors": errors,
            }),
        };
        ToolOutput {
            tool: clip(name, 200),
            text: e.to_string(),
            structured,
            is_error: true,
            rejected: true,
            partial_retrieval: false,
        }
    }

    /// Runs checked arguments against the engine, within the configured scope.
    pub fn run(&self, checked: &Checked) -> ToolOutput {
        let tool = checked.tool().to_owned();
        let failed = |e: &EngineError| {
            let invalid = matches!(e, EngineError::InvalidArgument { .. });
            let (kind, text) = match e {
                EngineError::InvalidArgument { .. } => {
                    ("invalid_arguments", format!("Invalid arguments. {e}."))
                }
                _ => (
                    "engine_error",
                    format!("The search failed: {}", e.with_causes()),
                ),
            };
            ToolOutput {
                tool: tool.clone(),
                text,
                structured: json!({"error": kind, "message": e.with_causes()}),
                is_error: true,
                rejected: false,
                partial_retrieval: !invalid,
            }
        };
        match checked {
            Checked::SearchThemes {
                query,
                limit,
                support_limit,
            } => {
                let applied = (*limit).min(self.settings.max_hits);
                let req = ThemeRequest {
                    query: QueryInput::Text(query.clone()),
                    scope: self.settings.scope.clone(),
                    limit: applied,
                    support_limit: *support_limit,
                    timeout: self.settings.timeout,
                };
                match self.engine.search_themes(&req) {
                    Ok(a) => ToolOutput {
                        tool,
                        text: match self.engine.not_ready_reason() {
                            Some(r) if a.status == Status::IndexNotReady => {
                                format!("{}\nnot ready: {r}", render_themes(&a, *limit, applied))
                            }
                            _ => render_themes(&a, *limit, applied),
                        },
                        structured: self.with_not_ready_reason(&a),
                        is_error: false,
                        rejected: false,
                        partial_retrieval: is_partial(&a),
                    },
                    Err(e) => failed(&e),
                }
            }
            Checked::FindByMeaning {
                selector,
                query,
                sample,
                node_field,
                relation,
            } => {
                let mut req = ConceptRequest::new(selector.clone());
                req.timeout = self.settings.timeout;
                if let Some(f) = node_field {
                    req.node_field.clone_from(f);
                }
                if let Some(r) = relation {
                    req.relation.clone_from(r);
                }
                req.query.clone_from(query);
                req.sample = *sample;
                req.scope = self.settings.scope.clone();
                match self.engine.find_by_meaning(&req) {
                    Ok(a) => ToolOutput {
                        tool,
                        text: render_concepts(&a),
                        structured: self.with_not_ready_reason(&a),
                        is_error: false,
                        rejected: false,
                        partial_retrieval: false,
                    },
                    Err(e) => failed(&e),
                }
            }
            // With no run served every id would look unknown: say that nothing was looked up,
            // as search_themes and find_by_meaning answer `index_not_ready`.
            Checked::FetchEvidence { .. } if self.engine.run_id().is_none() => {
                let reason = self.engine.not_ready_reason();
                ToolOutput {
                    tool,
                    text: format!(
                        "status: index_not_ready: no run is served{}; nothing was looked up",
                        reason
                            .as_deref()
                            .map(|r| format!(" ({r})"))
                            .unwrap_or_default()
                    ),
                    structured: json!({
                        "status": "index_not_ready",
                        "not_ready_reason": reason,
                        "evidence": [],
                    }),
                    is_error: false,
                    rejected: false,
                    partial_retrieval: true,
                }
            }
            Checked::FetchEvidence { ids } => match self.engine.fetch_evidence(ids) {
                Ok(ev) => {
                    // Evidence of documents outside the configured scope answers `unknown`,
                    // exactly as an id the run does not hold (nothing about it is revealed).
                    let ev = crate::query::evidence::within_scope(ev, &self.settings.scope);
                    ToolOutput {
                        tool,
                        text: render_evidence(&ev),
                        structured: json!({ "status": "ok", "evidence": ev }),
                        is_error: false,
                        rejected: false,
                        partial_retrieval: false,
                    }
                }
                Err(e) => failed(&e),
            },
        }
    }

    /// An answer's structured content with `not_ready_reason` beside its fields: why no run
    /// is served (null while one is), as `fetch_evidence` answers it.
    fn with_not_ready_reason<T: serde::Serialize>(&self, answer: &T) -> Value {
        let mut value = serde_json::to_value(answer).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut value {
            fields.insert(
                "not_ready_reason".to_owned(),
                self.engine.not_ready_reason().into(),
            );
        }
        value
    }
}

fn render_themes(a: &ThemeAnswer, asked: usize, applied: usize) -> String {
    let mut s = format!(
        "status: {}, truncated: {}, {} theme(s)",
        status_str(&a.status),
        a.truncated,
        a.themes.len()
    );
    if applied < asked {
        let _ = write!(s, " (limit {asked} capped at {applied} by MCP_MAX_HITS)");
    }
    for f in &a.failures {
        let _ = write!(s, "\nfailure [{}]: {}", f.leg, f.message);
    }
    for (i, t) in a.themes.iter().enumerate() {
        let ids: Vec<&str> = t.passages.iter().map(|p| p.evidence_id.as_str()).collect();
        let _ = write!(
            s,
            "\n{}. theme {} (level {}, score {:.3}): {} | evidence: {}",
            i + 1,
            t.theme_id,
            t.level,
            t.score,
            t.entities.join(" · "),
            ids.join(", ")
        );
    }
    s
}

fn render_concepts(a: &ConceptAnswer) -> String {
    let mut s = format!("status: {}\n{}", status_str(&a.status), a.text);
    for f in &a.failures {
        let _ = write!(s, "\nfailure [{}]: {}", f.leg, f.message);
    }
    for (i, h) in a.sample.iter().enumerate() {
        let _ = write!(s, "\n{}. {} {}", i + 1, h.document_key, clip(&h.title, 120));
    }
    s
}

fn render_evidence(ev: &[Evidence]) -> String {
    let mut s = String::new();
    for e in ev {
        if !s.is_empty() {
            s.push('\n');
        }
        match e.status {
            EvidenceStatus::Found => {
                let _ = write!(
                    s,
                    "{} [found] {} passage {}: {}",
                    e.evidence_id,
                    e.document_key.as_deref().unwrap_or(""),
                    e.location.map_or(0, |l| l.position),
                    e.text.as_deref().unwrap_or("")
                );
            }
            EvidenceStatus::NotVisible => {
                let _ = write!(
                    s,
                    "{} [not_visible: {}]",
                    e.evidence_id,
                    e.visibility.map_or("?", |v| v.as_str())
                );
            }
            EvidenceStatus::Unknown => {
                let _ = write!(s, "{} [unknown]", e.evidence_id);
            }
        }
    }
    s
}

/// One recorded call of an [`AgentRun`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// Tool name as asked.
    pub tool: String,
    /// Whether the call was an error (rejected or failed).
    pub is_error: bool,
    /// Whether it was rejected before any search ran.
    pub rejected: bool,
    /// Whether it made the run's retrieval partial.
    pub partial_retrieval: bool,
}

/// One agent run: the tool calls a model made, in order, and whether its retrieval was
/// partial (`partial_retrieval`: some theme search ended in `index_not_ready` or `failed`,
/// or was truncated, or the engine raised an error). Rejected calls do not make a run partial:
/// nothing was searched, and the model can correct them.
#[derive(Debug, Clone)]
pub struct AgentRun {
    tools: ToolBox,
    calls: Vec<CallRecord>,
    partial_retrieval: bool,
}

impl AgentRun {
    /// A new run with no calls.
    pub fn new(tools: ToolBox) -> Self {
        Self {
            tools,
            calls: Vec::new(),
            partial_retrieval: false,
        }
    }

    /// The tool specs to give a model.
    pub fn specs(&self) -> &'static [ToolSpec] {
        TOOLS
    }

    /// Calls a tool with JSON arguments and records the call.
    pub fn call(&mut self, name: &str, args: &Value) -> ToolOutput {
        let out = self.tools.call(name, args);
        self.record(&out);
        out
    }

    /// Calls a tool with arguments as a model wrote them (a JSON text). Text that is not JSON
    /// is rejected as `Invalid arguments.` naming `arguments`.
    pub fn call_json(&mut self, name: &str, args: &str) -> ToolOutput {
        let out = match serde_json::from_str::<Value>(args) {
            Ok(v) => self.tools.call(name, &v),
            Err(e) => {
                let tool = args::spec(name).map_or("?", |s| s.name);
                let err = if tool == "?" {
                    ArgErrors::UnknownTool {
                        name: clip(name, 200),
                    }
                } else {
                    ArgErrors::Invalid {
                        tool: args::spec(name).map_or("", |s| s.name),
                        errors: vec![ArgError {
                            field: "arguments".into(),
                            reason: format!("are not valid JSON ({e})"),
                        }],
                    }
                };
                ToolBox::rejected(name, &err)
            }
        };
        self.record(&out);
        out
    }

    fn record(&mut self, out: &ToolOutput) {
        self.partial_retrieval |= out.partial_retrieval;
        self.calls.push(CallRecord {
            tool: out.tool.clone(),
            is_error: out.is_error,
            rejected: out.rejected,
            partial_retrieval: out.partial_retrieval,
        });
    }

    /// Whether any call of this run retrieved only partially.
    pub fn partial_retrieval(&self) -> bool {
        self.partial_retrieval
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }
}
