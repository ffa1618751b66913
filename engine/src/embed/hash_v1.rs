//! The first built-in embedder, `agrag-hash-v1`, kept so that runs it embedded (the golden run
//! of format version 1 among them) still answer text questions. New runs use
//! [`HashEmbedder`](super::HashEmbedder) (`agrag-hash-v2`).

use super::hash::{STOP_WORDS, fnv1a64};
use super::{Embedder, EmbedderIdentity, l2_normalize};
use crate::error::Result;

/// Model name of [`HashEmbedderV1`] in manifests.
pub const HASH_V1_MODEL: &str = "agrag-hash-v1";

/// A deterministic, dependency-free embedder: signed feature hashing of words, word bigrams and
/// character trigrams, with sublinear term frequency, L2-normalized.
///
/// Features of a text (lower-cased, split on anything that is not a letter or digit, English
/// stop words dropped, a plural `s` stripped from words longer than four letters):
/// * each word, weight 1.0;
/// * each pair of adjacent words, weight 0.5;
/// * each character trigram of `^word$`, weight 0.25 (catches shared stems: *statin*/*statins*,
///   *cardiac*/*cardiology*).
///
/// Each feature is hashed with FNV-1a (64 bit) to a bucket and a sign; a feature's weight is
/// multiplied by `1 + ln(tf)`.
///
/// What it cannot do: it knows nothing of meaning. Synonyms that share no letters
/// (*heart attack* / *myocardial infarction*) are unrelated to it; a real sentence-embedding
/// model is needed for that.
#[derive(Debug, Clone)]
pub struct HashEmbedderV1 {
    identity: EmbedderIdentity,
}

impl Default for HashEmbedderV1 {
    fn default() -> Self {
        Self::new(384)
    }
}

impl HashEmbedderV1 {
    /// An embedder of `dim` dimensions.
    ///
    /// # Panics
    /// When `dim` is 0 (a programmer error).
    #[track_caller]
    pub fn new(dim: usize) -> Self {
        assert!(dim > 0, "HashEmbedderV1 dimension must be positive");
        Self {
            identity: EmbedderIdentity {
                model: HASH_V1_MODEL.to_owned(),
                dim,
                normalized: true,
                fingerprint: "fnv1a64;w1.0;bi0.5;tri0.25;sublinear-tf".to_owned(),
            },
        }
    }

    fn add(&self, v: &mut [f32], feature: &[u8], weight: f32) {
        let h = fnv1a64(feature);
        let dim = self.identity.dim as u64;
        let bucket = usize::try_from(h % dim).unwrap_or(0);
        let sign = if (h >> 63) == 1 { -1.0 } else { 1.0 };
        v[bucket] += sign * weight;
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let words = tokenize(text);
        let mut features: std::collections::BTreeMap<Vec<u8>, f32> =
            std::collections::BTreeMap::new();
        let mut bump = |key: Vec<u8>, w: f32| *features.entry(key).or_insert(0.0) += w;
        for (i, w) in words.iter().enumerate() {
            let mut k = b"w:".to_vec();
            k.extend_from_slice(w.as_bytes());
            bump(k, 1.0);
            if let Some(next) = words.get(i + 1) {
                let mut k = b"b:".to_vec();
                k.extend_from_slice(w.as_bytes());
                k.push(b' ');
                k.extend_from_slice(next.as_bytes());
                bump(k, 0.5);
            }
            let chars: Vec<char> = std::iter::once('^')
                .chain(w.chars())
                .chain(std::iter::once('$'))
                .collect();
            for tri in chars.windows(3) {
                let mut k = b"c:".to_vec();
                k.extend_from_slice(tri.iter().collect::<String>().as_bytes());
                bump(k, 0.25);
            }
        }
        let mut v = vec![0.0f32; self.identity.dim];
        // The accumulated weight of a feature is (unit weight × tf); apply 1 + ln(tf).
        for (key, total) in &features {
            let unit = match key[0] {
                b'w' => 1.0,
                b'b' => 0.5,
                _ => 0.25,
            };
            let tf = total / unit;
            self.add(&mut v, key, unit * (1.0 + tf.ln()));
        }
        l2_normalize(&mut v);
        v
    }
}

/// Lower-cased word tokens with stop words removed and a plural `s` stripped.
fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| {
            if w.len() > 4
                && w.ends_with('s')
                && !w.ends_with("ss")
                && !w.ends_with("us")
                && !w.ends_with("is")
            {
                w[..w.len() - 1].to_owned()
            } else {
                w
            }
        })
        .collect()
}

impl Embedder for HashEmbedderV1 {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
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
        let e = HashEmbedderV1::new(64);
        let a = e
            .embed("Statins reduce mortality after myocardial infarction")
            .unwrap();
        let b = e
            .embed("Statins reduce mortality after myocardial infarction")
            .unwrap();
        assert_eq!(a, b);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert_eq!(e.embed("").unwrap(), vec![0.0; 64]);
    }

    #[test]
    fn related_texts_score_higher_than_unrelated() {
        let e = HashEmbedderV1::default();
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
}
