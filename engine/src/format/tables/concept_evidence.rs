//! `concept_evidence.parquet`: why each concept of the `concept` node field is in its
//! document's set, as alternatives ("ways"): the concept stands while every passage of at
//! least one of its ways is visible. A way is the group of rows with the same
//! (`document_key`, `concept_id`, `way`); a row with a null `passage_id` is a way that needs no
//! passage (the title alone). Sorted by `document_key`, `concept_id`, `way`, `passage_id`.
//!
//! This is how a hidden passage stops finding its document at once: a concept whose every
//! way runs through a hidden passage no longer matches, without a new run. Runs without this
//! file (format 1 before it existed) withdraw every concept of a document that has a hidden
//! passage.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{Array, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use roaring::RoaringBitmap;

use super::{RunLookups, chunked, push_passage_id, strings, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::Strings;
use crate::format::mapped::concepts::ConceptColumns;
use crate::format::reader::{column, column_no_nulls, read_parquet_row_groups};
use crate::snapshot::evidence::{ConceptEvidence, TITLE};

/// File name inside the run folder.
pub const FILE: &str = "concept_evidence.parquet";
/// Document key (string).
pub const DOCUMENT_KEY: &str = "document_key";
/// Concept id (string).
pub const CONCEPT_ID: &str = "concept_id";
/// Number of the way within (document, concept), from 0 (uint32).
pub const WAY: &str = "way";
/// A passage the way needs (string), or null for a way through the title alone.
pub const PASSAGE_ID: &str = "passage_id";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(DOCUMENT_KEY),
        utf8(CONCEPT_ID),
        u32f(WAY),
        Field::new(PASSAGE_ID, DataType::Utf8, true),
    ]))
}

/// Writes `(document, concept, way, passage row)` rows of `l` (any order; sorted here and
/// deduplicated); `rank` orders concepts by id and `passage_rank` passages by id.
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &RunWriter,
    l: &dyn RunLookups,
    mut rows: Vec<(u32, u32, u32, Option<u32>)>,
    rank: &[u32],
    passage_rank: &[u32],
) -> Result<()> {
    let key = |r: &(u32, u32, u32, Option<u32>)| {
        (
            r.0,
            rank[r.1 as usize],
            r.2,
            r.3.map(|p| passage_rank[p as usize]),
        )
    };
    rows.sort_unstable_by_key(key);
    rows.dedup_by(|a, b| key(a) == key(b));
    let ev = &rows;
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[DOCUMENT_KEY, CONCEPT_ID, WAY],
        chunked(&schema, ev.len(), |range| {
            let rows = &ev[range];
            let mut id = String::new();
            let mut ids = StringBuilder::new();
            for r in rows {
                match r.3 {
                    Some(p) => {
                        let (d, pos, _) = l.passage(p);
                        id.clear();
                        push_passage_id(&mut id, l.document(d).key, pos);
                        ids.append_value(&id);
                    }
                    None => ids.append_null(),
                }
            }
            Ok(vec![
                strings(rows.iter().map(|r| l.document(r.0).key)),
                strings(rows.iter().map(|r| l.concept_id(r.1))),
                u32s(rows.iter().map(|r| r.2)),
                Arc::new(ids.finish()),
            ])
        }),
    )
}

/// Reads from the table of the run in `dir` the rows of the document rows `wanted`, whose
/// keys are `keys[row]`. The table is sorted by document key, so only the row groups whose key
/// range holds a wanted key are read: the cost follows the documents asked for, not the
/// corpus.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an unknown concept or passage; as
/// [`read_parquet_row_groups`].
pub(crate) fn read(
    dir: &Path,
    run_id: Option<&str>,
    wanted: &RoaringBitmap,
    keys: &Strings,
    concepts: &ConceptColumns,
    passages: &dyn Fn(&str) -> Option<u32>,
) -> Result<ConceptEvidence> {
    let path = dir.join(FILE);
    let mut wanted_keys: Vec<(&str, u32)> = wanted
        .iter()
        .filter(|&d| (d as usize) < keys.len())
        .map(|d| (keys.get(d as usize), d))
        .collect();
    wanted_keys.sort_unstable();
    if wanted_keys.is_empty() {
        return Ok(ConceptEvidence::default());
    }
    let key_column = schema().index_of(DOCUMENT_KEY).unwrap_or(0);
    let b = read_parquet_row_groups(&path, &schema(), run_id, |rg| {
        let stats = rg.columns().get(key_column).and_then(|c| c.statistics());
        match stats.and_then(|s| Some((s.min_bytes_opt()?, s.max_bytes_opt()?))) {
            Some((lo, hi)) => {
                let first = wanted_keys.partition_point(|(k, _)| k.as_bytes() < lo);
                wanted_keys
                    .get(first)
                    .is_some_and(|(k, _)| k.as_bytes() <= hi)
            }
            None => true,
        }
    })?;
    let doc_keys = column_no_nulls::<StringArray>(&b, DOCUMENT_KEY, &path)?;
    let ids = column_no_nulls::<StringArray>(&b, CONCEPT_ID, &path)?;
    let ways = column_no_nulls::<UInt32Array>(&b, WAY, &path)?;
    let pids = column::<StringArray>(&b, PASSAGE_ID, &path)?;
    let mut rows: Vec<(u32, u32, u32, u32)> = Vec::new();
    for row in 0..b.num_rows() {
        let key = doc_keys.value(row);
        let Ok(i) = wanted_keys.binary_search_by(|(k, _)| (*k).cmp(key)) else {
            continue;
        };
        let bad = |what: &str, v: &str| {
            EngineError::corrupt(&path, format!("row {row}: {what} {v:?} is not in the run"))
        };
        let id = ids.value(row);
        let c = concepts.row(id).ok_or_else(|| bad("concept_id", id))?;
        let p = if pids.is_null(row) {
            TITLE
        } else {
            let pid = pids.value(row);
            passages(pid).ok_or_else(|| bad("passage_id", pid))?
        };
        rows.push((wanted_keys[i].1, c, ways.value(row), p));
    }
    Ok(ConceptEvidence::from_rows(rows))
}
