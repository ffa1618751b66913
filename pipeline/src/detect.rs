//! `agrag-pipeline detect-graph`: hierarchical community detection on a user's own edge list.
//!
//! [`detect_graph`] reads the edge list ([`crate::graph::read_edge_list`]), runs
//! [`hierarchical_leiden`] inside a Rayon pool of the requested size, optionally writes the
//! membership table as Parquet ([`write_membership`]), and returns a [`DetectGraphReport`]
//! whose [`Display`](fmt::Display) is the table the command prints (and whose JSON is what
//! `--json` prints).

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::WriterProperties;
use serde::Serialize;

use agrag_engine::EngineError;
use agrag_engine::format::tables::membership;
use agrag_engine::format::{FORMAT_VERSION, META_FORMAT_VERSION, META_RUN_ID, new_run_id};

use crate::error::{PipelineError, Result};
use crate::graph::read_edge_list;
use crate::leiden::{
    DetectionStats, Hierarchy, HierarchyWarmStart, LeidenConfig, hierarchical_leiden,
    hierarchical_leiden_warm,
};

/// Where a run's communities come from (step 4 of [`crate::run`]).
#[derive(Debug, Clone, Copy)]
pub enum CommunitySource<'a> {
    /// Hierarchical Leiden (or Louvain) on the run's graph.
    Detect,
    /// A membership table computed elsewhere ([`crate::membership`]); `entity_keys[i]` is the
    /// key of entity `i` (its concept id).
    Membership {
        /// The Parquet file.
        path: &'a Path,
        /// Key of each entity, by entity id.
        entity_keys: &'a [String],
    },
}

/// The communities of a run's graph, with what the run summary reports of them.
#[derive(Debug, Clone)]
pub struct Detected {
    /// Communities of every level with their statistics.
    pub hierarchy: Hierarchy,
    /// Communities per level, level 0 first.
    pub communities_per_level: Vec<usize>,
    /// Modularity (γ = 1) of level 0 (0 for an empty graph).
    pub modularity: f64,
}

/// Step 4 of a run: the hierarchy of `graph`, detected under `config` (warm-started from
/// `warm` when given, see [`hierarchical_leiden_warm`]) or read from `source`.
///
/// # Errors
/// Those of [`hierarchical_leiden`], or of [`crate::membership::read_membership`].
pub fn detect_communities(
    graph: &crate::graph::Graph,
    source: CommunitySource<'_>,
    config: &LeidenConfig,
    warm: Option<&HierarchyWarmStart>,
) -> Result<Detected> {
    let hierarchy = match source {
        CommunitySource::Detect => hierarchical_leiden_warm(graph, config, warm)?,
        CommunitySource::Membership { path, entity_keys } => {
            crate::membership::read_membership(path, graph, entity_keys, config)?
        }
    };
    let communities_per_level = hierarchy
        .stats
        .levels
        .iter()
        .map(|l| l.communities)
        .collect();
    let modularity = hierarchy.stats.levels.first().map_or(0.0, |l| l.modularity);
    Ok(Detected {
        hierarchy,
        communities_per_level,
        modularity,
    })
}

/// Rows per Parquet row group (and per Arrow batch) of the membership file.
const ROWS_PER_GROUP: usize = 128 * 1024;

/// What `detect-graph` should do.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectGraphConfig {
    /// Edge list: `u<TAB>v[<TAB>w]`, optionally gzipped, `#` comments
    /// ([`crate::graph::read_edge_list`]).
    pub edges: PathBuf,
    /// Detection parameters.
    pub leiden: LeidenConfig,
    /// Rayon threads; `None` uses Rayon's default (the number of CPUs, or `RAYON_NUM_THREADS`).
    pub threads: Option<usize>,
    /// Where to write the membership table as Parquet, if anywhere.
    pub membership_out: Option<PathBuf>,
}

/// The outcome of [`detect_graph`]. Serialises to the JSON that `--json` prints; its `Display`
/// is a readable table of the statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetectGraphReport {
    /// Id written into the membership file: a fresh UUIDv7 (sortable by creation time), so
    /// outputs of different runs can be told apart; it is the only part of the output that changes
    /// from one run to the next.
    pub run_id: String,
    /// The edge list read.
    pub edges: PathBuf,
    /// Rayon threads used.
    pub threads: usize,
    /// Parameters used.
    pub config: LeidenConfig,
    /// Memory of the graph's CSR arrays, in bytes.
    pub graph_bytes: usize,
    /// Time to read the edge list and build the graph, in seconds.
    pub load_seconds: f64,
    /// Time of detection alone, in seconds.
    pub detect_seconds: f64,
    /// Per-level statistics of the hierarchy.
    pub stats: DetectionStats,
    /// The membership file written, if any.
    pub membership_out: Option<PathBuf>,
    /// Rows of the membership table (one per node per level down to its leaf).
    pub membership_rows: usize,
}

/// Most worker threads a run or a detection may ask for (each is an OS thread; more than this
/// only costs memory and scheduling).
pub const MAX_THREADS: usize = 1024;

/// Reads `config.edges`, runs [`hierarchical_leiden`] in a Rayon pool of `config.threads`
/// threads, writes the membership Parquet file when `config.membership_out` is set, and reports.
///
/// # Errors
/// * [`PipelineError::InvalidConfig`] for `threads` outside `1..=`[`MAX_THREADS`], a config that fails
///   [`LeidenConfig::validate`], or a `membership_out` that is the edge list itself (the same
///   file through any path, a symbolic link or a hard link: writing it would destroy the
///   input); all checked before the file is read.
/// * [`PipelineError::Io`] / [`PipelineError::Parse`] from reading the edge list, naming
///   `path:line`.
/// * [`PipelineError::Write`] when the membership file cannot be created,
///   [`PipelineError::Engine`] (Parquet) when it cannot be written.
/// * [`PipelineError::Library`] when the thread pool cannot be built.
///
/// # Determinism
/// The membership is identical for any thread count; only `run_id` and timings change.
pub fn detect_graph(config: &DetectGraphConfig) -> Result<DetectGraphReport> {
    config.leiden.validate()?;
    if let Some(t) = config.threads
        && !(1..=MAX_THREADS).contains(&t)
    {
        return Err(PipelineError::InvalidConfig {
            field: "threads",
            value: t.to_string(),
            expected: "an integer from 1 to 1024",
        });
    }
    if let Some(out) = &config.membership_out
        && is_same_file(&config.edges, out)
    {
        return Err(PipelineError::InvalidConfig {
            field: "membership_out",
            value: out.display().to_string(),
            expected: "a file other than the edge list (--edges): writing it would overwrite the input",
        });
    }
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = config.threads {
        builder = builder.num_threads(t);
    }
    let pool = builder
        .build()
        .map_err(|e| PipelineError::library("building the thread pool", e))?;
    pool.install(|| {
        let start = Instant::now();
        let graph = read_edge_list(&config.edges)?;
        let load_seconds = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let hierarchy = hierarchical_leiden(&graph, &config.leiden)?;
        let detect_seconds = start.elapsed().as_secs_f64();
        let run_id = new_run_id();
        let membership_rows = match &config.membership_out {
            Some(path) => write_membership(path, &run_id, &hierarchy)?,
            None => hierarchy.communities.iter().map(|c| c.members.len()).sum(),
        };
        Ok(DetectGraphReport {
            run_id,
            edges: config.edges.clone(),
            threads: rayon::current_num_threads(),
            config: config.leiden.clone(),
            graph_bytes: graph.size_bytes(),
            load_seconds,
            detect_seconds,
            stats: hierarchy.stats,
            membership_out: config.membership_out.clone(),
            membership_rows,
        })
    })
}

/// The line the run summary and `detect-graph` print about leaves larger than
/// `max_cluster_size` (see [`crate::leiden::hierarchy`] for why a community cannot be split).
pub fn oversized_line(
    oversized: usize,
    at_max_levels: usize,
    largest_leaf: usize,
    max_cluster_size: usize,
) -> String {
    if oversized == 0 {
        return format!(
            "leaves over max_cluster_size {max_cluster_size}: none (largest leaf {largest_leaf})"
        );
    }
    let unsplittable = oversized - at_max_levels;
    format!(
        "leaves over max_cluster_size {max_cluster_size}: {oversized} (largest {largest_leaf}; \
         {unsplittable} that Leiden cannot split, {at_max_levels} at the last level max_levels allows)"
    )
}

/// Whether `a` and `b` name the same existing file: the same device and inode on Unix (so a
/// symbolic link, a hard link, `./` or `..` in either path are seen through), the same
/// canonical path elsewhere. A path that does not exist is no file, hence never the same.
fn is_same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// Writes the membership table of `hierarchy` to `path` as Parquet and returns its row count.
///
/// Columns are those of `agrag_engine::format::tables::membership::schema()`: `run_id` (this
/// `run_id` on every row), `level`, `entity_id` (the node id), `community_id`,
/// `parent_community_id` (null at level 0) and `is_leaf`; rows are sorted by `(level, entity_id)`
/// (declared as sorting columns), Snappy-compressed, in row groups of 131072 rows, with `run_id`
/// and `format_version` in the file's key-value metadata, as the engine writes its tables.
///
/// # Errors
/// [`PipelineError::Write`] when the file cannot be created; [`PipelineError::Engine`] wrapping
/// `EngineError::Parquet` when writing fails.
///
/// # Complexity
/// Time **O(R log R)** for R rows; memory: the row list plus one row group.
pub fn write_membership(path: &Path, run_id: &str, hierarchy: &Hierarchy) -> Result<usize> {
    let rows = hierarchy.membership();
    let file = File::create(path).map_err(|source| PipelineError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    let perr = |e: parquet::errors::ParquetError| {
        PipelineError::Engine(EngineError::parquet(path, "Parquet write", e))
    };
    let sorting = [1, 2]
        .iter()
        .map(|&column_idx| SortingColumn {
            column_idx,
            descending: false,
            nulls_first: false,
        })
        .collect();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .set_sorting_columns(Some(sorting))
        .set_created_by(format!("agrag detect-graph {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(META_RUN_ID.to_owned(), run_id.to_owned()),
            KeyValue::new(META_FORMAT_VERSION.to_owned(), FORMAT_VERSION.to_string()),
        ]))
        .build();
    let schema = membership::schema();
    let mut writer =
        ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props)).map_err(perr)?;
    for chunk in rows.chunks(ROWS_PER_GROUP) {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                run_id,
                chunk.len(),
            ))),
            Arc::new(UInt32Array::from_iter_values(chunk.iter().map(|r| r.level))),
            Arc::new(UInt32Array::from_iter_values(chunk.iter().map(|r| r.node))),
            Arc::new(UInt32Array::from_iter_values(
                chunk.iter().map(|r| r.community),
            )),
            Arc::new(UInt32Array::from_iter(chunk.iter().map(|r| r.parent))),
            Arc::new(BooleanArray::from_iter(
                chunk.iter().map(|r| Some(r.is_leaf)),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)
            .map_err(|e| PipelineError::Engine(EngineError::parquet(path, "Arrow batch", e)))?;
        writer.write(&batch).map_err(perr)?;
    }
    writer.close().map_err(perr)?;
    Ok(rows.len())
}

impl fmt::Display for DetectGraphReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        let c = &self.config;
        writeln!(f, "detect-graph {}", self.edges.display())?;
        writeln!(
            f,
            "  graph: {} nodes, {} edges, total weight {}, {} isolates, {:.1} MiB CSR",
            s.num_nodes,
            s.num_edges,
            s.total_weight,
            s.isolates,
            self.graph_bytes as f64 / (1024.0 * 1024.0)
        )?;
        writeln!(
            f,
            "  {} / {}: resolution {}, randomness {}, tolerance {}, seed {}, max_cluster_size {}, max_levels {}, {} threads",
            c.algorithm,
            c.objective,
            c.resolution,
            c.randomness,
            c.tolerance,
            c.seed,
            c.max_cluster_size,
            c.max_levels,
            self.threads
        )?;
        writeln!(
            f,
            "  load {:.3} s, detection {:.3} s, {} iterations, {} communities ({} leaves)",
            self.load_seconds, self.detect_seconds, s.iterations, s.communities, s.leaves
        )?;
        writeln!(
            f,
            "  {}",
            oversized_line(
                s.oversized_leaves,
                s.oversized_leaves_at_max_levels,
                s.largest_leaf,
                c.max_cluster_size
            )
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "  {:>5} {:>11} {:>10} {:>10} {:>6} {:>7} {:>6} {:>8} {:>7} {:>6} {:>10} {:>9}",
            "level",
            "communities",
            "modularity",
            "quality",
            "min",
            "median",
            "p90",
            "max",
            "leaves",
            "runs",
            "iterations",
            "seconds"
        )?;
        for l in &s.levels {
            writeln!(
                f,
                "  {:>5} {:>11} {:>10.4} {:>10.4} {:>6} {:>7} {:>6} {:>8} {:>7} {:>6} {:>10} {:>9.3}",
                l.level,
                l.communities,
                l.modularity,
                l.quality,
                l.size_min,
                l.size_median,
                l.size_p90,
                l.size_max,
                l.leaves,
                l.runs,
                l.iterations,
                l.seconds
            )?;
        }
        match &self.membership_out {
            Some(p) => write!(
                f,
                "\n  membership: {} rows -> {} (run_id {})",
                self.membership_rows,
                p.display(),
                self.run_id
            ),
            None => write!(
                f,
                "\n  membership: {} rows (not written)",
                self.membership_rows
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;

    fn karate() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/graphs/karate.edges.tsv.gz")
    }

    #[test]
    fn writes_membership_parquet_and_reports() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("membership.parquet");
        let config = DetectGraphConfig {
            edges: karate(),
            leiden: LeidenConfig::default(),
            threads: Some(2),
            membership_out: Some(out.clone()),
        };
        let report = detect_graph(&config).unwrap();
        assert_eq!(report.threads, 2);
        assert_eq!(report.stats.num_nodes, 34);
        assert_eq!(report.stats.num_edges, 78);
        assert!(report.stats.levels[0].modularity > 0.41);
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&out).unwrap()).unwrap();
        assert_eq!(reader.schema().fields(), membership::schema().fields());
        let meta = reader
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .clone();
        assert!(
            meta.iter()
                .any(|kv| kv.key == META_RUN_ID
                    && kv.value.as_deref() == Some(report.run_id.as_str()))
        );
        let batches: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, report.membership_rows);
        let leaf = batches[0]
            .column(5)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap();
        let leaves = (0..leaf.len()).filter(|&i| leaf.value(i)).count();
        assert_eq!(
            leaves, 34,
            "one leaf row per node (single batch for karate)"
        );
        let text = report.to_string();
        assert!(
            text.contains("level") && text.contains("modularity") && text.contains("34 nodes"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["stats"]["num_nodes"], 34);
        assert_eq!(json["config"]["objective"], "modularity");
    }

    #[test]
    fn bad_threads_and_config_are_rejected_before_reading() {
        let config = DetectGraphConfig {
            edges: PathBuf::from("/nonexistent"),
            leiden: LeidenConfig::default(),
            threads: Some(0),
            membership_out: None,
        };
        assert!(matches!(
            detect_graph(&config),
            Err(PipelineError::InvalidConfig {
                field: "threads",
                ..
            })
        ));
        let config = DetectGraphConfig {
            threads: None,
            leiden: LeidenConfig {
                resolution: -1.0,
                ..LeidenConfig::default()
            },
            ..config
        };
        assert!(matches!(
            detect_graph(&config),
            Err(PipelineError::InvalidConfig {
                field: "resolution",
                ..
            })
        ));
        let config = DetectGraphConfig {
            leiden: LeidenConfig::default(),
            ..config
        };
        assert!(matches!(
            detect_graph(&config),
            Err(PipelineError::Io { .. })
        ));
        let config = DetectGraphConfig {
            threads: Some(MAX_THREADS + 1),
            ..config
        };
        assert!(matches!(
            detect_graph(&config),
            Err(PipelineError::InvalidConfig {
                field: "threads",
                ..
            })
        ));
    }
}
