//! Runs that continue their parent: the warm start of detection from the parent run's
//! communities, public community ids that survive across runs, and the lineage table that
//! says how each community relates to the parent's.
//!
//! Entities are compared across runs by concept id (entity ids are renumbered every run).
//! A community continues a parent's community of the same level, and inherits its public id,
//! when the Jaccard similarity of their member sets is above
//! [`MIN_JACCARD`] (one half): then the match is one-to-one without a tie-break, since two
//! disjoint communities cannot both hold more than half of a third one's members. Every other
//! community gets an id no run on the root has used (the manifest's `next_community_id`).
//! The events follow Greene, Doyle & Cunningham (2010), "Tracking the evolution of communities
//! in dynamic social networks", ASONAM, <https://doi.org/10.1109/ASONAM.2010.17>, with the
//! thresholds documented on [`community_lineage`].

use std::collections::HashMap;

use agrag_engine::format::previous::PreviousRun;
use agrag_engine::format::tables::community_lineage;
use agrag_engine::format::tables::{LineageColumns, LineageRecord};

use crate::graph::Graph;
use crate::leiden::{Hierarchy, HierarchyWarmStart, NO_COMMUNITY};

/// Smallest Jaccard similarity (exclusive) for a community to inherit a parent's id.
pub const MIN_JACCARD: f64 = community_lineage::MIN_JACCARD;

/// The warm start of detection on `graph` from `previous`: each entity's previous community
/// at every level (by concept id; `entity_keys[v]` is entity `v`'s), the new entities, and
/// the edges that appeared, vanished or changed weight. Those edges' endpoints are the
/// frontier (as in DF Leiden, Sahu 2024, <https://arxiv.org/abs/2405.11658>, which grows the
/// frontier only as its nodes move), and each split of the hierarchy queues only the members
/// whose edges inside the community changed
/// ([`hierarchical_leiden_warm`](crate::leiden::hierarchical_leiden_warm)), so a hub whose
/// degree changed through far-away edges does not reshuffle the small communities it sits
/// in. The total weight also changes the modularity of every move a little; like DF Leiden,
/// the warm start ignores that.
pub fn warm_start(
    graph: &Graph,
    entity_keys: &[&str],
    previous: &PreviousRun,
) -> HierarchyWarmStart {
    let n = graph.num_nodes();
    let by_key: HashMap<&str, u32> = entity_keys
        .iter()
        .enumerate()
        .map(|(v, k)| (*k, v as u32))
        .collect();
    let now_of_previous: Vec<Option<u32>> = previous
        .entity_concepts
        .iter()
        .map(|key| by_key.get(key.as_str()).copied())
        .collect();
    let mut new = vec![true; n];
    for v in now_of_previous.iter().flatten() {
        new[*v as usize] = false;
    }
    let num_levels = previous
        .membership
        .iter()
        .map(|r| r.0 as usize + 1)
        .max()
        .unwrap_or(0);
    let mut levels = vec![vec![NO_COMMUNITY; n]; num_levels];
    for &(level, e, c) in &previous.membership {
        if let Some(v) = now_of_previous[e as usize] {
            levels[level as usize][v as usize] = c;
        }
    }
    // The previous edges over today's entities, and those that lost an endpoint.
    let mut changed: Vec<(u32, u32)> = Vec::new();
    let mut before: Vec<(u32, u32, f64)> = Vec::with_capacity(previous.edges.len());
    for &(a, b, w) in &previous.edges {
        match (now_of_previous[a as usize], now_of_previous[b as usize]) {
            (Some(u), Some(v)) => before.push((u.min(v), u.max(v), w)),
            (Some(u), None) | (None, Some(u)) => changed.push((u, NO_COMMUNITY)),
            (None, None) => {}
        }
    }
    before.sort_by_key(|e| (e.0, e.1));
    let mut now: Vec<(u32, u32, f64)> = Vec::with_capacity(graph.num_edges());
    for u in 0..n as u32 {
        now.extend(
            graph
                .neighbors(u)
                .filter(|&(v, _)| v > u)
                .map(|(v, w)| (u, v, w)),
        );
    }
    now.sort_by_key(|e| (e.0, e.1));
    let (mut i, mut j) = (0, 0);
    while i < before.len() || j < now.len() {
        let key = |e: &(u32, u32, f64)| (e.0, e.1);
        match (before.get(i), now.get(j)) {
            (Some(b), Some(a)) if key(b) == key(a) => {
                if b.2 != a.2 {
                    changed.extend([(a.0, a.1), (a.1, a.0)]);
                }
                i += 1;
                j += 1;
            }
            (Some(b), Some(a)) if key(b) < key(a) => {
                changed.extend([(b.0, b.1), (b.1, b.0)]);
                i += 1;
            }
            (Some(b), None) => {
                changed.extend([(b.0, b.1), (b.1, b.0)]);
                i += 1;
            }
            (_, Some(a)) => {
                changed.extend([(a.0, a.1), (a.1, a.0)]);
                j += 1;
            }
            (None, None) => break,
        }
    }
    changed.sort_unstable();
    changed.dedup();
    HierarchyWarmStart {
        levels,
        new,
        changed_edges: changed,
    }
}

/// The BLAKE3 (hex) of sorted keys, each followed by a newline.
fn fingerprint(mut keys: Vec<&str>) -> String {
    keys.sort_unstable();
    let mut h = blake3::Hasher::new();
    for k in keys {
        h.update(k.as_bytes());
        h.update(b"\n");
    }
    h.finalize().to_hex().to_string()
}

/// Public ids of a run's communities and its lineage.
#[derive(Debug, Clone, PartialEq)]
pub struct PublicIds {
    /// Public id of each community of the hierarchy, by its (dense) id.
    pub ids: Vec<u32>,
    /// The lineage table and the manifest's lineage fields.
    pub lineage: LineageColumns,
}

impl PublicIds {
    /// Rows of the lineage table per event, in the order of the table's documentation.
    pub fn event_counts(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let mut out: std::collections::BTreeMap<&'static str, usize> =
            EVENTS.iter().map(|&e| (e, 0)).collect();
        for r in &self.lineage.rows {
            *out.entry(r.event).or_default() += 1;
        }
        out
    }
}

/// Every event of [`community_lineage`].
pub const EVENTS: [&str; 7] = [
    "same",
    "grew",
    "shrank",
    "split",
    "merged",
    "new",
    "dissolved",
];

/// Public ids and lineage for `hierarchy` (entities keyed by `entity_keys`, by entity id)
/// against `previous`, the parent run (`None`: every community is `new`). New ids start at
/// `next_id`, the smallest id no run on the root has used (at least the parent's).
pub fn assign(
    hierarchy: &Hierarchy,
    entity_keys: &[&str],
    previous: Option<&PreviousRun>,
    next_id: u32,
) -> PublicIds {
    let comms = &hierarchy.communities;
    let fingerprints: Vec<String> = comms
        .iter()
        .map(|c| fingerprint(c.members.iter().map(|&v| entity_keys[v as usize]).collect()))
        .collect();
    let mut next_id = next_id.max(previous.map_or(0, |p| p.next_community_id));
    let Some(prev) = previous else {
        let ids: Vec<u32> = (0..comms.len() as u32).map(|c| next_id + c).collect();
        let rows = comms
            .iter()
            .zip(&ids)
            .zip(fingerprints)
            .map(|((c, &id), fingerprint)| LineageRecord {
                community_id: id,
                level: c.level,
                event: "new",
                predecessor: None,
                predecessors: Vec::new(),
                successor: None,
                size: Some(c.members.len() as u32),
                previous_size: None,
                fingerprint,
            })
            .collect();
        return PublicIds {
            lineage: LineageColumns {
                parent_run_id: None,
                next_community_id: next_id + comms.len() as u32,
                rows,
            },
            ids,
        };
    };
    // Each entity's community at every level of this run.
    let num_entities = entity_keys.len();
    let mut now_at: HashMap<(u32, u32), u32> = HashMap::new();
    for c in comms {
        for &v in &c.members {
            now_at.insert((c.level, v), c.id);
        }
    }
    let by_key: HashMap<&str, u32> = entity_keys
        .iter()
        .enumerate()
        .map(|(v, k)| (*k, v as u32))
        .collect();
    debug_assert_eq!(by_key.len(), num_entities);
    // Overlaps (previous row, community) and previous sizes.
    let num_prev = prev.community_ids.len();
    let mut prev_size = vec![0u32; num_prev];
    let mut prev_keys: Vec<Vec<&str>> = vec![Vec::new(); num_prev];
    let mut overlap: HashMap<(u32, u32), u32> = HashMap::new();
    for &(level, e, r) in &prev.membership {
        prev_size[r as usize] += 1;
        let key = prev.entity_concepts[e as usize].as_str();
        prev_keys[r as usize].push(key);
        if let Some(&v) = by_key.get(key)
            && let Some(&c) = now_at.get(&(level, v))
        {
            *overlap.entry((r, c)).or_default() += 1;
        }
    }
    let mut pairs: Vec<((u32, u32), u32)> = overlap.into_iter().collect();
    pairs.sort_unstable();
    let size = |c: u32| comms[c as usize].members.len() as u32;
    let jaccard =
        |r: u32, c: u32, ov: u32| f64::from(ov) / f64::from(prev_size[r as usize] + size(c) - ov);
    let mut inherits: Vec<Option<(u32, f64)>> = vec![None; comms.len()];
    let mut inherited = vec![false; num_prev];
    // Predecessors of each community; communities holding at least half of a previous one;
    // communities mostly made of a previous one's members.
    let mut predecessors: Vec<Vec<u32>> = vec![Vec::new(); comms.len()];
    let mut holds_half_of = vec![0u32; comms.len()];
    let mut mostly_from = vec![0u32; num_prev];
    let mut main_predecessor: Vec<Option<(u32, u32)>> = vec![None; comms.len()];
    let mut main_successor: Vec<Option<(u32, u32)>> = vec![None; num_prev];
    for &((r, c), ov) in &pairs {
        let (ps, cs) = (prev_size[r as usize], size(c));
        let j = jaccard(r, c, ov);
        if j > MIN_JACCARD {
            inherits[c as usize] = Some((r, j));
            inherited[r as usize] = true;
        }
        if 2 * ov >= ps || 2 * ov >= cs {
            predecessors[c as usize].push(prev.community_ids[r as usize]);
        }
        if 2 * ov >= ps {
            holds_half_of[c as usize] += 1;
        }
        if 2 * ov >= cs {
            mostly_from[r as usize] += 1;
        }
        // Largest overlap; ties to the lower previous id / community (pairs are sorted).
        if main_predecessor[c as usize].is_none_or(|(_, best)| ov > best) {
            main_predecessor[c as usize] = Some((r, ov));
        }
        if main_successor[r as usize].is_none_or(|(_, best)| ov > best) {
            main_successor[r as usize] = Some((c, ov));
        }
    }
    let ids: Vec<u32> = inherits
        .iter()
        .map(|inh| match inh {
            Some((r, _)) => prev.community_ids[*r as usize],
            None => {
                next_id += 1;
                next_id - 1
            }
        })
        .collect();
    let mut rows = Vec::with_capacity(comms.len() + num_prev);
    for (c, comm) in comms.iter().enumerate() {
        let cs = comm.members.len() as u32;
        let mut preds = predecessors[c].clone();
        preds.sort_unstable();
        let (event, predecessor) = match inherits[c] {
            Some((r, j)) => {
                let ps = prev_size[r as usize];
                let event = if j == 1.0 {
                    "same"
                } else if holds_half_of[c] >= 2 {
                    "merged"
                } else if mostly_from[r as usize] >= 2 {
                    "split"
                } else if cs >= ps {
                    "grew"
                } else {
                    "shrank"
                };
                (event, Some(r))
            }
            None => {
                let main = main_predecessor[c].map(|(r, _)| r);
                if holds_half_of[c] >= 2 {
                    ("merged", main)
                } else if let Some((r, ov)) = main_predecessor[c]
                    && 2 * ov >= cs
                {
                    ("split", Some(r))
                } else {
                    ("new", None)
                }
            }
        };
        let predecessor = predecessor.map(|r| {
            let ov = pairs
                .binary_search_by_key(&(r, c as u32), |p| p.0)
                .map_or(0, |i| pairs[i].1);
            (r, ov)
        });
        rows.push(LineageRecord {
            community_id: ids[c],
            level: comm.level,
            event,
            predecessor: predecessor
                .map(|(r, ov)| (prev.community_ids[r as usize], jaccard(r, c as u32, ov))),
            predecessors: preds,
            successor: None,
            size: Some(cs),
            previous_size: predecessor.map(|(r, _)| prev_size[r as usize]),
            fingerprint: fingerprints[c].clone(),
        });
    }
    for r in (0..num_prev).filter(|&r| !inherited[r]) {
        rows.push(LineageRecord {
            community_id: prev.community_ids[r],
            level: prev.community_level[r],
            event: "dissolved",
            predecessor: None,
            predecessors: Vec::new(),
            successor: main_successor[r].map(|(c, _)| ids[c as usize]),
            size: None,
            previous_size: Some(prev_size[r]),
            fingerprint: fingerprint(std::mem::take(&mut prev_keys[r])),
        });
    }
    PublicIds {
        ids,
        lineage: LineageColumns {
            parent_run_id: Some(prev.run_id.clone()),
            next_community_id: next_id,
            rows,
        },
    }
}

/// Renumbers `hierarchy` so that its community order is ascending public id (`ids`, by
/// current id; the order the snapshot's tables are sorted by). Returns the ids in the new
/// order. Members, levels and statistics are unchanged.
pub fn reorder(hierarchy: &mut Hierarchy, ids: &[u32]) -> Vec<u32> {
    let n = ids.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&c| ids[c as usize]);
    let mut new_of = vec![0u32; n];
    for (new, &old) in order.iter().enumerate() {
        new_of[old as usize] = new as u32;
    }
    let mut old = std::mem::take(&mut hierarchy.communities);
    let mut out = Vec::with_capacity(n);
    for &o in &order {
        let mut c = std::mem::replace(
            &mut old[o as usize],
            crate::leiden::Community {
                id: 0,
                level: 0,
                parent: None,
                children: Vec::new(),
                members: Vec::new(),
                is_leaf: true,
            },
        );
        c.id = new_of[o as usize];
        c.parent = c.parent.map(|p| new_of[p as usize]);
        for ch in &mut c.children {
            *ch = new_of[*ch as usize];
        }
        c.children.sort_unstable();
        out.push(c);
    }
    hierarchy.communities = out;
    order.iter().map(|&o| ids[o as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leiden::{Community, DetectionStats};

    /// A one-level hierarchy of `sets` (member entity ids), in order.
    fn flat(sets: &[&[u32]]) -> Hierarchy {
        let communities = sets
            .iter()
            .enumerate()
            .map(|(i, m)| Community {
                id: i as u32,
                level: 0,
                parent: None,
                children: Vec::new(),
                members: m.to_vec(),
                is_leaf: true,
            })
            .collect();
        Hierarchy {
            communities,
            stats: DetectionStats {
                num_nodes: 0,
                num_edges: 0,
                total_weight: 0.0,
                isolates: 0,
                communities: 0,
                leaves: 0,
                oversized_leaves: 0,
                oversized_leaves_at_max_levels: 0,
                largest_leaf: 0,
                levels: Vec::new(),
                iterations: 0,
                seconds: 0.0,
            },
        }
    }

    /// A previous run whose entities are `keys` and whose level-0 communities are `sets` (of
    /// indices into `keys`) with public ids `ids`.
    fn previous(keys: &[&str], sets: &[&[u32]], ids: &[u32], next: u32) -> PreviousRun {
        let mut membership: Vec<(u32, u32, u32)> = sets
            .iter()
            .enumerate()
            .flat_map(|(r, m)| m.iter().map(move |&e| (0, e, r as u32)))
            .collect();
        membership.sort_unstable();
        PreviousRun {
            run_id: "parent".into(),
            entity_concepts: keys.iter().map(|k| (*k).to_owned()).collect(),
            community_ids: ids.to_vec(),
            community_level: vec![0; ids.len()],
            membership,
            edges: Vec::new(),
            detection: serde_json::Value::Null,
            embedder: agrag_engine::embed::Embedder::identity(
                &agrag_engine::embed::HashEmbedder::new(4),
            )
            .clone(),
            community_vectors: serde_json::Value::Null,
            report_text_hashes: vec![[0; 32]; ids.len()],
            report_vectors: arrow_array::RecordBatch::new_empty(
                agrag_engine::format::tables::report_embeddings::schema(4),
            ),
            report_offsets: vec![0; ids.len() + 1],
            text_embeddings: None,
            dir: std::path::PathBuf::new(),
            files: Vec::new(),
            next_community_id: next,
        }
    }

    #[test]
    fn a_first_run_numbers_its_communities_from_the_next_free_id() {
        let h = flat(&[&[0, 1], &[2]]);
        let p = assign(&h, &["a", "b", "c"], None, 0);
        assert_eq!(p.ids, vec![0, 1]);
        assert_eq!(p.lineage.next_community_id, 2);
        assert!(p.lineage.rows.iter().all(|r| r.event == "new"));
        assert_eq!(p.lineage.parent_run_id, None);
    }

    #[test]
    fn events_ids_and_successors_follow_the_overlaps() {
        // Previous: A={a,b,c,d} 5, B={e,f,g,h} 7, C={i,j} 9, D={k,l,m,n} 11, E={o,p,q} 13,
        // F={r,s} 15. Now: A whole, B plus x, D split in halves, E and F merged; C's
        // entities are gone.
        let old_keys = [
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q",
            "r", "s",
        ];
        let prev = previous(
            &old_keys,
            &[
                &[0, 1, 2, 3],
                &[4, 5, 6, 7],
                &[8, 9],
                &[10, 11, 12, 13],
                &[14, 15, 16],
                &[17, 18],
            ],
            &[5, 7, 9, 11, 13, 15],
            16,
        );
        let keys = [
            "a", "b", "c", "d", "e", "f", "g", "h", "x", "k", "l", "m", "n", "o", "p", "q", "r",
            "s",
        ];
        let h = flat(&[
            &[0, 1, 2, 3],
            &[4, 5, 6, 7, 8],
            &[9, 10],
            &[11, 12],
            &[13, 14, 15, 16, 17],
        ]);
        let p = assign(&h, &keys, Some(&prev), 0);
        assert_eq!(p.ids, vec![5, 7, 16, 17, 13]);
        assert_eq!(p.lineage.next_community_id, 18);
        let by_id: HashMap<(u32, &str), &LineageRecord> = p
            .lineage
            .rows
            .iter()
            .map(|r| ((r.community_id, r.event), r))
            .collect();
        assert_eq!(by_id[&(5, "same")].predecessor, Some((5, 1.0)));
        assert_eq!(by_id[&(7, "grew")].predecessor, Some((7, 0.8)));
        assert_eq!(by_id[&(16, "split")].predecessor, Some((11, 0.5)));
        assert_eq!(by_id[&(17, "split")].predecessors, vec![11]);
        let merged = by_id[&(13, "merged")];
        assert_eq!(merged.predecessors, vec![13, 15]);
        assert_eq!(merged.predecessor, Some((13, 0.6)));
        assert_eq!(by_id[&(9, "dissolved")].successor, None);
        assert_eq!(by_id[&(11, "dissolved")].successor, Some(16));
        assert_eq!(by_id[&(15, "dissolved")].successor, Some(13));
        assert_eq!(by_id[&(15, "dissolved")].previous_size, Some(2));
        assert_eq!(p.lineage.rows.len(), 5 + 3);
        // Equal member sets, equal fingerprints, across runs.
        assert_eq!(
            by_id[&(5, "same")].fingerprint,
            fingerprint(vec!["d", "c", "b", "a"])
        );
    }

    #[test]
    fn reorder_sorts_communities_by_public_id_and_renames_the_links() {
        let mut h = flat(&[&[0, 1, 2], &[3]]);
        h.communities[0].children = vec![2];
        h.communities[0].is_leaf = false;
        h.communities.push(Community {
            id: 2,
            level: 1,
            parent: Some(0),
            children: Vec::new(),
            members: vec![0, 1, 2],
            is_leaf: true,
        });
        let ids = reorder(&mut h, &[9, 4, 2]);
        assert_eq!(ids, vec![2, 4, 9]);
        let c = &h.communities;
        assert_eq!((c[0].id, c[0].level, c[0].parent), (0, 1, Some(2)));
        assert_eq!((c[2].id, c[2].children.clone()), (2, vec![0]));
        assert_eq!(h.num_levels(), 2);
    }
}
