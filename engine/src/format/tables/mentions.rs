//! `mentions.parquet`: `(passage, entity)` pairs, sorted by `entity_id`, `passage_id`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{StringArray, UInt32Array};
use arrow_schema::{Schema, SchemaRef};

use super::{RunLookups, chunked, passage_ids, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::Csr;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "mentions.parquet";
/// Mentioned entity (uint32).
pub const ENTITY_ID: &str = "entity_id";
/// Mentioning passage (string).
pub const PASSAGE_ID: &str = "passage_id";
/// How often the passage mentions the entity (uint32, ≥ 1).
pub const NUM_OCCURRENCES: &str = "num_occurrences";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32f(ENTITY_ID),
        utf8(PASSAGE_ID),
        u32f(NUM_OCCURRENCES),
    ]))
}

/// Sorts `(entity, passage row, occurrences)` rows as the table is sorted; `passage_rank`
/// orders passages by id. `entities.arrow` takes each entity's passages from the rows in this
/// order.
pub(crate) fn sort(rows: &mut [(u32, u32, u32)], passage_rank: &[u32]) {
    rows.sort_unstable_by_key(|m| (m.0, passage_rank[m.1 as usize], m.2));
}

/// Writes the rows `rows` (passages of `l`, already [`sort`]ed).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups, rows: &[(u32, u32, u32)]) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[ENTITY_ID, PASSAGE_ID],
        chunked(&schema, rows.len(), |range| {
            let rows = &rows[range];
            Ok(vec![
                u32s(rows.iter().map(|r| r.0)),
                passage_ids(l, rows.iter().map(|r| r.1)),
                u32s(rows.iter().map(|r| r.2)),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run of format 1, without `entities.arrow`): the
/// passage rows mentioning each of its `num_entities` entities, ascending, passages found by
/// `passage`.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an unknown passage or an entity out
/// of range; as [`read_parquet`].
pub(crate) fn read_entity_passages(
    dir: &Path,
    run_id: Option<&str>,
    num_entities: usize,
    passage: &dyn Fn(&str) -> Option<u32>,
) -> Result<Csr> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let me = column_no_nulls::<UInt32Array>(&b, ENTITY_ID, &path)?;
    let mp = column_no_nulls::<StringArray>(&b, PASSAGE_ID, &path)?;
    let mut pairs = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        let e = me.value(row);
        let pid = mp.value(row);
        let q = passage(pid).ok_or_else(|| {
            EngineError::corrupt(
                &path,
                format!("row {row}: passage_id {pid:?} is not in passages.parquet"),
            )
        })?;
        if e as usize >= num_entities {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: entity_id {e} out of range"),
            ));
        }
        pairs.push((e, q));
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(Csr::from_pairs(num_entities, &pairs))
}
