//! `membership.parquet`: `(entity, level) -> community`, sorted by `level`, `entity_id`.
//!
//! An entity has one row for every level from 0 down to the level of its leaf community.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{BooleanArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{chunked, strings, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::Csr;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "membership.parquet";
/// The run that computed it (string).
pub const RUN_ID: &str = "run_id";
/// Level (uint32).
pub const LEVEL: &str = "level";
/// Entity (uint32).
pub const ENTITY_ID: &str = "entity_id";
/// Community of the entity at this level (uint32).
pub const COMMUNITY_ID: &str = "community_id";
/// Parent of that community (uint32, null at level 0).
pub const PARENT_COMMUNITY_ID: &str = "parent_community_id";
/// Whether that community is a leaf (bool).
pub const IS_LEAF: &str = "is_leaf";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(RUN_ID),
        u32f(LEVEL),
        u32f(ENTITY_ID),
        u32f(COMMUNITY_ID),
        Field::new(PARENT_COMMUNITY_ID, DataType::UInt32, true),
        Field::new(IS_LEAF, DataType::Boolean, false),
    ]))
}

/// One membership row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MembershipRecord {
    /// Level.
    pub level: u32,
    /// Entity.
    pub entity: u32,
    /// Community at that level.
    pub community: u32,
    /// Its parent.
    pub parent: Option<u32>,
    /// Whether that community is a leaf.
    pub is_leaf: bool,
}

/// Writes the rows `rows` (sorted by level, then entity) of run `run_id`, community row `c`
/// under the public id `cid(c)`.
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &RunWriter,
    run_id: &str,
    rows: &[MembershipRecord],
    cid: &dyn Fn(u32) -> u32,
) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[LEVEL, ENTITY_ID],
        chunked(&schema, rows.len(), |range| {
            let rows = &rows[range];
            Ok(vec![
                strings(rows.iter().map(|_| run_id)),
                u32s(rows.iter().map(|r| r.level)),
                u32s(rows.iter().map(|r| r.entity)),
                u32s(rows.iter().map(|r| cid(r.community))),
                Arc::new(UInt32Array::from_iter(
                    rows.iter().map(|r| r.parent.map(cid)),
                )),
                Arc::new(BooleanArray::from_iter(
                    rows.iter().map(|r| Some(r.is_leaf)),
                )),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run of format 1, without `communities.arrow`): the
/// member entities of each community, ascending (rows in the order of `community_ids`, the
/// communities' public ids, ascending; entities below `num_entities`).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an entity or community out of range;
/// as [`read_parquet`].
pub(crate) fn read_members(
    dir: &Path,
    run_id: Option<&str>,
    community_ids: &[u32],
    num_entities: usize,
) -> Result<Csr> {
    let row_of = |c: u32| community_ids.binary_search(&c).ok().map(|r| r as u32);
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let ment = column_no_nulls::<UInt32Array>(&b, ENTITY_ID, &path)?;
    let mcom = column_no_nulls::<UInt32Array>(&b, COMMUNITY_ID, &path)?;
    let mut pairs = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        let (e, c) = (ment.value(row), mcom.value(row));
        let Some(c) = row_of(c).filter(|_| (e as usize) < num_entities) else {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: entity {e} or community {c} out of range"),
            ));
        };
        pairs.push((c, e));
    }
    pairs.sort_unstable();
    Ok(Csr::from_pairs(community_ids.len(), &pairs))
}

/// Reads the table of the run in `dir`: `(level, entity_id, community row)` of every row, in
/// file order (sorted by level, then entity), community rows in the order of
/// `community_ids`, entities below `num_entities` (what a continuing run warm-starts from).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an entity or community the run lacks;
/// as [`read_parquet`].
pub(crate) fn read_rows(
    dir: &Path,
    run_id: Option<&str>,
    community_ids: &[u32],
    num_entities: usize,
) -> Result<Vec<(u32, u32, u32)>> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let level = column_no_nulls::<UInt32Array>(&b, LEVEL, &path)?;
    let entity = column_no_nulls::<UInt32Array>(&b, ENTITY_ID, &path)?;
    let community = column_no_nulls::<UInt32Array>(&b, COMMUNITY_ID, &path)?;
    let mut rows = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        let (e, c) = (entity.value(row), community.value(row));
        let r = community_ids
            .binary_search(&c)
            .ok()
            .filter(|_| (e as usize) < num_entities);
        let Some(r) = r else {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: entity {e} or community {c} is not in the run"),
            ));
        };
        rows.push((level.value(row), e, r as u32));
    }
    Ok(rows)
}
