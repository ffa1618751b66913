//! Splitting communities into their connected components.

use rayon::prelude::*;

use super::aggregate::{group_by_label, renumber};
use crate::graph::Graph;

/// Replaces each community of `membership` by its connected components and renumbers the result
/// densely in order of smallest node; returns the number of communities.
///
/// Splitting a community whose parts share no edge never lowers modularity or CPM (`γ > 0`): the
/// penalty of the pair of parts disappears and no internal weight is lost. It is the last step of
/// every run, so that every community is connected whatever the optimiser did (Louvain does not
/// guarantee it; Leiden does in theory, and this makes it hold in practice, at **O(|V| + |E|)**,
/// parallel over communities).
pub(crate) fn split_disconnected(graph: &Graph, membership: &mut [u32]) -> usize {
    let n = graph.num_nodes();
    let mut dense = membership.to_vec();
    let k = renumber(&mut dense);
    let (offsets, members) = group_by_label(&dense, k);
    drop(dense);
    let mut position = vec![0u32; n];
    for (i, &v) in members.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    // Component of each grouped position, as the grouped position of its first (smallest) node.
    let mut root = vec![u32::MAX; n];
    let mut jobs: Vec<(usize, &mut [u32])> = Vec::with_capacity(k);
    let mut rest = &mut root[..];
    for c in 0..k {
        let (head, tail) = rest.split_at_mut(offsets[c + 1] - offsets[c]);
        if head.len() == 1 {
            head[0] = offsets[c] as u32;
        } else {
            jobs.push((offsets[c], head));
        }
        rest = tail;
    }
    // Largest community first, one per task (sizes are skewed; see `refine`). The components
    // found do not depend on the order.
    jobs.sort_unstable_by_key(|(start, out)| (std::cmp::Reverse(out.len()), *start));
    jobs.into_par_iter()
        .with_max_len(1)
        .for_each(|(start, out)| {
            let len = out.len();
            let mut stack: Vec<u32> = Vec::new();
            for first in 0..len {
                if out[first] != u32::MAX {
                    continue;
                }
                let id = (start + first) as u32;
                out[first] = id;
                stack.push(first as u32);
                while let Some(i) = stack.pop() {
                    for &u in graph.row(members[start + i as usize]).0 {
                        let j = position[u as usize].wrapping_sub(start as u32) as usize;
                        if j < len && out[j] == u32::MAX {
                            out[j] = id;
                            stack.push(j as u32);
                        }
                    }
                }
            }
        });
    for (i, &v) in members.iter().enumerate() {
        membership[v as usize] = root[i];
    }
    // Dense, in order of smallest node (each component first appears at its smallest node).
    renumber(membership)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_renumbers() {
        let g = Graph::from_edges(5, &[(0, 1, 1.0), (2, 3, 1.0)]).unwrap();
        let mut m = vec![7, 7, 7, 7, 3];
        assert_eq!(split_disconnected(&g, &mut m), 3);
        assert_eq!(m, vec![0, 0, 1, 1, 2]);
        let mut m = vec![1, 0, 1, 1, 1];
        assert_eq!(split_disconnected(&g, &mut m), 4);
        assert_eq!(m, vec![0, 1, 2, 2, 3]);
    }
}
