//! The `EMBEDDING_*` settings: which embedder a process uses, and where the model lives.
//!
//! | variable | values | default |
//! |---|---|---|
//! | `EMBEDDING_PROVIDER` | `minilm`, `hash`, `precomputed` | unset: MiniLM when its folder is there, else `hash` with a notice |
//! | `EMBEDDING_MODEL` | `all-MiniLM-L6-v2` (or `sentence-transformers/all-MiniLM-L6-v2`), `agrag-hash-v2`, or the caller's model name for `precomputed` | the provider's model |
//! | `EMBEDDING_MODEL_PATH` | the MiniLM model folder | `$XDG_CACHE_HOME/agrag/models/all-MiniLM-L6-v2`, else `$HOME/.cache/agrag/models/all-MiniLM-L6-v2` |
//! | `EMBEDDING_DIM` | vector length, 1 to [`MAX_DIM`] | 384 (MiniLM allows only 384) |
//! | `EMBEDDING_LONG_TEXTS` | `windows`, `truncate` (MiniLM: texts over 256 word pieces, see [`LongTexts`]) | `windows` |
//!
//! An explicit choice is honoured or refused, never replaced: `EMBEDDING_PROVIDER=minilm` with
//! no model folder is an error. Only the unset provider falls back, and says so
//! ([`EmbedderChoice::notice`]).

use std::path::PathBuf;
use std::sync::Arc;

use super::hash::HASH_MODEL;
use super::{
    Embedder, EmbedderIdentity, HashEmbedder, LongTexts, MINILM_DIM, MINILM_FILES, MINILM_MODEL,
};
use crate::error::{EngineError, Result};

/// The longest vector `EMBEDDING_DIM` may ask for: 65,536 components. The widest text
/// embedding models in use have a few thousand (OpenAI `text-embedding-3-large`: 3,072); a
/// larger value is a typo, and honouring it would allocate gigabytes per query.
pub const MAX_DIM: usize = 65_536;

/// Folder name of the model under the cache folder.
const MODEL_FOLDER: &str = "all-MiniLM-L6-v2";

/// Which embedder family to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// all-MiniLM-L6-v2, our own forward pass (feature `minilm`).
    MiniLm,
    /// The built-in model-free [`HashEmbedder`].
    Hash,
    /// The service sends its own vectors: query text cannot be embedded here.
    Precomputed,
}

impl std::str::FromStr for Provider {
    type Err = EngineError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "minilm" => Ok(Self::MiniLm),
            "hash" => Ok(Self::Hash),
            "precomputed" => Ok(Self::Precomputed),
            _ => Err(EngineError::InvalidArgument {
                field: "EMBEDDING_PROVIDER",
                value: s.to_owned(),
                expected: "minilm, hash or precomputed",
            }),
        }
    }
}

/// The embedder settings of a process, usually read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderSettings {
    /// `EMBEDDING_PROVIDER`; `None`: automatic (MiniLM when its folder is there, else hash).
    pub provider: Option<Provider>,
    /// `EMBEDDING_MODEL`, when set.
    pub model: Option<String>,
    /// `EMBEDDING_MODEL_PATH`, or the default location.
    pub model_path: PathBuf,
    /// `EMBEDDING_DIM`, when set.
    pub dim: Option<usize>,
    /// `EMBEDDING_LONG_TEXTS`, or the default ([`LongTexts::MeanOfWindows`]).
    pub long_texts: LongTexts,
}

/// The embedder chosen by [`EmbedderSettings::build`], with the notice to show when it is a
/// fallback.
#[derive(Debug, Clone)]
pub struct EmbedderChoice {
    /// The embedder.
    pub embedder: Arc<dyn Embedder>,
    /// One line saying why the built-in embedder is used instead of MiniLM, when it is.
    pub notice: Option<String>,
}

/// The default MiniLM folder: `$XDG_CACHE_HOME/agrag/models/all-MiniLM-L6-v2`, else
/// `$HOME/.cache/agrag/models/all-MiniLM-L6-v2`, else `.agrag-models/all-MiniLM-L6-v2` in the
/// working directory. `scripts/fetch-model.sh` unpacks the model there.
pub fn default_model_path() -> PathBuf {
    default_model_path_from(|k| std::env::var(k).ok())
}

fn default_model_path_from(get: impl Fn(&str) -> Option<String>) -> PathBuf {
    let non_empty = |k: &str| get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = non_empty("XDG_CACHE_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".cache")));
    match cache {
        Some(c) => c.join("agrag").join("models").join(MODEL_FOLDER),
        None => PathBuf::from(".agrag-models").join(MODEL_FOLDER),
    }
}

/// `EMBEDDING_MODEL_PATH` when set and non-empty, else [`default_model_path`].
pub fn model_path_from_env() -> PathBuf {
    std::env::var_os("EMBEDDING_MODEL_PATH")
        .filter(|v| !v.is_empty())
        .map_or_else(default_model_path, PathBuf::from)
}

/// Whether `name` (as `EMBEDDING_MODEL` or a manifest says it) is all-MiniLM-L6-v2.
pub fn is_minilm_name(name: &str) -> bool {
    let n = name.trim();
    n == MINILM_MODEL || n.eq_ignore_ascii_case(MODEL_FOLDER)
}

impl EmbedderSettings {
    /// Reads the `EMBEDDING_*` variables (empty values count as unset).
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming the variable when `EMBEDDING_PROVIDER` is not a
    /// known provider, `EMBEDDING_DIM` not an integer from 1 to [`MAX_DIM`] or `EMBEDDING_LONG_TEXTS` neither
    /// `windows` nor `truncate`.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `get` (tests, config files).
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let var = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let provider = var("EMBEDDING_PROVIDER")
            .map(|p| p.parse::<Provider>())
            .transpose()?;
        let dim = var("EMBEDDING_DIM")
            .map(|d| {
                d.parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_DIM).contains(n))
                    .ok_or(EngineError::InvalidArgument {
                        field: "EMBEDDING_DIM",
                        value: d,
                        expected: "an integer from 1 to 65536",
                    })
            })
            .transpose()?;
        let long_texts = var("EMBEDDING_LONG_TEXTS")
            .map(|v| v.parse::<LongTexts>())
            .transpose()?
            .unwrap_or_default();
        Ok(Self {
            provider,
            long_texts,
            model: var("EMBEDDING_MODEL"),
            model_path: var("EMBEDDING_MODEL_PATH")
                .map_or_else(|| default_model_path_from(&get), PathBuf::from),
            dim,
        })
    }

    /// Whether the settings name an embedder (`EMBEDDING_PROVIDER`, `EMBEDDING_MODEL` or
    /// `EMBEDDING_DIM` set). The engine then uses it for every query; otherwise it follows
    /// the served run's manifest.
    pub fn is_explicit(&self) -> bool {
        self.provider.is_some() || self.model.is_some() || self.dim.is_some()
    }

    /// The provider these settings resolve to: the explicit one; else the one
    /// `EMBEDDING_MODEL` names; else MiniLM when this build has it and its folder is there;
    /// else hash.
    pub fn resolved_provider(&self) -> Provider {
        if let Some(p) = self.provider {
            return p;
        }
        match self.model.as_deref() {
            Some(m) if m == HASH_MODEL => Provider::Hash,
            Some(m) if is_minilm_name(m) => Provider::MiniLm,
            Some(_) => Provider::Precomputed,
            None if cfg!(feature = "minilm") && minilm_folder_present(&self.model_path) => {
                Provider::MiniLm
            }
            None => Provider::Hash,
        }
    }

    /// Builds the embedder.
    ///
    /// # Errors
    /// * [`EngineError::InvalidArgument`] when `EMBEDDING_MODEL` or `EMBEDDING_DIM` contradict
    ///   the provider (MiniLM is 384-dimensional; hash is `agrag-hash-v2`; `precomputed` needs
    ///   both a model name and a dimension);
    /// * for an explicit or model-named MiniLM: [`EngineError::ModelMissing`] without the
    ///   model folder, [`EngineError::Embedder`] when this build lacks the `minilm` feature or
    ///   the model does not load.
    ///
    /// With neither provider nor model set, a missing or unloadable MiniLM is not an error:
    /// the hash embedder is returned with a one-line [`EmbedderChoice::notice`].
    pub fn build(&self) -> Result<EmbedderChoice> {
        let auto = self.provider.is_none() && self.model.is_none();
        match self.resolved_provider() {
            Provider::Hash => {
                if let Some(m) = &self.model
                    && m != HASH_MODEL
                {
                    return Err(EngineError::InvalidArgument {
                        field: "EMBEDDING_MODEL",
                        value: m.clone(),
                        expected: "agrag-hash-v2 (or unset) with EMBEDDING_PROVIDER=hash",
                    });
                }
                let notice = auto.then(|| {
                    format!(
                        "notice: no all-MiniLM-L6-v2 model at {}; using the built-in {HASH_MODEL} embedder (run `bash scripts/fetch-model.sh` for semantic search)",
                        self.model_path.display()
                    )
                });
                Ok(EmbedderChoice {
                    embedder: Arc::new(HashEmbedder::new(self.dim.unwrap_or(384))),
                    notice,
                })
            }
            Provider::MiniLm => {
                if let Some(m) = &self.model
                    && !is_minilm_name(m)
                {
                    return Err(EngineError::InvalidArgument {
                        field: "EMBEDDING_MODEL",
                        value: m.clone(),
                        expected: "all-MiniLM-L6-v2 (or unset) with EMBEDDING_PROVIDER=minilm",
                    });
                }
                if let Some(d) = self.dim
                    && d != MINILM_DIM
                {
                    return Err(EngineError::InvalidArgument {
                        field: "EMBEDDING_DIM",
                        value: d.to_string(),
                        expected: "384 (or unset) for all-MiniLM-L6-v2",
                    });
                }
                match load_minilm(&self.model_path, self.long_texts) {
                    Ok(e) => Ok(EmbedderChoice {
                        embedder: e,
                        notice: None,
                    }),
                    Err(e) if auto => Ok(EmbedderChoice {
                        embedder: Arc::new(HashEmbedder::new(self.dim.unwrap_or(384))),
                        notice: Some(format!(
                            "notice: all-MiniLM-L6-v2 did not load ({e}); using the built-in {HASH_MODEL} embedder"
                        )),
                    }),
                    Err(e) => Err(e),
                }
            }
            Provider::Precomputed => {
                let model = self.model.clone().ok_or(EngineError::InvalidArgument {
                    field: "EMBEDDING_MODEL",
                    value: String::new(),
                    expected: "the model name of the vectors the service sends (EMBEDDING_PROVIDER=precomputed)",
                })?;
                let dim = self.dim.ok_or(EngineError::InvalidArgument {
                    field: "EMBEDDING_DIM",
                    value: String::new(),
                    expected: "the length of the vectors the service sends: the embedder is precomputed (EMBEDDING_PROVIDER=precomputed, or an EMBEDDING_MODEL other than agrag-hash-v2 and all-MiniLM-L6-v2), so its dimension must be given",
                })?;
                Ok(EmbedderChoice {
                    embedder: Arc::new(PrecomputedEmbedder::new(model, dim)),
                    notice: None,
                })
            }
        }
    }
}

/// Whether `dir` holds every file of [`MINILM_FILES`] (it may still fail to load).
pub fn minilm_folder_present(dir: &std::path::Path) -> bool {
    MINILM_FILES.iter().all(|f| dir.join(f).is_file())
}

/// Loads all-MiniLM-L6-v2 from `dir`, treating long texts by `long_texts`.
///
/// # Errors
/// [`EngineError::ModelMissing`] when the folder lacks a model file; [`EngineError::Embedder`]
/// when this build has no `minilm` feature or the model does not load.
pub fn load_minilm(dir: &std::path::Path, long_texts: LongTexts) -> Result<Arc<dyn Embedder>> {
    #[cfg(feature = "minilm")]
    {
        Ok(Arc::new(
            super::MiniLmEmbedder::load(dir)?.with_long_texts(long_texts),
        ))
    }
    #[cfg(not(feature = "minilm"))]
    {
        let _ = (dir, long_texts);
        Err(EngineError::embedder(
            MINILM_MODEL.to_owned(),
            "this build has no MiniLM support (cargo feature `minilm` is off)",
        ))
    }
}

/// The embedder of a service that sends its own query vectors (`EMBEDDING_PROVIDER=precomputed`).
///
/// Its identity (model name and dimension from the settings, empty fingerprint: unknown) is
/// checked against the run like any other; it embeds nothing, so a text query answers `failed`
/// saying that queries must come as vectors.
#[derive(Debug, Clone)]
pub struct PrecomputedEmbedder {
    identity: EmbedderIdentity,
}

impl PrecomputedEmbedder {
    /// The identity of vectors of `model` with `dim` components.
    pub fn new(model: impl Into<String>, dim: usize) -> Self {
        Self {
            identity: EmbedderIdentity {
                model: model.into(),
                dim,
                normalized: false,
                fingerprint: String::new(),
            },
        }
    }
}

impl Embedder for PrecomputedEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Err(EngineError::embedder(
            self.identity.model.clone(),
            "EMBEDDING_PROVIDER=precomputed: this service sends its own vectors, so a text query cannot be embedded here; send the query as a vector of that model",
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<EmbedderSettings> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        EmbedderSettings::from_lookup(|k| map.get(k).cloned())
    }

    const NOWHERE: &str = "/nonexistent/agrag/model";

    #[test]
    fn default_path_follows_xdg_then_home() {
        let s = settings(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")]).unwrap();
        assert_eq!(
            s.model_path,
            PathBuf::from("/c/agrag/models/all-MiniLM-L6-v2")
        );
        let s = settings(&[("HOME", "/h")]).unwrap();
        assert_eq!(
            s.model_path,
            PathBuf::from("/h/.cache/agrag/models/all-MiniLM-L6-v2")
        );
        let s = settings(&[("HOME", "/h"), ("EMBEDDING_MODEL_PATH", "/m")]).unwrap();
        assert_eq!(s.model_path, PathBuf::from("/m"));
        assert!(!s.is_explicit());
        assert_eq!(s.long_texts, LongTexts::MeanOfWindows);
        let s = settings(&[("EMBEDDING_LONG_TEXTS", "truncate")]).unwrap();
        assert_eq!(s.long_texts, LongTexts::Truncate);
    }

    #[test]
    fn unset_provider_without_model_falls_back_with_a_notice() {
        let s = settings(&[("EMBEDDING_MODEL_PATH", NOWHERE)]).unwrap();
        assert_eq!(s.resolved_provider(), Provider::Hash);
        let c = s.build().unwrap();
        assert_eq!(c.embedder.identity().model, HASH_MODEL);
        let notice = c.notice.unwrap();
        assert!(
            notice.contains(NOWHERE) && !notice.contains('\n'),
            "{notice}"
        );
    }

    #[test]
    fn explicit_minilm_without_model_is_an_error_naming_the_folder() {
        let s = settings(&[
            ("EMBEDDING_PROVIDER", "minilm"),
            ("EMBEDDING_MODEL_PATH", NOWHERE),
        ])
        .unwrap();
        let e = s.build().unwrap_err().to_string();
        assert!(e.contains(NOWHERE), "{e}");
    }

    #[test]
    fn explicit_hash_has_no_notice_and_takes_the_dimension() {
        let s = settings(&[("EMBEDDING_PROVIDER", "hash"), ("EMBEDDING_DIM", "64")]).unwrap();
        let c = s.build().unwrap();
        assert!(c.notice.is_none());
        assert_eq!(c.embedder.identity().dim, 64);
        assert!(s.is_explicit());
    }

    #[test]
    fn contradictions_are_refused_naming_the_variable() {
        let field = |vars: &[(&str, &str)]| match settings(vars).and_then(|s| s.build()) {
            Err(EngineError::InvalidArgument { field, .. }) => field,
            other => panic!("expected InvalidArgument, got {other:?}"),
        };
        assert_eq!(
            field(&[("EMBEDDING_PROVIDER", "bert")]),
            "EMBEDDING_PROVIDER"
        );
        assert_eq!(field(&[("EMBEDDING_DIM", "0")]), "EMBEDDING_DIM");
        assert_eq!(field(&[("EMBEDDING_DIM", "x")]), "EMBEDDING_DIM");
        assert_eq!(field(&[("EMBEDDING_DIM", "65537")]), "EMBEDDING_DIM");
        assert!(settings(&[("EMBEDDING_PROVIDER", "hash"), ("EMBEDDING_DIM", "65536")]).is_ok());
        assert_eq!(
            field(&[("EMBEDDING_PROVIDER", "minilm"), ("EMBEDDING_DIM", "512")]),
            "EMBEDDING_DIM"
        );
        assert_eq!(
            field(&[("EMBEDDING_PROVIDER", "hash"), ("EMBEDDING_MODEL", "bge")]),
            "EMBEDDING_MODEL"
        );
        assert_eq!(
            field(&[
                ("EMBEDDING_PROVIDER", "precomputed"),
                ("EMBEDDING_DIM", "8")
            ]),
            "EMBEDDING_MODEL"
        );
        assert_eq!(
            field(&[
                ("EMBEDDING_PROVIDER", "precomputed"),
                ("EMBEDDING_MODEL", "m")
            ]),
            "EMBEDDING_DIM"
        );
        assert_eq!(
            field(&[("EMBEDDING_LONG_TEXTS", "summarize")]),
            "EMBEDDING_LONG_TEXTS"
        );
    }

    #[test]
    fn model_name_picks_the_provider() {
        let p = |m: &str| {
            settings(&[("EMBEDDING_MODEL", m)])
                .unwrap()
                .resolved_provider()
        };
        assert_eq!(p("agrag-hash-v2"), Provider::Hash);
        assert_eq!(p("all-MiniLM-L6-v2"), Provider::MiniLm);
        assert_eq!(p(MINILM_MODEL), Provider::MiniLm);
        assert_eq!(p("text-embedding-3-small"), Provider::Precomputed);
    }

    #[test]
    fn precomputed_refuses_text_saying_why() {
        let s = settings(&[
            ("EMBEDDING_PROVIDER", "precomputed"),
            ("EMBEDDING_MODEL", "text-embedding-3-small"),
            ("EMBEDDING_DIM", "1536"),
        ])
        .unwrap();
        let e = s.build().unwrap().embedder;
        assert_eq!(
            (e.identity().model.as_str(), e.identity().dim),
            ("text-embedding-3-small", 1536)
        );
        let err = e.embed("question").unwrap_err().to_string();
        assert!(
            err.contains("precomputed") && err.contains("vector"),
            "{err}"
        );
    }
}
