//! Stage 7, publish: the run's parameters, input fingerprint and statistics, then every table
//! through [`crate::publish::publish`] (the engine's writer) and `LATEST`.

use agrag_engine::format::{Layout, PendingTextIndex, RunWriter};

use crate::error::{PipelineError, Result};
use crate::ingest::CorpusColumns;
use crate::leiden::Hierarchy;
use crate::publish::RunTables;
use crate::run::{RunConfig, RunSummary, Sources};
use crate::stages::Phases;
use crate::stages::detect::DetectOutput;
use crate::stages::embed::Embedded;
use crate::stages::graph::EntityGraph;
use crate::stages::ingest::IngestStats;
use crate::stages::link::LinkOutput;
use crate::stages::report::Reported;
use crate::stages::visibility::RunFlags;

/// Everything the stages before produced that the snapshot holds.
pub(crate) struct PublishInputs<'a> {
    /// The corpus, documents sorted by key.
    pub(crate) corpus: &'a CorpusColumns,
    /// The visibility flags the run acted on.
    pub(crate) flags: &'a RunFlags,
    /// What ingest counted.
    pub(crate) ingest: &'a IngestStats,
    /// The vocabulary and links.
    pub(crate) linked: LinkOutput,
    /// The entity graph.
    pub(crate) graph: EntityGraph,
    /// The communities and entity degrees.
    pub(crate) detected: DetectOutput,
    /// The reports.
    pub(crate) reported: Reported,
    /// The vectors.
    pub(crate) embedded: Embedded,
    /// The full-text index, built beside the stages ([`crate::stages::text_index`]).
    pub(crate) text_index: PendingTextIndex<'a>,
}

/// The run's input fingerprint: BLAKE3 over the corpus's and the vocabulary's digests and the
/// visibility flags the run acted on.
fn input_fingerprint(
    corpus: &CorpusColumns,
    vocabulary_fingerprint: &str,
    flags: &RunFlags,
) -> String {
    let mut fp = blake3::Hasher::new();
    fp.update(corpus.fingerprint.as_bytes());
    fp.update(vocabulary_fingerprint.as_bytes());
    flags.fingerprint(&mut fp);
    fp.finalize().to_hex().to_string()
}

/// The run's parameters as the manifest records them.
fn parameters(cfg: &RunConfig, sources: &Sources, flags: &RunFlags) -> serde_json::Value {
    serde_json::json!({
        "documents": cfg.documents,
        "vocabulary": cfg.vocabulary,
        "link": cfg.link,
        "graph": match &sources.graphrag {
            Some(_) => serde_json::json!({"kind": "graphrag relationships", "weight": "sum of relationship weights"}),
            None => serde_json::json!({"kind": "co-occurrence", "weight": "passages mentioning both"}),
        },
        "graphrag": sources.graphrag,
        "detection": cfg.leiden,
        "membership": sources.membership,
        "report_writer": cfg.report_writer.name(),
        "community_vectors": cfg.community_vectors.to_string(),
        "embedding": cfg.embedder.parameters(),
        "document_vectors": "unit sum of the title's and each passage's vector",
        "excluded": {"passages": flags.excluded_passages.len(), "documents": flags.excluded_documents.len()},
        "hidden_out_of_graph": {"passages": flags.hidden_passages.len(), "documents": flags.hidden_documents.len()},
    })
}

/// The manifest's `stats`: the run summary without its folder, with what only the manifest
/// records (unresolved headings, the vocabulary's broken cycles, a GraphRAG index's dropped
/// relationships).
fn manifest_stats(summary: &RunSummary, inputs: &PublishInputs<'_>) -> Result<serde_json::Value> {
    let mut stats = serde_json::to_value(summary)
        .map_err(|e| PipelineError::library("serializing the run summary", e))?;
    let link = &inputs.linked.stats;
    if let Some(obj) = stats.as_object_mut() {
        obj.remove("run_dir");
        obj.insert(
            "unresolved_headings".into(),
            link.unresolved_headings.into(),
        );
        if let Some(dropped) = inputs.ingest.graphrag_relationships_dropped {
            obj.insert("graphrag_relationships_dropped".into(), dropped.into());
        }
        obj.insert(
            "vocabulary_cycles_broken".into(),
            serde_json::to_value(&link.vocabulary_cycles_broken)
                .map_err(|e| PipelineError::library("serializing the broken cycles", e))?,
        );
    }
    Ok(stats)
}

/// Stage 7: writes the run `summary.run_id` under `layout` through `writer` (started by the
/// embed stage), with the full-text index built beside the stages, and moves `LATEST` to it. The
/// summary's seconds are those of the phases before publishing (the manifest is written
/// during it).
///
/// # Errors
/// Those of [`crate::publish::publish`].
pub(crate) fn publish(
    cfg: &RunConfig,
    sources: &Sources,
    layout: &Layout,
    writer: RunWriter,
    summary: &RunSummary,
    inputs: PublishInputs<'_>,
    phases: &mut Phases,
) -> Result<()> {
    let phase = phases.start("publish", None);
    let vocabulary = &inputs.linked.vocabulary;
    let parameters = parameters(cfg, sources, inputs.flags);
    let fingerprint = input_fingerprint(inputs.corpus, &vocabulary.fingerprint, inputs.flags);
    let stats = manifest_stats(summary, &inputs)?;
    let PublishInputs {
        corpus,
        linked,
        graph,
        detected,
        reported,
        embedded,
        text_index,
        ..
    } = inputs;
    // What only the vectors needed goes before the writer allocates.
    let Reported {
        reports,
        texts,
        best_passages,
        centroid_passages,
    } = reported;
    drop((texts, best_passages, centroid_passages));
    let hierarchy: &Hierarchy = &detected.detected.hierarchy;
    let tables = RunTables {
        corpus,
        document_linked: linked.linked.document_linked,
        document_concepts: linked.linked.document_concepts,
        concept_evidence: linked.linked.concept_evidence,
        vocabulary: &linked.vocabulary,
        entity_concepts: &graph.co.entity_concepts,
        entity_passages: &graph.entity_passages,
        mention_counts: graph.mention_counts,
        entity_degree: detected.entity_degree,
        edges: &graph.co.edges,
        hierarchy,
        community_ids: detected.community_ids,
        lineage: detected.lineage,
        reports: &reports,
        report_vectors: embedded.report_vectors,
        document_embeddings: embedded.document_embeddings,
        embedder: embedded.identity,
        text_index: Some(text_index),
    };
    crate::publish::publish(layout, writer, tables, parameters, fingerprint, stats)?;
    phases.finish(phase, &format!("run {} published", summary.run_id));
    Ok(())
}
