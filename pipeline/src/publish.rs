//! Publish: turn a run's tables into the snapshot contract of `agrag_engine::format`, then move
//! `LATEST`.

use std::sync::Arc;

use agrag_engine::embed::EmbedderIdentity;
use agrag_engine::format::schema::{
    communities, concept_edges, concepts, document_concepts, documents, entities, membership,
    mentions, passages, relationships, report_embeddings, reports,
};
use agrag_engine::format::{Layout, Manifest, RunWriter};
use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int32Array,
    RecordBatch, StringArray, UInt32Array,
};

use crate::error::{PipelineError, Result};
use crate::ingest::Corpus;
use crate::leiden::Hierarchy;
use crate::link::{SUBCLASS_OF, Vocabulary};
use crate::report::Report;

/// Everything a run publishes. Documents must be sorted by key (passage order follows).
#[derive(Debug)]
pub struct RunTables<'a> {
    /// The corpus, documents sorted by key.
    pub corpus: &'a Corpus,
    /// Whether each document has at least one linked concept.
    pub document_linked: Vec<bool>,
    /// `(node_field, document index, concept index)`, sorted.
    pub document_concepts: Vec<(&'static str, u32, u32)>,
    /// The vocabulary.
    pub vocabulary: &'a Vocabulary,
    /// Concept index of each entity.
    pub entity_concepts: &'a [u32],
    /// Passages mentioning each entity (global passage indices, ascending).
    pub entity_passages: &'a [Vec<u32>],
    /// `(passage index, entity) → occurrences`, as `(entity, passage, occurrences)` sorted.
    pub mention_counts: Vec<(u32, u32, u32)>,
    /// Weighted degree of each entity.
    pub entity_degree: Vec<f64>,
    /// Edges `(a, b, w)`, `a < b`, sorted.
    pub edges: &'a [(u32, u32, f64)],
    /// Detection result.
    pub hierarchy: &'a Hierarchy,
    /// One report per community, in community order.
    pub reports: &'a [Report],
    /// One embedding per community, in community order, each of `embedder.dim` values.
    pub embeddings: &'a [Vec<f32>],
    /// Identity of the embedder.
    pub embedder: EmbedderIdentity,
}

fn arrow_err(e: arrow_schema::ArrowError) -> PipelineError {
    PipelineError::Internal(format!("building a record batch: {e}"))
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

/// Writes every table of the run through [`RunWriter`], completes the run folder, and points
/// `LATEST` at it. On any error the staging folder is removed and `LATEST` is untouched.
///
/// # Errors
/// [`PipelineError::Engine`] for write failures; [`PipelineError::Internal`] for inconsistent
/// tables (a bug).
pub fn publish(
    layout: &Layout,
    run_id: &str,
    tables: &RunTables<'_>,
    parameters: serde_json::Value,
    input_fingerprint: String,
    stats: serde_json::Value,
) -> Result<Manifest> {
    let mut w = RunWriter::create(layout, run_id)?;
    let corpus = tables.corpus;
    let docs = &corpus.documents;

    let b = batch(
        documents::schema(),
        vec![
            strings(docs.iter().map(|d| d.key.as_str())),
            strings(docs.iter().map(|d| d.title.as_str())),
            Arc::new(Int32Array::from_iter(docs.iter().map(|d| d.year))),
            u32s(docs.iter().map(|d| d.passages.len() as u32)),
            Arc::new(BooleanArray::from(tables.document_linked.clone())),
        ],
    )?;
    w.write_parquet(documents::FILE, &b, &[documents::DOCUMENT_KEY])?;

    let passage_ids: Vec<String> = docs
        .iter()
        .flat_map(|d| (0..d.passages.len()).map(|i| d.passage_id(i)))
        .collect();
    let b = batch(
        passages::schema(),
        vec![
            strings(passage_ids.iter().map(String::as_str)),
            strings(
                docs.iter()
                    .flat_map(|d| d.passages.iter().map(|_| d.key.as_str())),
            ),
            u32s(docs.iter().flat_map(|d| 0..d.passages.len() as u32)),
            strings(
                docs.iter()
                    .flat_map(|d| d.passages.iter().map(String::as_str)),
            ),
        ],
    )?;
    w.write_parquet(
        passages::FILE,
        &b,
        &[passages::DOCUMENT_KEY, passages::POSITION],
    )?;

    // Vocabulary, sorted by concept id.
    let vocab = tables.vocabulary;
    let mut order: Vec<usize> = (0..vocab.concepts.len()).collect();
    order.sort_by(|&a, &b| vocab.concepts[a].id.cmp(&vocab.concepts[b].id));
    let b = batch(
        concepts::schema(),
        vec![
            strings(order.iter().map(|&i| vocab.concepts[i].id.as_str())),
            strings(
                order
                    .iter()
                    .map(|&i| vocab.concepts[i].preferred_term.as_str()),
            ),
            list_of_strings(
                order
                    .iter()
                    .map(|&i| vocab.concepts[i].synonyms.iter().map(String::as_str)),
            ),
        ],
    )?;
    w.write_parquet(concepts::FILE, &b, &[concepts::CONCEPT_ID])?;
    let mut edges: Vec<(&str, &str)> = vocab
        .broader
        .iter()
        .map(|&(c, p)| {
            (
                vocab.concepts[c as usize].id.as_str(),
                vocab.concepts[p as usize].id.as_str(),
            )
        })
        .collect();
    edges.sort_unstable();
    let b = batch(
        concept_edges::schema(),
        vec![
            strings(edges.iter().map(|e| e.0)),
            strings(edges.iter().map(|e| e.1)),
            strings(edges.iter().map(|_| SUBCLASS_OF)),
        ],
    )?;
    w.write_parquet(
        concept_edges::FILE,
        &b,
        &[concept_edges::CHILD, concept_edges::PARENT],
    )?;

    let mut dc: Vec<(&str, &str, &str)> = tables
        .document_concepts
        .iter()
        .map(|&(f, d, c)| {
            (
                f,
                docs[d as usize].key.as_str(),
                vocab.concepts[c as usize].id.as_str(),
            )
        })
        .collect();
    dc.sort_unstable();
    dc.dedup();
    let b = batch(
        document_concepts::schema(),
        vec![
            strings(dc.iter().map(|r| r.1)),
            strings(dc.iter().map(|r| r.0)),
            strings(dc.iter().map(|r| r.2)),
        ],
    )?;
    w.write_parquet(
        document_concepts::FILE,
        &b,
        &[
            document_concepts::NODE_FIELD,
            document_concepts::DOCUMENT_KEY,
            document_concepts::CONCEPT_ID,
        ],
    )?;

    // Entities, mentions, relationships.
    let n = tables.entity_concepts.len();
    let b = batch(
        entities::schema(),
        vec![
            u32s(0..n as u32),
            strings(
                tables
                    .entity_concepts
                    .iter()
                    .map(|&c| vocab.concepts[c as usize].id.as_str()),
            ),
            strings(
                tables
                    .entity_concepts
                    .iter()
                    .map(|&c| vocab.concepts[c as usize].preferred_term.as_str()),
            ),
            u32s(tables.entity_passages.iter().map(|p| p.len() as u32)),
            Arc::new(Float64Array::from(tables.entity_degree.clone())),
        ],
    )?;
    w.write_parquet(entities::FILE, &b, &[entities::ENTITY_ID])?;
    let mut m: Vec<(u32, &str, u32)> = tables
        .mention_counts
        .iter()
        .map(|&(e, p, k)| (e, passage_ids[p as usize].as_str(), k))
        .collect();
    m.sort_unstable();
    let b = batch(
        mentions::schema(),
        vec![
            u32s(m.iter().map(|r| r.0)),
            strings(m.iter().map(|r| r.1)),
            u32s(m.iter().map(|r| r.2)),
        ],
    )?;
    w.write_parquet(
        mentions::FILE,
        &b,
        &[mentions::ENTITY_ID, mentions::PASSAGE_ID],
    )?;
    let b = batch(
        relationships::schema(),
        vec![
            u32s(tables.edges.iter().map(|e| e.0)),
            u32s(tables.edges.iter().map(|e| e.1)),
            Arc::new(Float64Array::from_iter_values(
                tables.edges.iter().map(|e| e.2),
            )),
        ],
    )?;
    w.write_parquet(
        relationships::FILE,
        &b,
        &[relationships::SOURCE, relationships::TARGET],
    )?;

    // Communities, membership, reports, embeddings.
    let comms = &tables.hierarchy.communities;
    if comms.iter().enumerate().any(|(i, c)| c.id as usize != i)
        || tables.reports.len() != comms.len()
        || tables.embeddings.len() != comms.len()
    {
        return Err(PipelineError::Internal(
            "communities, reports and embeddings are not aligned by community id".into(),
        ));
    }
    let b = batch(
        communities::schema(),
        vec![
            u32s(comms.iter().map(|c| c.id)),
            u32s(comms.iter().map(|c| c.level)),
            Arc::new(UInt32Array::from_iter(comms.iter().map(|c| c.parent))),
            u32s(comms.iter().map(|c| c.members.len() as u32)),
            Arc::new(BooleanArray::from_iter(
                comms.iter().map(|c| Some(c.is_leaf)),
            )),
        ],
    )?;
    w.write_parquet(communities::FILE, &b, &[communities::COMMUNITY_ID])?;
    let rows = tables.hierarchy.membership();
    let b = batch(
        membership::schema(),
        vec![
            strings(rows.iter().map(|_| run_id)),
            u32s(rows.iter().map(|r| r.level)),
            u32s(rows.iter().map(|r| r.node)),
            u32s(rows.iter().map(|r| r.community)),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.parent))),
            Arc::new(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.is_leaf)),
            )),
        ],
    )?;
    w.write_parquet(
        membership::FILE,
        &b,
        &[membership::LEVEL, membership::ENTITY_ID],
    )?;
    let r = tables.reports;
    let b = batch(
        reports::schema(),
        vec![
            u32s(r.iter().map(|x| x.community_id)),
            u32s(r.iter().map(|x| x.level)),
            strings(r.iter().map(|x| x.title.as_str())),
            strings(r.iter().map(|x| x.summary.as_str())),
            list_of_strings(r.iter().map(|x| x.findings.iter().map(String::as_str))),
            Arc::new(Float64Array::from_iter_values(r.iter().map(|x| x.rank))),
            strings(r.iter().map(|x| x.full_content.as_str())),
        ],
    )?;
    w.write_parquet(reports::FILE, &b, &[reports::COMMUNITY_ID])?;
    let dim = tables.embedder.dim;
    if let Some((i, v)) = tables
        .embeddings
        .iter()
        .enumerate()
        .find(|(_, v)| v.len() != dim)
    {
        return Err(PipelineError::Internal(format!(
            "embedding of community {i} has {} values, the embedder's dim is {dim}",
            v.len()
        )));
    }
    let values = Float32Array::from_iter_values(tables.embeddings.iter().flatten().copied());
    let list = FixedSizeListArray::try_new(
        report_embeddings::item_field(),
        i32::try_from(dim)
            .map_err(|_| PipelineError::Internal("embedding dim too large".into()))?,
        Arc::new(values),
        None,
    )
    .map_err(arrow_err)?;
    let b = batch(
        report_embeddings::schema(dim),
        vec![u32s(comms.iter().map(|c| c.id)), Arc::new(list)],
    )?;
    w.write_parquet(
        report_embeddings::FILE,
        &b,
        &[report_embeddings::COMMUNITY_ID],
    )?;
    w.write_ipc(report_embeddings::IPC_FILE, &b)?;

    let manifest = w.finish(
        parameters,
        tables.embedder.clone(),
        input_fingerprint,
        stats,
    )?;
    layout.write_latest(run_id)?;
    Ok(manifest)
}
