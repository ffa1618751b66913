//! Weighted undirected graphs for community detection.
//!
//! [`Graph`] is a compressed sparse row (CSR) graph with `u32` node ids and `f64` weights, built by
//! [`Graph::from_edges`] or read from an edge-list file by [`read_edge_list`]. The input policy
//! (duplicates summed, zero weights dropped, invalid weights rejected, self-loops kept with igraph's
//! modularity convention) is documented on [`Graph::from_edges`].

pub mod builder;
pub mod csr;
pub mod edgelist;
pub mod interop;

pub(crate) use csr::with_row;
pub use csr::{Graph, RowWeights};
pub use edgelist::read_edge_list;
