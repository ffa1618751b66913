//! What a run records about the text behind its derived data, so that a hidden passage can be
//! withdrawn from every retrieval path at query time: the ways each linked concept of a
//! document was reached ([`ConceptEvidence`], from `concept_evidence.parquet`) and the
//! passages each report quotes (from `report_sources.parquet`).

use std::path::Path;

use arrow_array::{Array, StringArray, UInt32Array};
use roaring::RoaringBitmap;

use super::Csr;
use crate::error::{EngineError, Result};
use crate::format::mapped::Strings;
use crate::format::reader::{column, column_no_nulls, read_parquet, read_parquet_row_groups};
use crate::format::schema::{concept_evidence, report_sources};

/// Marks a way's entry that needs no passage (the title alone).
const TITLE: u32 = u32::MAX;

/// The ways each (document, concept) of the `concept` node field was reached, for a set of
/// document rows: entries `(concept, way, passage row)` sorted by concept then way, the
/// passage [`u32::MAX`] for a way through the title alone. See
/// [`schema::concept_evidence`](crate::format::schema::concept_evidence).
#[derive(Debug, Clone, Default)]
pub struct ConceptEvidence {
    /// Document rows held, ascending; document `documents[i]` owns entries
    /// `offsets[i]..offsets[i + 1]`.
    documents: Vec<u32>,
    offsets: Vec<u32>,
    concepts: Vec<u32>,
    ways: Vec<u32>,
    passages: Vec<u32>,
}

impl ConceptEvidence {
    /// From `(document, concept, way, passage)` rows in any order.
    fn from_rows(mut rows: Vec<(u32, u32, u32, u32)>) -> Self {
        rows.sort_unstable();
        rows.dedup();
        let mut documents: Vec<u32> = Vec::new();
        let mut offsets: Vec<u32> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if documents.last() != Some(&r.0) {
                documents.push(r.0);
                offsets.push(i as u32);
            }
        }
        offsets.push(rows.len() as u32);
        Self {
            documents,
            offsets,
            concepts: rows.iter().map(|r| r.1).collect(),
            ways: rows.iter().map(|r| r.2).collect(),
            passages: rows.iter().map(|r| r.3).collect(),
        }
    }

    /// Whether document row `d` still holds one of `concepts` (sorted ascending) through a way
    /// with no passage that `is_hidden` accepts.
    pub fn supports(&self, d: u32, concepts: &[u32], is_hidden: impl Fn(u32) -> bool) -> bool {
        self.supported_concepts(d, is_hidden)
            .any(|c| concepts.binary_search(&c).is_ok())
    }

    /// The concepts of document row `d` that at least one way with no hidden passage still
    /// justifies, ascending, each once; none for a document this evidence does not hold.
    pub fn supported_concepts(
        &self,
        d: u32,
        is_hidden: impl Fn(u32) -> bool,
    ) -> impl Iterator<Item = u32> {
        let (start, end) = match self.documents.binary_search(&d) {
            Ok(i) => (self.offsets[i] as usize, self.offsets[i + 1] as usize),
            Err(_) => (0, 0),
        };
        let mut out: Vec<u32> = Vec::new();
        let mut i = start;
        while i < end {
            let (c, w) = (self.concepts[i], self.ways[i]);
            let mut j = i;
            let mut readable = true;
            while j < end && self.concepts[j] == c && self.ways[j] == w {
                let p = self.passages[j];
                readable &= p == TITLE || !is_hidden(p);
                j += 1;
            }
            if readable && out.last() != Some(&c) {
                out.push(c);
            }
            i = j;
        }
        out.into_iter()
    }
}

/// Reads from `concept_evidence.parquet` of the run in `dir` the rows of the document rows
/// `wanted`, whose keys are `keys[row]`. The table is sorted by document key, so only the row
/// groups whose key range holds a wanted key are read: the cost follows the documents asked
/// for, not the corpus.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an unknown concept or passage; as
/// [`read_parquet_row_groups`].
pub(crate) fn read_concept_evidence(
    dir: &Path,
    run_id: Option<&str>,
    wanted: &RoaringBitmap,
    keys: &Strings,
    concepts: &crate::format::mapped::concepts::ConceptColumns,
    passages: &dyn Fn(&str) -> Option<u32>,
) -> Result<ConceptEvidence> {
    let path = dir.join(concept_evidence::FILE);
    let mut wanted_keys: Vec<(&str, u32)> = wanted
        .iter()
        .filter(|&d| (d as usize) < keys.len())
        .map(|d| (keys.get(d as usize), d))
        .collect();
    wanted_keys.sort_unstable();
    if wanted_keys.is_empty() {
        return Ok(ConceptEvidence::default());
    }
    let key_column = concept_evidence::schema()
        .index_of(concept_evidence::DOCUMENT_KEY)
        .unwrap_or(0);
    let b = read_parquet_row_groups(&path, &concept_evidence::schema(), run_id, |rg| {
        let stats = rg.columns().get(key_column).and_then(|c| c.statistics());
        match stats.and_then(|s| Some((s.min_bytes_opt()?, s.max_bytes_opt()?))) {
            Some((lo, hi)) => {
                let first = wanted_keys.partition_point(|(k, _)| k.as_bytes() < lo);
                wanted_keys
                    .get(first)
                    .is_some_and(|(k, _)| k.as_bytes() <= hi)
            }
            None => true,
        }
    })?;
    let doc_keys = column_no_nulls::<StringArray>(&b, concept_evidence::DOCUMENT_KEY, &path)?;
    let ids = column_no_nulls::<StringArray>(&b, concept_evidence::CONCEPT_ID, &path)?;
    let ways = column_no_nulls::<UInt32Array>(&b, concept_evidence::WAY, &path)?;
    let pids = column::<StringArray>(&b, concept_evidence::PASSAGE_ID, &path)?;
    let mut rows: Vec<(u32, u32, u32, u32)> = Vec::new();
    for row in 0..b.num_rows() {
        let key = doc_keys.value(row);
        let Ok(i) = wanted_keys.binary_search_by(|(k, _)| (*k).cmp(key)) else {
            continue;
        };
        let bad = |what: &str, v: &str| {
            EngineError::corrupt(&path, format!("row {row}: {what} {v:?} is not in the run"))
        };
        let id = ids.value(row);
        let c = concepts.row(id).ok_or_else(|| bad("concept_id", id))?;
        let p = if pids.is_null(row) {
            TITLE
        } else {
            let pid = pids.value(row);
            passages(pid).ok_or_else(|| bad("passage_id", pid))?
        };
        rows.push((wanted_keys[i].1, c, ways.value(row), p));
    }
    Ok(ConceptEvidence::from_rows(rows))
}

/// Reads `report_sources.parquet` of the run in `dir`: the passage rows each community's report
/// quotes (rows = communities, in the order of `community_ids`, the communities' public ids,
/// ascending).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file and row for an unknown community or passage; as
/// [`read_parquet`].
pub(crate) fn read_report_sources(
    dir: &Path,
    run_id: Option<&str>,
    community_ids: &[u32],
    passages: &dyn Fn(&str) -> Option<u32>,
) -> Result<Csr> {
    let num_communities = community_ids.len();
    let path = dir.join(report_sources::FILE);
    let b = read_parquet(&path, &report_sources::schema(), run_id)?;
    let cs = column_no_nulls::<UInt32Array>(&b, report_sources::COMMUNITY_ID, &path)?;
    let pids = column_no_nulls::<StringArray>(&b, report_sources::PASSAGE_ID, &path)?;
    let mut pairs = Vec::with_capacity(b.num_rows());
    for row in 0..b.num_rows() {
        let c = cs.value(row);
        let Ok(c) = community_ids.binary_search(&c) else {
            return Err(EngineError::corrupt(
                &path,
                format!("row {row}: community_id {c} is not in communities.parquet"),
            ));
        };
        let c = c as u32;
        let pid = pids.value(row);
        let p = passages(pid).ok_or_else(|| {
            EngineError::corrupt(
                &path,
                format!("row {row}: passage_id {pid:?} is not in the run"),
            )
        })?;
        pairs.push((c, p));
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(Csr::from_pairs(num_communities, &pairs))
}

/// The rows of `csr` turned around: item → the rows holding it, over `num_items` items.
pub(crate) fn invert(csr: &Csr, num_items: usize) -> Csr {
    let mut pairs: Vec<(u32, u32)> = (0..csr.num_rows())
        .flat_map(|r| csr.row(r).iter().map(move |&i| (i, r as u32)))
        .collect();
    pairs.sort_unstable();
    Csr::from_pairs(num_items, &pairs)
}

/// The rows of `rows` whose every item `is_hidden` accepts (rows without items excluded),
/// limited to the rows listed in `candidates`.
pub(crate) fn rows_all_hidden(
    rows: &Csr,
    candidates: impl IntoIterator<Item = u32>,
    is_hidden: impl Fn(u32) -> bool,
) -> RoaringBitmap {
    candidates
        .into_iter()
        .filter(|&r| {
            let items = rows.row(r as usize);
            !items.is_empty() && items.iter().all(|&i| is_hidden(i))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(rows: &[(u32, u32, u32, u32)]) -> ConceptEvidence {
        ConceptEvidence::from_rows(rows.to_vec())
    }

    /// A concept stands while one way is readable; a way needs every one of its passages.
    #[test]
    fn a_concept_stands_while_one_of_its_ways_is_readable() {
        // Document 0: concept 5 through passage 1, or through passages 2 and 3 together;
        // concept 7 through the title; concept 9 only through passage 2.
        let ev = evidence(&[
            (0, 5, 0, 1),
            (0, 5, 1, 2),
            (0, 5, 1, 3),
            (0, 7, 0, TITLE),
            (0, 9, 0, 2),
        ]);
        let hidden = |set: &'static [u32]| move |p: u32| set.contains(&p);
        let all: Vec<u32> = ev.supported_concepts(0, |_| false).collect();
        assert_eq!(all, [5, 7, 9]);
        let v: Vec<u32> = ev.supported_concepts(0, hidden(&[1])).collect();
        assert_eq!(v, [5, 7, 9]);
        let v: Vec<u32> = ev.supported_concepts(0, hidden(&[1, 3])).collect();
        assert_eq!(v, [7, 9]);
        let v: Vec<u32> = ev.supported_concepts(0, hidden(&[1, 2])).collect();
        assert_eq!(v, [7]);
        assert!(ev.supports(0, &[5, 9], hidden(&[2])));
        assert!(!ev.supports(0, &[9], hidden(&[2])));
        // A document without evidence holds nothing; so does one out of range.
        assert_eq!(ev.supported_concepts(1, |_| false).count(), 0);
        assert_eq!(ev.supported_concepts(99, |_| false).count(), 0);
    }

    #[test]
    fn inverted_rows_and_fully_hidden_rows() {
        let csr = Csr::from_pairs(3, &[(0, 4), (0, 5), (1, 5), (2, 6)]);
        let inv = invert(&csr, 7);
        assert_eq!(inv.row(5), &[0, 1]);
        assert_eq!(inv.row(6), &[2]);
        assert!(inv.row(0).is_empty());
        let hidden = rows_all_hidden(&csr, 0..3, |i| i == 5 || i == 6);
        assert_eq!(hidden.iter().collect::<Vec<_>>(), [1, 2]);
    }
}
