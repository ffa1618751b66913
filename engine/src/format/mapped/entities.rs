//! `entities.arrow`: one row per entity (graph node), by `entity_id`: its concept, name and
//! weighted degree as in `entities.parquet`, and the passage rows that mention it, ascending
//! (the rows of `mentions.parquet` grouped by entity, passages named by their row in
//! `passages.arrow`).

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Float64Type;
use arrow_array::{ArrayRef, Float64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Csr, Primitives, Strings, Table, binary, u32_item, u32_lists, write_file};
use crate::error::Result;
use crate::format::RunWriter;
use crate::format::tables::EntityRecord;

/// File name inside the run folder.
pub const FILE: &str = "entities.arrow";
/// The concept the entity stands for (UTF-8 as `Binary`).
pub const CONCEPT_ID: &str = "concept_id";
/// Display name (UTF-8 as `Binary`).
pub const NAME: &str = "name";
/// Weighted degree (float64).
pub const DEGREE: &str = "degree";
/// Passage rows mentioning the entity (list of uint32), ascending.
pub const PASSAGES: &str = "passages";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(CONCEPT_ID, DataType::Binary, false),
        Field::new(NAME, DataType::Binary, false),
        Field::new(DEGREE, DataType::Float64, false),
        Field::new(PASSAGES, DataType::List(u32_item()), false),
    ]))
}

/// The entities' columns, mapped (format 2) or read from Parquet (format 1).
#[derive(Debug, Clone)]
pub struct EntityColumns {
    /// Concept id of each entity.
    pub concept_ids: Strings,
    /// Display name of each entity.
    pub names: Strings,
    /// Weighted degree of each entity.
    pub degrees: Primitives<Float64Type>,
    /// Passage rows mentioning each entity, ascending.
    pub passages: Csr,
}

/// Writes the file for `entities` from `mentions`, `(entity, passage row, …)` grouped by
/// entity in ascending order (passages in any order: each entity's are sorted here, so the
/// caller's one sort, by passage id for `mentions.parquet`, serves both files).
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &RunWriter,
    entities: &[EntityRecord],
    mentions: &[(u32, u32, u32)],
) -> Result<()> {
    let schema = schema();
    let mut next = 0usize;
    write_file(w, FILE, &schema, entities.len(), |range| {
        let mut rows: Vec<Vec<u32>> = Vec::with_capacity(range.len());
        for e in range.clone() {
            let mut row = Vec::new();
            while let Some(m) = mentions.get(next).filter(|m| m.0 as usize == e) {
                row.push(m.1);
                next += 1;
            }
            row.sort_unstable();
            row.dedup();
            rows.push(row);
        }
        let es = &entities[range];
        Ok(vec![
            binary(es.iter().map(|e| e.concept_id.as_str())),
            binary(es.iter().map(|e| e.name.as_str())),
            Arc::new(Float64Array::from_iter_values(es.iter().map(|e| e.degree))) as ArrayRef,
            u32_lists(rows.iter().map(Vec::as_slice))?,
        ])
    })
}

/// Maps the file of the run in `dir`, which has `rows` entities.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<EntityColumns> {
    let t = Table::open(&dir.join(FILE), &schema(), rows)?;
    Ok(EntityColumns {
        concept_ids: t.strings(CONCEPT_ID)?,
        names: t.strings(NAME)?,
        degrees: t.primitives(DEGREE, false)?,
        passages: t.lists(PASSAGES)?,
    })
}
