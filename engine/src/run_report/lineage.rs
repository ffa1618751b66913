//! Lineage of a run: its parent run, and how its communities relate to the parent's.
//!
//! A run that continued the run `LATEST` named when it started records that parent and the
//! lineage of its communities (the pipeline writes them; see
//! [`community_lineage`](crate::format::tables::community_lineage)); a root's first run has
//! no parent. This module shows what a run records and invents nothing. It reads:
//! * the parent: `parent_run_id` at the top of `manifest.json` (or in its `stats`);
//! * the events: `community_lineage.parquet` in the run folder, one row per community with an
//!   event column (`event`, else `change` or `kind`: `same`, `grew`, `shrank`, `split`,
//!   `merged`, `new`, `dissolved`) and, when present, `community_id`, `predecessor` (or
//!   `predecessor_id`, `previous_community_id`), `size`, `previous_size` (or
//!   `predecessor_size`) and `jaccard` (or `overlap`); without the table, an object of counts
//!   per event at `stats.lineage` of the manifest.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use super::{Lineage, LineageChange, LineageStatus};
use crate::error::{EngineError, Result};

/// File name of the lineage table in a run folder.
pub const LINEAGE_FILE: &str = crate::format::tables::community_lineage::FILE;
/// Most changes listed.
pub(crate) const MAX_CHANGES: usize = 15;

/// The parent run the manifest names, if any.
pub(crate) fn parent_run_id(manifest: &Value) -> Option<String> {
    [
        manifest.get("parent_run_id"),
        manifest.get("stats").and_then(|s| s.get("parent_run_id")),
    ]
    .into_iter()
    .flatten()
    .find_map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
}

/// The lineage of the run in `dir` (manifest `manifest`) under `root_runs` (`<root>/runs`).
///
/// # Errors
/// [`EngineError::Io`] when the lineage table exists but cannot be opened;
/// [`EngineError::Corrupt`] when it is not Parquet or cannot be decoded. A table of another
/// shape (no event column) is not an error: the lineage then says so in its `note`.
pub(crate) fn read(dir: &Path, root_runs: &Path, manifest: &Value) -> Result<Lineage> {
    let parent = parent_run_id(manifest);
    let mut out = Lineage {
        status: LineageStatus::NoParent,
        parent_in_root: parent.as_ref().map(|p| root_runs.join(p).is_dir()),
        parent_run_id: parent,
        events: BTreeMap::new(),
        events_source: None,
        biggest_changes: Vec::new(),
        note: String::new(),
    };
    let table = dir.join(LINEAGE_FILE);
    if table.is_file() {
        read_table(&table, &mut out)?;
    } else if let Some(counts) = manifest
        .get("stats")
        .and_then(|s| s.get("lineage"))
        .and_then(Value::as_object)
    {
        for (event, n) in counts {
            if let Some(n) = n.as_u64() {
                out.events.insert(event.clone(), n);
            }
        }
        if !out.events.is_empty() {
            out.events_source = Some("manifest stats.lineage".into());
        }
    }
    out.status = match (&out.parent_run_id, out.events_source.is_some()) {
        (_, true) => LineageStatus::Lineage,
        (Some(_), false) => LineageStatus::ParentOnly,
        (None, false) => LineageStatus::NoParent,
    };
    if out.note.is_empty() {
        out.note = match out.status {
            LineageStatus::NoParent => {
                "first run on this root, or no parent recorded: every community is new".into()
            }
            LineageStatus::ParentOnly => format!(
                "the manifest names a parent run but the run records no community lineage ({LINEAGE_FILE})"
            ),
            LineageStatus::Lineage => String::new(),
        };
    }
    Ok(out)
}

fn first_column(batch: &RecordBatch, names: &[&str]) -> Option<ArrayRef> {
    names.iter().find_map(|n| batch.column_by_name(n).cloned())
}

/// Row `i` of an integer column of any width, or `None` (null, or not an integer column).
fn int_at(col: Option<&ArrayRef>, i: usize) -> Option<i64> {
    let col = col?;
    if col.is_null(i) {
        return None;
    }
    match col.data_type() {
        DataType::UInt32 => Some(i64::from(col.as_primitive::<UInt32Type>().value(i))),
        DataType::UInt64 => i64::try_from(col.as_primitive::<UInt64Type>().value(i)).ok(),
        DataType::Int32 => Some(i64::from(col.as_primitive::<Int32Type>().value(i))),
        DataType::Int64 => Some(col.as_primitive::<Int64Type>().value(i)),
        _ => None,
    }
}

fn float_at(col: Option<&ArrayRef>, i: usize) -> Option<f64> {
    let col = col?;
    if col.is_null(i) {
        return None;
    }
    match col.data_type() {
        DataType::Float64 => Some(col.as_primitive::<Float64Type>().value(i)),
        DataType::Float32 => Some(f64::from(col.as_primitive::<Float32Type>().value(i))),
        _ => None,
    }
}

fn read_table(path: &Path, out: &mut Lineage) -> Result<()> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| EngineError::corrupt_because(path, "not a readable Parquet file", e))?;
    let mut changes = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| EngineError::corrupt_because(path, "Parquet decode", e))?;
        let Some(event) = first_column(&batch, &["event", "change", "kind"]) else {
            out.note = format!(
                "{LINEAGE_FILE} has no event column (looked for event, change, kind): its counts are not shown"
            );
            return Ok(());
        };
        let Some(event) = event.as_string_opt::<i32>() else {
            out.note = format!("{LINEAGE_FILE}: the event column is not a string column");
            return Ok(());
        };
        let community = first_column(&batch, &["community_id"]);
        let predecessor = first_column(
            &batch,
            &["predecessor", "predecessor_id", "previous_community_id"],
        );
        let size = first_column(&batch, &["size", "num_members"]);
        let previous = first_column(&batch, &["previous_size", "predecessor_size"]);
        let jaccard = first_column(&batch, &["jaccard", "overlap"]);
        for i in 0..batch.num_rows() {
            if event.is_null(i) {
                continue;
            }
            let name = event.value(i).to_owned();
            *out.events.entry(name.clone()).or_default() += 1;
            if name != "same" {
                changes.push(LineageChange {
                    event: name,
                    community_id: int_at(community.as_ref(), i).and_then(|c| u32::try_from(c).ok()),
                    predecessor: int_at(predecessor.as_ref(), i)
                        .and_then(|c| u32::try_from(c).ok()),
                    size: int_at(size.as_ref(), i).and_then(|s| u64::try_from(s).ok()),
                    previous_size: int_at(previous.as_ref(), i).and_then(|s| u64::try_from(s).ok()),
                    jaccard: float_at(jaccard.as_ref(), i),
                    title: None,
                });
            }
        }
    }
    let delta = |c: &LineageChange| {
        (c.size.unwrap_or(0) as i64 - c.previous_size.unwrap_or(0) as i64).unsigned_abs()
    };
    changes.sort_by(|a, b| {
        delta(b)
            .cmp(&delta(a))
            .then(a.community_id.cmp(&b.community_id))
            .then(a.predecessor.cmp(&b.predecessor))
    });
    changes.truncate(MAX_CHANGES);
    out.biggest_changes = changes;
    out.events_source = Some(LINEAGE_FILE.into());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_where_a_manifest_records_it() {
        assert_eq!(parent_run_id(&serde_json::json!({"stats": {}})), None);
        assert_eq!(
            parent_run_id(&serde_json::json!({"parent_run_id": "p"})).as_deref(),
            Some("p")
        );
        assert_eq!(
            parent_run_id(&serde_json::json!({"stats": {"parent_run_id": "q"}})).as_deref(),
            Some("q")
        );
        assert_eq!(
            parent_run_id(&serde_json::json!({"parent_run_id": null})),
            None
        );
    }
}
