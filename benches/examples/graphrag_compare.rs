//! Our communities against GraphRAG's own on the same graph: modularity (γ = 1) of both
//! partitions at level 0 and at the leaves, and NMI between them.
//!
//! `cargo run -p agrag-benches --features graphrag --example graphrag_compare [INDEX_DIR] [SEEDS]`
//! (default: the shipped `data/graphrag/operation-dulce`, 5 seeds). The graph is the one
//! `agrag-pipeline run --graphrag` builds (entities as nodes, relationship weights summed per
//! pair); ours is hierarchical Leiden with the run's default parameters, run with seeds
//! 1, 2, …, SEEDS: the figures are the median (min–max) over the seeds. GraphRAG's partition is
//! the one its index holds (one run of its own).
use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;

use agrag_benches::nmi::nmi;
use agrag_pipeline::graph::Graph;
use agrag_pipeline::ingest::graphrag::read_graphrag;
use agrag_pipeline::leiden::quality::modularity;
use agrag_pipeline::leiden::{LeidenConfig, hierarchical_leiden};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn main() {
    let dir = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/graphrag/operation-dulce"),
        PathBuf::from,
    );
    let index = read_graphrag(&dir).expect("a GraphRAG index");
    let n = index.vocabulary.concepts.len();
    let graph = Graph::from_edges(n, &index.edges).expect("a graph");
    let entity: HashMap<&str, usize> = index
        .vocabulary
        .concepts
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();

    // GraphRAG's communities: level 0, and each entity's deepest (leaf) community.
    let file = File::open(dir.join("communities.parquet")).expect("communities.parquet");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("Parquet")
        .build()
        .expect("Parquet");
    let mut theirs_top = vec![u32::MAX; n];
    let mut theirs_leaf = vec![(u32::MAX, -1i64); n];
    for b in reader.map(|b| b.expect("a batch")) {
        let community = b
            .column_by_name("community")
            .expect("community")
            .as_primitive::<Int64Type>();
        let level = b
            .column_by_name("level")
            .expect("level")
            .as_primitive::<Int64Type>();
        let members = b
            .column_by_name("entity_ids")
            .expect("entity_ids")
            .as_list::<i32>();
        for i in 0..b.num_rows() {
            let c = u32::try_from(community.value(i)).expect("community id");
            for e in members.value(i).as_string::<i32>().iter().flatten() {
                let e = entity[e];
                if level.value(i) == 0 {
                    theirs_top[e] = c;
                }
                if level.value(i) > theirs_leaf[e].1 {
                    theirs_leaf[e] = (c, level.value(i));
                }
            }
        }
    }
    let theirs_leaf: Vec<u32> = theirs_leaf.iter().map(|x| x.0).collect();
    assert!(
        theirs_top.iter().all(|&c| c != u32::MAX),
        "an entity outside GraphRAG's level 0"
    );

    let seeds: u64 = std::env::args()
        .nth(2)
        .map_or(5, |s| s.parse().expect("SEEDS: a positive count"))
        .max(1);
    let count = |p: &[u32]| {
        let mut v = p.to_vec();
        v.sort_unstable();
        v.dedup();
        v.len() as f64
    };
    // Per seed: (communities, modularity, NMI against GraphRAG's) at level 0 and at the leaves.
    let mut top = Vec::new();
    let mut leaf = Vec::new();
    for seed in 1..=seeds {
        let config = LeidenConfig {
            seed,
            ..LeidenConfig::default()
        };
        let hierarchy = hierarchical_leiden(&graph, &config).expect("detection");
        let mut ours_top = vec![0u32; n];
        for c in hierarchy.level(0) {
            for &m in &c.members {
                ours_top[m as usize] = c.id;
            }
        }
        let ours_leaf = hierarchy.leaf_membership(n);
        top.push([
            count(&ours_top),
            modularity(&graph, &ours_top, 1.0),
            nmi(&ours_top, &theirs_top),
        ]);
        leaf.push([
            count(&ours_leaf),
            modularity(&graph, &ours_leaf, 1.0),
            nmi(&ours_leaf, &theirs_leaf),
        ]);
    }
    // "median (min–max)" of column `i` over the seeds.
    let spread = |rows: &[[f64; 3]], i: usize, digits: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        let median = if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        };
        format!(
            "{median:.digits$} ({:.digits$}–{:.digits$})",
            v[0],
            v[v.len() - 1]
        )
    };
    println!(
        "graph: {n} entities, {} edges ({} relationships left out); ours over seeds 1–{seeds}: median (min–max)",
        graph.num_edges(),
        index.dropped_relationships.len()
    );
    for (name, rows, theirs) in [
        ("level 0", &top, &theirs_top),
        ("leaves ", &leaf, &theirs_leaf),
    ] {
        println!(
            "{name}   ours {} communities, modularity {} | GraphRAG {}, modularity {:.4} | NMI {}",
            spread(rows, 0, 0),
            spread(rows, 1, 4),
            count(theirs),
            modularity(&graph, theirs, 1.0),
            spread(rows, 2, 4)
        );
    }
}
