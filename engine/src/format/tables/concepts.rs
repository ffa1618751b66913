//! `concepts.parquet`: the vocabulary, one row per concept, sorted by `concept_id`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, StringArray};
use arrow_schema::{Schema, SchemaRef};

use super::{RunLookups, chunked, list_of_strings, list_utf8, strings, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::Strings;
use crate::format::mapped::concepts::ConceptColumns;
use crate::format::mapped::terms::TermIndex;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "concepts.parquet";
/// Concept id (string), e.g. MeSH descriptor `D009203`.
pub const CONCEPT_ID: &str = "concept_id";
/// Preferred term (string).
pub const PREFERRED_TERM: &str = "preferred_term";
/// Entry terms (list of strings, possibly empty).
pub const SYNONYMS: &str = "synonyms";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(CONCEPT_ID),
        utf8(PREFERRED_TERM),
        list_utf8(SYNONYMS),
    ]))
}

/// One vocabulary concept.
#[derive(Debug, Clone, PartialEq)]
pub struct ConceptRecord {
    /// Concept id.
    pub concept_id: String,
    /// Preferred term.
    pub preferred_term: String,
    /// Entry terms.
    pub synonyms: Vec<String>,
}

/// Writes the concepts `concepts` (indices of `l`, already sorted by id).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups, concepts: &[u32]) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[CONCEPT_ID],
        chunked(&schema, concepts.len(), |range| {
            let cs = &concepts[range];
            Ok(vec![
                strings(cs.iter().map(|&c| l.concept_id(c))),
                strings(cs.iter().map(|&c| l.preferred_term(c))),
                list_of_strings(cs.iter().map(|&c| l.synonyms(c).iter().map(String::as_str))),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run without `concepts.arrow` and `terms.arrow`):
/// the concept rows, and the term index built from their preferred terms and synonyms.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file; as [`read_parquet`] and
/// [`ConceptColumns::from_parquet`].
pub(crate) fn read(dir: &Path, run_id: Option<&str>) -> Result<(ConceptColumns, TermIndex)> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let ids = column_no_nulls::<StringArray>(&b, CONCEPT_ID, &path)?;
    let preferred = column_no_nulls::<StringArray>(&b, PREFERRED_TERM, &path)?;
    let syn = b
        .column_by_name(SYNONYMS)
        .ok_or_else(|| EngineError::corrupt(&path, "missing column \"synonyms\""))?
        .as_list::<i32>();
    let values = syn.values().as_string::<i32>();
    let offsets = syn.value_offsets();
    let synonyms: Vec<Vec<&str>> = offsets
        .windows(2)
        .map(|w| {
            (w[0] as usize..w[1] as usize)
                .map(|j| values.value(j))
                .collect()
        })
        .collect();
    let terms = TermIndex::build(ids.len(), |c| {
        (preferred.value(c as usize), synonyms[c as usize].as_slice())
    });
    let concepts = ConceptColumns::from_parquet(
        Strings::from_utf8_array(ids),
        Strings::from_utf8_array(preferred),
        &path,
    )?;
    Ok((concepts, terms))
}

/// The row of concept `id` in `concepts`, which row `row` of the table at `path` names.
///
/// # Errors
/// [`EngineError::Corrupt`] naming `path` and `row` when the run's vocabulary lacks `id`.
pub(crate) fn row_of(concepts: &ConceptColumns, id: &str, path: &Path, row: usize) -> Result<u32> {
    concepts.row(id).ok_or_else(|| {
        EngineError::corrupt(
            path,
            format!("row {row}: concept {id:?} is not in concepts.parquet"),
        )
    })
}
