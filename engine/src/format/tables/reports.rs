//! `reports.parquet`: one extractive report per community, sorted by `community_id`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Float64Array, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{chunked, list_of_strings, list_utf8, strings, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "reports.parquet";
/// Community (uint32).
pub const COMMUNITY_ID: &str = "community_id";
/// Level of the community (uint32).
pub const LEVEL: &str = "level";
/// Title made of the most central members (string).
pub const TITLE: &str = "title";
/// One-paragraph summary (string).
pub const SUMMARY: &str = "summary";
/// Findings: sentences drawn from supporting passages (list of strings).
pub const FINDINGS: &str = "findings";
/// Importance (float64): ln(1 + supporting passages) × internal edge weight share.
pub const RANK: &str = "rank";
/// The text that was embedded (string).
pub const FULL_CONTENT: &str = "full_content";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        u32f(COMMUNITY_ID),
        u32f(LEVEL),
        utf8(TITLE),
        utf8(SUMMARY),
        list_utf8(FINDINGS),
        Field::new(RANK, DataType::Float64, false),
        utf8(FULL_CONTENT),
    ]))
}

/// One community report; row `i` belongs to community `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRecord {
    /// Level of the community.
    pub level: u32,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Findings.
    pub findings: Vec<String>,
    /// Rank.
    pub rank: f64,
    /// Embedded text.
    pub full_content: String,
}

/// Writes the reports `r` (row `c` is community row `c`'s, under the public id `cid(c)`).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, r: &[ReportRecord], cid: &dyn Fn(u32) -> u32) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[COMMUNITY_ID],
        chunked(&schema, r.len(), |range| {
            let rs = &r[range.clone()];
            Ok(vec![
                u32s((range.start as u32..range.end as u32).map(cid)),
                u32s(rs.iter().map(|x| x.level)),
                strings(rs.iter().map(|x| x.title.as_str())),
                strings(rs.iter().map(|x| x.summary.as_str())),
                list_of_strings(rs.iter().map(|x| x.findings.iter().map(String::as_str))),
                Arc::new(Float64Array::from_iter_values(rs.iter().map(|x| x.rank))),
                strings(rs.iter().map(|x| x.full_content.as_str())),
            ])
        }),
    )
}

/// BLAKE3 of each community's embedded text (`full_content`) in the run in `dir`, by
/// community row, checking that the reports' communities are `community_ids` row for row
/// (what a continuing run reuses vectors by).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file when the communities differ; as
/// [`read_parquet`].
pub(crate) fn read_text_hashes(
    dir: &Path,
    run_id: Option<&str>,
    community_ids: &[u32],
) -> Result<Vec<[u8; 32]>> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let ids = column_no_nulls::<UInt32Array>(&b, COMMUNITY_ID, &path)?;
    if ids.values()[..] != community_ids[..] {
        return Err(EngineError::corrupt(
            &path,
            "community_id is not that of communities.parquet, row for row",
        ));
    }
    Ok(column_no_nulls::<StringArray>(&b, FULL_CONTENT, &path)?
        .iter()
        .map(|t| *blake3::hash(t.unwrap_or_default().as_bytes()).as_bytes())
        .collect())
}
