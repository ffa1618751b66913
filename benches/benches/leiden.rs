//! Leiden benchmarks (placeholder until the criterion groups land).

fn main() {}
