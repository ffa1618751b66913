//! `document_concepts.parquet`: each document's concept set per node field, sorted by
//! `node_field`, `document_key`, `concept_id`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::StringArray;
use arrow_schema::{Schema, SchemaRef};

use super::{RunLookups, chunked, strings, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::concepts::ConceptColumns;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "document_concepts.parquet";
/// Document key (string).
pub const DOCUMENT_KEY: &str = "document_key";
/// Node field (string): `concept` (from linking) or `mesh` (the input's own annotations).
pub const NODE_FIELD: &str = "node_field";
/// Concept id (string).
pub const CONCEPT_ID: &str = "concept_id";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(DOCUMENT_KEY),
        utf8(NODE_FIELD),
        utf8(CONCEPT_ID),
    ]))
}

/// Sorts `(node_field, document, concept)` rows as the table is sorted and drops duplicates;
/// `rank` orders concepts by id (documents ascend with their keys). `concept_postings.arrow`
/// is made from the rows in this order.
pub(crate) fn sort<'a>(rows: &mut Vec<(&'a str, u32, u32)>, rank: &[u32]) {
    let key = |r: &(&'a str, u32, u32)| -> (&'a str, u32, u32) { (r.0, r.1, rank[r.2 as usize]) };
    rows.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
    rows.dedup_by(|a, b| key(a) == key(b));
}

/// Writes the rows `rows` (documents and concepts of `l`, already [`sort`]ed).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups, rows: &[(&str, u32, u32)]) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[NODE_FIELD, DOCUMENT_KEY, CONCEPT_ID],
        chunked(&schema, rows.len(), |range| {
            let rows = &rows[range];
            Ok(vec![
                strings(rows.iter().map(|r| l.document(r.1).key)),
                strings(rows.iter().map(|r| r.0)),
                strings(rows.iter().map(|r| l.concept_id(r.2))),
            ])
        }),
    )
}

/// Rows of the table by node field: `(node_field, [(document row, concept row)])`.
pub(crate) type RowsByField = Vec<(String, Vec<(u32, u32)>)>;

/// Reads the table of the run in `dir` (a run without precomputed postings): per node field,
/// `(node_field, [(document row, concept row)])` in file order, documents found by
/// `document_index` and concepts among `concepts`. A field appears more than once only in a
/// file that is not sorted by node field (tolerated).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for a document or concept the run lacks;
/// as [`read_parquet`].
pub(crate) fn read(
    dir: &Path,
    run_id: Option<&str>,
    document_index: &dyn Fn(&str) -> Option<u32>,
    concepts: &ConceptColumns,
) -> Result<RowsByField> {
    let mut document_concepts: RowsByField = Vec::new();
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let dk = column_no_nulls::<StringArray>(&b, DOCUMENT_KEY, &path)?;
    let nf = column_no_nulls::<StringArray>(&b, NODE_FIELD, &path)?;
    let dc = column_no_nulls::<StringArray>(&b, CONCEPT_ID, &path)?;
    // The file is sorted by (node_field, document_key, concept_id): consecutive rows share
    // a field and a document, so each is looked up once per run of rows.
    let mut last_key: Option<(&str, u32)> = None;
    for row in 0..b.num_rows() {
        let key = dk.value(row);
        let d = match last_key {
            Some((k, d)) if k == key => d,
            _ => {
                let d = document_index(key).ok_or_else(|| {
                    EngineError::corrupt(
                        &path,
                        format!("row {row}: document_key {key:?} is not in documents.parquet"),
                    )
                })?;
                last_key = Some((key, d));
                d
            }
        };
        let field = nf.value(row);
        if document_concepts.last().is_none_or(|(f, _)| f != field) {
            document_concepts.push((field.to_owned(), Vec::new()));
        }
        let c = super::concepts::row_of(concepts, dc.value(row), &path, row)?;
        if let Some((_, rows)) = document_concepts.last_mut() {
            rows.push((d, c));
        }
    }
    Ok(document_concepts)
}
