//! agrag-engine: answers theme and concept questions over an agrag snapshot.
//!
//! ```text
//! <root>/LATEST ──► runs/<run_id>/ (manifest.json, *.parquet, report_embeddings.arrow)
//!                        │  Engine::open (validate manifest, map tables)
//!                        ▼
//!                   Snapshot ──┬── search_themes   (query → report embeddings → themes + passages)
//!                              ├── fetch_evidence  (passage text by evidence id)
//!                              └── live visibility (visibility.sqlite, outside runs/)
//!
//! tools::ToolBox (settings: scope, MCP_MAX_HITS, EMBEDDING_*) ──► agent tools, mcp (feature `mcp`)
//! run_report (manifest + a few columns of the tables) ──► `agrag-engine report`: JSON, HTML page
//! ```
//!
//! [`format`](mod@format) owns the on-disk contract; the pipeline writes through it.

pub mod embed;
mod engine;
pub mod error;
pub mod format;
pub mod ivf;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod query;
mod retire;
pub mod run_report;
pub mod snapshot;
pub(crate) mod store;
pub(crate) mod text;
pub mod tools;
mod view;
pub mod visibility;

/// `println!` for the command-line tools: ends the process quietly with exit 0 when standard
/// output is a closed pipe (`agrag-… | head`), and with exit 1 and a message on any other write
/// error, instead of panicking as `println!` does. The binaries import it as `println`.
#[macro_export]
macro_rules! stdout_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            eprintln!("error: cannot write to standard output: {e}");
            std::process::exit(1);
        }
    }};
}

pub use engine::{Engine, EngineConfig, QueryInput, RefusedRun, ThemeRequest, Watcher};
pub use error::{EngineError, Result};
pub use query::concept::{ConceptAnswer, ConceptHit, ConceptRequest, ConceptSelector, Direction};
pub use query::evidence::{Evidence, EvidenceStatus};
pub use query::theme::{Theme, ThemeAnswer, ThemePassage};
pub use query::{Location, Scope};
pub use snapshot::{
    CommunityId, CommunityRow, ConceptRow, DocumentRow, EntityId, PassageRow, Rows, Snapshot,
};
pub use view::View;
