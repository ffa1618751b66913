//! Linking quality: precision, recall and F1 of predicted document concept sets against
//! reference sets (a corpus's own MeSH indexing), micro-averaged over documents.

use super::Vocabulary;

/// How a predicted concept is compared with the reference set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// A predicted concept is right when it is in the reference set; a reference concept is
    /// found when it is predicted.
    Exact,
    /// One relation, used both ways: concept `p` *matches* reference concept `g` when `p == g`
    /// or `p` is a direct parent (broader concept) of `g`. A predicted concept is right when it
    /// matches some reference concept; a reference concept is found when some predicted
    /// concept matches it. So predicting *Breast Diseases* for a document indexed with
    /// *Breast Neoplasms* (its parent) counts; a grandparent or a child does not.
    WithParents,
}

/// Counts behind precision and recall, summed over documents (micro-averaging).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scores {
    /// Predicted concepts.
    pub num_predicted: u64,
    /// Predicted concepts that are right.
    pub num_predicted_right: u64,
    /// Reference concepts.
    pub num_reference: u64,
    /// Reference concepts that were found.
    pub num_reference_found: u64,
}

impl Scores {
    /// Right predictions / predictions (0 when nothing was predicted).
    pub fn precision(&self) -> f64 {
        ratio(self.num_predicted_right, self.num_predicted)
    }

    /// Found references / references (0 when there is no reference).
    pub fn recall(&self) -> f64 {
        ratio(self.num_reference_found, self.num_reference)
    }

    /// Harmonic mean of precision and recall (0 when both are 0).
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }

    /// Adds another document's (or corpus part's) counts.
    pub fn add(&mut self, other: &Scores) {
        self.num_predicted += other.num_predicted;
        self.num_predicted_right += other.num_predicted_right;
        self.num_reference += other.num_reference;
        self.num_reference_found += other.num_reference_found;
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Scores one document: `predicted` and `reference` are concept indices of `vocab`, each
/// without duplicates.
///
/// # Complexity
/// * Time: **O((|P| + |R|) · d)** with `d` parents per concept, plus sorting.
pub fn score_document(
    vocab: &Vocabulary,
    predicted: &[u32],
    reference: &[u32],
    matching: Matching,
) -> Scores {
    let mut p: Vec<u32> = predicted.to_vec();
    let mut r: Vec<u32> = reference.to_vec();
    p.sort_unstable();
    p.dedup();
    r.sort_unstable();
    r.dedup();
    // The concepts each reference concept accepts.
    let accepts = |g: u32| -> Vec<u32> {
        let mut v = vec![g];
        if matching == Matching::WithParents {
            v.extend(vocab.parents(g));
        }
        v
    };
    let mut accepted: Vec<u32> = r.iter().flat_map(|&g| accepts(g)).collect();
    accepted.sort_unstable();
    accepted.dedup();
    let right = p
        .iter()
        .filter(|c| accepted.binary_search(c).is_ok())
        .count();
    let found = r
        .iter()
        .filter(|&&g| accepts(g).iter().any(|c| p.binary_search(c).is_ok()))
        .count();
    Scores {
        num_predicted: p.len() as u64,
        num_predicted_right: right as u64,
        num_reference: r.len() as u64,
        num_reference_found: found as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Concept;
    use super::*;

    #[test]
    fn exact_and_with_parents() {
        let c = |id: &str| Concept {
            id: id.into(),
            preferred_term: id.into(),
            synonyms: vec![],
        };
        // 0 Neoplasms ← 1 Breast Neoplasms ← 2 Carcinoma, Ductal, Breast; 3 unrelated.
        let v = Vocabulary::from_parts(
            vec![c("N"), c("B"), c("D"), c("X")],
            &[("B".into(), "N".into()), ("D".into(), "B".into())],
            "v".into(),
        )
        .unwrap();
        let exact = score_document(&v, &[0, 3], &[1], Matching::Exact);
        assert_eq!(
            (exact.num_predicted_right, exact.num_reference_found),
            (0, 0)
        );
        let lenient = score_document(&v, &[0, 3], &[1], Matching::WithParents);
        assert_eq!(
            (lenient.num_predicted_right, lenient.num_reference_found),
            (1, 1)
        );
        // A grandparent or a child does not match.
        let grandparent = score_document(&v, &[0], &[2], Matching::WithParents);
        assert_eq!(grandparent.num_predicted_right, 0);
        let child = score_document(&v, &[2], &[1], Matching::WithParents);
        assert_eq!(
            (child.num_predicted_right, child.num_reference_found),
            (0, 0)
        );
        assert!((lenient.precision() - 0.5).abs() < 1e-12);
        assert!((lenient.f1() - 2.0 / 3.0).abs() < 1e-12);
    }
}
