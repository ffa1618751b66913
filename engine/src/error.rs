//! The engine's error type.

use std::path::PathBuf;
use std::sync::Arc;

/// A library's error kept as the cause of an [`EngineError`] (a Parquet decoder's, tantivy's,
/// a tokenizer's): shared, so that an error can be cloned into a refused run's record and
/// still hand on its cause as [`source`](std::error::Error::source).
pub type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong while writing, opening or querying a snapshot.
///
/// Variants carry the offending value and where it was found (`path`, `run_id`, `column`,
/// `field`), so a message is enough to find and fix the cause.
///
/// Cloning is cheap (causes are shared), so an engine can keep the error that refused a run
/// ([`RefusedRun`](crate::RefusedRun)) and still return it to the caller, causes included.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A file or folder could not be read or written.
    #[error("{path}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: Arc<std::io::Error>,
    },
    /// A snapshot file exists but its content is not what the manifest or the format promises
    /// (truncated, bit-flipped, wrong checksum, missing column, wrong type).
    #[error("corrupt snapshot file {path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What does not match.
        reason: String,
        /// The decoder's or parser's error that found it, when one did.
        #[source]
        source: Option<Cause>,
    },
    /// The run was written by a format version this engine does not know.
    #[error("unsupported snapshot format_version {found} (this engine reads {supported:?})")]
    UnsupportedFormat {
        /// The version found in the manifest.
        found: u32,
        /// The versions this build reads.
        supported: &'static [u32],
    },
    /// There is no published run to serve (no `LATEST`, or it names nothing).
    #[error("no published run under {root}: {reason}")]
    NotReady {
        /// The snapshot root.
        root: PathBuf,
        /// Why.
        reason: String,
    },
    /// A caller argument is outside its allowed range.
    #[error("invalid {field} = {value}: expected {expected}")]
    InvalidArgument {
        /// The argument name as the caller wrote it.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// The query was embedded in another vector space than the run's report embeddings.
    #[error(
        "embedder mismatch: the run's reports were embedded by {run_model} (dim {run_dim}), the query by {query_model} (dim {query_dim})"
    )]
    EmbedderMismatch {
        /// Model named in the run's manifest.
        run_model: String,
        /// Dimension named in the run's manifest.
        run_dim: usize,
        /// Model of the query vector.
        query_model: String,
        /// Dimension of the query vector.
        query_dim: usize,
    },
    /// Query and run use the same model and dimension but different weights (fingerprints).
    #[error(
        "embedder mismatch: the run's reports were embedded by {model} with weights {run_fingerprint}, the query embedder has weights {query_fingerprint}"
    )]
    EmbedderWeightsMismatch {
        /// The model name (same on both sides).
        model: String,
        /// Fingerprint named in the run's manifest.
        run_fingerprint: String,
        /// Fingerprint of the query embedder.
        query_fingerprint: String,
    },
    /// A model's files are not where they were looked for.
    #[error(
        "no {model} model at {path}: run `bash scripts/fetch-model.sh` or set EMBEDDING_MODEL_PATH to the model folder"
    )]
    ModelMissing {
        /// The model name.
        model: String,
        /// The folder that was searched.
        path: PathBuf,
    },
    /// The run's embeddings were made by a model this engine cannot embed queries with: one
    /// this build does not know (no source), or one whose files do not load here (the load
    /// error is the source).
    #[error(
        "the run's reports were embedded by {model} (dim {dim}), which {}",
        if source.is_some() { "cannot be loaded here" } else { "this engine cannot run; configure that embedder or pass a query vector" }
    )]
    EmbedderUnavailable {
        /// Model named in the run's manifest.
        model: String,
        /// Dimension named in the run's manifest.
        dim: usize,
        /// Why the model did not load, when it is one this build knows.
        #[source]
        source: Option<Box<EngineError>>,
    },
    /// The embedder could not be built or failed on an input.
    #[error("embedder {model}: {reason}")]
    Embedder {
        /// The model name.
        model: String,
        /// What went wrong.
        reason: String,
        /// The tokenizer's or runtime's error, when one caused it.
        #[source]
        source: Option<Cause>,
    },
    /// A Parquet, Arrow or full-text index operation failed on a file.
    #[error("{path}: {what} failed")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What was being done (`Parquet write`, `Arrow IPC write`, `text index build`).
        what: &'static str,
        /// The library's error.
        source: Cause,
    },
    /// The visibility store failed.
    #[error("visibility store {path}")]
    Visibility {
        /// The SQLite file.
        path: PathBuf,
        /// SQLite's error.
        source: Arc<rusqlite::Error>,
    },
    /// A run asked for by id is not under the root's `runs/` folder.
    #[error("no run {run_id} at {path} (runs under this root: {known})")]
    UnknownRun {
        /// The run folder that was looked for (`<root>/runs/<run_id>`).
        path: PathBuf,
        /// The run id asked for.
        run_id: String,
        /// The newest run ids that are there (oldest first), or `none`.
        known: String,
    },
    /// An output file (such as a run report page) could not be written.
    #[error("cannot write {path}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: Arc<std::io::Error>,
    },
    /// A broken internal invariant: a bug in agrag, never bad input.
    #[error("internal error (a bug in agrag, please report it): {0}")]
    Internal(String),
}

/// `Result` with [`EngineError`] as the default error.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

impl EngineError {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// A [`EngineError::Parquet`] for `path`: `what` failed with the library error `source`.
    pub fn parquet(
        path: impl Into<PathBuf>,
        what: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Parquet {
            path: path.into(),
            what,
            source: Arc::new(source),
        }
    }

    /// A [`EngineError::Visibility`] for the store at `path`.
    pub fn visibility(path: impl Into<PathBuf>, source: rusqlite::Error) -> Self {
        Self::Visibility {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// A [`EngineError::Embedder`] for `model` without an underlying error.
    pub fn embedder(model: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Embedder {
            model: model.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// The message followed by each cause's (`visibility store …/visibility.sqlite: database
    /// is locked`), for the places that must hand an error on as text (an answer's failure,
    /// an MCP tool result, a refused run's reason); the error itself keeps its causes as
    /// [`source`](std::error::Error::source).
    pub fn with_causes(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }

    /// A [`EngineError::Corrupt`] for `path`.
    pub fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// A [`EngineError::Corrupt`] for `path` found by a decoder or parser: `reason` says what
    /// was being read, `source` is the library's error.
    pub fn corrupt_because(
        path: impl Into<PathBuf>,
        reason: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.into(),
            source: Some(Arc::new(source)),
        }
    }
}
