//! `entities.parquet`: graph nodes, sorted by `entity_id` (0-based, dense).

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Float64Array, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{chunked, strings, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::entities::EntityColumns;
use crate::format::mapped::{Csr, Primitives, Strings};
use crate::format::reader::{check_dense_ids, column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "entities.parquet";
/// Node id in the entity graph (uint32, dense from 0).
pub const ENTITY_ID: &str = "entity_id";
/// Concept the entity stands for (string).
pub const CONCEPT_ID: &str = "concept_id";
/// Display name: the concept's preferred term (string).
pub const NAME: &str = "name";
/// Number of passages mentioning the entity (uint32).
pub const NUM_PASSAGES: &str = "num_passages";
/// Weighted degree in the entity graph (float64).
pub const DEGREE: &str = "degree";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32f(ENTITY_ID),
        utf8(CONCEPT_ID),
        utf8(NAME),
        u32f(NUM_PASSAGES),
        Field::new(DEGREE, DataType::Float64, false),
    ]))
}

/// One entity (graph node); its id is its index.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityRecord {
    /// The concept it stands for.
    pub concept_id: String,
    /// Display name.
    pub name: String,
    /// Passages mentioning it.
    pub num_passages: u32,
    /// Weighted degree.
    pub degree: f64,
}

/// Writes the entities `es` (entity id = index).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, es: &[EntityRecord]) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[ENTITY_ID],
        chunked(&schema, es.len(), |range| {
            let rows = &es[range.clone()];
            Ok(vec![
                u32s(range.start as u32..range.end as u32),
                strings(rows.iter().map(|e| e.concept_id.as_str())),
                strings(rows.iter().map(|e| e.name.as_str())),
                u32s(rows.iter().map(|e| e.num_passages)),
                Arc::new(Float64Array::from_iter_values(
                    rows.iter().map(|e| e.degree),
                )),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run of format 1, without `entities.arrow`) into
/// the columns a run of format 2 maps, checking that the ids are dense. The passages of each
/// entity are not in this table: `passages` is left empty, for the caller to fill from
/// [`super::mentions::read_entity_passages`].
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file; as [`read_parquet`].
pub(crate) fn read(dir: &Path, run_id: Option<&str>) -> Result<EntityColumns> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    check_dense_ids(&b, ENTITY_ID, &path)?;
    let names = Strings::from_utf8_array(column_no_nulls::<StringArray>(&b, NAME, &path)?);
    let concept_ids =
        Strings::from_utf8_array(column_no_nulls::<StringArray>(&b, CONCEPT_ID, &path)?);
    let degrees = Primitives::from_array(
        b.column_by_name(DEGREE)
            .ok_or_else(|| EngineError::corrupt(&path, "missing column \"degree\""))?
            .as_primitive::<Float64Type>()
            .clone(),
    );
    Ok(EntityColumns {
        concept_ids,
        names,
        degrees,
        passages: Csr::default(),
    })
}

/// The concept id of each entity of the run in `dir` (index = `entity_id`), checking that the
/// ids are dense: what a continuing run matches its entities by.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file; as [`read_parquet`].
pub(crate) fn read_concept_ids(dir: &Path, run_id: Option<&str>) -> Result<Vec<String>> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    check_dense_ids(&b, ENTITY_ID, &path)?;
    Ok(column_no_nulls::<StringArray>(&b, CONCEPT_ID, &path)?
        .iter()
        .map(|s| s.unwrap_or_default().to_owned())
        .collect::<Vec<_>>())
}
