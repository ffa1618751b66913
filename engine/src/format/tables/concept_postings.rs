//! `concept_postings.arrow`: the inverted form of `document_concepts`, precomputed so that an
//! engine opens a run without reading every (document, concept) row. One row per (node field,
//! concept) with the documents holding it, plus one row per node field whose `concept_id` is
//! null: every document holding at least one concept in that field. Sorted by (node_field,
//! concept_id), nulls first. Arrow IPC (engine accelerator; `document_concepts.parquet` remains
//! the table for analysis, and runs without this file are indexed from it at open).

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use roaring::RoaringBitmap;

use super::{RunLookups, batch, strings, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::store::mmap;

/// File name inside the run folder.
pub const FILE: &str = "concept_postings.arrow";
/// Node field (string).
pub const NODE_FIELD: &str = "node_field";
/// Concept id (string; null for the field's row of all linked documents).
pub const CONCEPT_ID: &str = "concept_id";
/// Number of documents in the set (uint64).
pub const NUM_DOCUMENTS: &str = "num_documents";
/// The set of document row numbers (0-based, `documents.parquet` order), as a roaring bitmap
/// in the portable serialization of the RoaringFormatSpec (binary).
pub const DOCUMENTS: &str = "documents";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(NODE_FIELD),
        Field::new(CONCEPT_ID, DataType::Utf8, true),
        Field::new(NUM_DOCUMENTS, DataType::UInt64, false),
        Field::new(DOCUMENTS, DataType::Binary, false),
    ]))
}

/// Writes the file from the sorted, deduplicated `(node_field, document, concept)` rows (see
/// [`super::document_concepts::sort`]); `rank` orders concepts by id.
///
/// # Errors
/// [`EngineError::Internal`] when the rows are not sorted; [`EngineError::Io`] on write
/// failures.
pub(crate) fn write(
    w: &RunWriter,
    lookups: &dyn RunLookups,
    rows: &[(&str, u32, u32)],
    rank: &[u32],
) -> Result<()> {
    // (field, concept or None for "all linked") → ascending document rows. Rows are sorted by
    // (field, document, concept), so each field's rows are contiguous and documents ascend.
    type Set<'a> = ((&'a str, Option<&'a str>), Vec<u32>);
    let mut sets: Vec<Set<'_>> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let field = rows[start].0;
        let end = start + rows[start..].partition_point(|r| r.0 == field);
        let mut all: Vec<u32> = Vec::new();
        // concept rank → (a concept of that id, its documents)
        let mut per_concept: HashMap<u32, (u32, Vec<u32>)> = HashMap::new();
        for r in &rows[start..end] {
            if all.last() != Some(&r.1) {
                all.push(r.1);
            }
            per_concept
                .entry(rank[r.2 as usize])
                .or_insert_with(|| (r.2, Vec::new()))
                .1
                .push(r.1);
        }
        let mut concepts: Vec<(u32, (u32, Vec<u32>))> = per_concept.into_iter().collect();
        concepts.sort_unstable_by_key(|a| a.0);
        sets.push(((field, None), all));
        sets.extend(
            concepts
                .into_iter()
                .map(|(_, (c, docs))| ((field, Some(lookups.concept_id(c))), docs)),
        );
        start = end;
    }
    let mut blobs = Vec::with_capacity(sets.len());
    let mut counts = Vec::with_capacity(sets.len());
    for (_, docs) in &sets {
        let b = roaring::RoaringBitmap::from_sorted_iter(docs.iter().copied())
            .map_err(|e| EngineError::Internal(format!("postings not sorted: {e}")))?;
        let mut bytes = Vec::with_capacity(b.serialized_size());
        b.serialize_into(&mut bytes)
            .map_err(|e| EngineError::Internal(format!("serializing postings: {e}")))?;
        blobs.push(bytes);
        counts.push(b.len());
    }
    let b = batch(
        schema(),
        vec![
            strings(sets.iter().map(|(k, _)| k.0)),
            Arc::new(StringArray::from_iter(sets.iter().map(|(k, _)| k.1))),
            Arc::new(arrow_array::UInt64Array::from(counts)),
            Arc::new(arrow_array::BinaryArray::from_iter_values(blobs.iter())),
        ],
    )?;
    w.write_ipc(FILE, &b)
}

/// The file mapped in place: a row is found by binary search over (node field, concept id),
/// and its document set is decoded (and checked) the first time a query asks for it, then
/// kept for the life of the run. Opening touches the node fields and concept ids only, so the
/// cost of an open does not grow with the number of (document, concept) pairs, and memory
/// grows with the concepts queries touch.
#[derive(Debug)]
pub(crate) struct MappedPostings {
    path: PathBuf,
    batches: Vec<RecordBatch>,
    /// First row of each batch, then the number of rows.
    starts: Vec<usize>,
    num_documents: usize,
    decoded: Vec<OnceLock<Result<RoaringBitmap>>>,
}

impl MappedPostings {
    /// Maps the file at `path` of a run of `num_documents` documents and checks its schema,
    /// that no value is null but a concept id, and that rows are sorted by (node field,
    /// concept id) with the field's row of all linked documents (null concept id) first and
    /// no (field, concept) twice.
    ///
    /// # Errors
    /// [`EngineError::Io`] when it cannot be mapped; [`EngineError::Corrupt`] naming the file
    /// (and the row) for anything else.
    pub(crate) fn open(path: &Path, num_documents: usize) -> Result<Self> {
        let buffer = mmap::map_file(path)?;
        let batches = mmap::decode_ipc_file(path, &buffer)?;
        let mut starts = Vec::with_capacity(batches.len() + 1);
        let mut rows = 0usize;
        for b in &batches {
            crate::format::reader::check_schema(path, &b.schema(), &schema())?;
            let nulls =
                b.column(0).null_count() + b.column(2).null_count() + b.column(3).null_count();
            if nulls > 0 {
                return Err(EngineError::corrupt(path, "null values"));
            }
            starts.push(rows);
            rows += b.num_rows();
        }
        starts.push(rows);
        let file = Self {
            path: path.to_owned(),
            batches,
            starts,
            num_documents,
            decoded: (0..rows).map(|_| OnceLock::new()).collect(),
        };
        for r in 1..rows {
            let (a, b) = (
                (file.field(r - 1), file.concept(r - 1)),
                (file.field(r), file.concept(r)),
            );
            if a >= b {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "row {r}: {b:?} does not follow {a:?} (rows must ascend by node field, then concept id)"
                    ),
                ));
            }
        }
        Ok(file)
    }

    /// Batch and row within it of row `r` (`r` < number of rows).
    fn locate(&self, r: usize) -> (&RecordBatch, usize) {
        let b = self.starts.partition_point(|&s| s <= r) - 1;
        (&self.batches[b], r - self.starts[b])
    }

    fn field(&self, r: usize) -> &str {
        let (b, i) = self.locate(r);
        b.column(0).as_string::<i32>().value(i)
    }

    fn concept(&self, r: usize) -> Option<&str> {
        let (b, i) = self.locate(r);
        let c = b.column(1).as_string::<i32>();
        c.is_valid(i).then(|| c.value(i))
    }

    /// Each node field with its rows: the row of all its linked documents (when present) and
    /// the range of its concepts' rows, by field name.
    pub(crate) fn fields(&self) -> Vec<(String, Option<usize>, Range<usize>)> {
        let n = self.decoded.len();
        let mut out = Vec::new();
        let mut r = 0;
        while r < n {
            let field = self.field(r);
            let end = r + (r..n).take_while(|&q| self.field(q) == field).count();
            let linked = self.concept(r).is_none().then_some(r);
            let first = r + usize::from(linked.is_some());
            out.push((field.to_owned(), linked, first..end));
            r = end;
        }
        out
    }

    /// The row among `rows` (one field's concept rows) of concept `id`, if the file has it.
    pub(crate) fn find(&self, rows: Range<usize>, id: &str) -> Option<usize> {
        let (mut lo, mut hi) = (rows.start, rows.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.concept(mid).unwrap_or_default().cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The document rows of row `r`, decoded on first use and checked: the count matches
    /// `num_documents` and every row is below the run's number of documents.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] naming the file and row (the same error at every later call).
    pub(crate) fn documents(&self, r: usize) -> Result<&RoaringBitmap> {
        let Some(cell) = self.decoded.get(r) else {
            return Err(EngineError::corrupt(
                &self.path,
                format!("row {r} out of range"),
            ));
        };
        cell.get_or_init(|| self.decode(r))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn decode(&self, r: usize) -> Result<RoaringBitmap> {
        let (b, i) = self.locate(r);
        let bad = |why: String| EngineError::corrupt(&self.path, format!("row {r}: {why}"));
        let blob = b.column(3).as_binary::<i32>().value(i);
        let count = b.column(2).as_primitive::<UInt64Type>().value(i);
        let set = RoaringBitmap::deserialize_from(blob).map_err(|e| {
            EngineError::corrupt_because(&self.path, format!("row {r}: documents"), e)
        })?;
        if set.len() != count {
            return Err(bad(format!(
                "{} documents where num_documents says {count}",
                set.len()
            )));
        }
        if let Some(m) = set.max().filter(|&m| m as usize >= self.num_documents) {
            return Err(bad(format!(
                "document row {m} out of range ({} documents)",
                self.num_documents
            )));
        }
        Ok(set)
    }
}
