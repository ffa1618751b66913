//! The concept side of a snapshot: term lookup, the hierarchy per relation, and per node field
//! the documents holding each concept (roaring bitmaps): read in place from
//! `concept_postings.arrow` and decoded per concept on first use, or, for runs without that
//! file, built when the run is opened.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use roaring::RoaringBitmap;

use super::{Csr, VocabularyTables};
use crate::error::Result;
use crate::format::mapped::concepts::ConceptColumns;
use crate::format::mapped::terms::TermIndex;
use crate::format::tables::concept_postings::MappedPostings;

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
#[derive(Debug, Default)]
pub struct ConceptIndex {
    terms: TermIndex,
    /// Hierarchy per relation name.
    pub relations: HashMap<String, Hierarchy>,
    /// Per node field: the documents holding each concept, and those holding any.
    pub(crate) postings: Postings,
}

/// The documents holding each concept, per node field.
#[derive(Debug, Default)]
pub(crate) struct Postings {
    fields: BTreeMap<String, FieldPostings>,
    mapped: Option<MappedPostings>,
}

/// One node field's postings.
#[derive(Debug)]
enum FieldPostings {
    /// Built at open from `document_concepts` (runs without `concept_postings.arrow`).
    Built {
        concepts: HashMap<u32, RoaringBitmap>,
        linked: RoaringBitmap,
    },
    /// Rows of the mapped `concept_postings.arrow`: all linked documents, and the concepts'.
    Mapped {
        linked: Option<usize>,
        concepts: Range<usize>,
    },
}

/// One node field's postings as a query reads them (see [`Postings::field`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldView<'a> {
    field: &'a FieldPostings,
    mapped: Option<&'a MappedPostings>,
    concepts: &'a ConceptColumns,
}

impl<'a> FieldView<'a> {
    /// The documents whose field holds concept row `c` (none when no document does).
    ///
    /// # Errors
    /// [`crate::EngineError::Corrupt`] when the mapped set of `c` does not decode.
    pub(crate) fn get(&self, c: u32) -> Result<Option<&'a RoaringBitmap>> {
        match (self.field, self.mapped) {
            (FieldPostings::Built { concepts, .. }, _) => Ok(concepts.get(&c)),
            (FieldPostings::Mapped { concepts, .. }, Some(file)) => {
                let id = self.concepts.ids.get(c as usize);
                if id.is_empty() {
                    return Ok(None);
                }
                file.find(concepts.clone(), id)
                    .map(|r| file.documents(r))
                    .transpose()
            }
            (FieldPostings::Mapped { .. }, None) => Ok(None),
        }
    }

    /// The documents holding at least one concept in the field.
    ///
    /// # Errors
    /// As [`FieldView::get`].
    pub(crate) fn linked(&self) -> Result<Option<&'a RoaringBitmap>> {
        match (self.field, self.mapped) {
            (FieldPostings::Built { linked, .. }, _) => Ok(Some(linked)),
            (FieldPostings::Mapped { linked, .. }, Some(file)) => {
                linked.map(|r| file.documents(r)).transpose()
            }
            (FieldPostings::Mapped { .. }, None) => Ok(None),
        }
    }
}

impl Postings {
    /// The postings of the mapped `concept_postings.arrow`.
    pub(crate) fn mapped(file: MappedPostings) -> Self {
        let fields = file
            .fields()
            .into_iter()
            .map(|(name, linked, concepts)| (name, FieldPostings::Mapped { linked, concepts }))
            .collect();
        Self {
            fields,
            mapped: Some(file),
        }
    }

    /// Node field `name`, whose concept rows are those of `concepts` (the run's vocabulary).
    pub(crate) fn field<'a>(
        &'a self,
        name: &str,
        concepts: &'a ConceptColumns,
    ) -> Option<FieldView<'a>> {
        self.fields.get(name).map(|field| FieldView {
            field,
            mapped: self.mapped.as_ref(),
            concepts,
        })
    }

    /// The node fields, ascending.
    pub(crate) fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.keys().map(String::as_str)
    }
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
        let fields = postings
            .into_iter()
            .map(|(field, concepts)| {
                let linked = linked.remove(&field).unwrap_or_default();
                (field, FieldPostings::Built { concepts, linked })
            })
            .collect();
        Self {
            terms,
            relations,
            postings: Postings {
                fields,
                mapped: None,
            },
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
