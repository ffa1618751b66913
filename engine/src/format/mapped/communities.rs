//! `communities.arrow`: one row per community, in `communities.parquet` order (ascending
//! public `community_id`), with its members and the passages its report quotes.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::UInt32Type;
use arrow_array::{ArrayRef, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Csr, Primitives, Table, u32_item, u32_lists, write_file};
use crate::error::Result;
use crate::format::RunWriter;

/// File name inside the run folder.
pub const FILE: &str = "communities.arrow";
/// Public id (`community_id`, the `theme_id` of answers; uint32), strictly ascending.
pub const COMMUNITY_ID: &str = "community_id";
/// Level (uint32, 0 = coarsest).
pub const LEVEL: &str = "level";
/// Row of the parent community in this file (uint32, null at level 0).
pub const PARENT_ROW: &str = "parent_row";
/// Member entity ids (list of uint32), ascending.
pub const MEMBERS: &str = "members";
/// Rows (in `passages.arrow`) of the passages the community's report quotes (list of
/// uint32), ascending.
pub const REPORT_SOURCES: &str = "report_sources";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(COMMUNITY_ID, DataType::UInt32, false),
        Field::new(LEVEL, DataType::UInt32, false),
        Field::new(PARENT_ROW, DataType::UInt32, true),
        Field::new(MEMBERS, DataType::List(u32_item()), false),
        Field::new(REPORT_SOURCES, DataType::List(u32_item()), false),
    ]))
}

/// The communities' columns, mapped (format 2) or read from Parquet (format 1).
#[derive(Debug, Clone)]
pub struct CommunityColumns {
    /// Public ids, strictly ascending.
    pub ids: Primitives<UInt32Type>,
    /// Levels.
    pub levels: Primitives<UInt32Type>,
    /// Parent rows (null at level 0).
    pub parents: Primitives<UInt32Type>,
    /// Member entities of each community, ascending.
    pub members: Csr,
    /// Passage rows each community's report quotes, ascending.
    pub report_sources: Csr,
}

/// The rows of one community, as the writer has them.
pub(crate) struct CommunityInput<'a> {
    /// Public id of each community row.
    pub ids: &'a dyn Fn(u32) -> u32,
    /// `(level, parent row)` of each community row.
    pub levels: &'a [(u32, Option<u32>)],
    /// Members of each community row, ascending.
    pub members: &'a Csr,
    /// Passage rows each report quotes, ascending.
    pub report_sources: &'a Csr,
}

/// Writes the file.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, c: &CommunityInput<'_>) -> Result<()> {
    let schema = schema();
    write_file(w, FILE, &schema, c.levels.len(), |range| {
        let rows = range.clone();
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(
                rows.clone().map(|r| (c.ids)(r as u32)),
            )) as ArrayRef,
            Arc::new(UInt32Array::from_iter_values(
                c.levels[rows.clone()].iter().map(|l| l.0),
            )),
            Arc::new(UInt32Array::from_iter(
                c.levels[rows.clone()].iter().map(|l| l.1),
            )),
            u32_lists(rows.clone().map(|r| c.members.row(r)))?,
            u32_lists(rows.map(|r| c.report_sources.row(r)))?,
        ])
    })
}

/// Maps the file of the run in `dir`, which has `rows` communities.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<CommunityColumns> {
    let t = Table::open(&dir.join(FILE), &schema(), rows)?;
    Ok(CommunityColumns {
        ids: t.primitives(COMMUNITY_ID, false)?,
        levels: t.primitives(LEVEL, false)?,
        parents: t.primitives(PARENT_ROW, true)?,
        members: t.lists(MEMBERS)?,
        report_sources: t.lists(REPORT_SOURCES)?,
    })
}
