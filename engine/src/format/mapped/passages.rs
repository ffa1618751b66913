//! `passages.arrow`: one row per passage, in `passages.parquet` order (by document, then
//! position). A passage's id is not stored: it is made from its document's key and its
//! position by [`passage_id`](crate::format::passage_id), the one rule.

use std::path::Path;
use std::sync::Arc;

use arrow_array::UInt32Array;
use arrow_array::types::UInt32Type;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Primitives, Strings, Table, binary, write_file};
use crate::error::Result;
use crate::format::RunWriter;
use crate::format::tables::RunLookups;

/// File name inside the run folder.
pub const FILE: &str = "passages.arrow";
/// Row of the passage's document in `documents.arrow` (uint32), ascending.
pub const DOCUMENT: &str = "document";
/// Position of the passage in its document (uint32), ascending within a document.
pub const POSITION: &str = "position";
/// Text (UTF-8 as `Binary`).
pub const TEXT: &str = "text";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(DOCUMENT, DataType::UInt32, false),
        Field::new(POSITION, DataType::UInt32, false),
        Field::new(TEXT, DataType::Binary, false),
    ]))
}

/// The passages' columns, mapped (format 2) or read from Parquet (format 1).
#[derive(Debug, Clone)]
pub struct PassageColumns {
    /// Document row of each passage.
    pub document: Primitives<UInt32Type>,
    /// Position of each passage in its document.
    pub position: Primitives<UInt32Type>,
    /// Text of each passage.
    pub text: Strings,
}

/// Writes the file for the passages of `l`.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups) -> Result<()> {
    let schema = schema();
    write_file(w, FILE, &schema, l.num_passages(), |range| {
        let ps: Vec<_> = range.map(|p| l.passage(p as u32)).collect();
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(ps.iter().map(|p| p.0))),
            Arc::new(UInt32Array::from_iter_values(ps.iter().map(|p| p.1))),
            binary(ps.iter().map(|p| p.2)),
        ])
    })
}

/// Maps the file of the run in `dir`, which has `rows` passages.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<PassageColumns> {
    let t = Table::open(&dir.join(FILE), &schema(), rows)?;
    Ok(PassageColumns {
        document: t.primitives(DOCUMENT, false)?,
        position: t.primitives(POSITION, false)?,
        text: t.strings(TEXT)?,
    })
}
