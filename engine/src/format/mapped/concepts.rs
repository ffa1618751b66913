//! `concepts.arrow`: one row per vocabulary concept, in `concepts.parquet` order (ascending
//! `concept_id` bytes): its id and preferred term. A concept is named everywhere by this row
//! (`concept` rows of [`super::terms`], postings, hierarchy), and an id is found by binary
//! search over the mapped sorted ids.

use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Strings, Table, binary, write_file};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;

/// File name inside the run folder.
pub const FILE: &str = "concepts.arrow";
/// Concept id (UTF-8 as `Binary`), strictly ascending by bytes.
pub const CONCEPT_ID: &str = "concept_id";
/// Preferred term (UTF-8 as `Binary`).
pub const PREFERRED_TERM: &str = "preferred_term";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(CONCEPT_ID, DataType::Binary, false),
        Field::new(PREFERRED_TERM, DataType::Binary, false),
    ]))
}

/// The concepts' columns, mapped (format 2) or read from `concepts.parquet` (format 1).
#[derive(Debug, Clone)]
pub struct ConceptColumns {
    /// Concept ids, strictly ascending by bytes.
    pub ids: Strings,
    /// Preferred terms, parallel to `ids`.
    pub preferred_terms: Strings,
}

impl ConceptColumns {
    /// Over in-memory columns read from Parquet: checks that the ids ascend strictly (what
    /// lookups by binary search rely on).
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] naming `path` and the first row out of order or repeated.
    pub(crate) fn from_parquet(
        ids: Strings,
        preferred_terms: Strings,
        path: &Path,
    ) -> Result<Self> {
        for r in 1..ids.len() {
            if ids.get(r - 1) >= ids.get(r) {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "row {r}: concept_id {:?} does not ascend strictly after {:?}",
                        ids.get(r),
                        ids.get(r - 1)
                    ),
                ));
            }
        }
        Ok(Self {
            ids,
            preferred_terms,
        })
    }

    /// Number of concepts.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no concepts.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The row of concept `id` (binary search); `None` when the vocabulary lacks it.
    pub fn row(&self, id: &str) -> Option<u32> {
        self.ids.find_sorted(id)
    }
}

/// Writes the file: `rows` concepts, `(id, preferred term)` of row `r` given by `concept(r)`,
/// rows already in ascending id order.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write<'a>(
    w: &RunWriter,
    rows: usize,
    concept: impl Fn(usize) -> (&'a str, &'a str),
) -> Result<()> {
    write_file(w, FILE, &schema(), rows, |range| {
        Ok(vec![
            binary(range.clone().map(|r| concept(r).0)),
            binary(range.map(|r| concept(r).1)),
        ])
    })
}

/// Maps the file of the run in `dir`, which has `rows` concepts.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<ConceptColumns> {
    let t = Table::open(&dir.join(FILE), &schema(), rows)?;
    Ok(ConceptColumns {
        ids: t.strings(CONCEPT_ID)?,
        preferred_terms: t.strings(PREFERRED_TERM)?,
    })
}
