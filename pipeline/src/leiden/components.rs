//! Splitting communities into their connected components.

use crate::graph::Graph;

/// Replaces each community of `membership` by its connected components and renumbers the result
/// densely in order of smallest node; returns the number of communities.
///
/// Splitting a community whose parts share no edge never lowers modularity or CPM (`γ > 0`): the
/// penalty of the pair of parts disappears and no internal weight is lost. It is the last step of
/// every run, so that every community is connected whatever the optimiser did (Louvain does not
/// guarantee it; Leiden does in theory, and this makes it hold in practice, at **O(|V| + |E|)**).
pub(crate) fn split_disconnected(graph: &Graph, membership: &mut [u32]) -> usize {
    let n = graph.num_nodes();
    let mut label = vec![u32::MAX; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut next = 0u32;
    for root in 0..n {
        if label[root] != u32::MAX {
            continue;
        }
        let c = membership[root];
        label[root] = next;
        stack.push(root as u32);
        while let Some(v) = stack.pop() {
            for &u in graph.row(v).0 {
                let u = u as usize;
                if label[u] == u32::MAX && membership[u] == c {
                    label[u] = next;
                    stack.push(u as u32);
                }
            }
        }
        next += 1;
    }
    membership.copy_from_slice(&label);
    next as usize
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
