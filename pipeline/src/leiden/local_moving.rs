//! Fast local moving (Traag, Waltman & van Eck 2019, Algorithm A.2 `MoveNodesFast`), parallel and
//! deterministic.
//!
//! The queue of unstable nodes is a flag per node swept in a seeded random order of blocks of
//! consecutive nodes ([`visit_order`]: random like the paper's order, local like a sequential
//! sweep): a node is processed when its flag is set and it is reached, and a node that moves sets the flags of its neighbors outside its
//! new community (those behind the sweep are processed in the next sweep).
//!
//! Parallelism without scheduling dependence: the nodes taken from the queue are cut into batches
//! of a size that depends only on the graph. Within a batch, every node chooses its best community
//! in parallel against the state frozen at the start of the batch; the choices are then applied
//! one by one in queue order, each re-checked against the current state with its exact gain, and
//! dropped (the node re-queued) when it no longer improves the quality. Every applied move
//! therefore strictly increases the quality, as in the sequential algorithm, and the result is a
//! function of the input and the seed only.

use std::cell::RefCell;

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::rng::{Purpose, Stream};

use crate::graph::{Graph, with_row};

/// Target meaning "a new, empty community".
const EMPTY: u32 = u32::MAX;

/// Below this many half-edges a batch is decided on the calling thread (same result, less overhead).
const PARALLEL_MIN_WORK: usize = 1024;
/// Half-edges a parallel task of a batch should hold at least.
const TASK_WORK: usize = 512;

/// One level of the optimisation: a graph, its node weights and the penalty scale.
#[derive(Clone, Copy)]
pub(crate) struct Level<'a> {
    /// The (possibly aggregate) graph.
    pub graph: &'a Graph,
    /// `s_v`: weighted degree (modularity) or number of original nodes (CPM).
    pub node_weights: &'a [f64],
    /// `λ`: `γ/(2m)` for modularity, `γ` for CPM.
    pub lambda: f64,
    /// The nodes that hold on to their community (`None`: none): a flagged node leaves it only
    /// for a gain above `stickiness` times its weighted degree (see
    /// [`super::LeidenConfig::stickiness`]).
    pub sticky: Option<&'a [bool]>,
    /// Raw-quality margin per unit of a sticky node's weighted degree, `>= 0`.
    pub stickiness: f64,
}

impl Level<'_> {
    /// The gain `v` must exceed to leave its community: `stickiness × row_weight` for a
    /// sticky node, else 0.
    #[inline]
    fn hold(&self, v: u32, row_weight: f64) -> f64 {
        match self.sticky {
            Some(sticky) if sticky[v as usize] => self.stickiness * row_weight,
            _ => 0.0,
        }
    }
}

/// What one local-moving phase did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MoveOutcome {
    /// Number of applied moves.
    pub moves: usize,
    /// Sum of the applied raw-quality gains.
    pub gain: f64,
    /// Nodes evaluated (taken from the queue).
    pub evaluations: usize,
    /// Chosen moves dropped by the re-check against the current state.
    pub rejected: usize,
    /// Sweeps over the node order.
    pub sweeps: usize,
}

/// Batch size for `n` nodes: `n / 128`, at most 2048. Graphs of under 1024 nodes keep it (those of
/// under 256 nodes are processed strictly sequentially, in batches of one); larger ones take at
/// least `min(n / 8, 512)` nodes, so that a batch of a graph of thousands of nodes (or of an
/// aggregate level) is worth splitting between threads: at `n / 128` (180 nodes), 2 threads
/// decided ca-condmat's batches only 1.25x faster than 1, and most of its aggregate levels' batches
/// were too small to split at all.
pub(crate) fn batch_size(n: usize) -> usize {
    const SMALL_GRAPH: usize = 1024;
    if n < SMALL_GRAPH {
        (n / 128).max(1)
    } else {
        (n / 128).clamp((n / 8).min(512), 2048)
    }
}

/// Whether `candidate` improves on `stay` by more than rounding noise on a row of total weight
/// `row_weight`.
#[inline]
pub(crate) fn improves(candidate: f64, stay: f64, row_weight: f64) -> bool {
    candidate > stay + 1e-12 * (row_weight + stay.abs())
}

/// Slots of the small table of an [`Accumulator`] (a power of two).
const SMALL_SLOTS: usize = 2048;
/// Most distinct labels the small table takes (load factor 1/2).
pub(crate) const SMALL_MAX: usize = SMALL_SLOTS / 2;

/// Per-thread accumulator of weights per label, in one of two modes chosen per use by
/// [`Accumulator::begin`]: a small open-addressing table (24 KiB, stays in L1/L2) when at
/// most [`SMALL_MAX`] additions are coming, else a dense array indexed by label (which costs a
/// cache miss per addition on large graphs). Both modes list the labels in order of first addition
/// and sum in addition order, so they give bit-identical results. Empty between uses.
pub(crate) struct Accumulator {
    /// Dense mode: weight per label, zero when untouched.
    pub weights: Vec<f64>,
    /// Labels in order of first addition.
    pub touched: Vec<u32>,
    /// Small mode: keys (`u32::MAX` when free), values, and the slot of each touched label.
    keys: Box<[u32]>,
    values: Box<[f64]>,
    slots: Vec<u32>,
    small: bool,
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            weights: Vec::new(),
            touched: Vec::new(),
            keys: vec![u32::MAX; SMALL_SLOTS].into_boxed_slice(),
            values: vec![0.0; SMALL_SLOTS].into_boxed_slice(),
            slots: Vec::with_capacity(SMALL_MAX),
            small: false,
        }
    }
}

impl Accumulator {
    /// Makes room for labels `0..n` (dense mode).
    #[inline]
    pub(crate) fn ensure(&mut self, n: usize) {
        if self.weights.len() < n {
            // All zeros between uses, so a fresh zeroed allocation replaces it; its pages are
            // mapped lazily, so a dense array that is rarely used costs little memory.
            self.weights = vec![0.0; n];
        }
    }

    /// Starts a use with at most `additions` calls of [`Accumulator::add`] to come.
    #[inline]
    pub(crate) fn begin(&mut self, additions: usize) {
        self.small = additions <= SMALL_MAX;
    }

    #[inline]
    fn slot_of(c: u32) -> usize {
        (c.wrapping_mul(0x9e37_79b1) >> (32 - SMALL_SLOTS.trailing_zeros())) as usize
    }

    /// Adds `w` (`> 0`) to label `c`.
    #[inline(always)]
    pub(crate) fn add(&mut self, c: u32, w: f64) {
        if self.small {
            let mut i = Self::slot_of(c);
            loop {
                let k = self.keys[i];
                if k == c {
                    self.values[i] += w;
                    return;
                }
                if k == u32::MAX {
                    self.keys[i] = c;
                    self.values[i] = w;
                    self.touched.push(c);
                    self.slots.push(i as u32);
                    return;
                }
                i = (i + 1) & (SMALL_SLOTS - 1);
            }
        }
        let slot = &mut self.weights[c as usize];
        if *slot == 0.0 {
            self.touched.push(c);
        }
        *slot += w;
    }

    /// The weight accumulated for label `c` (0 when untouched).
    #[inline]
    pub(crate) fn get(&self, c: u32) -> f64 {
        if self.small {
            let mut i = Self::slot_of(c);
            loop {
                let k = self.keys[i];
                if k == c {
                    return self.values[i];
                }
                if k == u32::MAX {
                    return 0.0;
                }
                i = (i + 1) & (SMALL_SLOTS - 1);
            }
        }
        self.weights[c as usize]
    }

    /// The weight of the `i`-th touched label.
    #[inline]
    pub(crate) fn value_at(&self, i: usize) -> f64 {
        if self.small {
            self.values[self.slots[i] as usize]
        } else {
            self.weights[self.touched[i] as usize]
        }
    }

    /// Empties the accumulator.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if self.small {
            for &i in &self.slots {
                self.keys[i as usize] = u32::MAX;
            }
            self.slots.clear();
        } else {
            for &c in &self.touched {
                self.weights[c as usize] = 0.0;
            }
        }
        self.touched.clear();
        self.small = false;
    }
}

thread_local! {
    static ACCUMULATOR: RefCell<Accumulator> = RefCell::new(Accumulator::default());
}

/// Runs `f` with this thread's accumulator, sized for labels `0..n`.
pub(crate) fn with_accumulator<R>(n: usize, f: impl FnOnce(&mut Accumulator) -> R) -> R {
    ACCUMULATOR.with(|cell| {
        let mut acc = cell.borrow_mut();
        acc.ensure(n);
        f(&mut acc)
    })
}

/// Nodes per block of [`visit_order`].
const ORDER_BLOCK: usize = 64;

/// A random visiting order that keeps memory locality: the nodes are cut into blocks of
/// [`ORDER_BLOCK`] consecutive ids; the blocks are visited in random order and the nodes of a
/// block in random order. The rows of one block are a few kilobytes of the CSR, so the order costs
/// little over a sequential sweep while giving the local optima of a random one.
pub(crate) fn visit_order(n: usize, seed: u64, stream: &[u64]) -> Vec<u32> {
    let mut rng = Stream::new(seed, Purpose::MoveOrder, stream);
    let num_blocks = n.div_ceil(ORDER_BLOCK);
    let mut blocks: Vec<u32> = (0..num_blocks as u32).collect();
    rng.shuffle(&mut blocks);
    let mut order = Vec::with_capacity(n);
    for b in blocks {
        let start = b as usize * ORDER_BLOCK;
        let end = (start + ORDER_BLOCK).min(n);
        let first = order.len();
        order.extend(start as u32..end as u32);
        rng.shuffle(&mut order[first..]);
    }
    order
}

/// A node's choice against the frozen state of its batch.
#[derive(Debug, Clone, Copy)]
struct Decision {
    /// Chosen community; the node's own label when it stays; [`EMPTY`] for a new community.
    target: u32,
    /// Weight from the node to `target` (0 for [`EMPTY`]).
    w_target: f64,
    /// Weight from the node to the rest of its own community.
    w_own: f64,
    /// Total weight of the node's row.
    row_weight: f64,
    /// Whether a neighbor is in the same batch (its move could make the weights stale).
    may_be_stale: bool,
}

/// [`move_nodes_from`] with every node queued.
#[cfg(test)]
pub(crate) fn move_nodes(
    level: Level<'_>,
    membership: &mut [u32],
    seed: u64,
    stream: &[u64],
) -> MoveOutcome {
    move_nodes_from(level, membership, seed, stream, None)
}

/// Moves nodes of `level` between communities until no move improves the quality.
///
/// `membership` holds labels in `0..n` on entry and on exit (not necessarily dense). The visiting
/// order is drawn from the stream `(seed, stream)` by [`visit_order`]. The queue starts with
/// only the nodes flagged in `queued` (all nodes when `None`): the *frontier* of a warm start
/// (Sahu 2024, "DF Leiden: Dynamic Frontier Leiden algorithm for fully dynamic networks",
/// <https://arxiv.org/abs/2405.11658>). A node outside it is still visited once a neighbour
/// moves, as in any local moving.
pub(crate) fn move_nodes_from(
    level: Level<'_>,
    membership: &mut [u32],
    seed: u64,
    stream: &[u64],
    queued: Option<&[bool]>,
) -> MoveOutcome {
    let graph = level.graph;
    let n = graph.num_nodes();
    let lambda = level.lambda;
    let node_weights = level.node_weights;
    debug_assert_eq!(membership.len(), n);
    let mut totals = vec![0.0f64; n];
    let mut sizes = vec![0u32; n];
    for (v, &c) in membership.iter().enumerate() {
        totals[c as usize] += node_weights[v];
        sizes[c as usize] += 1;
    }
    // Empty labels, popped smallest first.
    let mut free: Vec<u32> = (0..n as u32)
        .rev()
        .filter(|&c| sizes[c as usize] == 0)
        .collect();
    let order = visit_order(n, seed, stream);
    // The queue. Atomic so that the neighbors of the moved nodes can be queued in parallel; every
    // store writes `true`, so the outcome does not depend on their order.
    let active: Vec<AtomicBool> = match queued {
        None => (0..n).map(|_| AtomicBool::new(true)).collect(),
        Some(q) => q.iter().map(|&x| AtomicBool::new(x)).collect(),
    };
    // A flag per block of `visit_order`, set with the flag of any of its nodes and cleared when
    // the sweep enters the block: late sweeps skip the blocks without a queued node instead of
    // testing their nodes one by one. The same nodes are processed in the same order.
    let block_active: Vec<AtomicBool> = (0..n.div_ceil(ORDER_BLOCK))
        .map(|b| {
            AtomicBool::new(queued.is_none_or(|q| {
                q[b * ORDER_BLOCK..((b + 1) * ORDER_BLOCK).min(n)]
                    .iter()
                    .any(|&x| x)
            }))
        })
        .collect();
    let enqueue = |u: u32| {
        active[u as usize].store(true, Ordering::Relaxed);
        // Most blocks are already flagged: a load first keeps the line shared between threads.
        let block = &block_active[u as usize / ORDER_BLOCK];
        if !block.load(Ordering::Relaxed) {
            block.store(true, Ordering::Relaxed);
        }
    };
    // Bit set of the nodes of the current batch: a node none of whose neighbors is in its batch
    // cannot see its weights change before its decision is applied.
    let mut in_batch = vec![0u64; n.div_ceil(64)];
    let mut moved: Vec<u32> = Vec::with_capacity(batch_size(n));

    let batch_len = batch_size(n);
    let mut batch: Vec<u32> = Vec::with_capacity(batch_len);
    let mut decisions: Vec<Decision> = Vec::with_capacity(batch_len);
    let mut outcome = MoveOutcome::default();

    loop {
        let mut any = false;
        let mut pos = 0;
        // End of the block of `visit_order` that `pos` is in.
        let mut block_end = 0;
        while pos < n {
            batch.clear();
            let mut work = 0;
            while pos < n && batch.len() < batch_len {
                if pos == block_end {
                    let b = order[pos] as usize / ORDER_BLOCK;
                    let len = ORDER_BLOCK.min(n - b * ORDER_BLOCK);
                    block_end = pos + len;
                    if !block_active[b].swap(false, Ordering::Relaxed) {
                        pos = block_end;
                        continue;
                    }
                }
                let v = order[pos];
                pos += 1;
                // A plain load first: most nodes are inactive late in a phase, and an atomic
                // read-modify-write costs several times a load.
                let slot = &active[v as usize];
                if slot.load(Ordering::Relaxed) && {
                    slot.store(false, Ordering::Relaxed);
                    graph.degree(v) > 0
                } {
                    batch.push(v);
                    work += graph.degree(v);
                }
            }
            if batch.is_empty() {
                continue;
            }
            any = true;
            outcome.evaluations += batch.len();
            for &v in &batch {
                in_batch[v as usize / 64] |= 1 << (v % 64);
            }
            // Decide against the frozen state.
            {
                let memb: &[u32] = membership;
                let totals: &[f64] = &totals;
                let in_batch: &[u64] = &in_batch;
                let decide =
                    |v: &u32| -> Decision { best_community(level, memb, totals, in_batch, *v) };
                if work >= PARALLEL_MIN_WORK {
                    // Tasks of about `TASK_WORK` half-edges: 32 nodes of a sparse graph, a few
                    // nodes of an aggregate graph (whose rows hold hundreds of entries, so a
                    // batch of them used to be one task).
                    let min_len = (batch.len() * TASK_WORK / work).clamp(1, 32);
                    batch
                        .par_iter()
                        .with_min_len(min_len)
                        .map(decide)
                        .collect_into_vec(&mut decisions);
                } else {
                    decisions.clear();
                    decisions.extend(batch.iter().map(decide));
                }
            }
            // Apply in order, each move re-checked against the current state: the weights seen
            // at decision time are exact unless a neighbor is in the same batch (then the row is
            // read again); community totals are always current.
            moved.clear();
            for (&v, d) in batch.iter().zip(&decisions) {
                let own = membership[v as usize];
                let target = d.target;
                if target == own {
                    continue;
                }
                let s = node_weights[v as usize];
                let (w_own, w_target, row_weight) = if d.may_be_stale {
                    with_row!(graph.row(v), |ts, ws| {
                        weights_to(ts, ws, membership, own, target)
                    })
                } else {
                    (d.w_own, d.w_target, d.row_weight)
                };
                let stay = w_own - lambda * s * (totals[own as usize] - s);
                let hold = stay + level.hold(v, row_weight);
                let (to, go) = if target == EMPTY {
                    match free.last() {
                        Some(&c) => (c, 0.0),
                        None => continue,
                    }
                } else if sizes[target as usize] == 0 {
                    // Its members all left during this batch; the label is on the free list.
                    outcome.rejected += 1;
                    enqueue(v);
                    continue;
                } else {
                    (target, w_target - lambda * s * totals[target as usize])
                };
                if !improves(go, hold, row_weight) {
                    outcome.rejected += 1;
                    enqueue(v);
                    continue;
                }
                if target == EMPTY {
                    free.pop();
                }
                outcome.gain += go - stay;
                outcome.moves += 1;
                totals[own as usize] -= s;
                sizes[own as usize] -= 1;
                if sizes[own as usize] == 0 {
                    totals[own as usize] = 0.0;
                    free.push(own);
                }
                totals[to as usize] += s;
                sizes[to as usize] += 1;
                membership[v as usize] = to;
                moved.push(v);
            }
            for &v in &batch {
                in_batch[v as usize / 64] = 0;
            }
            // Queue the neighbors that the moves may have destabilised.
            let memb: &[u32] = membership;
            let queue = |&v: &u32| {
                let c = memb[v as usize];
                for &u in graph.row(v).0 {
                    if memb[u as usize] != c {
                        enqueue(u);
                    }
                }
            };
            let moved_work: usize = moved.iter().map(|&v| graph.degree(v)).sum();
            if moved_work >= PARALLEL_MIN_WORK {
                moved.par_iter().with_min_len(32).for_each(queue);
            } else {
                moved.iter().for_each(queue);
            }
        }
        if !any {
            break;
        }
        outcome.sweeps += 1;
    }
    outcome
}

/// Rows up to this long are accumulated in two arrays on the stack with a linear search: after
/// the first sweep a node's neighbours sit in a handful of communities, and scanning those few
/// labels is cheaper than hashing into the [`Accumulator`].
const SHORT_ROW: usize = 32;

/// The community `v` should join against the given state: its own label when no move improves
/// the quality, [`EMPTY`] when being alone is best.
///
/// Both ways of accumulating (short rows on the stack, longer ones in the [`Accumulator`]) list
/// the labels in order of first appearance and sum each label's weights in row order, so they
/// decide identically.
#[inline]
fn best_community(
    level: Level<'_>,
    membership: &[u32],
    totals: &[f64],
    in_batch: &[u64],
    v: u32,
) -> Decision {
    with_row!(level.graph.row(v), |ts, ws| {
        best_in_row(level, membership, totals, in_batch, v, ts, ws)
    })
}

/// [`best_community`] on the row `ts` / `ws` of `v`, generic over the weights' type.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn best_in_row<W: Copy + Into<f64>>(
    level: Level<'_>,
    membership: &[u32],
    totals: &[f64],
    in_batch: &[u64],
    v: u32,
    ts: &[u32],
    ws: &[W],
) -> Decision {
    let own = membership[v as usize];
    let mut row_weight = 0.0;
    let mut batch_bits = 0u64;
    if ts.len() <= SHORT_ROW {
        // The neighbours' labels are gathered first, in a loop without branches, so that their
        // loads (random reads of `membership`) overlap instead of waiting one by one behind the
        // data-dependent branches of the search below.
        let mut gathered = [0u32; SHORT_ROW];
        for (slot, &u) in gathered.iter_mut().zip(ts) {
            *slot = membership[u as usize];
        }
        let mut labels = [0u32; SHORT_ROW];
        let mut weights = [0.0f64; SHORT_ROW];
        let mut k = 0;
        for ((&u, &w), &c) in ts.iter().zip(ws).zip(&gathered) {
            let w: f64 = w.into();
            match labels[..k].iter().position(|&x| x == c) {
                Some(i) => weights[i] += w,
                None => {
                    labels[k] = c;
                    weights[k] = w;
                    k += 1;
                }
            }
            row_weight += w;
            batch_bits |= in_batch[u as usize / 64] & (1 << (u % 64));
        }
        let w_own = labels[..k]
            .iter()
            .position(|&x| x == own)
            .map_or(0.0, |i| weights[i]);
        let found = labels[..k]
            .iter()
            .copied()
            .zip(weights[..k].iter().copied());
        return choose(level, totals, v, own, w_own, row_weight, batch_bits, found);
    }
    // Longer rows use this thread's accumulator (short rows never touch it).
    with_accumulator(level.graph.num_nodes(), |acc| {
        acc.begin(ts.len());
        // Gathered in chunks, as for short rows.
        let mut gathered = [0u32; SHORT_ROW];
        for (ts, ws) in ts.chunks(SHORT_ROW).zip(ws.chunks(SHORT_ROW)) {
            for (slot, &u) in gathered.iter_mut().zip(ts) {
                *slot = membership[u as usize];
            }
            for ((&u, &w), &c) in ts.iter().zip(ws).zip(&gathered) {
                let w: f64 = w.into();
                acc.add(c, w);
                row_weight += w;
                batch_bits |= in_batch[u as usize / 64] & (1 << (u % 64));
            }
        }
        let w_own = acc.get(own);
        let found = (0..acc.touched.len()).map(|i| (acc.touched[i], acc.value_at(i)));
        let decision = choose(level, totals, v, own, w_own, row_weight, batch_bits, found);
        acc.clear();
        decision
    })
}

/// Weights from a node's row `ts` / `ws` to its community `own`, to `target`, and in all.
#[inline]
fn weights_to<W: Copy + Into<f64>>(
    ts: &[u32],
    ws: &[W],
    membership: &[u32],
    own: u32,
    target: u32,
) -> (f64, f64, f64) {
    let (mut w_own, mut w_target, mut row_weight) = (0.0, 0.0, 0.0);
    for (&u, &w) in ts.iter().zip(ws) {
        let w: f64 = w.into();
        let c = membership[u as usize];
        if c == own {
            w_own += w;
        }
        if c == target {
            w_target += w;
        }
        row_weight += w;
    }
    (w_own, w_target, row_weight)
}

/// The decision of [`best_community`] from the weights of `v` to each neighbouring community
/// (`found`, in order of first appearance; ties keep the first).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn choose(
    level: Level<'_>,
    totals: &[f64],
    v: u32,
    own: u32,
    w_own: f64,
    row_weight: f64,
    batch_bits: u64,
    found: impl Iterator<Item = (u32, f64)>,
) -> Decision {
    let s = level.node_weights[v as usize];
    let lambda = level.lambda;
    // A sticky node stays unless a move beats staying by its margin.
    let stay = w_own - lambda * s * (totals[own as usize] - s) + level.hold(v, row_weight);
    let (mut best, mut best_gain, mut best_w) = (own, stay, w_own);
    for (c, w) in found {
        if c != own {
            let gain = w - lambda * s * totals[c as usize];
            if gain > best_gain {
                best = c;
                best_gain = gain;
                best_w = w;
            }
        }
    }
    let target = if improves(0.0, best_gain, row_weight) && improves(0.0, stay, row_weight) {
        best_w = 0.0;
        EMPTY
    } else if best != own && improves(best_gain, stay, row_weight) {
        best
    } else {
        own
    };
    Decision {
        target,
        w_target: best_w,
        w_own,
        row_weight,
        may_be_stale: batch_bits != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leiden::quality::raw_quality;

    fn ring_of_cliques(k: u32, size: u32) -> Graph {
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
    fn gain_equals_quality_difference() {
        let g = ring_of_cliques(12, 5);
        let degrees = g.weighted_degrees().to_vec();
        let lambda = 1.0 / (2.0 * g.total_weight());
        let level = Level {
            graph: &g,
            node_weights: &degrees,
            lambda,
            sticky: None,
            stickiness: 0.0,
        };
        let mut memb: Vec<u32> = (0..g.num_nodes() as u32).collect();
        let before = raw_quality(&g, &memb, &degrees, lambda);
        let out = move_nodes(level, &mut memb, 1, &[]);
        let after = raw_quality(&g, &memb, &degrees, lambda);
        assert!(out.moves > 0);
        assert!(
            (after - before - out.gain).abs() < 1e-9,
            "{after} - {before} vs {}",
            out.gain
        );
        // A local optimum: one more phase moves nothing.
        let again = move_nodes(level, &mut memb, 1, &[]);
        assert_eq!(again.moves, 0);
    }

    #[test]
    fn cliques_end_up_together() {
        let g = ring_of_cliques(8, 6);
        let degrees = g.weighted_degrees().to_vec();
        let level = Level {
            graph: &g,
            node_weights: &degrees,
            lambda: 1.0 / (2.0 * g.total_weight()),
            sticky: None,
            stickiness: 0.0,
        };
        let mut memb: Vec<u32> = (0..g.num_nodes() as u32).collect();
        move_nodes(level, &mut memb, 1, &[]);
        for c in 0..8 {
            let base = (c * 6) as usize;
            assert!(
                memb[base..base + 6].iter().all(|&x| x == memb[base + 2]),
                "{memb:?}"
            );
        }
    }

    #[test]
    fn small_and_dense_accumulators_agree() {
        let additions: Vec<(u32, f64)> = (0..100u32)
            .map(|i| ((i * 7919) % 37 + 1000 * (i % 3), 0.25 + f64::from(i % 5)))
            .collect();
        let run = |small: bool| {
            let mut acc = Accumulator::default();
            acc.ensure(4000);
            acc.begin(if small {
                additions.len()
            } else {
                SMALL_MAX + 1
            });
            for &(c, w) in &additions {
                acc.add(c, w);
            }
            let out: Vec<(u32, f64, f64)> = acc
                .touched
                .iter()
                .enumerate()
                .map(|(i, &c)| (c, acc.value_at(i), acc.get(c)))
                .collect();
            assert_eq!(acc.get(3999), 0.0);
            acc.clear();
            assert!(acc.touched.is_empty());
            out
        };
        let (a, b) = (run(true), run(false));
        assert_eq!(a, b);
        assert!(a.iter().all(|&(_, x, y)| x == y));
    }

    /// A hub adjacent to every node: its row exceeds the small table, so both accumulator modes
    /// and parallel batches are exercised; the booked gain still equals the quality difference.
    #[test]
    fn hub_graph_gain_equals_quality_difference() {
        let n = 3000u32;
        let mut edges: Vec<(u32, u32, f64)> = (1..n).map(|v| (0, v, 1.0)).collect();
        for v in 1..n {
            let block = (v - 1) / 30;
            let u = 1 + block * 30 + (v * 7) % 30;
            if u != v && u < n {
                edges.push((v, u, 2.0));
            }
            edges.push((v, 1 + block * 30 + (v * 13 + 5) % 30, 1.0));
        }
        edges.retain(|&(a, b, _)| a != b && b < n);
        let g = Graph::from_edges(n as usize, &edges).unwrap();
        assert!(g.degree(0) > SMALL_MAX);
        let degrees = g.weighted_degrees().to_vec();
        let lambda = 1.0 / (2.0 * g.total_weight());
        let level = Level {
            graph: &g,
            node_weights: &degrees,
            lambda,
            sticky: None,
            stickiness: 0.0,
        };
        let mut memb: Vec<u32> = (0..n).collect();
        let before = raw_quality(&g, &memb, &degrees, lambda);
        let out = move_nodes(level, &mut memb, 9, &[]);
        let after = raw_quality(&g, &memb, &degrees, lambda);
        assert!(out.moves > 0);
        assert!((after - before - out.gain).abs() < 1e-9 * (1.0 + after.abs()));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let mut again: Vec<u32> = (0..n).collect();
        pool.install(|| move_nodes(level, &mut again, 9, &[]));
        assert_eq!(again, memb, "thread count changed the result");
    }

    #[test]
    fn improves_ignores_noise() {
        assert!(!improves(1.0 + 1e-15, 1.0, 2.0));
        assert!(improves(1.0 + 1e-6, 1.0, 2.0));
    }
}
