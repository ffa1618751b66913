//! The `agrag-pipeline` command line (wired by the pipeline owner).
fn main() {}
