//! Hierarchical Leiden, as GraphRAG calls it (graspologic's `hierarchical_leiden`): communities
//! that are too large are split recursively by Leiden runs on their induced subgraphs.
//!
//! # When a leaf stays larger than `max_cluster_size`
//!
//! `max_cluster_size` is a request to split, not a cap. A community larger than it is split by
//! a Leiden run on its induced subgraph; when that run returns one community, there is no
//! split that improves the quality function, and the community stays whole as a leaf. That is
//! the case of a star (a hub and its leaves: moving any leaf out of the hub's community only
//! lowers modularity, so a 301-node star is one community of 301), of a clique, and of any
//! subgraph too dense to have a community structure at the configured resolution. Cutting such
//! a community arbitrarily would give communities that are not communities, so we keep it, as
//! graspologic does. A community at the last level `max_levels` allows is not split either.
//! Both kinds are counted in [`DetectionStats::oversized_leaves`] (the run summary, `--json`
//! and the run's manifest report it), so the limit is never exceeded silently; a higher
//! resolution or the CPM objective splits dense subgraphs further.

use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::aggregate::group_by_label;
use super::rng::{Purpose, derive};
use super::{LeidenConfig, WarmStart, quality, run, run_from};
use crate::error::Result;
use crate::graph::Graph;

/// One community of a [`Hierarchy`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Community {
    /// Dense id from 0, unique across levels; communities are ordered by level, then by parent,
    /// then by smallest member.
    pub id: u32,
    /// Depth: 0 is the coarsest level.
    pub level: u32,
    /// The community of level `level - 1` that this one splits; `None` at level 0.
    pub parent: Option<u32>,
    /// Ids of the communities of level `level + 1` that split this one (empty for a leaf).
    pub children: Vec<u32>,
    /// Node ids, sorted ascending.
    pub members: Vec<u32>,
    /// Whether the community is not split further.
    pub is_leaf: bool,
}

/// One row of the membership table: node `node` belongs to `community` at `level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MembershipRecord {
    /// Level of the community (0 = coarsest).
    pub level: u32,
    /// Node id.
    pub node: u32,
    /// Community id ([`Community::id`]).
    pub community: u32,
    /// Parent of that community (`None` at level 0).
    pub parent: Option<u32>,
    /// Whether that community is a leaf.
    pub is_leaf: bool,
}

/// Statistics of one level of a [`Hierarchy`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelStats {
    /// Level (0 = coarsest).
    pub level: u32,
    /// Number of communities at this level.
    pub communities: usize,
    /// Modularity (γ = 1) of the partition of all nodes at this depth: a node whose leaf lies above
    /// this level keeps its leaf community.
    pub modularity: f64,
    /// The configured objective (modularity or CPM at the configured resolution) of that same
    /// partition.
    pub quality: f64,
    /// Smallest community at this level, in nodes.
    pub size_min: usize,
    /// Median community size (lower median), in nodes.
    pub size_median: usize,
    /// 90th percentile of community sizes (nearest rank), in nodes.
    pub size_p90: usize,
    /// Largest community at this level, in nodes.
    pub size_max: usize,
    /// Leaf communities at this level.
    pub leaves: usize,
    /// Leiden runs that produced this level (1 at level 0, one per split community below).
    pub runs: usize,
    /// Leiden iterations of those runs, summed.
    pub iterations: usize,
    /// Wall-clock time spent on this level, in seconds.
    pub seconds: f64,
}

/// Statistics of a detection run, as printed by `detect-graph` and stored in run manifests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetectionStats {
    /// Nodes of the graph.
    pub num_nodes: usize,
    /// Distinct undirected edges, self-loops included.
    pub num_edges: usize,
    /// Sum of edge weights `m`.
    pub total_weight: f64,
    /// Nodes without an edge to another node; each is a singleton leaf community at level 0.
    pub isolates: usize,
    /// Communities of all levels.
    pub communities: usize,
    /// Leaf communities.
    pub leaves: usize,
    /// Leaf communities with more than `max_cluster_size` nodes: the ones whose Leiden run on
    /// their induced subgraph returned a single community (see the [module docs](self)), and
    /// the ones at the last level `max_levels` allows.
    pub oversized_leaves: usize,
    /// Of [`oversized_leaves`](Self::oversized_leaves), those left whole only because they
    /// sit at the last level `max_levels` allows.
    pub oversized_leaves_at_max_levels: usize,
    /// Size of the largest leaf community, in nodes (0 for an empty graph).
    pub largest_leaf: usize,
    /// Per level, coarsest first.
    pub levels: Vec<LevelStats>,
    /// Leiden iterations of all runs, summed.
    pub iterations: usize,
    /// Wall-clock time of the whole detection, in seconds.
    pub seconds: f64,
}

/// The communities of a hierarchical detection, with statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hierarchy {
    /// All communities, ordered by id (hence by level).
    pub communities: Vec<Community>,
    /// Statistics.
    pub stats: DetectionStats,
}

impl Hierarchy {
    /// The membership table: one row per node per level from 0 to the level of its leaf, sorted by
    /// `(level, node)`. Every node has exactly one row with `is_leaf = true`.
    ///
    /// # Complexity
    /// **O(R log R)** for R rows (at most `|V| · num_levels()`).
    pub fn membership(&self) -> Vec<MembershipRecord> {
        let mut rows: Vec<MembershipRecord> = self
            .communities
            .iter()
            .flat_map(|c| {
                c.members.iter().map(move |&node| MembershipRecord {
                    level: c.level,
                    node,
                    community: c.id,
                    parent: c.parent,
                    is_leaf: c.is_leaf,
                })
            })
            .collect();
        rows.par_sort_unstable_by_key(|r| (r.level, r.node));
        rows
    }

    /// Number of levels (0 for an empty graph).
    pub fn num_levels(&self) -> usize {
        self.communities
            .iter()
            .map(|c| c.level as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The communities of `level`, in id order.
    pub fn level(&self, level: u32) -> impl Iterator<Item = &Community> + '_ {
        self.communities.iter().filter(move |c| c.level == level)
    }

    /// The leaf community of each node.
    pub fn leaf_membership(&self, num_nodes: usize) -> Vec<u32> {
        let mut out = vec![u32::MAX; num_nodes];
        for c in self.communities.iter().filter(|c| c.is_leaf) {
            for &v in &c.members {
                out[v as usize] = c.id;
            }
        }
        out
    }
}

/// Runs hierarchical Leiden: level 0 is [`super::leiden`] on the whole graph (the coarsest
/// partition); every community with more than `config.max_cluster_size` nodes is split by a Leiden
/// run on its induced subgraph (same objective and resolution, modularity relative to the
/// subgraph), giving its children at the next level, recursively, up to `config.max_levels`
/// levels. A community that is small enough, or whose run returns a single community, or that
/// sits at the last level, is a leaf. This is the semantics of GraphRAG's
/// `hierarchical_leiden` (graspologic). Leaves larger than `max_cluster_size` (the last two
/// kinds) are counted in [`DetectionStats::oversized_leaves`]; see the [module docs](self).
///
/// Implements Traag, Waltman & van Eck (2019), <https://doi.org/10.1038/s41598-019-41695-z>.
///
/// # Returns
/// A [`Hierarchy`]: every community at every level is connected; every node has one community
/// per level from 0 to its leaf's level; isolated nodes are singleton leaves at level 0. An empty
/// graph gives no community.
///
/// # Errors
/// [`crate::PipelineError::InvalidConfig`] when `config` fails [`LeidenConfig::validate`].
///
/// # Complexity
/// * Time: **O(D·L·|E|)** per iteration for D levels; the splits of one level run in parallel.
/// * Auxiliary space: **O(|V| + |E|)**.
///
/// # Determinism
/// Each split runs with a seed derived from `config.seed` and the id of the community it splits,
/// so the hierarchy is identical for any Rayon thread count.
///
/// # Examples
/// ```
/// use agrag_pipeline::graph::Graph;
/// use agrag_pipeline::leiden::{hierarchical_leiden, LeidenConfig};
/// let g = Graph::from_edges(6, &[(0,1,1.0),(1,2,1.0),(0,2,1.0),(3,4,1.0),(4,5,1.0),(3,5,1.0),(2,3,1.0)])?;
/// let h = hierarchical_leiden(&g, &LeidenConfig::default())?;
/// assert_eq!(h.num_levels(), 1);
/// assert_eq!(h.communities[1].members, vec![3, 4, 5]);
/// assert_eq!(h.membership().len(), 6);
/// # Ok::<(), agrag_pipeline::PipelineError>(())
/// ```
pub fn hierarchical_leiden(graph: &Graph, config: &LeidenConfig) -> Result<Hierarchy> {
    hierarchical_leiden_warm(graph, config, None)
}

/// A previous hierarchy to warm-start [`hierarchical_leiden_warm`] from, by node of the new
/// graph.
#[derive(Debug, Clone, PartialEq)]
pub struct HierarchyWarmStart {
    /// `levels[l][v]`: node `v`'s previous community at level `l` (any label, unique across
    /// levels or not), [`NO_COMMUNITY`] when it had none (a new node, or its previous leaf sat
    /// above level `l`). Every inner vector has one entry per node.
    pub levels: Vec<Vec<u32>>,
    /// Whether each node is new (it has no previous counterpart), one entry per node.
    pub new: Vec<bool>,
    /// The edges that appeared, vanished or changed weight since the previous hierarchy was
    /// computed, as `(v, u)` in both directions, sorted and distinct; `u` is
    /// [`NO_COMMUNITY`] for an edge whose other endpoint no longer exists.
    pub changed_edges: Vec<(u32, u32)>,
}

impl HierarchyWarmStart {
    /// The nodes `v` has a changed edge with ([`NO_COMMUNITY`] for a vanished endpoint).
    fn changed_partners(&self, v: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.changed_edges.partition_point(|e| e.0 < v);
        self.changed_edges[start..]
            .iter()
            .take_while(move |e| e.0 == v)
            .map(|e| e.1)
    }

    /// The frontier of level 0: new nodes and the endpoints of changed edges.
    fn top_frontier(&self) -> Vec<bool> {
        let mut f = self.new.clone();
        for &(v, _) in &self.changed_edges {
            f[v as usize] = true;
        }
        f
    }
}

/// The label of a node without a previous community in [`HierarchyWarmStart::levels`].
pub const NO_COMMUNITY: u32 = u32::MAX;

/// Labels of `nodes` for a warm start: each node's previous label, and a label of its own for
/// a node without one (`NO_COMMUNITY`); dense from 0.
fn starting_labels(previous: impl Iterator<Item = u32>) -> Vec<u32> {
    starting_labels_by_key(previous.map(|l| (l != NO_COMMUNITY).then_some(u64::from(l))))
}

/// [`starting_labels`] over keys: nodes with the same key share a label, a node without one
/// (`None`) gets a label of its own; dense from 0, in order of first appearance.
fn starting_labels_by_key(previous: impl Iterator<Item = Option<u64>>) -> Vec<u32> {
    let mut ids: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    let mut next = 0u32;
    previous
        .map(|l| {
            let label = match l {
                None => next,
                Some(l) => *ids.entry(l).or_insert(next),
            };
            if label == next {
                next += 1;
            }
            label
        })
        .collect()
}

/// The warm start of the Leiden run that splits the community `members` (node ids of
/// `graph`; `is_member` tells them) of level `level`: each member's previous community one
/// level down, and the frontier of the community's induced subgraph, whose edges are what
/// the split sees. With `P` the previous community of `level` most members come from, a member
/// is on it when it has no previous community one level down, or did not come from `P`, or
/// an edge of it inside the community (or inside `P` before) changed, or a neighbour joined
/// the community from elsewhere or left `P` for elsewhere (its induced neighbourhood gained
/// or lost that edge).
fn split_warm_start(
    warm: &HierarchyWarmStart,
    graph: &Graph,
    level: usize,
    members: &[u32],
    is_member: impl Fn(u32) -> bool,
) -> Option<WarmStart> {
    let below = warm.levels.get(level + 1)?;
    let here = &warm.levels[level];
    let mut counts: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for &v in members {
        let l = here[v as usize];
        if l != NO_COMMUNITY {
            *counts.entry(l).or_default() += 1;
        }
    }
    // The plurality previous community; ties to the smaller label, for determinism.
    let main = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(&l, _)| l);
    let from_main = |u: u32| main.is_some_and(|m| here[u as usize] == m);
    // A member of `P` without a community one level down: `P` was a leaf (small enough, or
    // a split found nothing to split). Those members start together, as `P` was, so that an
    // unchanged leaf stays whole instead of being split afresh by another seed.
    let membership = starting_labels_by_key(members.iter().map(|&v| {
        let b = below[v as usize];
        if b != NO_COMMUNITY {
            Some(u64::from(b))
        } else if from_main(v) {
            Some(1 << 32)
        } else {
            None
        }
    }));
    let frontier = members
        .iter()
        .map(|&v| {
            below[v as usize] == NO_COMMUNITY
                || !from_main(v)
                || warm
                    .changed_partners(v)
                    .any(|u| u == NO_COMMUNITY || is_member(u) || from_main(u))
                || graph
                    .neighbors(v)
                    .any(|(u, _)| u != v && is_member(u) != from_main(u))
        })
        .collect();
    Some(WarmStart {
        membership,
        frontier,
    })
}

/// [`hierarchical_leiden`] warm-started from a previous hierarchy: level 0 starts from the
/// previous level 0 and the frontier ([`super::WarmStart`], after Sahu 2024,
/// <https://arxiv.org/abs/2405.11658>), and each split starts from the previous communities
/// one level down of the community's members. A community whose members, their previous
/// communities and their edges are unchanged gets its previous children back exactly;
/// `None` is a cold start, as [`hierarchical_leiden`].
///
/// # Errors
/// [`crate::PipelineError::InvalidConfig`] when `config` fails [`LeidenConfig::validate`] or
/// a vector of `warm` does not have one entry per node.
pub fn hierarchical_leiden_warm(
    graph: &Graph,
    config: &LeidenConfig,
    warm: Option<&HierarchyWarmStart>,
) -> Result<Hierarchy> {
    config.validate()?;
    let n = graph.num_nodes();
    if let Some(w) = warm
        && (w.new.len() != n
            || w.levels.iter().any(|l| l.len() != n)
            || w.changed_edges
                .iter()
                .any(|e| e.0 as usize >= n || (e.1 as usize >= n && e.1 != NO_COMMUNITY)))
    {
        return Err(crate::PipelineError::InvalidConfig {
            field: "warm_start",
            value: format!("{} new-node flags", w.new.len()),
            expected: "one previous label per node at each level, one new-node flag per node and changed edges between nodes",
        });
    }
    let warm = warm.filter(|w| !w.levels.is_empty());
    let start = Instant::now();
    let mut communities: Vec<Community> = Vec::new();
    let mut level_runs: Vec<(usize, usize, f64)> = Vec::new();
    if n > 0 {
        let top = match warm {
            None => run(graph, config),
            Some(w) => {
                let start = WarmStart {
                    membership: starting_labels(w.levels[0].iter().copied()),
                    frontier: w.top_frontier(),
                };
                run_from(graph, config, Some(&start))
            }
        };
        let (offsets, members) = group_by_label(&top.membership, top.num_communities);
        for c in 0..top.num_communities {
            communities.push(Community {
                id: c as u32,
                level: 0,
                parent: None,
                children: Vec::new(),
                members: members[offsets[c]..offsets[c + 1]].to_vec(),
                is_leaf: true,
            });
        }
        level_runs.push((1, top.iterations, start.elapsed().as_secs_f64()));
    }
    let mut frontier: Vec<u32> = split_candidates(&communities, 0, config);
    let mut owner = vec![u32::MAX; n];
    let mut local = vec![0u32; n];
    let mut level = 0u32;
    while !frontier.is_empty() {
        let level_start = Instant::now();
        for &id in &frontier {
            for (i, &v) in communities[id as usize].members.iter().enumerate() {
                owner[v as usize] = id;
                local[v as usize] = i as u32;
            }
        }
        let results: Vec<(Option<Vec<Vec<u32>>>, usize)> = frontier
            .par_iter()
            .map(|&id| {
                let members = &communities[id as usize].members;
                let sub = graph.induced_with_local(members, |u| {
                    (owner[u as usize] == id).then(|| local[u as usize])
                });
                let sub_config = LeidenConfig {
                    seed: derive(config.seed, Purpose::SubRun, &[u64::from(id)]),
                    ..config.clone()
                };
                let is_member = |u: u32| owner[u as usize] == id;
                let p = match warm
                    .and_then(|w| split_warm_start(w, graph, level as usize, members, is_member))
                {
                    Some(start) => run_from(&sub, &sub_config, Some(&start)),
                    None => run(&sub, &sub_config),
                };
                if p.num_communities <= 1 {
                    return (None, p.iterations);
                }
                let (offsets, locals) = group_by_label(&p.membership, p.num_communities);
                let children = (0..p.num_communities)
                    .map(|c| {
                        locals[offsets[c]..offsets[c + 1]]
                            .iter()
                            .map(|&l| members[l as usize])
                            .collect()
                    })
                    .collect();
                (Some(children), p.iterations)
            })
            .collect();
        level += 1;
        let iterations = results.iter().map(|r| r.1).sum();
        let runs = results.len();
        for (&parent, (children, _)) in frontier.iter().zip(results) {
            let Some(children) = children else { continue };
            for members in children {
                let id = communities.len() as u32;
                communities[parent as usize].children.push(id);
                communities[parent as usize].is_leaf = false;
                communities.push(Community {
                    id,
                    level,
                    parent: Some(parent),
                    children: Vec::new(),
                    members,
                    is_leaf: true,
                });
            }
        }
        level_runs.push((runs, iterations, level_start.elapsed().as_secs_f64()));
        frontier = split_candidates(&communities, level, config);
    }
    Ok(assemble(graph, communities, config, &level_runs, start))
}

impl Hierarchy {
    /// A hierarchy over `graph` from communities found elsewhere (a membership table, say),
    /// with the statistics a detection run reports: per-level modularity and quality under
    /// `config`, sizes, leaves, oversized leaves. Runs, iterations and seconds are 0.
    ///
    /// `communities` must already satisfy the invariants of [`Community`] (dense ids ordered
    /// by level, parent, smallest member; children and `is_leaf` consistent); the membership
    /// reader checks them before it calls this.
    pub fn from_communities(
        graph: &Graph,
        communities: Vec<Community>,
        config: &LeidenConfig,
    ) -> Hierarchy {
        let num_levels = communities.last().map_or(0, |c| c.level as usize + 1);
        let runs = vec![(0, 0, 0.0); num_levels];
        assemble(graph, communities, config, &runs, Instant::now())
    }
}

/// The hierarchy of `communities` with its statistics; `level_runs[l]` = (runs, iterations,
/// seconds) of level `l`, possibly one more than there are levels.
fn assemble(
    graph: &Graph,
    communities: Vec<Community>,
    config: &LeidenConfig,
    level_runs: &[(usize, usize, f64)],
    start: Instant,
) -> Hierarchy {
    let n = graph.num_nodes();
    let isolates = (0..n as u32).filter(|&v| graph.degree(v) == 0).count();
    // The last level may have no community at all (every split failed): drop its run record.
    let num_levels = communities.last().map_or(0, |c| c.level as usize + 1);
    let mut hierarchy = Hierarchy {
        communities,
        stats: DetectionStats {
            num_nodes: n,
            num_edges: graph.num_edges(),
            total_weight: graph.total_weight(),
            isolates,
            communities: 0,
            leaves: 0,
            oversized_leaves: 0,
            oversized_leaves_at_max_levels: 0,
            largest_leaf: 0,
            levels: Vec::new(),
            iterations: level_runs.iter().map(|r| r.1).sum(),
            seconds: 0.0,
        },
    };
    hierarchy.stats.levels = level_stats(
        graph,
        &hierarchy,
        config,
        &level_runs[..num_levels.min(level_runs.len())],
    );
    // Runs of a level that produced nothing still cost time: fold them into the last level.
    if level_runs.len() > num_levels && num_levels > 0 {
        let extra: f64 = level_runs[num_levels..].iter().map(|r| r.2).sum();
        let last = &mut hierarchy.stats.levels[num_levels - 1];
        last.seconds += extra;
    }
    hierarchy.stats.communities = hierarchy.communities.len();
    hierarchy.stats.leaves = hierarchy.communities.iter().filter(|c| c.is_leaf).count();
    for c in hierarchy.communities.iter().filter(|c| c.is_leaf) {
        let size = c.members.len();
        hierarchy.stats.largest_leaf = hierarchy.stats.largest_leaf.max(size);
        if size > config.max_cluster_size {
            hierarchy.stats.oversized_leaves += 1;
            if c.level as usize + 1 >= config.max_levels {
                hierarchy.stats.oversized_leaves_at_max_levels += 1;
            }
        }
    }
    hierarchy.stats.seconds = start.elapsed().as_secs_f64();
    hierarchy
}

/// Ids of the communities of `level` that must be split.
fn split_candidates(communities: &[Community], level: u32, config: &LeidenConfig) -> Vec<u32> {
    if level as usize + 1 >= config.max_levels {
        return Vec::new();
    }
    communities
        .iter()
        .filter(|c| c.level == level && c.members.len() > config.max_cluster_size)
        .map(|c| c.id)
        .collect()
}

/// Per-level statistics; `runs[l]` = (runs, iterations, seconds) of level `l`.
fn level_stats(
    graph: &Graph,
    hierarchy: &Hierarchy,
    config: &LeidenConfig,
    runs: &[(usize, usize, f64)],
) -> Vec<LevelStats> {
    let n = graph.num_nodes();
    let mut current = vec![0u32; n];
    let mut out = Vec::with_capacity(runs.len());
    for (l, &(num_runs, iterations, seconds)) in runs.iter().enumerate() {
        let mut sizes = Vec::new();
        let mut leaves = 0;
        for c in hierarchy.level(l as u32) {
            for &v in &c.members {
                current[v as usize] = c.id;
            }
            sizes.push(c.members.len());
            leaves += usize::from(c.is_leaf);
        }
        sizes.sort_unstable();
        let nearest_rank = |p: f64| -> usize {
            if sizes.is_empty() {
                return 0;
            }
            let rank = (p * sizes.len() as f64).ceil() as usize;
            sizes[rank.clamp(1, sizes.len()) - 1]
        };
        out.push(LevelStats {
            level: l as u32,
            communities: sizes.len(),
            modularity: quality::modularity(graph, &current, 1.0),
            quality: quality::quality(graph, &current, config.objective, config.resolution),
            size_min: sizes.first().copied().unwrap_or(0),
            size_median: nearest_rank(0.5),
            size_p90: nearest_rank(0.9),
            size_max: sizes.last().copied().unwrap_or(0),
            leaves,
            runs: num_runs,
            iterations,
            seconds,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leiden::tests::ring_of_cliques;

    #[test]
    fn a_warm_start_from_its_own_hierarchy_with_no_frontier_gives_it_back() {
        let g = ring_of_cliques(30, 5);
        let config = LeidenConfig {
            max_cluster_size: 6,
            ..LeidenConfig::default()
        };
        let cold = hierarchical_leiden(&g, &config).unwrap();
        assert_eq!(cold.num_levels(), 2);
        let mut levels = vec![vec![NO_COMMUNITY; g.num_nodes()]; cold.num_levels()];
        for r in cold.membership() {
            // Other labels than the ids: only equality matters.
            levels[r.level as usize][r.node as usize] = 1000 + r.community;
        }
        let warm = HierarchyWarmStart {
            levels,
            new: vec![false; g.num_nodes()],
            changed_edges: Vec::new(),
        };
        let again = hierarchical_leiden_warm(&g, &config, Some(&warm)).unwrap();
        assert_eq!(again.communities, cold.communities);
        let short = HierarchyWarmStart {
            levels: vec![Vec::new()],
            new: Vec::new(),
            changed_edges: Vec::new(),
        };
        assert!(hierarchical_leiden_warm(&g, &config, Some(&short)).is_err());
    }

    #[test]
    fn a_previous_leaf_starts_its_split_whole() {
        // Nodes 0–11 were one leaf of level 0 (nothing below); node 12 came from another
        // community and node 13 is new.
        let edges: Vec<(u32, u32, f64)> = (0..14u32)
            .flat_map(|u| (u + 1..14).map(move |v| (u, v, 1.0)))
            .collect();
        let g = Graph::from_edges(14, &edges).unwrap();
        let mut top = vec![7u32; 14];
        top[12] = 8;
        top[13] = NO_COMMUNITY;
        let warm = HierarchyWarmStart {
            levels: vec![top, vec![NO_COMMUNITY; 14]],
            new: (0..14).map(|v| v == 13).collect(),
            changed_edges: Vec::new(),
        };
        let members: Vec<u32> = (0..14).collect();
        let start = split_warm_start(&warm, &g, 0, &members, |_| true).unwrap();
        assert!(
            start.membership[..12]
                .iter()
                .all(|&l| l == start.membership[0])
        );
        let (m12, m13) = (start.membership[12], start.membership[13]);
        assert!(m12 != start.membership[0] && m13 != start.membership[0] && m12 != m13);
    }

    #[test]
    fn splits_large_communities_recursively() {
        // 30 cliques of 5: past the resolution limit, level 0 pairs up neighboring cliques, and
        // each pair (10 nodes) is split into its two cliques at level 1.
        let g = ring_of_cliques(30, 5);
        let config = LeidenConfig {
            max_cluster_size: 6,
            ..LeidenConfig::default()
        };
        let h = hierarchical_leiden(&g, &config).unwrap();
        assert_eq!(h.num_levels(), 2);
        for c in h.level(1) {
            assert_eq!(c.members.len(), 5, "{c:?}");
        }
        // Ids dense, ordered by level; parents and children consistent.
        for (i, c) in h.communities.iter().enumerate() {
            assert_eq!(c.id as usize, i);
            if let Some(p) = c.parent {
                let parent = &h.communities[p as usize];
                assert_eq!(parent.level + 1, c.level);
                assert!(parent.children.contains(&c.id));
                assert!(
                    c.members
                        .iter()
                        .all(|v| parent.members.binary_search(v).is_ok())
                );
            }
            assert_eq!(c.is_leaf, c.children.is_empty());
            assert!(c.is_leaf || c.members.len() > config.max_cluster_size);
            let child_total: usize = c
                .children
                .iter()
                .map(|&k| h.communities[k as usize].members.len())
                .sum();
            assert!(c.is_leaf || child_total == c.members.len());
        }
        assert!(h.communities.windows(2).all(|w| w[0].level <= w[1].level));
        // One leaf row per node.
        let rows = h.membership();
        let leaf_rows = rows.iter().filter(|r| r.is_leaf).count();
        assert_eq!(leaf_rows, g.num_nodes());
        assert!(
            rows.windows(2)
                .all(|w| (w[0].level, w[0].node) < (w[1].level, w[1].node))
        );
        // Statistics.
        assert_eq!(h.stats.levels.len(), h.num_levels());
        assert_eq!(h.stats.levels[0].runs, 1);
        assert_eq!(
            h.stats.leaves,
            h.communities.iter().filter(|c| c.is_leaf).count()
        );
    }

    /// A star has no split that raises modularity: Leiden on it returns one community, which
    /// stays a leaf larger than `max_cluster_size`, and is counted.
    #[test]
    fn an_unsplittable_star_is_counted_as_an_oversized_leaf() {
        let edges: Vec<(u32, u32, f64)> = (1..=300).map(|v| (0, v, 1.0)).collect();
        let g = Graph::from_edges(301, &edges).unwrap();
        let config = LeidenConfig::default();
        let h = hierarchical_leiden(&g, &config).unwrap();
        assert_eq!(h.communities.len(), 1, "{:?}", h.stats);
        assert_eq!(h.stats.oversized_leaves, 1);
        assert_eq!(h.stats.oversized_leaves_at_max_levels, 0);
        assert_eq!(h.stats.largest_leaf, 301);
        // Ring of cliques split to its cliques: no leaf above the limit.
        let ring = ring_of_cliques(30, 5);
        let config = LeidenConfig {
            max_cluster_size: 6,
            ..LeidenConfig::default()
        };
        let h = hierarchical_leiden(&ring, &config).unwrap();
        assert_eq!(h.stats.oversized_leaves, 0);
        assert_eq!(h.stats.largest_leaf, 5);
        // At the last level allowed, the pairs of cliques stay whole and are counted as such.
        let flat = LeidenConfig {
            max_levels: 1,
            ..config
        };
        let h = hierarchical_leiden(&ring, &flat).unwrap();
        assert!(h.stats.oversized_leaves > 0);
        assert_eq!(
            h.stats.oversized_leaves,
            h.stats.oversized_leaves_at_max_levels
        );
    }

    #[test]
    fn max_levels_one_gives_a_flat_hierarchy() {
        let g = ring_of_cliques(30, 5);
        let config = LeidenConfig {
            max_cluster_size: 6,
            max_levels: 1,
            ..LeidenConfig::default()
        };
        let h = hierarchical_leiden(&g, &config).unwrap();
        assert_eq!(h.num_levels(), 1);
        assert!(h.communities.iter().all(|c| c.is_leaf));
    }

    #[test]
    fn empty_graph_gives_no_community() {
        let g = Graph::from_edges(0, &[]).unwrap();
        let h = hierarchical_leiden(&g, &LeidenConfig::default()).unwrap();
        assert!(h.communities.is_empty());
        assert_eq!(h.num_levels(), 0);
        assert!(h.membership().is_empty());
        assert!(h.stats.levels.is_empty());
    }

    #[test]
    fn isolates_are_singleton_leaves() {
        let g = Graph::from_edges(5, &[(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0)]).unwrap();
        let h = hierarchical_leiden(&g, &LeidenConfig::default()).unwrap();
        assert_eq!(h.stats.isolates, 2);
        assert_eq!(h.communities.len(), 3);
        assert_eq!(h.communities[1].members, vec![3]);
        assert!(h.communities[2].is_leaf);
    }
}
