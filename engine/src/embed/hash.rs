//! The built-in, model-free embedder.

#[cfg(test)]
use std::collections::BTreeMap;

use strength_reduce::StrengthReducedU64;

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
    /// `dim`, for `hash mod dim` by multiplication: a 64-bit division per feature occurrence
    /// was a fifth of the embedder's time.
    buckets: StrengthReducedU64,
}

/// English function words that carry no topic, sorted (looked up by binary search).
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
            buckets: StrengthReducedU64::new(dim as u64),
        }
    }

    /// The vector of one text, built in `scratch` (reused across the texts of a batch).
    ///
    /// Every feature key is written once into one byte arena with its hash and bucket. The
    /// definition sums the distinct features in sorted key order, and a bucket's value depends
    /// only on the order of *its own* keys. So the occurrences are grouped by bucket (a
    /// counting sort) and sorted by hash within it, integers alone, which brings the
    /// occurrences of one key together (equal keys have equal hashes); each run of equal
    /// hashes is checked byte by byte to be one key (and split by key in the astronomically
    /// rare case of a 64-bit collision); and a bucket's distinct keys are put in key order
    /// before they are summed when there are three or more (two terms added to zero give the
    /// same bits in either order, as IEEE 754 addition commutes). The vector is bit for bit
    /// what the definition gives.
    fn embed_one(&self, text: &str, scratch: &mut Scratch) -> Vec<f32> {
        scratch.tokenize(text);
        scratch.features(&self.buckets);
        let Scratch {
            keys,
            features,
            by_bucket,
            bucket_start,
            next_slot,
            terms,
            ..
        } = scratch;
        // Occurrences grouped by bucket with a counting sort (`dim` counters), then each
        // bucket's few occurrences sorted by hash.
        bucket_start.clear();
        bucket_start.resize(self.identity.dim + 1, 0);
        for f in features.iter() {
            bucket_start[f.bucket as usize + 1] += 1;
        }
        for b in 0..self.identity.dim {
            bucket_start[b + 1] += bucket_start[b];
        }
        by_bucket.clear();
        by_bucket.resize(features.len(), Feature::default());
        next_slot.clear();
        next_slot.extend_from_slice(bucket_start);
        for &f in features.iter() {
            let slot = &mut next_slot[f.bucket as usize];
            by_bucket[*slot as usize] = f;
            *slot += 1;
        }
        let mut v = vec![0.0f32; self.identity.dim];
        for (bucket, w) in bucket_start.windows(2).enumerate() {
            let occurrences = &mut by_bucket[w[0] as usize..w[1] as usize];
            if occurrences.is_empty() {
                continue;
            }
            occurrences.sort_unstable_by_key(|f| f.hash);
            // The bucket's distinct keys with their term frequencies.
            terms.clear();
            let mut i = 0;
            while i < occurrences.len() {
                let f = occurrences[i];
                let mut j = i + 1;
                while j < occurrences.len() && occurrences[j].hash == f.hash {
                    j += 1;
                }
                let run = &mut occurrences[i..j];
                if run[1..].iter().all(|x| x.key(keys) == f.key(keys)) {
                    terms.push((f, j - i));
                } else {
                    run.sort_unstable_by(|a, b| a.key(keys).cmp(b.key(keys)));
                    let mut k = 0;
                    while k < run.len() {
                        let mut m = k + 1;
                        while m < run.len() && run[m].key(keys) == run[k].key(keys) {
                            m += 1;
                        }
                        terms.push((run[k], m - k));
                        k = m;
                    }
                }
                i = j;
            }
            if terms.len() > 2 {
                terms.sort_unstable_by(|a, b| a.0.key(keys).cmp(b.0.key(keys)));
            }
            for &(f, tf) in terms.iter() {
                let sign = if f.hash >> 63 == 1 { -1.0 } else { 1.0 };
                let unit = match f.key(keys)[0] {
                    b'w' => WORD_WEIGHT,
                    b'b' => BIGRAM_WEIGHT,
                    _ => CHAR_NGRAM_WEIGHT,
                };
                #[allow(clippy::cast_precision_loss)] // tf is a count within one text
                let weight = unit * (1.0 + (tf as f32).ln());
                v[bucket] += sign * weight;
            }
        }
        l2_normalize(&mut v);
        v
    }
}

/// A feature occurrence: its key, a byte range of [`Scratch::keys`], with the key's FNV-1a
/// hash and bucket (`hash mod dim`).
#[derive(Debug, Clone, Copy, Default)]
struct Feature {
    start: u32,
    end: u32,
    bucket: u32,
    hash: u64,
}

impl Feature {
    fn key(self, arena: &[u8]) -> &[u8] {
        &arena[self.start as usize..self.end as usize]
    }
}

/// A word's byte range in [`Scratch::words`].
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

/// Buffers one text's tokens and feature keys are built in, kept across the texts of a batch
/// so that a text costs no allocation but its vector.
#[derive(Debug, Default)]
struct Scratch {
    /// The text's words, lower-cased and folded, back to back.
    words: String,
    /// Each word's byte range in `words`.
    word_spans: Vec<Span>,
    /// Every feature key of the text, back to back (`w:…`, `b:… …`, `c:…`).
    keys: Vec<u8>,
    /// Each feature's key in `keys` with its hash, one entry per occurrence.
    features: Vec<Feature>,
    /// `features` grouped by bucket (a counting sort's output).
    by_bucket: Vec<Feature>,
    /// Where each bucket's features start in `by_bucket`, and their end (`dim + 1` values).
    bucket_start: Vec<u32>,
    /// The next free slot of each bucket while `by_bucket` is filled.
    next_slot: Vec<u32>,
    /// One bucket's distinct features with their term frequencies.
    terms: Vec<(Feature, usize)>,
    /// Byte offsets of the characters of `^word$`, and its end.
    char_ends: Vec<usize>,
    /// `^word$` of the word whose n-grams are being taken.
    marked: String,
}

impl Scratch {
    /// Fills `words`/`word_spans` with the tokens [`tokenize`] gives, without a `String` each.
    fn tokenize(&mut self, text: &str) {
        self.words.clear();
        self.word_spans.clear();
        for raw in text.split(|c: char| !c.is_alphanumeric()) {
            if raw.is_empty() {
                continue;
            }
            let start = self.words.len();
            if raw.is_ascii() {
                self.words
                    .extend(raw.bytes().map(|b| char::from(b.to_ascii_lowercase())));
            } else {
                self.words.push_str(&raw.to_lowercase());
            }
            let word = &self.words[start..];
            if STOP_WORDS.binary_search(&word).is_ok() {
                self.words.truncate(start);
                continue;
            }
            // The plural rule of `singular`, applied in place.
            let plural = word.len() > 4 && word.ends_with('s');
            let ies = plural && word.ends_with("ies");
            let kept = word.ends_with("ss") || word.ends_with("us") || word.ends_with("is");
            if ies {
                self.words.truncate(self.words.len() - 3);
                self.words.push('y');
            } else if plural && !kept {
                self.words.pop();
            }
            self.word_spans.push(span(start, self.words.len()));
        }
    }

    /// Fills `keys`/`features` with every feature occurrence of the tokenized words, each
    /// hashed into one of `dim` buckets.
    fn features(&mut self, dim: &StrengthReducedU64) {
        self.keys.clear();
        self.features.clear();
        for (i, &w) in self.word_spans.iter().enumerate() {
            let word = &self.words[w.start as usize..w.end as usize];
            let start = self.keys.len();
            self.keys.extend_from_slice(b"w:");
            self.keys.extend_from_slice(word.as_bytes());
            push_feature(&self.keys, &mut self.features, start, dim);
            if let Some(&next) = self.word_spans.get(i + 1) {
                let start = self.keys.len();
                self.keys.extend_from_slice(b"b:");
                self.keys.extend_from_slice(word.as_bytes());
                self.keys.push(b' ');
                self.keys.extend_from_slice(
                    &self.words.as_bytes()[next.start as usize..next.end as usize],
                );
                push_feature(&self.keys, &mut self.features, start, dim);
            }
            if !word.chars().any(char::is_alphabetic) {
                continue;
            }
            self.marked.clear();
            self.marked.push('^');
            self.marked.push_str(word);
            self.marked.push('$');
            self.char_ends.clear();
            self.char_ends
                .extend(self.marked.char_indices().map(|(at, _)| at).skip(1));
            self.char_ends.push(self.marked.len());
            // char_ends[k] is where character k + 1 ends; a window of n characters starting
            // at character s spans [start of s, end of s + n - 1].
            let chars = self.char_ends.len();
            for n in CHAR_NGRAM_LENGTHS {
                for s in 0..=chars.saturating_sub(n) {
                    if s + n > chars {
                        break;
                    }
                    let from = if s == 0 { 0 } else { self.char_ends[s - 1] };
                    let to = self.char_ends[s + n - 1];
                    let start = self.keys.len();
                    self.keys.extend_from_slice(b"c:");
                    self.keys
                        .extend_from_slice(&self.marked.as_bytes()[from..to]);
                    push_feature(&self.keys, &mut self.features, start, dim);
                }
            }
        }
    }
}

/// Records the key written to `keys[start..]` as one feature occurrence.
fn push_feature(keys: &[u8], features: &mut Vec<Feature>, start: usize, dim: &StrengthReducedU64) {
    let hash = fnv1a64(&keys[start..]);
    let s = span(start, keys.len());
    features.push(Feature {
        start: s.start,
        end: s.end,
        bucket: u32::try_from(hash % *dim).expect("a dimension that fits in 32 bits"),
        hash,
    });
}

/// A [`Span`] of `start..end`; a text longer than 4 GiB of features is not one a passage has.
fn span(start: usize, end: usize) -> Span {
    let narrow = |x: usize| u32::try_from(x).expect("a text's features fit in 4 GiB");
    Span {
        start: narrow(start),
        end: narrow(end),
    }
}

/// The vector of one text as the definition reads: a sorted map of owned keys. The reference
/// the fast path is held to, bit for bit.
#[cfg(test)]
fn embed_reference(dim: usize, text: &str) -> Vec<f32> {
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
    let mut v = vec![0.0f32; dim];
    for (key, &(unit, tf)) in &features {
        let h = fnv1a64(key);
        let bucket = usize::try_from(h % dim as u64).unwrap_or(0);
        let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
        #[allow(clippy::cast_precision_loss)] // tf is a count within one text
        let weight = unit * (1.0 + (tf as f32).ln());
        v[bucket] += sign * weight;
    }
    l2_normalize(&mut v);
    v
}

/// Lower-cased word tokens, stop words removed, plural endings folded.
#[cfg(test)]
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
#[cfg(test)]
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
        let mut scratch = Scratch::default();
        Ok(texts
            .iter()
            .map(|t| self.embed_one(t, &mut scratch))
            .collect())
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

    /// The fast path gives the reference's bits, on texts that exercise each rule (stop words,
    /// plurals, digits, non-ASCII letters whose lower case is longer, repeated features) and
    /// on every title and passage of the shipped corpus.
    #[test]
    fn the_fast_path_gives_the_reference_bits() {
        let e = HashEmbedder::default();
        let mut texts: Vec<String> = [
            "",
            "the of and",
            "Statins statins STATINS reduce the studies' mortality: 2.6 vs 26%",
            "classes viruses analysis therapies series bus kiss ies ss",
            "İstanbul ÆSIR Straße naïve café ΣΊΣΥΦΟΣ 東京 中文字 ǅemal",
            "a-b_c/d e—f g\u{300}h ⅷ ² ½ x",
            "cell death cell death cell death",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/pubmedqa/documents.jsonl");
        let shipped = std::fs::read_to_string(&corpus).expect("the shipped corpus");
        for line in shipped.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON document");
            texts.push(doc["title"].as_str().unwrap_or_default().to_owned());
            for p in doc["passages"].as_array().into_iter().flatten() {
                texts.push(p.as_str().unwrap_or_default().to_owned());
            }
        }
        assert!(texts.len() > 3_000, "{} texts", texts.len());
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for dim in [384, 7] {
            let fast = HashEmbedder::new(dim).embed_batch(&refs).unwrap();
            for (text, v) in refs.iter().zip(&fast) {
                let want = embed_reference(dim, text);
                let (a, b): (Vec<u32>, Vec<u32>) = (
                    v.iter().map(|x| x.to_bits()).collect(),
                    want.iter().map(|x| x.to_bits()).collect(),
                );
                assert_eq!(a, b, "dim {dim}: {text:?}");
            }
        }
        assert_eq!(e.embed(&texts[2]).unwrap(), embed_reference(384, &texts[2]));
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn fnv_reference_value() {
        // Published FNV-1a 64 test vector.
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
