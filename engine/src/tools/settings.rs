//! Settings of the tool surface (MCP server and agent tools): root, `MCP_MAX_HITS`,
//! `MCP_SCOPE` and `EMBEDDING_*`, read from a TOML config file and the environment (the
//! environment wins; a command-line `--root` wins over both).
//!
//! | setting | env | config file key | default |
//! |---|---|---|---|
//! | snapshot root | `AGRAG_ROOT` | `root` | `./.agrag` |
//! | most themes per `search_themes` call | `MCP_MAX_HITS` | `[mcp] max_hits` | 10 |
//! | documents the tools may read | `MCP_SCOPE` | `[mcp] scope` | `all` |
//! | deadline of each search, in seconds | `MCP_TIMEOUT` | `[mcp] timeout` | none |
//! | query embedder | `EMBEDDING_PROVIDER`, `EMBEDDING_MODEL`, `EMBEDDING_MODEL_PATH`, `EMBEDDING_DIM` | `[embedding] provider`, `model`, `model_path`, `dim` | the run's own embedder |
//!
//! `MCP_SCOPE` is `all` or the path of a file of document keys, one per line (blank lines and
//! lines starting with `#` are skipped). A relative path in the config file is resolved
//! against the config file's folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::embed::Embedder;
use crate::error::{EngineError, Result};
use crate::query::Scope;

/// Default of `MCP_MAX_HITS`.
pub const DEFAULT_MAX_HITS: usize = 10;

/// The `EMBEDDING_*` variable names, in the order they are documented.
pub const EMBEDDING_KEYS: [&str; 5] = [
    "EMBEDDING_PROVIDER",
    "EMBEDDING_MODEL",
    "EMBEDDING_MODEL_PATH",
    "EMBEDDING_DIM",
    "EMBEDDING_LONG_TEXTS",
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    root: Option<PathBuf>,
    #[serde(default)]
    mcp: FileMcp,
    #[serde(default)]
    embedding: FileEmbedding,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMcp {
    max_hits: Option<i64>,
    scope: Option<String>,
    timeout: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEmbedding {
    provider: Option<String>,
    model: Option<String>,
    model_path: Option<PathBuf>,
    dim: Option<i64>,
    long_texts: Option<String>,
}

/// The raw `EMBEDDING_*` values after merging the config file and the environment; empty
/// values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbeddingSettings {
    values: BTreeMap<&'static str, String>,
}

impl EmbeddingSettings {
    /// The merged value of an `EMBEDDING_*` variable, in the shape of
    /// `std::env::var(key).ok()`: pass `|k| settings.get(k)` to any reader of `EMBEDDING_*`
    /// that takes a lookup function.
    pub fn get(&self, key: &str) -> Option<String> {
        self.values.get(key).cloned()
    }

    /// The query embedder these settings ask for; `None` when none of `EMBEDDING_PROVIDER`,
    /// `EMBEDDING_MODEL`, `EMBEDDING_DIM` is set (the engine then uses the embedder the
    /// run's manifest names). See [`EmbedderSettings`](crate::embed::EmbedderSettings) for
    /// the values: `minilm` (all-MiniLM-L6-v2 from `EMBEDDING_MODEL_PATH`), `hash`, or
    /// `precomputed` (the caller sends vectors). A configured embedder whose model or
    /// dimension differs from the run's makes searches answer `failed`.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming the `EMBEDDING_*` setting whose value cannot be
    /// used; [`EngineError::ModelMissing`] / [`EngineError::Embedder`] when the MiniLM named
    /// cannot be loaded.
    pub fn build_embedder(&self) -> Result<Option<Arc<dyn Embedder>>> {
        let settings = crate::embed::EmbedderSettings::from_lookup(|k| self.get(k))?;
        if !settings.is_explicit() {
            return Ok(None);
        }
        Ok(Some(settings.build()?.embedder))
    }

    /// `EMBEDDING_MODEL_PATH`, when set: where the engine loads all-MiniLM-L6-v2 from when a
    /// run needs it.
    pub fn model_path(&self) -> Option<PathBuf> {
        self.get("EMBEDDING_MODEL_PATH").map(PathBuf::from)
    }
}

/// Everything `agrag-engine serve` and [`ToolBox`](super::ToolBox) need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Snapshot root.
    pub root: PathBuf,
    /// `MCP_MAX_HITS`: `search_themes` returns at most this many themes (≥ 1).
    pub max_hits: usize,
    /// `MCP_SCOPE`: the documents every tool call reads; no call can widen it.
    pub scope: Scope,
    /// Where the scope came from (`all` or the key file), for messages.
    pub scope_source: String,
    /// `MCP_TIMEOUT`: the deadline of each `search_themes` and `find_by_meaning` call
    /// (`None`: none). A call past it answers `failed` with a `timeout` failure.
    pub timeout: Option<std::time::Duration>,
    /// `EMBEDDING_*`.
    pub embedding: EmbeddingSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            root: PathBuf::from(".agrag"),
            max_hits: DEFAULT_MAX_HITS,
            scope: Scope::All,
            scope_source: "all".into(),
            timeout: None,
            embedding: EmbeddingSettings::default(),
        }
    }
}

fn read_scope(spec: &str, base: Option<&Path>) -> Result<(Scope, String)> {
    let spec = spec.trim();
    if spec.is_empty() || spec.eq_ignore_ascii_case("all") {
        return Ok((Scope::All, "all".into()));
    }
    let mut path = PathBuf::from(spec);
    if path.is_relative()
        && let Some(b) = base
    {
        path = b.join(path);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| EngineError::InvalidArgument {
        field: "MCP_SCOPE",
        value: format!("{} ({e})", path.display()),
        expected: "`all` or a readable file of document keys, one per line",
    })?;
    let keys: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    Ok((Scope::Documents(keys), path.display().to_string()))
}

/// A positive, finite number of seconds (`0.25`, `2`) as a duration.
///
/// # Errors
/// [`EngineError::InvalidArgument`] naming `field` for anything else.
pub fn parse_seconds(field: &'static str, value: &str) -> Result<std::time::Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
        .and_then(|t| std::time::Duration::try_from_secs_f64(t).ok())
        .filter(|d| !d.is_zero())
        .ok_or(EngineError::InvalidArgument {
            field,
            value: value.to_owned(),
            expected: "a positive number of seconds",
        })
}

impl Settings {
    /// Reads the settings: defaults, then the TOML file `config` (when given), then the
    /// variables `lookup` returns (`AGRAG_ROOT`, `MCP_MAX_HITS`, `MCP_SCOPE`, `EMBEDDING_*`;
    /// empty values count as unset). Pass `|k| std::env::var(k).ok()` for the environment.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming the setting: `config` (unreadable file, bad
    /// TOML, unknown key), `MCP_MAX_HITS` (not an integer ≥ 1), `MCP_SCOPE` (unreadable key
    /// file), `MCP_TIMEOUT` (not a positive, finite number of seconds).
    pub fn load(config: Option<&Path>, lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let var = |k: &str| {
            lookup(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let (file, base) = match config {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| EngineError::InvalidArgument {
                        field: "config",
                        value: format!("{} ({e})", path.display()),
                        expected: "a readable TOML file",
                    })?;
                let file: FileSettings =
                    toml::from_str(&text).map_err(|e| EngineError::InvalidArgument {
                        field: "config",
                        value: format!("{}: {}", path.display(), e.message()),
                        expected: "TOML with `root`, [mcp] max_hits/scope/timeout, [embedding] provider/model/model_path/dim",
                    })?;
                (file, path.parent().map(Path::to_path_buf))
            }
            None => (FileSettings::default(), None),
        };
        let mut s = Self::default();
        if let Some(r) = file.root {
            s.root = match &base {
                Some(b) if r.is_relative() => b.join(r),
                _ => r,
            };
        }
        if let Some(r) = var("AGRAG_ROOT") {
            s.root = PathBuf::from(r);
        }
        let max_hits = var("MCP_MAX_HITS").or(file.mcp.max_hits.map(|n| n.to_string()));
        if let Some(m) = max_hits {
            s.max_hits = m.parse::<usize>().ok().filter(|&n| n >= 1).ok_or(
                EngineError::InvalidArgument {
                    field: "MCP_MAX_HITS",
                    value: m,
                    expected: "an integer ≥ 1",
                },
            )?;
        }
        let timeout = var("MCP_TIMEOUT").or(file.mcp.timeout.map(|t| t.to_string()));
        if let Some(t) = timeout {
            s.timeout = Some(parse_seconds("MCP_TIMEOUT", &t)?);
        }
        if let Some(spec) = var("MCP_SCOPE") {
            (s.scope, s.scope_source) = read_scope(&spec, None)?;
        } else if let Some(spec) = file.mcp.scope {
            (s.scope, s.scope_source) = read_scope(&spec, base.as_deref())?;
        }
        let fe = file.embedding;
        let from_file = [
            fe.provider,
            fe.model,
            fe.model_path.map(|p| p.display().to_string()),
            fe.dim.map(|d| d.to_string()),
            fe.long_texts,
        ];
        for (key, file_value) in EMBEDDING_KEYS.into_iter().zip(from_file) {
            if let Some(v) = var(key).or(file_value.filter(|v| !v.trim().is_empty())) {
                s.embedding.values.insert(key, v);
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_overrides_file() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys.txt");
        std::fs::write(&keys, "# in scope\npmid:1\n\npmid:2\n").unwrap();
        let cfg = dir.path().join("agrag.toml");
        std::fs::write(
            &cfg,
            "root = \"snap\"\n[mcp]\nmax_hits = 4\nscope = \"keys.txt\"\n[embedding]\ndim = 32\n",
        )
        .unwrap();
        let s = Settings::load(Some(&cfg), |_| None).unwrap();
        assert_eq!(s.root, dir.path().join("snap"));
        assert_eq!(s.max_hits, 4);
        assert_eq!(
            s.scope,
            Scope::Documents(vec!["pmid:1".into(), "pmid:2".into()])
        );
        assert_eq!(s.embedding.get("EMBEDDING_DIM").as_deref(), Some("32"));
        let s = Settings::load(Some(&cfg), |k| match k {
            "MCP_MAX_HITS" => Some("2".into()),
            "MCP_SCOPE" => Some("all".into()),
            "EMBEDDING_DIM" => Some("64".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((s.max_hits, &s.scope), (2, &Scope::All));
        assert_eq!(s.embedding.get("EMBEDDING_DIM").as_deref(), Some("64"));
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let e = Settings::load(None, |k| (k == "MCP_MAX_HITS").then(|| "0".into())).unwrap_err();
        assert!(e.to_string().contains("MCP_MAX_HITS"), "{e}");
        let e = Settings::load(None, |k| {
            (k == "MCP_SCOPE").then(|| "/nonexistent/k".into())
        })
        .unwrap_err();
        assert!(e.to_string().contains("MCP_SCOPE"), "{e}");
        let e = Settings::load(None, |k| {
            (k == "EMBEDDING_PROVIDER").then(|| "word2vec".into())
        })
        .and_then(|s| s.embedding.build_embedder())
        .unwrap_err();
        assert!(e.to_string().contains("EMBEDDING_PROVIDER"), "{e}");
        // An explicit MiniLM without its folder is an error naming the folder, not a fallback.
        let s = Settings::load(None, |k| match k {
            "EMBEDDING_PROVIDER" => Some("minilm".into()),
            "EMBEDDING_MODEL_PATH" => Some("/nonexistent/minilm".into()),
            _ => None,
        })
        .unwrap();
        let e = s.embedding.build_embedder().unwrap_err();
        assert!(e.to_string().contains("/nonexistent/minilm"), "{e}");
    }
}
