//! What a run records about the text behind its derived data, so that a hidden passage can be
//! withdrawn from every retrieval path at query time: the ways each linked concept of a
//! document was reached ([`ConceptEvidence`], from `concept_evidence.parquet`) and the
//! passages each report quotes (from `report_sources.parquet`). Both tables are read by their
//! modules of [`crate::format::tables`].

use roaring::RoaringBitmap;

use super::Csr;
// The reader lives with its table; the snapshot calls it by this name.

/// Marks a way's entry that needs no passage (the title alone).
pub(crate) const TITLE: u32 = u32::MAX;

/// The ways each (document, concept) of the `concept` node field was reached, for a set of
/// document rows: entries `(concept, way, passage row)` sorted by concept then way, the
/// passage [`u32::MAX`] for a way through the title alone. See
/// [`tables::concept_evidence`](crate::format::tables::concept_evidence).
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
    pub(crate) fn from_rows(mut rows: Vec<(u32, u32, u32, u32)>) -> Self {
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
