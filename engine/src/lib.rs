//! agrag-engine: answers theme and concept questions over an agrag snapshot.
//!
//! ```text
//! <root>/LATEST ──► runs/<run_id>/ (manifest.json, *.parquet, report_embeddings.arrow)
//!                        │  Engine::open (validate manifest, map tables)
//!                        ▼
//!                   Snapshot ──┬── search_themes   (query → report embeddings → themes + passages)
//!                              ├── fetch_evidence  (passage text by evidence id)
//!                              └── live visibility (visibility.sqlite, outside runs/)
//! ```
//!
//! [`format`] owns the on-disk contract; the pipeline writes through it.

pub mod embed;
mod engine;
pub mod error;
pub mod format;
pub mod query;
pub mod snapshot;
pub mod store;
pub mod text;
mod view;
pub mod visibility;

pub use engine::{Engine, EngineConfig, QueryInput, ThemeRequest};
pub use error::{EngineError, Result};
pub use query::Scope;
pub use query::concept::{ConceptRequest, ConceptSelector, Direction};
pub use view::View;
