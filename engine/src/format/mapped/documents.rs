//! `documents.arrow`: one row per document, in `documents.parquet` order (ascending
//! `document_key`), for lookups by key and the fields an answer shows.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{Int32Type, UInt32Type};
use arrow_array::{ArrayRef, BooleanArray, Int32Array, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Booleans, Primitives, Strings, Table, binary, write_file};
use crate::error::Result;
use crate::format::RunWriter;
use crate::format::tables::RunLookups;

/// File name inside the run folder.
pub const FILE: &str = "documents.arrow";
/// Unique key (UTF-8 as `Binary`), ascending by bytes.
pub const DOCUMENT_KEY: &str = "document_key";
/// Title (UTF-8 as `Binary`, may be empty).
pub const TITLE: &str = "title";
/// Publication year (int32, null when unknown).
pub const YEAR: &str = "year";
/// Whether linking found a concept in the document (bool).
pub const LINKED: &str = "linked";
/// Row of the document's first passage in `passages.arrow` (uint32); its passages are the
/// rows up to the next document's `first_passage` (or the last passage).
pub const FIRST_PASSAGE: &str = "first_passage";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(DOCUMENT_KEY, DataType::Binary, false),
        Field::new(TITLE, DataType::Binary, false),
        Field::new(YEAR, DataType::Int32, true),
        Field::new(LINKED, DataType::Boolean, false),
        Field::new(FIRST_PASSAGE, DataType::UInt32, false),
    ]))
}

/// The documents' columns, mapped (format 2) or read from Parquet (format 1).
#[derive(Debug, Clone)]
pub struct DocumentColumns {
    /// Keys, ascending.
    pub keys: Strings,
    /// Titles.
    pub titles: Strings,
    /// Publication years.
    pub years: Primitives<Int32Type>,
    /// Linked flags.
    pub linked: Booleans,
    /// First passage row of each document.
    pub first_passage: Primitives<UInt32Type>,
}

impl DocumentColumns {
    /// The passage rows of document `d` in a run of `num_passages` passages (empty when `d`
    /// is out of range; clamped to the passages when `first_passage` is damaged).
    pub fn passages(&self, d: usize, num_passages: usize) -> std::ops::Range<u32> {
        if d >= self.keys.len() {
            return 0..0;
        }
        let np = u32::try_from(num_passages).unwrap_or(u32::MAX);
        let first = self.first_passage.value(d).min(np);
        let end = if d + 1 == self.keys.len() {
            np
        } else {
            self.first_passage.value(d + 1).min(np)
        };
        first..end.max(first)
    }
}

/// Writes the file for the documents of `l`.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups) -> Result<()> {
    let nd = l.num_documents();
    // Passages ascend by document, so each document's first row is found in one pass.
    let mut first = vec![0u32; nd + 1];
    let np = l.num_passages();
    let mut p = 0usize;
    for (d, f) in first.iter_mut().enumerate() {
        while p < np && (l.passage(p as u32).0 as usize) < d {
            p += 1;
        }
        *f = p as u32;
    }
    let schema = schema();
    write_file(w, FILE, &schema, nd, |range| {
        let docs: Vec<_> = range.clone().map(|d| l.document(d as u32)).collect();
        Ok(vec![
            binary(docs.iter().map(|d| d.key)),
            binary(docs.iter().map(|d| d.title)),
            Arc::new(Int32Array::from_iter(docs.iter().map(|d| d.year))) as ArrayRef,
            Arc::new(BooleanArray::from_iter(docs.iter().map(|d| Some(d.linked)))),
            Arc::new(UInt32Array::from_iter_values(first[range].iter().copied())),
        ])
    })
}

/// Maps the file of the run in `dir`, which has `rows` documents.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<DocumentColumns> {
    let t = Table::open(&dir.join(FILE), &schema(), rows)?;
    Ok(DocumentColumns {
        keys: t.strings(DOCUMENT_KEY)?,
        titles: t.strings(TITLE)?,
        years: t.primitives(YEAR, true)?,
        linked: t.booleans(LINKED)?,
        first_passage: t.primitives(FIRST_PASSAGE, false)?,
    })
}
