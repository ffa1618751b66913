//! Community detection on real and oracle graphs: the quality bar against igraph, the Leiden
//! connectivity guarantee, the hierarchy's invariants, determinism across thread counts and the
//! input policy.

use std::path::{Path, PathBuf};

use agrag_pipeline::PipelineError;
use agrag_pipeline::graph::{Graph, read_edge_list};
use agrag_pipeline::leiden::quality::{cpm, modularity};
use agrag_pipeline::leiden::{
    Algorithm, Hierarchy, LeidenConfig, Objective, Partition, hierarchical_leiden, leiden,
};
use proptest::collection::vec;
use proptest::prelude::*;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A graph shipped in the repository (`data/graphs`).
fn shipped(name: &str) -> Graph {
    read_edge_list(&workspace().join(format!("data/graphs/{name}.edges.tsv.gz"))).unwrap()
}

/// A graph of `../shared/data/graphs`, or `None` (with the reason printed) when it is absent.
fn shared(name: &str) -> Option<Graph> {
    let path = workspace().join(format!("../shared/data/graphs/{name}.edges.tsv.gz"));
    if !path.exists() {
        eprintln!("skipping {name}: {} does not exist", path.display());
        return None;
    }
    Some(read_edge_list(&path).unwrap())
}

fn fixture(name: &str) -> Graph {
    read_edge_list(&workspace().join("data/fixtures/graphs").join(name)).unwrap()
}

fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Whether the nodes `members` induce a connected subgraph of `g`.
fn is_connected(g: &Graph, members: &[u32]) -> bool {
    if members.is_empty() {
        return false;
    }
    let sub = g.induced_subgraph(members).unwrap();
    let mut seen = vec![false; members.len()];
    let mut stack = vec![0u32];
    seen[0] = true;
    let mut count = 1;
    while let Some(v) = stack.pop() {
        for (u, _) in sub.neighbors(v) {
            if !seen[u as usize] {
                seen[u as usize] = true;
                count += 1;
                stack.push(u);
            }
        }
    }
    count == members.len()
}

/// Every structural invariant of a hierarchy of `g`.
fn check_hierarchy(g: &Graph, h: &Hierarchy, config: &LeidenConfig) {
    let n = g.num_nodes();
    for (i, c) in h.communities.iter().enumerate() {
        assert_eq!(c.id as usize, i, "ids are dense and ordered");
        assert!(c.members.windows(2).all(|w| w[0] < w[1]), "members sorted");
        assert!(
            is_connected(g, &c.members),
            "community {} is disconnected",
            c.id
        );
        assert_eq!(c.is_leaf, c.children.is_empty());
        assert!((c.level as usize) < config.max_levels);
        match c.parent {
            None => assert_eq!(c.level, 0),
            Some(p) => {
                let parent = &h.communities[p as usize];
                assert_eq!(parent.level + 1, c.level);
                assert!(parent.children.contains(&c.id));
                assert!(parent.members.len() > config.max_cluster_size);
            }
        }
        if !c.is_leaf {
            assert!(c.children.len() >= 2, "a split gives at least two children");
            let mut union: Vec<u32> = c
                .children
                .iter()
                .flat_map(|&k| h.communities[k as usize].members.iter().copied())
                .collect();
            union.sort_unstable();
            assert_eq!(union, c.members, "children partition their parent");
        }
    }
    assert!(h.communities.windows(2).all(|w| w[0].level <= w[1].level));
    // One row per node per level down to its leaf, exactly one leaf row.
    let rows = h.membership();
    let mut per_node: Vec<Vec<(u32, bool)>> = vec![Vec::new(); n];
    for r in &rows {
        per_node[r.node as usize].push((r.level, r.is_leaf));
        assert_eq!(h.communities[r.community as usize].parent, r.parent);
    }
    for (v, levels) in per_node.iter().enumerate() {
        assert!(!levels.is_empty(), "node {v} has no community");
        for (l, &(level, is_leaf)) in levels.iter().enumerate() {
            assert_eq!(level as usize, l, "node {v}: one row per level");
            assert_eq!(
                is_leaf,
                l + 1 == levels.len(),
                "node {v}: leaf row is the last"
            );
        }
    }
    assert!(
        rows.windows(2)
            .all(|w| (w[0].level, w[0].node) < (w[1].level, w[1].node))
    );
    assert_eq!(h.stats.levels.len(), h.num_levels());
    let leaves_total: usize = h.stats.levels.iter().map(|l| l.leaves).sum();
    assert_eq!(leaves_total, h.stats.leaves);
}

/// Modularity of igraph 1.0 `community_leiden(objective_function="modularity", n_iterations=2)`.
/// karate, football, polbooks, email-eu-core, ca-condmat and lfr-10k are the values given in the
/// issue; dolphins and lesmis were measured the same way (python-igraph 1.0.0, median over Python
/// `random.seed(0..50)`; dolphins ranged 0.5196–0.5285, lesmis was 0.5600 for every seed).
const IGRAPH_REFERENCE: [(&str, f64); 9] = [
    ("karate", 0.4198),
    ("dolphins", 0.5268),
    ("lesmis", 0.5600),
    ("polbooks", 0.5269),
    ("football", 0.6046),
    ("email-eu-core", 0.4168),
    ("ca-condmat", 0.7401),
    ("lfr-10k", 0.6021),
    ("lfr-100k", 0.6113),
];

fn reference(name: &str) -> f64 {
    IGRAPH_REFERENCE.iter().find(|r| r.0 == name).unwrap().1
}

/// Both implementations are randomised, and on graphs of a hundred nodes one seed can land a
/// percent away from another (igraph's own dolphins runs span 0.5196–0.5285 over 50 seeds). So
/// the bar is checked on the median over `seeds` seeds against igraph's reference; the default
/// seed's run is also checked for connectivity and consistency.
fn assert_quality_bar(name: &str, g: &Graph, seeds: u64) {
    let mut values: Vec<f64> = (0..seeds)
        .map(|seed| {
            let p = leiden(
                g,
                &LeidenConfig {
                    seed,
                    ..LeidenConfig::default()
                },
            )
            .unwrap();
            modularity(g, &p.membership, 1.0)
        })
        .collect();
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    let target = 0.995 * reference(name);
    eprintln!(
        "{name}: modularity median {median:.4} (min {:.4}, max {:.4}, {seeds} seeds), igraph {:.4}",
        values[0],
        values[values.len() - 1],
        reference(name),
    );
    assert!(
        median >= target,
        "{name}: median modularity {median} < 0.995 x igraph = {target}"
    );
    let p = leiden(g, &LeidenConfig::default()).unwrap();
    let q = modularity(g, &p.membership, 1.0);
    assert!((p.quality - q).abs() < 1e-12);
    let (offsets, members) = group(&p);
    for c in 0..p.num_communities {
        assert!(
            is_connected(g, &members[offsets[c]..offsets[c + 1]]),
            "{name}: community {c}"
        );
    }
}

fn group(p: &Partition) -> (Vec<usize>, Vec<u32>) {
    let mut offsets = vec![0usize; p.num_communities + 1];
    for &c in &p.membership {
        offsets[c as usize + 1] += 1;
    }
    for c in 0..p.num_communities {
        offsets[c + 1] += offsets[c];
    }
    let mut cursor = offsets.clone();
    let mut members = vec![0u32; p.membership.len()];
    for (v, &c) in p.membership.iter().enumerate() {
        members[cursor[c as usize]] = v as u32;
        cursor[c as usize] += 1;
    }
    (offsets, members)
}

#[test]
fn quality_bar_on_shipped_graphs() {
    for name in ["karate", "dolphins", "lesmis", "polbooks", "football"] {
        assert_quality_bar(name, &shipped(name), 11);
    }
}

#[test]
fn quality_bar_on_shared_graphs() {
    for name in ["email-eu-core", "ca-condmat", "lfr-10k"] {
        if let Some(g) = shared(name) {
            assert_quality_bar(name, &g, 3);
        }
    }
}

#[test]
fn hierarchy_invariants_on_real_graphs() {
    let mut graphs: Vec<(String, Graph)> = ["karate", "dolphins", "lesmis", "polbooks", "football"]
        .iter()
        .map(|n| (n.to_string(), shipped(n)))
        .collect();
    for name in ["email-eu-core", "lfr-10k"] {
        if let Some(g) = shared(name) {
            graphs.push((name.to_string(), g));
        }
    }
    for (name, g) in &graphs {
        for config in [
            LeidenConfig::default(),
            LeidenConfig {
                algorithm: Algorithm::Louvain,
                max_cluster_size: 25,
                ..LeidenConfig::default()
            },
            LeidenConfig {
                objective: Objective::Cpm,
                resolution: 0.05,
                max_levels: 3,
                ..LeidenConfig::default()
            },
        ] {
            let h = hierarchical_leiden(g, &config).unwrap();
            check_hierarchy(g, &h, &config);
            eprintln!(
                "{name} {} {}: {} levels, {} communities, {} leaves",
                config.algorithm,
                config.objective,
                h.num_levels(),
                h.stats.communities,
                h.stats.leaves
            );
        }
    }
}

/// A planted partition: `n` nodes in blocks of 40–160, about 8 internal and 3 external edges per
/// node, from a fixed xorshift stream.
fn planted(n: u32, seed: u64) -> Graph {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut block_of = Vec::with_capacity(n as usize);
    let mut blocks: Vec<(u32, u32)> = Vec::new();
    let mut start = 0;
    while start < n {
        let size = (40 + next() % 121) as u32;
        let end = (start + size).min(n);
        blocks.push((start, end));
        block_of.extend(std::iter::repeat_n(
            blocks.len() - 1,
            (end - start) as usize,
        ));
        start = end;
    }
    let mut edges = Vec::new();
    for v in 0..n {
        let (s, e) = blocks[block_of[v as usize]];
        for _ in 0..4 {
            let u = s + (next() % u64::from(e - s)) as u32;
            edges.push((v, u, 1.0));
        }
        if next() % 2 == 0 {
            edges.push((v, (next() % u64::from(n)) as u32, 1.0 + (next() % 3) as f64));
        }
    }
    Graph::from_edges(n as usize, &edges).unwrap()
}

#[test]
fn deterministic_across_thread_counts() {
    let mut graphs = vec![("planted-40k".to_string(), planted(40_000, 7))];
    if let Some(g) = shared("lfr-10k") {
        graphs.push(("lfr-10k".to_string(), g));
    }
    for (name, g) in &graphs {
        for config in [
            LeidenConfig::default(),
            LeidenConfig {
                algorithm: Algorithm::Louvain,
                seed: 3,
                ..LeidenConfig::default()
            },
            LeidenConfig {
                objective: Objective::Cpm,
                resolution: 0.02,
                max_levels: 2,
                ..LeidenConfig::default()
            },
        ] {
            let runs: Vec<(Partition, Hierarchy)> = [1, 2, 8]
                .iter()
                .map(|&t| {
                    in_pool(t, || {
                        (
                            leiden(g, &config).unwrap(),
                            hierarchical_leiden(g, &config).unwrap(),
                        )
                    })
                })
                .collect();
            let (p1, h1) = &runs[0];
            eprintln!(
                "{name} {}: {} communities, quality {:.4}",
                config.algorithm, p1.num_communities, p1.quality
            );
            for (p, h) in &runs[1..] {
                assert_eq!(p.membership, p1.membership, "{name}: flat membership");
                assert_eq!(p.quality.to_bits(), p1.quality.to_bits(), "{name}: quality");
                assert_eq!(h.membership(), h1.membership(), "{name}: hierarchy");
                assert_eq!(h.communities, h1.communities);
            }
        }
    }
}

#[test]
fn different_seeds_are_allowed_to_differ_but_stay_good() {
    let g = planted(20_000, 11);
    let a = leiden(&g, &LeidenConfig::default()).unwrap();
    let b = leiden(
        &g,
        &LeidenConfig {
            seed: 99,
            ..LeidenConfig::default()
        },
    )
    .unwrap();
    assert!(
        (a.quality - b.quality).abs() < 0.01,
        "{} vs {}",
        a.quality,
        b.quality
    );
}

#[test]
fn oracle_two_cliques_joined_by_a_bridge() {
    let g = fixture("two_cliques_bridge.edges.tsv");
    for algorithm in [Algorithm::Leiden, Algorithm::Louvain] {
        let p = leiden(
            &g,
            &LeidenConfig {
                algorithm,
                ..LeidenConfig::default()
            },
        )
        .unwrap();
        assert_eq!(p.membership, vec![0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    }
}

#[test]
fn oracle_ring_of_cliques() {
    let g = fixture("ring_of_cliques.edges.tsv");
    let p = leiden(&g, &LeidenConfig::default()).unwrap();
    let expected: Vec<u32> = (0..24).map(|v| v / 4).collect();
    assert_eq!(p.membership, expected);
    // CPM at a density threshold between the cliques' (1) and the ring's.
    let config = LeidenConfig {
        objective: Objective::Cpm,
        resolution: 0.5,
        ..LeidenConfig::default()
    };
    assert_eq!(leiden(&g, &config).unwrap().membership, expected);
}

/// Values measured once with python-igraph 1.0.0 on `data/fixtures/graphs/self_loops.edges.tsv`:
/// `Graph(n=6, edges=E); g.es["weight"] = W; g.modularity(membership, weights="weight",
/// resolution=γ)`, the edges given to igraph exactly as listed in the file (self-loops, the
/// duplicate and the reciprocal pair included).
#[test]
fn self_loop_modularity_equals_igraph() {
    let g = fixture("self_loops.edges.tsv");
    let cases: [(&[u32], f64, f64); 8] = [
        (&[0, 0, 0, 1, 1, 1], 1.0, 0.41333333333333333),
        (&[0, 0, 0, 1, 1, 1], 0.5, 0.6733333333333333),
        (&[0, 1, 2, 3, 4, 5], 1.0, 0.09277777777777782),
        (&[0, 1, 2, 3, 4, 5], 0.5, 0.19638888888888886),
        (&[0, 0, 0, 0, 0, 0], 1.0, 0.0),
        (&[0, 0, 0, 0, 0, 0], 0.5, 0.5),
        (&[0, 0, 1, 1, 2, 2], 1.0, 0.15777777777777774),
        (&[0, 0, 1, 1, 2, 2], 0.5, 0.34555555555555556),
    ];
    for (membership, resolution, igraph) in cases {
        let q = modularity(&g, membership, resolution);
        assert!(
            (q - igraph).abs() < 1e-12,
            "{membership:?} γ={resolution}: {q} vs igraph {igraph}"
        );
    }
    assert_eq!(g.total_weight(), 15.0);
    assert_eq!(g.self_loop_weight(2), 3.0);
    // Detection keeps the self-loops: the best partition found is at least igraph's two blocks.
    let p = leiden(&g, &LeidenConfig::default()).unwrap();
    assert!(p.quality >= 0.41333333333333333 - 1e-12);
}

#[test]
fn policy_empty_graph_gives_no_community() {
    let g = Graph::from_edges(0, &[]).unwrap();
    let p = leiden(&g, &LeidenConfig::default()).unwrap();
    assert_eq!(p.num_communities, 0);
    let h = hierarchical_leiden(&g, &LeidenConfig::default()).unwrap();
    assert!(h.communities.is_empty() && h.membership().is_empty());
    assert_eq!(h.stats.isolates, 0);
}

#[test]
fn policy_isolates_are_counted_singletons() {
    // Two triangles plus isolated nodes 6 and 8 (8 has only a self-loop, which is no link to
    // another node) and 7, which is not isolated.
    let edges = [
        (0, 1, 1.0),
        (1, 2, 1.0),
        (0, 2, 1.0),
        (3, 4, 1.0),
        (4, 5, 1.0),
        (3, 5, 1.0),
        (5, 7, 1.0),
        (8, 8, 2.0),
    ];
    let g = Graph::from_edges(9, &edges).unwrap();
    for objective in [Objective::Modularity, Objective::Cpm] {
        let config = LeidenConfig {
            objective,
            resolution: if objective == Objective::Cpm {
                0.1
            } else {
                1.0
            },
            ..LeidenConfig::default()
        };
        let h = hierarchical_leiden(&g, &config).unwrap();
        assert_eq!(h.stats.isolates, 2);
        for v in [6u32, 8] {
            let c = h
                .communities
                .iter()
                .find(|c| c.members.contains(&v))
                .unwrap();
            assert_eq!(
                (c.level, c.members.len(), c.is_leaf),
                (0, 1, true),
                "{objective}"
            );
        }
        check_hierarchy(&g, &h, &config);
    }
}

#[test]
fn policy_duplicates_and_reciprocals_are_summed() {
    let g = fixture("self_loops.edges.tsv");
    // (0,1,1) + (1,0,0.5) and (3,4,2) + (4,3,1).
    assert_eq!(g.neighbors(0).find(|e| e.0 == 1), Some((1, 1.5)));
    assert_eq!(g.neighbors(4).find(|e| e.0 == 3), Some((3, 3.0)));
    let forward = Graph::from_edges(3, &[(0, 1, 1.0), (1, 2, 2.0), (0, 1, 1.0)]).unwrap();
    let backward = Graph::from_edges(3, &[(2, 1, 2.0), (1, 0, 1.0), (1, 0, 1.0)]).unwrap();
    assert_eq!(forward, backward);
    let single = Graph::from_edges(3, &[(0, 1, 2.0), (1, 2, 2.0)]).unwrap();
    assert_eq!(forward, single);
}

#[test]
fn policy_invalid_weights_name_the_edge() {
    for bad in [f64::NAN, f64::INFINITY, -0.5] {
        let err = Graph::from_edges(5, &[(0, 1, 1.0), (1, 2, 1.0), (3, 4, bad)]).unwrap_err();
        assert!(
            matches!(
                err,
                PipelineError::InvalidWeight {
                    index: 2,
                    source_node: 3,
                    target_node: 4,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().starts_with("edge 2 (3 -- 4): weight "),
            "{err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.tsv");
    std::fs::write(&path, "# header\n0\t1\t1\n1\t2\t-3\n").unwrap();
    let err = read_edge_list(&path).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}:3: weight -3 of edge 1 -- 2 is not a finite non-negative number",
            path.display()
        )
    );
}

#[test]
fn policy_zero_weights_are_dropped() {
    let with_zero = Graph::from_edges(4, &[(0, 1, 1.0), (1, 2, 0.0), (2, 3, 1.0)]).unwrap();
    let without = Graph::from_edges(4, &[(0, 1, 1.0), (2, 3, 1.0)]).unwrap();
    assert_eq!(with_zero, without);
    assert_eq!(with_zero.num_edges(), 2);
    let p = leiden(&with_zero, &LeidenConfig::default()).unwrap();
    assert_eq!(p.membership, vec![0, 0, 1, 1]);
}

#[test]
fn policy_node_out_of_range() {
    let err = Graph::from_edges(3, &[(0, 1, 1.0), (1, 3, 1.0)]).unwrap_err();
    assert!(matches!(
        err,
        PipelineError::NodeOutOfRange {
            index: 1,
            node: 3,
            num_nodes: 3
        }
    ));
}

/// Every fixture in `data/fixtures/graphs` is used by a test of this file.
#[test]
fn fixture_inventory() {
    let source = include_str!("leiden.rs");
    for entry in std::fs::read_dir(workspace().join("data/fixtures/graphs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            source.contains(&format!("fixture(\"{name}\")")),
            "untested fixture {name}"
        );
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32)
}

fn random_graph() -> impl Strategy<Value = Graph> {
    (1usize..70).prop_flat_map(|n| {
        let w = prop_oneof![Just(0.0), Just(1.0), Just(1.0), Just(2.0), Just(0.25)];
        vec((0..n as u32, 0..n as u32, w), 0..220)
            .prop_map(move |edges| Graph::from_edges(n, &edges).unwrap())
    })
}

fn random_config() -> impl Strategy<Value = LeidenConfig> {
    (
        any::<bool>(),
        any::<bool>(),
        0.1f64..2.0,
        1usize..8,
        1usize..5,
        any::<u64>(),
    )
        .prop_map(
            |(cpm, louvain, resolution, max_cluster_size, max_levels, seed)| LeidenConfig {
                algorithm: if louvain {
                    Algorithm::Louvain
                } else {
                    Algorithm::Leiden
                },
                objective: if cpm {
                    Objective::Cpm
                } else {
                    Objective::Modularity
                },
                resolution: if cpm { resolution / 4.0 } else { resolution },
                max_cluster_size,
                max_levels,
                seed,
                ..LeidenConfig::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// One community per node per level, every community connected, children partition parents.
    #[test]
    fn hierarchy_invariants_on_random_graphs(g in random_graph(), config in random_config()) {
        let h = hierarchical_leiden(&g, &config).unwrap();
        check_hierarchy(&g, &h, &config);
    }

    /// The reported quality is the objective of the returned membership, recomputed.
    #[test]
    fn reported_quality_matches_membership(g in random_graph(), config in random_config()) {
        let p = leiden(&g, &config).unwrap();
        let q = match config.objective {
            Objective::Modularity => modularity(&g, &p.membership, config.resolution),
            Objective::Cpm => cpm(&g, &p.membership, config.resolution),
        };
        prop_assert!((p.quality - q).abs() <= 1e-9 * (1.0 + q.abs()));
        prop_assert_eq!(p.membership.iter().map(|&c| c as usize + 1).max().unwrap_or(0), p.num_communities);
        // Never worse than all singletons.
        let singletons: Vec<u32> = (0..g.num_nodes() as u32).collect();
        let base = match config.objective {
            Objective::Modularity => modularity(&g, &singletons, config.resolution),
            Objective::Cpm => cpm(&g, &singletons, config.resolution),
        };
        prop_assert!(p.quality >= base - 1e-9);
    }

    /// Same result with 1 and 3 threads on random graphs.
    #[test]
    fn random_graphs_are_deterministic_across_threads(g in random_graph(), config in random_config()) {
        let a = in_pool(1, || hierarchical_leiden(&g, &config).unwrap());
        let b = in_pool(3, || hierarchical_leiden(&g, &config).unwrap());
        prop_assert_eq!(a.membership(), b.membership());
    }
}
