//! Every table of a run: its schema, its rows as plain Rust data, its writer and its readers,
//! one module per table; and [`write_run`], which turns a run's rows into the files of the
//! contract. The pipeline fills a [`RunData`]; tests and benches build small or synthetic
//! runs the same way, so every run on disk comes from this one writer.
//!
//! Each module holds its table's file name, the column-name constants and `schema()`. These
//! are the names and types that data engineers see in polars, pandas or DuckDB, and that
//! README.md documents. Changing any of them is a format change and bumps
//! [`FORMAT_VERSION`](super::FORMAT_VERSION). A module also holds the table's record struct
//! (when the rows are not given as tuples), its writer (the part of
//! [`write_run_columns_into`] that writes it) and the engine's readers of it.
//!
//! | module | file | rows |
//! |---|---|---|
//! | [`documents`] | `documents.parquet` | one per document |
//! | [`passages`] | `passages.parquet` | one per passage |
//! | [`concepts`] | `concepts.parquet` | one per vocabulary concept |
//! | [`concept_edges`] | `concept_edges.parquet` | one per vocabulary edge |
//! | [`document_concepts`] | `document_concepts.parquet` | one per (node field, document, concept) |
//! | [`concept_evidence`] | `concept_evidence.parquet` | the ways each linked concept was reached |
//! | [`concept_postings`] | `concept_postings.arrow` | one per (node field, concept) |
//! | [`entities`] | `entities.parquet` | one per graph node |
//! | [`mentions`] | `mentions.parquet` | one per (entity, passage) |
//! | [`relationships`] | `relationships.parquet` | one per graph edge |
//! | [`communities`] | `communities.parquet` | one per community |
//! | [`community_lineage`] | `community_lineage.parquet` | how the communities continue the parent run's |
//! | [`membership`] | `membership.parquet` | one per (level, entity) |
//! | [`reports`] | `reports.parquet` | one per community |
//! | [`report_sources`] | `report_sources.parquet` | one per (community, quoted passage) |
//! | [`report_embeddings`] | `report_embeddings.parquet`, `.arrow` | one or more per community |
//! | [`document_embeddings`] | `document_embeddings.parquet`, `.arrow` | one per document |
//! | [`report_ivf`] | `report_ivf_centroids.arrow`, `report_ivf_lists.arrow` | the IVF index of the report embeddings |
//!
//! The engine's mapped column files ([`super::mapped`]) are written from the same rows, by
//! [`write_run_columns_into`], in between.

pub mod communities;
pub mod community_lineage;
pub mod concept_edges;
pub mod concept_evidence;
pub mod concept_postings;
pub mod concepts;
pub mod document_concepts;
pub mod document_embeddings;
pub mod documents;
pub mod entities;
pub mod membership;
pub mod mentions;
pub mod passages;
pub mod relationships;
pub mod report_embeddings;
pub mod report_ivf;
pub mod report_sources;
pub mod reports;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, StringArray, UInt32Array,
};
use arrow_schema::{DataType, Field};

pub use communities::CommunityRecord;
pub use community_lineage::{LineageColumns, LineageRecord};
pub use concepts::ConceptRecord;
pub use documents::DocumentRecord;
pub use entities::EntityRecord;
pub use membership::MembershipRecord;
pub use passages::PassageRecord;
pub use report_embeddings::ReportVectors;
pub use reports::ReportRecord;

use super::layout::Layout;
use super::manifest::Manifest;
use super::mapped::Csr;
use super::staged::RowBuffer;
use super::writer::RunWriter;
use crate::embed::EmbedderIdentity;
use crate::error::{EngineError, Result};
use crate::store::mmap;

fn utf8(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

fn u32f(name: &str) -> Field {
    Field::new(name, DataType::UInt32, false)
}

fn list_utf8(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, false))),
        false,
    )
}

/// Every row of a run. See each table's module (such as [`documents`]) for the columns each
/// becomes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    /// Documents, sorted by key.
    pub documents: Vec<DocumentRecord>,
    /// Passages, sorted by document key then position.
    pub passages: Vec<PassageRecord>,
    /// The vocabulary (any order; written sorted by id).
    pub concepts: Vec<ConceptRecord>,
    /// Vocabulary edges `(child, parent, relation)` (any order; written sorted).
    pub concept_edges: Vec<(String, String, String)>,
    /// `(node_field, document_key, concept_id)` (any order; written sorted, deduplicated).
    pub document_concepts: Vec<(String, String, String)>,
    /// `(document_key, concept_id, way, passage_id)` of the `concept` node field, `None` for a
    /// way through the title alone (any order; written sorted, deduplicated). See
    /// [`concept_evidence`].
    pub concept_evidence: Vec<(String, String, u32, Option<String>)>,
    /// Entities; entity id = index.
    pub entities: Vec<EntityRecord>,
    /// `(entity, passage_id, occurrences)` (any order; written sorted).
    pub mentions: Vec<(u32, String, u32)>,
    /// Edges `(source, target, weight)` with `source < target`, sorted.
    pub relationships: Vec<(u32, u32, f64)>,
    /// Communities. Everywhere else in these columns a community is its row index here.
    pub communities: Vec<CommunityRecord>,
    /// The public id of each community row, strictly ascending, written wherever a community
    /// is named; empty: the row index itself.
    pub community_ids: Vec<u32>,
    /// The lineage table and the manifest's lineage fields; `None`: no lineage table (runs
    /// written by tests and benches).
    pub lineage: Option<LineageColumns>,
    /// Membership rows, sorted by level then entity.
    pub membership: Vec<MembershipRecord>,
    /// One report per community.
    pub reports: Vec<ReportRecord>,
    /// `(community, passage_id)`: the passages each report quotes (any order; written sorted,
    /// deduplicated). See [`report_sources`].
    pub report_sources: Vec<(u32, String)>,
    /// Report embeddings, row-major, `rows × dim`: one or more vectors per community (see
    /// [`report_embeddings`]).
    pub report_embeddings: Vec<f32>,
    /// The community of each row of `report_embeddings`, non-decreasing, every community at
    /// least once. Empty: one row per community, in community order.
    pub report_embedding_communities: Vec<u32>,
    /// Document embeddings, row-major, `documents × dim` (same embedder).
    pub document_embeddings: Vec<f32>,
}

fn arrow_err(e: arrow_schema::ArrowError) -> EngineError {
    EngineError::Internal(format!("building a record batch: {e}"))
}

fn batch(schema: arrow_schema::SchemaRef, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    RecordBatch::try_new(schema, columns).map_err(arrow_err)
}

fn strings<'s>(it: impl IntoIterator<Item = &'s str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(it))
}

fn u32s(it: impl IntoIterator<Item = u32>) -> ArrayRef {
    Arc::new(UInt32Array::from_iter_values(it))
}

fn list_of_strings<'s, I: IntoIterator<Item = &'s str>>(
    rows: impl IntoIterator<Item = I>,
) -> ArrayRef {
    let field = arrow_schema::Field::new("item", arrow_schema::DataType::Utf8, false);
    let mut b = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(field));
    for row in rows {
        for s in row {
            b.values().append_value(s);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

/// Rows of a vector matrix read at a time where a mapped one is streamed (checks, the IVF
/// partition): 16 Ki rows, 24 MiB at 384 dimensions.
const WINDOW_ROWS: usize = 16 * 1024;

/// Rows per record batch when a table is built from its integer columns: each batch is built,
/// handed to the Parquet writer and dropped, so a table's Arrow form is never whole in memory.
pub const BATCH_ROWS: usize = 64 * 1024;

/// The record batches of a table of `rows` rows, [`BATCH_ROWS`] at a time, each built by
/// `columns` from its range of rows.
fn chunked<'f>(
    schema: &arrow_schema::SchemaRef,
    rows: usize,
    mut columns: impl FnMut(std::ops::Range<usize>) -> Result<Vec<ArrayRef>> + 'f,
) -> impl Iterator<Item = Result<RecordBatch>> + 'f {
    let schema = schema.clone();
    (0..rows.div_ceil(BATCH_ROWS)).map(move |i| {
        let range = i * BATCH_ROWS..((i + 1) * BATCH_ROWS).min(rows);
        batch(schema.clone(), columns(range)?)
    })
}

/// The strings behind a run's integer rows, by index: documents (sorted by unique key),
/// passages (grouped by document, in position order) and vocabulary concepts. The streaming
/// writer [`write_run_columns`] reads every string column through it, a batch at a time, so
/// the caller keeps one copy of each string (its own) and the writer formats passage ids on
/// the fly with [`passage_id`]. `Sync`, as the text index is built from it on a thread of its
/// own while the tables are written.
pub trait RunLookups: Sync {
    /// Number of documents.
    fn num_documents(&self) -> usize;
    /// Document `d`'s row of `documents.parquet`. Keys are unique and ascend with `d`.
    fn document(&self, d: u32) -> DocumentFields<'_>;
    /// Number of passages (rows of `passages.parquet`).
    fn num_passages(&self) -> usize;
    /// Passage row `p`: `(document, position, text)`. Rows ascend by (document, position).
    fn passage(&self, p: u32) -> (u32, u32, &str);
    /// The id of concept `c` (any index the run's rows use).
    fn concept_id(&self, c: u32) -> &str;
    /// The preferred term of concept `c` (asked only for the rows of `concepts.parquet`).
    fn preferred_term(&self, c: u32) -> &str;
    /// The entry terms of concept `c` (asked only for the rows of `concepts.parquet`).
    fn synonyms(&self, c: u32) -> &[String];
}

/// One document's fields, borrowed (see [`RunLookups::document`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DocumentFields<'a> {
    /// Unique key.
    pub key: &'a str,
    /// Title.
    pub title: &'a str,
    /// Publication year.
    pub year: Option<i32>,
    /// The `num_passages` column.
    pub num_passages: u32,
    /// At least one concept in the `concept` node field.
    pub linked: bool,
}

/// The stable id of passage `position` of document `key`: `<key>#<position>`. The one rule by
/// which passage ids are made, on both sides of the contract.
pub fn passage_id(key: &str, position: u32) -> String {
    let mut s = String::with_capacity(key.len() + 6);
    push_passage_id(&mut s, key, position);
    s
}

/// Appends [`passage_id`]`(key, position)` to `out`.
pub fn push_passage_id(out: &mut String, key: &str, position: u32) {
    use std::fmt::Write as _;
    out.push_str(key);
    out.push('#');
    let _ = write!(out, "{position}");
}

/// Compares the passage ids of `(key_a, position_a)` and `(key_b, position_b)` byte by byte,
/// as the strings would compare, without making them.
fn cmp_passage_ids(key_a: &str, pos_a: u32, key_b: &str, pos_b: u32) -> std::cmp::Ordering {
    fn digits(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                return &buf[i..];
            }
        }
    }
    let (mut da, mut db) = ([0u8; 10], [0u8; 10]);
    let a = key_a.bytes().chain(std::iter::once(b'#'));
    let b = key_b.bytes().chain(std::iter::once(b'#'));
    a.chain(digits(pos_a, &mut da).iter().copied())
        .cmp(b.chain(digits(pos_b, &mut db).iter().copied()))
}

/// The rank of each passage row's id in string order (equal ids, equal ranks): sorting rows
/// by it sorts them by passage id as the contract's tables are sorted.
fn passage_ranks(lookups: &dyn RunLookups) -> Vec<u32> {
    let n = lookups.num_passages();
    let key = |p: u32| {
        let (d, pos, _) = lookups.passage(p);
        (d, lookups.document(d).key, pos)
    };
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| {
        let ((da, ka, pa), (db, kb, pb)) = (key(a), key(b));
        // Keys ascend with the document, so unless one key is a prefix of the other (where
        // `#` and the position decide) the documents' order is the ids' order.
        if da == db {
            cmp_passage_ids("", pa, "", pb)
        } else if !ka.starts_with(kb) && !kb.starts_with(ka) {
            da.cmp(&db)
        } else {
            cmp_passage_ids(ka, pa, kb, pb)
        }
    });
    dense_ranks(&order, |a, b| key(a) == key(b), n)
}

/// Ranks of `0..n` given their sorted `order`, equal neighbours (by `same`) sharing a rank.
fn dense_ranks(order: &[u32], same: impl Fn(u32, u32) -> bool, n: usize) -> Vec<u32> {
    let mut ranks = vec![0u32; n];
    let mut rank = 0u32;
    for (i, &x) in order.iter().enumerate() {
        if i > 0 && !same(order[i - 1], x) {
            rank += 1;
        }
        ranks[x as usize] = rank;
    }
    ranks
}

/// The rank of each concept index below `n` in concept-id order (equal ids, equal ranks).
fn concept_ranks(lookups: &dyn RunLookups, n: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| lookups.concept_id(a).cmp(lookups.concept_id(b)));
    dense_ranks(
        &order,
        |a, b| lookups.concept_id(a) == lookups.concept_id(b),
        n,
    )
}

/// Every row of a run as integer columns over [`RunLookups`], the form the pipeline hands
/// [`write_run_columns`]: documents, passages and concepts are indices, and the strings they
/// stand for are read through the lookups only while a batch of rows is built. Rows may come
/// in any order unless stated; the writer sorts them as each table's module says.
pub struct RunColumns<'a> {
    /// Documents, passages and concepts.
    pub lookups: &'a dyn RunLookups,
    /// The concepts of `concepts.parquet` (any order; written sorted by id).
    pub concepts: Vec<u32>,
    /// Vocabulary edges `(child, parent, relation)` (written sorted by ids, deduplicated).
    pub concept_edges: Vec<(u32, u32, &'a str)>,
    /// `(node_field, document, concept)` (written sorted, deduplicated).
    pub document_concepts: Vec<(&'a str, u32, u32)>,
    /// `(document, concept, way, passage row)` of the `concept` node field, `None` for a way
    /// through the title alone (written sorted, deduplicated). See [`concept_evidence`].
    pub concept_evidence: Vec<(u32, u32, u32, Option<u32>)>,
    /// Entities; entity id = index.
    pub entities: Vec<EntityRecord>,
    /// `(entity, passage row, occurrences)` (written sorted by entity, passage id).
    pub mentions: Vec<(u32, u32, u32)>,
    /// Edges `(source, target, weight)` with `source < target`, sorted.
    pub relationships: &'a [(u32, u32, f64)],
    /// Communities. Everywhere else in these columns a community is its row index here.
    pub communities: Vec<CommunityRecord>,
    /// The public id of each community row, strictly ascending, written wherever a community
    /// is named; empty: the row index itself.
    pub community_ids: Vec<u32>,
    /// The lineage table and the manifest's lineage fields; `None`: no lineage table (runs
    /// written by tests and benches).
    pub lineage: Option<LineageColumns>,
    /// Membership rows, sorted by level then entity.
    pub membership: Vec<MembershipRecord>,
    /// One report per community.
    pub reports: Vec<ReportRecord>,
    /// `(community, passage row)`: the passages each report quotes (written sorted,
    /// deduplicated). See [`report_sources`].
    pub report_sources: Vec<(u32, u32)>,
    /// Report embeddings (see [`report_embeddings`]).
    pub report_embeddings: ReportVectors,
    /// Document embeddings, row-major, `documents × dim` (same embedder).
    pub document_embeddings: RowBuffer,
    /// The full-text index: `None` builds it from `lookups` on a thread of its own beside the
    /// tables; `Some` waits, once the tables are written, for the one the caller builds
    /// elsewhere with a [`TextIndexJob`] of the same writer.
    pub text_index: Option<PendingTextIndex<'a>>,
}

/// The wait for a full-text index a caller builds off the writer's thread (see
/// [`RunColumns::text_index`]): called, it returns the job's outcome. Dropped uncalled (a
/// table failed, or the columns were rejected), it must stop the build and wait for it before
/// it returns: the writer then removes the staging folder the index is written into.
pub type PendingTextIndex<'a> = Box<dyn FnOnce() -> Result<BuiltTextIndex> + Send + 'a>;

/// Builds a run's full-text index (`text_index/`, a tantivy BM25 index of each document's
/// title and passages) in its staging folder
/// on any thread, so that a caller can build it while its other stages run: the index needs
/// only the documents' titles and passages, and tantivy indexes on one thread. Made by
/// [`TextIndexJob::new`] from the run's writer; hand the result to
/// [`RunColumns::text_index`].
#[derive(Debug)]
pub struct TextIndexJob {
    dir: std::path::PathBuf,
}

/// Proof that [`TextIndexJob::build`] completed the full-text index of the run whose staging
/// folder is `dir`.
#[derive(Debug)]
pub struct BuiltTextIndex {
    dir: std::path::PathBuf,
}

impl TextIndexJob {
    /// The job of the run `w` writes.
    pub fn new(w: &RunWriter) -> Self {
        Self {
            dir: w.staging_dir().join(crate::text::TEXT_INDEX_DIR),
        }
    }

    /// Indexes `documents`: `(title, passages)` of every document, in the order of the run's
    /// document rows (the index names each document by its row), passages in row order.
    ///
    /// # Errors
    /// [`EngineError::Io`] when the index's folder cannot be created; [`EngineError::Parquet`]
    /// (`text index build`) when tantivy cannot write it.
    pub fn build<'t>(
        self,
        documents: impl IntoIterator<Item = (&'t str, Vec<&'t str>)>,
    ) -> Result<BuiltTextIndex> {
        crate::text::build_text_index(&self.dir, documents)?;
        Ok(BuiltTextIndex { dir: self.dir })
    }
}

impl std::fmt::Debug for RunColumns<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunColumns")
            .field("documents", &self.lookups.num_documents())
            .field("passages", &self.lookups.num_passages())
            .field("concepts", &self.concepts.len())
            .field("document_concepts", &self.document_concepts.len())
            .field("concept_evidence", &self.concept_evidence.len())
            .field("entities", &self.entities.len())
            .field("mentions", &self.mentions.len())
            .field("communities", &self.communities.len())
            .finish_non_exhaustive()
    }
}

fn inconsistent(what: String) -> EngineError {
    EngineError::Internal(format!("inconsistent run data: {what}"))
}

/// A `FixedSizeList<Float32, dim>` over `values` (taken, not copied).
fn vector_array(
    values: impl Into<arrow_buffer::ScalarBuffer<f32>>,
    dim: usize,
) -> Result<FixedSizeListArray> {
    FixedSizeListArray::try_new(
        report_embeddings::item_field(),
        i32::try_from(dim).map_err(|_| EngineError::Internal("embedding dim too large".into()))?,
        Arc::new(Float32Array::new(values.into(), None)),
        None,
    )
    .map_err(arrow_err)
}

/// Checks the invariants the readers rely on.
fn check(cols: &RunColumns<'_>, dim: usize) -> Result<()> {
    let l = cols.lookups;
    let nd = l.num_documents();
    if (1..nd as u32).any(|d| l.document(d - 1).key >= l.document(d).key) {
        return Err(inconsistent(
            "documents are not sorted by unique key".into(),
        ));
    }
    let np = l.num_passages();
    for p in 0..np as u32 {
        let (d, pos, _) = l.passage(p);
        if d as usize >= nd {
            return Err(inconsistent(format!("passage {p} names document {d}")));
        }
        if p > 0 {
            let (d0, pos0, _) = l.passage(p - 1);
            if (d0, pos0) >= (d, pos) {
                return Err(inconsistent(
                    "passages are not sorted by (document_key, position)".into(),
                ));
            }
        }
    }
    let passage_out = |p: u32| p as usize >= np;
    if cols.mentions.iter().any(|m| passage_out(m.1))
        || cols.report_sources.iter().any(|r| passage_out(r.1))
        || cols
            .concept_evidence
            .iter()
            .any(|e| e.0 as usize >= nd || e.3.is_some_and(passage_out))
        || cols.document_concepts.iter().any(|r| r.1 as usize >= nd)
    {
        return Err(inconsistent(
            "a row names a document or passage out of range".into(),
        ));
    }
    let n = cols.communities.len();
    let ids = &cols.community_ids;
    if !ids.is_empty() && (ids.len() != n || ids.windows(2).any(|w| w[0] >= w[1])) {
        return Err(inconsistent(format!(
            "{} community ids for {n} communities, or not strictly ascending",
            ids.len()
        )));
    }
    let re = &cols.report_embeddings;
    let vectors = if re.communities.is_empty() {
        n
    } else {
        re.communities.len()
    };
    if cols.reports.len() != n || re.values.len() != vectors * dim {
        return Err(inconsistent(format!(
            "{n} communities, {} reports, {} report embedding values for {vectors} vectors (dim {dim})",
            cols.reports.len(),
            re.values.len()
        )));
    }
    if !re.communities.is_empty() {
        let mut expected = 0u32;
        for &c in &re.communities {
            if c == expected {
                expected += 1;
            } else if c + 1 != expected {
                return Err(inconsistent(format!(
                    "report embedding communities are not 0, 1, 2, … each one or more times (found {c} after {})",
                    expected.wrapping_sub(1)
                )));
            }
        }
        if expected as usize != n {
            return Err(inconsistent(format!(
                "report embeddings cover {expected} of {n} communities"
            )));
        }
    }
    if cols.document_embeddings.len() != nd * dim {
        return Err(inconsistent(format!(
            "{nd} documents, {} document embedding values (dim {dim})",
            cols.document_embeddings.len()
        )));
    }
    // A window at a time: a mapped matrix is released as it is read.
    for m in [&re.values, &cols.document_embeddings] {
        m.try_for_each_window(WINDOW_ROWS, dim, |_, w| {
            if w.iter().all(|x| x.is_finite()) {
                Ok(())
            } else {
                Err(inconsistent(
                    "an embedding holds a NaN or infinite value".into(),
                ))
            }
        })?;
    }
    Ok(())
}

/// Writes every table of `cols` as run `run_id` under `layout` and completes the run folder
/// (`runs/<run_id>/`). It is served once [`Layout::write_latest`] names it. On error the
/// staging folder is removed.
///
/// Each table is sorted as its module says (by the strings the integers stand for, passage
/// ids compared as [`passage_id`] makes them) and streamed into its Parquet file
/// [`BATCH_ROWS`] rows at a time: besides the caller's columns, the writer holds one batch of
/// a table, a `u32` rank per passage and per concept, and the Parquet writer's row group. The
/// vectors are taken: each embedding table's Arrow array is made over the given `Vec<f32>`
/// without a copy and feeds its Parquet file, its Arrow IPC file and the IVF build.
///
/// # Errors
/// [`EngineError::Internal`] for columns that break the invariants listed on [`RunColumns`]
/// and [`RunLookups`] or a wrong embedding length; [`EngineError::Io`] /
/// [`EngineError::Parquet`] on write failures.
pub fn write_run_columns(
    layout: &Layout,
    run_id: &str,
    cols: RunColumns<'_>,
    embedder: &EmbedderIdentity,
    parameters: serde_json::Value,
    input_fingerprint: String,
    stats: serde_json::Value,
) -> Result<Manifest> {
    let w = RunWriter::create(layout, run_id)?;
    write_run_columns_into(w, cols, embedder, parameters, input_fingerprint, stats)
}

/// [`write_run_columns`] into a run the caller started (and may have written other files
/// of, such as [`text_embeddings`](super::text_embeddings), while its other stages ran).
///
/// Each table's module writes it; the orders several tables share (concepts by id, passages
/// by id, the sorted rows of `document_concepts` and `mentions`) are computed here once and
/// handed to each.
///
/// # Errors
/// Those of [`write_run_columns`].
pub fn write_run_columns_into(
    mut w: RunWriter,
    cols: RunColumns<'_>,
    embedder: &EmbedderIdentity,
    parameters: serde_json::Value,
    input_fingerprint: String,
    stats: serde_json::Value,
) -> Result<Manifest> {
    let dim = embedder.dim;
    let mut cols = cols;
    // Dropped (and so stopped) on any error below, before `w` removes the staging folder.
    let pending = cols.text_index.take();
    check(&cols, dim)?;
    let lookups = cols.lookups;
    let text_dir = w.staging_dir().join(crate::text::TEXT_INDEX_DIR);
    let (tables, text_index) = match pending {
        // The full-text index reads only the lookups: it is built on its own thread beside
        // the tables (tantivy's single indexing thread would otherwise leave a core idle for
        // most of its build), and listed in the manifest after them.
        None => std::thread::scope(|s| {
            let text_index = s.spawn(|| write_text_index(&text_dir, lookups));
            let tables = write_tables(&w, cols, embedder);
            let text_index = text_index
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (tables, text_index)
        }),
        Some(pending) => {
            let lineage = write_tables(&w, cols, embedder)?;
            let text_index = pending().and_then(|built| {
                if built.dir == text_dir {
                    Ok(())
                } else {
                    Err(EngineError::Internal(format!(
                        "the full-text index was built in {}, not in this run's {}",
                        built.dir.display(),
                        text_dir.display()
                    )))
                }
            });
            (Ok(lineage), text_index)
        }
    };
    let lineage = tables?;
    text_index?;
    w.register_dir(crate::text::TEXT_INDEX_DIR)?;
    if let Some(lineage) = lineage {
        community_lineage::write(&w, &lineage)?;
        w.set_lineage(lineage.parent_run_id, lineage.next_community_id);
    }
    w.finish(parameters, embedder.clone(), input_fingerprint, stats)
}

/// Every table of `cols` but the text index and the lineage (returned for the caller to write
/// last), in two groups written at once on the current Rayon pool.
fn write_tables(
    w: &RunWriter,
    cols: RunColumns<'_>,
    embedder: &EmbedderIdentity,
) -> Result<Option<LineageColumns>> {
    let dim = embedder.dim;
    let run_id = w.run_id().to_owned();
    let RunColumns {
        lookups: l,
        mut concepts,
        mut concept_edges,
        mut document_concepts,
        concept_evidence,
        entities: es,
        mut mentions,
        relationships: rel,
        communities: cs,
        community_ids,
        lineage,
        membership: rows,
        reports: r,
        report_sources,
        report_embeddings: re,
        document_embeddings,
        text_index: _,
    } = cols;
    // The public id of community row `c`.
    let cid = |c: u32| -> u32 {
        if community_ids.is_empty() {
            c
        } else {
            community_ids[c as usize]
        }
    };
    // Two groups of files, written at once: the tables of strings and integers, and the
    // vectors with their IVF index (which alone take about half of the writing's CPU time
    // at 10⁵ documents). The IVF's k-means is parallel too, and takes the first group's
    // thread once that group is done.
    let (tables, vectors) = rayon::join(
        || -> Result<()> {
            documents::write(w, l)?;
            super::mapped::documents::write(w, l)?;
            passages::write(w, l)?;
            super::mapped::passages::write(w, l)?;

            // Every table naming a concept is sorted by concept id: one rank per concept index.
            let num_concepts = concepts
                .iter()
                .chain(concept_edges.iter().flat_map(|e| [&e.0, &e.1]))
                .chain(document_concepts.iter().map(|r| &r.2))
                .chain(concept_evidence.iter().map(|r| &r.1))
                .map(|&c| c as usize + 1)
                .max()
                .unwrap_or(0);
            let rank = concept_ranks(l, num_concepts);
            // Stable, as the rows of equal ids keep their given order.
            concepts.sort_by_key(|&c| rank[c as usize]);
            concepts::write(w, l, &concepts)?;
            write_mapped_concepts(w, l, &concepts)?;
            concept_edges::sort(&mut concept_edges, &rank);
            write_mapped_concept_edges(w, l, &concepts, &concept_edges, num_concepts)?;
            concept_edges::write(w, l, &concept_edges)?;
            document_concepts::sort(&mut document_concepts, &rank);
            document_concepts::write(w, l, &document_concepts)?;
            concept_postings::write(w, l, &document_concepts, &rank)?;
            drop(document_concepts);

            // Likewise by passage id: concept_evidence, mentions and report_sources.
            let prank = passage_ranks(l);
            concept_evidence::write(w, l, concept_evidence, &rank, &prank)?;
            entities::write(w, &es)?;
            mentions::sort(&mut mentions, &prank);
            super::mapped::entities::write(w, &es, &mentions)?;
            mentions::write(w, l, &mentions)?;
            drop(mentions);
            relationships::write(w, rel)?;
            communities::write(w, &cs, &cid)?;
            membership::write(w, &run_id, &rows, &cid)?;
            reports::write(w, &r, &cid)?;
            drop(r);
            write_mapped_communities(w, &cs, &rows, &report_sources, &cid)?;
            report_sources::write(w, l, report_sources, &prank, &cid)?;
            drop(prank);

            Ok(())
        },
        || -> Result<()> {
            let (vectors, vector_communities) =
                report_embeddings::write(w, re, cs.len(), &cid, dim)?;
            if embedder.normalized {
                report_ivf::write(w, &vectors, &vector_communities, dim)?;
            }
            drop(vectors);
            document_embeddings::write(w, l, document_embeddings, dim)?;
            Ok(())
        },
    );
    tables?;
    vectors?;
    Ok(lineage)
}

/// The engine's concept rows and term index, mapped: the rows of `concepts.parquet`
/// (`concepts`, sorted by id).
fn write_mapped_concepts(w: &RunWriter, l: &dyn RunLookups, concepts: &[u32]) -> Result<()> {
    super::mapped::concepts::write(w, concepts.len(), |r| {
        (l.concept_id(concepts[r]), l.preferred_term(concepts[r]))
    })?;
    super::mapped::terms::write(w, concepts.len(), |r| {
        let c = concepts[r as usize];
        (l.preferred_term(c), l.synonyms(c))
    })
}

/// The hierarchy by concept rows, for the engine: the edges of `concept_edges.parquet`
/// (`edges`, sorted), same order, each end the row of `concepts.parquet` (`concepts`, sorted by
/// id) holding it.
///
/// # Errors
/// [`EngineError::Internal`] for an edge naming a concept `concepts` lacks; as
/// [`write_run_columns`].
fn write_mapped_concept_edges(
    w: &RunWriter,
    l: &dyn RunLookups,
    concepts: &[u32],
    edges: &[(u32, u32, &str)],
    num_concepts: usize,
) -> Result<()> {
    let mut row_of = vec![u32::MAX; num_concepts];
    for (r, &c) in concepts.iter().enumerate() {
        row_of[c as usize] = r as u32;
    }
    if let Some(e) = edges
        .iter()
        .find(|e| row_of[e.0 as usize] == u32::MAX || row_of[e.1 as usize] == u32::MAX)
    {
        return Err(inconsistent(format!(
            "concept edge {:?} -> {:?} names a concept that concepts.parquet lacks",
            l.concept_id(e.0),
            l.concept_id(e.1)
        )));
    }
    super::mapped::concept_edges::write(w, edges.len(), |r| {
        let e = &edges[r];
        (row_of[e.0 as usize], row_of[e.1 as usize], e.2)
    })
}

/// The engine's mapped copy of the communities `cs` (row `c` under the public id `cid(c)`):
/// members (from the `membership` rows) and quoted passages (from the `report_sources` rows)
/// by community row, ascending.
fn write_mapped_communities(
    w: &RunWriter,
    cs: &[CommunityRecord],
    membership: &[MembershipRecord],
    report_sources: &[(u32, u32)],
    cid: &dyn Fn(u32) -> u32,
) -> Result<()> {
    let members = {
        let mut pairs: Vec<(u32, u32)> =
            membership.iter().map(|m| (m.community, m.entity)).collect();
        pairs.sort_unstable();
        Csr::from_pairs(cs.len(), &pairs)
    };
    let quoted = {
        let mut pairs = report_sources.to_vec();
        pairs.sort_unstable();
        pairs.dedup();
        Csr::from_pairs(cs.len(), &pairs)
    };
    let levels: Vec<(u32, Option<u32>)> = cs.iter().map(|c| (c.level, c.parent)).collect();
    super::mapped::communities::write(
        w,
        &super::mapped::communities::CommunityInput {
            ids: cid,
            levels: &levels,
            members: &members,
            report_sources: &quoted,
        },
    )
}

/// Builds the full-text index of the documents of `l` (title + passages) in `dir`, for
/// keyword clauses and query ranking.
fn write_text_index(dir: &std::path::Path, l: &dyn RunLookups) -> Result<()> {
    let nd = l.num_documents();
    let np = l.num_passages() as u32;
    let mut next = 0u32;
    let text_docs = (0..nd as u32).map(|d| {
        let mut texts = Vec::new();
        while next < np {
            let (pd, _, text) = l.passage(next);
            if pd != d {
                break;
            }
            texts.push(text);
            next += 1;
        }
        (l.document(d).title, texts)
    });
    crate::text::build_text_index(dir, text_docs)
}

/// Maps an embedding IPC file and checks its schema and row count.
pub(crate) fn map_embeddings(
    path: &std::path::Path,
    schema: &arrow_schema::SchemaRef,
    rows: impl Into<Option<usize>>,
) -> Result<RecordBatch> {
    let rows: Option<usize> = rows.into();
    let buffer = mmap::map_file(path)?;
    let batches = mmap::decode_ipc_file(path, &buffer)?;
    let batch = match batches.len() {
        0 => RecordBatch::new_empty(schema.clone()),
        1 => batches
            .into_iter()
            .next()
            .unwrap_or_else(|| RecordBatch::new_empty(schema.clone())),
        _ => arrow_select::concat::concat_batches(&batches[0].schema(), &batches).map_err(|e| {
            EngineError::corrupt_because(path, "record batches do not concatenate", e)
        })?,
    };
    crate::format::reader::check_schema(path, &batch.schema(), schema)?;
    if let Some(rows) = rows
        && batch.num_rows() != rows
    {
        return Err(EngineError::corrupt(
            path,
            format!("{} embeddings for {rows} rows", batch.num_rows()),
        ));
    }
    if batch.num_columns() < 2 || batch.column(1).null_count() > 0 {
        return Err(EngineError::corrupt(path, "embedding column holds nulls"));
    }
    Ok(batch)
}

/// The ids of passage rows `ps`, formatted by [`push_passage_id`] into one reused buffer.
fn passage_ids(l: &dyn RunLookups, ps: impl Iterator<Item = u32>) -> ArrayRef {
    let mut id = String::new();
    let mut b = StringBuilder::new();
    for p in ps {
        let (d, pos, _) = l.passage(p);
        id.clear();
        push_passage_id(&mut id, l.document(d).key, pos);
        b.append_value(&id);
    }
    Arc::new(b.finish())
}

/// Rows of an embedding table handed to the Parquet writer at a time: the writer computes a
/// definition and a repetition level for every value of a slice before it encodes it (at
/// 64 Ki rows of 384 values that was 0.2 GB on top of the values), so vector slices are
/// small.
const VECTOR_BATCH_ROWS: usize = 4 * 1024;

/// Writes an embedding batch `b` (a key column, a vector column over `vectors`, `dim` values
/// a row) to Parquet file `name` in slices of [`VECTOR_BATCH_ROWS`] rows (zero-copy views of
/// `b`), releasing each slice of a mapped matrix once it is encoded.
fn write_vectors(
    w: &RunWriter,
    name: &str,
    b: &RecordBatch,
    sorted_by: &str,
    vectors: &RowBuffer,
    dim: usize,
) -> Result<()> {
    const STEP: usize = VECTOR_BATCH_ROWS;
    let rows = b.num_rows();
    let values = vectors.values();
    w.write_parquet_batches(
        name,
        &b.schema(),
        &[sorted_by],
        (0..rows.div_ceil(STEP)).map(|i| {
            let start = i * STEP;
            // The Parquet writer has encoded the slice before: a mapped matrix drops it.
            if i > 0 {
                vectors.release(values.get((start - STEP) * dim..start * dim).unwrap_or(&[]));
            }
            Ok(b.slice(start, STEP.min(rows - start)))
        }),
    )?;
    vectors.release(values);
    Ok(())
}

/// [`RunData`]'s owned rows seen through [`RunLookups`]: concept ids and passage ids interned to
/// indices, so that [`write_run`] writes through the one streaming writer.
struct OwnedLookups<'a> {
    data: &'a RunData,
    /// Document of each passage row.
    passage_document: Vec<u32>,
    /// Concept ids: those of `data.concepts` (index = row), then any other id a row names.
    concept_ids: Vec<&'a str>,
}

impl RunLookups for OwnedLookups<'_> {
    fn num_documents(&self) -> usize {
        self.data.documents.len()
    }
    fn document(&self, d: u32) -> DocumentFields<'_> {
        let x = &self.data.documents[d as usize];
        DocumentFields {
            key: &x.key,
            title: &x.title,
            year: x.year,
            num_passages: x.num_passages,
            linked: x.linked,
        }
    }
    fn num_passages(&self) -> usize {
        self.data.passages.len()
    }
    fn passage(&self, p: u32) -> (u32, u32, &str) {
        let x = &self.data.passages[p as usize];
        (self.passage_document[p as usize], x.position, &x.text)
    }
    fn concept_id(&self, c: u32) -> &str {
        self.concept_ids[c as usize]
    }
    fn preferred_term(&self, c: u32) -> &str {
        &self.data.concepts[c as usize].preferred_term
    }
    fn synonyms(&self, c: u32) -> &[String] {
        &self.data.concepts[c as usize].synonyms
    }
}

/// Writes every table of `data` as run `run_id` under `layout` and completes the run folder
/// (`runs/<run_id>/`), through [`write_run_columns`] (ids are interned to indices first; tests,
/// benches and small runs build a [`RunData`], the pipeline hands its integer columns to
/// [`write_run_columns`] directly). It is served once [`Layout::write_latest`] names it. On
/// error the staging folder is removed.
///
/// # Errors
/// [`EngineError::Internal`] for data that breaks the invariants listed on [`RunData`], a
/// passage of a document not in `documents`, a passage id other than [`passage_id`] of its
/// document key and position or a row naming a passage id no passage has, or a wrong
/// embedding length; [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub fn write_run<'a>(
    layout: &Layout,
    run_id: &str,
    data: &'a RunData,
    embedder: &EmbedderIdentity,
    parameters: serde_json::Value,
    input_fingerprint: String,
    stats: serde_json::Value,
) -> Result<Manifest> {
    let doc_index = |key: &str| {
        data.documents
            .binary_search_by(|d| d.key.as_str().cmp(key))
            .map(|i| i as u32)
            .map_err(|_| inconsistent(format!("a row names document {key:?}, not in documents")))
    };
    let mut passage_document = Vec::with_capacity(data.passages.len());
    let mut passage_index: HashMap<&str, u32> = HashMap::with_capacity(data.passages.len());
    for (p, x) in data.passages.iter().enumerate() {
        passage_document.push(doc_index(&x.document_key)?);
        if x.passage_id != passage_id(&x.document_key, x.position) {
            return Err(inconsistent(format!(
                "passage id {:?} is not {:?}",
                x.passage_id,
                passage_id(&x.document_key, x.position)
            )));
        }
        passage_index.insert(&x.passage_id, p as u32);
    }
    let passage = |id: &str| {
        passage_index
            .get(id)
            .copied()
            .ok_or_else(|| inconsistent(format!("a row names passage {id:?}, not in passages")))
    };
    let mut concept_ids: Vec<&'a str> = data
        .concepts
        .iter()
        .map(|c| c.concept_id.as_str())
        .collect();
    let mut concept_index: HashMap<&'a str, u32> = HashMap::new();
    for (i, c) in concept_ids.iter().enumerate().rev() {
        concept_index.insert(c, i as u32);
    }
    fn intern<'s>(ids: &mut Vec<&'s str>, index: &mut HashMap<&'s str, u32>, id: &'s str) -> u32 {
        *index.entry(id).or_insert_with(|| {
            ids.push(id);
            ids.len() as u32 - 1
        })
    }
    let mut c = |id: &'a str| intern(&mut concept_ids, &mut concept_index, id);
    let concept_edges = data
        .concept_edges
        .iter()
        .map(|e| (c(&e.0), c(&e.1), e.2.as_str()))
        .collect();
    let document_concepts = data
        .document_concepts
        .iter()
        .map(|r| Ok((r.0.as_str(), doc_index(&r.1)?, c(&r.2))))
        .collect::<Result<Vec<_>>>()?;
    let concept_evidence = data
        .concept_evidence
        .iter()
        .map(|r| {
            Ok((
                doc_index(&r.0)?,
                c(&r.1),
                r.2,
                r.3.as_deref().map(passage).transpose()?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let mentions = data
        .mentions
        .iter()
        .map(|m| Ok((m.0, passage(&m.1)?, m.2)))
        .collect::<Result<Vec<_>>>()?;
    let report_sources = data
        .report_sources
        .iter()
        .map(|r| Ok((r.0, passage(&r.1)?)))
        .collect::<Result<Vec<_>>>()?;
    let lookups = OwnedLookups {
        data,
        passage_document,
        concept_ids,
    };
    let cols = RunColumns {
        lookups: &lookups,
        concepts: (0..data.concepts.len() as u32).collect(),
        concept_edges,
        document_concepts,
        concept_evidence,
        entities: data.entities.clone(),
        mentions,
        relationships: &data.relationships,
        communities: data.communities.clone(),
        community_ids: Vec::new(),
        lineage: None,
        membership: data.membership.clone(),
        reports: data.reports.clone(),
        report_sources,
        report_embeddings: ReportVectors {
            values: data.report_embeddings.clone().into(),
            communities: data.report_embedding_communities.clone(),
        },
        document_embeddings: data.document_embeddings.clone().into(),
        text_index: None,
    };
    write_run_columns(
        layout,
        run_id,
        cols,
        embedder,
        parameters,
        input_fingerprint,
        stats,
    )
}

/// Writes `data` as run `run_id` under `layout` with `embedder`'s identity and empty
/// parameters and statistics, as tests do (`LATEST` is left alone).
#[cfg(test)]
pub(crate) fn for_test_write_run(
    layout: &Layout,
    run_id: &str,
    data: &RunData,
    embedder: &EmbedderIdentity,
) -> Manifest {
    write_run(
        layout,
        run_id,
        data,
        embedder,
        serde_json::json!({}),
        "test".into(),
        serde_json::json!({}),
    )
    .expect("the test run is written")
}

/// A run of documents `keys` (in that order), each with title `title <key>` and one passage
/// `<key>#0` reading `text <key>`, its vector the embedding of the key; nothing else. Tests
/// add what they need with `..`.
#[cfg(test)]
pub(crate) fn for_test_one_passage_documents(
    keys: &[&str],
    linked: bool,
    embedder: &dyn crate::embed::Embedder,
) -> RunData {
    RunData {
        documents: keys
            .iter()
            .map(|k| DocumentRecord {
                key: (*k).into(),
                title: format!("title {k}"),
                year: None,
                num_passages: 1,
                linked,
            })
            .collect(),
        passages: keys
            .iter()
            .map(|k| PassageRecord {
                passage_id: format!("{k}#0"),
                document_key: (*k).into(),
                position: 0,
                text: format!("text {k}"),
            })
            .collect(),
        document_embeddings: keys
            .iter()
            .flat_map(|k| embedder.embed(k).expect("the test embedder embeds"))
            .collect(),
        ..RunData::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{Embedder, HashEmbedder};

    /// A fixed, valid run id, so that two writes of one run differ in nothing but time.
    const RUN_ID: &str = "019ad000-0000-7000-8000-000000000000";

    /// A small run whose string order differs from its row order everywhere it can: keys that
    /// sort differently once `#<position>` is appended (`a` < `a!`, but `a!#0` < `a#0`),
    /// positions past 9 (`#10` < `#2`), a vocabulary not in id order, duplicate rows and
    /// several vectors per community.
    fn tricky_run(embedder: &HashEmbedder) -> RunData {
        let keys = ["a", "a!", "a-b", "b", "b#c"];
        let passages_per = [12usize, 2, 1, 3, 11];
        let mut data = RunData::default();
        for (k, &n) in keys.iter().zip(&passages_per) {
            data.documents.push(DocumentRecord {
                key: (*k).into(),
                title: format!("title of {k}"),
                year: (k.len() % 2 == 0).then_some(2000 + n as i32),
                num_passages: n as u32,
                linked: n != 1,
            });
            for i in 0..n {
                data.passages.push(PassageRecord {
                    passage_id: format!("{k}#{i}"),
                    document_key: (*k).into(),
                    position: i as u32,
                    text: format!("passage {i} of {k}"),
                });
            }
        }
        let ids = ["D10", "D2", "D1", "C9", "D100"];
        data.concepts = ids
            .iter()
            .map(|c| ConceptRecord {
                concept_id: (*c).into(),
                preferred_term: format!("term {c}"),
                synonyms: vec![format!("{c} syn"), format!("syn {c}")],
            })
            .collect();
        data.concept_edges = vec![
            ("D2".into(), "D1".into(), "subclass_of".into()),
            ("D10".into(), "D1".into(), "subclass_of".into()),
            ("D100".into(), "D10".into(), "subclass_of".into()),
            ("D2".into(), "D1".into(), "subclass_of".into()),
        ];
        let pid = |d: usize, i: usize| format!("{}#{i}", keys[d]);
        for (d, k) in keys.iter().enumerate() {
            for (j, c) in ids.iter().enumerate() {
                if (d + j) % 2 == 0 {
                    let field = if j == 3 { "mesh" } else { "concept" };
                    data.document_concepts
                        .push((field.into(), (*k).into(), (*c).into()));
                    data.concept_evidence.push((
                        (*k).into(),
                        (*c).into(),
                        (j % 2) as u32,
                        (j != 2).then(|| pid(d, (d * 7 + j * 3) % passages_per[d])),
                    ));
                    data.concept_evidence.push((
                        (*k).into(),
                        (*c).into(),
                        0,
                        Some(pid(d, passages_per[d] - 1)),
                    ));
                }
            }
        }
        data.document_concepts
            .push(data.document_concepts[0].clone());
        data.concept_evidence.push(data.concept_evidence[1].clone());
        data.entities = ids
            .iter()
            .take(4)
            .enumerate()
            .map(|(e, c)| EntityRecord {
                concept_id: (*c).into(),
                name: format!("term {c}"),
                num_passages: e as u32 + 1,
                degree: e as f64 * 1.5,
            })
            .collect();
        for e in 0..4u32 {
            for (d, &n) in passages_per.iter().enumerate() {
                for i in (e as usize % 3..n).step_by(3) {
                    data.mentions.push((e, pid(d, i), 1 + (i as u32 % 2)));
                }
            }
        }
        data.mentions.reverse();
        data.relationships = vec![(0, 1, 2.0), (0, 3, 1.0), (1, 2, 4.0), (2, 3, 0.5)];
        data.communities = vec![
            CommunityRecord {
                level: 0,
                parent: None,
                size: 2,
                is_leaf: false,
            },
            CommunityRecord {
                level: 0,
                parent: None,
                size: 2,
                is_leaf: true,
            },
            CommunityRecord {
                level: 1,
                parent: Some(0),
                size: 2,
                is_leaf: true,
            },
        ];
        data.membership = (0..4)
            .map(|e| MembershipRecord {
                level: 0,
                entity: e,
                community: u32::from(e >= 2),
                parent: None,
                is_leaf: e >= 2,
            })
            .chain((0..2).map(|e| MembershipRecord {
                level: 1,
                entity: e,
                community: 2,
                parent: Some(0),
                is_leaf: true,
            }))
            .collect();
        data.reports = (0..3)
            .map(|c| ReportRecord {
                level: u32::from(c == 2),
                title: format!("report {c}"),
                summary: format!("summary {c}"),
                findings: vec![format!("finding {c}"), "shared".into()],
                rank: f64::from(c) / 2.0,
                full_content: format!("content {c}"),
            })
            .collect();
        data.report_sources = vec![
            (2, pid(0, 10)),
            (0, pid(0, 2)),
            (0, pid(1, 0)),
            (1, pid(4, 10)),
            (0, pid(0, 2)),
            (1, pid(4, 1)),
        ];
        data.report_embedding_communities = vec![0, 0, 1, 2, 2, 2];
        data.report_embeddings = (0..6)
            .flat_map(|i| embedder.embed(&format!("vector {i}")).unwrap())
            .collect();
        data.document_embeddings = keys
            .iter()
            .flat_map(|k| embedder.embed(k).unwrap())
            .collect();
        data
    }

    /// BLAKE3 of the decoded content of each table file of the run in `dir` (all its batches
    /// as one, with the schema and its metadata, as an Arrow IPC stream), with its row count
    /// from the manifest. The IVF files (their content is the IVF build's) and the text index
    /// (tantivy's segment files carry random ids) are left out.
    fn table_digests(dir: &std::path::Path) -> Vec<(String, u64, String)> {
        let manifest = Manifest::read(dir).unwrap();
        let mut out = Vec::new();
        for entry in &manifest.files {
            let path = dir.join(&entry.name);
            if entry.name.starts_with("report_ivf") || entry.name.starts_with("text_index/") {
                continue;
            }
            let batches: Vec<RecordBatch> = if entry.name.ends_with(".parquet") {
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                    std::fs::File::open(&path).unwrap(),
                )
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect()
            } else {
                arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&path).unwrap(), None)
                    .unwrap()
                    .map(|b| b.unwrap())
                    .collect()
            };
            let schema = batches[0].schema();
            let one = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            let mut bytes = Vec::new();
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &schema).unwrap();
            w.write(&one).unwrap();
            w.finish().unwrap();
            drop(w);
            out.push((
                entry.name.clone(),
                entry.rows,
                blake3::hash(&bytes).to_hex().to_string(),
            ));
        }
        out
    }

    /// [`tricky_run`] written as run [`RUN_ID`] under `root`.
    fn write_tricky_run(root: &std::path::Path) -> (RunData, Layout) {
        let embedder = HashEmbedder::new(8);
        let data = tricky_run(&embedder);
        let layout = Layout::new(root);
        for_test_write_run(&layout, RUN_ID, &data, embedder.identity());
        (data, layout)
    }

    /// The mapped column files of a format-2 run read the same rows as its Parquet tables
    /// (the format-1 path), and every passage id and document key is found by the lookups
    /// that hold no index (keys with `#` and `!` among them); ids off the rule are not.
    #[test]
    fn mapped_columns_read_as_the_parquet_tables() {
        let dir = tempfile::tempdir().unwrap();
        let (data, layout) = write_tricky_run(dir.path());
        let run = layout.run_dir(RUN_ID);
        let snap = crate::snapshot::Snapshot::open_run(&run).unwrap();
        assert!(
            snap.manifest
                .file(super::super::mapped::passages::FILE)
                .is_some()
        );
        let (docs, passages, entities, communities) =
            crate::snapshot::read_parquet_columns(&run, &snap.manifest).unwrap();
        assert_eq!(snap.num_documents(), data.documents.len());
        use crate::snapshot::{CommunityId, CommunityRow, DocumentRow, EntityId, PassageRow};
        for d in 0..snap.num_documents() {
            let v = snap.document(DocumentRow(d as u32));
            assert_eq!(v.key(), docs.keys.get(d));
            assert_eq!(v.key(), data.documents[d].key);
            assert_eq!(v.title(), docs.titles.get(d));
            assert_eq!(v.year(), docs.years.get(d));
            assert_eq!(v.linked(), docs.linked.get(d));
            assert_eq!(
                v.passages().next(),
                Some(PassageRow(docs.first_passage.value(d)))
            );
            assert_eq!(v.passages().len(), data.documents[d].num_passages as usize);
            assert_eq!(snap.document_row(v.key()), Some(DocumentRow(d as u32)));
        }
        assert_eq!(snap.num_passages(), data.passages.len());
        for (p, row) in data.passages.iter().enumerate() {
            let v = snap.passage(PassageRow(p as u32));
            assert_eq!(v.id(), row.passage_id);
            assert_eq!(v.text(), row.text);
            assert_eq!(v.text(), passages.text.get(p));
            assert_eq!(v.document(), DocumentRow(passages.document.value(p)));
            assert_eq!(v.position(), passages.position.value(p));
            assert_eq!(
                snap.passage_row(&row.passage_id),
                Some(PassageRow(p as u32))
            );
        }
        for bad in [
            "a#07", "a#+1", "a#", "a", "zz#0", "b#c#99", "b#0#c", "#0", "",
        ] {
            assert_eq!(snap.passage_row(bad), None, "{bad:?}");
        }
        assert_eq!(snap.document_row("a-"), None);
        assert_eq!(snap.num_entities(), data.entities.len());
        for e in 0..snap.num_entities() {
            let v = snap.entity(EntityId(e as u32));
            assert_eq!(
                v.passages().as_u32s(),
                entities.passages.row(e),
                "entity {e}"
            );
            assert_eq!(v.name(), entities.names.get(e));
            assert_eq!(v.name(), data.entities[e].name);
            assert_eq!(v.concept_id(), entities.concept_ids.get(e));
            assert_eq!(v.degree(), entities.degrees.value(e));
            assert!(!snap.entity_passages().row(e).is_empty());
        }
        assert_eq!(snap.num_communities(), data.communities.len());
        for c in 0..snap.num_communities() {
            let v = snap.community(CommunityRow(c as u32));
            assert_eq!(v.id(), CommunityId(communities.ids.value(c)));
            assert_eq!(v.level(), communities.levels.value(c));
            assert_eq!(v.parent(), communities.parents.get(c).map(CommunityRow));
            assert_eq!(v.members().as_u32s(), communities.members.row(c));
            assert_eq!(
                v.report_sources().as_u32s(),
                communities.report_sources.row(c)
            );
            assert_eq!(snap.community_row(v.id()), Some(CommunityRow(c as u32)));
        }
        // Out of range reads as empty, never a panic.
        let n = snap.num_passages() as u32;
        assert_eq!(snap.passage(PassageRow(n)).text(), "");
        assert_eq!(
            snap.document(DocumentRow(snap.num_documents() as u32))
                .passages()
                .len(),
            0
        );
        assert!(snap.community(CommunityRow(99)).members().is_empty());
        assert_eq!(snap.community(CommunityRow(99)).report_rows(), 0..0);
        assert_eq!(snap.community_row(CommunityId(u32::MAX)), None);
    }

    /// What the writer wrote for [`tricky_run`] before tables were streamed from integer
    /// columns (recorded then): the streaming writer must write the same rows, in the same
    /// order, with the same schemas.
    #[test]
    fn the_tables_of_a_run_are_those_the_owned_row_writer_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let (_, layout) = write_tricky_run(dir.path());
        let found = table_digests(&layout.run_dir(RUN_ID));
        let text: Vec<String> = found
            .iter()
            .map(|(n, r, h)| format!("{n} {r} {h}"))
            .collect();
        let expected: &[&str] = &[
            "communities.arrow 3 9d3f9d229a7149f0e850b51b6898651864f8e8b6e97ab1b7accbe9a348fcc613",
            "communities.parquet 3 84cbfcd52cb940a60ae2f69ae92b8f2ca215e5f9dfcab83fb4512796708530e9",
            "concept_edges.arrow 3 b2847bb6979add1ea92331631cab1f46305419bdb5c2faec47eaea8d9f65fabf",
            "concept_edges.parquet 3 ce0eaf3ac9ba9e95f2cb2a554bbecd2195e62d2236ca92aa5c874e7377f6ba04",
            "concept_evidence.parquet 24 3c3b523d1f69319661255be1a4b678aed5621331828ddca932c8560c92d14c80",
            "concept_postings.arrow 7 9f1b7b1647258ad5b831d0a6a65f8d63aedbb16e5026f4096d4f99c65b1df0b0",
            "concepts.arrow 5 426a3bf2f452f279dcb15d00da5df794a62657fe55a80b5e6c2ad7ce00b41df7",
            "concepts.parquet 5 a65a1794872f368b4f6dc98774c8a8124314accd71ead35d038733f53eda7ccd",
            "document_concepts.parquet 13 de013246753a9263cfc7b11210a0a66072fa1cf4be4f2549ecaf0464757f4105",
            "document_embeddings.arrow 5 55ab3154109068e267d9a22e726969f572c3f62d211fb8b95f14ab6ffd39f01c",
            "document_embeddings.parquet 5 dc2cdaafff393b149a5cb2661024d9bcdfddbbd435e866099758cdb44b7f21b2",
            "documents.arrow 5 9d6887f728ff3133f206f1ad0b501519977e8d25d5e2c6c8faec0078f94aa279",
            "documents.parquet 5 0565b458eba34f56e8b5f49afc5af8ecc888e2571c7d22894caad733acc90fe6",
            "entities.arrow 4 c0ab29dac4751b902eb0ac4e2896518b1a4e1d51a6adb048040c8e0604ec083d",
            "entities.parquet 4 8723dcfd892c557eac1a4147897e4a3d747ea4628411d8075379964cb5bfb83b",
            "membership.parquet 6 89d2888e0f9f527d14b8dbbbf4d01264c3aee9c29346e4a10203b1165e59e55c",
            "mentions.parquet 40 ec9fdda0ac78ff7558bcb4971059734afc5c11cc74ef6f03d1a5ecea71ad8255",
            "passages.arrow 29 36ca219c5415331aa034d3cf5a92b9a35433d7f08fb731d6cd8aeb93972ee60b",
            "passages.parquet 29 09619c79ad16794ff0ebffaa1d9a52c937bcae6da0b9a0869425635083d65e30",
            "relationships.parquet 4 b5c4ab79d4d1a0e6284d19ccae5a1413c309cffdcfb43a1224936b59b169d9b2",
            "report_embeddings.arrow 6 b5e85d5e8a30f73be7f1567ec73b7464c39ed0e637525874debff9c4f469f8e1",
            "report_embeddings.parquet 6 e4967040cc69596382dab85632a0321ff0094f76e1db81939bdf94433e61c9bf",
            "report_sources.parquet 5 a73bc45d32aacedd5da74958d2ad3f65029f3290d6f8998fc5ac8e87e140fb0d",
            "reports.parquet 3 e4edca408ad8b436474cfd0aa97281bfa70851f3dfcc2bdeba72e20b2c40ba91",
            "terms.arrow 15 3c94a4c271dc286b74df45a2cba6dc739b9389de72218f1276647648985cc318",
        ];
        assert_eq!(text, expected);
    }
}
