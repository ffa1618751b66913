//! Aggregation (Traag, Waltman & van Eck 2019, Algorithm A.2 `AggregateGraph`): one node per
//! (refined) community, edge weights summed, internal weight kept as a self-loop.

use std::cell::RefCell;

use rayon::prelude::*;

use super::local_moving::Accumulator;
use crate::graph::Graph;

/// Aggregate nodes per parallel task.
const NODES_PER_TASK: usize = 512;

thread_local! {
    static ACC: RefCell<Accumulator> = RefCell::new(Accumulator::default());
}

/// The aggregate rows of a run of consecutive communities.
struct Chunk {
    /// Row length of each community.
    lens: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
    self_loops: Vec<f64>,
}

/// Groups nodes by `labels` (dense `0..k`): returns `offsets` (`k + 1`) and the nodes of each label
/// in ascending order (`members[offsets[c]..offsets[c + 1]]`). Counting sort, **O(n + k)**.
pub(crate) fn group_by_label(labels: &[u32], k: usize) -> (Vec<usize>, Vec<u32>) {
    let mut offsets = vec![0usize; k + 1];
    for &c in labels {
        offsets[c as usize + 1] += 1;
    }
    for c in 0..k {
        offsets[c + 1] += offsets[c];
    }
    let mut cursor = offsets[..k].to_vec();
    let mut members = vec![0u32; labels.len()];
    for (v, &c) in labels.iter().enumerate() {
        members[cursor[c as usize]] = v as u32;
        cursor[c as usize] += 1;
    }
    (offsets, members)
}

/// Renumbers `labels` densely in order of first appearance; returns the number of labels.
pub(crate) fn renumber(labels: &mut [u32]) -> usize {
    let bound = labels.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut map = vec![u32::MAX; bound];
    let mut next = 0u32;
    for l in labels.iter_mut() {
        let slot = &mut map[*l as usize];
        if *slot == u32::MAX {
            *slot = next;
            next += 1;
        }
        *l = *slot;
    }
    next as usize
}

/// The graph of the communities `labels` (dense `0..k`) of `graph`: node `c` stands for the nodes
/// labelled `c`, the weight between two communities is the sum of the weights between them, and
/// the self-loop of `c` is its internal weight (each edge once, self-loops included). Weighted
/// degrees and the total weight are preserved.
///
/// Parallel over communities; weights are summed in a fixed order (members ascending, rows in CSR
/// order), so the result does not depend on the thread count.
pub(crate) fn aggregate(graph: &Graph, labels: &[u32], k: usize) -> Graph {
    let (offsets, members) = group_by_label(labels, k);
    let parts: Vec<Chunk> = (0..k)
        .into_par_iter()
        .chunks(NODES_PER_TASK)
        .map(|chunk| {
            ACC.with(|cell| {
                let acc = &mut *cell.borrow_mut();
                acc.ensure(k);
                let mut lens = Vec::with_capacity(chunk.len());
                let mut targets = Vec::new();
                let mut weights = Vec::new();
                let mut loops = Vec::with_capacity(chunk.len());
                for c in chunk {
                    let mut self_loop = 0.0;
                    let mut internal = 0.0;
                    for &v in &members[offsets[c]..offsets[c + 1]] {
                        self_loop += graph.self_loop_weight(v);
                        let (ts, ws) = graph.row(v);
                        for (&u, &w) in ts.iter().zip(ws) {
                            let d = labels[u as usize];
                            if d as usize == c {
                                internal += w;
                            } else {
                                acc.add(d, w);
                            }
                        }
                    }
                    acc.touched.sort_unstable();
                    lens.push(acc.touched.len());
                    for &d in &acc.touched {
                        targets.push(d);
                        weights.push(acc.weights[d as usize]);
                    }
                    acc.clear();
                    loops.push(self_loop + 0.5 * internal);
                }
                Chunk {
                    lens,
                    targets,
                    weights,
                    self_loops: loops,
                }
            })
        })
        .collect();
    let total: usize = parts.iter().map(|p| p.targets.len()).sum();
    let mut csr_offsets = Vec::with_capacity(k + 1);
    csr_offsets.push(0usize);
    let mut targets = Vec::with_capacity(total);
    let mut weights = Vec::with_capacity(total);
    let mut self_loops = Vec::with_capacity(k);
    for part in parts {
        for len in part.lens {
            let last = *csr_offsets.last().unwrap_or(&0);
            csr_offsets.push(last + len);
        }
        targets.extend_from_slice(&part.targets);
        weights.extend_from_slice(&part.weights);
        self_loops.extend_from_slice(&part.self_loops);
    }
    Graph::from_csr_parts(csr_offsets, targets, weights, self_loops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leiden::quality::{cpm, cpm_weighted, modularity};

    #[test]
    fn aggregation_preserves_quality() {
        let g = Graph::from_edges(
            7,
            &[
                (0, 1, 1.0),
                (1, 2, 2.0),
                (0, 2, 1.0),
                (3, 4, 1.0),
                (4, 5, 0.5),
                (3, 5, 1.0),
                (2, 3, 1.0),
                (6, 6, 2.0),
                (5, 6, 1.0),
            ],
        )
        .unwrap();
        let labels = vec![0, 0, 1, 2, 2, 1, 3];
        let agg = aggregate(&g, &labels, 4);
        assert!((agg.total_weight() - g.total_weight()).abs() < 1e-12);
        let sizes = [2.0, 2.0, 2.0, 1.0];
        for part in [[0u32, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 2, 3]] {
            let flat: Vec<u32> = labels.iter().map(|&l| part[l as usize]).collect();
            let (a, b) = (modularity(&g, &flat, 1.0), modularity(&agg, &part, 1.0));
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
            let (a, b) = (cpm(&g, &flat, 0.3), cpm_weighted(&agg, &part, &sizes, 0.3));
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn renumber_by_first_appearance() {
        let mut l = vec![5, 5, 2, 7, 2];
        assert_eq!(renumber(&mut l), 3);
        assert_eq!(l, vec![0, 0, 1, 2, 1]);
    }
}
