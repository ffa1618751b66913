//! Stage 3, graph: the entity graph, from the co-occurrence of the mentions or from the
//! relationships an index gives, as a CSR for detection, with each entity's passages.

use serde::Serialize;

use crate::error::{PipelineError, Result};
use crate::graph::Graph;
use crate::graph::builder::{CooccurrenceGraph, Mention, cooccurrence};
use crate::stages::Phases;

/// What the graph stage counted.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GraphStats {
    /// Entities (graph nodes).
    pub(crate) entities: usize,
    /// Undirected edges.
    pub(crate) edges: usize,
}

/// The graph an index gives: its number of concepts (every one an entity) and its edges
/// `(a, b, weight)` over concept indices, `a < b`, sorted.
#[derive(Debug)]
pub(crate) struct GivenEdges {
    /// Concepts of the index's vocabulary.
    pub(crate) num_concepts: usize,
    /// The index's relationships.
    pub(crate) edges: Vec<(u32, u32, f64)>,
}

/// Each entity's passages and the mention rows of the snapshot.
struct EntityMentions {
    /// Passage rows mentioning each entity, ascending.
    entity_passages: Vec<Vec<u32>>,
    /// `(entity, passage row, occurrences)`.
    mention_counts: Vec<(u32, u32, u32)>,
}

/// The entity graph with what the reports and the snapshot need of the mentions.
#[derive(Debug)]
pub(crate) struct EntityGraph {
    /// Entities (their concepts) and weighted edges `(a, b, w)`, `a < b`, sorted.
    pub(crate) co: CooccurrenceGraph,
    /// Passage rows mentioning each entity, ascending.
    pub(crate) entity_passages: Vec<Vec<u32>>,
    /// `(entity, passage row, occurrences)`.
    pub(crate) mention_counts: Vec<(u32, u32, u32)>,
    /// Counts.
    pub(crate) stats: GraphStats,
}

/// Stage 3: the co-occurrence graph of `mentions` (entities are the mentioned concepts), or,
/// with `given`, an index's graph in which every one of its
/// concepts is an entity (one no text unit lists is still a node) and the edges are the
/// index's own. `occurrences` is parallel to `mentions`; both are consumed. Returns the graph
/// with its mentions, and the same graph as a CSR for detection.
///
/// # Errors
/// Those of [`cooccurrence`] and [`Graph::from_edges`]; [`PipelineError::Internal`] when a
/// mention names a concept that is not an entity (the readers check).
pub(crate) fn graph(
    mentions: Vec<Mention>,
    occurrences: Vec<u32>,
    given: Option<GivenEdges>,
    phases: &mut Phases,
) -> Result<(EntityGraph, Graph)> {
    let phase = phases.start("graph", None);
    let co = match given {
        Some(GivenEdges {
            num_concepts,
            edges,
        }) => {
            let n = u32::try_from(num_concepts)
                .map_err(|_| PipelineError::Internal("too many entities".into()))?;
            CooccurrenceGraph {
                entity_concepts: (0..n).collect(),
                edges,
            }
        }
        None => cooccurrence(&mentions)?,
    };
    let EntityMentions {
        entity_passages,
        mention_counts,
    } = attach_mentions(&co, &mentions, &occurrences)?;
    drop((mentions, occurrences));
    let csr = Graph::from_edges(co.entity_concepts.len(), &co.edges)?;
    let stats = GraphStats {
        entities: co.entity_concepts.len(),
        edges: csr.num_edges(),
    };
    phases.finish(
        phase,
        &format!("{} entities, {} edges", stats.entities, stats.edges),
    );
    let entities = EntityGraph {
        co,
        entity_passages,
        mention_counts,
        stats,
    };
    Ok((entities, csr))
}

/// Each entity's passages (ascending, distinct) and the `(entity, passage, occurrences)` rows.
fn attach_mentions(
    co: &CooccurrenceGraph,
    mentions: &[Mention],
    occurrences: &[u32],
) -> Result<EntityMentions> {
    if occurrences.len() != mentions.len() {
        return Err(PipelineError::Internal(
            "occurrence counts are not parallel to the mentions".into(),
        ));
    }
    let mut entity_passages: Vec<Vec<u32>> = vec![Vec::new(); co.entity_concepts.len()];
    let mut mention_counts = Vec::with_capacity(mentions.len());
    for (m, &n) in mentions.iter().zip(occurrences) {
        let e = co.entity_concepts.binary_search(&m.concept).map_err(|_| {
            PipelineError::Internal("mention of a concept that is not an entity".into())
        })? as u32;
        entity_passages[e as usize].push(m.passage);
        mention_counts.push((e, m.passage, n));
    }
    for ps in &mut entity_passages {
        ps.sort_unstable();
        ps.dedup();
    }
    Ok(EntityMentions {
        entity_passages,
        mention_counts,
    })
}
