//! The built-in, model-free embedder.

use std::collections::BTreeMap;

use super::{Embedder, EmbedderIdentity, l2_normalize};
use crate::error::Result;

/// Model name of [`HashEmbedder`] in manifests. The version changes whenever the vectors do,
/// so a run embedded by an older version is refused instead of compared.
pub const HASH_MODEL: &str = "agrag-hash-v2";

/// Weight of a word.
const WORD_WEIGHT: f32 = 1.0;
/// Weight of a pair of adjacent words.
const BIGRAM_WEIGHT: f32 = 0.5;
/// Weight of each character n-gram of a word.
const CHAR_NGRAM_WEIGHT: f32 = 0.2;
/// Lengths of the character n-grams, in characters (`^` and `$` mark the word's ends).
const CHAR_NGRAM_LENGTHS: std::ops::RangeInclusive<usize> = 3..=5;

/// A deterministic, dependency-free embedder: signed feature hashing of words, word bigrams and
/// character 3- to 5-grams, with sublinear term frequency, L2-normalized.
///
/// Features of a text (lower-cased, split on anything that is not a letter or digit, English
/// stop words dropped, a plural ending folded: *-ies* → *-y*, a final *s* dropped from words
/// longer than four letters except *-ss*, *-us*, *-is*):
/// * each word, weight 1.0;
/// * each pair of adjacent remaining words, weight 0.5 (*cell death* is more than *cell* and
///   *death*);
/// * each character n-gram of length 3, 4 and 5 of `^word$`, weight 0.2 each, for words with
///   a letter (as fastText does: *cardiac* and *cardiology* share `^car`, `^card`, `ardi`…;
///   numbers get no n-grams, *2.6* and *26* stay unrelated).
///
/// Each feature's weight is multiplied by `1 + ln(tf)` (tf: its count in the text), so a
/// repeated word counts, but less and less. Each feature is hashed with FNV-1a (64 bit) to a
/// bucket (`hash mod dim`) and a sign (the top bit), which keeps inner products unbiased under
/// collisions; the vector is then L2-normalized, so the dot product is the cosine.
///
/// # What it cannot do
/// It knows spelling, not meaning. Synonyms that share no letters (*heart attack* /
/// *myocardial infarction*, *kidney* / *renal*) are unrelated to it, as are paraphrases,
/// negation (*not effective* still matches *effective*) and word order beyond adjacent pairs.
/// Its stop words and plural rule are English. With the default 384 dimensions a long text's
/// features collide, which adds noise to every score. Use all-MiniLM-L6-v2 for search by
/// meaning; this embedder is the fallback when the model cannot be had, and the fast embedder
/// of tests.
///
/// # Determinism
/// The same text and dimension give the same vector on every machine and build: the hash is a
/// fixed, published function and features are summed in sorted order.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    identity: EmbedderIdentity,
}

/// English function words that carry no topic.
pub(super) const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "during", "each", "for", "from", "had", "has", "have", "how", "however", "if", "in", "into",
    "is", "it", "its", "may", "more", "most", "no", "not", "of", "on", "or", "other", "our",
    "over", "should", "such", "than", "that", "the", "their", "them", "there", "these", "they",
    "this", "those", "through", "to", "under", "was", "we", "were", "what", "when", "whether",
    "which", "while", "who", "whom", "why", "will", "with", "within", "without", "would", "you",
];

impl Default for HashEmbedder {
    /// 384 dimensions, the size of all-MiniLM-L6-v2's vectors.
    fn default() -> Self {
        Self::new(384)
    }
}

impl HashEmbedder {
    /// An embedder of `dim` dimensions.
    ///
    /// # Panics
    /// When `dim` is 0 (a programmer error).
    #[track_caller]
    pub fn new(dim: usize) -> Self {
        assert!(dim > 0, "HashEmbedder dimension must be positive");
        Self {
            identity: EmbedderIdentity {
                model: HASH_MODEL.to_owned(),
                dim,
                normalized: true,
                fingerprint: "fnv1a64;word1.0;bigram0.5;char3-5x0.2;tf1+ln".to_owned(),
            },
        }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let words = tokenize(text);
        // feature → (unit weight, term frequency), in sorted order for a fixed summation order.
        let mut features: BTreeMap<Vec<u8>, (f32, u32)> = BTreeMap::new();
        let mut bump = |key: Vec<u8>, unit: f32| features.entry(key).or_insert((unit, 0)).1 += 1;
        for (i, w) in words.iter().enumerate() {
            bump([b"w:", w.as_bytes()].concat(), WORD_WEIGHT);
            if let Some(next) = words.get(i + 1) {
                bump(
                    [b"b:", w.as_bytes(), b" ", next.as_bytes()].concat(),
                    BIGRAM_WEIGHT,
                );
            }
            if !w.chars().any(char::is_alphabetic) {
                continue;
            }
            let chars: Vec<char> = std::iter::once('^')
                .chain(w.chars())
                .chain(std::iter::once('$'))
                .collect();
            for n in CHAR_NGRAM_LENGTHS {
                for gram in chars.windows(n) {
                    let mut key = b"c:".to_vec();
                    key.extend(gram.iter().collect::<String>().bytes());
                    bump(key, CHAR_NGRAM_WEIGHT);
                }
            }
        }
        let dim = self.identity.dim as u64;
        let mut v = vec![0.0f32; self.identity.dim];
        for (key, &(unit, tf)) in &features {
            let h = fnv1a64(key);
            let bucket = usize::try_from(h % dim).unwrap_or(0);
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            #[allow(clippy::cast_precision_loss)] // tf is a count within one text
            let weight = unit * (1.0 + (tf as f32).ln());
            v[bucket] += sign * weight;
        }
        l2_normalize(&mut v);
        v
    }
}

/// Lower-cased word tokens, stop words removed, plural endings folded.
fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(singular)
        .collect()
}

/// Folds a plural ending: *-ies* → *-y* and a final *s* dropped, for words longer than four
/// letters (not *-ss*, *-us*, *-is*: *class*, *virus*, *analysis*).
fn singular(w: String) -> String {
    if w.len() <= 4 || !w.ends_with('s') {
        return w;
    }
    if let Some(stem) = w.strip_suffix("ies") {
        return format!("{stem}y");
    }
    if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return w;
    }
    w[..w.len() - 1].to_owned()
}

/// FNV-1a, 64 bit: a fixed, published hash, so vectors never change across builds.
pub(super) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Embedder for HashEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "features": "words 1.0, adjacent word pairs 0.5, character 3-5-grams 0.2",
            "term_frequency": "1 + ln(tf)",
            "hash": "fnv1a64, signed",
            "normalize": "l2",
        })
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::dot;

    #[test]
    fn deterministic_and_normalized() {
        let e = HashEmbedder::new(64);
        let a = e
            .embed("Statins reduce mortality after myocardial infarction")
            .unwrap();
        let b = e
            .embed_batch(&["x", "Statins reduce mortality after myocardial infarction"])
            .unwrap();
        assert_eq!(a, b[1]);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert_eq!(e.embed("").unwrap(), vec![0.0; 64]);
        assert_eq!(e.embed("the of and").unwrap(), vec![0.0; 64]);
    }

    #[test]
    fn related_texts_score_higher_than_unrelated() {
        let e = HashEmbedder::default();
        let q = e
            .embed("Do statins reduce mortality after myocardial infarction?")
            .unwrap();
        let near = e
            .embed("Statin therapy and mortality in patients with acute myocardial infarction")
            .unwrap();
        let far = e
            .embed("Mitochondria in lace plant leaves during programmed cell death")
            .unwrap();
        assert!(
            dot(&q, &near) > dot(&q, &far) + 0.2,
            "{} vs {}",
            dot(&q, &near),
            dot(&q, &far)
        );
    }

    #[test]
    fn shared_stems_count_and_unrelated_spellings_do_not() {
        let e = HashEmbedder::new(4096);
        let cos = |a: &str, b: &str| dot(&e.embed(a).unwrap(), &e.embed(b).unwrap());
        // No word in common, a stem in common: the character n-grams see it.
        let stem = cos("cardiac", "cardiology");
        let other = cos("cardiac", "pulmonary");
        assert!(
            stem > 0.15 && other.abs() < 0.05,
            "cardiology {stem}, pulmonary {other}"
        );
        // Plural folding: the same word.
        assert!(cos("therapies", "therapy") > 0.999);
        assert!(cos("studies", "study") > 0.999);
        // Synonyms without shared letters stay apart: what this embedder cannot do.
        let syn = cos("heart attack", "myocardial infarction");
        assert!(syn.abs() < 0.1, "heart attack·myocardial infarction {syn}");
        // Numbers get no n-grams.
        assert!(cos("2016", "2017").abs() < 0.1);
    }

    #[test]
    fn repeated_words_count_sublinearly() {
        let e = HashEmbedder::new(4096);
        let once = e.embed("statin cholesterol").unwrap();
        let thrice = e.embed("statin statin statin cholesterol").unwrap();
        let ten = e
            .embed(&format!("{} cholesterol", "statin ".repeat(10)))
            .unwrap();
        let c = e.embed("cholesterol").unwrap();
        // More repetitions pull away from the other word, but far less than linearly.
        let (a, b, d) = (dot(&once, &c), dot(&thrice, &c), dot(&ten, &c));
        assert!(a > b && b > d, "{a} {b} {d}");
        assert!(d > 0.25, "ten repetitions weigh 1 + ln 10, not 10: {d}");
    }

    #[test]
    fn fnv_reference_value() {
        // Published FNV-1a 64 test vector.
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
