//! `concept_edges.arrow`: the vocabulary's hierarchy, one row per edge of
//! `concept_edges.parquet` in the same order, with both ends as rows of
//! [`super::concepts`] instead of ids, so the engine builds its broader/narrower maps without
//! looking up an id.

use std::path::Path;
use std::sync::Arc;

use arrow_array::UInt32Array;
use arrow_array::types::UInt32Type;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Table, binary, write_file};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;

/// File name inside the run folder.
pub const FILE: &str = "concept_edges.arrow";
/// The narrower concept (uint32: row in `concepts.arrow`).
pub const CHILD: &str = "child";
/// The broader concept (uint32: row in `concepts.arrow`).
pub const PARENT: &str = "parent";
/// The relation's name (UTF-8 as `Binary`), as in `concept_edges.parquet`.
pub const RELATION: &str = "relation";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(CHILD, DataType::UInt32, false),
        Field::new(PARENT, DataType::UInt32, false),
        Field::new(RELATION, DataType::Binary, false),
    ]))
}

/// Writes the file: `rows` edges, `(child row, parent row, relation)` of edge `r` given by
/// `edge(r)`.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write<'a>(
    w: &RunWriter,
    rows: usize,
    edge: impl Fn(usize) -> (u32, u32, &'a str),
) -> Result<()> {
    write_file(w, FILE, &schema(), rows, |range| {
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(
                range.clone().map(|r| edge(r).0),
            )) as _,
            Arc::new(UInt32Array::from_iter_values(
                range.clone().map(|r| edge(r).1),
            )) as _,
            binary(range.map(|r| edge(r).2)),
        ])
    })
}

/// Reads the `rows` edges of the run in `dir` as `(child, parent, relation)`, checking that
/// both ends are rows below `num_concepts`.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file (and the row
/// of an end out of range).
pub(crate) fn read(
    dir: &Path,
    rows: usize,
    num_concepts: usize,
) -> Result<Vec<(u32, u32, String)>> {
    let path = dir.join(FILE);
    let t = Table::open(&path, &schema(), rows)?;
    let child = t.primitives::<UInt32Type>(CHILD, false)?;
    let parent = t.primitives::<UInt32Type>(PARENT, false)?;
    let relation = t.strings(RELATION)?;
    (0..rows)
        .map(|r| {
            let (c, p) = (child.value(r), parent.value(r));
            if c as usize >= num_concepts || p as usize >= num_concepts {
                return Err(EngineError::corrupt(
                    &path,
                    format!(
                        "row {r}: concept row {c} or {p} out of range ({num_concepts} concepts)"
                    ),
                ));
            }
            Ok((c, p, relation.get(r).to_owned()))
        })
        .collect()
}
