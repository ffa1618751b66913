//! agrag-pipeline: the nightly batch job that turns documents and a vocabulary into a published
//! snapshot of themes.
//!
//! ```text
//! documents.jsonl ─► ingest ─► link (vocabulary, Aho-Corasick) ─► graph (co-occurrence, polars)
//!                                                                     │
//!   LATEST ◄─ publish (engine::format) ◄─ embed ◄─ report ◄─ detect (hierarchical Leiden, Rayon)
//! ```
//!
//! [`run::run`] is the whole job; [`detect`] is detection on a graph the user brings.

pub mod detect;
pub mod error;
pub mod graph;
pub mod ingest;
pub mod leiden;
pub mod link;
pub mod publish;
pub mod report;
pub mod run;

pub use error::{PipelineError, Result};
