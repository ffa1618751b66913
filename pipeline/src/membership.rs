//! Communities computed elsewhere: a membership table in place of detection.
//!
//! A graph too large for one machine is clustered on a distributed engine (cuGraph's
//! multi-GPU Leiden on Dask, a Spark job); the run then takes its result as a Parquet table
//! with the columns of the snapshot's `membership.parquet`, one row per entity per level from
//! 0 (the coarsest) down to the level of the entity's leaf community:
//!
//! | column | type | meaning |
//! | --- | --- | --- |
//! | `level` | integer ≥ 0 | level of the community; levels are dense from 0 |
//! | `entity_id` | integer | the entity's row of `entities.parquet` that the same input gives |
//! | or `entity` | string | the entity's key: its concept id |
//! | `community_id` | integer | any id, unique across levels (remapped to dense ids) |
//! | `parent_community_id` | integer, null at level 0 | the community of level − 1 it splits |
//!
//! Other columns (`run_id`, `is_leaf`) are ignored: leaves follow from the table. The table
//! must describe a hierarchy in which each community either is a leaf or is split whole into
//! children at the next level, which [`read_membership`] checks rule by rule:
//!
//! 1. every entity is in exactly one community per level, and in one at level 0;
//! 2. a community lies at one level and has one parent (none at level 0);
//! 3. parents agree across levels: an entity in community C at level l > 0 is, at level l − 1,
//!    in C's parent; a community that has children at level l + 1 has each of its entities in
//!    one of them;
//! 4. every community is non-empty (a parent that holds no entity is refused);
//! 5. levels are dense from 0.
//!
//! Each violation is a [`PipelineError::Membership`] naming the entity or community, or a
//! [`PipelineError::Column`] / [`PipelineError::Row`] naming the column or row.
//! `detect-graph --membership-out` writes exactly this table, so the two round-trip.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{PipelineError, Result};
use crate::graph::Graph;
use crate::leiden::{Community, Hierarchy, LeidenConfig};

/// How the table names entities.
enum EntityRef {
    /// By row of `entities.parquet`.
    Row(u32),
    /// By key (concept id).
    Key(String),
}

/// One row of a membership table, as read.
struct Row {
    level: u32,
    entity: u32,
    community: i64,
    parent: Option<i64>,
}

/// Reads the membership table at `path` over the entities `entity_keys` (entity `i` is row `i`
/// of `entities.parquet`, keyed by `entity_keys[i]`), checks that it is a hierarchy (see the
/// [module docs](self)) and returns it with the statistics of a detection run on `graph`
/// under `config` (modularity and quality per level).
///
/// # Errors
/// * [`PipelineError::Io`] / [`PipelineError::Unreadable`] when the file cannot be read as
///   Parquet;
/// * [`PipelineError::Column`] for a missing or mistyped column (`level`, `community_id`,
///   `parent_community_id`, and `entity_id` or `entity`);
/// * [`PipelineError::Row`] for a null, negative or unknown value in a row (an `entity_id` out
///   of range, an `entity` key that is not an entity of the input);
/// * [`PipelineError::Membership`] naming the entity or community of each broken rule.
///
/// # Complexity
/// Time **O(R log R)** for R rows; memory **O(R)**.
pub fn read_membership(
    path: &Path,
    graph: &Graph,
    entity_keys: &[String],
    config: &LeidenConfig,
) -> Result<Hierarchy> {
    let rows = read_rows(path, entity_keys)?;
    let communities = check(path, &rows, entity_keys)?;
    Ok(Hierarchy::from_communities(graph, communities, config))
}

fn unreadable(path: &Path, e: &dyn std::fmt::Display) -> PipelineError {
    PipelineError::Unreadable {
        path: path.to_owned(),
        format: "Parquet",
        reason: e.to_string(),
    }
}

fn column_error(path: &Path, column: &str, reason: impl Into<String>) -> PipelineError {
    PipelineError::Column {
        path: path.to_owned(),
        column: column.to_owned(),
        reason: reason.into(),
    }
}

/// The values of integer column `name` of `batch` as i64 (`None` for nulls).
fn integers(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<Option<i64>>> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| column_error(path, name, "missing (a required column)"))?;
    macro_rules! ints {
        ($t:ty) => {
            col.as_primitive::<$t>()
                .iter()
                .map(|v| v.map(|x| x as i64))
                .collect()
        };
    }
    Ok(match col.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => col
            .as_primitive::<UInt64Type>()
            .iter()
            .map(|v| v.map(|x| i64::try_from(x).unwrap_or(i64::MAX)))
            .collect(),
        DataType::Null => vec![None; col.len()],
        other => {
            return Err(column_error(
                path,
                name,
                format!("is of type {other}; expected an integer"),
            ));
        }
    })
}

fn read_rows(path: &Path, entity_keys: &[String]) -> Result<Vec<Row>> {
    let file = File::open(path).map_err(|source| PipelineError::Io {
        path: path.to_owned(),
        source,
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| unreadable(path, &e))?
        .build()
        .map_err(|e| unreadable(path, &e))?;
    let mut by_key: Option<HashMap<&str, u32>> = None;
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(path, &e))?;
        let levels = integers(path, &batch, "level")?;
        let communities = integers(path, &batch, "community_id")?;
        let parents = integers(path, &batch, "parent_community_id")?;
        let entities: Vec<Option<EntityRef>> = if batch.column_by_name("entity_id").is_some() {
            integers(path, &batch, "entity_id")?
                .into_iter()
                .map(|v| v.map(|x| EntityRef::Row(u32::try_from(x).unwrap_or(u32::MAX))))
                .collect()
        } else if let Some(col) = batch.column_by_name("entity") {
            let strings: Vec<Option<String>> = match col.data_type() {
                DataType::Utf8 => col
                    .as_string::<i32>()
                    .iter()
                    .map(|s| s.map(str::to_owned))
                    .collect(),
                DataType::LargeUtf8 => col
                    .as_string::<i64>()
                    .iter()
                    .map(|s| s.map(str::to_owned))
                    .collect(),
                DataType::Utf8View => col
                    .as_string_view()
                    .iter()
                    .map(|s| s.map(str::to_owned))
                    .collect(),
                other => {
                    return Err(column_error(
                        path,
                        "entity",
                        format!("is of type {other}; expected a string (the entity's key)"),
                    ));
                }
            };
            strings.into_iter().map(|s| s.map(EntityRef::Key)).collect()
        } else {
            return Err(column_error(
                path,
                "entity_id",
                "missing: the table needs `entity_id` (the row of entities.parquet) or `entity` (the entity's key)",
            ));
        };
        for i in 0..batch.num_rows() {
            let at = rows.len() as u64;
            let row_error = |reason: String| PipelineError::Row {
                path: path.to_owned(),
                row: at,
                reason,
            };
            let level = match levels[i] {
                Some(l) if (0..i64::from(u32::MAX)).contains(&l) => l as u32,
                Some(l) => return Err(row_error(format!("level {l} is negative or too large"))),
                None => return Err(row_error("level is null".into())),
            };
            let community =
                communities[i].ok_or_else(|| row_error("community_id is null".into()))?;
            let entity = match &entities[i] {
                None => return Err(row_error("the entity is null".into())),
                Some(EntityRef::Row(e)) => {
                    if *e as usize >= entity_keys.len() {
                        return Err(row_error(format!(
                            "entity_id {e} is not a row of entities.parquet (the input gives {} entities)",
                            entity_keys.len()
                        )));
                    }
                    *e
                }
                Some(EntityRef::Key(k)) => {
                    let index = by_key.get_or_insert_with(|| {
                        entity_keys
                            .iter()
                            .enumerate()
                            .map(|(i, k)| (k.as_str(), i as u32))
                            .collect()
                    });
                    *index.get(k.as_str()).ok_or_else(|| {
                        row_error(format!("entity {k:?} is not an entity of the input"))
                    })?
                }
            };
            rows.push(Row {
                level,
                entity,
                community,
                parent: parents[i],
            });
        }
    }
    Ok(rows)
}

/// Checks the rules of the [module docs](self) and builds the communities with dense ids.
fn check(path: &Path, rows: &[Row], entity_keys: &[String]) -> Result<Vec<Community>> {
    let fail = |reason: String| PipelineError::Membership {
        path: path.to_owned(),
        reason,
    };
    let name = |e: u32| format!("{:?} (entity_id {e})", entity_keys[e as usize]);
    // Rule 2: one level and one parent per community; members per community.
    let mut info: BTreeMap<i64, (u32, Option<i64>, Vec<u32>)> = BTreeMap::new();
    // Rule 1: one community per entity per level.
    let mut at_level: HashMap<(u32, u32), i64> = HashMap::new();
    for r in rows {
        if r.level == 0 && r.parent.is_some() {
            return Err(fail(format!(
                "community {} is at level 0 but has parent_community_id {}: level 0 is the coarsest and has no parent",
                r.community,
                r.parent.unwrap_or_default()
            )));
        }
        if r.level > 0 && r.parent.is_none() {
            return Err(fail(format!(
                "community {} is at level {} but has no parent_community_id",
                r.community, r.level
            )));
        }
        let entry = info
            .entry(r.community)
            .or_insert_with(|| (r.level, r.parent, Vec::new()));
        if entry.0 != r.level {
            return Err(fail(format!(
                "community {} appears at levels {} and {}: a community lies at one level",
                r.community, entry.0, r.level
            )));
        }
        if entry.1 != r.parent {
            return Err(fail(format!(
                "community {} has parents {} and {}: parents must agree across rows",
                r.community,
                entry.1.unwrap_or_default(),
                r.parent.unwrap_or_default()
            )));
        }
        entry.2.push(r.entity);
        if let Some(&other) = at_level.get(&(r.level, r.entity)) {
            return Err(fail(format!(
                "entity {} is in communities {other} and {} at level {}: an entity is in exactly one community per level",
                name(r.entity),
                r.community,
                r.level
            )));
        }
        at_level.insert((r.level, r.entity), r.community);
    }
    // Rule 5: dense levels.
    let levels: BTreeSet<u32> = info.values().map(|c| c.0).collect();
    let num_levels = levels.len() as u32;
    if let Some(gap) = (0..num_levels).find(|l| !levels.contains(l)) {
        return Err(fail(format!(
            "level {gap} is missing (levels found: {levels:?}): levels must be dense from 0"
        )));
    }
    // Rule 1: every entity at level 0.
    if let Some(e) = (0..entity_keys.len() as u32).find(|&e| !at_level.contains_key(&(0, e))) {
        return Err(fail(format!(
            "entity {} has no community at level 0: every entity is in exactly one community per level",
            name(e)
        )));
    }
    // Rules 3 and 4: parents consistent and non-empty.
    let mut has_children: BTreeSet<i64> = BTreeSet::new();
    for r in rows.iter().filter(|r| r.level > 0) {
        let parent = r.parent.unwrap_or_default();
        match info.get(&parent) {
            None => {
                return Err(fail(format!(
                    "community {parent}, the parent of community {}, holds no entity: every community is non-empty",
                    r.community
                )));
            }
            Some((pl, _, _)) if *pl + 1 != r.level => {
                return Err(fail(format!(
                    "community {parent}, the parent of community {} (level {}), is at level {pl}, not {}",
                    r.community,
                    r.level,
                    r.level - 1
                )));
            }
            Some(_) => {}
        }
        let above = at_level.get(&(r.level - 1, r.entity)).copied();
        if above != Some(parent) {
            return Err(fail(format!(
                "entity {} is in community {} at level {} whose parent is {parent}, but at level {} it is in {}: parents must agree across levels",
                name(r.entity),
                r.community,
                r.level,
                r.level - 1,
                above.map_or_else(|| "no community".to_owned(), |c| format!("community {c}"))
            )));
        }
        has_children.insert(parent);
    }
    for &p in &has_children {
        let (level, _, members) = &info[&p];
        if let Some(&e) = members
            .iter()
            .find(|&&e| !at_level.contains_key(&(level + 1, e)))
        {
            return Err(fail(format!(
                "entity {} of community {p} (level {level}) is in none of its children at level {}: a community is a leaf or is split whole",
                name(e),
                level + 1
            )));
        }
    }
    // Dense ids ordered by level, then parent's new id, then smallest member.
    let mut by_level: Vec<Vec<(i64, Vec<u32>)>> = vec![Vec::new(); num_levels as usize];
    for (&id, (level, _, members)) in &info {
        let mut m = members.clone();
        m.sort_unstable();
        by_level[*level as usize].push((id, m));
    }
    let mut new_id: HashMap<i64, u32> = HashMap::new();
    let mut out: Vec<Community> = Vec::with_capacity(info.len());
    for (level, mut cs) in by_level.into_iter().enumerate() {
        cs.sort_by_key(|(id, m)| (info[id].1.map(|p| new_id[&p]), m[0]));
        for (old, members) in cs {
            let id = out.len() as u32;
            new_id.insert(old, id);
            let parent = info[&old].1.map(|p| new_id[&p]);
            if let Some(p) = parent {
                out[p as usize].children.push(id);
                out[p as usize].is_leaf = false;
            }
            out.push(Community {
                id,
                level: level as u32,
                parent,
                children: Vec::new(),
                members,
                is_leaf: true,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::write_membership;
    use crate::leiden::hierarchical_leiden;
    use crate::leiden::tests::ring_of_cliques;

    #[test]
    fn detect_graphs_table_reads_back_as_the_same_hierarchy() {
        // Past the resolution limit level 0 pairs up cliques; each pair is split at level 1.
        let g = ring_of_cliques(30, 5);
        let config = LeidenConfig {
            max_cluster_size: 6,
            ..LeidenConfig::default()
        };
        let h = hierarchical_leiden(&g, &config).unwrap();
        assert!(h.num_levels() >= 2, "the test needs a split");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.parquet");
        write_membership(&path, "r", &h).unwrap();
        let keys: Vec<String> = (0..g.num_nodes()).map(|i| format!("n{i}")).collect();
        let back = read_membership(&path, &g, &keys, &config).unwrap();
        assert_eq!(back.communities, h.communities);
        assert_eq!(back.stats.levels.len(), h.stats.levels.len());
        for (a, b) in back.stats.levels.iter().zip(&h.stats.levels) {
            assert!((a.modularity - b.modularity).abs() < 1e-12);
        }
    }
}
