//! Criterion benches of community detection. Groups are `leiden/<workload>/<size>`, throughput in
//! edges; inputs come from the seeded generators of `agrag_benches::common`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use agrag_benches::common::planted_partition;
use agrag_pipeline::leiden::{Algorithm, LeidenConfig, hierarchical_leiden, leiden};

fn bench_leiden(c: &mut Criterion) {
    for (label, n, blocks) in [("n10k_k50", 10_000u32, 50u32), ("n100k_k200", 100_000, 200)] {
        let (graph, _) = planted_partition(n, blocks, 12, 4, 7);
        let mut group = c.benchmark_group(format!("leiden/planted/{label}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(graph.num_edges() as u64));
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for (name, config) in [
                ("leiden", LeidenConfig::default()),
                (
                    "louvain",
                    LeidenConfig {
                        algorithm: Algorithm::Louvain,
                        ..LeidenConfig::default()
                    },
                ),
            ] {
                group.bench_with_input(
                    BenchmarkId::new(name, format!("{threads}t")),
                    &graph,
                    |b, g| {
                        b.iter(|| pool.install(|| leiden(g, &config).unwrap()));
                    },
                );
            }
            group.bench_with_input(
                BenchmarkId::new("hierarchical", format!("{threads}t")),
                &graph,
                |b, g| {
                    b.iter(|| {
                        pool.install(|| hierarchical_leiden(g, &LeidenConfig::default()).unwrap())
                    });
                },
            );
        }
        group.finish();
    }
}

criterion_group!(benches, bench_leiden);
criterion_main!(benches);
