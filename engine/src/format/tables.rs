//! The rows of a run as plain Rust data, and [`write_run`], which turns them into the files of
//! the contract. The pipeline fills a [`RunData`]; tests and benches build small or synthetic
//! runs the same way, so every run on disk comes from this one writer.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int8Array, Int32Array,
    RecordBatch, StringArray, UInt32Array,
};

use super::layout::Layout;
use super::manifest::Manifest;
use super::schema::{
    communities, concept_edges, concept_evidence, concept_postings, concepts, document_concepts,
    document_embeddings, documents, entities, membership, mentions, passages, relationships,
    report_embeddings, report_ivf, report_sources, reports,
};
use super::writer::RunWriter;
use crate::embed::EmbedderIdentity;
use crate::error::{EngineError, Result};

/// One document. Rows must be sorted by `key` (unique).
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRow {
    /// Unique key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Publication year.
    pub year: Option<i32>,
    /// Number of passages.
    pub num_passages: u32,
    /// At least one concept in the `concept` node field.
    pub linked: bool,
}

/// One passage. Rows must be sorted by document key, then position.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageRow {
    /// Stable id `<document_key>#<position>`.
    pub passage_id: String,
    /// Owning document.
    pub document_key: String,
    /// 0-based position in the document.
    pub position: u32,
    /// Text.
    pub text: String,
}

/// One vocabulary concept.
#[derive(Debug, Clone, PartialEq)]
pub struct ConceptRow {
    /// Concept id.
    pub concept_id: String,
    /// Preferred term.
    pub preferred_term: String,
    /// Entry terms.
    pub synonyms: Vec<String>,
}

/// One entity (graph node); its id is its index.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityRow {
    /// The concept it stands for.
    pub concept_id: String,
    /// Display name.
    pub name: String,
    /// Passages mentioning it.
    pub num_passages: u32,
    /// Weighted degree.
    pub degree: f64,
}

/// One community; its id is its index.
#[derive(Debug, Clone, PartialEq)]
pub struct CommunityRow {
    /// Level (0 = coarsest).
    pub level: u32,
    /// Parent community.
    pub parent: Option<u32>,
    /// Number of members.
    pub size: u32,
    /// Not split further.
    pub is_leaf: bool,
}

/// One membership row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MembershipRow {
    /// Level.
    pub level: u32,
    /// Entity.
    pub entity: u32,
    /// Community at that level.
    pub community: u32,
    /// Its parent.
    pub parent: Option<u32>,
    /// Whether that community is a leaf.
    pub is_leaf: bool,
}

/// One community report; row `i` belongs to community `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    /// Level of the community.
    pub level: u32,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Findings.
    pub findings: Vec<String>,
    /// Rank.
    pub rank: f64,
    /// Embedded text.
    pub full_content: String,
}

/// Every row of a run. See [`schema`](super::schema) for the columns each becomes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    /// Documents, sorted by key.
    pub documents: Vec<DocumentRow>,
    /// Passages, sorted by document key then position.
    pub passages: Vec<PassageRow>,
    /// The vocabulary (any order; written sorted by id).
    pub concepts: Vec<ConceptRow>,
    /// Vocabulary edges `(child, parent, relation)` (any order; written sorted).
    pub concept_edges: Vec<(String, String, String)>,
    /// `(node_field, document_key, concept_id)` (any order; written sorted, deduplicated).
    pub document_concepts: Vec<(String, String, String)>,
    /// `(document_key, concept_id, way, passage_id)` of the `concept` node field, `None` for a
    /// way through the title alone (any order; written sorted, deduplicated). See
    /// [`concept_evidence`].
    pub concept_evidence: Vec<(String, String, u32, Option<String>)>,
    /// Entities; entity id = index.
    pub entities: Vec<EntityRow>,
    /// `(entity, passage_id, occurrences)` (any order; written sorted).
    pub mentions: Vec<(u32, String, u32)>,
    /// Edges `(source, target, weight)` with `source < target`, sorted.
    pub relationships: Vec<(u32, u32, f64)>,
    /// Communities; id = index.
    pub communities: Vec<CommunityRow>,
    /// Membership rows, sorted by level then entity.
    pub membership: Vec<MembershipRow>,
    /// One report per community.
    pub reports: Vec<ReportRow>,
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

fn embedding_batch(
    schema: arrow_schema::SchemaRef,
    first: ArrayRef,
    values: &[f32],
    dim: usize,
) -> Result<RecordBatch> {
    let list = FixedSizeListArray::try_new(
        report_embeddings::item_field(),
        i32::try_from(dim).map_err(|_| EngineError::Internal("embedding dim too large".into()))?,
        Arc::new(Float32Array::from(values.to_vec())),
        None,
    )
    .map_err(arrow_err)?;
    batch(schema, vec![first, Arc::new(list)])
}

/// Writes `concept_postings.arrow` from the sorted, deduplicated `(node_field, document_key,
/// concept_id)` rows (see [`concept_postings`]).
fn write_concept_postings(
    w: &mut RunWriter,
    docs: &[DocumentRow],
    rows: &[&(String, String, String)],
) -> Result<()> {
    let doc_index = |key: &str| {
        docs.binary_search_by(|d| d.key.as_str().cmp(key))
            .map(|i| i as u32)
            .map_err(|_| {
                EngineError::Internal(format!(
                    "inconsistent run data: document_concepts names document {key:?}, not in documents"
                ))
            })
    };
    // (field, concept or None for "all linked") → ascending document rows. Rows are sorted by
    // (field, document, concept), so each field's rows are contiguous and documents ascend.
    type Set<'a> = ((&'a str, Option<&'a str>), Vec<u32>);
    let mut sets: Vec<Set<'_>> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let field = rows[start].0.as_str();
        let end = start + rows[start..].partition_point(|r| r.0 == field);
        let mut all: Vec<u32> = Vec::new();
        let mut per_concept: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut last: Option<(&str, u32)> = None;
        for r in &rows[start..end] {
            let d = match last {
                Some((k, d)) if k == r.1 => d,
                _ => {
                    let d = doc_index(&r.1)?;
                    last = Some((r.1.as_str(), d));
                    all.push(d);
                    d
                }
            };
            per_concept.entry(r.2.as_str()).or_default().push(d);
        }
        let mut concepts: Vec<(&str, Vec<u32>)> = per_concept.into_iter().collect();
        concepts.sort_unstable_by(|a, b| a.0.cmp(b.0));
        sets.push(((field, None), all));
        sets.extend(concepts.into_iter().map(|(c, d)| ((field, Some(c)), d)));
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
        concept_postings::schema(),
        vec![
            strings(sets.iter().map(|(k, _)| k.0)),
            Arc::new(StringArray::from_iter(sets.iter().map(|(k, _)| k.1))),
            Arc::new(arrow_array::UInt64Array::from(counts)),
            Arc::new(arrow_array::BinaryArray::from_iter_values(blobs.iter())),
        ],
    )?;
    w.write_ipc(concept_postings::FILE, &b)
}

/// Checks the invariants the readers rely on.
fn check(data: &RunData, dim: usize) -> Result<()> {
    let bad = |what: String| {
        Err(EngineError::Internal(format!(
            "inconsistent run data: {what}"
        )))
    };
    if data.documents.windows(2).any(|w| w[0].key >= w[1].key) {
        return bad("documents are not sorted by unique key".into());
    }
    if data
        .passages
        .windows(2)
        .any(|w| (&w[0].document_key, w[0].position) >= (&w[1].document_key, w[1].position))
    {
        return bad("passages are not sorted by (document_key, position)".into());
    }
    let n = data.communities.len();
    let vectors = if data.report_embedding_communities.is_empty() {
        n
    } else {
        data.report_embedding_communities.len()
    };
    if data.reports.len() != n || data.report_embeddings.len() != vectors * dim {
        return bad(format!(
            "{n} communities, {} reports, {} report embedding values for {vectors} vectors (dim {dim})",
            data.reports.len(),
            data.report_embeddings.len()
        ));
    }
    if !data.report_embedding_communities.is_empty() {
        let cs = &data.report_embedding_communities;
        let mut expected = 0u32;
        for &c in cs {
            if c == expected {
                expected += 1;
            } else if c + 1 != expected {
                return bad(format!(
                    "report embedding communities are not 0, 1, 2, … each one or more times (found {c} after {})",
                    expected.wrapping_sub(1)
                ));
            }
        }
        if expected as usize != n {
            return bad(format!(
                "report embeddings cover {expected} of {n} communities"
            ));
        }
    }
    if data.document_embeddings.len() != data.documents.len() * dim {
        return bad(format!(
            "{} documents, {} document embedding values (dim {dim})",
            data.documents.len(),
            data.document_embeddings.len()
        ));
    }
    if data
        .report_embeddings
        .iter()
        .chain(&data.document_embeddings)
        .any(|x| !x.is_finite())
    {
        return bad("an embedding holds a NaN or infinite value".into());
    }
    Ok(())
}

/// Writes every table of `data` as run `run_id` under `layout` and completes the run folder
/// (`runs/<run_id>/`). It is served once [`Layout::write_latest`] names it. On error the
/// staging folder is removed.
///
/// # Errors
/// [`EngineError::Internal`] for data that breaks the invariants listed on [`RunData`] or a
/// wrong embedding length; [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
#[allow(clippy::too_many_lines)]
pub fn write_run(
    layout: &Layout,
    run_id: &str,
    data: &RunData,
    embedder: &EmbedderIdentity,
    parameters: serde_json::Value,
    input_fingerprint: String,
    stats: serde_json::Value,
) -> Result<Manifest> {
    let dim = embedder.dim;
    check(data, dim)?;
    let mut w = RunWriter::create(layout, run_id)?;
    let docs = &data.documents;
    let b = batch(
        documents::schema(),
        vec![
            strings(docs.iter().map(|d| d.key.as_str())),
            strings(docs.iter().map(|d| d.title.as_str())),
            Arc::new(Int32Array::from_iter(docs.iter().map(|d| d.year))),
            u32s(docs.iter().map(|d| d.num_passages)),
            Arc::new(BooleanArray::from_iter(docs.iter().map(|d| Some(d.linked)))),
        ],
    )?;
    w.write_parquet(documents::FILE, &b, &[documents::DOCUMENT_KEY])?;

    let ps = &data.passages;
    let b = batch(
        passages::schema(),
        vec![
            strings(ps.iter().map(|p| p.passage_id.as_str())),
            strings(ps.iter().map(|p| p.document_key.as_str())),
            u32s(ps.iter().map(|p| p.position)),
            strings(ps.iter().map(|p| p.text.as_str())),
        ],
    )?;
    w.write_parquet(
        passages::FILE,
        &b,
        &[passages::DOCUMENT_KEY, passages::POSITION],
    )?;

    let mut order: Vec<&ConceptRow> = data.concepts.iter().collect();
    order.sort_by(|a, b| a.concept_id.cmp(&b.concept_id));
    let b = batch(
        concepts::schema(),
        vec![
            strings(order.iter().map(|c| c.concept_id.as_str())),
            strings(order.iter().map(|c| c.preferred_term.as_str())),
            list_of_strings(order.iter().map(|c| c.synonyms.iter().map(String::as_str))),
        ],
    )?;
    w.write_parquet(concepts::FILE, &b, &[concepts::CONCEPT_ID])?;

    let mut edges: Vec<&(String, String, String)> = data.concept_edges.iter().collect();
    edges.sort();
    edges.dedup();
    let b = batch(
        concept_edges::schema(),
        vec![
            strings(edges.iter().map(|e| e.0.as_str())),
            strings(edges.iter().map(|e| e.1.as_str())),
            strings(edges.iter().map(|e| e.2.as_str())),
        ],
    )?;
    w.write_parquet(
        concept_edges::FILE,
        &b,
        &[concept_edges::CHILD, concept_edges::PARENT],
    )?;

    let mut dc: Vec<&(String, String, String)> = data.document_concepts.iter().collect();
    dc.sort();
    dc.dedup();
    let b = batch(
        document_concepts::schema(),
        vec![
            strings(dc.iter().map(|r| r.1.as_str())),
            strings(dc.iter().map(|r| r.0.as_str())),
            strings(dc.iter().map(|r| r.2.as_str())),
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

    write_concept_postings(&mut w, docs, &dc)?;

    let mut ev: Vec<&(String, String, u32, Option<String>)> =
        data.concept_evidence.iter().collect();
    ev.sort();
    ev.dedup();
    let b = batch(
        concept_evidence::schema(),
        vec![
            strings(ev.iter().map(|r| r.0.as_str())),
            strings(ev.iter().map(|r| r.1.as_str())),
            u32s(ev.iter().map(|r| r.2)),
            Arc::new(StringArray::from_iter(ev.iter().map(|r| r.3.as_deref()))),
        ],
    )?;
    w.write_parquet(
        concept_evidence::FILE,
        &b,
        &[
            concept_evidence::DOCUMENT_KEY,
            concept_evidence::CONCEPT_ID,
            concept_evidence::WAY,
        ],
    )?;

    let es = &data.entities;
    let b = batch(
        entities::schema(),
        vec![
            u32s(0..es.len() as u32),
            strings(es.iter().map(|e| e.concept_id.as_str())),
            strings(es.iter().map(|e| e.name.as_str())),
            u32s(es.iter().map(|e| e.num_passages)),
            Arc::new(Float64Array::from_iter_values(es.iter().map(|e| e.degree))),
        ],
    )?;
    w.write_parquet(entities::FILE, &b, &[entities::ENTITY_ID])?;

    let mut m: Vec<&(u32, String, u32)> = data.mentions.iter().collect();
    m.sort();
    let b = batch(
        mentions::schema(),
        vec![
            u32s(m.iter().map(|r| r.0)),
            strings(m.iter().map(|r| r.1.as_str())),
            u32s(m.iter().map(|r| r.2)),
        ],
    )?;
    w.write_parquet(
        mentions::FILE,
        &b,
        &[mentions::ENTITY_ID, mentions::PASSAGE_ID],
    )?;

    let rel = &data.relationships;
    let b = batch(
        relationships::schema(),
        vec![
            u32s(rel.iter().map(|e| e.0)),
            u32s(rel.iter().map(|e| e.1)),
            Arc::new(Float64Array::from_iter_values(rel.iter().map(|e| e.2))),
        ],
    )?;
    w.write_parquet(
        relationships::FILE,
        &b,
        &[relationships::SOURCE, relationships::TARGET],
    )?;

    let cs = &data.communities;
    let b = batch(
        communities::schema(),
        vec![
            u32s(0..cs.len() as u32),
            u32s(cs.iter().map(|c| c.level)),
            Arc::new(UInt32Array::from_iter(cs.iter().map(|c| c.parent))),
            u32s(cs.iter().map(|c| c.size)),
            Arc::new(BooleanArray::from_iter(cs.iter().map(|c| Some(c.is_leaf)))),
        ],
    )?;
    w.write_parquet(communities::FILE, &b, &[communities::COMMUNITY_ID])?;

    let rows = &data.membership;
    let b = batch(
        membership::schema(),
        vec![
            strings(rows.iter().map(|_| run_id)),
            u32s(rows.iter().map(|r| r.level)),
            u32s(rows.iter().map(|r| r.entity)),
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

    let r = &data.reports;
    let b = batch(
        reports::schema(),
        vec![
            u32s(0..r.len() as u32),
            u32s(r.iter().map(|x| x.level)),
            strings(r.iter().map(|x| x.title.as_str())),
            strings(r.iter().map(|x| x.summary.as_str())),
            list_of_strings(r.iter().map(|x| x.findings.iter().map(String::as_str))),
            Arc::new(Float64Array::from_iter_values(r.iter().map(|x| x.rank))),
            strings(r.iter().map(|x| x.full_content.as_str())),
        ],
    )?;
    w.write_parquet(reports::FILE, &b, &[reports::COMMUNITY_ID])?;

    let mut rs: Vec<&(u32, String)> = data.report_sources.iter().collect();
    rs.sort();
    rs.dedup();
    let b = batch(
        report_sources::schema(),
        vec![
            u32s(rs.iter().map(|r| r.0)),
            strings(rs.iter().map(|r| r.1.as_str())),
        ],
    )?;
    w.write_parquet(
        report_sources::FILE,
        &b,
        &[report_sources::COMMUNITY_ID, report_sources::PASSAGE_ID],
    )?;

    let vector_communities: Vec<u32> = if data.report_embedding_communities.is_empty() {
        (0..cs.len() as u32).collect()
    } else {
        data.report_embedding_communities.clone()
    };
    let b = embedding_batch(
        report_embeddings::schema(dim),
        u32s(vector_communities.iter().copied()),
        &data.report_embeddings,
        dim,
    )?;
    w.write_parquet(
        report_embeddings::FILE,
        &b,
        &[report_embeddings::COMMUNITY_ID],
    )?;
    w.write_ipc(report_embeddings::IPC_FILE, &b)?;
    if embedder.normalized
        && let Some(params) = crate::ivf::IvfParams::for_rows(vector_communities.len())
    {
        let part = crate::ivf::build(&data.report_embeddings, dim, &params);
        let index = crate::ivf::IvfIndex::from_partition(&data.report_embeddings, dim, &part);
        let b = embedding_batch(
            report_ivf::centroids_schema(dim),
            u32s(0..index.lists() as u32),
            index.centroids(),
            dim,
        )?;
        w.write_ipc(report_ivf::CENTROIDS_FILE, &b)?;
        let entries: Vec<_> = index.entries().collect();
        let codes = FixedSizeListArray::try_new(
            report_ivf::code_item_field(),
            i32::try_from(dim)
                .map_err(|_| EngineError::Internal("embedding dim too large".into()))?,
            Arc::new(Int8Array::from_iter_values(
                entries.iter().flat_map(|e| e.code.iter().copied()),
            )),
            None,
        )
        .map_err(arrow_err)?;
        let b = batch(
            report_ivf::lists_schema(dim),
            vec![
                u32s(entries.iter().map(|e| e.list)),
                u32s(entries.iter().map(|e| vector_communities[e.row as usize])),
                Arc::new(Float32Array::from_iter_values(
                    entries.iter().map(|e| e.scale),
                )),
                Arc::new(codes),
            ],
        )?;
        w.write_ipc(report_ivf::LISTS_FILE, &b)?;
    }

    let b = embedding_batch(
        document_embeddings::schema(dim),
        strings(docs.iter().map(|d| d.key.as_str())),
        &data.document_embeddings,
        dim,
    )?;
    w.write_parquet(
        document_embeddings::FILE,
        &b,
        &[document_embeddings::DOCUMENT_KEY],
    )?;
    w.write_ipc(document_embeddings::IPC_FILE, &b)?;

    // Full-text index of documents (title + passages), for keyword clauses and query ranking.
    let mut next = 0usize;
    let mut text_docs = Vec::with_capacity(docs.len());
    for d in docs {
        let mut texts = Vec::new();
        while next < ps.len() && ps[next].document_key == d.key {
            texts.push(ps[next].text.as_str());
            next += 1;
        }
        text_docs.push((d.title.as_str(), texts));
    }
    crate::text::build_text_index(
        &w.staging_dir().join(crate::text::TEXT_INDEX_DIR),
        text_docs,
    )?;
    w.register_dir(crate::text::TEXT_INDEX_DIR)?;

    w.finish(parameters, embedder.clone(), input_fingerprint, stats)
}
