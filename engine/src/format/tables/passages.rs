//! `passages.parquet`: one row per passage (text unit), sorted by `document_key`, `position`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{StringArray, UInt32Array};
use arrow_schema::{Schema, SchemaRef};

use super::{RunLookups, chunked, passage_ids, strings, u32f, u32s, utf8};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::mapped::passages::PassageColumns;
use crate::format::mapped::{Primitives, Strings};
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "passages.parquet";
/// Stable passage id `<document_key>#<position>` (string); the evidence id.
pub const PASSAGE_ID: &str = "passage_id";
/// Key of the owning document (string).
pub const DOCUMENT_KEY: &str = "document_key";
/// 0-based chunk index within the document (uint32).
pub const POSITION: &str = "position";
/// Passage text (string).
pub const TEXT: &str = "text";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8(PASSAGE_ID),
        utf8(DOCUMENT_KEY),
        u32f(POSITION),
        utf8(TEXT),
    ]))
}

/// One passage. Rows must be sorted by document key, then position.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageRecord {
    /// Stable id `<document_key>#<position>`.
    pub passage_id: String,
    /// Owning document.
    pub document_key: String,
    /// 0-based position in the document.
    pub position: u32,
    /// Text.
    pub text: String,
}

/// Writes the passages of `l`, in their order (by document, then position).
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[DOCUMENT_KEY, POSITION],
        chunked(&schema, l.num_passages(), |range| {
            let ps: Vec<(u32, u32, &str)> = range.clone().map(|p| l.passage(p as u32)).collect();
            Ok(vec![
                passage_ids(l, range.map(|p| p as u32)),
                strings(ps.iter().map(|p| l.document(p.0).key)),
                u32s(ps.iter().map(|p| p.1)),
                strings(ps.iter().map(|p| p.2)),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run of format 1, without `passages.arrow`) into the
/// columns a run of format 2 maps, with each passage's document found among `keys` (the
/// documents' keys, ascending). Passages must be grouped by document in key order, positions
/// ascending within a document, and each id must follow its rule. Returns the columns and the
/// first passage row of each document (`keys.len()` values; a document without passages
/// starts where the next one does).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row; as [`read_parquet`].
pub(crate) fn read(
    dir: &Path,
    run_id: Option<&str>,
    keys: &Strings,
) -> Result<(PassageColumns, Vec<u32>)> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let ids = column_no_nulls::<StringArray>(&b, PASSAGE_ID, &path)?;
    let docs = column_no_nulls::<StringArray>(&b, DOCUMENT_KEY, &path)?;
    let pos = column_no_nulls::<UInt32Array>(&b, POSITION, &path)?;
    let text = column_no_nulls::<StringArray>(&b, TEXT, &path)?;
    let np = b.num_rows();
    let mut passage_document = Vec::with_capacity(np);
    let mut first_passage = vec![0u32; keys.len()];
    let mut next_doc = 0usize;
    for row in 0..np {
        let key = docs.value(row);
        let d = keys.find_sorted(key).ok_or_else(|| {
            EngineError::corrupt(
                &path,
                format!("row {row}: document_key {key:?} is not in documents.parquet"),
            )
        })?;
        let prev = passage_document.last().copied();
        if prev.is_some_and(|q: u32| q > d || (q == d && pos.value(row - 1) >= pos.value(row))) {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: passages are not sorted by (document_key, position)"),
            ));
        }
        let id = ids.value(row);
        if id != super::passage_id(key, pos.value(row)) {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: passage_id {id:?} is not <document_key>#<position>"),
            ));
        }
        while next_doc <= d as usize {
            first_passage[next_doc] = row as u32;
            next_doc += 1;
        }
        passage_document.push(d);
    }
    for f in first_passage.iter_mut().skip(next_doc) {
        *f = np as u32;
    }
    let passages = PassageColumns {
        document: Primitives::from_vec(passage_document),
        position: Primitives::from_array(pos.clone()),
        text: Strings::from_utf8_array(text),
    };
    Ok((passages, first_passage))
}
