//! The two scans of `relationships.parquet`: weights inside every community (for modularity,
//! and for the share of a community's weight that stays inside it), and the strongest edges
//! among the members chosen for the node-link drawings.
//!
//! Each scan streams the table once with three columns decoded and keeps memory in proportion
//! to entities and communities, never to edges.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use arrow_array::{Float64Array, UInt32Array};

use super::hierarchy::{Hierarchy, Membership};
use super::progress::Progress;
use super::read::{Table, projection};
use crate::error::{EngineError, Result};
use crate::format::reader::column_no_nulls;
use crate::format::tables::relationships;

/// What the first scan of the relationships finds.
pub(crate) struct Weights {
    /// Total edge weight `m` (each undirected edge once).
    pub total_weight: f64,
    /// Number of edges.
    pub num_edges: u64,
    /// Weighted degree of each entity, from the edges themselves.
    pub degree: Vec<f64>,
    /// Weight of the edges inside each community (both ends members of it).
    pub internal_weight: Vec<f64>,
    /// Number of edges inside each community.
    pub internal_edges: Vec<u64>,
    /// Weight of each entity's edges to members of its own level-0 community.
    pub root_strength: Vec<f64>,
}

fn table(dir: &Path, run_id: &str) -> Result<Table> {
    let full = relationships::schema();
    let wanted = projection(
        &full,
        &[
            relationships::SOURCE,
            relationships::TARGET,
            relationships::WEIGHT,
        ],
    );
    Table::open(dir, relationships::FILE, &wanted, run_id)
}

/// Calls `f(source, target, weight)` for every edge, checking ids and weights.
fn for_each_edge(
    dir: &Path,
    run_id: &str,
    num_entities: usize,
    progress: &Progress,
    mut f: impl FnMut(u32, u32, f64),
) -> Result<()> {
    let mut row = 0u64;
    table(dir, run_id)?.for_each(progress, |b, path| {
        let s = column_no_nulls::<UInt32Array>(b, relationships::SOURCE, path)?;
        let t = column_no_nulls::<UInt32Array>(b, relationships::TARGET, path)?;
        let w = column_no_nulls::<Float64Array>(b, relationships::WEIGHT, path)?;
        for i in 0..b.num_rows() {
            let (s, t, w) = (s.value(i), t.value(i), w.value(i));
            if s as usize >= num_entities || t as usize >= num_entities {
                return Err(EngineError::corrupt(
                    path,
                    format!("row {row}: edge {s}–{t} names an entity beyond the {num_entities} of entities.parquet"),
                ));
            }
            if !w.is_finite() || w < 0.0 {
                return Err(EngineError::corrupt(
                    path,
                    format!("row {row}: weight {w} (weights are finite and non-negative)"),
                ));
            }
            f(s, t, w);
            row += 1;
        }
        Ok(())
    })
}

/// First scan: total weight, degrees, and the weight inside every community.
///
/// # Errors
/// As [`Table::open`]; [`EngineError::Corrupt`] for an entity out of range or a weight that is
/// negative or not finite.
pub(crate) fn scan_weights(
    dir: &Path,
    run_id: &str,
    hierarchy: &Hierarchy,
    membership: &Membership,
    num_entities: usize,
    progress: &Progress,
) -> Result<Weights> {
    let mut out = Weights {
        total_weight: 0.0,
        num_edges: 0,
        degree: vec![0.0; num_entities],
        internal_weight: vec![0.0; hierarchy.len()],
        internal_edges: vec![0; hierarchy.len()],
        root_strength: vec![0.0; num_entities],
    };
    let levels = membership.num_levels();
    for_each_edge(dir, run_id, num_entities, progress, |s, t, w| {
        out.total_weight += w;
        out.num_edges += 1;
        out.degree[s as usize] += w;
        out.degree[t as usize] += w;
        // Communities nest, so the two ends share a prefix of the levels, then part.
        for level in 0..levels {
            match (
                membership.community_at(level, s),
                membership.community_at(level, t),
            ) {
                (Some(a), Some(b)) if a == b => {
                    out.internal_weight[a as usize] += w;
                    out.internal_edges[a as usize] += 1;
                    if level == 0 {
                        out.root_strength[s as usize] += w;
                        out.root_strength[t as usize] += w;
                    }
                }
                _ => break,
            }
        }
    })?;
    Ok(out)
}

/// The weighted degree summed over the members of every community.
pub(crate) fn degree_sums(
    hierarchy: &Hierarchy,
    membership: &Membership,
    weights: &Weights,
) -> Vec<f64> {
    let mut sums = vec![0.0; hierarchy.len()];
    for (e, &d) in weights.degree.iter().enumerate() {
        for level in 0..membership.num_levels() {
            match membership.community_at(level, e as u32) {
                Some(c) => sums[c as usize] += d,
                None => break,
            }
        }
    }
    sums
}

/// Modularity (γ = 1) of the partition at every level, computed from the tables: at level `l`
/// the communities of level `l` together with the leaves above it (an entity whose leaf lies
/// above `l` keeps its leaf community), as the pipeline's statistics define it.
/// `Q = Σ_c (w_c / m − (d_c / 2m)²)` with `w_c` the weight inside `c`, `d_c` its members'
/// weighted degrees ([`degree_sums`]) and `m` the total weight; 0 for a graph without weight.
pub(crate) fn modularity_per_level(
    hierarchy: &Hierarchy,
    weights: &Weights,
    degree_sum: &[f64],
) -> Vec<f64> {
    let m = weights.total_weight;
    let term = |c: usize| {
        if m > 0.0 {
            weights.internal_weight[c] / m - (degree_sum[c] / (2.0 * m)).powi(2)
        } else {
            0.0
        }
    };
    (0..hierarchy.num_levels)
        .map(|level| {
            (0..hierarchy.len())
                .filter(|&c| {
                    let l = hierarchy.level[c] as usize;
                    l == level || (l < level && hierarchy.is_leaf[c])
                })
                .map(term)
                .sum()
        })
        .collect()
}

/// Second scan: the edges among `chosen` entities, grouped by drawing. `chosen` maps an
/// entity to `(drawing, node index in that drawing)`; an edge is kept when both ends are in
/// the same drawing. Returns, per drawing, at most `max_edges` edges `(node, node, weight)`,
/// heaviest first (ties: by node indices).
///
/// # Errors
/// As [`scan_weights`].
pub(crate) fn edges_among(
    dir: &Path,
    run_id: &str,
    num_entities: usize,
    chosen: &HashMap<u32, (usize, u32)>,
    num_drawings: usize,
    max_edges: usize,
    progress: &Progress,
) -> Result<Vec<Vec<(u32, u32, f64)>>> {
    let mut out = vec![Vec::new(); num_drawings];
    for_each_edge(dir, run_id, num_entities, progress, |s, t, w| {
        if let (Some(&(da, a)), Some(&(db, b))) = (chosen.get(&s), chosen.get(&t))
            && da == db
            && a != b
        {
            out[da].push((a.min(b), a.max(b), w));
        }
    })?;
    for edges in &mut out {
        *edges = backbone(std::mem::take(edges), max_edges);
    }
    Ok(out)
}

/// At most `max_edges` of `edges`, heaviest first (ties: by node indices): first every node's
/// heaviest edge (so that no drawn member floats alone while it has an edge to another drawn
/// member), then the heaviest of the rest.
fn backbone(mut edges: Vec<(u32, u32, f64)>, max_edges: usize) -> Vec<(u32, u32, f64)> {
    edges.sort_by(|x, y| y.2.total_cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
    let mut has_edge: HashSet<u32> = HashSet::new();
    let mut keep = vec![false; edges.len()];
    let mut kept = 0;
    for (i, &(a, b, _)) in edges.iter().enumerate() {
        if kept < max_edges && (!has_edge.contains(&a) || !has_edge.contains(&b)) {
            keep[i] = true;
            kept += 1;
            has_edge.insert(a);
            has_edge.insert(b);
        }
    }
    for k in &mut keep {
        if kept >= max_edges {
            break;
        }
        if !*k {
            *k = true;
            kept += 1;
        }
    }
    edges
        .into_iter()
        .zip(keep)
        .filter_map(|(e, k)| k.then_some(e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::backbone;

    #[test]
    fn the_backbone_keeps_every_node_and_the_heaviest_edges() {
        // A heavy triangle 0-1-2 and node 3 hanging on by a light edge.
        let edges = vec![
            (0, 1, 9.0),
            (1, 2, 8.0),
            (0, 2, 7.0),
            (2, 3, 1.0),
            (1, 3, 0.5),
        ];
        assert_eq!(
            backbone(edges.clone(), 3),
            vec![(0, 1, 9.0), (1, 2, 8.0), (2, 3, 1.0)]
        );
        assert_eq!(backbone(edges.clone(), 10), {
            let mut all = edges;
            all.sort_by(|x, y| y.2.total_cmp(&x.2));
            all
        });
    }
}
