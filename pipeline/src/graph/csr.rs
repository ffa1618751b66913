//! Weighted undirected graph in compressed sparse row (CSR) form.

use rayon::prelude::*;

use crate::error::{PipelineError, Result};

/// Largest integer up to which every integer is exact in `f32`.
const F32_EXACT: f64 = (1u32 << 24) as f64;

/// Storage of a CSR's weights.
#[derive(Debug, Clone)]
pub(crate) enum WeightStore {
    /// `f64` per entry (or the shared slice of ones of a unit-weight graph).
    F64(Vec<f64>),
    /// `f32` per entry, each an integer (the aggregates of a graph that [`Graph::sums_fit_f32`]).
    F32(Vec<f32>),
}

impl WeightStore {
    fn len(&self) -> usize {
        match self {
            WeightStore::F64(w) => w.len(),
            WeightStore::F32(w) => w.len(),
        }
    }
}

/// Evaluates `$body` with `$ts` / `$ws` bound to the neighbor ids and the weight slice of a row
/// from [`Graph::row`], whichever the weights' element type: `$body` is compiled once for `f64`
/// and once for `f32` weights, so a hot loop generic over `W: Copy + Into<f64>` runs without a
/// match per entry.
macro_rules! with_row {
    ($row:expr, |$ts:ident, $ws:ident| $body:expr) => {
        match $row {
            ($ts, $crate::graph::RowWeights::F64($ws)) => $body,
            ($ts, $crate::graph::RowWeights::F32($ws)) => $body,
        }
    };
}
pub(crate) use with_row;

/// The weights of one row of a [`Graph`], aligned with its neighbor ids: `f64`, or `f32` in the
/// optimiser's aggregate graphs of an integer-weighted graph (whose weights are then integers up
/// to 2^24, exact in `f32`). Hot loops match once per row and run generic over the element type
/// (`W: Copy + Into<f64>`); [`RowWeights::get`] reads one weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowWeights<'a> {
    /// `f64` weights.
    F64(&'a [f64]),
    /// `f32` weights, each an integer.
    F32(&'a [f32]),
}

impl RowWeights<'_> {
    /// The `i`-th weight.
    ///
    /// # Panics
    /// When `i` is past the row's end.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self {
            RowWeights::F64(w) => w[i],
            RowWeights::F32(w) => f64::from(w[i]),
        }
    }

    /// Number of weights (the row's length).
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            RowWeights::F64(w) => w.len(),
            RowWeights::F32(w) => w.len(),
        }
    }

    /// Whether the row is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Rows per parallel task when a CSR is sorted or scanned.
const ROWS_PER_TASK: usize = 4096;

/// A weighted undirected graph held in compressed sparse row (CSR) form.
///
/// Node ids are `u32` in `0..num_nodes()`. Every undirected edge `{u, v}` with `u != v` is stored
/// twice, once in the row of each end, with its neighbors sorted by id and each pair present once.
/// A self-loop `{u, u}` is not stored in the rows: its weight is kept apart
/// ([`Graph::self_loop_weight`]).
///
/// Memory: `8·(n+1)` bytes of offsets, `12` bytes per stored half-edge (`u32` id + `f64` weight),
/// and `16·n` bytes of self-loop weights and weighted degrees, i.e. about
/// `24·|E| + 24·|V|` bytes ([`Graph::size_bytes`]). A graph whose edge weights are all `1.0` (an
/// unweighted input) stores no weight per half-edge: its rows share one slice of ones as long as
/// the longest row, so it takes about `8·|E| + 24·|V|` bytes, and a sweep over its rows reads a
/// third of the memory. The optimiser's aggregate graphs of an integer-weighted graph whose
/// total weight is at most 2^24 store their weights as `f32` (exact: they are integers up to
/// that total), 8 bytes per half-edge instead of 12 ([`RowWeights`]).
///
/// Conventions follow igraph's modularity: a self-loop of weight `w` adds `2w` to the weighted
/// degree of its node and `w` to [`Graph::total_weight`].
#[derive(Debug, Clone)]
pub struct Graph {
    /// `offsets[u]..offsets[u + 1]` is the row of `u` in `targets` / `weights` (`offsets[u]` is
    /// only its start when `row_ends` is not empty).
    offsets: Vec<usize>,
    /// Empty for a compact CSR. Otherwise the end of each row: row `u` is
    /// `offsets[u]..row_ends[u]`, and the entries up to the next row's start are unused. Only the
    /// optimiser's aggregate graphs, written in place into regions sized by an upper bound, have
    /// such gaps; their pages are never written, so they cost address space but no memory.
    row_ends: Vec<usize>,
    /// Number of entries in the rows (all of `targets` for a compact CSR).
    half_edges: usize,
    /// Neighbor ids, sorted within each row.
    targets: Vec<u32>,
    /// Weights aligned with `targets`, all finite and `> 0`; when `unit_weights`, only
    /// `max degree` ones, shared by every row.
    weights: WeightStore,
    /// Whether every edge weight is `1.0` (`weights` is then the shared slice of ones).
    unit_weights: bool,
    /// Whether every edge weight is an integer.
    integral: bool,
    /// Self-loop weight of each node (`0.0` when it has none).
    self_loops: Vec<f64>,
    /// Weighted degree of each node: row sum plus twice the self-loop.
    degrees: Vec<f64>,
    /// Sum of the weights of the undirected edges, each counted once (self-loops included).
    total_weight: f64,
    /// Number of distinct undirected pairs, self-loops included.
    num_edges: usize,
}

/// Graphs are equal when they have the same nodes, rows (in order), self-loops and degrees,
/// however their rows are laid out in memory.
impl PartialEq for Graph {
    fn eq(&self, other: &Graph) -> bool {
        self.num_nodes() == other.num_nodes()
            && self.self_loops == other.self_loops
            && self.degrees == other.degrees
            && (0..self.num_nodes() as u32).all(|u| self.neighbors(u).eq(other.neighbors(u)))
    }
}

/// End of the row of `u` in the entry arrays: `offsets[u + 1]`, or `row_ends[u]` when the rows
/// have gaps between them (`row_ends` not empty).
#[inline]
fn row_end(offsets: &[usize], row_ends: &[usize], u: usize) -> usize {
    if row_ends.is_empty() {
        offsets[u + 1]
    } else {
        row_ends[u]
    }
}

impl Graph {
    /// Builds a graph on nodes `0..num_nodes` from undirected weighted edges `(u, v, w)`.
    ///
    /// # Input policy
    /// * Duplicate and reciprocal edges (`(u, v, a)` and `(v, u, b)`, in any order) are merged into
    ///   one edge of weight `a + b`.
    /// * A weight that is NaN, infinite or negative is an error naming the edge.
    /// * Zero weights are dropped (the edge does not exist).
    /// * A self-loop `(u, u, w)` is kept; following igraph's modularity convention it adds `2w`
    ///   to the weighted degree of `u` and `w` to [`Graph::total_weight`].
    /// * Nodes with no edge are allowed (isolates).
    ///
    /// # Errors
    /// * [`PipelineError::NodeOutOfRange`] when an end is `>= num_nodes` (checked first).
    /// * [`PipelineError::InvalidWeight`] for a NaN, infinite or negative weight, with the 0-based
    ///   index of the edge in `edges` and its ends.
    /// * [`PipelineError::InvalidConfig`] when `num_nodes` exceeds `u32::MAX` (ids are `u32`).
    ///
    /// # Complexity
    /// Time **O(|V| + |E| log d_max)** (rows are sorted; already sorted rows cost O(d)), rows sorted in
    /// parallel with Rayon; auxiliary space **O(|V|)** beyond the result.
    ///
    /// # Determinism
    /// The result does not depend on the thread count: merged weights are summed in input order.
    ///
    /// # Examples
    /// ```
    /// use agrag_pipeline::graph::Graph;
    /// let g = Graph::from_edges(3, &[(0, 1, 1.0), (1, 0, 2.0), (1, 2, 0.5), (2, 2, 1.0)])?;
    /// assert_eq!(g.num_edges(), 3); // {0,1} merged, {1,2}, and the self-loop {2,2}
    /// assert_eq!(g.weighted_degree(1), 3.5);
    /// assert_eq!(g.weighted_degree(2), 2.5); // 0.5 + 2 * 1.0
    /// assert_eq!(g.total_weight(), 4.5);
    /// # Ok::<(), agrag_pipeline::PipelineError>(())
    /// ```
    pub fn from_edges(num_nodes: usize, edges: &[(u32, u32, f64)]) -> Result<Graph> {
        if u32::try_from(num_nodes).is_err() {
            return Err(PipelineError::InvalidConfig {
                field: "num_nodes",
                value: num_nodes.to_string(),
                expected: "at most 4294967295 (node ids are u32)",
            });
        }
        for (index, &(u, v, _)) in edges.iter().enumerate() {
            for node in [u, v] {
                if node as usize >= num_nodes {
                    return Err(PipelineError::NodeOutOfRange {
                        index,
                        node: u64::from(node),
                        num_nodes,
                    });
                }
            }
        }
        for (index, &(u, v, w)) in edges.iter().enumerate() {
            if !w.is_finite() || w < 0.0 {
                return Err(PipelineError::InvalidWeight {
                    index,
                    source_node: u64::from(u),
                    target_node: u64::from(v),
                    weight: w,
                });
            }
        }
        let mut builder = CsrBuilder::new(num_nodes);
        for &(u, v, w) in edges {
            builder.count(u, v, w);
        }
        builder.allocate();
        for &(u, v, w) in edges {
            builder.place(u, v, w);
        }
        Ok(builder.finish())
    }

    /// Builds a graph from already validated parts; rows must be duplicate-free, without
    /// self-loops, symmetric, and weights finite and `> 0`. Rows should be sorted: only the
    /// internal aggregate graphs of the optimiser, which are never handed out, leave them unsorted.
    /// Degrees and totals are derived.
    pub(crate) fn from_csr_parts(
        offsets: Vec<usize>,
        targets: Vec<u32>,
        weights: Vec<f64>,
        self_loops: Vec<f64>,
    ) -> Graph {
        Graph::from_gapped_parts(
            offsets,
            Vec::new(),
            targets,
            WeightStore::F64(weights),
            self_loops,
        )
    }

    /// [`Graph::from_csr_parts`] for rows with gaps between them: row `u` is
    /// `offsets[u]..row_ends[u]` (`row_ends` empty: a compact CSR). Rows must not overlap.
    pub(crate) fn from_gapped_parts(
        offsets: Vec<usize>,
        row_ends: Vec<usize>,
        targets: Vec<u32>,
        weights: WeightStore,
        self_loops: Vec<f64>,
    ) -> Graph {
        let n = self_loops.len();
        debug_assert_eq!(offsets.len(), n + 1);
        debug_assert!(row_ends.is_empty() || row_ends.len() == n);
        debug_assert_eq!(targets.len(), weights.len());
        let end = |u: usize| row_end(&offsets, &row_ends, u);
        // Weighted degrees (row sums in row order, then the self-loop twice).
        let degrees: Vec<f64> = (0..n)
            .into_par_iter()
            .with_min_len(ROWS_PER_TASK)
            .map(|u| {
                let row = match &weights {
                    WeightStore::F64(w) => w[offsets[u]..end(u)].iter().sum::<f64>(),
                    WeightStore::F32(w) => {
                        w[offsets[u]..end(u)].iter().map(|&x| f64::from(x)).sum()
                    }
                };
                row + 2.0 * self_loops[u]
            })
            .collect();
        let (unit_weights, integral) = match &weights {
            WeightStore::F64(w) => (0..n)
                .into_par_iter()
                .with_min_len(ROWS_PER_TASK)
                .map(|u| {
                    let row = &w[offsets[u]..end(u)];
                    (
                        row.iter().all(|&x| x == 1.0),
                        row.iter().all(|&x| x.fract() == 0.0),
                    )
                })
                .reduce(|| (true, true), |a, b| (a.0 && b.0, a.1 && b.1)),
            WeightStore::F32(_) => (false, true),
        };
        let half_edges = (0..n).map(|u| end(u) - offsets[u]).sum::<usize>();
        // Fixed-size chunks summed in order: the total does not depend on the thread count.
        let total_weight = chunked_sum(&degrees) / 2.0;
        let num_edges = half_edges / 2 + self_loops.iter().filter(|&&w| w > 0.0).count();
        let weights = if unit_weights {
            let longest = (0..n).map(|u| end(u) - offsets[u]).max().unwrap_or(0);
            WeightStore::F64(vec![1.0; longest])
        } else {
            weights
        };
        Graph {
            offsets,
            row_ends,
            half_edges,
            targets,
            weights,
            unit_weights,
            integral,
            self_loops,
            degrees,
            total_weight,
            num_edges,
        }
    }

    /// Number of nodes `|V|`, isolates included.
    pub fn num_nodes(&self) -> usize {
        self.self_loops.len()
    }

    /// Number of distinct undirected edges `|E|`: each merged pair `{u, v}` counts once, and each
    /// node with a self-loop counts once.
    pub fn num_edges(&self) -> usize {
        self.num_edges
    }

    /// The neighbors of `u` other than `u` itself, as `(neighbor, weight)`, sorted by neighbor id.
    ///
    /// The self-loop of `u`, if any, is not listed: see [`Graph::self_loop_weight`].
    ///
    /// # Panics
    /// When `u >= num_nodes()`.
    #[track_caller]
    pub fn neighbors(&self, u: u32) -> impl ExactSizeIterator<Item = (u32, f64)> + '_ {
        let (targets, weights) = self.row(u);
        (0..targets.len()).map(move |i| (targets[i], weights.get(i)))
    }

    /// The row of `u` as parallel slices of neighbor ids and weights (self-loop excluded); the
    /// weights are `f32` for the optimiser's narrow aggregate graphs, `f64` otherwise.
    ///
    /// # Panics
    /// When `u >= num_nodes()`.
    #[track_caller]
    #[inline]
    pub fn row(&self, u: u32) -> (&[u32], RowWeights<'_>) {
        let start = self.offsets[u as usize];
        let end = self.row_end(u);
        let weights = match &self.weights {
            WeightStore::F64(w) if self.unit_weights => RowWeights::F64(&w[..end - start]),
            WeightStore::F64(w) => RowWeights::F64(&w[start..end]),
            WeightStore::F32(w) => RowWeights::F32(&w[start..end]),
        };
        (&self.targets[start..end], weights)
    }

    /// Whether the sums of any of this graph's edge weights are exact in `f32`: every weight is
    /// an integer and the total weight is at most 2^24. The aggregates of such a graph store
    /// their weights as `f32`.
    pub(crate) fn sums_fit_f32(&self) -> bool {
        self.integral && self.total_weight <= F32_EXACT
    }

    /// Number of stored half-edges (`2·|E|` minus self-loops): the length of all rows together.
    pub fn num_half_edges(&self) -> usize {
        self.half_edges
    }

    /// Whether the rows have gaps between them (an aggregate graph of the optimiser).
    #[cfg(test)]
    pub(crate) fn row_ends_are_gapped(&self) -> bool {
        !self.row_ends.is_empty()
            && (0..self.num_nodes()).any(|u| self.row_ends[u] != self.offsets[u + 1])
    }

    /// Whether the weights are stored as `f32`.
    #[cfg(test)]
    pub(crate) fn weights_are_f32(&self) -> bool {
        matches!(self.weights, WeightStore::F32(_))
    }

    /// End of the row of `u` in `targets` / `weights`.
    #[inline]
    fn row_end(&self, u: u32) -> usize {
        row_end(&self.offsets, &self.row_ends, u as usize)
    }

    /// Number of neighbors of `u` other than `u` itself.
    ///
    /// # Panics
    /// When `u >= num_nodes()`.
    #[track_caller]
    #[inline]
    pub fn degree(&self, u: u32) -> usize {
        self.row_end(u) - self.offsets[u as usize]
    }

    /// Weight of the self-loop of `u` (`0.0` when there is none).
    ///
    /// # Panics
    /// When `u >= num_nodes()`.
    #[track_caller]
    #[inline]
    pub fn self_loop_weight(&self, u: u32) -> f64 {
        self.self_loops[u as usize]
    }

    /// Weighted degree `k_u`: the sum of the weights of the edges at `u`, a self-loop counting
    /// twice (igraph's convention). The sum over all nodes is `2 · total_weight()`.
    ///
    /// # Panics
    /// When `u >= num_nodes()`.
    #[track_caller]
    #[inline]
    pub fn weighted_degree(&self, u: u32) -> f64 {
        self.degrees[u as usize]
    }

    /// All weighted degrees, indexed by node.
    pub fn weighted_degrees(&self) -> &[f64] {
        &self.degrees
    }

    /// `m`, the sum of the weights of the undirected edges, each counted once (self-loops
    /// included once).
    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    /// Heap memory held by the CSR arrays (offsets, neighbor ids, weights, self-loops, degrees),
    /// in bytes. (For the optimiser's aggregate graphs, whose rows have unwritten gaps between
    /// them, it counts the rows' entries, not the gaps.)
    pub fn size_bytes(&self) -> usize {
        let entries = if self.row_ends.is_empty() {
            self.targets.capacity()
        } else {
            self.half_edges
        };
        let weights = match &self.weights {
            WeightStore::F64(w) if self.unit_weights => w.capacity() * size_of::<f64>(),
            WeightStore::F64(_) => entries * size_of::<f64>(),
            WeightStore::F32(_) => entries * size_of::<f32>(),
        };
        (self.offsets.capacity() + self.row_ends.capacity()) * size_of::<usize>()
            + entries * size_of::<u32>()
            + weights
            + self.self_loops.capacity() * size_of::<f64>()
            + self.degrees.capacity() * size_of::<f64>()
    }

    /// The subgraph induced by `nodes`, renumbered `0..nodes.len()` in the order given.
    ///
    /// Node `nodes[i]` becomes node `i`; edges with an end outside `nodes` are dropped and
    /// self-loops are kept.
    ///
    /// # Errors
    /// [`PipelineError::NodeOutOfRange`] when a listed node is `>= num_nodes()` (`index` is its
    /// position in `nodes`), [`PipelineError::InvalidConfig`] when a node is listed twice.
    ///
    /// # Complexity
    /// Time **O(|V| + Σ deg(nodes) · log d)**; auxiliary space **O(|V|)**.
    pub fn induced_subgraph(&self, nodes: &[u32]) -> Result<Graph> {
        let n = self.num_nodes();
        let mut local = vec![u32::MAX; n];
        for (i, &v) in nodes.iter().enumerate() {
            if v as usize >= n {
                return Err(PipelineError::NodeOutOfRange {
                    index: i,
                    node: u64::from(v),
                    num_nodes: n,
                });
            }
            if local[v as usize] != u32::MAX {
                return Err(PipelineError::InvalidConfig {
                    field: "nodes",
                    value: v.to_string(),
                    expected: "each node listed once",
                });
            }
            local[v as usize] = i as u32;
        }
        Ok(self.induced_with_local(nodes, |u| {
            let l = local[u as usize];
            (l != u32::MAX).then_some(l)
        }))
    }

    /// The subgraph induced by `nodes` (distinct, in range), where `local(u)` gives the new id of
    /// `u`, or `None` when `u` is not in `nodes`. Rows are sorted by new id.
    pub(crate) fn induced_with_local(
        &self,
        nodes: &[u32],
        local: impl Fn(u32) -> Option<u32>,
    ) -> Graph {
        let mut offsets = Vec::with_capacity(nodes.len() + 1);
        offsets.push(0);
        let mut targets = Vec::new();
        let mut weights = Vec::new();
        let mut self_loops = Vec::with_capacity(nodes.len());
        let mut row: Vec<(u32, f64)> = Vec::new();
        for &v in nodes {
            row.clear();
            for (u, w) in self.neighbors(v) {
                if let Some(l) = local(u) {
                    row.push((l, w));
                }
            }
            if !row.is_sorted_by_key(|&(l, _)| l) {
                row.sort_by_key(|&(l, _)| l);
            }
            targets.extend(row.iter().map(|&(l, _)| l));
            weights.extend(row.iter().map(|&(_, w)| w));
            offsets.push(targets.len());
            self_loops.push(self.self_loops[v as usize]);
        }
        Graph::from_csr_parts(offsets, targets, weights, self_loops)
    }
}

/// Sum of `values` in fixed chunks added in order, so the result is the same for any thread
/// count (a plain parallel `sum` is not: its tree depends on scheduling).
pub(crate) fn chunked_sum(values: &[f64]) -> f64 {
    const CHUNK: usize = 1 << 14;
    let partial: Vec<f64> = values
        .par_chunks(CHUNK)
        .map(|c| c.iter().sum::<f64>())
        .collect();
    // From +0: `Sum` for floats starts at -0, which an empty graph would print as `-0`.
    partial.iter().fold(0.0, |a, b| a + b)
}

/// Two-pass CSR construction: count, allocate, place, then sort and merge each row.
pub(crate) struct CsrBuilder {
    /// Degree counts, then row cursors.
    cursor: Vec<usize>,
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
    self_loops: Vec<f64>,
}

impl CsrBuilder {
    /// A builder for `num_nodes` nodes (`<= u32::MAX`).
    pub(crate) fn new(num_nodes: usize) -> Self {
        CsrBuilder {
            cursor: vec![0; num_nodes],
            offsets: Vec::new(),
            targets: Vec::new(),
            weights: Vec::new(),
            self_loops: vec![0.0; num_nodes],
        }
    }

    /// First pass: counts a validated edge (ends in range, weight finite and `>= 0`).
    #[inline]
    pub(crate) fn count(&mut self, u: u32, v: u32, w: f64) {
        if w > 0.0 && u != v {
            self.cursor[u as usize] += 1;
            self.cursor[v as usize] += 1;
        }
    }

    /// Between the passes: turns counts into offsets.
    pub(crate) fn allocate(&mut self) {
        let n = self.cursor.len();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut acc = 0usize;
        offsets.push(0);
        for c in &mut self.cursor {
            let d = *c;
            *c = acc;
            acc += d;
            offsets.push(acc);
        }
        self.offsets = offsets;
        self.targets = vec![0; acc];
        self.weights = vec![0.0; acc];
    }

    /// Second pass: places the same edge, in the same order as counted.
    #[inline]
    pub(crate) fn place(&mut self, u: u32, v: u32, w: f64) {
        if w > 0.0 {
            if u == v {
                self.self_loops[u as usize] += w;
            } else {
                let cu = &mut self.cursor[u as usize];
                self.targets[*cu] = v;
                self.weights[*cu] = w;
                *cu += 1;
                let cv = &mut self.cursor[v as usize];
                self.targets[*cv] = u;
                self.weights[*cv] = w;
                *cv += 1;
            }
        }
    }

    /// Sorts each row, merges duplicates (summing weights in placement order) and compacts.
    pub(crate) fn finish(self) -> Graph {
        let CsrBuilder {
            cursor,
            offsets,
            mut targets,
            mut weights,
            self_loops,
        } = self;
        drop(cursor);
        let n = self_loops.len();
        // Sort + merge each row in place, in parallel over contiguous blocks of rows; each row
        // records its merged length.
        let mut lens = vec![0usize; n];
        {
            let mut jobs = Vec::with_capacity(n / ROWS_PER_TASK + 1);
            let (mut t_rest, mut w_rest, mut l_rest) =
                (&mut targets[..], &mut weights[..], &mut lens[..]);
            let mut start = 0;
            while start < n {
                let end = (start + ROWS_PER_TASK).min(n);
                let len = offsets[end] - offsets[start];
                let (t, tr) = t_rest.split_at_mut(len);
                let (w, wr) = w_rest.split_at_mut(len);
                let (l, lr) = l_rest.split_at_mut(end - start);
                jobs.push((start, t, w, l));
                (t_rest, w_rest, l_rest) = (tr, wr, lr);
                start = end;
            }
            jobs.into_par_iter().for_each(|(start, t, w, l)| {
                let base = offsets[start];
                let mut buf: Vec<(u32, f64)> = Vec::new();
                for (i, len) in l.iter_mut().enumerate() {
                    let (a, b) = (offsets[start + i] - base, offsets[start + i + 1] - base);
                    *len = sort_merge_row(&mut t[a..b], &mut w[a..b], &mut buf);
                }
            });
        }
        let merged: usize = lens.iter().sum();
        let (targets, weights, offsets) = if merged == targets.len() {
            (targets, weights, offsets)
        } else {
            let mut new_offsets = Vec::with_capacity(n + 1);
            new_offsets.push(0);
            let mut write = 0;
            for u in 0..n {
                let start = offsets[u];
                for k in 0..lens[u] {
                    targets[write + k] = targets[start + k];
                    weights[write + k] = weights[start + k];
                }
                write += lens[u];
                new_offsets.push(write);
            }
            targets.truncate(write);
            targets.shrink_to_fit();
            weights.truncate(write);
            weights.shrink_to_fit();
            (targets, weights, new_offsets)
        };
        Graph::from_csr_parts(offsets, targets, weights, self_loops)
    }
}

/// Sorts a row by neighbor id (stable, so equal ids keep placement order), merges equal ids by
/// summing their weights, and returns the merged length (the merged row is at the front).
fn sort_merge_row(t: &mut [u32], w: &mut [f64], buf: &mut Vec<(u32, f64)>) -> usize {
    if t.is_empty() {
        return 0;
    }
    if !t.is_sorted() {
        buf.clear();
        buf.extend(t.iter().copied().zip(w.iter().copied()));
        buf.sort_by_key(|&(x, _)| x);
        for (i, &(x, y)) in buf.iter().enumerate() {
            t[i] = x;
            w[i] = y;
        }
    }
    let mut write = 0;
    for read in 1..t.len() {
        if t[read] == t[write] {
            w[write] += w[read];
        } else {
            write += 1;
            t[write] = t[read];
            w[write] = w[read];
        }
    }
    write + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges_of(g: &Graph) -> Vec<(u32, u32, f64)> {
        let mut out = Vec::new();
        for u in 0..g.num_nodes() as u32 {
            for (v, w) in g.neighbors(u) {
                if u < v {
                    out.push((u, v, w));
                }
            }
            if g.self_loop_weight(u) > 0.0 {
                out.push((u, u, g.self_loop_weight(u)));
            }
        }
        out
    }

    #[test]
    fn unit_weights_share_one_slice_and_read_like_weighted_rows() {
        // A star plus a path: rows of lengths 4, 1, 2, 2, 1.
        let edges = [
            (0, 1, 1.0),
            (0, 2, 1.0),
            (0, 3, 1.0),
            (0, 4, 1.0),
            (2, 3, 1.0),
        ];
        let unit = Graph::from_edges(5, &edges).unwrap();
        let mut heavier = edges;
        heavier[4].2 = 2.0;
        let weighted = Graph::from_edges(5, &heavier).unwrap();
        for u in 0..5u32 {
            let (ts, ws) = unit.row(u);
            assert_eq!(ts.len(), ws.len(), "row {u}");
            assert_eq!(ts.len(), unit.degree(u));
            assert!(unit.neighbors(u).all(|(_, w)| w == 1.0), "row {u}");
            assert_eq!(ts, weighted.row(u).0, "row {u}");
        }
        assert_eq!(weighted.row(2), (&[0, 3][..], RowWeights::F64(&[1.0, 2.0])));
        assert_eq!(edges_of(&unit), edges.to_vec());
        assert_eq!(edges_of(&weighted), heavier.to_vec());
        // One shared slice of 4 ones instead of 10 weights.
        assert_eq!(weighted.size_bytes() - unit.size_bytes(), (10 - 4) * 8);
        assert_eq!(unit.weighted_degree(0), 4.0);
        assert_eq!(unit.total_weight(), 5.0);
    }

    #[test]
    fn sums_fit_f32_only_for_integer_weights_up_to_2_pow_24() {
        let small = Graph::from_edges(3, &[(0, 1, 1.0), (1, 2, 3.0)]).unwrap();
        assert!(small.sums_fit_f32());
        let fractional = Graph::from_edges(3, &[(0, 1, 1.0), (1, 2, 2.5)]).unwrap();
        assert!(!fractional.sums_fit_f32());
        let edge = f64::from(1u32 << 23);
        let at_limit = Graph::from_edges(3, &[(0, 1, edge), (1, 2, edge)]).unwrap();
        assert!(at_limit.sums_fit_f32());
        let over = Graph::from_edges(3, &[(0, 1, edge), (1, 2, edge + 1.0)]).unwrap();
        assert!(!over.sums_fit_f32());
    }

    #[test]
    fn duplicate_and_reciprocal_edges_are_summed_in_any_order() {
        let a =
            Graph::from_edges(3, &[(0, 1, 1.0), (1, 0, 2.0), (0, 1, 0.5), (2, 1, 1.0)]).unwrap();
        let b =
            Graph::from_edges(3, &[(1, 2, 1.0), (0, 1, 0.5), (1, 0, 2.0), (1, 0, 1.0)]).unwrap();
        assert_eq!(edges_of(&a), vec![(0, 1, 3.5), (1, 2, 1.0)]);
        assert_eq!(edges_of(&a), edges_of(&b));
        assert_eq!(a.num_edges(), 2);
        assert_eq!(a.total_weight(), 4.5);
        assert_eq!(a.weighted_degree(1), 4.5);
    }

    #[test]
    fn invalid_weights_name_the_edge() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0] {
            let err = Graph::from_edges(4, &[(0, 1, 1.0), (2, 3, bad)]).unwrap_err();
            match err {
                PipelineError::InvalidWeight {
                    index,
                    source_node,
                    target_node,
                    weight,
                } => {
                    assert_eq!((index, source_node, target_node), (1, 2, 3));
                    assert!(weight.is_nan() == bad.is_nan());
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn zero_weights_are_dropped() {
        let g = Graph::from_edges(3, &[(0, 1, 0.0), (1, 2, 1.0), (2, 2, 0.0)]).unwrap();
        assert_eq!(g.num_edges(), 1);
        assert_eq!(g.degree(0), 0);
        assert_eq!(g.self_loop_weight(2), 0.0);
    }

    #[test]
    fn out_of_range_node_is_an_error() {
        let err = Graph::from_edges(2, &[(0, 1, 1.0), (1, 2, 1.0)]).unwrap_err();
        assert!(matches!(
            err,
            PipelineError::NodeOutOfRange {
                index: 1,
                node: 2,
                num_nodes: 2
            }
        ));
    }

    #[test]
    fn self_loops_count_twice_in_the_degree() {
        let g = Graph::from_edges(2, &[(0, 0, 1.5), (0, 1, 1.0), (0, 0, 0.5)]).unwrap();
        assert_eq!(g.self_loop_weight(0), 2.0);
        assert_eq!(g.weighted_degree(0), 5.0);
        assert_eq!(g.total_weight(), 3.0);
        assert_eq!(g.num_edges(), 2);
        assert_eq!(g.neighbors(0).collect::<Vec<_>>(), vec![(1, 1.0)]);
    }

    #[test]
    fn empty_and_isolated() {
        let g = Graph::from_edges(0, &[]).unwrap();
        assert_eq!(
            (g.num_nodes(), g.num_edges(), g.total_weight()),
            (0, 0, 0.0)
        );
        // +0, not -0: an empty graph's total weight prints as `0`.
        assert!(g.total_weight().is_sign_positive());
        assert_eq!(format!("{}", g.total_weight()), "0");
        let g = Graph::from_edges(5, &[(1, 3, 2.0)]).unwrap();
        assert_eq!(g.num_nodes(), 5);
        assert_eq!(g.degree(0), 0);
        assert!(g.size_bytes() > 0);
    }

    #[test]
    fn rows_are_sorted_and_symmetric() {
        let edges: Vec<(u32, u32, f64)> = (0..200u32)
            .map(|i| ((i * 37) % 50, (i * 11 + 3) % 50, 1.0 + f64::from(i % 3)))
            .collect();
        let g = Graph::from_edges(50, &edges).unwrap();
        for u in 0..50 {
            let (t, _) = g.row(u);
            assert!(t.windows(2).all(|p| p[0] < p[1]));
            for (v, w) in g.neighbors(u) {
                assert!(g.neighbors(v).any(|(x, y)| x == u && y == w));
            }
        }
        let sum: f64 = edges.iter().map(|e| e.2).sum();
        assert!((g.total_weight() - sum).abs() < 1e-9);
    }

    #[test]
    fn induced_subgraph_renumbers() {
        let g =
            Graph::from_edges(4, &[(0, 1, 1.0), (1, 2, 2.0), (2, 3, 3.0), (2, 2, 1.0)]).unwrap();
        let s = g.induced_subgraph(&[2, 1]).unwrap();
        assert_eq!(s.num_nodes(), 2);
        assert_eq!(edges_of(&s), vec![(0, 1, 2.0), (0, 0, 1.0)]);
        assert!(g.induced_subgraph(&[1, 1]).is_err());
        assert!(g.induced_subgraph(&[9]).is_err());
    }
}
