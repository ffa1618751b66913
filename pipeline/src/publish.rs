//! Publish: hand a run's integer columns and the lookups behind them (documents, passages,
//! concepts) to `agrag_engine::format::write_run_columns`, which builds each table a batch of
//! rows at a time and streams it into its files (the contract is written down once, in the
//! engine), then move `LATEST`.

use agrag_engine::embed::EmbedderIdentity;
use agrag_engine::format::tables::{
    CommunityRecord, DocumentFields, EntityRecord, LineageColumns, MembershipRecord, ReportRecord,
    ReportVectors,
};
use agrag_engine::format::{
    Layout, Manifest, PendingTextIndex, RunColumns, RunLookups, RunWriter, write_run_columns_into,
};

use crate::error::{PipelineError, Result};
use crate::ingest::{CorpusColumns, ReleasingReader};
use crate::leiden::Hierarchy;
use crate::link::{SUBCLASS_OF, Vocabulary};
use crate::report::Report;

/// One row of concept evidence: `(document index, concept index, way, passage row)`, the
/// passage `None` for a way through the title alone (see
/// [`DocumentConcepts::evidence`](crate::link::DocumentConcepts::evidence)).
pub type ConceptEvidence = (u32, u32, u32, Option<u32>);

/// Everything a run publishes. Documents must be sorted by key (passage order follows).
/// Passage rows are the corpus's passages in document order.
pub struct RunTables<'a> {
    /// The corpus, documents sorted by key.
    pub corpus: &'a CorpusColumns,
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
    /// Detection result, its communities in ascending order of `community_ids`.
    pub hierarchy: &'a Hierarchy,
    /// Public id of each community, strictly ascending (by hierarchy id).
    pub community_ids: Vec<u32>,
    /// The lineage table and the manifest's lineage fields.
    pub lineage: LineageColumns,
    /// One report per community, in community order.
    pub reports: &'a [Report],
    /// The vectors of the communities (one or more each, see
    /// [`CommunityVectors`](crate::report::CommunityVectors)), row-major, in community order,
    /// with the community of each row.
    pub report_vectors: ReportVectors,
    /// One embedding per document, in document order, row-major (`documents × dim`).
    pub document_embeddings: agrag_engine::format::staged::RowBuffer,
    /// Identity of the embedder.
    pub embedder: EmbedderIdentity,
    /// The full-text index, when built beside the stages (see
    /// [`RunColumns::text_index`](agrag_engine::format::RunColumns)); `None` builds it at
    /// publish, beside the tables.
    pub text_index: Option<PendingTextIndex<'a>>,
}

impl std::fmt::Debug for RunTables<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTables")
            .field("documents", &self.corpus.num_documents())
            .field("communities", &self.hierarchy.communities.len())
            .field("embedder", &self.embedder)
            .field("text_index_built_beside", &self.text_index.is_some())
            .finish_non_exhaustive()
    }
}

/// The corpus and vocabulary as the engine's writer reads them: by document, passage row and
/// concept index, borrowing every string.
struct CorpusLookups<'a> {
    corpus: &'a CorpusColumns,
    linked: &'a [bool],
    vocabulary: &'a Vocabulary,
    /// The passages' text: the writers read every passage (the passage tables, the text
    /// index when it is built at publish), and what they have read leaves the resident set.
    passages: ReleasingReader<'a>,
}

impl RunLookups for CorpusLookups<'_> {
    fn num_documents(&self) -> usize {
        self.corpus.num_documents()
    }
    fn document(&self, d: u32) -> DocumentFields<'_> {
        let d = d as usize;
        DocumentFields {
            key: self.corpus.key(d),
            title: self.corpus.title(d),
            year: self.corpus.year(d),
            num_passages: self.corpus.passage_rows(d).len() as u32,
            linked: self.linked[d],
        }
    }
    fn num_passages(&self) -> usize {
        self.corpus.num_passages()
    }
    fn passage(&self, p: u32) -> (u32, u32, &str) {
        // The last document whose first passage is at or before `p` (empty documents share
        // their first row with the next one, and own no row).
        let first = self.corpus.first_passages();
        let d = first.partition_point(|&f| f <= p) - 1;
        (d as u32, p - first[d], self.passages.passage(p as usize))
    }
    fn concept_id(&self, c: u32) -> &str {
        &self.vocabulary.concepts[c as usize].id
    }
    fn preferred_term(&self, c: u32) -> &str {
        &self.vocabulary.concepts[c as usize].preferred_term
    }
    fn synonyms(&self, c: u32) -> &[String] {
        &self.vocabulary.concepts[c as usize].synonyms
    }
}

/// Completes the run `writer` started through `write_run_columns_into` and points `LATEST` at
/// it. On any error nothing
/// is published and `LATEST` is untouched. The tables' columns are consumed (the writer sorts
/// them in place and drops each once written).
///
/// # Errors
/// [`PipelineError::Engine`] for write failures; [`PipelineError::Internal`] for inconsistent
/// tables (a bug).
pub fn publish(
    layout: &Layout,
    writer: RunWriter,
    tables: RunTables<'_>,
    parameters: serde_json::Value,
    input_fingerprint: String,
    stats: serde_json::Value,
) -> Result<Manifest> {
    let comms = &tables.hierarchy.communities;
    if comms.iter().enumerate().any(|(i, c)| c.id as usize != i)
        || tables.reports.len() != comms.len()
    {
        return Err(PipelineError::Internal(
            "communities and reports are not aligned by community id".into(),
        ));
    }
    let lookups = CorpusLookups {
        corpus: tables.corpus,
        linked: &tables.document_linked,
        vocabulary: tables.vocabulary,
        passages: ReleasingReader::new(tables.corpus),
    };
    let vocab = tables.vocabulary;
    let cols = RunColumns {
        lookups: &lookups,
        concepts: (0..vocab.concepts.len() as u32).collect(),
        concept_edges: vocab
            .broader
            .iter()
            .map(|&(c, p)| (c, p, SUBCLASS_OF))
            .collect(),
        document_concepts: tables.document_concepts,
        concept_evidence: tables.concept_evidence,
        entities: tables
            .entity_concepts
            .iter()
            .enumerate()
            .map(|(e, &c)| EntityRecord {
                concept_id: vocab.concepts[c as usize].id.clone(),
                name: vocab.concepts[c as usize].preferred_term.clone(),
                num_passages: tables.entity_passages[e].len() as u32,
                degree: tables.entity_degree[e],
            })
            .collect(),
        mentions: tables.mention_counts,
        relationships: tables.edges,
        communities: comms
            .iter()
            .map(|c| CommunityRecord {
                level: c.level,
                parent: c.parent,
                size: c.members.len() as u32,
                is_leaf: c.is_leaf,
            })
            .collect(),
        community_ids: tables.community_ids,
        lineage: Some(tables.lineage),
        membership: tables
            .hierarchy
            .membership()
            .into_iter()
            .map(|r| MembershipRecord {
                level: r.level,
                entity: r.node,
                community: r.community,
                parent: r.parent,
                is_leaf: r.is_leaf,
            })
            .collect(),
        reports: tables
            .reports
            .iter()
            .map(|r| ReportRecord {
                level: r.level,
                title: r.title.clone(),
                summary: r.summary.clone(),
                findings: r.findings.clone(),
                rank: r.rank,
                full_content: r.full_content.clone(),
            })
            .collect(),
        report_sources: tables
            .reports
            .iter()
            .flat_map(|r| r.quoted_passages.iter().map(|&p| (r.community_id, p)))
            .collect(),
        report_embeddings: tables.report_vectors,
        document_embeddings: tables.document_embeddings,
        text_index: tables.text_index,
    };
    let run_id = writer.run_id().to_owned();
    let manifest = write_run_columns_into(
        writer,
        cols,
        &tables.embedder,
        parameters,
        input_fingerprint,
        stats,
    )?;
    layout.write_latest(&run_id)?;
    Ok(manifest)
}
