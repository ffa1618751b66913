//! The nightly job: ingest → link → graph → detect → report → embed → publish.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agrag_engine::embed::Embedder;
use agrag_engine::format::tables::ReportVectors;
use agrag_engine::format::{Layout, new_run_id};
use agrag_engine::visibility::{Target, Visibility, VisibilityStore};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use crate::detect::{CommunitySource, Detected, detect_communities};
use crate::embed::{document_vector, embed_texts};
use crate::error::{PipelineError, Result};
use crate::graph::Graph;
use crate::ingest::{ColumnNames, DocumentsFormat, read_documents};
use crate::leiden::LeidenConfig;
use crate::link::{LinkConfig, load_vocabulary};
use crate::publish::{RunTables, publish};
use crate::report::{Adjacency, CommunityVectors, PassageRef, ReportWriter, community_context};
use crate::stages::{
    EntityGraph, GivenGraph, Linked, PassageFlags, cooccurrence_graph, given_graph, given_links,
    link_corpus, read_index,
};

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
    /// Documents: JSON Lines, Parquet or CSV ([`read_documents`], format in [`Sources`]).
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
    /// Wall seconds per phase.
    pub seconds: BTreeMap<String, f64>,
}

struct Phases {
    progress: bool,
    seconds: BTreeMap<String, f64>,
}

impl Phases {
    fn start(&self, name: &str, len: Option<u64>) -> (ProgressBar, Instant) {
        let target = if self.progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), target).with_style(
                ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            ),
            None => ProgressBar::with_draw_target(None, target).with_style(
                ProgressStyle::with_template("{prefix:>8} {spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_prefix(name.to_owned());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        tracing::info!(phase = name, "start");
        (bar, Instant::now())
    }

    fn finish(&mut self, name: &str, bar: ProgressBar, t: Instant, msg: String) {
        let s = t.elapsed().as_secs_f64();
        bar.finish_with_message(format!("{msg} ({s:.2} s)"));
        tracing::info!(phase = name, seconds = s, "{msg}");
        self.seconds.insert(name.to_owned(), s);
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
/// write the snapshot ([`PipelineError::Engine`]).
pub fn run(cfg: &RunConfig) -> Result<RunSummary> {
    run_with(cfg, &Sources::default())
}

/// [`run`] with inputs from `sources`: documents as Parquet or CSV, communities from a
/// membership table. On error nothing is published.
///
/// # Errors
/// Those of [`run`], and those of [`read_documents`] and [`crate::membership::read_membership`].
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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.threads.unwrap_or(0))
        .build()
        .map_err(|e| PipelineError::library("starting the thread pool", e))?;
    pool.install(|| run_in_pool(cfg, sources))
}

#[allow(clippy::too_many_lines)]
fn run_in_pool(cfg: &RunConfig, sources: &Sources) -> Result<RunSummary> {
    let mut phases = Phases {
        progress: cfg.progress,
        seconds: BTreeMap::new(),
    };
    let layout = Layout::new(&cfg.root);

    // 1. Ingest.
    let (bar, t) = phases.start("ingest", None);
    let mut dropped_relationships = 0usize;
    let (mut corpus, index_vocabulary, given) = match &sources.graphrag {
        Some(dir) => {
            let index = read_index(dir)?;
            if !index.dropped_relationships.is_empty() {
                tracing::warn!(
                    rows = ?index.dropped_relationships,
                    "relationships.parquet: {} relationships name an entity title that entities.parquet lacks; left out",
                    index.dropped_relationships.len()
                );
            }
            dropped_relationships = index.dropped_relationships.len();
            (
                index.corpus,
                Some(index.vocabulary),
                Some(GivenGraph {
                    mentions: index.mentions,
                    edges: index.edges,
                }),
            )
        }
        None => (
            read_documents(&cfg.documents, sources.documents_format, &sources.columns)?,
            None,
            None,
        ),
    };
    corpus.documents.sort_by(|a, b| a.key.cmp(&b.key));
    let num_passages = corpus.num_passages();
    phases.finish(
        "ingest",
        bar,
        t,
        format!(
            "{} documents, {num_passages} passages",
            corpus.documents.len()
        ),
    );

    // Visibility: deleted and superseded passages stay out of the run. Hidden ones stay in
    // the run's passages, text index and concept evidence (unhiding them works at once,
    // without a new run) but feed neither the graph nor the reports: a report that quoted a
    // hidden passage, or a theme built around a concept only a hidden passage mentions, would
    // let the hidden words find a theme.
    let vis_path = layout.visibility_path();
    let mut excluded_passages: HashSet<String> = HashSet::new();
    let mut excluded_documents: HashSet<String> = HashSet::new();
    let mut hidden_passages: HashSet<String> = HashSet::new();
    let mut hidden_documents: HashSet<String> = HashSet::new();
    if vis_path.exists() {
        for flag in VisibilityStore::open(&vis_path)?.list()? {
            let (passages, documents) = if flag.state.is_excluded_from_runs() {
                (&mut excluded_passages, &mut excluded_documents)
            } else if flag.state == Visibility::Hidden {
                (&mut hidden_passages, &mut hidden_documents)
            } else {
                continue;
            };
            match flag.target {
                Target::Passage => passages.insert(flag.key),
                Target::Document => documents.insert(flag.key),
            };
        }
    }
    let mut passage_refs: Vec<PassageRef<'_>> = Vec::with_capacity(num_passages);
    let mut passage_excluded: Vec<bool> = Vec::with_capacity(num_passages);
    let mut passage_hidden: Vec<bool> = Vec::with_capacity(num_passages);
    for (d, doc) in corpus.documents.iter().enumerate() {
        let doc_out = excluded_documents.contains(&doc.key);
        let doc_hidden = hidden_documents.contains(&doc.key);
        for (i, text) in doc.passages.iter().enumerate() {
            passage_refs.push(PassageRef {
                text,
                position: i as u32,
                document_title: &doc.title,
                document: d as u32,
                row: passage_refs.len() as u32,
            });
            let id = doc.passage_id(i);
            passage_excluded.push(doc_out || excluded_passages.contains(&id));
            passage_hidden.push(doc_hidden || hidden_passages.contains(&id));
        }
    }
    let num_excluded = passage_excluded.iter().filter(|x| **x).count();

    // 2. Link: the vocabulary's terms found in the passages, or the mentions an index gives.
    let (bar, t) = phases.start("link", Some(num_passages as u64));
    let vocab = match index_vocabulary {
        Some(v) => v,
        None => load_vocabulary(&cfg.vocabulary)?,
    };
    for c in &vocab.broken_cycles {
        tracing::warn!(
            "vocabulary cycle {:?} broken by dropping {} -> {}",
            c.concepts,
            c.dropped_edge.0,
            c.dropped_edge.1
        );
    }
    let visible = PassageFlags {
        excluded: &passage_excluded,
        hidden: &passage_hidden,
    };
    let (linked, link_message) = match &given {
        Some(index) => {
            let l = given_links(
                &index.mentions,
                &passage_refs,
                visible,
                corpus.documents.len(),
            );
            bar.inc(num_passages as u64);
            let m = format!(
                "{} mentions given, {} of {} documents linked",
                l.mentions.len(),
                l.linked_documents(),
                corpus.documents.len()
            );
            (l, m)
        }
        None => {
            let (l, patterns) = link_corpus(
                &corpus,
                &vocab,
                &cfg.link,
                &passage_refs,
                visible,
                &excluded_documents,
                &bar,
            )?;
            let m = format!(
                "{} mentions, {} of {} documents linked, {patterns} patterns",
                l.mentions.len(),
                l.linked_documents(),
                corpus.documents.len()
            );
            (l, m)
        }
    };
    phases.finish("link", bar, t, link_message);
    let Linked {
        mentions,
        occurrences,
        document_linked,
        document_concepts,
        concept_evidence,
        unresolved_headings,
    } = linked;
    let num_mentions = mentions.len();
    let linked_documents = document_linked.iter().filter(|x| **x).count();

    // 3. Graph: co-occurrence of the mentions, or the index's own relationships.
    let (bar, t) = phases.start("graph", None);
    let entities = match given {
        Some(index) => given_graph(vocab.len(), index.edges, &mentions, &occurrences)?,
        None => cooccurrence_graph(&mentions, &occurrences)?,
    };
    let EntityGraph {
        co,
        entity_passages,
        mention_counts,
    } = entities;
    let num_entities = co.entity_concepts.len();
    let graph = Graph::from_edges(num_entities, &co.edges)?;
    phases.finish(
        "graph",
        bar,
        t,
        format!("{num_entities} entities, {} edges", graph.num_edges()),
    );

    // 4. Detect, or take the communities computed elsewhere.
    let (bar, t) = phases.start("detect", None);
    let entity_keys: Vec<String> = match &sources.membership {
        // A GraphRAG user knows entities by title (ids are opaque hashes); titles are unique
        // in a GraphRAG index, which merges entities by title.
        Some(_) if sources.graphrag.is_some() => co
            .entity_concepts
            .iter()
            .map(|&c| vocab.concepts[c as usize].preferred_term.clone())
            .collect(),
        Some(_) => co
            .entity_concepts
            .iter()
            .map(|&c| vocab.concepts[c as usize].id.clone())
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
    let Detected {
        hierarchy,
        communities_per_level: per_level,
        modularity,
    } = detect_communities(&graph, source, &cfg.leiden)?;
    phases.finish(
        "detect",
        bar,
        t,
        format!("communities per level {per_level:?}, modularity {modularity:.4}"),
    );
    if !cfg.allow_empty {
        refuse_empty_run(
            cfg,
            num_entities,
            &hierarchy,
            linked_documents,
            corpus.documents.len(),
        )?;
    }

    // 5. Report.
    let (bar, t) = phases.start("report", Some(hierarchy.communities.len() as u64));
    let names: Vec<String> = co
        .entity_concepts
        .iter()
        .map(|&c| vocab.concepts[c as usize].preferred_term.clone())
        .collect();
    // Up to three short entry terms per entity (no inverted "X, Y" forms), for the embedded text.
    let aliases: Vec<String> = co
        .entity_concepts
        .iter()
        .map(|&c| {
            let mut syn: Vec<&String> = vocab.concepts[c as usize]
                .synonyms
                .iter()
                .filter(|s| !s.contains(',') && s.len() <= 40)
                .collect();
            syn.sort_by_key(|s| (s.len(), s.as_str()));
            syn.iter()
                .take(3)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect();
    let adjacency = Adjacency::new(num_entities, &co.edges);
    let recipe = cfg.community_vectors;
    let (mut reports, ranked): (Vec<_>, Vec<Vec<u32>>) = hierarchy
        .communities
        .par_iter()
        .map(|c| {
            let ctx = community_context(
                c.id,
                c.level,
                &c.members,
                &names,
                &aliases,
                &adjacency,
                &entity_passages,
                &passage_refs,
            );
            let r = cfg.report_writer.write(&ctx);
            bar.inc(1);
            let keep = if recipe.assigned {
                usize::MAX
            } else {
                recipe.num_passages()
            };
            let ranked: Vec<u32> = ctx.passages.iter().take(keep).map(|(p, _)| p.row).collect();
            r.map(|r| (r, ranked))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    phases.finish("report", bar, t, format!("{} reports", reports.len()));
    let assigned = if recipe.assigned {
        assign_passages(&ranked, &hierarchy.communities, num_passages)
    } else {
        vec![Vec::new(); ranked.len()]
    };
    // The passages whose own vectors are community vectors: the best `passages` of each, then
    // those assigned to it.
    let best_passages: Vec<Vec<u32>> = ranked
        .iter()
        .zip(&assigned)
        .map(|(r, a)| {
            let mut v: Vec<u32> = r.iter().take(recipe.passages).copied().collect();
            v.extend(a.iter().filter(|p| !v.contains(p)).collect::<Vec<_>>());
            v
        })
        .collect();

    // 6. Embed each community's vectors (theme search; see `CommunityVectors`), the passages,
    // and the documents' titles (`find_by_meaning` ranks documents by a vector made of their
    // title's and passages'; see `crate::embed`), each batched and parallel.
    let identity = cfg.embedder.identity().clone();
    let fallback = CommunityVectors {
        report: crate::report::ReportText::NoSources,
        passages: 0,
        centroid: 0,
        assigned: false,
    };
    let texts: Vec<Vec<String>> = reports
        .iter()
        .zip(&best_passages)
        .map(|(r, best)| match recipe.texts(r) {
            // A community with no vector could never be found: without supporting passages
            // its report text stands in.
            t if t.is_empty() && (best.is_empty() || recipe.num_passages() == 0) => {
                fallback.texts(r)
            }
            t => t,
        })
        .collect();
    for ((r, texts), best) in reports.iter_mut().zip(&texts).zip(&best_passages) {
        // `reports.parquet` stores what was embedded; a passage whose vector is one of the
        // community's is a source of its embedding, like a quoted one (`report_sources`).
        r.full_content = texts.join("\n\n");
        for &p in best {
            if !r.quoted_passages.contains(&p) {
                r.quoted_passages.push(p);
            }
        }
    }
    let flat: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
    let (bar, t) = phases.start("embed", Some(flat.len() as u64));
    let mut text_vectors = embed_texts(cfg.embedder.as_ref(), &flat, "reports", &bar)?.into_iter();
    phases.finish(
        "embed",
        bar,
        t,
        format!("{} report vectors by {}", flat.len(), identity.model),
    );
    // The passages whose vectors are needed: every passage in the run (a document's vector is
    // made from its title's and its passages', see `crate::embed`), which includes those of the
    // community vectors. Deleted and superseded passages add nothing to their document's vector.
    let centroid_rows = |c: usize| &ranked[c][..ranked[c].len().min(recipe.centroid)];
    let mut needed: Vec<u32> = best_passages
        .iter()
        .flatten()
        .copied()
        .chain((0..ranked.len()).flat_map(|c| centroid_rows(c).iter().copied()))
        .chain((0..num_passages as u32).filter(|&p| !passage_excluded[p as usize]))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let (bar, t) = phases.start("embed_passages", Some(needed.len() as u64));
    let passage_texts: Vec<&str> = needed
        .iter()
        .map(|&p| passage_refs[p as usize].text)
        .collect();
    let passage_vectors = embed_texts(cfg.embedder.as_ref(), &passage_texts, "passages", &bar)?;
    drop(passage_texts);
    phases.finish(
        "embed_passages",
        bar,
        t,
        format!("{} passage vectors by {}", needed.len(), identity.model),
    );
    let passage_vector = |p: u32| -> &[f32] {
        let i = needed.binary_search(&p).unwrap_or_default();
        &passage_vectors[i]
    };
    let titles: Vec<&str> = corpus.documents.iter().map(|d| d.title.as_str()).collect();
    let (bar, t) = phases.start("embed_documents", Some(titles.len() as u64));
    let title_vectors = embed_texts(cfg.embedder.as_ref(), &titles, "document titles", &bar)?;
    drop(titles);
    // Row-major, written as is: the writer makes its Arrow array over this buffer.
    let mut document_embeddings: Vec<f32> =
        Vec::with_capacity(corpus.documents.len() * identity.dim);
    let mut first_passage = 0u32;
    for (d, title) in corpus.documents.iter().zip(&title_vectors) {
        let rows = first_passage..first_passage + d.passages.len() as u32;
        first_passage = rows.end;
        let mut parts: Vec<&[f32]> = vec![title.as_slice()];
        // A closure of its own: its references coerce to the title's borrow, so the titles'
        // vectors can be dropped once the documents' are made.
        parts.extend(
            rows.filter(|&p| !passage_excluded[p as usize])
                .map(|p| -> &[f32] { passage_vector(p) }),
        );
        document_embeddings.extend(document_vector(&parts));
    }
    drop(title_vectors);
    phases.finish(
        "embed_documents",
        bar,
        t,
        format!(
            "{} document vectors from their titles and passages",
            corpus.documents.len(),
        ),
    );

    // Each community's vectors, row-major in community order: its texts' vectors, then its
    // best passages' own vectors (copied once, from the passage vectors, into the buffer the
    // writer takes), then the centroid. The passage vectors are dropped before publishing.
    let mut report_vectors = ReportVectors::default();
    for (c, (texts, best)) in texts.iter().zip(&best_passages).enumerate() {
        let before = report_vectors.values.len();
        for v in text_vectors.by_ref().take(texts.len()) {
            report_vectors.values.extend_from_slice(&v);
        }
        for &p in best {
            report_vectors.values.extend_from_slice(passage_vector(p));
        }
        if recipe.centroid > 0 && !centroid_rows(c).is_empty() {
            let mut mean = vec![0.0f32; identity.dim];
            for &p in centroid_rows(c) {
                for (m, x) in mean.iter_mut().zip(passage_vector(p)) {
                    *m += x;
                }
            }
            agrag_engine::embed::l2_normalize(&mut mean);
            report_vectors.values.extend_from_slice(&mean);
        }
        let rows = (report_vectors.values.len() - before) / identity.dim.max(1);
        if rows == 0 {
            return Err(PipelineError::Internal(format!(
                "community {c} has no vector"
            )));
        }
        report_vectors
            .communities
            .extend(std::iter::repeat_n(c as u32, rows));
    }
    drop(passage_vectors);
    drop(needed);
    drop(flat);
    drop(texts);

    // 7. Publish.
    let (bar, t) = phases.start("publish", None);
    let run_id = new_run_id();
    let entity_degree: Vec<f64> = (0..num_entities as u32)
        .map(|e| graph.weighted_degree(e))
        .collect();
    let num_edges = graph.num_edges();
    // What only the stages before publishing needed goes before the writer allocates, so its
    // batches and row groups reuse that memory.
    drop((graph, adjacency, occurrences, mentions, passage_refs));
    drop((ranked, assigned, best_passages, names, aliases));
    drop((passage_excluded, passage_hidden));
    let parameters = serde_json::json!({
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
        "excluded": {"passages": excluded_passages.len(), "documents": excluded_documents.len()},
        "hidden_out_of_graph": {"passages": hidden_passages.len(), "documents": hidden_documents.len()},
    });
    let mut fp = blake3::Hasher::new();
    fp.update(corpus.fingerprint.as_bytes());
    fp.update(vocab.fingerprint.as_bytes());
    for (kind, passages, documents) in [
        ("excluded", &excluded_passages, &excluded_documents),
        ("hidden", &hidden_passages, &hidden_documents),
    ] {
        let mut keys: Vec<&String> = passages.iter().chain(documents.iter()).collect();
        keys.sort();
        fp.update(kind.as_bytes());
        for e in keys {
            fp.update(e.as_bytes());
            fp.update(b"\n");
        }
    }
    let mut summary = RunSummary {
        run_id: run_id.clone(),
        run_dir: layout.run_dir(&run_id),
        documents: corpus.documents.len(),
        passages: num_passages,
        excluded_passages: num_excluded,
        empty_passages_dropped: corpus.num_empty_passages_dropped,
        linked_documents,
        mentions: num_mentions,
        mean_mentions_per_passage: num_mentions as f64 / num_passages.max(1) as f64,
        entities: num_entities,
        edges: num_edges,
        communities_per_level: per_level,
        modularity,
        isolates: hierarchy.stats.isolates,
        max_cluster_size: cfg.leiden.max_cluster_size,
        oversized_leaves: hierarchy.stats.oversized_leaves,
        largest_leaf: hierarchy.stats.largest_leaf,
        embedder: identity.model.clone(),
        detection: hierarchy.stats.clone(),
        seconds: phases.seconds.clone(),
    };
    let mut stats = serde_json::to_value(&summary)
        .map_err(|e| PipelineError::library("serializing the run summary", e))?;
    if let Some(obj) = stats.as_object_mut() {
        obj.remove("run_dir");
        obj.insert("unresolved_headings".into(), unresolved_headings.into());
        if sources.graphrag.is_some() {
            obj.insert(
                "graphrag_relationships_dropped".into(),
                dropped_relationships.into(),
            );
        }
        obj.insert(
            "vocabulary_cycles_broken".into(),
            serde_json::to_value(&vocab.broken_cycles).unwrap_or_default(),
        );
    }
    let tables = RunTables {
        corpus: &corpus,
        document_linked,
        document_concepts,
        concept_evidence,
        vocabulary: &vocab,
        entity_concepts: &co.entity_concepts,
        entity_passages: &entity_passages,
        mention_counts,
        entity_degree,
        edges: &co.edges,
        hierarchy: &hierarchy,
        reports: &reports,
        report_vectors,
        document_embeddings,
        embedder: identity,
    };
    publish(
        &layout,
        &run_id,
        tables,
        parameters,
        fp.finalize().to_hex().to_string(),
        stats,
    )?;
    phases.finish("publish", bar, t, format!("run {run_id} published"));
    summary.seconds = phases.seconds;
    Ok(summary)
}

/// Assigns every supporting passage to the one community that ranks it best among its
/// supporting passages (`ranked[c]`, best first): lowest rank, then the finer level, then the
/// lower community id. Returns each community's assigned passages in its own rank order. A
/// query that matches a passage's vector then finds the community that shows that passage
/// highest, so every linked passage can be found through a theme that returns it.
fn assign_passages(
    ranked: &[Vec<u32>],
    communities: &[crate::leiden::hierarchy::Community],
    num_passages: usize,
) -> Vec<Vec<u32>> {
    // passage → (rank, finer level first, community)
    let mut best: Vec<Option<(usize, std::cmp::Reverse<u32>, u32)>> = vec![None; num_passages];
    for (c, rows) in ranked.iter().enumerate() {
        let level = communities[c].level;
        for (rank, &p) in rows.iter().enumerate() {
            let key = (rank, std::cmp::Reverse(level), c as u32);
            let slot = &mut best[p as usize];
            if slot.is_none_or(|b| key < b) {
                *slot = Some(key);
            }
        }
    }
    let mut out = vec![Vec::new(); ranked.len()];
    for (c, rows) in ranked.iter().enumerate() {
        out[c] = rows
            .iter()
            .copied()
            .filter(|&p| best[p as usize].is_some_and(|b| b.2 == c as u32))
            .collect();
    }
    out
}

/// Refuses a run that would publish nothing to search (see [`RunConfig::allow_empty`]).
///
/// # Errors
/// [`PipelineError::NothingToPublish`] when there is no entity, no community or no document
/// linked to a concept.
fn refuse_empty_run(
    cfg: &RunConfig,
    entities: usize,
    hierarchy: &crate::leiden::Hierarchy,
    linked_documents: usize,
    documents: usize,
) -> Result<()> {
    let communities = hierarchy.communities.len();
    if entities > 0 && communities > 0 && linked_documents > 0 {
        return Ok(());
    }
    Err(PipelineError::NothingToPublish {
        entities,
        communities,
        linked_documents,
        documents,
        vocabulary: cfg.vocabulary.clone(),
        documents_path: cfg.documents.clone(),
    })
}
