//! The node-link drawings of the largest communities: for each of the [`MAX_DRAWINGS`] largest
//! level-0 communities, its [`MAX_DRAWING_NODES`] members most connected inside it and the
//! [`MAX_DRAWING_EDGES`] heaviest relationships among them, coloured by their level-1
//! community. Bounded whatever the run's size: a drawing never holds more than those.

use std::collections::HashMap;

use serde::Serialize;

use super::graph::Weights;
use super::hierarchy::{Entities, Hierarchy, Membership};

/// Most communities drawn.
pub const MAX_DRAWINGS: usize = 6;
/// Most members drawn per community.
pub const MAX_DRAWING_NODES: usize = 30;
/// Most relationships drawn per community.
pub const MAX_DRAWING_EDGES: usize = 80;

/// One drawing, as the page's script reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Network {
    /// The community drawn (level 0).
    pub community_id: u32,
    /// Its members.
    pub size: u32,
    /// Its report title.
    pub title: String,
    /// Relationships inside it (all, not only those drawn).
    pub internal_relationships: u64,
    /// The members drawn.
    pub nodes: Vec<NetworkNode>,
    /// The relationships drawn: `[node, node, weight]`, heaviest first.
    pub edges: Vec<(u32, u32, f64)>,
    /// The level-1 communities the drawn members belong to, largest first: `[id, size]`.
    pub groups: Vec<(u32, u32)>,
}

/// One member in a drawing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetworkNode {
    /// Display name.
    pub name: String,
    /// Weight of its relationships inside the community.
    pub strength: f64,
    /// Index into [`Network::groups`] of its level-1 community, `None` when it has none.
    pub group: Option<u32>,
}

/// The communities to draw and their chosen members.
pub(crate) struct Plan {
    /// Communities drawn, largest first.
    pub communities: Vec<u32>,
    /// Chosen members of each, most connected inside first.
    pub members: Vec<Vec<u32>>,
    /// Entity → (drawing, node index), for the scan of edges.
    pub index: HashMap<u32, (usize, u32)>,
}

/// Chooses the drawings: the largest level-0 communities of at least two members (ties:
/// lower id), and in each the members of highest internal strength (ties: higher degree,
/// then lower id).
pub(crate) fn plan(h: &Hierarchy, membership: &Membership, weights: &Weights) -> Plan {
    let mut roots: Vec<u32> = h
        .roots
        .iter()
        .copied()
        .filter(|&c| h.size[c as usize] >= 2)
        .collect();
    roots.sort_by_key(|&c| (std::cmp::Reverse(h.size[c as usize]), c));
    roots.truncate(MAX_DRAWINGS);
    let slot: HashMap<u32, usize> = roots.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); roots.len()];
    for e in 0..weights.degree.len() as u32 {
        if let Some(i) = membership.root_of(e).and_then(|c| slot.get(&c)) {
            members[*i].push(e);
        }
    }
    let mut index = HashMap::new();
    for (d, list) in members.iter_mut().enumerate() {
        list.sort_by(|&a, &b| {
            let (a_, b_) = (a as usize, b as usize);
            weights.root_strength[b_]
                .total_cmp(&weights.root_strength[a_])
                .then(weights.degree[b_].total_cmp(&weights.degree[a_]))
                .then(a.cmp(&b))
        });
        list.truncate(MAX_DRAWING_NODES);
        for (n, &e) in list.iter().enumerate() {
            index.insert(e, (d, n as u32));
        }
    }
    Plan {
        communities: roots,
        members,
        index,
    }
}

/// The drawings of `plan`, with `edges` from the second scan and `titles` of the communities.
pub(crate) fn drawings(
    plan: &Plan,
    edges: Vec<Vec<(u32, u32, f64)>>,
    h: &Hierarchy,
    membership: &Membership,
    entities: &Entities,
    weights: &Weights,
    title: impl Fn(u32) -> String,
) -> Vec<Network> {
    plan.communities
        .iter()
        .zip(&plan.members)
        .zip(edges)
        .map(|((&c, members), edges)| {
            let mut groups: Vec<(u32, u32)> = Vec::new();
            for &e in members {
                if let Some(g) = membership.community_at(1, e)
                    && !groups.iter().any(|x| x.0 == g)
                {
                    groups.push((g, h.size[g as usize]));
                }
            }
            groups.sort_by_key(|&(g, s)| (std::cmp::Reverse(s), g));
            let nodes = members
                .iter()
                .map(|&e| NetworkNode {
                    name: entities.name[e as usize].clone(),
                    strength: weights.root_strength[e as usize],
                    group: membership
                        .community_at(1, e)
                        .and_then(|g| groups.iter().position(|x| x.0 == g))
                        .map(|i| i as u32),
                })
                .collect();
            Network {
                community_id: h.ids[c as usize],
                size: h.size[c as usize],
                title: title(c),
                internal_relationships: weights.internal_edges[c as usize],
                nodes,
                edges,
                groups,
            }
        })
        .collect()
}
