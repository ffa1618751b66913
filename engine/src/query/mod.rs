//! Queries over one [`View`](crate::View): theme search, concept search and evidence
//! lookup, each request type beside its query.

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

/// The question of a theme search: text to embed, or a vector embedded by the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryInput {
    /// Natural-language text, embedded by the engine.
    Text(String),
    /// A query vector and the model that made it (checked against the run's embedder).
    Vector {
        /// Model name of the vector.
        model: String,
        /// The vector (length must be the run's dimension).
        vector: Vec<f32>,
    },
}
