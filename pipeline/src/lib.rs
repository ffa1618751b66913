//! agrag-pipeline: the nightly batch job that turns documents and a vocabulary into a published
//! snapshot of themes.

pub mod error;

pub use error::{PipelineError, Result};
pub mod detect;
pub mod graph;
pub mod leiden;
