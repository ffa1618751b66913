//! `concept_postings.arrow`: the inverted form of `document_concepts`, precomputed so that an
//! engine opens a run without reading every (document, concept) row. One row per (node field,
//! concept) with the documents holding it, plus one row per node field whose `concept_id` is
//! null: every document holding at least one concept in that field. Sorted by (node_field,
//! concept_id), nulls first. Arrow IPC (engine accelerator; `document_concepts.parquet` remains
//! the table for analysis, and runs without this file are indexed from it at open).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{RunLookups, batch, strings, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::concepts::ConceptColumns;
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
    w: &mut RunWriter,
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

/// Per node field, concept → documents and all linked documents.
pub(crate) type Postings = (
    HashMap<String, HashMap<u32, roaring::RoaringBitmap>>,
    HashMap<String, roaring::RoaringBitmap>,
);

/// Reads the file at `path`, checking every concept id against `vocabulary` and every
/// document row against `num_documents`.
///
/// # Errors
/// [`EngineError::Io`] when it cannot be mapped; [`EngineError::Corrupt`] naming the file
/// (and the row) for anything else.
pub(crate) fn read(
    path: &Path,
    vocabulary: &ConceptColumns,
    num_documents: usize,
) -> Result<Postings> {
    let buffer = mmap::map_file(path)?;
    let batches = mmap::decode_ipc_file(path, &buffer)?;
    let mut postings: HashMap<String, HashMap<u32, roaring::RoaringBitmap>> = HashMap::new();
    let mut linked: HashMap<String, roaring::RoaringBitmap> = HashMap::new();
    let mut row = 0usize;
    for b in &batches {
        crate::format::reader::check_schema(path, &b.schema(), &schema())?;
        let fields = b.column(0).as_string::<i32>();
        let concepts = b.column(1).as_string::<i32>();
        let counts = b.column(2).as_primitive::<arrow_array::types::UInt64Type>();
        let blobs = b.column(3).as_binary::<i32>();
        if fields.null_count() + counts.null_count() + blobs.null_count() > 0 {
            return Err(EngineError::corrupt(path, "null values"));
        }
        for i in 0..b.num_rows() {
            let bad = |why: String| EngineError::corrupt(path, format!("row {row}: {why}"));
            let set = roaring::RoaringBitmap::deserialize_from(blobs.value(i))
                .map_err(|e| bad(format!("documents: {e}")))?;
            if set.len() != counts.value(i) {
                return Err(bad(format!(
                    "{} documents where num_documents says {}",
                    set.len(),
                    counts.value(i)
                )));
            }
            if set.max().is_some_and(|m| m as usize >= num_documents) {
                return Err(bad(format!(
                    "document row {} out of range ({num_documents} documents)",
                    set.max().unwrap_or_default()
                )));
            }
            let field = fields.value(i);
            if concepts.is_null(i) {
                linked.insert(field.to_owned(), set);
            } else {
                let id = concepts.value(i);
                let c = vocabulary
                    .row(id)
                    .ok_or_else(|| bad(format!("concept {id:?} is not in concepts.parquet")))?;
                postings.entry(field.to_owned()).or_default().insert(c, set);
            }
            row += 1;
        }
    }
    Ok((postings, linked))
}
