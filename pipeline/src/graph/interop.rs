//! Graphs Rust users already hold: [`Graph::from_petgraph`] takes a `petgraph` graph.

use petgraph::visit::{EdgeRef, IntoEdgeReferences, IntoNodeIdentifiers, NodeIndexable};

use super::Graph;
use crate::error::Result;

impl Graph {
    /// Builds a [`Graph`] from any petgraph graph (`Graph`, `StableGraph`, directed or
    /// undirected), with each edge's weight given by `weight`, so that
    /// [`crate::leiden::leiden`] and [`crate::leiden::hierarchical_leiden`] run on it directly.
    ///
    /// # Arguments
    /// * `graph`: a reference to a petgraph graph (anything that lists its nodes and edges).
    ///   Edges are read as undirected: a directed edge `u → v` and its reverse `v → u` are one
    ///   edge whose weight is their sum, as [`Graph::from_edges`] merges reciprocal edges.
    /// * `weight`: the weight of an edge from its petgraph weight, e.g. `|w| *w` for `f64`
    ///   weights or `|_| 1.0` for an unweighted graph.
    ///
    /// # Returns
    /// The graph and, for each of its node ids `0..n`, the petgraph node it stands for (in the
    /// order petgraph lists its nodes; a `StableGraph`'s removed nodes are skipped, so ids stay
    /// dense). A `membership[i]` of a partition belongs to `nodes[i]`.
    ///
    /// # Errors
    /// Those of [`Graph::from_edges`]: [`crate::PipelineError::InvalidWeight`] for a NaN,
    /// infinite or negative weight (naming the edge's index in petgraph's edge order and its
    /// dense ends), [`crate::PipelineError::InvalidConfig`] for more than `u32::MAX` nodes.
    ///
    /// # Complexity
    /// Time **O(|V| + |E| log d_max)**; auxiliary space **O(|V| + |E|)**.
    ///
    /// # Examples
    /// ```
    /// use agrag_pipeline::graph::Graph;
    /// use agrag_pipeline::leiden::{leiden, LeidenConfig};
    /// let mut pg = petgraph::graph::UnGraph::<&str, f64>::new_undirected();
    /// let n: Vec<_> = ["a", "b", "c", "d", "e", "f"].iter().map(|s| pg.add_node(*s)).collect();
    /// for (u, v) in [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)] {
    ///     pg.add_edge(n[u], n[v], 1.0);
    /// }
    /// let (g, nodes) = Graph::from_petgraph(&pg, |w| *w)?;
    /// let p = leiden(&g, &LeidenConfig::default())?;
    /// assert_eq!(p.membership, vec![0, 0, 0, 1, 1, 1]);
    /// assert_eq!(pg[nodes[3]], "d");
    /// # Ok::<(), agrag_pipeline::PipelineError>(())
    /// ```
    pub fn from_petgraph<G, F>(graph: G, mut weight: F) -> Result<(Graph, Vec<G::NodeId>)>
    where
        G: IntoNodeIdentifiers + IntoEdgeReferences + NodeIndexable,
        F: FnMut(&G::EdgeWeight) -> f64,
    {
        let nodes: Vec<G::NodeId> = graph.node_identifiers().collect();
        // petgraph index → dense id (a StableGraph's holes stay u32::MAX).
        let mut dense = vec![u32::MAX; graph.node_bound()];
        for (i, &n) in nodes.iter().enumerate() {
            dense[graph.to_index(n)] = i as u32;
        }
        let edges: Vec<(u32, u32, f64)> = graph
            .edge_references()
            .map(|e| {
                (
                    dense[graph.to_index(e.source())],
                    dense[graph.to_index(e.target())],
                    weight(e.weight()),
                )
            })
            .collect();
        Ok((Graph::from_edges(nodes.len(), &edges)?, nodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leiden::tests::ring_of_cliques;
    use crate::leiden::{LeidenConfig, hierarchical_leiden, leiden};
    use petgraph::graph::UnGraph;
    use petgraph::stable_graph::StableGraph;

    fn edges_of(g: &Graph) -> Vec<(u32, u32, f64)> {
        (0..g.num_nodes() as u32)
            .flat_map(|u| {
                g.neighbors(u)
                    .filter(move |&(v, _)| u <= v)
                    .map(move |(v, w)| (u, v, w))
            })
            .collect()
    }

    #[test]
    fn a_petgraph_graph_gives_the_membership_of_the_edge_list() {
        let reference = ring_of_cliques(8, 5);
        let edges = edges_of(&reference);
        let mut pg = UnGraph::<u32, f64>::new_undirected();
        let ids: Vec<_> = (0..reference.num_nodes() as u32)
            .map(|i| pg.add_node(i))
            .collect();
        for &(u, v, w) in &edges {
            pg.add_edge(ids[u as usize], ids[v as usize], w);
        }
        let (g, nodes) = Graph::from_petgraph(&pg, |w| *w).unwrap();
        assert_eq!(g, reference);
        assert_eq!(nodes, ids);
        let config = LeidenConfig::default();
        assert_eq!(
            leiden(&g, &config).unwrap().membership,
            leiden(&reference, &config).unwrap().membership
        );
        assert_eq!(
            hierarchical_leiden(&g, &config).unwrap().communities,
            hierarchical_leiden(&reference, &config)
                .unwrap()
                .communities
        );
    }

    #[test]
    fn a_stable_graph_with_removed_nodes_keeps_ids_dense() {
        let reference = ring_of_cliques(6, 4);
        let mut sg = StableGraph::<u32, f64, petgraph::Undirected>::default();
        // A node added and removed first leaves a hole at index 0.
        let hole = sg.add_node(u32::MAX);
        let ids: Vec<_> = (0..reference.num_nodes() as u32)
            .map(|i| sg.add_node(i))
            .collect();
        sg.remove_node(hole);
        for (u, v, w) in edges_of(&reference) {
            sg.add_edge(ids[u as usize], ids[v as usize], w);
        }
        let (g, nodes) = Graph::from_petgraph(&sg, |w| *w).unwrap();
        assert_eq!(g, reference);
        assert_eq!(nodes, ids);
        let config = LeidenConfig::default();
        assert_eq!(
            leiden(&g, &config).unwrap().membership,
            leiden(&reference, &config).unwrap().membership
        );
        // Weights go through the closure; a bad one is named like any edge's.
        let e = Graph::from_petgraph(&sg, |_| f64::NAN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a finite non-negative number"), "{e}");
    }
}
