//! Prints `detect_graph`'s report for an edge list (what `agrag-pipeline detect-graph` will print).
use agrag_pipeline::detect::{DetectGraphConfig, detect_graph};
use agrag_pipeline::leiden::LeidenConfig;
fn main() {
    let edges = std::env::args()
        .nth(1)
        .expect("usage: detect_demo EDGES [OUT.parquet]");
    let out = std::env::args().nth(2).map(Into::into);
    let config = DetectGraphConfig {
        edges: edges.into(),
        leiden: LeidenConfig::default(),
        threads: Some(2),
        membership_out: out,
    };
    match detect_graph(&config) {
        Ok(report) => println!("{report}"),
        Err(e) => eprintln!("error: {e}"),
    }
}
