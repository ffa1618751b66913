//! Publish: turn a run's results into [`RunData`] rows and write them through
//! `agrag_engine::format::write_run` (the contract is written down once, in the engine), then
//! move `LATEST`.

use agrag_engine::embed::EmbedderIdentity;
use agrag_engine::format::tables::{
    CommunityRow, ConceptRow, DocumentRow, EntityRow, MembershipRow, PassageRow, ReportRow,
};
use agrag_engine::format::{Layout, Manifest, RunData, write_run};

use crate::error::{PipelineError, Result};
use crate::ingest::Corpus;
use crate::leiden::Hierarchy;
use crate::link::{SUBCLASS_OF, Vocabulary};
use crate::report::Report;

/// One row of concept evidence: `(document index, concept index, way, passage row)`, the
/// passage `None` for a way through the title alone (see
/// [`DocumentConcepts::evidence`](crate::link::DocumentConcepts::evidence)).
pub type ConceptEvidence = (u32, u32, u32, Option<u32>);

/// Everything a run publishes. Documents must be sorted by key (passage order follows).
#[derive(Debug)]
pub struct RunTables<'a> {
    /// The corpus, documents sorted by key.
    pub corpus: &'a Corpus,
    /// Whether each document has at least one linked concept.
    pub document_linked: Vec<bool>,
    /// `(node_field, document index, concept index)`.
    pub document_concepts: Vec<(&'static str, u32, u32)>,
    /// Why each concept of the `concept` field is there.
    pub concept_evidence: Vec<ConceptEvidence>,
    /// The vocabulary.
    pub vocabulary: &'a Vocabulary,
    /// Concept index of each entity.
    pub entity_concepts: &'a [u32],
    /// Passages mentioning each entity (global passage indices, ascending).
    pub entity_passages: &'a [Vec<u32>],
    /// `(entity, passage index, occurrences)`.
    pub mention_counts: Vec<(u32, u32, u32)>,
    /// Weighted degree of each entity.
    pub entity_degree: Vec<f64>,
    /// Edges `(a, b, w)`, `a < b`, sorted.
    pub edges: &'a [(u32, u32, f64)],
    /// Detection result.
    pub hierarchy: &'a Hierarchy,
    /// One report per community, in community order.
    pub reports: &'a [Report],
    /// The vectors of each community (one or more; see
    /// [`CommunityVectors`](crate::report::CommunityVectors)), in community order.
    pub embeddings: &'a [Vec<Vec<f32>>],
    /// One embedding per document, in document order.
    pub document_embeddings: &'a [Vec<f32>],
    /// Identity of the embedder.
    pub embedder: EmbedderIdentity,
}

impl RunTables<'_> {
    /// The rows of the contract.
    ///
    /// # Errors
    /// [`PipelineError::Internal`] when communities and reports are not aligned (a bug).
    pub fn to_run_data(&self) -> Result<RunData> {
        let docs = &self.corpus.documents;
        let vocab = self.vocabulary;
        let cid = |c: u32| vocab.concepts[c as usize].id.clone();
        let comms = &self.hierarchy.communities;
        if comms.iter().enumerate().any(|(i, c)| c.id as usize != i)
            || self.reports.len() != comms.len()
            || self.embeddings.len() != comms.len()
            || self.embeddings.iter().any(Vec::is_empty)
        {
            return Err(PipelineError::Internal(
                "communities, reports and embeddings are not aligned by community id".into(),
            ));
        }
        let passage_ids: Vec<String> = docs
            .iter()
            .flat_map(|d| (0..d.passages.len()).map(|i| d.passage_id(i)))
            .collect();
        Ok(RunData {
            documents: docs
                .iter()
                .zip(&self.document_linked)
                .map(|(d, &linked)| DocumentRow {
                    key: d.key.clone(),
                    title: d.title.clone(),
                    year: d.year,
                    num_passages: d.passages.len() as u32,
                    linked,
                })
                .collect(),
            passages: docs
                .iter()
                .flat_map(|d| {
                    d.passages.iter().enumerate().map(|(i, text)| PassageRow {
                        passage_id: d.passage_id(i),
                        document_key: d.key.clone(),
                        position: i as u32,
                        text: text.clone(),
                    })
                })
                .collect(),
            concepts: vocab
                .concepts
                .iter()
                .map(|c| ConceptRow {
                    concept_id: c.id.clone(),
                    preferred_term: c.preferred_term.clone(),
                    synonyms: c.synonyms.clone(),
                })
                .collect(),
            concept_edges: vocab
                .broader
                .iter()
                .map(|&(c, p)| (cid(c), cid(p), SUBCLASS_OF.to_owned()))
                .collect(),
            document_concepts: self
                .document_concepts
                .iter()
                .map(|&(f, d, c)| (f.to_owned(), docs[d as usize].key.clone(), cid(c)))
                .collect(),
            concept_evidence: self
                .concept_evidence
                .iter()
                .map(|&(d, c, w, p)| {
                    (
                        docs[d as usize].key.clone(),
                        cid(c),
                        w,
                        p.map(|p| passage_ids[p as usize].clone()),
                    )
                })
                .collect(),
            entities: self
                .entity_concepts
                .iter()
                .enumerate()
                .map(|(e, &c)| EntityRow {
                    concept_id: cid(c),
                    name: vocab.concepts[c as usize].preferred_term.clone(),
                    num_passages: self.entity_passages[e].len() as u32,
                    degree: self.entity_degree[e],
                })
                .collect(),
            mentions: self
                .mention_counts
                .iter()
                .map(|&(e, p, k)| (e, passage_ids[p as usize].clone(), k))
                .collect(),
            relationships: self.edges.to_vec(),
            communities: comms
                .iter()
                .map(|c| CommunityRow {
                    level: c.level,
                    parent: c.parent,
                    size: c.members.len() as u32,
                    is_leaf: c.is_leaf,
                })
                .collect(),
            membership: self
                .hierarchy
                .membership()
                .into_iter()
                .map(|r| MembershipRow {
                    level: r.level,
                    entity: r.node,
                    community: r.community,
                    parent: r.parent,
                    is_leaf: r.is_leaf,
                })
                .collect(),
            reports: self
                .reports
                .iter()
                .map(|r| ReportRow {
                    level: r.level,
                    title: r.title.clone(),
                    summary: r.summary.clone(),
                    findings: r.findings.clone(),
                    rank: r.rank,
                    full_content: r.full_content.clone(),
                })
                .collect(),
            report_sources: self
                .reports
                .iter()
                .flat_map(|r| {
                    r.quoted_passages
                        .iter()
                        .map(|&p| (r.community_id, passage_ids[p as usize].clone()))
                })
                .collect(),
            report_embeddings: self
                .embeddings
                .iter()
                .flatten()
                .flatten()
                .copied()
                .collect(),
            report_embedding_communities: self
                .embeddings
                .iter()
                .enumerate()
                .flat_map(|(c, v)| std::iter::repeat_n(c as u32, v.len()))
                .collect(),
            document_embeddings: self.document_embeddings.iter().flatten().copied().collect(),
        })
    }
}

/// Writes the run through `write_run` and points `LATEST` at it. On any error nothing is
/// published and `LATEST` is untouched.
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
    let data = tables.to_run_data()?;
    let manifest = write_run(
        layout,
        run_id,
        &data,
        &tables.embedder,
        parameters,
        input_fingerprint,
        stats,
    )?;
    layout.write_latest(run_id)?;
    Ok(manifest)
}
