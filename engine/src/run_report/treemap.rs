//! Which communities the treemap draws, within a bound, and the page data for it.
//!
//! A run of 10⁵ communities cannot be drawn whole (nor read: most would be specks), so the
//! treemap draws at most [`MAX_TREEMAP_NODES`] communities, chosen largest first from the top
//! of the hierarchy down: a community is drawn only when its parent is, so the drawing is
//! always a complete upper part of the tree. The communities left out under a drawn parent
//! (or at level 0) are drawn as one box, "N smaller communities", of their total size, so
//! every member still fills its share of the area. A run of at most [`MAX_TREEMAP_NODES`]
//! communities is drawn whole.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use super::hierarchy::Hierarchy;

/// Most communities the treemap draws.
pub const MAX_TREEMAP_NODES: usize = 1500;

/// The communities chosen for the treemap.
pub(crate) struct Selection {
    /// Drawn communities, in the order they were chosen (largest first, parents first).
    pub drawn: Vec<u32>,
    /// Whether each community is drawn.
    pub is_drawn: Vec<bool>,
    /// The boxes standing for communities left out.
    pub aggregates: Vec<Aggregate>,
}

/// Communities left out under one drawn parent (or at level 0), drawn as one box.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregate {
    /// The drawn parent, `None` at level 0.
    #[serde(rename = "p")]
    pub parent: Option<u32>,
    /// Level of the communities left out.
    #[serde(rename = "l")]
    pub level: u32,
    /// How many communities it stands for.
    #[serde(rename = "n")]
    pub communities: u64,
    /// Their members, in total.
    #[serde(rename = "s")]
    pub members: u64,
}

/// One drawn community as the page's script reads it (short keys: the page holds up to
/// [`MAX_TREEMAP_NODES`] of them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreemapNode {
    /// Community id.
    #[serde(rename = "i")]
    pub id: u32,
    /// Parent community (drawn whenever this one is), `None` at level 0.
    #[serde(rename = "p")]
    pub parent: Option<u32>,
    /// Level.
    #[serde(rename = "l")]
    pub level: u32,
    /// Members (the box's area).
    #[serde(rename = "s")]
    pub size: u32,
    /// Number of child communities (drawn or not).
    #[serde(rename = "k")]
    pub num_children: u32,
    /// Report title.
    #[serde(rename = "t")]
    pub title: String,
    /// Up to five member names, highest weighted degree first.
    #[serde(rename = "m")]
    pub members: Vec<String>,
    /// Report summary (cut).
    #[serde(rename = "u")]
    pub summary: String,
    /// Report findings (the first few, cut).
    #[serde(rename = "f")]
    pub findings: Vec<String>,
    /// Number of findings the report has.
    #[serde(rename = "g")]
    pub num_findings: usize,
    /// Share of the members' relationship weight that stays inside the community, in [0, 1]
    /// (`None` when its members have no relationships).
    #[serde(rename = "w")]
    pub internal_share: Option<f64>,
}

/// Chooses at most `limit` communities of `h`, largest first (ties: lower id), each only
/// after its parent.
pub(crate) fn select(h: &Hierarchy, limit: usize) -> Selection {
    let mut is_drawn = vec![false; h.len()];
    let mut drawn = Vec::new();
    let mut heap: BinaryHeap<(u32, Reverse<u32>)> = h
        .roots
        .iter()
        .map(|&c| (h.size[c as usize], Reverse(c)))
        .collect();
    while drawn.len() < limit {
        let Some((_, Reverse(c))) = heap.pop() else {
            break;
        };
        is_drawn[c as usize] = true;
        drawn.push(c);
        for &k in &h.children[c as usize] {
            heap.push((h.size[k as usize], Reverse(k)));
        }
    }
    let mut aggregates = Vec::new();
    let mut left_out = |parent: Option<u32>, level: u32, ids: &[u32]| {
        let out: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&c| !is_drawn[c as usize])
            .collect();
        if !out.is_empty() {
            aggregates.push(Aggregate {
                parent,
                level,
                communities: out.len() as u64,
                members: out.iter().map(|&c| u64::from(h.size[c as usize])).sum(),
            });
        }
    };
    left_out(None, 0, &h.roots);
    for &c in &drawn {
        left_out(Some(c), h.level[c as usize] + 1, &h.children[c as usize]);
    }
    Selection {
        drawn,
        is_drawn,
        aggregates,
    }
}
