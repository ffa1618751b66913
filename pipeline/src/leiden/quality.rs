//! Quality functions computed from scratch: the oracles for the incremental bookkeeping of the
//! optimiser.
//!
//! Both are written in terms of the internal weight `w_c` of a community (the sum of the weights of
//! the edges with both ends in `c`, each edge once, self-loops once) and:
//!
//! * modularity: `Q = (1/2m) Σ_c (2·w_c − γ·K_c² / (2m))`, with `K_c` the sum of the weighted
//!   degrees of `c` and `m` the total edge weight. A self-loop of weight `w` counts `2w` in the
//!   degree and in `2·w_c`, which is igraph's convention (`A_ii = 2w`). Newman & Girvan (2004), with
//!   the resolution of Reichardt & Bornholdt (2006).
//! * CPM, the constant Potts model of Traag, Van Dooren & Nesterov (2011):
//!   `H = Σ_c (w_c − γ·n_c·(n_c − 1)/2)`, with `n_c` the number of nodes of `c`; it equals
//!   leidenalg's `CPMVertexPartition.quality()` on unit node weights.
//!
//! Internally the optimiser maximises the "raw" quality `Σ_c (w_c − (λ/2)·S_c²)` over node weights
//! `s_v` (degrees, or sizes for CPM) with `λ = γ/(2m)` (modularity) or `λ = γ` (CPM); the functions
//! here convert it to the published scales.

use rayon::prelude::*;

use super::Objective;
use crate::graph::csr::chunked_sum;
use crate::graph::{Graph, with_row};

/// Modularity of `membership` on `graph` at resolution `γ = resolution` (igraph's definition,
/// self-loops counted twice in degrees and internal weight).
///
/// Labels are arbitrary `u32` values (they need not be dense); memory is proportional to the
/// largest label. Returns `0.0` for a graph without edges (igraph returns NaN there).
///
/// # Panics
/// When `membership.len() != graph.num_nodes()`.
///
/// # Complexity
/// Time **O(|V| + |E|)**, parallel over nodes; auxiliary space **O(max label)**.
///
/// # Determinism
/// The value does not depend on the thread count (fixed-chunk sums).
///
/// # Examples
/// ```
/// use agrag_pipeline::graph::Graph;
/// use agrag_pipeline::leiden::quality::modularity;
/// // Two triangles joined by one edge.
/// let g = Graph::from_edges(6, &[(0,1,1.0),(1,2,1.0),(0,2,1.0),(3,4,1.0),(4,5,1.0),(3,5,1.0),(2,3,1.0)])?;
/// let q = modularity(&g, &[0, 0, 0, 1, 1, 1], 1.0);
/// assert!((q - 5.0 / 14.0).abs() < 1e-12);
/// # Ok::<(), agrag_pipeline::PipelineError>(())
/// ```
#[track_caller]
pub fn modularity(graph: &Graph, membership: &[u32], resolution: f64) -> f64 {
    let m = graph.total_weight();
    if m <= 0.0 {
        return 0.0;
    }
    let lambda = resolution / (2.0 * m);
    raw_quality(graph, membership, graph.weighted_degrees(), lambda) / m
}

/// CPM quality `Σ_c (w_c − γ·n_c·(n_c − 1)/2)` of `membership` on `graph`, with unit node weights.
///
/// # Panics
/// When `membership.len() != graph.num_nodes()`.
///
/// # Complexity
/// Time **O(|V| + |E|)**; auxiliary space **O(max label)**.
///
/// # Determinism
/// The value does not depend on the thread count.
///
/// # Examples
/// ```
/// use agrag_pipeline::graph::Graph;
/// use agrag_pipeline::leiden::quality::cpm;
/// let g = Graph::from_edges(3, &[(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0)])?;
/// // One triangle: 3 internal edges − 0.5 · 3 pairs.
/// assert_eq!(cpm(&g, &[0, 0, 0], 0.5), 1.5);
/// # Ok::<(), agrag_pipeline::PipelineError>(())
/// ```
#[track_caller]
pub fn cpm(graph: &Graph, membership: &[u32], resolution: f64) -> f64 {
    let sizes = vec![1.0; graph.num_nodes()];
    cpm_weighted(graph, membership, &sizes, resolution)
}

/// The quality of `membership` under `objective` at `resolution`: [`modularity`] or [`cpm`].
///
/// # Panics
/// When `membership.len() != graph.num_nodes()`.
#[track_caller]
pub fn quality(graph: &Graph, membership: &[u32], objective: Objective, resolution: f64) -> f64 {
    match objective {
        Objective::Modularity => modularity(graph, membership, resolution),
        Objective::Cpm => cpm(graph, membership, resolution),
    }
}

/// CPM with node sizes `sizes` (a node of an aggregate graph stands for `sizes[v]` nodes).
#[track_caller]
pub(crate) fn cpm_weighted(
    graph: &Graph,
    membership: &[u32],
    sizes: &[f64],
    resolution: f64,
) -> f64 {
    let n_total = chunked_sum(sizes);
    raw_quality(graph, membership, sizes, resolution) + resolution * n_total / 2.0
}

/// `Σ_c (w_c − (λ/2)·S_c²)` with `S_c = Σ_{v ∈ c} node_weights[v]`.
#[track_caller]
pub(crate) fn raw_quality(
    graph: &Graph,
    membership: &[u32],
    node_weights: &[f64],
    lambda: f64,
) -> f64 {
    assert_eq!(
        membership.len(),
        graph.num_nodes(),
        "membership has {} entries for a graph of {} nodes",
        membership.len(),
        graph.num_nodes()
    );
    let n = graph.num_nodes();
    if n == 0 {
        return 0.0;
    }
    // Internal weight, each non-loop edge seen from both ends.
    const CHUNK: usize = 1 << 12;
    let internal: Vec<f64> = (0..n)
        .into_par_iter()
        .chunks(CHUNK)
        .map(|nodes| {
            let mut acc = 0.0;
            for v in nodes {
                let c = membership[v];
                let row = with_row!(graph.row(v as u32), |ts, ws| {
                    weight_into(ts, ws, membership, c)
                });
                acc += 0.5 * row + graph.self_loop_weight(v as u32);
            }
            acc
        })
        .collect();
    let internal: f64 = internal.iter().sum();
    let max_label = membership.iter().copied().max().unwrap_or(0) as usize;
    let mut totals = vec![0.0f64; max_label + 1];
    for (v, &c) in membership.iter().enumerate() {
        totals[c as usize] += node_weights[v];
    }
    let penalty: f64 = totals.iter().map(|s| s * s).sum();
    internal - 0.5 * lambda * penalty
}

/// Weight from a row `ts` / `ws` to the nodes labelled `c`, summed in row order.
#[inline]
fn weight_into<W: Copy + Into<f64>>(ts: &[u32], ws: &[W], membership: &[u32], c: u32) -> f64 {
    let mut row = 0.0;
    for (&u, &w) in ts.iter().zip(ws) {
        if membership[u as usize] == c {
            row += w.into();
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_triangles() -> Graph {
        Graph::from_edges(
            6,
            &[
                (0, 1, 1.0),
                (1, 2, 1.0),
                (0, 2, 1.0),
                (3, 4, 1.0),
                (4, 5, 1.0),
                (3, 5, 1.0),
                (2, 3, 1.0),
            ],
        )
        .unwrap()
    }

    #[test]
    fn modularity_matches_hand_computation() {
        let g = two_triangles();
        // m = 7; each triangle: w_c = 3, K_c = 7.
        let q = modularity(&g, &[0, 0, 0, 1, 1, 1], 1.0);
        assert!((q - (2.0 * (3.0 / 7.0 - 49.0 / 196.0))).abs() < 1e-12);
        // One community: 1 - 1 = 0.
        assert!(modularity(&g, &[0; 6], 1.0).abs() < 1e-12);
        // Labels need not be dense.
        assert_eq!(
            modularity(&g, &[0, 0, 0, 1, 1, 1], 1.0),
            modularity(&g, &[9, 9, 9, 4, 4, 4], 1.0)
        );
    }

    #[test]
    fn modularity_counts_self_loops_twice() {
        // One edge {0,1} of weight 1 and a self-loop of weight 1 at 0: m = 2, k0 = 3, k1 = 1.
        let g = Graph::from_edges(2, &[(0, 1, 1.0), (0, 0, 1.0)]).unwrap();
        // Singletons: (1/4) [(2 - 9/4) + (0 - 1/4)] = -1/8.
        assert!((modularity(&g, &[0, 1], 1.0) + 0.125).abs() < 1e-12);
    }

    #[test]
    fn cpm_matches_hand_computation() {
        let g = two_triangles();
        assert_eq!(cpm(&g, &[0, 0, 0, 1, 1, 1], 1.0), 0.0);
        assert_eq!(cpm(&g, &[0, 0, 0, 1, 1, 1], 0.5), 3.0);
        assert_eq!(cpm(&g, &[0, 1, 2, 3, 4, 5], 0.5), 0.0);
        assert_eq!(cpm(&g, &[0; 6], 0.1), 7.0 - 1.5);
    }

    #[test]
    fn empty_graph_has_zero_quality() {
        let g = Graph::from_edges(3, &[]).unwrap();
        assert_eq!(modularity(&g, &[0, 1, 2], 1.0), 0.0);
        assert_eq!(cpm(&g, &[0, 0, 0], 1.0), -3.0);
        let g = Graph::from_edges(0, &[]).unwrap();
        assert_eq!(modularity(&g, &[], 1.0), 0.0);
    }
}
