//! Community detection: Leiden (Traag, Waltman & van Eck 2019) and Louvain (Blondel et al. 2008),
//! parallel with Rayon and deterministic, flat ([`leiden`]) or hierarchical
//! ([`hierarchical_leiden`]).
//!
//! # Algorithm
//! One Leiden *iteration* repeats, on ever coarser graphs:
//! 1. **local moving** (`local_moving.rs`): nodes move to the neighboring community that increases
//!    the quality most, driven by a queue of unstable nodes;
//! 2. **refinement** (`refine.rs`): inside each community, nodes that are well connected merge at
//!    random (randomness θ) into well-connected sub-communities, so every refined community is
//!    γ-connected;
//! 3. **aggregation** (`aggregate.rs`): one node per refined community; each aggregate node starts in
//!    the community (of step 1) that contains it;
//!
//! until every community is a single node. Iterations repeat from the result until one raises the
//! quality by no more than [`LeidenConfig::tolerance`] or [`LeidenConfig::max_iterations`] is
//! reached (a later iteration also stops after its first local moving if that gained no more than
//! the tolerance). Louvain skips step 2 and aggregates the communities of step 1. A final pass splits any
//! disconnected community into its components (never lowering the quality), so every returned
//! community is connected.
//!
//! # Quality functions
//! [`Objective::Modularity`] (igraph's definition with resolution γ; self-loops count twice) and
//! [`Objective::Cpm`] (constant Potts model), computed from scratch by [`quality`].
//!
//! # Determinism
//! The same graph, configuration and seed give byte-identical membership for any number of Rayon
//! threads: local moving decides moves in parallel against a frozen state and applies them in a
//! fixed order; refinement and aggregation work per community with random streams keyed by the
//! seed and the community; floating-point sums run in fixed orders.
//!
//! # References
//! * V. A. Traag, L. Waltman, N. J. van Eck (2019), *From Louvain to Leiden: guaranteeing
//!   well-connected communities*, Scientific Reports 9, 5233,
//!   <https://doi.org/10.1038/s41598-019-41695-z>.
//! * V. D. Blondel, J.-L. Guillaume, R. Lambiotte, E. Lefebvre (2008), *Fast unfolding of communities
//!   in large networks*, J. Stat. Mech. P10008, <https://doi.org/10.1088/1742-5468/2008/10/P10008>.

pub(crate) mod aggregate;
pub(crate) mod components;
pub mod hierarchy;
pub(crate) mod local_moving;
pub mod quality;
pub(crate) mod refine;
pub(crate) mod rng;

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use hierarchy::{
    Community, DetectionStats, Hierarchy, HierarchyWarmStart, LevelStats, MembershipRecord,
    NO_COMMUNITY, hierarchical_leiden, hierarchical_leiden_warm,
};

use crate::error::{PipelineError, Result};
use crate::graph::Graph;
use aggregate::{aggregate, renumber};
use local_moving::{Level, move_nodes_from};

/// The quality function that detection maximises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Modularity with resolution γ ([`quality::modularity`]): `γ = 1` is Newman–Girvan
    /// modularity; larger γ gives smaller communities.
    #[default]
    Modularity,
    /// The constant Potts model ([`quality::cpm`]): γ is a density threshold, communities have
    /// internal edge density above γ and density between them is below γ. Unlike modularity it
    /// has no resolution limit; γ must be chosen for the graph's weights.
    Cpm,
}

/// The optimiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Leiden: local moving, refinement, aggregation of the refined partition.
    #[default]
    Leiden,
    /// Louvain: local moving and aggregation, no refinement.
    Louvain,
}

impl FromStr for Objective {
    type Err = PipelineError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "modularity" => Ok(Objective::Modularity),
            "cpm" => Ok(Objective::Cpm),
            _ => Err(PipelineError::InvalidConfig {
                field: "objective",
                value: s.to_string(),
                expected: "modularity or cpm",
            }),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Objective::Modularity => "modularity",
            Objective::Cpm => "cpm",
        })
    }
}

impl FromStr for Algorithm {
    type Err = PipelineError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "leiden" => Ok(Algorithm::Leiden),
            "louvain" => Ok(Algorithm::Louvain),
            _ => Err(PipelineError::InvalidConfig {
                field: "algorithm",
                value: s.to_string(),
                expected: "leiden or louvain",
            }),
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Leiden => "leiden",
            Algorithm::Louvain => "louvain",
        })
    }
}

/// Parameters of community detection. Check them with [`LeidenConfig::validate`] (every entry
/// point does).
///
/// Deserialising fills missing fields with their defaults (`#[serde(default)]`), so a manifest or
/// a config file may name only what it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeidenConfig {
    /// Leiden or Louvain. Default: Leiden.
    pub algorithm: Algorithm,
    /// Quality function. Default: modularity.
    pub objective: Objective,
    /// γ > 0, unscaled. For modularity it multiplies the null-model term `k_i·k_j/(2m)`; for CPM it
    /// is the density threshold (edge-weight units per node pair). Default: `1.0`.
    pub resolution: f64,
    /// θ > 0, the randomness of the refinement: a node merges into a candidate sub-community with
    /// probability `∝ exp(ΔH/θ)`, `ΔH` in edge-weight units as in igraph. Small θ is nearly greedy.
    /// Default: `0.01` (igraph's and leidenalg's default).
    pub randomness: f64,
    /// Seed of every random choice (node orders, refinement draws, sub-runs of the hierarchy).
    /// Default: `0xDEADBEEF` (GraphRAG's default seed).
    pub seed: u64,
    /// Upper bound on Leiden iterations per run, `>= 1`. Default: `2`, as igraph's
    /// `community_leiden(n_iterations=2)`: the second iteration adds about 1% of modularity on
    /// collaboration graphs, later ones about 0.1% each at the same cost as the second.
    pub max_iterations: usize,
    /// Convergence threshold in quality units (modularity, or CPM in edge-weight units), `>= 0`.
    /// A run stops after an iteration that raised the quality by no more than this; and an
    /// iteration after the first stops right after its first local moving (on the original
    /// graph, from the previous result) when that raised the quality by no more than this,
    /// skipping refinement and aggregation. Default: `2e-3`: on the benchmark graphs a second
    /// iteration whose first local moving gains less than that gains under 10% more from its
    /// refinement and aggregation, and they cost about a third of a run. Set `0` to always run
    /// `max_iterations` full iterations (igraph's behaviour).
    pub tolerance: f64,
    /// Hierarchy: a community with more nodes than this is split by a Leiden run on its induced
    /// subgraph, `>= 1`. Default: `10`, GraphRAG's `max_cluster_size`, so leaf communities stay
    /// small enough for a readable report and hierarchies are comparable with GraphRAG's.
    pub max_cluster_size: usize,
    /// Finish every run with one local moving of the nodes themselves from its result
    /// (`polish`), so that the partition is a local optimum of single-node moves. Default:
    /// `true`. The iterations stop at the tolerance after a local moving on an aggregate
    /// graph, where moving a refined group no longer helps but single nodes still may; a run
    /// warm-started from such a partition moves those nodes wherever the frontier reaches, so
    /// on unchanged input a warm start with every node queued kept about half of the deeper
    /// levels' communities without the polish and about nine in ten with it (10⁴-document
    /// bench corpus). The polish only raises the quality. A warm-started run queues only its
    /// frontier and the nodes of the communities it changed (the rest was polished before).
    pub polish: bool,
    /// Warm starts only: the margin, per unit of weighted degree (raw quality units, edge
    /// weight), by which a move must beat staying before a node leaves the community it
    /// started in, `>= 0` and finite. It applies to the nodes that start in a previous
    /// community of at least two nodes, in the local movings of single nodes (the first of
    /// each iteration and the polish), not to new nodes or to aggregates. The run then
    /// optimises the quality less a history cost, as in evolutionary clustering (Chakrabarti,
    /// Kumar & Tomkins, "Evolutionary clustering", KDD 2006): a node whose neighbourhood
    /// barely changed no longer swaps between two nearly equal communities because a small
    /// community's totals moved. Default: `0.2`: on the 10⁵-document bench corpus's night
    /// of changes, communities keeping their id with Jaccard ≥ 0.9 rose from 22–89 % to 95–100 %
    /// at every level below level 0, modularity 0.0002 below a warm start without it and
    /// 0.0007 below detection from nothing. `0` gives plain DF Leiden. Cold runs ignore it.
    pub stickiness: f64,
    /// Hierarchy: number of levels at most (level 0 plus `max_levels - 1` levels of splits),
    /// `>= 1`. Default: `10`; graphs with a few million nodes rarely need more than 5 levels at a
    /// cluster size of 10.
    pub max_levels: usize,
}

impl Default for LeidenConfig {
    fn default() -> Self {
        LeidenConfig {
            algorithm: Algorithm::Leiden,
            objective: Objective::Modularity,
            resolution: 1.0,
            randomness: 0.01,
            seed: 0xDEAD_BEEF,
            max_iterations: 2,
            tolerance: 2e-3,
            max_cluster_size: 10,
            max_levels: 10,
            polish: true,
            stickiness: 0.2,
        }
    }
}

impl LeidenConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`PipelineError::InvalidConfig`] naming the first bad field: `resolution` or `randomness`
    /// not finite and `> 0`; `tolerance` not finite and `>= 0`; `max_iterations`,
    /// `max_cluster_size` or `max_levels` equal to 0.
    pub fn validate(&self) -> Result<()> {
        let bad = |field, value: String, expected| {
            Err(PipelineError::InvalidConfig {
                field,
                value,
                expected,
            })
        };
        if !(self.resolution.is_finite() && self.resolution > 0.0) {
            return bad(
                "resolution",
                self.resolution.to_string(),
                "a finite number > 0",
            );
        }
        if !(self.randomness.is_finite() && self.randomness > 0.0) {
            return bad(
                "randomness",
                self.randomness.to_string(),
                "a finite number > 0",
            );
        }
        if !(self.tolerance.is_finite() && self.tolerance >= 0.0) {
            return bad(
                "tolerance",
                self.tolerance.to_string(),
                "a finite number >= 0",
            );
        }
        if !(self.stickiness.is_finite() && self.stickiness >= 0.0) {
            return bad(
                "stickiness",
                self.stickiness.to_string(),
                "a finite number >= 0",
            );
        }
        if self.max_iterations == 0 {
            return bad("max_iterations", "0".into(), "an integer >= 1");
        }
        if self.max_cluster_size == 0 {
            return bad("max_cluster_size", "0".into(), "an integer >= 1");
        }
        if self.max_levels == 0 {
            return bad("max_levels", "0".into(), "an integer >= 1");
        }
        Ok(())
    }
}

/// One flat partition of the nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Partition {
    /// Community of each node, dense `0..num_communities`, numbered in order of the smallest node
    /// of each community.
    pub membership: Vec<u32>,
    /// Number of communities (isolated nodes are singleton communities).
    pub num_communities: usize,
    /// Quality of `membership` under the configured objective and resolution (modularity, or CPM
    /// in edge-weight units), recomputed from scratch.
    pub quality: f64,
    /// Leiden (or Louvain) iterations performed.
    pub iterations: usize,
}

/// Runs Leiden (or Louvain) community detection on `graph` and returns one flat partition.
///
/// Implements Traag, Waltman & van Eck (2019), <https://doi.org/10.1038/s41598-019-41695-z>
/// (Louvain: Blondel et al. 2008), as described in the [module documentation](self).
///
/// # Arguments
/// * `config.resolution`: γ > 0, unscaled; for [`Objective::Modularity`] the optimiser uses
///   `γ/(2m)` internally. The hierarchy fields of `config` are not used.
///
/// # Returns
/// A [`Partition`]: every community is connected; isolated nodes are singletons; an empty graph
/// gives 0 communities. A graph without edges gives all singletons.
///
/// # Errors
/// [`PipelineError::InvalidConfig`] when `config` fails [`LeidenConfig::validate`].
///
/// # Complexity
/// * Time: **O(L·|E|)** per iteration with L levels of aggregation (typically 3–6), parallel over
///   nodes (local moving, aggregation) and communities (refinement).
/// * Auxiliary space: **O(|V| + |E|)**: the first aggregate graph and about 40 bytes per node.
///
/// # Determinism
/// Same graph + config (seed included) → identical membership for any Rayon thread count.
///
/// # Examples
/// ```
/// use agrag_pipeline::graph::Graph;
/// use agrag_pipeline::leiden::{leiden, LeidenConfig};
/// // Two triangles joined by an edge.
/// let g = Graph::from_edges(6, &[(0,1,1.0),(1,2,1.0),(0,2,1.0),(3,4,1.0),(4,5,1.0),(3,5,1.0),(2,3,1.0)])?;
/// let p = leiden(&g, &LeidenConfig::default())?;
/// assert_eq!(p.membership, vec![0, 0, 0, 1, 1, 1]);
/// assert!((p.quality - 5.0 / 14.0).abs() < 1e-12);
/// # Ok::<(), agrag_pipeline::PipelineError>(())
/// ```
pub fn leiden(graph: &Graph, config: &LeidenConfig) -> Result<Partition> {
    config.validate()?;
    Ok(run(graph, config))
}

/// Where a warm-started run begins: a previous partition of the nodes and the nodes whose
/// neighbourhood changed since it was computed.
///
/// A warm start follows Sahu (2024), "DF Leiden: Dynamic Frontier Leiden algorithm for fully
/// dynamic networks", <https://arxiv.org/abs/2405.11658>: local moving starts from
/// `membership` with only the `frontier` queued (a node joins the queue when a neighbour
/// moves), and only aggregate nodes made of communities that gained or lost a node are queued
/// on the coarser graphs. Unlike DF Leiden, no community is refined: each enters aggregation
/// whole, as in Louvain, because moving refined pieces of changed communities reshuffled
/// communities the change barely touched (measured in `benches/RESULTS.md`); every returned
/// community is still connected (the final split into components). A node that starts in a
/// community of two or more leaves it only for a gain above
/// [`LeidenConfig::stickiness`] times its weighted degree. With an empty frontier the result
/// is `membership` itself (split into connected components).
#[derive(Debug, Clone, PartialEq)]
pub struct WarmStart {
    /// Starting community of each node (any `u32` labels; equal labels share a community),
    /// length `|V|`.
    pub membership: Vec<u32>,
    /// Whether each node is on the frontier (new, or its edges changed, or a neighbour of
    /// such a node), length `|V|`.
    pub frontier: Vec<bool>,
}

/// [`leiden`] warm-started from `warm` (see [`WarmStart`]).
///
/// # Errors
/// [`PipelineError::InvalidConfig`] when `config` fails [`LeidenConfig::validate`] or `warm`
/// does not have one entry per node.
pub fn leiden_warm(graph: &Graph, config: &LeidenConfig, warm: &WarmStart) -> Result<Partition> {
    config.validate()?;
    check_warm(graph, warm)?;
    Ok(run_from(graph, config, Some(warm)))
}

/// Refuses a warm start whose vectors are not one entry per node.
pub(crate) fn check_warm(graph: &Graph, warm: &WarmStart) -> Result<()> {
    let n = graph.num_nodes();
    if warm.membership.len() != n || warm.frontier.len() != n {
        return Err(PipelineError::InvalidConfig {
            field: "warm_start",
            value: format!(
                "{} labels and {} frontier flags",
                warm.membership.len(),
                warm.frontier.len()
            ),
            expected: "one label and one frontier flag per node",
        });
    }
    Ok(())
}

/// [`leiden`] on a validated config.
pub(crate) fn run(graph: &Graph, config: &LeidenConfig) -> Partition {
    run_from(graph, config, None)
}

/// Which nodes of `after` are in a community that differs from every community of `before`
/// (as a member set). Both are partitions of the same nodes with labels `< n`.
fn changed_nodes(before: &[u32], after: &[u32]) -> Vec<bool> {
    const MIXED: u32 = u32::MAX;
    const UNSET: u32 = u32::MAX - 1;
    let n = before.len();
    let mut origin = vec![UNSET; n];
    let mut size_after = vec![0u32; n];
    let mut size_before = vec![0u32; n];
    for (&b, &a) in before.iter().zip(after) {
        size_before[b as usize] += 1;
        size_after[a as usize] += 1;
        let o = &mut origin[a as usize];
        if *o == UNSET {
            *o = b;
        } else if *o != b {
            *o = MIXED;
        }
    }
    let changed: Vec<bool> = (0..n)
        .map(|a| {
            let o = origin[a];
            o == MIXED || (o != UNSET && size_before[o as usize] != size_after[a])
        })
        .collect();
    after.iter().map(|&a| changed[a as usize]).collect()
}

/// [`leiden`] on a validated config, from singletons or from a warm start whose vectors have
/// one entry per node.
pub(crate) fn run_from(
    graph: &Graph,
    config: &LeidenConfig,
    warm: Option<&WarmStart>,
) -> Partition {
    let n = graph.num_nodes();
    let m = graph.total_weight();
    let (node_weights, lambda): (Cow<'_, [f64]>, f64) = match config.objective {
        Objective::Modularity => (
            Cow::Borrowed(graph.weighted_degrees()),
            if m > 0.0 {
                config.resolution / (2.0 * m)
            } else {
                0.0
            },
        ),
        Objective::Cpm => (Cow::Owned(vec![1.0; n]), config.resolution),
    };
    // Quality units per raw unit.
    let scale = match config.objective {
        Objective::Modularity if m > 0.0 => 1.0 / m,
        _ => 1.0,
    };
    let (mut membership, mut frontier): (Vec<u32>, Option<Vec<bool>>) = match warm {
        None => ((0..n as u32).collect(), None),
        Some(w) => {
            let mut m = w.membership.clone();
            renumber(&mut m);
            (m, Some(w.frontier.clone()))
        }
    };
    let start = warm.map(|_| membership.clone());
    // The nodes that started in a previous community of two or more: the ones the
    // stickiness holds (a new node, or one that came from elsewhere, starts alone and moves
    // freely).
    let sticky: Option<Vec<bool>> = start.as_ref().filter(|_| config.stickiness > 0.0).map(|m| {
        let mut sizes = vec![0u32; n];
        for &c in m {
            sizes[c as usize] += 1;
        }
        m.iter().map(|&c| sizes[c as usize] >= 2).collect()
    });
    let mut iterations = 0;
    if graph.num_edges() > 0 && n > 0 {
        for it in 0..config.max_iterations {
            let (mut next, gain) = iterate(
                graph,
                &node_weights,
                lambda,
                membership.clone(),
                frontier.as_deref(),
                config,
                it as u64,
                scale,
                sticky.as_deref(),
            );
            renumber(&mut next);
            iterations += 1;
            // The incremental gain (checked against from-scratch quality by the tests) decides
            // whether to go on; the quality is computed from scratch once, at the end.
            let changed = next != membership;
            // A warm start's next iteration revisits the communities this one changed.
            if frontier.is_some() && changed {
                frontier = Some(changed_nodes(&membership, &next));
            }
            membership = next;
            if !changed || gain * scale <= config.tolerance {
                break;
            }
        }
    }
    if config.polish && graph.num_edges() > 0 && n > 0 {
        // The iterations stop at the tolerance, on an aggregate graph: single nodes may still
        // gain by moving. One local moving on the nodes themselves makes the partition a
        // local optimum of single-node moves, so that a later warm start from it moves only
        // what a change of the graph makes worth moving.
        let level = Level {
            graph,
            node_weights: &node_weights,
            lambda,
            sticky: sticky.as_deref(),
            stickiness: config.stickiness,
        };
        // A warm start polishes what it touched: its frontier and the communities it changed.
        let queued: Option<Vec<bool>> = match (&start, warm) {
            (Some(start), Some(w)) => {
                let changed = changed_nodes(start, &membership);
                Some(
                    changed
                        .iter()
                        .zip(&w.frontier)
                        .map(|(&c, &f)| c || f)
                        .collect(),
                )
            }
            _ => None,
        };
        let moved = move_nodes_from(
            level,
            &mut membership,
            config.seed,
            &[u64::MAX],
            queued.as_deref(),
        );
        tracing::debug!(
            moves = moved.moves,
            gain = moved.gain * scale,
            "leiden: polish"
        );
        renumber(&mut membership);
    }
    let t = std::time::Instant::now();
    let num_communities = components::split_disconnected(graph, &mut membership);
    let split_seconds = t.elapsed().as_secs_f64();
    let quality = quality::quality(graph, &membership, config.objective, config.resolution);
    tracing::debug!(
        split_seconds,
        quality_seconds = t.elapsed().as_secs_f64() - split_seconds,
        "leiden: connected components and quality"
    );
    Partition {
        membership,
        num_communities,
        quality,
        iterations,
    }
}

/// An aggregate graph smaller than this (in bytes) is kept while the next one is built from it.
const AGGREGATE_KEEP_BYTES: usize = 32 << 20;

/// One iteration (local moving, refinement, aggregation, repeated until every community is one
/// node) starting from `membership` (labels `< n`); returns the flat membership (labels `< n`)
/// and the raw-quality gain accumulated by the local moves (the incremental bookkeeping; tests
/// check it against [`quality::raw_quality`] recomputed from scratch).
///
/// With `frontier` (a warm start, see [`WarmStart`]) only the flagged nodes are queued at
/// first, communities are aggregated whole (no refinement), and on each coarser graph only
/// the aggregate nodes of communities that gained or lost a node are queued.
#[allow(clippy::too_many_arguments)]
fn iterate(
    graph: &Graph,
    node_weights: &[f64],
    lambda: f64,
    membership: Vec<u32>,
    frontier: Option<&[bool]>,
    config: &LeidenConfig,
    iteration: u64,
    quality_scale: f64,
    sticky: Option<&[bool]>,
) -> (Vec<u32>, f64) {
    let mut aggregate_graph: Option<Graph> = None;
    let mut weights: Cow<'_, [f64]> = Cow::Borrowed(node_weights);
    let mut p = membership;
    // Original node -> node of the current aggregate graph (None: identity).
    let mut to_current: Option<Vec<u32>> = None;
    let mut gain = 0.0;
    let mut first_half_edges = 0;
    // Nodes of the current graph queued at the start of local moving (`None`: all).
    let mut queued: Option<Vec<bool>> = frontier.map(<[bool]>::to_vec);
    for depth in 0u64.. {
        let g = aggregate_graph.as_ref().unwrap_or(graph);
        let level = Level {
            graph: g,
            node_weights: &weights,
            lambda,
            // Aggregates move freely: holding whole communities in place as well kept fewer
            // ids below level 3 on the 10⁴-document bench corpus (level 4: 75 % against 87 %).
            sticky: if depth == 0 { sticky } else { None },
            stickiness: config.stickiness,
        };
        let t0 = std::time::Instant::now();
        let before = queued.as_ref().map(|_| p.clone());
        let moved = move_nodes_from(
            level,
            &mut p,
            config.seed,
            &[iteration, depth],
            queued.as_deref(),
        );
        gain += moved.gain;
        // Labels (before renumbering) of the communities that gained or lost a node.
        let touched: Option<Vec<bool>> = before.map(|before| {
            let mut t = vec![false; g.num_nodes()];
            for (&b, &a) in before.iter().zip(&p) {
                if b != a {
                    t[b as usize] = true;
                    t[a as usize] = true;
                }
            }
            t
        });
        let p_moved = touched.as_ref().map(|_| p.clone());
        let k = renumber(&mut p);
        // The same, by renumbered label.
        let changed: Option<Vec<bool>> = touched.map(|t| {
            let mut c = vec![false; k];
            for (&old, &new) in p_moved.iter().flatten().zip(&p) {
                c[new as usize] |= t[old as usize];
            }
            c
        });
        if changed.as_ref().is_some_and(|c| !c.contains(&true)) {
            // Nothing moved: no queued node at a coarser level could move either.
            break;
        }
        tracing::debug!(
            iteration,
            depth,
            nodes = g.num_nodes(),
            half_edges = g.num_half_edges(),
            moves = moved.moves,
            gain_per_m = moved.gain / graph.total_weight(),
            evaluations = moved.evaluations,
            rejected = moved.rejected,
            sweeps = moved.sweeps,
            communities = k,
            seconds = t0.elapsed().as_secs_f64(),
            "leiden: local moving"
        );
        if k == g.num_nodes() {
            break;
        }
        // A later iteration whose first local moving barely improved the partition stops here:
        // refinement and aggregation would restart from an almost unchanged partition (on the
        // benchmark graphs they then add well under a tenth of what local moving added).
        if iteration > 0 && depth == 0 && moved.gain * quality_scale <= config.tolerance {
            break;
        }
        let t1 = std::time::Instant::now();
        let (labels, n_next) = match config.algorithm {
            Algorithm::Leiden => {
                let mut r = refine::refine(
                    level,
                    &p,
                    k,
                    config.randomness,
                    config.seed,
                    &[iteration, depth],
                );
                let mut r_count = renumber(&mut r);
                if changed.is_some() {
                    // A warm start aggregates every community whole, as Louvain does: a
                    // refined piece of a community that changed, moved whole at a coarser
                    // level, reshuffles communities a change barely touched (on the 10⁴-document
                    // bench corpus's delta, refining the changed communities kept 85 % of
                    // level-0 ids and 48–59 % below; aggregating them whole, 100 % and
                    // 71–87 %). Connectivity is restored by the final split into components.
                    let base = r_count as u32;
                    for (rv, &c) in r.iter_mut().zip(&p) {
                        *rv = base + c;
                    }
                    r_count = renumber(&mut r);
                }
                if r_count == g.num_nodes() {
                    // Nothing merged: aggregate the communities themselves.
                    (p.clone(), k)
                } else {
                    (r, r_count)
                }
            }
            Algorithm::Louvain => (p.clone(), k),
        };
        let mut next_p = vec![0u32; n_next];
        let mut next_weights = vec![0.0f64; n_next];
        for (v, &a) in labels.iter().enumerate() {
            next_p[a as usize] = p[v];
            next_weights[a as usize] += weights[v];
        }
        // A warm start queues, on the coarser graph, the aggregate nodes of changed communities.
        queued = changed.map(|changed| {
            let mut q = vec![false; n_next];
            for (&a, &c) in labels.iter().zip(&p) {
                q[a as usize] |= changed[c as usize];
            }
            q
        });
        // The next level's state replaces this one's now, so that the latter is freed before
        // the aggregate graph is built.
        p = next_p;
        weights = Cow::Owned(next_weights);
        let t2 = std::time::Instant::now();
        let half_edges = g.num_half_edges();
        // Original node -> node of the next aggregate graph.
        let compose = |to_current: Option<Vec<u32>>, labels: &[u32]| -> Vec<u32> {
            match to_current {
                None => labels.to_vec(),
                Some(t) => t.par_iter().map(|&a| labels[a as usize]).collect(),
            }
        };
        // Memory: the peak is the original graph plus the first aggregate while it is built. A
        // later aggregate graph that is more than 3/4 as large as the first (Leiden's aggregates
        // keep most edges, refined communities being small) and holds more than
        // `AGGREGATE_KEEP_BYTES` is dropped before the next one is built, from the original
        // graph; otherwise the next one is aggregated from it directly (cheaper).
        let (next_graph, to_next) = match aggregate_graph.take() {
            None => {
                let next = aggregate(graph, &labels, n_next);
                (next, labels)
            }
            Some(current)
                if 4 * half_edges > 3 * first_half_edges
                    && current.size_bytes() > AGGREGATE_KEEP_BYTES =>
            {
                drop(current);
                let to_next = compose(to_current.take(), &labels);
                drop(labels);
                (aggregate(graph, &to_next, n_next), to_next)
            }
            Some(current) => {
                let next = aggregate(&current, &labels, n_next);
                drop(current);
                (next, compose(to_current.take(), &labels))
            }
        };
        if depth == 0 {
            first_half_edges = next_graph.num_half_edges();
        }
        tracing::debug!(
            refined = n_next,
            refine_seconds = (t2 - t1).as_secs_f64(),
            aggregate_seconds = t2.elapsed().as_secs_f64(),
            "leiden: refinement and aggregation"
        );
        to_current = Some(to_next);
        aggregate_graph = Some(next_graph);
    }
    let flat = match to_current {
        None => p,
        Some(t) => t.par_iter().map(|&a| p[a as usize]).collect(),
    };
    (flat, gain)
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;

    pub(crate) fn ring_of_cliques(k: u32, size: u32) -> Graph {
        let mut edges = Vec::new();
        for c in 0..k {
            let base = c * size;
            for i in 0..size {
                for j in i + 1..size {
                    edges.push((base + i, base + j, 1.0));
                }
            }
            edges.push((base, ((c + 1) % k) * size + 1, 1.0));
        }
        Graph::from_edges((k * size) as usize, &edges).unwrap()
    }

    #[test]
    fn ring_of_cliques_is_solved_by_both_algorithms() {
        // 10 cliques of 6 nodes: below the resolution limit, each clique is a community.
        let g = ring_of_cliques(10, 6);
        for algorithm in [Algorithm::Leiden, Algorithm::Louvain] {
            let config = LeidenConfig {
                algorithm,
                ..LeidenConfig::default()
            };
            let p = leiden(&g, &config).unwrap();
            assert_eq!(p.num_communities, 10, "{algorithm}");
            let expected: Vec<u32> = (0..60).map(|v| v / 6).collect();
            assert_eq!(p.membership, expected, "{algorithm}");
            let q = quality::modularity(&g, &p.membership, 1.0);
            assert!((p.quality - q).abs() < 1e-12);
        }
    }

    #[test]
    fn cpm_separates_cliques() {
        let g = ring_of_cliques(6, 4);
        let config = LeidenConfig {
            objective: Objective::Cpm,
            resolution: 0.5,
            ..LeidenConfig::default()
        };
        let p = leiden(&g, &config).unwrap();
        assert_eq!(p.num_communities, 6);
        assert!((p.quality - quality::cpm(&g, &p.membership, 0.5)).abs() < 1e-12);
        // A tiny resolution merges everything into one community.
        let config = LeidenConfig {
            resolution: 1e-3,
            ..config
        };
        assert_eq!(leiden(&g, &config).unwrap().num_communities, 1);
    }

    #[test]
    fn empty_and_edgeless_graphs() {
        let g = Graph::from_edges(0, &[]).unwrap();
        let p = leiden(&g, &LeidenConfig::default()).unwrap();
        assert_eq!((p.num_communities, p.membership.len()), (0, 0));
        let g = Graph::from_edges(3, &[]).unwrap();
        let p = leiden(&g, &LeidenConfig::default()).unwrap();
        assert_eq!(p.membership, vec![0, 1, 2]);
        assert_eq!(p.quality, 0.0);
    }

    #[test]
    fn config_validation_names_the_field() {
        let cases: Vec<(LeidenConfig, &str)> = vec![
            (
                LeidenConfig {
                    resolution: 0.0,
                    ..Default::default()
                },
                "resolution",
            ),
            (
                LeidenConfig {
                    resolution: f64::NAN,
                    ..Default::default()
                },
                "resolution",
            ),
            (
                LeidenConfig {
                    resolution: -1.0,
                    ..Default::default()
                },
                "resolution",
            ),
            (
                LeidenConfig {
                    stickiness: -0.1,
                    ..Default::default()
                },
                "stickiness",
            ),
            (
                LeidenConfig {
                    stickiness: f64::INFINITY,
                    ..Default::default()
                },
                "stickiness",
            ),
            (
                LeidenConfig {
                    randomness: 0.0,
                    ..Default::default()
                },
                "randomness",
            ),
            (
                LeidenConfig {
                    randomness: f64::INFINITY,
                    ..Default::default()
                },
                "randomness",
            ),
            (
                LeidenConfig {
                    tolerance: -1.0,
                    ..Default::default()
                },
                "tolerance",
            ),
            (
                LeidenConfig {
                    max_iterations: 0,
                    ..Default::default()
                },
                "max_iterations",
            ),
            (
                LeidenConfig {
                    max_cluster_size: 0,
                    ..Default::default()
                },
                "max_cluster_size",
            ),
            (
                LeidenConfig {
                    max_levels: 0,
                    ..Default::default()
                },
                "max_levels",
            ),
        ];
        for (config, field) in cases {
            match config.validate() {
                Err(PipelineError::InvalidConfig { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        assert!(LeidenConfig::default().validate().is_ok());
        let g = Graph::from_edges(2, &[(0, 1, 1.0)]).unwrap();
        assert!(
            leiden(
                &g,
                &LeidenConfig {
                    resolution: 0.0,
                    ..Default::default()
                }
            )
            .is_err()
        );
    }

    fn cases() -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(48)
    }

    fn random_graph() -> impl Strategy<Value = Graph> {
        (1usize..50).prop_flat_map(|n| {
            let w = prop_oneof![
                Just(0.0),
                Just(0.5),
                Just(1.0),
                Just(1.0),
                Just(2.0),
                Just(3.25)
            ];
            vec((0..n as u32, 0..n as u32, w), 0..160)
                .prop_map(move |edges| Graph::from_edges(n, &edges).unwrap())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        /// The gains booked by local moving, across all aggregation levels of an iteration, add
        /// up to the from-scratch quality difference on the original graph.
        #[test]
        fn incremental_gain_equals_from_scratch_quality(
            g in random_graph(),
            cpm in any::<bool>(),
            louvain in any::<bool>(),
            resolution in 0.05f64..2.0,
            seed in any::<u64>(),
        ) {
            let n = g.num_nodes();
            let m = g.total_weight();
            prop_assume!(m > 0.0);
            let (weights, lambda) = if cpm {
                (vec![1.0; n], resolution)
            } else {
                (g.weighted_degrees().to_vec(), resolution / (2.0 * m))
            };
            let config = LeidenConfig {
                algorithm: if louvain { Algorithm::Louvain } else { Algorithm::Leiden },
                seed,
                ..LeidenConfig::default()
            };
            let mut membership: Vec<u32> = (0..n as u32).collect();
            for it in 0..3 {
                let before = quality::raw_quality(&g, &membership, &weights, lambda);
                let scale = if cpm { 1.0 } else { 1.0 / m };
                let (next, gain) =
                    iterate(&g, &weights, lambda, membership, None, &config, it, scale, None);
                let after = quality::raw_quality(&g, &next, &weights, lambda);
                prop_assert!(gain >= 0.0);
                let scale = 1.0 + g.total_weight() + before.abs();
                prop_assert!((after - before - gain).abs() <= 1e-9 * scale,
                    "from scratch {} vs incremental {}", after - before, gain);
                membership = next;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        /// A warm start's bookkeeping holds too (only part of the nodes queued, unchanged
        /// communities aggregated whole), and it never ends below the quality it started from.
        #[test]
        fn warm_start_gain_is_exact_and_never_lowers_the_quality(
            g in random_graph(),
            louvain in any::<bool>(),
            labels in vec(0u32..8, 50),
            queued in any::<u64>(),
            held in any::<u64>(),
            stickiness in 0.0f64..1.0,
            seed in any::<u64>(),
        ) {
            let n = g.num_nodes();
            let m = g.total_weight();
            prop_assume!(m > 0.0);
            let weights = g.weighted_degrees().to_vec();
            let lambda = 1.0 / (2.0 * m);
            let config = LeidenConfig {
                algorithm: if louvain { Algorithm::Louvain } else { Algorithm::Leiden },
                seed,
                stickiness,
                ..LeidenConfig::default()
            };
            let sticky: Vec<bool> = (0..n).map(|v| (held >> (v % 64)) & 1 == 1).collect();
            let mut start: Vec<u32> = labels[..n].to_vec();
            renumber(&mut start);
            let frontier: Vec<bool> = (0..n).map(|v| (queued >> (v % 64)) & 1 == 1).collect();
            let before = quality::raw_quality(&g, &start, &weights, lambda);
            let (next, gain) =
                iterate(&g, &weights, lambda, start.clone(), Some(&frontier), &config, 0, 1.0 / m, Some(&sticky));
            let after = quality::raw_quality(&g, &next, &weights, lambda);
            prop_assert!(gain >= 0.0);
            prop_assert!((after - before - gain).abs() <= 1e-9 * (1.0 + m + before.abs()));
            let warm = WarmStart { membership: start.clone(), frontier };
            let p = leiden_warm(&g, &config, &warm).unwrap();
            let q0 = quality::modularity(&g, &start, 1.0);
            prop_assert!(p.quality >= q0 - 1e-9, "{} < {}", p.quality, q0);
            prop_assert!(components::split_disconnected(&g, &mut p.membership.clone()) == p.num_communities);
        }
    }

    /// A graph of `k` dense groups of `size` nodes with sparse links between them, drawn
    /// deterministically from `seed` (a planted partition).
    fn planted(k: u32, size: u32, seed: u64) -> Vec<(u32, u32, f64)> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = k * size;
        let mut edges = Vec::new();
        for u in 0..n {
            for v in u + 1..n {
                let p = if u / size == v / size { 30 } else { 1 };
                if next() % 100 < p {
                    edges.push((u, v, 1.0));
                }
            }
        }
        edges
    }

    #[test]
    fn warm_start_with_an_empty_frontier_returns_its_start() {
        let g = Graph::from_edges(400, &planted(20, 20, 7)).unwrap();
        let cold = leiden(&g, &LeidenConfig::default()).unwrap();
        let warm = WarmStart {
            membership: cold.membership.clone(),
            frontier: vec![false; 400],
        };
        let again = leiden_warm(&g, &LeidenConfig::default(), &warm).unwrap();
        assert_eq!(again.membership, cold.membership);
        assert_eq!(again.quality, cold.quality);
    }

    #[test]
    fn warm_start_keeps_the_communities_a_change_does_not_reach() {
        // Ten cliques in a ring; then an eleventh clique hangs off node 0. Only the new nodes
        // and node 0 (whose degree changed) are on the frontier.
        let g = ring_of_cliques(10, 6);
        let cold = leiden(&g, &LeidenConfig::default()).unwrap();
        let mut edges: Vec<(u32, u32, f64)> = (0..60u32)
            .flat_map(|u| g.neighbors(u).map(move |(v, w)| (u, v, w)))
            .filter(|e| e.0 < e.1)
            .collect();
        for i in 60..66u32 {
            for j in i + 1..66 {
                edges.push((i, j, 1.0));
            }
        }
        edges.push((0, 60, 1.0));
        let grown = Graph::from_edges(66, &edges).unwrap();
        let mut membership = cold.membership.clone();
        membership.extend(100..106);
        let mut frontier = vec![false; 66];
        frontier[0] = true;
        frontier[60..].fill(true);
        let warm = WarmStart {
            membership,
            frontier,
        };
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let p = pool
                .install(|| leiden_warm(&grown, &LeidenConfig::default(), &warm))
                .unwrap();
            assert_eq!(&p.membership[..60], &cold.membership[..]);
            assert!(
                p.membership[60..].iter().all(|&c| c == 10),
                "{:?}",
                p.membership
            );
        }
    }

    /// Two 5-cliques, A (nodes 0–4) and B (5–9), and node 10 that started in A with `to_a`
    /// edges into A and `to_b` into B; node 11 is new, linked to B by two edges. Node 10's
    /// community after a warm start with only nodes 10 and 11 on the frontier, and node 11's.
    fn torn_node(to_a: u32, to_b: u32, stickiness: f64) -> (u32, u32) {
        let mut edges = Vec::new();
        for base in [0u32, 5] {
            for i in base..base + 5 {
                for j in i + 1..base + 5 {
                    edges.push((i, j, 1.0));
                }
            }
        }
        edges.extend((0..to_a).map(|i| (10, i, 1.0)));
        edges.extend((0..to_b).map(|i| (10, 5 + i, 1.0)));
        edges.extend([(11, 8, 1.0), (11, 9, 1.0)]);
        let g = Graph::from_edges(12, &edges).unwrap();
        let mut membership = vec![0u32; 12];
        membership[5..10].fill(1);
        membership[11] = 2;
        let mut frontier = vec![false; 12];
        frontier[10] = true;
        frontier[11] = true;
        let config = LeidenConfig {
            stickiness,
            ..LeidenConfig::default()
        };
        let p = leiden_warm(
            &g,
            &config,
            &WarmStart {
                membership,
                frontier,
            },
        )
        .unwrap();
        let (a, b) = (p.membership[0], p.membership[5]);
        assert!(p.membership[..5].iter().all(|&c| c == a));
        assert!(p.membership[5..10].iter().all(|&c| c == b));
        let side = |c: u32| {
            if c == a {
                0
            } else if c == b {
                1
            } else {
                2
            }
        };
        (side(p.membership[10]), side(p.membership[11]))
    }

    #[test]
    fn stickiness_holds_a_node_a_small_change_tips_and_frees_one_a_large_change_moves() {
        // 3 edges to A, 4 to B: moving to B gains 0.87 edge weight, under 0.2 × 7.
        assert_eq!(torn_node(3, 4, 0.0), (1, 1));
        assert_eq!(torn_node(3, 4, 0.2), (0, 1));
        // 1 edge to A, 5 to B: moving gains 3.5, above 0.2 × 6.
        assert_eq!(torn_node(1, 5, 0.2), (1, 1));
        // A new node joins whatever the stickiness.
        assert_eq!(torn_node(3, 4, 5.0).1, 1);
    }

    #[test]
    fn warm_start_on_a_changed_graph_is_deterministic_and_close_to_a_cold_run() {
        let before = planted(25, 40, 3);
        let cold = leiden(
            &Graph::from_edges(1000, &before).unwrap(),
            &LeidenConfig::default(),
        )
        .unwrap();
        // Drop every 50th edge and add a few between groups.
        let mut after: Vec<(u32, u32, f64)> = before
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 50 != 0)
            .map(|(_, &e)| e)
            .collect();
        after.extend((0..20u32).map(|i| (i * 7, (i * 7 + 333) % 1000, 1.0)));
        let g = Graph::from_edges(1000, &after).unwrap();
        let old = Graph::from_edges(1000, &before).unwrap();
        let frontier: Vec<bool> = (0..1000u32)
            .map(|v| (g.weighted_degree(v) - old.weighted_degree(v)).abs() > 0.0)
            .collect();
        let warm = WarmStart {
            membership: cold.membership.clone(),
            frontier,
        };
        let runs: Vec<Partition> = [1, 2, 4]
            .iter()
            .map(|&t| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap()
                    .install(|| leiden_warm(&g, &LeidenConfig::default(), &warm).unwrap())
            })
            .collect();
        assert!(runs.windows(2).all(|w| w[0] == w[1]));
        let fresh = leiden(&g, &LeidenConfig::default()).unwrap();
        assert!(
            runs[0].quality >= fresh.quality - 0.005,
            "warm {} vs cold {}",
            runs[0].quality,
            fresh.quality
        );
        let kept = changed_nodes(&cold.membership, &runs[0].membership)
            .iter()
            .filter(|c| !**c)
            .count();
        assert!(kept >= 900, "{kept} of 1000 nodes kept their community");
    }

    #[test]
    fn config_serde_fills_defaults() {
        let c: LeidenConfig =
            serde_json::from_str(r#"{"objective": "cpm", "resolution": 0.05}"#).unwrap();
        assert_eq!(c.objective, Objective::Cpm);
        assert_eq!(c.resolution, 0.05);
        assert_eq!(c.max_cluster_size, LeidenConfig::default().max_cluster_size);
        let back: LeidenConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn parse_objective_and_algorithm() {
        assert_eq!("CPM".parse::<Objective>().unwrap(), Objective::Cpm);
        assert_eq!(
            "modularity".parse::<Objective>().unwrap(),
            Objective::Modularity
        );
        assert_eq!("louvain".parse::<Algorithm>().unwrap(), Algorithm::Louvain);
        assert!("x".parse::<Objective>().is_err());
        assert!("x".parse::<Algorithm>().is_err());
    }
}
