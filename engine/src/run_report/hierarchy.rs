//! The community hierarchy of a run as the report needs it: communities with their levels,
//! parents, sizes and children (from `communities.parquet`), each entity's community at every
//! level and each community's best-connected members (from `membership.parquet` and
//! `entities.parquet`), and the per-level figures computed from them.

use std::path::Path;

use arrow_array::{Array, BooleanArray, Float64Array, StringArray, UInt32Array};

use super::progress::Progress;
use super::read::{Table, projection};
use super::{FigureSource, HistogramBin, LevelFigures};
use crate::error::{EngineError, Result};
use crate::format::reader::{column, column_no_nulls};
use crate::format::tables::{communities, entities, membership};

/// Most member names kept per community (labels and details of the page).
pub(crate) const TOP_MEMBERS: usize = 5;

/// Marks "no community at this level" in [`Membership::community_at`]'s table.
const NONE: u32 = u32::MAX;

/// Every community of the run, by row of `communities.parquet` (the index everywhere in the
/// report; `ids` gives the public `community_id` of a row).
pub(crate) struct Hierarchy {
    /// Public `community_id` of each row, strictly ascending.
    pub ids: Vec<u32>,
    /// Level of each community (0 = coarsest).
    pub level: Vec<u32>,
    /// Parent row of each community (`None` at level 0).
    pub parent: Vec<Option<u32>>,
    /// Number of member entities of each community.
    pub size: Vec<u32>,
    /// Whether each community was not split further.
    pub is_leaf: Vec<bool>,
    /// Children of each community, ascending.
    pub children: Vec<Vec<u32>>,
    /// Communities of level 0, ascending.
    pub roots: Vec<u32>,
    /// Number of levels (1 + the deepest level; 0 for a run without communities).
    pub num_levels: usize,
}

impl Hierarchy {
    /// Reads `communities.parquet` of the run in `dir`.
    ///
    /// # Errors
    /// As [`Table::open`]; [`EngineError::Corrupt`] when ids are not strictly ascending, a
    /// parent is not a community one level up, or a level-0 community has a parent.
    pub(crate) fn read(dir: &Path, run_id: &str, progress: &Progress) -> Result<Self> {
        let full = communities::schema();
        let wanted = projection(
            &full,
            &[
                communities::COMMUNITY_ID,
                communities::LEVEL,
                communities::PARENT,
                communities::SIZE,
                communities::IS_LEAF,
            ],
        );
        let mut h = Self {
            ids: Vec::new(),
            level: Vec::new(),
            parent: Vec::new(),
            size: Vec::new(),
            is_leaf: Vec::new(),
            children: Vec::new(),
            roots: Vec::new(),
            num_levels: 0,
        };
        let table = Table::open(dir, communities::FILE, &wanted, run_id)?;
        table.for_each(progress, |b, path| {
            let id = column_no_nulls::<UInt32Array>(b, communities::COMMUNITY_ID, path)?;
            let level = column_no_nulls::<UInt32Array>(b, communities::LEVEL, path)?;
            let parent = column::<UInt32Array>(b, communities::PARENT, path)?;
            let size = column_no_nulls::<UInt32Array>(b, communities::SIZE, path)?;
            let leaf = column_no_nulls::<BooleanArray>(b, communities::IS_LEAF, path)?;
            for i in 0..b.num_rows() {
                let row = h.level.len();
                if h.ids.last().is_some_and(|&last| last >= id.value(i)) {
                    return Err(EngineError::corrupt(
                        path,
                        format!(
                            "row {row}: community_id {} (ids must be strictly ascending)",
                            id.value(i)
                        ),
                    ));
                }
                h.ids.push(id.value(i));
                h.level.push(level.value(i));
                h.parent.push(parent.is_valid(i).then(|| parent.value(i)));
                h.size.push(size.value(i));
                h.is_leaf.push(leaf.value(i));
            }
            Ok(())
        })?;
        let path = dir.join(communities::FILE);
        let n = h.level.len();
        h.children = vec![Vec::new(); n];
        for c in 0..n {
            let level = h.level[c];
            match h.parent[c] {
                None if level == 0 => h.roots.push(c as u32),
                None => {
                    return Err(EngineError::corrupt(
                        &path,
                        format!("row {c}: community {c} of level {level} has no parent"),
                    ));
                }
                Some(p) if h.row_of(p).is_some_and(|r| h.level[r] + 1 == level) => {
                    let r = h.row_of(p).unwrap_or_default();
                    h.parent[c] = Some(r as u32);
                    h.children[r].push(c as u32);
                }
                Some(p) => {
                    return Err(EngineError::corrupt(
                        &path,
                        format!(
                            "row {c}: parent {p} of community {c} (level {level}) is not a community one level up"
                        ),
                    ));
                }
            }
            h.num_levels = h.num_levels.max(level as usize + 1);
        }
        Ok(h)
    }

    /// The row of the community with public id `id`.
    pub(crate) fn row_of(&self, id: u32) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// Number of communities.
    pub(crate) fn len(&self) -> usize {
        self.level.len()
    }

    /// Communities of `level`, ascending.
    pub(crate) fn iter_level(&self, level: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&c| self.level[c] as usize == level)
    }
}

/// The entities of the run: names and weighted degrees (`entities.parquet`).
pub(crate) struct Entities {
    /// Display name of each entity; index = `entity_id`.
    pub name: Vec<String>,
    /// Weighted degree of each entity in the entity graph.
    pub degree: Vec<f64>,
}

impl Entities {
    /// Reads `entities.parquet` of the run in `dir` (names and degrees only).
    ///
    /// # Errors
    /// As [`Table::open`]; [`EngineError::Corrupt`] when ids are not dense from 0 in order.
    pub(crate) fn read(dir: &Path, run_id: &str, progress: &Progress) -> Result<Self> {
        let full = entities::schema();
        let wanted = projection(
            &full,
            &[entities::ENTITY_ID, entities::NAME, entities::DEGREE],
        );
        let mut out = Self {
            name: Vec::new(),
            degree: Vec::new(),
        };
        Table::open(dir, entities::FILE, &wanted, run_id)?.for_each(progress, |b, path| {
            let id = column_no_nulls::<UInt32Array>(b, entities::ENTITY_ID, path)?;
            let name = column_no_nulls::<StringArray>(b, entities::NAME, path)?;
            let degree = column_no_nulls::<Float64Array>(b, entities::DEGREE, path)?;
            for i in 0..b.num_rows() {
                let row = out.name.len();
                if id.value(i) as usize != row {
                    return Err(EngineError::corrupt(
                        path,
                        format!(
                            "row {row}: entity_id {} (ids must be dense from 0, in order)",
                            id.value(i)
                        ),
                    ));
                }
                out.name.push(name.value(i).to_owned());
                out.degree.push(degree.value(i));
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// Each entity's community at every level, and each community's best-connected members.
pub(crate) struct Membership {
    /// `path[level][entity]`: the entity's community at `level`, [`NONE`] below its leaf.
    path: Vec<Vec<u32>>,
    /// Up to [`TOP_MEMBERS`] members of each community, highest weighted degree first (ties:
    /// lower entity id first), as `(degree, entity)`.
    top: Vec<Vec<(f64, u32)>>,
}

impl Membership {
    /// Reads `membership.parquet` of the run in `dir`, checked against `hierarchy` and
    /// `entities`.
    ///
    /// # Errors
    /// As [`Table::open`]; [`EngineError::Corrupt`] for an entity or community out of range,
    /// a row whose level is not its community's, or an entity listed twice at one level.
    pub(crate) fn read(
        dir: &Path,
        run_id: &str,
        hierarchy: &Hierarchy,
        entities: &Entities,
        progress: &Progress,
    ) -> Result<Self> {
        let full = membership::schema();
        let wanted = projection(
            &full,
            &[
                membership::LEVEL,
                membership::ENTITY_ID,
                membership::COMMUNITY_ID,
            ],
        );
        let num_entities = entities.name.len();
        let mut out = Self {
            path: vec![vec![NONE; num_entities]; hierarchy.num_levels],
            top: vec![Vec::new(); hierarchy.len()],
        };
        let mut row = 0usize;
        Table::open(dir, membership::FILE, &wanted, run_id)?.for_each(progress, |b, path| {
            let level = column_no_nulls::<UInt32Array>(b, membership::LEVEL, path)?;
            let entity = column_no_nulls::<UInt32Array>(b, membership::ENTITY_ID, path)?;
            let community = column_no_nulls::<UInt32Array>(b, membership::COMMUNITY_ID, path)?;
            for i in 0..b.num_rows() {
                let (l, e, c) = (level.value(i), entity.value(i), community.value(i));
                let bad = |why: String| EngineError::corrupt(path, format!("row {row}: {why}"));
                if e as usize >= num_entities {
                    return Err(bad(format!(
                        "entity {e} is not in entities.parquet ({num_entities} entities)"
                    )));
                }
                let Some(c) = hierarchy
                    .row_of(c)
                    .filter(|&r| hierarchy.level[r] == l)
                    .map(|r| r as u32)
                else {
                    return Err(bad(format!(
                        "community {c} is not a community of level {l} in communities.parquet"
                    )));
                };
                let slot = &mut out.path[l as usize][e as usize];
                if *slot != NONE {
                    return Err(bad(format!("entity {e} is listed twice at level {l}")));
                }
                *slot = c;
                insert_top(&mut out.top[c as usize], (entities.degree[e as usize], e));
                row += 1;
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The community of `entity` at `level`, or `None` when its leaf lies above `level`.
    pub(crate) fn community_at(&self, level: usize, entity: u32) -> Option<u32> {
        let c = *self.path.get(level)?.get(entity as usize)?;
        (c != NONE).then_some(c)
    }

    /// The community of `entity` at level 0, if it has one.
    pub(crate) fn root_of(&self, entity: u32) -> Option<u32> {
        self.community_at(0, entity)
    }

    /// Number of levels.
    pub(crate) fn num_levels(&self) -> usize {
        self.path.len()
    }

    /// Up to [`TOP_MEMBERS`] members of `community`, highest weighted degree first.
    pub(crate) fn top_members(&self, community: u32) -> impl Iterator<Item = u32> + '_ {
        self.top[community as usize].iter().map(|&(_, e)| e)
    }
}

/// Keeps `top` the [`TOP_MEMBERS`] largest `(degree, entity)` pairs, by degree descending then
/// entity ascending.
fn insert_top(top: &mut Vec<(f64, u32)>, item: (f64, u32)) {
    let before = |a: &(f64, u32), b: &(f64, u32)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
    let at = top
        .iter()
        .position(|t| before(&item, t))
        .unwrap_or(top.len());
    if at < TOP_MEMBERS {
        top.insert(at, item);
        top.truncate(TOP_MEMBERS);
    }
}

/// Size bins of the histograms: powers of two, `[1]`, `[2, 3]`, `[4, 7]`, … up to the bin
/// that holds `max_size`, every bin present (count 0 included) so that levels compare.
pub(crate) fn histogram(sizes: &[u32], max_size: u32) -> Vec<HistogramBin> {
    let top = 32 - max_size.max(1).leading_zeros();
    let mut bins: Vec<HistogramBin> = (0..top)
        .map(|k| HistogramBin {
            min_size: 1u64 << k,
            max_size: (1u64 << (k + 1)) - 1,
            communities: 0,
        })
        .collect();
    for &s in sizes {
        if s == 0 {
            continue;
        }
        let k = (31 - s.leading_zeros()) as usize;
        bins[k].communities += 1;
    }
    bins
}

/// The figures of every level: counts, sizes, singletons, leaves over `max_cluster_size`, and
/// modularity (the manifest's when it records the level, else `computed`).
pub(crate) fn level_figures(
    h: &Hierarchy,
    max_cluster_size: Option<u64>,
    recorded: &[Option<f64>],
    computed: &[f64],
) -> Vec<LevelFigures> {
    let max_size = h.size.iter().copied().max().unwrap_or(0);
    (0..h.num_levels)
        .map(|level| {
            let ids: Vec<usize> = h.iter_level(level).collect();
            let mut sizes: Vec<u32> = ids.iter().map(|&c| h.size[c]).collect();
            sizes.sort_unstable();
            // Nearest rank, as the pipeline's statistics count it.
            let rank = |p: f64| -> u64 {
                if sizes.is_empty() {
                    return 0;
                }
                let r = (p * sizes.len() as f64).ceil() as usize;
                u64::from(sizes[r.clamp(1, sizes.len()) - 1])
            };
            let (modularity, modularity_source) = match recorded.get(level).copied().flatten() {
                Some(q) => (Some(q), FigureSource::Manifest),
                None => (computed.get(level).copied(), FigureSource::Computed),
            };
            LevelFigures {
                level: level as u32,
                communities: ids.len() as u64,
                leaves: ids.iter().filter(|&&c| h.is_leaf[c]).count() as u64,
                members: sizes.iter().map(|&s| u64::from(s)).sum(),
                modularity,
                modularity_source,
                singletons: sizes.iter().filter(|&&s| s == 1).count() as u64,
                oversized_leaves: max_cluster_size.map(|max| {
                    ids.iter()
                        .filter(|&&c| h.is_leaf[c] && u64::from(h.size[c]) > max)
                        .count() as u64
                }),
                size_min: sizes.first().map_or(0, |&s| u64::from(s)),
                size_median: rank(0.5),
                size_p90: rank(0.9),
                size_max: sizes.last().map_or(0, |&s| u64::from(s)),
                histogram: histogram(&sizes, max_size),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bins_are_powers_of_two() {
        let bins = histogram(&[1, 1, 2, 3, 4, 9, 17], 17);
        let got: Vec<(u64, u64, u64)> = bins
            .iter()
            .map(|b| (b.min_size, b.max_size, b.communities))
            .collect();
        assert_eq!(
            got,
            vec![(1, 1, 2), (2, 3, 2), (4, 7, 1), (8, 15, 1), (16, 31, 1)]
        );
        assert!(histogram(&[], 0).len() == 1);
    }

    #[test]
    fn top_members_keep_the_highest_degrees() {
        let mut top = Vec::new();
        for (d, e) in [
            (1.0, 0),
            (5.0, 1),
            (3.0, 2),
            (5.0, 3),
            (0.5, 4),
            (4.0, 5),
            (2.0, 6),
        ] {
            insert_top(&mut top, (d, e));
        }
        let ids: Vec<u32> = top.iter().map(|t| t.1).collect();
        assert_eq!(ids, vec![1, 3, 5, 2, 6]);
    }
}
