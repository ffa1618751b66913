//! The concept side of a snapshot: term lookup, the hierarchy per relation, and per node field
//! the documents holding each concept (roaring bitmaps), built once when a run is opened.

use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::{Csr, VocabularyTables};
use crate::format::mapped::terms::TermIndex;

/// The key under which terms are looked up: the one rule the pipeline links by
/// (`"Myocardial  INFARCTION"` → `"myocardial infarction"`).
pub use crate::format::normalize::normalize_term;

/// Parents and children of every concept along one relation.
#[derive(Debug, Clone, Default)]
pub struct Hierarchy {
    /// Broader concepts of each concept (rows = concepts).
    pub parents: Csr,
    /// Narrower concepts of each concept (rows = concepts).
    pub children: Csr,
}

/// Lookup structures for concept queries.
#[derive(Debug, Clone, Default)]
pub struct ConceptIndex {
    terms: TermIndex,
    /// Hierarchy per relation name.
    pub relations: HashMap<String, Hierarchy>,
    /// Per node field: concept → documents whose field holds it.
    pub postings: HashMap<String, HashMap<u32, RoaringBitmap>>,
    /// Per node field: documents holding at least one concept in it.
    pub linked: HashMap<String, RoaringBitmap>,
}

impl ConceptIndex {
    /// Builds the index from a run's vocabulary tables and its term index (mapped from
    /// `terms.arrow`, or built at open for runs without it).
    pub fn build(v: &VocabularyTables, terms: TermIndex) -> Self {
        let n = v.concepts.len();
        // Relation → (child → parent pairs, parent → child pairs).
        type Pairs = Vec<(u32, u32)>;
        let mut by_relation: HashMap<&str, (Pairs, Pairs)> = HashMap::new();
        for (c, p, rel) in &v.edges {
            let e = by_relation.entry(rel.as_str()).or_default();
            e.0.push((*c, *p));
            e.1.push((*p, *c));
        }
        let mut relations: HashMap<String, Hierarchy> = by_relation
            .into_iter()
            .map(|(rel, (mut up, mut down))| {
                up.sort_unstable();
                down.sort_unstable();
                (
                    rel.to_owned(),
                    Hierarchy {
                        parents: Csr::from_pairs(n, &up),
                        children: Csr::from_pairs(n, &down),
                    },
                )
            })
            .collect();
        relations
            .entry("subclass_of".to_owned())
            .or_insert_with(|| Hierarchy {
                parents: Csr::from_pairs(n, &[]),
                children: Csr::from_pairs(n, &[]),
            });
        // Rows come in document order, so bitmaps mostly grow by appending (`push`).
        let add = |b: &mut RoaringBitmap, d: u32| {
            if b.try_push(d).is_err() {
                b.insert(d);
            }
        };
        let mut postings: HashMap<String, HashMap<u32, RoaringBitmap>> = HashMap::new();
        let mut linked: HashMap<String, RoaringBitmap> = HashMap::new();
        for (field, rows) in &v.document_concepts {
            let mut per_concept: Vec<Option<RoaringBitmap>> = vec![None; n];
            let all = linked.entry(field.clone()).or_default();
            for &(d, c) in rows {
                add(per_concept[c as usize].get_or_insert_default(), d);
                add(all, d);
            }
            let field_postings = postings.entry(field.clone()).or_default();
            for (c, b) in per_concept.into_iter().enumerate() {
                if let Some(b) = b {
                    match field_postings.entry(c as u32) {
                        std::collections::hash_map::Entry::Occupied(mut e) => *e.get_mut() |= b,
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert(b);
                        }
                    }
                }
            }
        }
        Self {
            terms,
            relations,
            postings,
            linked,
        }
    }

    /// Concepts whose preferred term or synonym is `term` under the matching key
    /// ([`normalize_term`]: case, spacing, accents and compatibility forms folded), those
    /// whose preferred term it is first.
    pub fn resolve_term(&self, term: &str) -> &[u32] {
        self.terms.resolve(term)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization() {
        assert_eq!(
            normalize_term("  Myocardial \t INFARCTION "),
            "myocardial infarction"
        );
        assert_eq!(normalize_term("ﬁbrosis"), "fibrosis"); // NFKC ligature
    }
}
