//! agrag-pipeline: the nightly batch job that turns documents and a vocabulary into a published
//! snapshot of themes.
//!
//! ```text
//! documents.{jsonl,parquet,csv} ─► ingest ─► link (vocabulary) ─► graph (co-occurrence, polars)
//!                                                                         │
//!   LATEST ◄─ publish ◄─ embed ◄─ report ◄─ detect (hierarchical Leiden) or --membership table
//! ```
//!
//! [`run::run`] is the whole job; [`detect`] is detection on a graph the user brings;
//! [`membership`] takes communities computed elsewhere in place of detection;
//! [`graph::Graph::from_petgraph`] takes a `petgraph` graph.

pub mod detect;
pub mod embed;
pub mod error;
pub mod graph;
pub mod ingest;
pub mod leiden;
pub mod lineage;
pub mod link;
pub mod lock;
pub mod membership;
pub mod publish;
pub mod report;
pub mod run;
mod stages;

pub use error::{PipelineError, Result};
