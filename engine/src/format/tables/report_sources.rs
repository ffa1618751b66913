//! `report_sources.parquet`: the passages whose sentences a community's report quotes (its
//! findings), one row per (community, passage), sorted by `community_id`, `passage_id`. The
//! report's embedding was computed from those sentences, so a theme search leaves out a
//! community while one of its quoted passages is hidden. Runs without this file (format 1
//! before it existed) are served as if no report quoted a hidden passage.

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
pub const FILE: &str = "report_sources.parquet";
/// Community (uint32).
pub const COMMUNITY_ID: &str = "community_id";
/// A quoted passage (string).
pub const PASSAGE_ID: &str = "passage_id";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![u32f(COMMUNITY_ID), utf8(PASSAGE_ID)]))
}

/// Writes `(community row, passage row)` rows of `l` (any order; sorted here and
/// deduplicated), community row `c` under the public id `cid(c)`; `passage_rank` orders
/// passages by id.
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &RunWriter,
    l: &dyn RunLookups,
    mut rows: Vec<(u32, u32)>,
    passage_rank: &[u32],
    cid: &dyn Fn(u32) -> u32,
) -> Result<()> {
    let pk = |p: u32| passage_rank[p as usize];
    rows.sort_unstable_by_key(|r| (r.0, pk(r.1)));
    rows.dedup_by_key(|r| (r.0, pk(r.1)));
    let report_sources = &rows;
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[COMMUNITY_ID, PASSAGE_ID],
        chunked(&schema, report_sources.len(), |range| {
            let rows = &report_sources[range];
            Ok(vec![
                u32s(rows.iter().map(|r| cid(r.0))),
                passage_ids(l, rows.iter().map(|r| r.1)),
            ])
        }),
    )
}

/// Reads the table of the run in `dir`: the passage rows each community's report quotes (rows
/// = communities, in the order of `community_ids`, the communities' public ids, ascending).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an unknown community or passage; as
/// [`read_parquet`].
pub(crate) fn read(
    dir: &Path,
    run_id: Option<&str>,
    community_ids: &[u32],
    passages: &dyn Fn(&str) -> Option<u32>,
) -> Result<Csr> {
    let num_communities = community_ids.len();
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let cs = column_no_nulls::<UInt32Array>(&b, COMMUNITY_ID, &path)?;
    let pids = column_no_nulls::<StringArray>(&b, PASSAGE_ID, &path)?;
    let mut pairs = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        let c = cs.value(row);
        let Ok(c) = community_ids.binary_search(&c) else {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: community_id {c} is not in communities.parquet"),
            ));
        };
        let c = c as u32;
        let pid = pids.value(row);
        let p = passages(pid).ok_or_else(|| {
            EngineError::corrupt(
                &path,
                format!("row {row}: passage_id {pid:?} is not in the run"),
            )
        })?;
        pairs.push((c, p));
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(Csr::from_pairs(num_communities, &pairs))
}
