//! The nightly job: ingest → link → graph → detect → report → embed → publish, each stage a
//! typed function of `stages`; this module holds the run's configuration, its summary
//! and the chain.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agrag_engine::embed::Embedder;
use agrag_engine::format::{Layout, RunWriter, TextIndexJob, new_run_id};
use serde::Serialize;

use crate::detect::Detected;
use crate::error::{PipelineError, Result};
use crate::ingest::{ColumnNames, DocumentsFormat};
use crate::leiden::LeidenConfig;
use crate::link::LinkConfig;
use crate::report::{CommunityVectors, ReportWriter};
use crate::stages::detect::Parent;
use crate::stages::embed::Reuse;
use crate::stages::graph::{GivenEdges, GraphStats};
use crate::stages::ingest::{IndexInputs, IngestStats, Ingested};
use crate::stages::link::{LinkInput, LinkStats};
use crate::stages::publish::PublishInputs;
use crate::stages::visibility::{PassageTable, RunFlags};
use crate::stages::{self, Phases};

/// Texts per embedding call: enough to amortize a transformer batch, small enough that both
/// cores get work on a few hundred reports.
pub const EMBED_CHUNK_TEXTS: usize = 32;

/// Node field of concepts found by linking.
pub const NODE_FIELD_CONCEPT: &str = "concept";
/// Node field of the input's own subject headings (`mesh`).
pub const NODE_FIELD_MESH: &str = "mesh";

/// Everything one run needs.
#[derive(Clone)]
pub struct RunConfig {
    /// Snapshot root (runs/, LATEST, visibility.sqlite).
    pub root: PathBuf,
    /// Documents: JSON Lines, Parquet or CSV ([`read_documents`](crate::ingest::read_documents), format in [`Sources`]).
    pub documents: PathBuf,
    /// Vocabulary folder (`concepts.tsv`, `broader.tsv`).
    pub vocabulary: PathBuf,
    /// Worker threads (`None`: Rayon's default, one per core). Results do not depend on it.
    pub threads: Option<usize>,
    /// Linking parameters.
    pub link: LinkConfig,
    /// Detection parameters (with the seed).
    pub leiden: LeidenConfig,
    /// Report embedder.
    pub embedder: Arc<dyn Embedder>,
    /// Report writer.
    pub report_writer: Arc<dyn ReportWriter>,
    /// What each community's vectors are made of (its rows of `report_embeddings`).
    pub community_vectors: CommunityVectors,
    /// Draw progress bars on stderr (only when it is a terminal).
    pub progress: bool,
    /// Publish the run even when it has no entity, no community or no document linked to a
    /// concept (`--allow-empty`). Off by default: such a run is refused with
    /// [`PipelineError::NothingToPublish`], since it would replace a good run with one that
    /// answers nothing (the usual cause is a vocabulary whose terms the documents never use).
    pub allow_empty: bool,
    /// Link, detect and embed everything from nothing (`--full`) instead of taking the links of
    /// documents the run `LATEST` names linked with the same input, warm-starting from its
    /// communities ([`crate::lineage`]) and taking its vectors where the text is unchanged.
    /// Community ids are carried over either way.
    pub full: bool,
}

impl std::fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("root", &self.root)
            .field("documents", &self.documents)
            .field("vocabulary", &self.vocabulary)
            .field("threads", &self.threads)
            .field("link", &self.link)
            .field("leiden", &self.leiden)
            .field("embedder", &self.embedder.identity())
            .field("report_writer", &self.report_writer.name())
            .field("community_vectors", &self.community_vectors)
            .field("allow_empty", &self.allow_empty)
            .field("full", &self.full)
            .finish()
    }
}

/// Where a run's inputs come from, beyond [`RunConfig::documents`] and
/// [`RunConfig::vocabulary`]: the documents' format and column names, a membership table
/// computed elsewhere, a GraphRAG index. The default reads the documents by their extension
/// with the JSON shape's column names and detects communities itself.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Format of [`RunConfig::documents`] (`None`: by extension, see
    /// [`DocumentsFormat::from_path`]).
    pub documents_format: Option<DocumentsFormat>,
    /// Column names of a documents table.
    pub columns: ColumnNames,
    /// A membership table (Parquet) that replaces detection; see [`crate::membership`]. With
    /// [`Sources::graphrag`] its `entity` column holds GraphRAG entity titles.
    pub membership: Option<PathBuf>,
    /// A GraphRAG index folder that replaces the documents, the vocabulary, linking and the
    /// co-occurrence graph; see [`crate::ingest::graphrag`].
    pub graphrag: Option<PathBuf>,
}

/// What a run did, printed at the end and stored in the manifest's `stats`.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The published run.
    pub run_id: String,
    /// Its folder.
    pub run_dir: PathBuf,
    /// Documents read.
    pub documents: usize,
    /// Passages read.
    pub passages: usize,
    /// Passages left out of the graph because their visibility is deleted or superseded.
    pub excluded_passages: usize,
    /// Passages of the input that were empty or only white space, dropped at ingest (not
    /// counted in `passages`).
    pub empty_passages_dropped: usize,
    /// Documents with at least one linked concept.
    pub linked_documents: usize,
    /// Distinct `(passage, concept)` mentions.
    pub mentions: usize,
    /// Mean distinct concepts mentioned per passage.
    pub mean_mentions_per_passage: f64,
    /// Entities (graph nodes).
    pub entities: usize,
    /// Edges of the entity graph.
    pub edges: usize,
    /// Communities per level, level 0 first.
    pub communities_per_level: Vec<usize>,
    /// Modularity of level 0.
    pub modularity: f64,
    /// Isolated entities.
    pub isolates: usize,
    /// The detection's `max_cluster_size`: communities larger than it are split.
    pub max_cluster_size: usize,
    /// Leaf communities larger than `max_cluster_size`, which Leiden could not split (or at the
    /// last level `max_levels` allows); see [`crate::leiden::hierarchy`].
    pub oversized_leaves: usize,
    /// Size of the largest leaf community, in nodes.
    pub largest_leaf: usize,
    /// Embedder model.
    pub embedder: String,
    /// Detection statistics.
    pub detection: crate::leiden::DetectionStats,
    /// The run whose communities this one continues (`LATEST` when the run started).
    pub parent_run_id: Option<String>,
    /// Whether detection started from the parent's communities (not with `--full`, nor
    /// without a parent, nor with a membership table, nor when the parent was detected with
    /// other detection parameters than the polish).
    pub warm_start: bool,
    /// Rows of the `community_lineage` table per event (`same`, `grew`, `shrank`, `split`,
    /// `merged`, `new`, `dissolved`).
    pub lineage: BTreeMap<&'static str, usize>,
    /// Per artifact, the items taken from the parent run: `linked_passages` (passages of
    /// documents whose title and passages the parent linked, with the same vocabulary and
    /// linking parameters), `text_embeddings` (distinct report texts, titles and
    /// passages whose vector is the parent's: same text, same embedder), `document_embeddings`
    /// (documents whose title and visible passages all had the parent's vectors), `reports`
    /// (none yet) and `report_embeddings` (communities whose every report-text vector was the
    /// parent's: same embedded text, same embedder).
    pub reused: BTreeMap<&'static str, usize>,
    /// Per artifact (same keys), the items computed by this run.
    pub recomputed: BTreeMap<&'static str, usize>,
    /// Wall seconds per phase.
    pub seconds: BTreeMap<String, f64>,
}

/// The statistics of a run's stages, which its summary is made of.
#[derive(Clone, Copy)]
struct StageStats<'a> {
    ingest: &'a IngestStats,
    /// Passages deleted or superseded, left out.
    num_excluded: usize,
    link: &'a LinkStats,
    graph: &'a GraphStats,
    detected: &'a Detected,
    lineage: &'a agrag_engine::format::tables::LineageColumns,
    lineage_counts: &'a BTreeMap<&'static str, usize>,
    warm_start: bool,
    reused_report_vectors: usize,
    /// Distinct texts whose vectors came from the parent, and those embedded.
    text_vectors: (usize, usize),
    reused_document_vectors: usize,
}

impl RunSummary {
    /// The summary of run `run_id` (in `run_dir`) from its stages' statistics; `seconds` are
    /// the phases' so far.
    fn from_stages(
        run_id: String,
        run_dir: PathBuf,
        cfg: &RunConfig,
        stages: &StageStats<'_>,
        seconds: BTreeMap<String, f64>,
    ) -> Self {
        let StageStats {
            ingest,
            num_excluded,
            link,
            graph,
            detected,
            ..
        } = *stages;
        let stats = &detected.hierarchy.stats;
        RunSummary {
            run_id,
            run_dir,
            documents: ingest.documents,
            passages: ingest.passages,
            excluded_passages: num_excluded,
            empty_passages_dropped: ingest.empty_passages_dropped,
            linked_documents: link.linked_documents,
            mentions: link.mentions,
            mean_mentions_per_passage: link.mentions as f64 / ingest.passages.max(1) as f64,
            entities: graph.entities,
            edges: graph.edges,
            communities_per_level: detected.communities_per_level.clone(),
            modularity: detected.modularity,
            isolates: stats.isolates,
            max_cluster_size: cfg.leiden.max_cluster_size,
            oversized_leaves: stats.oversized_leaves,
            largest_leaf: stats.largest_leaf,
            embedder: cfg.embedder.identity().model.clone(),
            detection: stats.clone(),
            parent_run_id: stages.lineage.parent_run_id.clone(),
            warm_start: stages.warm_start,
            lineage: stages.lineage_counts.clone(),
            reused: BTreeMap::from([
                ("linked_passages", link.reuse.reused_passages),
                ("document_embeddings", stages.reused_document_vectors),
                ("text_embeddings", stages.text_vectors.0),
                ("reports", 0),
                ("report_embeddings", stages.reused_report_vectors),
            ]),
            recomputed: BTreeMap::from([
                ("linked_passages", link.reuse.linked_passages),
                (
                    "document_embeddings",
                    ingest.documents - stages.reused_document_vectors,
                ),
                ("text_embeddings", stages.text_vectors.1),
                ("reports", detected.hierarchy.communities.len()),
                (
                    "report_embeddings",
                    detected.hierarchy.communities.len() - stages.reused_report_vectors,
                ),
            ]),
            seconds,
        }
    }
}

/// Runs the whole job and publishes a new run. On error nothing is published and `LATEST`
/// keeps naming the previous run.
///
/// # Errors
/// Bad input ([`PipelineError::Io`], [`PipelineError::Parse`], [`PipelineError::EmptyInput`],
/// [`PipelineError::UnsupportedEncoding`], [`PipelineError::DuplicateKey`],
/// [`PipelineError::InvalidConfig`]), a run with nothing to publish
/// ([`PipelineError::NothingToPublish`], unless [`RunConfig::allow_empty`]) or a failure to
/// write the snapshot ([`PipelineError::Engine`]). [`PipelineError::RunInProgress`] when
/// another run holds the root ([`crate::lock::RunLock`]).
pub fn run(cfg: &RunConfig) -> Result<RunSummary> {
    run_with(cfg, &Sources::default())
}

/// [`run`] with inputs from `sources`: documents as Parquet or CSV, communities from a
/// membership table. On error nothing is published.
///
/// # Errors
/// Those of [`run`], and those of [`read_documents`](crate::ingest::read_documents) and [`crate::membership::read_membership`].
pub fn run_with(cfg: &RunConfig, sources: &Sources) -> Result<RunSummary> {
    cfg.leiden.validate()?;
    if let Some(t) = cfg.threads
        && !(1..=crate::detect::MAX_THREADS).contains(&t)
    {
        return Err(PipelineError::InvalidConfig {
            field: "threads",
            value: t.to_string(),
            expected: "an integer from 1 to 1024",
        });
    }
    // Held until the run ends: a second run on this root is refused at once.
    let _lock = crate::lock::RunLock::acquire(&Layout::new(&cfg.root))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.threads.unwrap_or(0))
        .build()
        .map_err(|e| PipelineError::library("starting the thread pool", e))?;
    pool.install(|| run_in_pool(cfg, sources))
}

/// The stages in order ([`crate::stages`]), inside the run's thread pool.
fn run_in_pool(cfg: &RunConfig, sources: &Sources) -> Result<RunSummary> {
    let mut phases = Phases::new(cfg.progress);
    let layout = Layout::new(&cfg.root);
    // The run's files are staged from the start (a failed run removes them): the passages'
    // text goes to a scratch file as it is read, the title and passage vectors as they are
    // made.
    let run_id = new_run_id();
    let writer = RunWriter::create(&layout, &run_id)?;

    // The vocabulary is loaded and its linker compiled while the corpus is read (an index
    // brings its own vocabulary, and needs no linker). Ingest's error, if any, comes first.
    let (ingested, prepared) = if sources.graphrag.is_some() {
        (
            stages::ingest::ingest(cfg, sources, &writer, &mut phases),
            None,
        )
    } else {
        let ((ingested, read), prepared) = rayon::join(
            || {
                let ingested = stages::ingest::ingest(cfg, sources, &writer, &mut phases);
                (ingested, std::time::Instant::now())
            },
            || stages::link::prepare(&cfg.link, &cfg.vocabulary),
        );
        (ingested, Some((prepared, read)))
    };
    let Ingested {
        corpus,
        index,
        stats: ingest_stats,
    } = ingested?;
    let cancel_text_index = std::sync::atomic::AtomicBool::new(false);
    let text_index = TextIndexJob::new(&writer);
    std::thread::scope(|scope| {
        // Declared first, so dropped last: on an error the text index's wait, dropped
        // before it, stops the build before the writer removes the staging folder.
        let writer = writer;
        let text_index = stages::text_index::spawn(scope, text_index, &corpus, &cancel_text_index);
        let flags = RunFlags::read(&layout)?;
        let passages = PassageTable::new(&corpus, &flags);
        let (index_vocabulary, given) = match index {
            Some(IndexInputs { vocabulary, graph }) => (Some(vocabulary), Some(graph)),
            None => (None, None),
        };
        let input = match (index_vocabulary, given.as_ref(), prepared) {
            (Some(vocabulary), Some(g), _) => LinkInput::Given(vocabulary, g.mentions.as_slice()),
            (_, _, Some((prepared, since))) => LinkInput::Prepared {
                prepared: Box::new(prepared?),
                since,
            },
            // Ingest gives an index exactly when the sources name one, and then nothing is
            // prepared.
            _ => unreachable!("either an index's vocabulary or a prepared linker"),
        };
        let mut linked = stages::link::link(
            &cfg.link,
            input,
            &corpus,
            &passages,
            &flags.excluded_documents,
            (!cfg.full).then_some(&layout),
            &writer,
            &mut phases,
        )?;
        let num_concepts = linked.vocabulary.len();
        let (graph, csr) = stages::graph::graph(
            std::mem::take(&mut linked.linked.mentions),
            std::mem::take(&mut linked.linked.occurrences),
            given.map(|g| GivenEdges {
                num_concepts,
                edges: g.edges,
            }),
            &mut phases,
        )?;
        let mut parent = Parent::read(&layout);
        let detected = stages::detect::detect(
            cfg,
            sources,
            &graph,
            csr,
            &linked,
            corpus.num_documents(),
            &parent,
            &mut phases,
        )?;
        if let Some(previous) = parent.run.as_mut() {
            previous.keep_only_vectors();
        }
        let reported = stages::report::report(
            cfg,
            &detected.detected.hierarchy,
            &graph,
            &linked.vocabulary,
            &passages,
            &mut phases,
        )?;
        let reuse = parent.run.as_ref().map(|previous| Reuse {
            previous,
            community_ids: &detected.community_ids,
        });
        let embedded = stages::embed::embed(
            cfg,
            &corpus,
            &passages,
            &reported,
            reuse,
            &writer,
            &mut phases,
        )?;
        drop(parent);
        let num_excluded = passages.num_excluded();
        drop(passages);

        let mut summary = RunSummary::from_stages(
            run_id.clone(),
            layout.run_dir(&run_id),
            cfg,
            &StageStats {
                ingest: &ingest_stats,
                num_excluded,
                link: &linked.stats,
                graph: &graph.stats,
                detected: &detected.detected,
                lineage: &detected.lineage,
                lineage_counts: &detected.lineage_counts,
                warm_start: detected.warm_start,
                reused_report_vectors: embedded.reused_report_vectors,
                text_vectors: embedded.text_vectors,
                reused_document_vectors: embedded.reused_document_vectors,
            },
            phases.seconds().clone(),
        );
        let inputs = PublishInputs {
            corpus: &corpus,
            flags: &flags,
            ingest: &ingest_stats,
            linked,
            graph,
            detected,
            reported,
            embedded,
            text_index,
        };
        stages::publish::publish(cfg, sources, &layout, writer, &summary, inputs, &mut phases)?;
        summary.seconds = phases.into_seconds();
        Ok(summary)
    })
}
