//! Report text (title, summary, findings) of the communities the page shows, from
//! `reports.parquet`. The embedded text (`full_content`) is never decoded.
//!
//! This text is shown on the report page because the page is for the run's operator; query
//! answers never return it.

use std::path::Path;

use arrow_array::{Array, ListArray, StringArray, UInt32Array};

use super::progress::Progress;
use super::read::{Table, projection};
use crate::error::{EngineError, Result};
use crate::format::reader::column_no_nulls;
use crate::format::tables::reports;

/// Longest title kept, in characters.
pub(crate) const MAX_TITLE_CHARS: usize = 160;
/// Longest summary kept, in characters.
pub(crate) const MAX_SUMMARY_CHARS: usize = 360;
/// Most findings kept per report.
pub(crate) const MAX_FINDINGS: usize = 3;
/// Longest finding kept, in characters.
pub(crate) const MAX_FINDING_CHARS: usize = 240;

/// The text of one report, cut to the limits above (a cut ends with `…`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ReportText {
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Findings, in report order.
    pub findings: Vec<String>,
    /// Number of findings the report has (some may have been left out).
    pub num_findings: usize,
}

/// `text` cut to `max` characters, ending with `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// Reads the reports of the communities for which `wanted[row]` is true, `ids[row]` being the
/// public id of each community row (ascending). Returns one entry per community row (`None`
/// where not wanted or where the run has no report).
///
/// # Errors
/// As [`Table::open`]; [`EngineError::Corrupt`] when a `community_id` is not a community.
pub(crate) fn read(
    dir: &Path,
    run_id: &str,
    ids: &[u32],
    wanted: &[bool],
    progress: &Progress,
) -> Result<Vec<Option<ReportText>>> {
    let full = reports::schema();
    let columns = projection(
        &full,
        &[
            reports::COMMUNITY_ID,
            reports::TITLE,
            reports::SUMMARY,
            reports::FINDINGS,
        ],
    );
    let mut out = vec![None; wanted.len()];
    Table::open(dir, reports::FILE, &columns, run_id)?.for_each(progress, |b, path| {
        let id = column_no_nulls::<UInt32Array>(b, reports::COMMUNITY_ID, path)?;
        let title = column_no_nulls::<StringArray>(b, reports::TITLE, path)?;
        let summary = column_no_nulls::<StringArray>(b, reports::SUMMARY, path)?;
        let findings = column_no_nulls::<ListArray>(b, reports::FINDINGS, path)?;
        for i in 0..b.num_rows() {
            let Some(c) = ids
                .binary_search(&id.value(i))
                .ok()
                .filter(|&c| c < wanted.len())
            else {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "community_id {} is not in communities.parquet ({} communities)",
                        id.value(i),
                        wanted.len()
                    ),
                ));
            };
            if !wanted[c] {
                continue;
            }
            let list = findings.value(i);
            let items = list
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| EngineError::corrupt(path, "findings are not strings"))?;
            out[c] = Some(ReportText {
                title: cut(title.value(i), MAX_TITLE_CHARS),
                summary: cut(summary.value(i), MAX_SUMMARY_CHARS),
                findings: (0..items.len().min(MAX_FINDINGS))
                    .filter(|&j| items.is_valid(j))
                    .map(|j| cut(items.value(j), MAX_FINDING_CHARS))
                    .collect(),
                num_findings: items.len(),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cut_ends_with_an_ellipsis_only_when_cut() {
        assert_eq!(cut("  short ", 10), "short");
        assert_eq!(cut("exactly ten", 11), "exactly ten");
        assert_eq!(cut("a longer sentence", 9), "a longer…");
        assert_eq!(cut("ééééé", 3), "éé…");
    }
}
