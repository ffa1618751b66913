//! Queries over one [`View`](crate::View): theme search and evidence lookup.

pub mod concept;
pub mod evidence;
pub mod theme;

use serde::Serialize;

/// Where a passage sits in its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Location {
    /// 0-based passage index within the document.
    pub position: u32,
}

/// Which documents a query may read. The default is every document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every document of the run.
    #[default]
    All,
    /// Only these document keys (unknown keys match nothing).
    Documents(Vec<String>),
}
