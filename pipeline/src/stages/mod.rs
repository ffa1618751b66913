//! The nightly job as a chain of typed stages. Each stage is a function in its own module: it
//! takes what the stages before it produced, returns its own output with a statistics struct,
//! and times itself as a phase (a progress bar on a terminal, a log line elsewhere). The run
//! summary and the manifest's `stats` are built from those statistics ([`crate::run`]).
//!
//! ```text
//!  RunConfig, Sources
//!     │ ingest::ingest                      (documents, or a GraphRAG index)
//!     ▼
//!  Ingested ──visibility::PassageTable::new──► PassageTable   (rows, deleted/hidden flags)
//!     │ link::link                          (dictionary linking, or the index's mentions)
//!     ▼
//!  LinkOutput { Vocabulary, Linked }
//!     │ graph::graph                        (co-occurrence, or the index's relationships)
//!     ▼
//!  EntityGraph (CSR + mentions)
//!     │ detect::detect                      (hierarchical Leiden, or a membership table)
//!     ▼
//!  DetectOutput { Detected, entity degrees }
//!     │ report::report                      (one extractive report per community)
//!     ▼
//!  Reported
//!     │ embed::embed                        (community, passage and document vectors)
//!     ▼
//!  Embedded
//!     │ publish::publish                    (tables through engine::format, then LATEST)
//!     ▼
//!  RunSummary
//! ```
//!
//! Beside the chain, from the end of ingest to publish, [`text_index`] builds the run's
//! full-text index from the corpus on a thread of its own.
//!
//! A stage consumes what only it needs (the mentions and their occurrence counts end in
//! `graph`, the CSR in `detect`, the report scratch in `report`, the passage vectors in
//! `embed`), so memory held past a stage is what later stages read.

pub(crate) mod detect;
pub(crate) mod embed;
pub(crate) mod graph;
pub(crate) mod ingest;
pub(crate) mod link;
mod phases;
pub(crate) mod publish;
pub(crate) mod report;
pub(crate) mod text_index;
pub(crate) mod visibility;

pub(crate) use phases::Phases;
