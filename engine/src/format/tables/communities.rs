//! `communities.parquet`: one row per community of any level, sorted by `community_id`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, BooleanArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{batch, u32f, u32s};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::communities::CommunityColumns;
use crate::format::mapped::{Csr, Primitives};
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "communities.parquet";
/// Public community id (uint32, unique across levels, strictly ascending row to row); also
/// the `theme_id` of answers. It survives across the runs of one snapshot root: a
/// community inherits the id of the previous run's community it continues (see
/// [`community_lineage`](super::community_lineage)), and a new community gets an id never
/// used on the root before. A root's first run numbers its communities 0, 1, 2, … by level,
/// parent and smallest member.
pub const COMMUNITY_ID: &str = "community_id";
/// Level (uint32): 0 is the coarsest, deeper is finer.
pub const LEVEL: &str = "level";
/// Parent community at `level - 1` (uint32, null at level 0).
pub const PARENT: &str = "parent";
/// Number of member entities (uint32).
pub const SIZE: &str = "size";
/// Whether the community was not split further (bool).
pub const IS_LEAF: &str = "is_leaf";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32f(COMMUNITY_ID),
        u32f(LEVEL),
        Field::new(PARENT, DataType::UInt32, true),
        u32f(SIZE),
        Field::new(IS_LEAF, DataType::Boolean, false),
    ]))
}

/// One community; its id is its index.
#[derive(Debug, Clone, PartialEq)]
pub struct CommunityRecord {
    /// Level (0 = coarsest).
    pub level: u32,
    /// Parent community.
    pub parent: Option<u32>,
    /// Number of members.
    pub size: u32,
    /// Not split further.
    pub is_leaf: bool,
}

/// Writes the communities `cs`, row `c` under the public id `cid(c)`.
///
/// # Errors
/// [`EngineError::Internal`] when the batch cannot be built; [`EngineError::Io`] /
/// [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, cs: &[CommunityRecord], cid: &dyn Fn(u32) -> u32) -> Result<()> {
    let b = batch(
        schema(),
        vec![
            u32s((0..cs.len() as u32).map(cid)),
            u32s(cs.iter().map(|c| c.level)),
            Arc::new(UInt32Array::from_iter(cs.iter().map(|c| c.parent.map(cid)))),
            u32s(cs.iter().map(|c| c.size)),
            Arc::new(BooleanArray::from_iter(cs.iter().map(|c| Some(c.is_leaf)))),
        ],
    )?;
    w.write_parquet(FILE, &b, &[COMMUNITY_ID])
}

/// Reads the table of the run in `dir` (a run of format 1, without `communities.arrow`) into
/// the columns a run of format 2 maps, checking that the ids ascend strictly and that every
/// parent is a community. Members and quoted passages are not in this table: `members` and
/// `report_sources` are left empty, for the caller to fill from
/// [`super::membership::read_members`] and [`super::report_sources::read`].
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row; as [`read_parquet`].
pub(crate) fn read(dir: &Path, run_id: Option<&str>) -> Result<CommunityColumns> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let community_ids = column_no_nulls::<UInt32Array>(&b, COMMUNITY_ID, &path)?.clone();
    if let Some(row) = community_ids.values().windows(2).position(|w| w[0] >= w[1]) {
        return Err(EngineError::corrupt(
            &path,
            format!("row {}: community_id must be strictly ascending", row + 1),
        ));
    }
    let ids = community_ids.values();
    let row_of = |c: u32| ids.binary_search(&c).ok().map(|r| r as u32);
    let levels = column_no_nulls::<UInt32Array>(&b, LEVEL, &path)?.clone();
    let parent = b
        .column_by_name(PARENT)
        .ok_or_else(|| EngineError::corrupt(&path, "missing column \"parent\""))?
        .as_primitive::<UInt32Type>();
    let parents = (0..parent.len())
        .map(|i| {
            if !parent.is_valid(i) {
                return Ok(None);
            }
            row_of(parent.value(i)).map(Some).ok_or_else(|| {
                EngineError::corrupt(
                    &path,
                    format!("row {i}: parent {} is not a community", parent.value(i)),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CommunityColumns {
        ids: Primitives::from_array(community_ids),
        levels: Primitives::from_array(levels),
        parents: Primitives::from_array(UInt32Array::from(parents)),
        members: Csr::default(),
        report_sources: Csr::default(),
    })
}

/// The public id and the level of each community of the run in `dir`, in row order, checking
/// that the ids ascend strictly (what a continuing run keeps ids by).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row; as [`read_parquet`].
pub(crate) fn read_ids_and_levels(
    dir: &Path,
    run_id: Option<&str>,
) -> Result<(Vec<u32>, Vec<u32>)> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let community_ids = column_no_nulls::<UInt32Array>(&b, COMMUNITY_ID, &path)?
        .values()
        .to_vec();
    if let Some(row) = community_ids.windows(2).position(|w| w[0] >= w[1]) {
        return Err(EngineError::corrupt(
            &path,
            format!("row {}: community_id not strictly ascending", row + 1),
        ));
    }
    let community_level = b
        .column_by_name(LEVEL)
        .ok_or_else(|| EngineError::corrupt(&path, "missing column \"level\""))?
        .as_primitive::<UInt32Type>()
        .values()
        .to_vec();
    Ok((community_ids, community_level))
}
