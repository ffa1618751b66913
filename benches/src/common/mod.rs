//! Seeded generators of benchmark inputs (never committed: the benches make them on the fly).

use agrag_pipeline::graph::Graph;

/// A xorshift64* stream; good enough for generating inputs.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A stream from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A planted-partition graph: `num_nodes` nodes in `num_blocks` blocks of equal size; every node
/// draws `internal_degree` neighbors inside its block and `external_degree` anywhere (so the
/// mixing is about `external / (internal + external)`), unit weights. Returns the graph and the
/// block of each node.
///
/// # Panics
/// When `num_blocks` is 0 or larger than `num_nodes`.
#[track_caller]
pub fn planted_partition(
    num_nodes: u32,
    num_blocks: u32,
    internal_degree: u32,
    external_degree: u32,
    seed: u64,
) -> (Graph, Vec<u32>) {
    assert!(num_blocks > 0 && num_blocks <= num_nodes, "bad block count");
    let mut rng = XorShift::new(seed);
    let block_size = num_nodes.div_ceil(num_blocks);
    let truth: Vec<u32> = (0..num_nodes).map(|v| v / block_size).collect();
    let mut edges =
        Vec::with_capacity((num_nodes * (internal_degree + external_degree) / 2) as usize);
    for v in 0..num_nodes {
        let start = truth[v as usize] * block_size;
        let end = (start + block_size).min(num_nodes);
        for _ in 0..internal_degree.div_ceil(2) {
            let u = start + rng.below(u64::from(end - start)) as u32;
            if u != v {
                edges.push((v, u, 1.0));
            }
        }
        for _ in 0..external_degree.div_ceil(2) {
            let u = rng.below(u64::from(num_nodes)) as u32;
            if u != v {
                edges.push((v, u, 1.0));
            }
        }
    }
    let graph = Graph::from_edges(num_nodes as usize, &edges).expect("generated edges are valid");
    (graph, truth)
}
