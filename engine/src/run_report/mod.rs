//! The run report: the figures of one published run, as a JSON document for schedulers and as
//! one self-contained HTML page for the person who owns the nightly job
//! (`agrag-engine report`).
//!
//! [`build`] reads the run's manifest and a few columns of its tables (communities,
//! membership, entities, reports, relationships; documents only when visibility flags are
//! set), plus the live flags of `<root>/visibility.sqlite`, and writes nothing under the
//! root. [`Report::figures`] is the JSON document; [`Report::to_html`] the page (see
//! [`html`] for what it shows).
//!
//! The page shows report text (titles, summaries, findings) because it is for the run's
//! operator. Query answers never return report text.
//!
//! # The JSON document (`agrag-engine report --json`)
//!
//! Field names are stable; a field is added, never renamed, and `report_version` changes if a
//! meaning does. Sizes are in entities (members); times in seconds.
//!
//! * `report_version` (1), `generated_at` (RFC 3339 UTC), `root`, `run_dir`.
//! * `run`: `run_id`, `created_at`, `format_version`, `is_latest` (whether `LATEST` names it),
//!   `parent_run_id` (null: no parent recorded), `input_fingerprint`, `embedder` {`model`,
//!   `dim`, `normalized`, `fingerprint`}, `parameters` (the manifest's, verbatim), `seconds`
//!   {phase: seconds}, `total_seconds`.
//! * `counts`: `documents`, `linked_documents` (null when unrecorded), `passages`, `entities`,
//!   `isolated_entities` (entities without relationships), `relationships`, `total_weight`,
//!   `communities`, `levels`, `leaves`.
//! * `detection`: `algorithm`, `objective`, `resolution`, `max_cluster_size`, `max_levels`,
//!   `seed` (each null when unrecorded), `largest_leaf`, `oversized_leaves` (leaf communities
//!   larger than `max_cluster_size`; null when `max_cluster_size` is unknown) and
//!   `oversized_leaves_source` (`manifest` or `computed` from `communities.parquet`).
//! * `levels[]`: per level, `level` (0 = coarsest), `communities`, `leaves`, `members`,
//!   `modularity` (γ = 1, of the partition at this depth; null for a run without
//!   communities) and `modularity_source` (`manifest` or `computed` from the tables),
//!   `singletons` (communities of one member; at level 0 these are mostly isolated entities),
//!   `oversized_leaves`, `size_min`, `size_median`, `size_p90`, `size_max` (nearest rank),
//!   `histogram[]` {`min_size`, `max_size`, `communities`} over power-of-two size bins.
//! * `largest_communities[]` (the [`MAX_LARGEST`] largest, any level): `community_id`,
//!   `level`, `size`, `children`, `is_leaf`, `internal_relationships`, `internal_share` (share
//!   of the members' relationship weight inside the community), `title`, `top_members`.
//! * `lineage`: `status` (`no_parent`, `parent_only`, `lineage`), `parent_run_id`,
//!   `parent_in_root`, `events` {event: communities}, `events_source`, `biggest_changes[]`
//!   {`event`, `community_id`, `predecessor`, `size`, `previous_size`, `jaccard`, `title`},
//!   `note`. See [`lineage`] for where these are read.
//! * `visibility`: `store_present`, `passages` and `documents` {`hidden`, `superseded`,
//!   `deleted`}: the run's passages and documents in each state now (a passage as restricted
//!   as its document); `passage_flags` and `document_flags` (stored flags by state);
//!   `flags_outside_run` (flags naming nothing this run holds).
//! * `sampling`: what the page draws: `treemap_communities` (of `counts.communities`),
//!   `treemap_aggregates` ("N smaller communities" boxes), `treemap_limit`, `drawings`,
//!   `drawing_node_limit`, `drawing_edge_limit`.
//!
//! # Bounds
//! The page holds at most [`MAX_TREEMAP_NODES`] communities and [`MAX_DRAWINGS`] drawings of
//! at most [`network::MAX_DRAWING_NODES`] members and [`network::MAX_DRAWING_EDGES`]
//! relationships, with report text cut (see [`reports`]), so its size does not grow with the
//! run: a few MB at most. The build reads each table once in column-projected batches (the
//! relationships twice), with memory in proportion to entities and communities.

pub mod html;
pub mod lineage;
pub mod network;
pub mod reports;
pub mod treemap;

mod graph;
mod hierarchy;
mod output;
mod progress;
mod read;
mod visibility;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::embed::EmbedderIdentity;
use crate::error::{EngineError, Result};
use crate::format::layout::is_valid_run_id;
use crate::format::manifest::MANIFEST_FILE;
use crate::format::tables::{
    communities, documents, entities, membership, mentions, passages, relationships,
    reports as reports_table,
};
use crate::format::{Layout, Manifest};

pub use network::{MAX_DRAWINGS, Network, NetworkNode};
pub use output::HtmlOutput;
pub use treemap::{Aggregate, MAX_TREEMAP_NODES, TreemapNode};

use hierarchy::{Entities, Hierarchy, Membership};
use progress::Progress;

/// Version of the JSON document's shape.
pub const REPORT_VERSION: u32 = 1;
/// Number of communities listed in [`RunReport::largest_communities`].
pub const MAX_LARGEST: usize = 10;

/// What to report on, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The run (`None`: the one `LATEST` names).
    pub run_id: Option<String>,
    /// Show a progress bar on standard error (drawn only when it is a terminal).
    pub progress: bool,
    /// Most communities the treemap draws; [`MAX_TREEMAP_NODES`] by default.
    pub treemap_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            run_id: None,
            progress: false,
            treemap_limit: MAX_TREEMAP_NODES,
        }
    }
}

/// Where a figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureSource {
    /// Recorded by the pipeline in `manifest.json`.
    Manifest,
    /// Computed by the report from the run's tables (the manifest does not record it).
    Computed,
}

/// The figures of one run: the JSON document of `agrag-engine report --json` (field by field
/// in the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Version of this document's shape ([`REPORT_VERSION`]).
    pub report_version: u32,
    /// When the report was made (RFC 3339 UTC).
    pub generated_at: String,
    /// The snapshot root.
    pub root: String,
    /// The run folder.
    pub run_dir: String,
    /// The run's identity, inputs, parameters and timings.
    pub run: RunHeader,
    /// Table sizes.
    pub counts: Counts,
    /// Detection parameters and leaves over `max_cluster_size`.
    pub detection: Detection,
    /// One entry per level, coarsest first.
    pub levels: Vec<LevelFigures>,
    /// The largest communities (at most [`MAX_LARGEST`]), largest first (ties: lower id).
    pub largest_communities: Vec<CommunitySummary>,
    /// The run's parent and community lineage.
    pub lineage: Lineage,
    /// Passages and documents not visible now.
    pub visibility: VisibilityFigures,
    /// What the page draws out of the run.
    pub sampling: Sampling,
}

/// The run's identity, inputs, parameters and timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// Run id.
    pub run_id: String,
    /// When the run was published (RFC 3339 UTC).
    pub created_at: String,
    /// Snapshot format version.
    pub format_version: u32,
    /// Whether `LATEST` names this run.
    pub is_latest: bool,
    /// The run this one was computed from, when the manifest records one.
    pub parent_run_id: Option<String>,
    /// BLAKE3 digest (hex) over the run's inputs.
    pub input_fingerprint: String,
    /// The embedder of the run's reports and documents.
    pub embedder: EmbedderIdentity,
    /// The run's parameters, as the manifest records them.
    pub parameters: Value,
    /// Seconds per phase, as the manifest records them.
    pub seconds: BTreeMap<String, f64>,
    /// Sum of [`seconds`](Self::seconds).
    pub total_seconds: f64,
}

/// Table sizes of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Documents.
    pub documents: u64,
    /// Documents linked to at least one concept, when recorded.
    pub linked_documents: Option<u64>,
    /// Passages.
    pub passages: u64,
    /// Mentions (passage, entity).
    pub mentions: u64,
    /// Entities (graph nodes).
    pub entities: u64,
    /// Entities without any relationship.
    pub isolated_entities: u64,
    /// Relationships (graph edges).
    pub relationships: u64,
    /// Sum of relationship weights.
    pub total_weight: f64,
    /// Communities, all levels.
    pub communities: u64,
    /// Levels of the hierarchy.
    pub levels: u64,
    /// Leaf communities (not split further).
    pub leaves: u64,
}

/// Detection parameters and the leaves over `max_cluster_size`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// `leiden` or `louvain`, when recorded.
    pub algorithm: Option<String>,
    /// `modularity` or `cpm`, when recorded.
    pub objective: Option<String>,
    /// Resolution γ, when recorded.
    pub resolution: Option<f64>,
    /// Communities larger than this are split further, when recorded.
    pub max_cluster_size: Option<u64>,
    /// Most levels of the hierarchy, when recorded.
    pub max_levels: Option<u64>,
    /// Seed, when recorded.
    pub seed: Option<u64>,
    /// Size of the largest leaf community.
    pub largest_leaf: u64,
    /// Leaf communities larger than `max_cluster_size` (`None` when it is unknown).
    pub oversized_leaves: Option<u64>,
    /// Where [`oversized_leaves`](Self::oversized_leaves) comes from.
    pub oversized_leaves_source: FigureSource,
}

/// The figures of one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelFigures {
    /// Level (0 = coarsest).
    pub level: u32,
    /// Communities at this level.
    pub communities: u64,
    /// Of which leaves.
    pub leaves: u64,
    /// Members of this level's communities (entities whose leaf is at this level or deeper).
    pub members: u64,
    /// Modularity (γ = 1) of the partition at this depth (communities of this level and the
    /// leaves above it).
    pub modularity: Option<f64>,
    /// Where [`modularity`](Self::modularity) comes from.
    pub modularity_source: FigureSource,
    /// Communities of one member.
    pub singletons: u64,
    /// Leaves of this level larger than `max_cluster_size` (`None` when it is unknown).
    pub oversized_leaves: Option<u64>,
    /// Smallest community, in members.
    pub size_min: u64,
    /// Median community size (nearest rank), in members.
    pub size_median: u64,
    /// 90th percentile of community sizes (nearest rank), in members.
    pub size_p90: u64,
    /// Largest community, in members.
    pub size_max: u64,
    /// Communities per power-of-two size bin, every bin up to the run's largest community.
    pub histogram: Vec<HistogramBin>,
}

/// One bin of a size histogram.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramBin {
    /// Smallest size in the bin (a power of two), in members.
    pub min_size: u64,
    /// Largest size in the bin, in members.
    pub max_size: u64,
    /// Communities of a size in `[min_size, max_size]`.
    pub communities: u64,
}

/// One of the largest communities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommunitySummary {
    /// Community id (the `theme_id` of answers).
    pub community_id: u32,
    /// Level.
    pub level: u32,
    /// Members.
    pub size: u32,
    /// Child communities.
    pub children: u32,
    /// Whether it was not split further.
    pub is_leaf: bool,
    /// Relationships with both ends inside it.
    pub internal_relationships: u64,
    /// Share of its members' relationship weight that stays inside it, in [0, 1] (`None`
    /// when its members have no relationships).
    pub internal_share: Option<f64>,
    /// Report title.
    pub title: String,
    /// Up to five members, highest weighted degree first.
    pub top_members: Vec<String>,
}

/// Whether the run has a parent and what its lineage records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineageStatus {
    /// The manifest names no parent run (a first run, or one computed from nothing).
    NoParent,
    /// The manifest names a parent, but the run records no community lineage.
    ParentOnly,
    /// The run records lineage events.
    Lineage,
}

/// The run's parent and community lineage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lineage {
    /// See [`LineageStatus`].
    pub status: LineageStatus,
    /// The parent run, when the manifest names one.
    pub parent_run_id: Option<String>,
    /// Whether the parent's folder is still under the root (`None` without a parent).
    pub parent_in_root: Option<bool>,
    /// Communities per event (`same`, `grew`, `shrank`, `split`, `merged`, `new`,
    /// `dissolved`).
    pub events: BTreeMap<String, u64>,
    /// Where the events were read (`community_lineage.parquet`, `manifest stats.lineage`).
    pub events_source: Option<String>,
    /// The largest changes (events other than `same`), by size change.
    pub biggest_changes: Vec<LineageChange>,
    /// What the lineage says in words (why it is empty, when it is).
    pub note: String,
}

/// One changed community of the lineage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineageChange {
    /// The event.
    pub event: String,
    /// The community in this run, when recorded.
    pub community_id: Option<u32>,
    /// Its predecessor in the parent run, when recorded.
    pub predecessor: Option<u32>,
    /// Members now, when recorded.
    pub size: Option<u64>,
    /// Members in the parent run, when recorded.
    pub previous_size: Option<u64>,
    /// Jaccard overlap of the member sets, when recorded.
    pub jaccard: Option<f64>,
    /// Report title of the community in this run, when it has one.
    pub title: Option<String>,
}

/// How many of something are in each non-visible state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    /// Hidden (filtered now, kept in storage).
    pub hidden: u64,
    /// Superseded.
    pub superseded: u64,
    /// Deleted.
    pub deleted: u64,
}

impl StateCounts {
    /// Hidden, superseded and deleted together.
    pub fn total(&self) -> u64 {
        self.hidden + self.superseded + self.deleted
    }
}

/// Visibility now, from `<root>/visibility.sqlite`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisibilityFigures {
    /// Whether the root has a visibility store (without one nothing is flagged).
    pub store_present: bool,
    /// The run's passages in each state (effective: as restricted as their document).
    pub passages: StateCounts,
    /// The run's documents in each state.
    pub documents: StateCounts,
    /// Stored passage flags by state (including flags on passages this run lacks).
    pub passage_flags: StateCounts,
    /// Stored document flags by state (including flags on documents this run lacks).
    pub document_flags: StateCounts,
    /// Flags naming a passage or document this run does not hold.
    pub flags_outside_run: u64,
}

/// What the page draws out of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    /// Communities drawn in the treemap.
    pub treemap_communities: u64,
    /// "N smaller communities" boxes standing for the communities left out.
    pub treemap_aggregates: u64,
    /// Most communities the treemap draws.
    pub treemap_limit: u64,
    /// Node-link drawings.
    pub drawings: u64,
    /// Most members per drawing.
    pub drawing_node_limit: u64,
    /// Most relationships per drawing.
    pub drawing_edge_limit: u64,
}

/// The drawings of the page (not part of the JSON figures: they are samples).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drawings {
    /// Drawn communities, parents before children.
    pub treemap: Vec<TreemapNode>,
    /// "N smaller communities" boxes.
    pub aggregates: Vec<Aggregate>,
    /// Node-link drawings of the largest communities.
    pub networks: Vec<Network>,
}

/// A built report: figures and drawings.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The figures (the JSON document).
    pub figures: RunReport,
    /// What the page draws.
    pub drawings: Drawings,
}

impl Report {
    /// The self-contained HTML page of the report (see [`html`]).
    pub fn to_html(&self) -> String {
        html::render(self)
    }
}

fn as_u64(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64)
}

/// The run folder to report on: `run_id`, or the run `LATEST` names.
fn resolve_run(layout: &Layout, run_id: Option<&str>) -> Result<(String, bool)> {
    let latest = layout.read_latest()?;
    match run_id {
        Some(id) => {
            if !is_valid_run_id(id) {
                return Err(EngineError::InvalidArgument {
                    field: "run",
                    value: id.to_owned(),
                    expected: "a run id (a UUID naming a folder under <root>/runs)",
                });
            }
            let dir = layout.run_dir(id);
            if !dir.join(MANIFEST_FILE).is_file() {
                // The newest few: a root that keeps many runs would flood the message.
                let runs = layout.list_runs().unwrap_or_default();
                let newest = &runs[runs.len().saturating_sub(5)..];
                let known = match runs.len() - newest.len() {
                    _ if runs.is_empty() => "none".to_owned(),
                    0 => newest.join(", "),
                    older => format!("{older} older, then {}", newest.join(", ")),
                };
                return Err(EngineError::UnknownRun {
                    path: dir,
                    run_id: id.to_owned(),
                    known,
                });
            }
            Ok((id.to_owned(), latest.as_deref() == Some(id)))
        }
        None => match latest {
            Some(id) => Ok((id, true)),
            None => Err(EngineError::NotReady {
                root: layout.root().to_owned(),
                reason: format!(
                    "{} does not exist: run `agrag-pipeline run` on this root first, or name a run with --run",
                    layout.latest_path().display()
                ),
            }),
        },
    }
}

/// Builds the report of one run under `root`.
///
/// # Errors
/// [`EngineError::NotReady`] when no run is named and there is no `LATEST`;
/// [`EngineError::InvalidArgument`] (field `run`) for a run id of the wrong shape;
/// [`EngineError::UnknownRun`] for a run id with no run folder; [`EngineError::Io`],
/// [`EngineError::Corrupt`] or [`EngineError::UnsupportedFormat`] naming the file for a
/// manifest or table that cannot be read; [`EngineError::Visibility`] when the visibility
/// store cannot be read.
#[allow(clippy::too_many_lines)]
pub fn build(root: &Path, options: &Options) -> Result<Report> {
    let layout = Layout::new(root);
    let (run_id, is_latest) = resolve_run(&layout, options.run_id.as_deref())?;
    let dir = layout.run_dir(&run_id);
    let manifest = Manifest::read(&dir)?;
    let manifest_path = dir.join(MANIFEST_FILE);
    let raw: Value = std::fs::read(&manifest_path)
        .map_err(|e| EngineError::io(&manifest_path, e))
        .and_then(|b| {
            serde_json::from_slice(&b).map_err(|e| {
                EngineError::corrupt_because(&manifest_path, "manifest is not JSON", e)
            })
        })?;
    let rows = |file: &str| manifest.file(file).map_or(0, |f| f.rows);
    let flags_exist = layout.visibility_path().is_file();
    let total_rows = rows(communities::FILE)
        + rows(entities::FILE)
        + rows(membership::FILE)
        + rows(reports_table::FILE)
        + 2 * rows(relationships::FILE)
        + if flags_exist {
            rows(documents::FILE)
        } else {
            0
        };
    let progress = Progress::new(options.progress, total_rows);

    progress.step("reading communities.parquet");
    let h = Hierarchy::read(&dir, &run_id, &progress)?;
    progress.step("reading entities.parquet");
    let ents = Entities::read(&dir, &run_id, &progress)?;
    progress.step("reading membership.parquet");
    let members = Membership::read(&dir, &run_id, &h, &ents, &progress)?;
    progress.step("scanning relationships.parquet (1 of 2)");
    let weights = graph::scan_weights(&dir, &run_id, &h, &members, ents.name.len(), &progress)?;
    let degree_sum = graph::degree_sums(&h, &members, &weights);
    let share = |c: usize| {
        (degree_sum[c] > 0.0).then(|| (2.0 * weights.internal_weight[c] / degree_sum[c]).min(1.0))
    };

    // Which communities the page shows, hence whose report text is read.
    let selection = treemap::select(&h, options.treemap_limit);
    let mut largest: Vec<u32> = (0..h.len() as u32).collect();
    largest.sort_by_key(|&c| (std::cmp::Reverse(h.size[c as usize]), c));
    largest.truncate(MAX_LARGEST);
    let plan = network::plan(&h, &members, &weights);
    let lineage = lineage::read(&dir, &layout.runs_dir(), &raw)?;
    let mut wanted = selection.is_drawn.clone();
    for &c in largest.iter().chain(&plan.communities) {
        wanted[c as usize] = true;
    }
    for c in lineage
        .biggest_changes
        .iter()
        .filter_map(|c| c.community_id)
    {
        if let Some(w) = h.row_of(c).and_then(|r| wanted.get_mut(r)) {
            *w = true;
        }
    }
    progress.step("reading reports.parquet");
    let texts = reports::read(&dir, &run_id, &h.ids, &wanted, &progress)?;
    let title = |c: u32| {
        texts.get(c as usize).and_then(Option::as_ref).map_or_else(
            || format!("community {}", h.ids[c as usize]),
            |t| t.title.clone(),
        )
    };
    let names = |c: u32| -> Vec<String> {
        members
            .top_members(c)
            .map(|e| ents.name[e as usize].clone())
            .collect()
    };

    progress.step("scanning relationships.parquet (2 of 2)");
    let edges = graph::edges_among(
        &dir,
        &run_id,
        ents.name.len(),
        &plan.index,
        plan.communities.len(),
        network::MAX_DRAWING_EDGES,
        &progress,
    )?;
    let networks = network::drawings(&plan, edges, &h, &members, &ents, &weights, title);

    progress.step("reading visibility.sqlite");
    let visibility = visibility::count(&layout.visibility_path(), &dir, &run_id, &progress)?;

    // Figures.
    let stats = &manifest.stats;
    let detection_params = manifest.parameters.get("detection");
    let param = |key: &str| detection_params.and_then(|d| d.get(key));
    let max_cluster_size =
        as_u64(param("max_cluster_size")).or_else(|| as_u64(stats.get("max_cluster_size")));
    let recorded: Vec<Option<f64>> = (0..h.num_levels)
        .map(|l| {
            stats
                .pointer("/detection/levels")
                .and_then(Value::as_array)
                .and_then(|levels| {
                    levels
                        .iter()
                        .find(|x| as_u64(x.get("level")) == Some(l as u64))
                })
                .and_then(|x| x.get("modularity"))
                .and_then(Value::as_f64)
        })
        .collect();
    let computed = if recorded.iter().all(Option::is_some) {
        Vec::new()
    } else {
        graph::modularity_per_level(&h, &weights, &degree_sum)
    };
    let levels = hierarchy::level_figures(&h, max_cluster_size, &recorded, &computed);
    let computed_oversized = levels
        .iter()
        .map(|l| l.oversized_leaves)
        .sum::<Option<u64>>();
    let (oversized_leaves, oversized_leaves_source) = match manifest
        .oversized_leaves
        .or_else(|| as_u64(stats.get("oversized_leaves")))
    {
        Some(n) => (Some(n), FigureSource::Manifest),
        None => (computed_oversized, FigureSource::Computed),
    };
    let seconds: BTreeMap<String, f64> = stats
        .get("seconds")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    let largest_leaf = (0..h.len())
        .filter(|&c| h.is_leaf[c])
        .map(|c| u64::from(h.size[c]))
        .max()
        .unwrap_or(0);

    let treemap_nodes: Vec<TreemapNode> = selection
        .drawn
        .iter()
        .map(|&c| {
            let text = texts[c as usize].clone().unwrap_or_default();
            TreemapNode {
                id: h.ids[c as usize],
                parent: h.parent[c as usize].map(|p| h.ids[p as usize]),
                level: h.level[c as usize],
                size: h.size[c as usize],
                num_children: h.children[c as usize].len() as u32,
                title: if text.title.is_empty() {
                    format!("community {}", h.ids[c as usize])
                } else {
                    text.title
                },
                members: names(c),
                summary: text.summary,
                findings: text.findings,
                num_findings: text.num_findings,
                internal_share: share(c as usize),
            }
        })
        .collect();
    let mut lineage = lineage;
    for change in &mut lineage.biggest_changes {
        if let Some(c) = change.community_id
            && let Some(Some(t)) = h.row_of(c).and_then(|r| texts.get(r))
        {
            change.title = Some(t.title.clone());
        }
    }

    let figures = RunReport {
        report_version: REPORT_VERSION,
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        // Absolute and without `..`, so the page says where the run lives wherever it is read.
        root: std::fs::canonicalize(root)
            .unwrap_or_else(|_| root.to_owned())
            .display()
            .to_string(),
        run_dir: std::fs::canonicalize(&dir)
            .unwrap_or_else(|_| dir.clone())
            .display()
            .to_string(),
        run: RunHeader {
            run_id: run_id.clone(),
            created_at: manifest.created_at.clone(),
            format_version: manifest.format_version,
            is_latest,
            parent_run_id: lineage.parent_run_id.clone(),
            input_fingerprint: manifest.input_fingerprint.clone(),
            embedder: manifest.embedder.clone(),
            parameters: manifest.parameters.clone(),
            total_seconds: seconds.values().sum(),
            seconds,
        },
        counts: Counts {
            documents: rows(documents::FILE),
            linked_documents: as_u64(stats.get("linked_documents")),
            passages: rows(passages::FILE),
            mentions: rows(mentions::FILE),
            entities: ents.name.len() as u64,
            isolated_entities: weights.degree.iter().filter(|&&d| d == 0.0).count() as u64,
            relationships: weights.num_edges,
            total_weight: weights.total_weight,
            communities: h.len() as u64,
            levels: h.num_levels as u64,
            leaves: h.is_leaf.iter().filter(|&&l| l).count() as u64,
        },
        detection: Detection {
            algorithm: param("algorithm")
                .and_then(Value::as_str)
                .map(str::to_owned),
            objective: param("objective")
                .and_then(Value::as_str)
                .map(str::to_owned),
            resolution: param("resolution").and_then(Value::as_f64),
            max_cluster_size,
            max_levels: as_u64(param("max_levels")),
            seed: as_u64(param("seed")),
            largest_leaf,
            oversized_leaves,
            oversized_leaves_source,
        },
        levels,
        largest_communities: largest
            .iter()
            .map(|&c| CommunitySummary {
                community_id: h.ids[c as usize],
                level: h.level[c as usize],
                size: h.size[c as usize],
                children: h.children[c as usize].len() as u32,
                is_leaf: h.is_leaf[c as usize],
                internal_relationships: weights.internal_edges[c as usize],
                internal_share: share(c as usize),
                title: title(c),
                top_members: names(c),
            })
            .collect(),
        lineage,
        visibility,
        sampling: Sampling {
            treemap_communities: treemap_nodes.len() as u64,
            treemap_aggregates: selection.aggregates.len() as u64,
            treemap_limit: options.treemap_limit as u64,
            drawings: networks.len() as u64,
            drawing_node_limit: network::MAX_DRAWING_NODES as u64,
            drawing_edge_limit: network::MAX_DRAWING_EDGES as u64,
        },
    };
    progress.finish();
    Ok(Report {
        figures,
        drawings: Drawings {
            treemap: treemap_nodes,
            aggregates: selection.aggregates,
            networks,
        },
    })
}

/// The report of the run `LATEST` names under `root`, or of `run_id`, written as an HTML page
/// to `html` (when given): the whole of `agrag-engine report` but printing.
///
/// # Errors
/// As [`build`]; [`EngineError::Output`] naming the page's path when it cannot be written
/// (checked before the run is read, so a bad path fails at once).
pub fn write_page(
    root: &Path,
    options: &Options,
    html: Option<&Path>,
) -> Result<(Report, Option<(PathBuf, u64)>)> {
    let out = html.map(HtmlOutput::create).transpose()?;
    let report = build(root, options)?;
    let written = match out {
        Some(out) => Some(out.write(&report)?),
        None => None,
    };
    Ok((report, written))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{RecordBatch, StringArray, UInt32Array};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::embed::{Embedder, HashEmbedder};
    use crate::format::tables::{
        CommunityRecord, DocumentRecord, EntityRecord, MembershipRecord, PassageRecord,
        ReportRecord,
    };
    use crate::format::{RunData, new_run_id, write_run};
    use crate::visibility::{Target, Visibility, VisibilityStore};

    /// Two triangles {0,1,2} and {3,4,5} (weight 2 each edge) joined by a bridge 2–3 (weight
    /// 1), and an isolated entity 6. Level 0: community 0 = {0..5}, community 1 = {6} (a
    /// leaf); level 1: communities 2 = {0,1,2} and 3 = {3,4,5}, leaves larger than the run's
    /// `max_cluster_size` of 2. Documents d1 (passages d1#0, d1#1) and d2 (d2#0).
    fn small_run(root: &Path) -> String {
        let embedder = HashEmbedder::new(4);
        let dim = embedder.identity().dim;
        let entity = |name: &str, degree: f64| EntityRecord {
            concept_id: format!("C{name}"),
            name: name.to_owned(),
            num_passages: 1,
            degree,
        };
        let community = |level, parent, size, is_leaf| CommunityRecord {
            level,
            parent,
            size,
            is_leaf,
        };
        let report = |level, title: &str| ReportRecord {
            level,
            title: title.to_owned(),
            summary: format!("Summary of {title}."),
            findings: vec![
                format!("{title} finding one."),
                format!("{title} finding two."),
            ],
            rank: 1.0,
            full_content: title.to_owned(),
        };
        let mut membership = Vec::new();
        for e in 0..7u32 {
            let (c, leaf) = if e < 6 { (0, false) } else { (1, true) };
            membership.push(MembershipRecord {
                level: 0,
                entity: e,
                community: c,
                parent: None,
                is_leaf: leaf,
            });
        }
        for e in 0..6u32 {
            membership.push(MembershipRecord {
                level: 1,
                entity: e,
                community: if e < 3 { 2 } else { 3 },
                parent: Some(0),
                is_leaf: true,
            });
        }
        let passage = |d: &str, p: u32| PassageRecord {
            passage_id: format!("{d}#{p}"),
            document_key: d.to_owned(),
            position: p,
            text: format!("text of {d} {p}"),
        };
        let document = |k: &str, n| DocumentRecord {
            key: k.to_owned(),
            title: k.to_owned(),
            year: None,
            num_passages: n,
            linked: true,
        };
        let data = RunData {
            documents: vec![document("d1", 2), document("d2", 1)],
            passages: vec![passage("d1", 0), passage("d1", 1), passage("d2", 0)],
            entities: vec![
                entity("a", 4.0),
                entity("b", 4.0),
                entity("c", 5.0),
                entity("d", 5.0),
                entity("e", 4.0),
                entity("f", 4.0),
                entity("g", 0.0),
            ],
            mentions: (0..7).map(|e| (e, "d1#0".to_owned(), 1)).collect(),
            relationships: vec![
                (0, 1, 2.0),
                (0, 2, 2.0),
                (1, 2, 2.0),
                (2, 3, 1.0),
                (3, 4, 2.0),
                (3, 5, 2.0),
                (4, 5, 2.0),
            ],
            communities: vec![
                community(0, None, 6, false),
                community(0, None, 1, true),
                community(1, Some(0), 3, true),
                community(1, Some(0), 3, true),
            ],
            membership,
            reports: vec![
                report(0, "Both triangles"),
                report(0, "The isolate"),
                report(1, "Left triangle"),
                report(1, "Right triangle"),
            ],
            report_embeddings: vec![0.5; 4 * dim],
            document_embeddings: vec![0.5; 2 * dim],
            ..RunData::default()
        };
        let run_id = new_run_id();
        let layout = Layout::new(root);
        write_run(
            &layout,
            &run_id,
            &data,
            embedder.identity(),
            serde_json::json!({"detection": {"algorithm": "leiden", "max_cluster_size": 2}}),
            "fingerprint".into(),
            serde_json::json!({"seconds": {"detect": 0.5, "link": 1.5}}),
        )
        .unwrap();
        layout.write_latest(&run_id).unwrap();
        run_id
    }

    #[test]
    fn figures_of_a_small_run() {
        let dir = tempfile::tempdir().unwrap();
        let run_id = small_run(dir.path());
        let report = build(dir.path(), &Options::default()).unwrap();
        let f = &report.figures;
        assert_eq!(f.run.run_id, run_id);
        assert!(f.run.is_latest);
        assert_eq!(f.run.parent_run_id, None);
        assert_eq!(f.run.input_fingerprint, "fingerprint");
        assert_eq!(f.run.total_seconds, 2.0);
        let c = &f.counts;
        assert_eq!(
            (c.documents, c.passages, c.entities, c.isolated_entities),
            (2, 3, 7, 1)
        );
        assert_eq!((c.relationships, c.total_weight), (7, 13.0));
        assert_eq!((c.communities, c.levels, c.leaves), (4, 2, 3));

        // Nothing in the manifest's stats: modularity and oversized leaves are computed.
        // Level 0: {0..5} holds all the weight, Q = 13/13 − (26/26)² = 0. Level 1: each
        // triangle holds 6 of 13 and half the degree: Q = 2 (6/13 − 1/4) = 12/13 − 1/2.
        let [l0, l1] = &f.levels[..] else {
            panic!("two levels expected: {:?}", f.levels)
        };
        assert_eq!(l0.modularity_source, FigureSource::Computed);
        assert!(l0.modularity.unwrap().abs() < 1e-12, "{l0:?}");
        assert!((l1.modularity.unwrap() - (12.0 / 13.0 - 0.5)).abs() < 1e-12);
        assert_eq!(
            (l0.communities, l0.leaves, l0.members, l0.singletons),
            (2, 1, 7, 1)
        );
        assert_eq!(
            (l0.oversized_leaves, l1.oversized_leaves),
            (Some(0), Some(2))
        );
        assert_eq!(
            (l1.size_min, l1.size_median, l1.size_p90, l1.size_max),
            (3, 3, 3, 3)
        );
        let bins: Vec<u64> = l0.histogram.iter().map(|b| b.communities).collect();
        assert_eq!(bins, vec![1, 0, 1], "sizes 1 and 6 in bins 1, 2–3, 4–7");
        assert_eq!(f.detection.max_cluster_size, Some(2));
        assert_eq!(
            (
                f.detection.oversized_leaves,
                f.detection.oversized_leaves_source
            ),
            (Some(2), FigureSource::Computed)
        );
        assert_eq!(f.detection.largest_leaf, 3);

        let big = &f.largest_communities[0];
        assert_eq!((big.community_id, big.size, big.children), (0, 6, 2));
        assert_eq!(big.title, "Both triangles");
        assert_eq!(big.internal_relationships, 7);
        assert_eq!(big.internal_share, Some(1.0));
        assert_eq!(big.top_members, vec!["c", "d", "a", "b", "e"]);
        // A triangle keeps 12 of its members' 13 degree inside.
        let left = f
            .largest_communities
            .iter()
            .find(|c| c.community_id == 2)
            .unwrap();
        assert!((left.internal_share.unwrap() - 12.0 / 13.0).abs() < 1e-12);

        // Every community is drawn; one drawing, of community 0, coloured by its two halves.
        assert_eq!(f.sampling.treemap_communities, 4);
        assert_eq!(f.sampling.treemap_aggregates, 0);
        let net = &report.drawings.networks[..];
        assert_eq!(net.len(), 1);
        assert_eq!((net[0].community_id, net[0].nodes.len()), (0, 6));
        assert_eq!(net[0].edges.len(), 7);
        assert_eq!(net[0].groups, vec![(2, 3), (3, 3)]);
        assert_eq!(f.lineage.status, LineageStatus::NoParent);
        assert!(!f.visibility.store_present);
        // Reading wrote nothing under the root.
        assert!(!dir.path().join("visibility.sqlite").exists());
    }

    #[test]
    fn the_treemap_draws_within_its_bound_and_aggregates_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        small_run(dir.path());
        let options = Options {
            treemap_limit: 2,
            ..Options::default()
        };
        let report = build(dir.path(), &options).unwrap();
        let drawn: Vec<u32> = report.drawings.treemap.iter().map(|n| n.id).collect();
        // Largest first, each after its parent: 0 (6 members), then 2 (3; ties: lower id).
        assert_eq!(drawn, vec![0, 2]);
        assert_eq!(
            report.drawings.aggregates,
            vec![
                Aggregate {
                    parent: None,
                    level: 0,
                    communities: 1,
                    members: 1
                },
                Aggregate {
                    parent: Some(0),
                    level: 1,
                    communities: 1,
                    members: 3
                },
            ]
        );
        let node = &report.drawings.treemap[1];
        assert_eq!(node.title, "Left triangle");
        assert_eq!(node.findings.len(), 2);
        assert_eq!(node.members, vec!["c", "a", "b"]);
    }

    #[test]
    fn visibility_counts_follow_the_effective_state() {
        let dir = tempfile::tempdir().unwrap();
        small_run(dir.path());
        let mut store = VisibilityStore::open(&dir.path().join("visibility.sqlite")).unwrap();
        store
            .set(Target::Document, "d2", Visibility::Deleted, None)
            .unwrap();
        store
            .set(Target::Passage, "d1#1", Visibility::Hidden, None)
            .unwrap();
        // Less restrictive than its document's flag: the passage counts as deleted.
        store
            .set(Target::Passage, "d2#0", Visibility::Hidden, None)
            .unwrap();
        // Not in this run: a document it lacks, and a position beyond d1's two passages.
        store
            .set(Target::Passage, "zz#0", Visibility::Hidden, None)
            .unwrap();
        store
            .set(Target::Passage, "d1#7", Visibility::Superseded, None)
            .unwrap();
        store
            .set(Target::Document, "gone", Visibility::Hidden, None)
            .unwrap();
        let v = build(dir.path(), &Options::default())
            .unwrap()
            .figures
            .visibility;
        assert!(v.store_present);
        let counts = |hidden, superseded, deleted| StateCounts {
            hidden,
            superseded,
            deleted,
        };
        assert_eq!(v.passages, counts(1, 0, 1));
        assert_eq!(v.documents, counts(0, 0, 1));
        assert_eq!(v.passage_flags, counts(3, 1, 0));
        assert_eq!(v.document_flags, counts(1, 0, 1));
        assert_eq!(v.flags_outside_run, 3);
    }

    /// Rewrites the run's manifest with `edit` applied, and its checksum file with it.
    fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut Value)) {
        let path = dir.join(MANIFEST_FILE);
        let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        edit(&mut m);
        let bytes = serde_json::to_vec_pretty(&m).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        std::fs::write(
            dir.join(crate::format::manifest::MANIFEST_CHECKSUM_FILE),
            format!("{}\n", blake3::hash(&bytes).to_hex()),
        )
        .unwrap();
    }

    #[test]
    fn lineage_is_shown_only_when_the_run_records_it() {
        let dir = tempfile::tempdir().unwrap();
        let run_id = small_run(dir.path());
        let run_dir = Layout::new(dir.path()).run_dir(&run_id);

        let parent = "01a00000-0000-7000-8000-000000000000";
        edit_manifest(&run_dir, |m| m["parent_run_id"] = parent.into());
        let l = build(dir.path(), &Options::default())
            .unwrap()
            .figures
            .lineage;
        assert_eq!(l.status, LineageStatus::ParentOnly);
        assert_eq!(l.parent_run_id.as_deref(), Some(parent));
        assert_eq!(l.parent_in_root, Some(false));
        assert!(l.events.is_empty());
        assert!(l.note.contains("no community lineage"), "{}", l.note);

        let schema = Arc::new(Schema::new(vec![
            Field::new("community_id", DataType::UInt32, true),
            Field::new("event", DataType::Utf8, false),
            Field::new("size", DataType::UInt32, true),
            Field::new("previous_size", DataType::UInt32, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(UInt32Array::from(vec![Some(0), Some(2), Some(3), None])),
                Arc::new(StringArray::from(vec!["grew", "same", "new", "dissolved"])),
                Arc::new(UInt32Array::from(vec![Some(6), Some(3), Some(3), None])),
                Arc::new(UInt32Array::from(vec![Some(2), Some(3), None, Some(9)])),
            ],
        )
        .unwrap();
        let file = std::fs::File::create(run_dir.join(lineage::LINEAGE_FILE)).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let report = build(dir.path(), &Options::default()).unwrap();
        let page = report.to_html();
        assert!(page.contains(parent), "the page names the parent");
        assert!(page.contains("Biggest changes"));
        let l = report.figures.lineage;
        assert_eq!(l.status, LineageStatus::Lineage);
        let events: Vec<(&str, u64)> = l.events.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            events,
            vec![("dissolved", 1), ("grew", 1), ("new", 1), ("same", 1)]
        );
        // By size change: dissolved (−9), grew (+4), new (+3); `same` is not a change.
        let order: Vec<&str> = l.biggest_changes.iter().map(|c| c.event.as_str()).collect();
        assert_eq!(order, vec!["dissolved", "grew", "new"]);
        assert_eq!(
            l.biggest_changes[1].title.as_deref(),
            Some("Both triangles")
        );
    }

    #[test]
    fn bad_runs_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = build(dir.path(), &Options::default()).unwrap_err();
        assert!(matches!(err, EngineError::NotReady { .. }), "{err}");
        assert!(err.to_string().contains("LATEST"), "{err}");
        let run_id = small_run(dir.path());
        let other = "01a00000-0000-7000-8000-000000000000";
        let err = build(
            dir.path(),
            &Options {
                run_id: Some(other.into()),
                ..Options::default()
            },
        )
        .unwrap_err();
        assert!(matches!(err, EngineError::UnknownRun { .. }), "{err}");
        assert!(
            err.to_string().contains(&run_id),
            "lists the runs there: {err}"
        );
        let err = build(
            dir.path(),
            &Options {
                run_id: Some("../x".into()),
                ..Options::default()
            },
        )
        .unwrap_err();
        assert!(matches!(
            err,
            EngineError::InvalidArgument { field: "run", .. }
        ));
        // A damaged table names its file.
        let table = Layout::new(dir.path())
            .run_dir(&run_id)
            .join(relationships::FILE);
        std::fs::write(&table, b"not parquet").unwrap();
        let err = build(dir.path(), &Options::default()).unwrap_err();
        assert!(matches!(err, EngineError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("relationships.parquet"), "{err}");
    }

    /// On the golden run the figures computed from the tables agree with the pipeline's own
    /// statistics in its manifest.
    #[test]
    fn computed_figures_agree_with_the_golden_manifest() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/fixtures/snapshots/v1");
        let layout = Layout::new(&root);
        let run_id = layout.read_latest().unwrap().unwrap();
        let dir = layout.run_dir(&run_id);
        let manifest = Manifest::read(&dir).unwrap();
        let progress = Progress::new(false, 0);
        let h = Hierarchy::read(&dir, &run_id, &progress).unwrap();
        let ents = Entities::read(&dir, &run_id, &progress).unwrap();
        let members = Membership::read(&dir, &run_id, &h, &ents, &progress).unwrap();
        let weights =
            graph::scan_weights(&dir, &run_id, &h, &members, ents.name.len(), &progress).unwrap();
        let sums = graph::degree_sums(&h, &members, &weights);
        let computed = graph::modularity_per_level(&h, &weights, &sums);
        let levels = manifest.stats["detection"]["levels"].as_array().unwrap();
        assert_eq!(computed.len(), levels.len());
        for (q, level) in computed.iter().zip(levels) {
            let want = level["modularity"].as_f64().unwrap();
            assert!((q - want).abs() < 1e-9, "level {level}: computed {q}");
        }
        assert_eq!(
            weights.total_weight,
            manifest.stats["detection"]["total_weight"]
                .as_f64()
                .unwrap()
        );
        for (e, d) in weights.degree.iter().enumerate() {
            assert!((d - ents.degree[e]).abs() < 1e-9, "entity {e}");
        }
        let report = build(&root, &Options::default()).unwrap();
        let f = &report.figures;
        for (l, level) in f.levels.iter().zip(levels) {
            assert_eq!(l.modularity_source, FigureSource::Manifest);
            assert_eq!(Some(l.communities), level["communities"].as_u64());
            assert_eq!(Some(l.leaves), level["leaves"].as_u64());
            assert_eq!(Some(l.size_median), level["size_median"].as_u64());
            assert_eq!(Some(l.size_p90), level["size_p90"].as_u64());
            assert_eq!(Some(l.size_max), level["size_max"].as_u64());
        }
        assert_eq!(
            Some(f.counts.isolated_entities),
            manifest.stats["isolates"].as_u64()
        );
        assert_eq!(f.sampling.treemap_communities, f.counts.communities);
    }
}
