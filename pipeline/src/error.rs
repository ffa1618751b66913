//! The pipeline's error type.

use std::path::PathBuf;

/// Everything that can go wrong in a pipeline run or a detection run.
///
/// Every variant names the offending value and where it was found (file, line, field, edge), so
/// that a user can fix the input without reading our code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// An input file could not be opened or read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An output file could not be created or written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line or record of an input file is malformed.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number (or record number for non-line formats).
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A row of an input table (documents, a membership table) is invalid.
    #[error("{path}: row {row} (counting from 0): {reason}")]
    Row {
        /// The file.
        path: PathBuf,
        /// 0-based row, as polars and pandas number them.
        row: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// An input file is not a table of the format it was read as (a truncated Parquet file, a
    /// CSV file with unbalanced quotes).
    #[error("{path}: not a readable {format} file: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The format it was read as (`Parquet`, `CSV`).
        format: &'static str,
        /// The reader's message.
        reason: String,
    },
    /// A column of an input table is missing or of the wrong type.
    #[error("{path}: column {column:?}: {reason}")]
    Column {
        /// The file.
        path: PathBuf,
        /// The column as the table names it.
        column: String,
        /// What is wrong (missing, or its type and the type expected).
        reason: String,
    },
    /// A membership table computed elsewhere breaks a rule of a hierarchy (an entity twice at
    /// a level, a parent that disagrees across levels, an empty community, a gap in levels).
    #[error("{path}: {reason}")]
    Membership {
        /// The membership file.
        path: PathBuf,
        /// The rule broken, naming the entity or community.
        reason: String,
    },
    /// A required input holds nothing to work on (no documents, no concepts).
    #[error("{path}: {reason}")]
    EmptyInput {
        /// The file or folder.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// An input file is in a text encoding other than UTF-8 (UTF-16 or UTF-32).
    #[error(
        "{path}: the file is {encoding}; documents must be UTF-8 (convert it, e.g. `iconv -f {} -t UTF-8`)",
        .encoding.split(' ').next().unwrap_or_default()
    )]
    UnsupportedEncoding {
        /// The file.
        path: PathBuf,
        /// The encoding its first bytes show.
        encoding: &'static str,
    },
    /// The run would publish a snapshot with nothing to search: no entity, no community or no
    /// document linked to a concept (a vocabulary whose terms the documents never use, say).
    /// Publishing it would replace a good run; `RunConfig::allow_empty` (`--allow-empty`)
    /// publishes it anyway.
    #[error(
        "the run would publish {entities} entities, {communities} communities and {linked_documents} of {documents} documents linked to a concept: check the vocabulary {vocabulary} against the documents {documents_path} (pass --allow-empty to publish such a run anyway)"
    )]
    NothingToPublish {
        /// Entities (graph nodes) the run found.
        entities: usize,
        /// Communities of all levels.
        communities: usize,
        /// Documents with at least one linked concept.
        linked_documents: usize,
        /// Documents read.
        documents: usize,
        /// The vocabulary folder.
        vocabulary: PathBuf,
        /// The documents file.
        documents_path: PathBuf,
    },
    /// A key that must be unique appears twice.
    #[error("{path}:{line}: duplicate {field} {value:?} (first seen on line {first_line})")]
    DuplicateKey {
        /// The file.
        path: PathBuf,
        /// 1-based line of the second occurrence.
        line: u64,
        /// 1-based line of the first occurrence.
        first_line: u64,
        /// The key field.
        field: &'static str,
        /// The duplicated value.
        value: String,
    },
    /// An edge weight is NaN, infinite or negative.
    #[error(
        "edge {index} ({source_node} -- {target_node}): weight {weight} is not a finite non-negative number"
    )]
    InvalidWeight {
        /// 0-based index of the edge in its input.
        index: usize,
        /// One end.
        source_node: u64,
        /// The other end.
        target_node: u64,
        /// The weight found.
        weight: f64,
    },
    /// An edge names a node outside `0..num_nodes`.
    #[error("edge {index}: node {node} is out of range (the graph has {num_nodes} nodes)")]
    NodeOutOfRange {
        /// 0-based index of the edge in its input.
        index: usize,
        /// The node id found.
        node: u64,
        /// Number of nodes of the graph.
        num_nodes: usize,
    },
    /// Another run holds the root's run lock (one run at a time per root).
    #[error(
        "another run is in progress on {root} (process {holder}, lock {lock}): wait for it to end"
    )]
    RunInProgress {
        /// The snapshot root.
        root: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The holder's process id as it wrote it in the lock file (`unknown` when unreadable).
        holder: String,
    },
    /// A user parameter is outside its allowed range.
    #[error("invalid {field} = {value}: expected {expected}")]
    InvalidConfig {
        /// The parameter name as the user wrote it.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// Writing or publishing the snapshot, or another engine-side operation, failed.
    #[error(transparent)]
    Engine(#[from] agrag_engine::EngineError),
    /// A broken internal invariant: a bug in agrag, never bad input.
    #[error("internal error (a bug in agrag, please report it): {0}")]
    Internal(String),
    /// A library call failed where no input is at fault (building the term automaton or a
    /// thread pool, a polars query over the pipeline's own frame, serializing the summary):
    /// a bug or the machine, with the library's error as the source.
    #[error("internal error (a bug in agrag, please report it): {what}")]
    Library {
        /// What was being done.
        what: &'static str,
        /// The library's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl PipelineError {
    /// A [`PipelineError::Library`] for `what`, keeping `source`.
    pub fn library(
        what: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Library {
            what,
            source: Box::new(source),
        }
    }
}

/// `Result` with [`PipelineError`] as the default error.
pub type Result<T, E = PipelineError> = std::result::Result<T, E>;
