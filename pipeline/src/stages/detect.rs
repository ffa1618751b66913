//! Stage 4, detect: hierarchical Leiden (or Louvain) on the entity graph, or the communities of
//! a membership table computed elsewhere; then the refusal of a run with nothing to search.

use crate::detect::{CommunitySource, Detected, detect_communities};
use crate::error::{PipelineError, Result};
use crate::graph::Graph;
use crate::run::{RunConfig, Sources};
use crate::stages::Phases;
use crate::stages::graph::EntityGraph;
use crate::stages::link::LinkOutput;

/// The detect stage's output: the communities, and each entity's weighted degree (kept from
/// the CSR, which ends here).
#[derive(Debug)]
pub(crate) struct DetectOutput {
    /// The hierarchy with its per-level statistics.
    pub(crate) detected: Detected,
    /// Weighted degree of each entity, by entity id.
    pub(crate) entity_degree: Vec<f64>,
}

/// Stage 4: detects the communities of `graph` under [`RunConfig::leiden`], or reads those of
/// [`Sources::membership`] (keyed by concept id, or by entity title for a GraphRAG index, whose
/// ids are opaque hashes and whose titles are unique). `csr` is `graph` as a CSR; it ends here.
///
/// # Errors
/// Those of [`detect_communities`]; [`PipelineError::NothingToPublish`] when the run has no
/// entity, no community or no linked document and [`RunConfig::allow_empty`] is off.
pub(crate) fn detect(
    cfg: &RunConfig,
    sources: &Sources,
    graph: &EntityGraph,
    csr: Graph,
    linked: &LinkOutput,
    num_documents: usize,
    phases: &mut Phases,
) -> Result<DetectOutput> {
    let phase = phases.start("detect", None);
    let vocabulary = &linked.vocabulary;
    let linked_documents = linked.stats.linked_documents;
    let entity_key = |c: u32| {
        let concept = &vocabulary.concepts[c as usize];
        if sources.graphrag.is_some() {
            concept.preferred_term.clone()
        } else {
            concept.id.clone()
        }
    };
    let entity_keys: Vec<String> = match &sources.membership {
        Some(_) => graph
            .co
            .entity_concepts
            .iter()
            .map(|&c| entity_key(c))
            .collect(),
        None => Vec::new(),
    };
    let source = match &sources.membership {
        Some(path) => CommunitySource::Membership {
            path,
            entity_keys: &entity_keys,
        },
        None => CommunitySource::Detect,
    };
    let detected = detect_communities(&csr, source, &cfg.leiden)?;
    let entity_degree = csr.weighted_degrees().to_vec();
    drop(csr);
    phases.finish(
        phase,
        &format!(
            "communities per level {:?}, modularity {:.4}",
            detected.communities_per_level, detected.modularity
        ),
    );
    let entities = graph.co.entity_concepts.len();
    let communities = detected.hierarchy.communities.len();
    if !cfg.allow_empty && (entities == 0 || communities == 0 || linked_documents == 0) {
        return Err(PipelineError::NothingToPublish {
            entities,
            communities,
            linked_documents,
            documents: num_documents,
            vocabulary: cfg.vocabulary.clone(),
            documents_path: cfg.documents.clone(),
        });
    }
    Ok(DetectOutput {
        detected,
        entity_degree,
    })
}
