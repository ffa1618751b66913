//! `relationships.parquet`: undirected weighted edges with `source < target`, sorted.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Float64Array, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{chunked, u32f, u32s};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "relationships.parquet";
/// Smaller entity id (uint32).
pub const SOURCE: &str = "source";
/// Larger entity id (uint32).
pub const TARGET: &str = "target";
/// Edge weight (float64): number of passages mentioning both, for co-occurrence graphs.
pub const WEIGHT: &str = "weight";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32f(SOURCE),
        u32f(TARGET),
        Field::new(WEIGHT, DataType::Float64, false),
    ]))
}

/// Writes the edges `rel` (`(source, target, weight)`, `source < target`, sorted).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, rel: &[(u32, u32, f64)]) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[SOURCE, TARGET],
        chunked(&schema, rel.len(), |range| {
            let rows = &rel[range];
            Ok(vec![
                u32s(rows.iter().map(|e| e.0)),
                u32s(rows.iter().map(|e| e.1)),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|e| e.2))),
            ])
        }),
    )
}

/// Reads the edges of the run in `dir` over its `num_entities` entities: `(source, target,
/// weight)` with `source < target`, sorted (what a continuing run warm-starts from).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an entity the run lacks; as
/// [`read_parquet`].
pub(crate) fn read(
    dir: &Path,
    run_id: Option<&str>,
    num_entities: usize,
) -> Result<Vec<(u32, u32, f64)>> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let source = column_no_nulls::<UInt32Array>(&b, SOURCE, &path)?;
    let target = column_no_nulls::<UInt32Array>(&b, TARGET, &path)?;
    let weight = b
        .column_by_name(WEIGHT)
        .ok_or_else(|| EngineError::corrupt(&path, "missing column \"weight\""))?
        .as_primitive::<Float64Type>();
    let mut edges = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        let (s, t) = (source.value(row), target.value(row));
        if s.max(t) as usize >= num_entities {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: entity {} is not in the run", s.max(t)),
            ));
        }
        edges.push((s.min(t), s.max(t), weight.value(row)));
    }
    edges.sort_by_key(|e| (e.0, e.1));
    Ok(edges)
}
