//! `concept_edges.parquet`: vocabulary edges `child -> parent`, sorted by `child`, `parent`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::StringArray;
use arrow_schema::{Schema, SchemaRef};

use super::{RunLookups, chunked, strings, utf8};
use crate::error::Result;
use crate::format::RunWriter;
use crate::format::mapped::concepts::ConceptColumns;
use crate::format::reader::{column_no_nulls, read_parquet};

/// File name inside the run folder.
pub const FILE: &str = "concept_edges.parquet";
/// Narrower concept id (string).
pub const CHILD: &str = "child";
/// Broader concept id (string).
pub const PARENT: &str = "parent";
/// Relation name (string), `subclass_of` for broader/narrower.
pub const RELATION: &str = "relation";
/// The table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![utf8(CHILD), utf8(PARENT), utf8(RELATION)]))
}

/// Sorts `(child, parent, relation)` edges as the table is sorted and drops duplicates;
/// `rank` orders concepts by id (the engine's `concept_edges.arrow` keeps this order too).
pub(crate) fn sort(edges: &mut Vec<(u32, u32, &str)>, rank: &[u32]) {
    let rk = |c: u32| rank[c as usize];
    edges.sort_by(|a, b| (rk(a.0), rk(a.1), a.2).cmp(&(rk(b.0), rk(b.1), b.2)));
    edges.dedup_by(|a, b| (rk(a.0), rk(a.1), a.2) == (rk(b.0), rk(b.1), b.2));
}

/// Writes the edges `edges` (concept indices of `l`, already [`sort`]ed).
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(w: &RunWriter, l: &dyn RunLookups, edges: &[(u32, u32, &str)]) -> Result<()> {
    let schema = schema();
    w.write_parquet_batches(
        FILE,
        &schema,
        &[CHILD, PARENT],
        chunked(&schema, edges.len(), |range| {
            let es = &edges[range];
            Ok(vec![
                strings(es.iter().map(|e| l.concept_id(e.0))),
                strings(es.iter().map(|e| l.concept_id(e.1))),
                strings(es.iter().map(|e| e.2)),
            ])
        }),
    )
}

/// Reads the table of the run in `dir` (a run without `concept_edges.arrow`): `(child,
/// parent, relation)` by concept row of `concepts`, in file order.
///
/// # Errors
/// [`crate::EngineError::Corrupt`] naming the file and row for a concept the vocabulary
/// lacks; as [`read_parquet`].
pub(crate) fn read(
    dir: &Path,
    run_id: Option<&str>,
    concepts: &ConceptColumns,
) -> Result<Vec<(u32, u32, String)>> {
    let path = dir.join(FILE);
    let b = read_parquet(&path, &schema(), run_id)?;
    let child = column_no_nulls::<StringArray>(&b, CHILD, &path)?;
    let parent = column_no_nulls::<StringArray>(&b, PARENT, &path)?;
    let rel = column_no_nulls::<StringArray>(&b, RELATION, &path)?;
    let mut edges = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        edges.push((
            super::concepts::row_of(concepts, child.value(row), &path, row)?,
            super::concepts::row_of(concepts, parent.value(row), &path, row)?,
            rel.value(row).to_owned(),
        ));
    }
    Ok(edges)
}
