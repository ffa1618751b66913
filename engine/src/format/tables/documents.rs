//! `documents.parquet`: one row per document, sorted by `document_key`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{BooleanArray, Int32Array, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{DocumentFields, RunLookups, chunked, strings, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::documents::DocumentColumns;
use crate::format::mapped::{Booleans, Primitives, Strings};
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "documents.parquet";
/// Unique document key (string), e.g. `pmid:21645374`.
pub const DOCUMENT_KEY: &str = "document_key";
/// Title (string, may be empty).
pub const TITLE: &str = "title";
/// Publication year (int32, null when unknown).
pub const YEAR: &str = "year";
/// Number of passages of the document (uint32).
pub const NUM_PASSAGES: &str = "num_passages";
/// Whether linking found at least one concept in the document (bool).
pub const LINKED: &str = "linked";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(DOCUMENT_KEY),
        utf8(TITLE),
        Field::new(YEAR, DataType::Int32, true),
        u32f(NUM_PASSAGES),
        Field::new(LINKED, DataType::Boolean, false),
    ]))
}

/// One document. Rows must be sorted by `key` (unique).
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRecord {
    /// Unique key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Publication year.
    pub year: Option<i32>,
    /// Number of passages.
    pub num_passages: u32,
    /// At least one concept in the `concept` node field.
    pub linked: bool,
}

/// Writes the documents of `l`, in their order (ascending keys).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[DOCUMENT_KEY],
        chunked(&schema, l.num_documents(), |range| {
            let docs: Vec<DocumentFields<'_>> = range.map(|d| l.document(d as u32)).collect();
            Ok(vec![
                strings(docs.iter().map(|d| d.key)),
                strings(docs.iter().map(|d| d.title)),
                Arc::new(Int32Array::from_iter(docs.iter().map(|d| d.year))),
                u32s(docs.iter().map(|d| d.num_passages)),
                Arc::new(BooleanArray::from_iter(docs.iter().map(|d| Some(d.linked)))),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run of format 1, without `documents.arrow`) into
/// the columns a run of format 2 maps, checking that the keys are unique and ascending. Each
/// document's first passage row is not in this table: `first_passage` is left empty, for the
/// caller to fill from [`super::passages::read`].
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file (and the row, for keys out of order); as
/// [`read_parquet`].
pub(crate) fn read(dir: &Path, run_id: Option<&str>) -> Result<DocumentColumns> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let keys = Strings::from_utf8_array(column_no_nulls::<StringArray>(&b, DOCUMENT_KEY, &path)?);
    let titles = Strings::from_utf8_array(column_no_nulls::<StringArray>(&b, TITLE, &path)?);
    let linked = Booleans::from_array(column_no_nulls::<BooleanArray>(&b, LINKED, &path)?.clone());
    let years = Primitives::from_array(
        b.column_by_name(YEAR)
            .ok_or_else(|| EngineError::corrupt(&path, "missing column \"year\""))?
            .as_primitive::<Int32Type>()
            .clone(),
    );
    let nd = keys.len();
    if let Some(row) = (1..nd).find(|&i| keys.get(i - 1) >= keys.get(i)) {
        return Err(EngineError::corrupt(
            &path,
            format!(
                "row {row}: document_key {:?} is not after {:?} (keys are unique and ascending)",
                keys.get(row),
                keys.get(row - 1)
            ),
        ));
    }
    Ok(DocumentColumns {
        keys,
        titles,
        years,
        linked,
        first_passage: Primitives::from_vec(Vec::new()),
    })
}
