//! Stage 4, detect: hierarchical Leiden (or Louvain) on the entity graph, or the communities of
//! a membership table computed elsewhere; then the refusal of a run with nothing to search.

use std::collections::BTreeMap;

use agrag_engine::format::previous::{PreviousRun, next_id_on_disk};
use agrag_engine::format::tables::LineageColumns;
use agrag_engine::format::{Layout, Manifest};

use crate::detect::{CommunitySource, Detected, detect_communities};
use crate::error::{PipelineError, Result};
use crate::graph::Graph;
use crate::lineage;
use crate::run::{RunConfig, Sources};
use crate::stages::Phases;
use crate::stages::graph::EntityGraph;
use crate::stages::link::LinkOutput;

/// The detect stage's output: the communities, and each entity's weighted degree (kept from
/// the CSR, which ends here).
#[derive(Debug)]
pub(crate) struct DetectOutput {
    /// The hierarchy with its per-level statistics, its communities in ascending order of
    /// their public ids.
    pub(crate) detected: Detected,
    /// Weighted degree of each entity, by entity id.
    pub(crate) entity_degree: Vec<f64>,
    /// Public id of each community (ascending, by hierarchy id) and the lineage.
    pub(crate) community_ids: Vec<u32>,
    /// The lineage table and the manifest's lineage fields.
    pub(crate) lineage: LineageColumns,
    /// Lineage rows per event.
    pub(crate) lineage_counts: BTreeMap<&'static str, usize>,
    /// Whether detection started from the parent run's communities.
    pub(crate) warm_start: bool,
}

/// The parent run of a new run on a root, and the smallest community id no run there used.
#[derive(Debug, Default)]
pub(crate) struct Parent {
    /// The run `LATEST` names, when it can be read (a run that cannot is warned about and
    /// treated as absent: the new run starts cold, with new ids).
    pub(crate) run: Option<PreviousRun>,
    /// Smallest community id that no run under `runs/` has used.
    pub(crate) next_community_id: u32,
}

impl Parent {
    /// Reads the run `LATEST` names and every run's manifest under `layout`.
    pub(crate) fn read(layout: &Layout) -> Parent {
        let run = match layout.read_latest() {
            Ok(Some(id)) => match PreviousRun::read(&layout.run_dir(&id)) {
                Ok(mut run) => {
                    if let Err(e) = run.read_text_embeddings() {
                        tracing::warn!(
                            "the text vectors of the published run {id} cannot be reused ({}); its texts are embedded again",
                            e.with_causes()
                        );
                    }
                    // Its text vectors cover every report text; a run written before them (or
                    // whose file is damaged) still gives its report vectors by community.
                    if run.text_embeddings.is_none()
                        && let Err(e) = run.read_vectors()
                    {
                        tracing::warn!(
                            "the vectors of the published run {id} cannot be reused ({}); every report is embedded",
                            e.with_causes()
                        );
                    }
                    Some(run)
                }
                Err(e) => {
                    tracing::warn!(
                        "the published run {id} cannot be read back ({}); detection starts cold and every community gets an id no run on this root has used",
                        e.with_causes()
                    );
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(
                    "LATEST cannot be read ({}); detection starts cold",
                    e.with_causes()
                );
                None
            }
        };
        // Ids of every run on the root, not only the parent's, are never reused.
        let mut next = run.as_ref().map_or(0, |r| r.next_community_id);
        for id in layout.list_runs().unwrap_or_default() {
            let dir = layout.run_dir(&id);
            let used = match Manifest::read(&dir) {
                Ok(m) => m.next_community_id.map(u64::from).or_else(|| {
                    m.file(agrag_engine::format::tables::communities::FILE)
                        .map(|f| f.rows)
                }),
                // A run whose manifest is damaged still holds ids: read them as they are.
                Err(_) => next_id_on_disk(&dir).map(u64::from),
            };
            next = next.max(used.map_or(0, |u| u32::try_from(u).unwrap_or(u32::MAX)));
        }
        Parent {
            run,
            next_community_id: next,
        }
    }
}

/// Stage 4: detects the communities of `graph` under [`RunConfig::leiden`], or reads those of
/// [`Sources::membership`] (keyed by concept id, or by entity title for a GraphRAG index, whose
/// ids are opaque hashes and whose titles are unique). `csr` is `graph` as a CSR; it ends here.
///
/// # Errors
/// Those of [`detect_communities`]; [`PipelineError::NothingToPublish`] when the run has no
/// entity, no community or no linked document and [`RunConfig::allow_empty`] is off.
#[allow(clippy::too_many_arguments)]
pub(crate) fn detect(
    cfg: &RunConfig,
    sources: &Sources,
    graph: &EntityGraph,
    csr: Graph,
    linked: &LinkOutput,
    num_documents: usize,
    parent: &Parent,
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
    let entity_keys: Vec<String> = graph
        .co
        .entity_concepts
        .iter()
        .map(|&c| entity_key(c))
        .collect();
    let keys: Vec<&str> = entity_keys.iter().map(String::as_str).collect();
    // A warm start continues the parent's optimisation: only under the same detection
    // parameters (another resolution, objective or seed asks for other communities; the
    // polish and the stickiness do not change what is asked for).
    let differing = |previous: &PreviousRun| -> Vec<String> {
        let now = serde_json::to_value(&cfg.leiden).unwrap_or_default();
        let empty = serde_json::Map::new();
        let (now, before) = (
            now.as_object().unwrap_or(&empty),
            previous.detection.as_object().unwrap_or(&empty),
        );
        now.keys()
            .chain(before.keys())
            .filter(|k| {
                !matches!(k.as_str(), "polish" | "stickiness") && now.get(*k) != before.get(*k)
            })
            .map(|k| {
                format!(
                    "{k} {} (was {})",
                    now.get(k).map_or("–".into(), |v| v.to_string()),
                    before.get(k).map_or("–".into(), |v| v.to_string())
                )
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let warm = match (&parent.run, &sources.membership) {
        (Some(previous), None) if !cfg.full => {
            let differ = differing(previous);
            if differ.is_empty() {
                Some(lineage::warm_start(&csr, &keys, previous))
            } else {
                tracing::info!(
                    "detection starts from nothing: other detection parameters than the parent run's: {}",
                    differ.join(", ")
                );
                None
            }
        }
        _ => None,
    };
    let source = match &sources.membership {
        Some(path) => CommunitySource::Membership {
            path,
            entity_keys: &entity_keys,
        },
        None => CommunitySource::Detect,
    };
    let mut detected = detect_communities(&csr, source, &cfg.leiden, warm.as_ref())?;
    let public = lineage::assign(
        &detected.hierarchy,
        &keys,
        parent.run.as_ref(),
        parent.next_community_id,
    );
    let community_ids = lineage::reorder(&mut detected.hierarchy, &public.ids);
    let lineage_counts = public.event_counts();
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
        community_ids,
        lineage: public.lineage,
        lineage_counts,
        warm_start: warm.is_some(),
    })
}
