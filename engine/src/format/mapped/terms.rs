//! `terms.arrow`: the vocabulary's term index, one row per distinct matching key
//! ([`normalize_term`]) of a preferred term or synonym, ascending by key bytes, with the
//! concepts (rows of [`super::concepts`]) it names. A query's term is keyed by the same
//! function and found by binary search over the mapped keys, so the engine builds no hash map
//! of the vocabulary at open, and pipeline and engine cannot key a term differently.
//!
//! A key's concepts come in a fixed order: those whose preferred term it is (ascending row),
//! then those that have it as a synonym only (ascending row), so a term naming one concept
//! outright resolves to that concept first.

use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{Csr, Strings, Table, binary, u32_item, u32_lists, write_file};
use crate::error::Result;
use crate::format::RunWriter;
use crate::format::normalize::normalize_term;

/// File name inside the run folder.
pub const FILE: &str = "terms.arrow";
/// Matching key of a term (UTF-8 as `Binary`), strictly ascending by bytes.
pub const TERM: &str = "term";
/// Concept rows the key names (list of uint32): preferred-term concepts first.
pub const CONCEPTS: &str = "concepts";

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(TERM, DataType::Binary, false),
        Field::new(CONCEPTS, DataType::List(u32_item()), false),
    ]))
}

/// The term index of a vocabulary: sorted keys and the concepts of each.
#[derive(Debug, Clone)]
pub struct TermIndex {
    /// Matching keys, strictly ascending by bytes.
    pub keys: Strings,
    /// Concept rows of each key.
    pub concepts: Csr,
}

impl Default for TermIndex {
    fn default() -> Self {
        Self::build(0, |_| ("", &[] as &[&str]))
    }
}

impl TermIndex {
    /// Builds the index in memory from `num_concepts` concepts, `(preferred term, synonyms)` of
    /// row `c` given by `terms(c)`: what [`write`] stores, for runs written without the file.
    pub fn build<'a, S: AsRef<str> + 'a>(
        num_concepts: usize,
        terms: impl Fn(u32) -> (&'a str, &'a [S]),
    ) -> Self {
        let (keys, pairs) = entries(num_concepts, terms);
        let keys = Strings::from_values(keys.iter().map(String::as_str));
        Self {
            concepts: Csr::from_pairs(keys.len(), &pairs),
            keys,
        }
    }

    /// Concepts whose preferred term or synonym has the key of `term` (any case, spacing,
    /// accents or compatibility forms): preferred-term concepts first. Empty when none.
    pub fn resolve(&self, term: &str) -> &[u32] {
        self.keys
            .find_sorted(&normalize_term(term))
            .map_or(&[], |r| self.concepts.row(r as usize))
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the index holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The distinct keys, ascending, and `(key row, concept row)` pairs in the order of
/// [`TermIndex::resolve`]. Blank keys are left out.
fn entries<'a, S: AsRef<str> + 'a>(
    num_concepts: usize,
    terms: impl Fn(u32) -> (&'a str, &'a [S]),
) -> (Vec<String>, Vec<(u32, u32)>) {
    // (key, 0 = preferred term / 1 = synonym, concept row)
    let mut all: Vec<(String, u8, u32)> = Vec::new();
    for c in 0..num_concepts as u32 {
        let (preferred, synonyms) = terms(c);
        all.push((normalize_term(preferred), 0, c));
        all.extend(synonyms.iter().map(|s| (normalize_term(s.as_ref()), 1, c)));
    }
    all.retain(|e| !e.0.is_empty());
    all.sort_unstable();
    let mut keys: Vec<String> = Vec::new();
    let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(all.len());
    let mut first_of_key = 0usize;
    for (key, _, c) in all {
        if keys.last() != Some(&key) {
            keys.push(key);
            first_of_key = pairs.len();
        }
        let k = (keys.len() - 1) as u32;
        // A concept is listed once per key, at its first (preferred-term) place.
        if !pairs[first_of_key..].iter().any(|&(_, x)| x == c) {
            pairs.push((k, c));
        }
    }
    (keys, pairs)
}

/// Writes the file for `num_concepts` concepts, `(preferred term, synonyms)` of row `c`
/// given by `terms(c)`.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write<'a, S: AsRef<str> + 'a>(
    w: &RunWriter,
    num_concepts: usize,
    terms: impl Fn(u32) -> (&'a str, &'a [S]),
) -> Result<()> {
    let (keys, pairs) = entries(num_concepts, terms);
    let index = Csr::from_pairs(keys.len(), &pairs);
    write_file(w, FILE, &schema(), keys.len(), |range| {
        Ok(vec![
            binary(keys[range.clone()].iter().map(String::as_str)),
            u32_lists(range.map(|k| index.row(k)))?,
        ])
    })
}

/// Maps the file of the run in `dir`, which has `rows` keys.
///
/// # Errors
/// [`crate::EngineError::Io`] / [`crate::EngineError::Corrupt`] naming the file.
pub(crate) fn read(dir: &Path, rows: usize) -> Result<TermIndex> {
    let t = Table::open(&dir.join(FILE), &schema(), rows)?;
    Ok(TermIndex {
        keys: t.strings(TERM)?,
        concepts: t.lists(CONCEPTS)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_and_preferred_concepts_come_first() {
        let vocab: [(&str, Vec<String>); 3] = [
            (
                "Aspirin",
                vec!["ASA".into(), "acetylsalicylic  acid".into()],
            ),
            ("Asa", vec![]),
            ("Pain", vec!["aspirin".into(), "  ".into()]),
        ];
        let index = TermIndex::build(3, |c| {
            let (p, s) = &vocab[c as usize];
            (*p, s.as_slice())
        });
        let keys: Vec<&str> = (0..index.len()).map(|k| index.keys.get(k)).collect();
        assert_eq!(keys, ["acetylsalicylic acid", "asa", "aspirin", "pain"]);
        // "asa": concept 1's preferred term, concept 0's synonym.
        assert_eq!(index.resolve("ASA"), &[1, 0]);
        // "aspirin": concept 0's preferred term, concept 2's synonym.
        assert_eq!(index.resolve(" ASPIRIN "), &[0, 2]);
        assert_eq!(index.resolve("Acetylsalicylic Acid"), &[0]);
        assert!(index.resolve("unknown").is_empty());
        assert!(index.resolve("").is_empty());
    }
}
