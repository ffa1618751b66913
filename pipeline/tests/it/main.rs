//! Integration tests of agrag-pipeline (one binary, ripgrep style).

// The whole job on a fixture from the real corpus; bad input; determinism of the tables.
mod e2e;
// Community detection: quality bar vs igraph, connectivity, hierarchy, determinism, input policy.
mod leiden;
// Live visibility, scope and every status of search_themes on a real snapshot.
mod visibility;
