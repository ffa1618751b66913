//! Refinement (Traag, Waltman & van Eck 2019, Algorithm A.2 `RefinePartition` and
//! `MergeNodesSubset`).
//!
//! Inside each community `S` of the partition found by local moving, every node starts alone. Each
//! node `v` that is still alone and well connected to `S` (`E(v, S−v) ≥ λ·s_v·(S_S − s_v)`) may
//! merge into a well connected sub-community `C ⊆ S` (`E(C, S−C) ≥ λ·S_C·(S_S − S_C)`) whose merge
//! does not decrease the quality, chosen at random with probability `∝ exp(ΔH/θ)` (`ΔH` in raw
//! edge-weight units, as in igraph). Every refined community is therefore connected, and the
//! aggregate graph is built on the refined partition.
//!
//! Communities are independent, so they are refined in parallel, each with its own random stream
//! keyed by `(seed, stream, community)`: the result does not depend on the thread count.

use std::cell::RefCell;

use rayon::prelude::*;

use super::aggregate::group_by_label;
use super::local_moving::{Accumulator, Level};
use super::rng::{Purpose, Stream};
use crate::graph::with_row;

/// Per-thread scratch of the refinement of one community (indices are local to the community).
#[derive(Default)]
struct Scratch {
    /// Weight from each node to the rest of its community.
    to_community: Vec<f64>,
    /// Local refined label of each node.
    label: Vec<u32>,
    /// Node-weight total of each refined community.
    weight: Vec<f64>,
    /// `E(C, S − C)` of each refined community.
    external: Vec<f64>,
    /// Number of nodes of each refined community.
    count: Vec<u32>,
    /// Visiting order.
    order: Vec<u32>,
    /// Candidate communities and their gains.
    candidates: Vec<(u32, f64)>,
    /// Weight from the current node to each refined community.
    acc: Accumulator,
    /// The community's own subgraph in local ids: row `i` is
    /// `local_targets[local_offsets[i]..local_offsets[i + 1]]`.
    local_offsets: Vec<usize>,
    local_targets: Vec<u32>,
    local_weights: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Refines `membership` (dense labels `0..num_communities`) and returns refined labels: each
/// refined community is labelled with the position, in the grouped node order, of one of its
/// nodes, so labels are unique and `< n` but not dense.
pub(crate) fn refine(
    level: Level<'_>,
    membership: &[u32],
    num_communities: usize,
    randomness: f64,
    seed: u64,
    stream: &[u64],
) -> Vec<u32> {
    let n = level.graph.num_nodes();
    let (offsets, members) = group_by_label(membership, num_communities);
    let mut position = vec![0u32; n];
    for (i, &v) in members.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    // Output aligned with `members`, cut into one slice per community.
    let mut out = vec![0u32; n];
    let mut jobs: Vec<(usize, &mut [u32])> = Vec::with_capacity(num_communities);
    let mut rest = &mut out[..];
    for c in 0..num_communities {
        let (head, tail) = rest.split_at_mut(offsets[c + 1] - offsets[c]);
        if head.len() == 1 {
            head[0] = offsets[c] as u32;
        } else {
            jobs.push((c, head));
        }
        rest = tail;
    }
    // Largest community first, one community per task. Sizes are skewed, and the large
    // communities hold the small labels (labels are numbered by first appearance), so halves of
    // the label range are far from halves of the work: with rayon's default splitting one
    // thread refined the large communities while the other went idle after 2 % of the time.
    // Every community has its own random stream, so the order changes nothing in the result.
    jobs.sort_unstable_by_key(|(c, slice)| (std::cmp::Reverse(slice.len()), *c));
    jobs.par_iter_mut().with_max_len(1).for_each(|(c, slice)| {
        let start = offsets[*c];
        let nodes = &members[start..start + slice.len()];
        let mut rng = Stream::new(seed, Purpose::Refine, &[stream, &[*c as u64]].concat());
        SCRATCH.with(|cell| {
            let scratch = &mut *cell.borrow_mut();
            let group = Group {
                position: &position,
                nodes,
                start,
            };
            refine_one(level, group, randomness, &mut rng, scratch, slice);
        });
    });
    drop(jobs);
    let mut refined = vec![0u32; n];
    for (i, &v) in members.iter().enumerate() {
        refined[v as usize] = out[i];
    }
    refined
}

/// One community to refine: its nodes sit at positions `start..start + nodes.len()` of the grouped
/// order, and `position[u]` is the grouped position of any node `u`.
#[derive(Clone, Copy)]
struct Group<'a> {
    position: &'a [u32],
    nodes: &'a [u32],
    start: usize,
}

/// `MergeNodesSubset` on one community.
fn refine_one(
    level: Level<'_>,
    group: Group<'_>,
    randomness: f64,
    rng: &mut Stream,
    s: &mut Scratch,
    out: &mut [u32],
) {
    let Group {
        position,
        nodes,
        start,
    } = group;
    let len = nodes.len();
    let lambda = level.lambda;
    let weights = level.node_weights;
    s.to_community.clear();
    s.label.clear();
    s.weight.clear();
    s.external.clear();
    s.count.clear();
    s.local_offsets.clear();
    s.local_targets.clear();
    s.local_weights.clear();
    s.local_offsets.push(0);
    let mut total = 0.0;
    for (i, &v) in nodes.iter().enumerate() {
        let range = (start as u32, len);
        let (l_targets, l_weights) = (&mut s.local_targets, &mut s.local_weights);
        let inside = with_row!(level.graph.row(v), |ts, ws| {
            local_row(ts, ws, position, range, l_targets, l_weights)
        });
        s.local_offsets.push(s.local_targets.len());
        s.to_community.push(inside);
        s.label.push(i as u32);
        s.weight.push(weights[v as usize]);
        s.external.push(inside);
        s.count.push(1);
        total += weights[v as usize];
    }
    s.order.clear();
    s.order.extend(0..len as u32);
    rng.shuffle(&mut s.order);
    s.acc.ensure(len);
    for k in 0..len {
        let i = s.order[k] as usize;
        let own = s.label[i];
        if s.count[own as usize] != 1 {
            continue;
        }
        let sv = weights[nodes[i] as usize];
        if s.to_community[i] < lambda * sv * (total - sv) {
            continue;
        }
        let (a, b) = (s.local_offsets[i], s.local_offsets[i + 1]);
        for (&j, &w) in s.local_targets[a..b].iter().zip(&s.local_weights[a..b]) {
            s.acc.add(s.label[j as usize], w);
        }
        // Staying alone is a candidate of gain 0.
        s.candidates.clear();
        s.candidates.push((own, 0.0));
        let mut best = 0.0f64;
        for &d in &s.acc.touched {
            let d_weight = s.weight[d as usize];
            if d == own || s.external[d as usize] < lambda * d_weight * (total - d_weight) {
                continue;
            }
            let gain = s.acc.get(d) - lambda * sv * d_weight;
            if gain >= 0.0 {
                s.candidates.push((d, gain));
                best = best.max(gain);
            }
        }
        let chosen = if s.candidates.len() == 1 {
            own
        } else {
            // P(d) ∝ exp((gain − best)/θ), shifted by the best gain to avoid overflow.
            let mut sum = 0.0;
            for cand in &mut s.candidates {
                let x = (cand.1 - best) / randomness;
                // exp underflows to 0 below about -745: skip the call.
                cand.1 = if x < -746.0 { 0.0 } else { x.exp() };
                sum += cand.1;
            }
            let mut r = rng.uniform() * sum;
            let mut pick = s.candidates[s.candidates.len() - 1].0;
            for &(d, p) in &s.candidates {
                if r < p {
                    pick = d;
                    break;
                }
                r -= p;
            }
            pick
        };
        if chosen != own {
            let d = chosen as usize;
            s.label[i] = chosen;
            s.count[own as usize] = 0;
            s.count[d] += 1;
            s.weight[d] += sv;
            s.external[d] += s.to_community[i] - 2.0 * s.acc.get(d as u32);
        }
        s.acc.clear();
    }
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = (start + s.label[i] as usize) as u32;
    }
}

/// Appends to `targets` / `weights` the entries of the row `ts` / `ws` whose grouped position
/// falls in the community's range `(start, len)`, as local indices; returns their total weight.
#[inline]
fn local_row<W: Copy + Into<f64>>(
    ts: &[u32],
    ws: &[W],
    position: &[u32],
    (start, len): (u32, usize),
    targets: &mut Vec<u32>,
    weights: &mut Vec<f64>,
) -> f64 {
    let mut inside = 0.0;
    // The positions are gathered in chunks by a loop without branches, so that their random
    // loads overlap.
    let mut gathered = [0u32; 32];
    for (ts, ws) in ts.chunks(32).zip(ws.chunks(32)) {
        for (slot, &u) in gathered.iter_mut().zip(ts) {
            *slot = position[u as usize].wrapping_sub(start);
        }
        for (&j, &w) in gathered.iter().zip(ws) {
            if (j as usize) < len {
                let w: f64 = w.into();
                targets.push(j);
                weights.push(w);
                inside += w;
            }
        }
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;

    /// Two triangles joined by one edge, plus a separate pair, all put in one community: every
    /// refined community must be connected, so the pair never joins a triangle node.
    #[test]
    fn refined_communities_are_connected_subsets() {
        let g = Graph::from_edges(
            8,
            &[
                (0, 1, 1.0),
                (1, 2, 1.0),
                (0, 2, 1.0),
                (3, 4, 1.0),
                (4, 5, 1.0),
                (3, 5, 1.0),
                (2, 3, 1.0),
                (6, 7, 1.0),
            ],
        )
        .unwrap();
        let degrees = g.weighted_degrees().to_vec();
        let level = Level {
            graph: &g,
            node_weights: &degrees,
            lambda: 1.0 / (2.0 * g.total_weight()),
            sticky: None,
            stickiness: 0.0,
        };
        // Community 0 holds both triangles plus the disconnected pair {6, 7}.
        let membership = vec![0, 0, 0, 0, 0, 0, 0, 0];
        for seed in 0..20 {
            let refined = refine(level, &membership, 1, 0.01, seed, &[]);
            // 6 and 7 are never with a triangle node.
            for v in 0..6 {
                assert_ne!(refined[v], refined[6]);
            }
            // Each refined community is connected.
            let mut labels: Vec<u32> = refined.clone();
            labels.sort_unstable();
            labels.dedup();
            for l in labels {
                let nodes: Vec<u32> = (0..8).filter(|&v| refined[v as usize] == l).collect();
                let sub = g.induced_subgraph(&nodes).unwrap();
                let mut comp = vec![0u32; nodes.len()];
                assert_eq!(
                    crate::leiden::components::split_disconnected(&sub, &mut comp),
                    1
                );
            }
        }
    }

    #[test]
    fn refinement_stays_inside_communities() {
        let g = Graph::from_edges(4, &[(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0)]).unwrap();
        let degrees = g.weighted_degrees().to_vec();
        let level = Level {
            graph: &g,
            node_weights: &degrees,
            lambda: 1.0 / (2.0 * g.total_weight()),
            sticky: None,
            stickiness: 0.0,
        };
        let membership = vec![0, 0, 1, 1];
        let refined = refine(level, &membership, 2, 0.01, 5, &[]);
        assert_ne!(refined[1], refined[2]);
    }
}
