//! Aggregation (Traag, Waltman & van Eck 2019, Algorithm A.2 `AggregateGraph`): one node per
//! (refined) community, edge weights summed, internal weight kept as a self-loop.

use rayon::prelude::*;

use super::local_moving::{Accumulator, with_accumulator};
use crate::graph::csr::WeightStore;
use crate::graph::{Graph, with_row};

/// Parallel tasks of an aggregation (blocks of communities of about equal cost).
const BLOCKS: usize = 256;
/// Neighbour labels read ahead at a time.
const GATHER: usize = 32;
/// Fewest half-edges per task: below this a task costs more to schedule than to run.
const MIN_BLOCK_COST: usize = 1 << 14;

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
/// degrees and the total weight are preserved. Rows are in order of first appearance, not sorted.
///
/// Parallel over blocks of communities; weights are summed in a fixed order (members ascending,
/// rows in CSR order), so the result does not depend on the thread count.
///
/// Memory: the rows are written in place into arrays sized by an upper bound (the members' row
/// lengths, per block of communities) and stay there, with unused gaps after each block; the
/// gaps' pages are never written, so the resident cost is about the size of the result.
pub(crate) fn aggregate(graph: &Graph, labels: &[u32], k: usize) -> Graph {
    let (offsets, members) = group_by_label(labels, k);
    // Cost of each community: its members' row lengths, an upper bound of its entries.
    let cost: Vec<usize> = (0..k)
        .into_par_iter()
        .with_min_len(1024)
        .map(|c| {
            members[offsets[c]..offsets[c + 1]]
                .iter()
                .map(|&v| graph.degree(v))
                .sum()
        })
        .collect();
    // Blocks of consecutive communities of about equal cost, one block per task. (Blocks of a
    // fixed number of communities were uneven: the large communities hold the small labels.)
    // A community's row does not depend on the blocks, so neither does the result.
    let target = (cost.iter().sum::<usize>() / BLOCKS).max(MIN_BLOCK_COST);
    let mut starts = vec![0usize];
    let mut run = 0;
    for (c, &x) in cost.iter().enumerate() {
        run += x;
        if run >= target && c + 1 < k {
            starts.push(c + 1);
            run = 0;
        }
    }
    starts.push(k);
    let num_blocks = starts.len() - 1;
    let block_range = |b: usize| (starts[b], starts[b + 1]);
    let bounds: Vec<usize> = (0..num_blocks)
        .map(|b| {
            let (lo, hi) = block_range(b);
            cost[lo..hi].iter().sum()
        })
        .collect();
    drop(cost);
    let total_bound: usize = bounds.iter().sum();
    let blocks = Blocks {
        members: &members,
        offsets: &offsets,
        starts: &starts,
        bounds: &bounds,
    };
    // The weights of an integer-weighted graph's aggregate are integers up to its total weight:
    // exact in `f32` when that is at most 2^24, and half the memory.
    let (targets, weights, lens, self_loops) = if graph.sums_fit_f32() {
        let (t, w, l, s) = fill::<f32>(graph, labels, k, blocks, total_bound);
        (t, WeightStore::F32(w), l, s)
    } else {
        let (t, w, l, s) = fill::<f64>(graph, labels, k, blocks, total_bound);
        (t, WeightStore::F64(w), l, s)
    };
    // The rows stay where their blocks wrote them, with gaps between blocks: compacting them
    // would write into the gaps' pages while the later blocks' pages are still resident (about a
    // fifth more memory at the peak on lfr-1m-fast), and the gaps' pages are never written.
    let mut row_starts = Vec::with_capacity(k + 1);
    let mut row_ends = Vec::with_capacity(k);
    let mut region = 0;
    for (b, &bound) in bounds.iter().enumerate() {
        let (lo, hi) = block_range(b);
        let mut at = region;
        for &len in &lens[lo..hi] {
            row_starts.push(at);
            at += len;
            row_ends.push(at);
        }
        region += bound;
    }
    row_starts.push(region);
    drop(lens);
    Graph::from_gapped_parts(row_starts, row_ends, targets, weights, self_loops)
}

/// An aggregate's weight element: `f64`, or `f32` when every sum is exact in it.
trait Stored: Copy + Send + Sync + PartialEq + 'static {
    const ZERO: Self;
    fn from_sum(x: f64) -> Self;
}

impl Stored for f64 {
    const ZERO: f64 = 0.0;
    fn from_sum(x: f64) -> f64 {
        x
    }
}

impl Stored for f32 {
    const ZERO: f32 = 0.0;
    fn from_sum(x: f64) -> f32 {
        x as f32
    }
}

/// The communities grouped and cut into blocks of about equal cost.
#[derive(Clone, Copy)]
struct Blocks<'a> {
    /// Nodes of community `c`: `members[offsets[c]..offsets[c + 1]]`.
    members: &'a [u32],
    offsets: &'a [usize],
    /// Block `b` holds communities `starts[b]..starts[b + 1]`.
    starts: &'a [usize],
    /// Upper bound of the entries of each block (its members' row lengths).
    bounds: &'a [usize],
}

/// Writes the rows of the aggregate: targets and weights at the start of each block's region
/// (regions of `bounds` entries, back to back), each community's row length, and its self-loop.
fn fill<O: Stored>(
    graph: &Graph,
    labels: &[u32],
    k: usize,
    blocks: Blocks<'_>,
    total_bound: usize,
) -> (Vec<u32>, Vec<O>, Vec<usize>, Vec<f64>) {
    let Blocks {
        members,
        offsets,
        starts,
        bounds,
    } = blocks;
    // Zeroed allocations are lazily mapped: untouched pages cost no memory.
    let mut targets = vec![0u32; total_bound];
    let mut weights = vec![O::ZERO; total_bound];
    let mut lens = vec![0usize; k];
    let mut self_loops = vec![0.0f64; k];
    let mut jobs = Vec::with_capacity(bounds.len());
    {
        let (mut t_rest, mut w_rest) = (&mut targets[..], &mut weights[..]);
        let (mut l_rest, mut s_rest) = (&mut lens[..], &mut self_loops[..]);
        for (b, &bound) in bounds.iter().enumerate() {
            let (lo, hi) = (starts[b], starts[b + 1]);
            let (t, tr) = t_rest.split_at_mut(bound);
            let (w, wr) = w_rest.split_at_mut(bound);
            let (l, lr) = l_rest.split_at_mut(hi - lo);
            let (sl, sr) = s_rest.split_at_mut(hi - lo);
            jobs.push((lo, t, w, l, sl));
            (t_rest, w_rest, l_rest, s_rest) = (tr, wr, lr, sr);
        }
    }
    jobs.into_par_iter()
        .with_max_len(1)
        .for_each(|(lo, t, w, l, sl)| {
            with_accumulator(k, |acc| {
                let mut write = 0;
                for (i, (len, self_loop)) in l.iter_mut().zip(sl.iter_mut()).enumerate() {
                    let c = lo + i;
                    let mut own = 0.0;
                    let mut internal = 0.0;
                    let group = &members[offsets[c]..offsets[c + 1]];
                    acc.begin(group.iter().map(|&v| graph.degree(v)).sum());
                    for &v in group {
                        own += graph.self_loop_weight(v);
                        internal += with_row!(graph.row(v), |ts, ws| {
                            add_row(ts, ws, labels, c as u32, acc)
                        });
                    }
                    *len = acc.touched.len();
                    for (j, &d) in acc.touched.iter().enumerate() {
                        t[write] = d;
                        w[write] = O::from_sum(acc.value_at(j));
                        write += 1;
                    }
                    acc.clear();
                    *self_loop = own + 0.5 * internal;
                }
            });
        });
    (targets, weights, lens, self_loops)
}

/// Adds the row `ts` / `ws` to `acc` by label, except the entries labelled `c`, whose total
/// weight it returns.
#[inline]
fn add_row<W: Copy + Into<f64>>(
    ts: &[u32],
    ws: &[W],
    labels: &[u32],
    c: u32,
    acc: &mut Accumulator,
) -> f64 {
    let mut internal = 0.0;
    // Labels gathered in chunks by a loop without branches, so that their random loads overlap.
    let mut gathered = [0u32; GATHER];
    for (ts, ws) in ts.chunks(GATHER).zip(ws.chunks(GATHER)) {
        for (slot, &u) in gathered.iter_mut().zip(ts) {
            *slot = labels[u as usize];
        }
        for (&d, &x) in gathered.iter().zip(ws) {
            let x: f64 = x.into();
            if d == c {
                internal += x;
            } else {
                acc.add(d, x);
            }
        }
    }
    internal
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

    /// Many blocks, hence rows with gaps between blocks: every row, self-loop and degree matches
    /// a graph built edge by edge from the summed community pairs, with `f64` weights (some are
    /// fractional) and with `f32` ones (all are integers).
    #[test]
    fn gapped_aggregate_matches_the_summed_edges() {
        gapped_aggregate_matches(2.5, false);
        gapped_aggregate_matches(3.0, true);
    }

    fn gapped_aggregate_matches(heavy: f64, narrow: bool) {
        let n = 30_000u32;
        // A deterministic pseudo-random multigraph with weights 1 and 2.5.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let edges: Vec<(u32, u32, f64)> = (0..120_000)
            .map(|i| {
                let (u, v) = ((next() % n as u64) as u32, (next() % n as u64) as u32);
                (u, v, if i % 7 == 0 { heavy } else { 1.0 })
            })
            .collect();
        let g = Graph::from_edges(n as usize, &edges).unwrap();
        let labels: Vec<u32> = (0..n).map(|v| (v * 7919) % 9001).collect();
        let k = 9001;
        let agg = aggregate(&g, &labels, k);
        assert!(agg.row_ends_are_gapped(), "the test needs several blocks");
        assert_eq!(agg.weights_are_f32(), narrow);
        let summed: Vec<(u32, u32, f64)> = edges
            .iter()
            .map(|&(u, v, w)| (labels[u as usize], labels[v as usize], w))
            .collect();
        let expected = Graph::from_edges(k, &summed).unwrap();
        assert_eq!(agg.num_half_edges(), expected.num_half_edges());
        assert_eq!(agg.num_edges(), expected.num_edges());
        for c in 0..k as u32 {
            let mut row: Vec<(u32, f64)> = agg.neighbors(c).collect();
            row.sort_by_key(|&(d, _)| d);
            let want: Vec<(u32, f64)> = expected.neighbors(c).collect();
            assert_eq!(row.len(), want.len(), "row {c}");
            for (&(d, w), &(e, x)) in row.iter().zip(&want) {
                assert_eq!(d, e, "row {c}");
                assert_eq!(w, x, "row {c}");
            }
            assert!((agg.self_loop_weight(c) - expected.self_loop_weight(c)).abs() < 1e-9);
            assert!((agg.weighted_degree(c) - expected.weighted_degree(c)).abs() < 1e-9);
        }
        // Aggregating the gapped graph again (as the next level does) reads its rows alone.
        let pairs: Vec<u32> = (0..k as u32).map(|c| c / 2).collect();
        let again = aggregate(&agg, &pairs, k.div_ceil(2));
        let direct: Vec<u32> = labels.iter().map(|&c| c / 2).collect();
        let from_original = aggregate(&g, &direct, k.div_ceil(2));
        assert_eq!(again.num_half_edges(), from_original.num_half_edges());
        assert!((again.total_weight() - g.total_weight()).abs() < 1e-6);
    }

    #[test]
    fn renumber_by_first_appearance() {
        let mut l = vec![5, 5, 2, 7, 2];
        assert_eq!(renumber(&mut l), 3);
        assert_eq!(l, vec![0, 0, 1, 2, 1]);
    }
}
