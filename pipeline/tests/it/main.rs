//! Integration tests.

// Community detection: quality bar vs igraph, connectivity, hierarchy, determinism, input policy.
mod leiden;
