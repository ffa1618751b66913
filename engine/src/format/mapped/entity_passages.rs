//! `entity_passages.arrow`: one row per entity (by `entity_id`), the passage rows that
//! mention it, ascending: the rows of `mentions.parquet` grouped by entity, with passages
//! named by their row in `passages.arrow`.

use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Csr, Table, u32_item, u32_lists, write_file};
use crate::error::Result;
use crate::format::RunWriter;

/// File name inside the run folder.
pub const FILE: &str = "entity_passages.arrow";
/// Passage rows mentioning the entity (list of uint32), ascending.
pub const PASSAGES: &str = "passages";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        PASSAGES,
        DataType::List(u32_item()),
        false,
    )]))
}

/// Writes the file from `mentions`, `(entity, passage row, …)` sorted by entity then passage
/// row, over `num_entities` entities.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &mut RunWriter,
    num_entities: usize,
    mentions: &[(u32, u32, u32)],
) -> Result<()> {
    let schema = schema();
    let mut next = 0usize;
    let mut row: Vec<u32> = Vec::new();
    write_file(w, FILE, &schema, num_entities, |range| {
        let mut rows: Vec<Vec<u32>> = Vec::with_capacity(range.len());
        for e in range {
            row.clear();
            while let Some(m) = mentions.get(next).filter(|m| m.0 as usize == e) {
                if row.last() != Some(&m.1) {
                    row.push(m.1);
                }
                next += 1;
            }
            rows.push(row.clone());
        }
        Ok(vec![u32_lists(rows.iter().map(Vec::as_slice))?])
    })
}

/// Maps the file of the run in `dir`, which has `rows` entities.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<Csr> {
    Table::open(&dir.join(FILE), &schema(), rows)?.lists(PASSAGES)
}
