//! `community_lineage.parquet`: how the run's communities continue those of its parent run
//! (the manifest's `parent_run_id`), sorted by `community_id`, then `event`. One row per
//! community of the run, and one per community of the parent run whose id the run no longer
//! uses (`dissolved`); a run without a parent has only `new` rows.
//!
//! A community *continues* a parent's community of the same level, and inherits its id, when
//! the Jaccard similarity of their member sets (entities by concept id) is above
//! [`MIN_JACCARD`]; above one half the match is one-to-one by itself (two disjoint sets cannot
//! both share more than half of their union with a third).

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, UInt32Builder};
use arrow_array::{Float64Array, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{batch, strings, u32f, u32s, utf8};
use crate::error::Result;
use crate::format::RunWriter;

/// File name inside the run folder.
pub const FILE: &str = "community_lineage.parquet";
/// Smallest Jaccard similarity (exclusive) for a community to inherit an id.
pub const MIN_JACCARD: f64 = 0.5;
/// Community id (uint32): the run's community, or for `dissolved` the parent's.
pub const COMMUNITY_ID: &str = "community_id";
/// Level of that community (uint32).
pub const LEVEL: &str = "level";
/// What happened (utf8): `same` (identical member set, id inherited), `grew` / `shrank`
/// (id inherited, more / fewer members; equal sizes with other members count as `grew`),
/// `split` (a parent's community spread over several of the run's, each holding at least
/// half of its own members from it: the one that inherits the id and the others),
/// `merged` (holds at least half of each of two or more parent communities), `new` (no
/// predecessor), `dissolved` (a parent's id the run no longer uses).
pub const EVENT: &str = "event";
/// The parent community whose id it inherited, or for a community without one the parent
/// community it shares most members with (uint32, null for `new` and `dissolved`).
pub const PREDECESSOR: &str = "predecessor";
/// Jaccard similarity with `predecessor` (float64, null when `predecessor` is).
pub const JACCARD: &str = "jaccard";
/// Every predecessor: parent communities of the same level that hold at least half of
/// this one's members or of which this one holds at least half, ascending (`list<uint32>`).
pub const PREDECESSORS: &str = "predecessors";
/// For `dissolved`: the run's community holding most of its members (uint32, null when
/// none of them is left or for other events).
pub const SUCCESSOR: &str = "successor";
/// Members now (uint32, null for `dissolved`).
pub const SIZE: &str = "size";
/// Members of `predecessor` (or of the dissolved community) in the parent run (uint32,
/// null when there is none).
pub const PREVIOUS_SIZE: &str = "previous_size";
/// BLAKE3 (hex) of the sorted concept ids of the members, each followed by a newline:
/// equal fingerprints, equal member sets (utf8; for `dissolved`, the parent's).
pub const FINGERPRINT: &str = "fingerprint";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32f(COMMUNITY_ID),
        u32f(LEVEL),
        utf8(EVENT),
        Field::new(PREDECESSOR, DataType::UInt32, true),
        Field::new(JACCARD, DataType::Float64, true),
        Field::new(
            PREDECESSORS,
            DataType::List(Arc::new(Field::new("item", DataType::UInt32, false))),
            false,
        ),
        Field::new(SUCCESSOR, DataType::UInt32, true),
        Field::new(SIZE, DataType::UInt32, true),
        Field::new(PREVIOUS_SIZE, DataType::UInt32, true),
        utf8(FINGERPRINT),
    ]))
}

/// One row of the table: how a community of the run continues its parent run's
/// communities, or a parent's community the run no longer has. Ids here are public ids
/// (the run's [`RunColumns::community_ids`](super::RunColumns::community_ids), the parent's
/// `community_id`s).
#[derive(Debug, Clone, PartialEq)]
pub struct LineageRecord {
    /// The run's community, or for `dissolved` the parent's.
    pub community_id: u32,
    /// Its level.
    pub level: u32,
    /// One of `same`, `grew`, `shrank`, `split`, `merged`, `new`, `dissolved`.
    pub event: &'static str,
    /// The inherited (or main) predecessor and the Jaccard similarity with it.
    pub predecessor: Option<(u32, f64)>,
    /// Every predecessor, ascending.
    pub predecessors: Vec<u32>,
    /// For `dissolved`: the run's community holding most of its members.
    pub successor: Option<u32>,
    /// Members now (`None` for `dissolved`).
    pub size: Option<u32>,
    /// Members of the predecessor (or of the dissolved community) in the parent run.
    pub previous_size: Option<u32>,
    /// BLAKE3 hex of the sorted member concept ids, each followed by `\n`.
    pub fingerprint: String,
}

/// What a run records of its parent and its communities' lineage
/// (this table and the manifest's `parent_run_id` / `next_community_id`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineageColumns {
    /// The run the communities continue (`None` for a root's first run, or `--full` without
    /// a readable parent).
    pub parent_run_id: Option<String>,
    /// Smallest community id no run on this root has used, after this run.
    pub next_community_id: u32,
    /// Rows, any order (written sorted by community id, then event).
    pub rows: Vec<LineageRecord>,
}

/// Writes the rows of `lineage`, sorted by community id, then event.
///
/// # Errors
/// [`crate::EngineError::Internal`] when the batch cannot be built; [`crate::EngineError::Io`]
/// / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, lineage: &LineageColumns) -> Result<()> {
    let mut rows: Vec<&LineageRecord> = lineage.rows.iter().collect();
    rows.sort_by(|a, b| (a.community_id, a.event).cmp(&(b.community_id, b.event)));
    let mut predecessors = ListBuilder::new(UInt32Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt32,
        false,
    )));
    for r in &rows {
        predecessors.values().append_slice(&r.predecessors);
        predecessors.append(true);
    }
    let b = batch(
        schema(),
        vec![
            u32s(rows.iter().map(|r| r.community_id)),
            u32s(rows.iter().map(|r| r.level)),
            strings(rows.iter().map(|r| r.event)),
            Arc::new(UInt32Array::from_iter(
                rows.iter().map(|r| r.predecessor.map(|p| p.0)),
            )),
            Arc::new(Float64Array::from_iter(
                rows.iter().map(|r| r.predecessor.map(|p| p.1)),
            )),
            Arc::new(predecessors.finish()),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.successor))),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.size))),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.previous_size))),
            strings(rows.iter().map(|r| r.fingerprint.as_str())),
        ],
    )?;
    w.write_parquet(FILE, &b, &[COMMUNITY_ID, EVENT])
}
