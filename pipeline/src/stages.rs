//! The link and graph stages as typed values, so that an input which already holds mentions
//! and relationships (a GraphRAG index) replaces them without touching the stages after them.
//!
//! ```text
//! corpus + vocabulary ──link_corpus──► Linked ──cooccurrence_graph──► EntityGraph ──► detect
//! GraphRAG index ──────given_links───► Linked ──given_graph─────────► EntityGraph ──► detect
//! ```

use std::collections::{HashMap, HashSet};
use std::path::Path;

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::error::{PipelineError, Result};
use crate::graph::builder::{CooccurrenceGraph, Mention, cooccurrence};
use crate::ingest::Corpus;
use crate::link::{DocumentConcepts, DocumentLinker, LinkConfig, TermIndex, Vocabulary};
use crate::publish::ConceptEvidence;
use crate::report::PassageRef;
use crate::run::{NODE_FIELD_CONCEPT, NODE_FIELD_MESH};

/// Per passage row: whether its visibility keeps it out of the run (`excluded`: deleted or
/// superseded) or out of the graph and reports (`hidden`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PassageFlags<'a> {
    pub(crate) excluded: &'a [bool],
    pub(crate) hidden: &'a [bool],
}

/// What linking found: the graph's input mentions and each document's concepts.
#[derive(Debug, Default)]
pub(crate) struct Linked {
    /// `(passage row, concept)` of passages neither excluded nor hidden.
    pub(crate) mentions: Vec<Mention>,
    /// Occurrences of a concept in a passage, when more than one.
    pub(crate) occurrences: HashMap<(u32, u32), u32>,
    /// Whether each document has at least one linked concept.
    pub(crate) document_linked: Vec<bool>,
    /// `(node_field, document, concept)`.
    pub(crate) document_concepts: Vec<(&'static str, u32, u32)>,
    /// Why each concept of the `concept` field is there.
    pub(crate) concept_evidence: Vec<ConceptEvidence>,
    /// The input's own headings that name no concept.
    pub(crate) unresolved_headings: usize,
}

impl Linked {
    /// Documents with at least one linked concept.
    pub(crate) fn linked_documents(&self) -> usize {
        self.document_linked.iter().filter(|x| **x).count()
    }
}

/// Links every document of `corpus` against `vocab` (whole documents in parallel: title and
/// the passages that are not excluded) and resolves the documents' own headings. Returns the
/// links and the linker's number of patterns.
///
/// # Errors
/// Those of [`DocumentLinker::new`].
pub(crate) fn link_corpus(
    corpus: &Corpus,
    vocab: &Vocabulary,
    link: &LinkConfig,
    passage_refs: &[PassageRef<'_>],
    flags: PassageFlags<'_>,
    excluded_documents: &HashSet<String>,
    bar: &ProgressBar,
) -> Result<(Linked, usize)> {
    let linker = DocumentLinker::new(vocab, link)?;
    let mut first_passage = Vec::with_capacity(corpus.documents.len());
    let mut next = 0usize;
    for doc in &corpus.documents {
        first_passage.push(next);
        next += doc.passages.len();
    }
    let found: Vec<Option<(Vec<usize>, DocumentConcepts)>> = corpus
        .documents
        .par_iter()
        .zip(first_passage.par_iter())
        .map(|(doc, &first)| {
            let kept: Vec<usize> = (first..first + doc.passages.len())
                .filter(|&p| !flags.excluded[p])
                .collect();
            bar.inc(doc.passages.len() as u64);
            if kept.is_empty() {
                return None;
            }
            let texts: Vec<&str> = kept.iter().map(|&p| passage_refs[p].text).collect();
            Some((kept, linker.link_document(&doc.title, &texts)))
        })
        .collect();
    let mut out = Linked {
        document_linked: vec![false; corpus.documents.len()],
        ..Linked::default()
    };
    for (d, found) in found.iter().enumerate() {
        let Some((kept, dc)) = found else {
            continue;
        };
        for (&p, concepts) in kept.iter().zip(&dc.passage_mentions) {
            if flags.hidden[p] {
                continue;
            }
            for &(c, n) in concepts {
                out.mentions.push(Mention {
                    passage: p as u32,
                    concept: c,
                });
                out.occurrences.insert((p as u32, c), n);
            }
        }
        for (x, ways) in dc.concepts.iter().zip(&dc.evidence) {
            out.document_concepts
                .push((NODE_FIELD_CONCEPT, d as u32, x.concept));
            for (w, way) in ways.iter().enumerate() {
                let w = w as u32;
                if way.is_empty() {
                    out.concept_evidence.push((d as u32, x.concept, w, None));
                }
                for &k in way {
                    out.concept_evidence.push((
                        d as u32,
                        x.concept,
                        w,
                        Some(kept[k as usize] as u32),
                    ));
                }
            }
        }
        out.document_linked[d] = !dc.concepts.is_empty();
    }
    // The input's own headings, resolved by preferred term or synonym (case-folded).
    let term_index = TermIndex::new(vocab);
    for (d, doc) in corpus.documents.iter().enumerate() {
        if excluded_documents.contains(&doc.key) {
            continue;
        }
        for h in &doc.headings {
            match term_index.get(h) {
                Some(c) => out.document_concepts.push((NODE_FIELD_MESH, d as u32, c)),
                None => out.unresolved_headings += 1,
            }
        }
    }
    Ok((out, linker.num_patterns()))
}

/// Links from mentions an index gives (`(passage row, concept)`): the passages that are
/// neither excluded nor hidden feed the graph, and every passage not excluded is evidence of
/// its document's concepts, as with [`link_corpus`].
pub(crate) fn given_links(
    mentions: &[Mention],
    passage_refs: &[PassageRef<'_>],
    flags: PassageFlags<'_>,
    num_documents: usize,
) -> Linked {
    let mut out = Linked {
        document_linked: vec![false; num_documents],
        ..Linked::default()
    };
    let mut per_document: Vec<(u32, u32, u32)> = Vec::new();
    for m in mentions {
        let p = m.passage as usize;
        if flags.excluded[p] {
            continue;
        }
        per_document.push((passage_refs[p].document, m.concept, m.passage));
        if !flags.hidden[p] {
            out.mentions.push(*m);
        }
    }
    per_document.sort_unstable();
    per_document.dedup();
    for (i, &(d, c, p)) in per_document.iter().enumerate() {
        if i == 0 || per_document[i - 1].0 != d || per_document[i - 1].1 != c {
            out.document_concepts.push((NODE_FIELD_CONCEPT, d, c));
        }
        // One way of evidence per concept: the passages whose text unit lists the entity.
        out.concept_evidence.push((d, c, 0, Some(p)));
        out.document_linked[d as usize] = true;
    }
    out
}

/// Relationships an index gives, as [`given_graph`] takes them.
#[derive(Debug)]
pub(crate) struct GivenGraph {
    /// `(passage row, concept)`.
    pub(crate) mentions: Vec<Mention>,
    /// `(a, b, weight)` over concept indices, `a < b`, sorted.
    pub(crate) edges: Vec<(u32, u32, f64)>,
}

/// The entity graph before it becomes a CSR, with what the reports and the snapshot need.
#[derive(Debug)]
pub(crate) struct EntityGraph {
    /// Entities (their concepts) and weighted edges.
    pub(crate) co: CooccurrenceGraph,
    /// Passage rows mentioning each entity, ascending.
    pub(crate) entity_passages: Vec<Vec<u32>>,
    /// `(entity, passage row, occurrences)`.
    pub(crate) mention_counts: Vec<(u32, u32, u32)>,
}

/// The co-occurrence graph of `mentions`: entities are the mentioned concepts.
///
/// # Errors
/// Those of [`cooccurrence`].
pub(crate) fn cooccurrence_graph(
    mentions: &[Mention],
    occurrences: &HashMap<(u32, u32), u32>,
) -> Result<EntityGraph> {
    let co = cooccurrence(mentions)?;
    attach_mentions(co, mentions, occurrences)
}

/// The graph an index gives: every one of its `num_concepts` concepts is an entity (an entity
/// no text unit lists is still a node), and the edges are the index's own.
///
/// # Errors
/// [`PipelineError::Internal`] when a mention names a concept out of range (the reader checks).
pub(crate) fn given_graph(
    num_concepts: usize,
    edges: Vec<(u32, u32, f64)>,
    mentions: &[Mention],
    occurrences: &HashMap<(u32, u32), u32>,
) -> Result<EntityGraph> {
    let n = u32::try_from(num_concepts)
        .map_err(|_| PipelineError::Internal("too many entities".into()))?;
    let co = CooccurrenceGraph {
        entity_concepts: (0..n).collect(),
        edges,
    };
    attach_mentions(co, mentions, occurrences)
}

fn attach_mentions(
    co: CooccurrenceGraph,
    mentions: &[Mention],
    occurrences: &HashMap<(u32, u32), u32>,
) -> Result<EntityGraph> {
    let num_entities = co.entity_concepts.len();
    let mut entity_passages: Vec<Vec<u32>> = vec![Vec::new(); num_entities];
    let mut mention_counts = Vec::with_capacity(mentions.len());
    for m in mentions {
        let e = co.entity_concepts.binary_search(&m.concept).map_err(|_| {
            PipelineError::Internal("mention of a concept that is not an entity".into())
        })? as u32;
        entity_passages[e as usize].push(m.passage);
        mention_counts.push((
            e,
            m.passage,
            occurrences
                .get(&(m.passage, m.concept))
                .copied()
                .unwrap_or(1),
        ));
    }
    for ps in &mut entity_passages {
        ps.sort_unstable();
        ps.dedup();
    }
    Ok(EntityGraph {
        co,
        entity_passages,
        mention_counts,
    })
}

/// Reads a GraphRAG index ([`crate::ingest::graphrag::read_graphrag`]).
///
/// # Errors
/// Those of the reader.
#[cfg(feature = "tables")]
pub(crate) fn read_index(dir: &Path) -> Result<crate::ingest::graphrag::GraphRagIndex> {
    crate::ingest::graphrag::read_graphrag(dir)
}

/// Without the `tables` feature there is no Parquet reader: a GraphRAG index is refused.
///
/// # Errors
/// Always [`PipelineError::InvalidConfig`].
#[cfg(not(feature = "tables"))]
pub(crate) fn read_index(dir: &Path) -> Result<GraphRagIndexStub> {
    Err(PipelineError::InvalidConfig {
        field: "graphrag",
        value: dir.display().to_string(),
        expected: "a build with the `tables` feature (the default) to read Parquet",
    })
}

/// Stands in for the GraphRAG index in a build without the `tables` feature (never constructed).
#[cfg(not(feature = "tables"))]
#[derive(Debug)]
pub(crate) struct GraphRagIndexStub {
    pub(crate) corpus: Corpus,
    pub(crate) vocabulary: Vocabulary,
    pub(crate) mentions: Vec<Mention>,
    pub(crate) edges: Vec<(u32, u32, f64)>,
    pub(crate) dropped_relationships: Vec<u64>,
}
