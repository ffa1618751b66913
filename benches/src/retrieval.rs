//! Retrieval measurements shared by the `theme-recall` and `embed-throughput` binaries: the
//! embedders under test, batch embedding the way the pipeline does it, exact cosine top-k and
//! latency percentiles.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agrag_engine::embed::settings::model_path_from_env;
use agrag_engine::embed::{Embedder, HashEmbedder, LongTexts, MiniLmEmbedder, dot};
use agrag_pipeline::ingest::Corpus;
use rayon::prelude::*;

/// An embedder under test and its short name (`minilm`, `hash`).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Short name used on the command line and in tables.
    pub name: String,
    /// The embedder.
    pub embedder: Arc<dyn Embedder>,
}

/// Names [`candidates`] knows: all-MiniLM-L6-v2 (long texts as the mean of windows, or
/// truncated) and the built-in hash embedder.
pub const EMBEDDERS: [&str; 4] = ["minilm", "minilm-truncate", "minilm-max", "hash"];

/// The embedders named in `names`: `minilm` (long texts as the mean over 254-piece windows,
/// the default), `minilm-truncate` (long texts truncated at 256 word pieces, as
/// sentence-transformers does), `minilm-max` (the element-wise maximum of the windows' means),
/// `hash`. MiniLM is read from `EMBEDDING_MODEL_PATH` (or the default folder); when
/// it cannot be loaded it is left out and the reason is returned as a notice.
pub fn candidates(names: &[&str]) -> (Vec<Candidate>, Vec<String>) {
    let mut out = Vec::new();
    let mut notices = Vec::new();
    for &name in names {
        match name {
            "minilm" | "minilm-truncate" | "minilm-max" => {
                match MiniLmEmbedder::load(&model_path_from_env()) {
                    Ok(e) => out.push(Candidate {
                        name: name.to_owned(),
                        embedder: Arc::new(e.with_long_texts(match name {
                            "minilm" => LongTexts::MeanOfWindows,
                            "minilm-max" => LongTexts::MaxOfWindows,
                            _ => LongTexts::Truncate,
                        })),
                    }),
                    Err(e) => notices.push(format!("{name} left out: {e}")),
                }
            }
            "hash" => out.push(Candidate {
                name: name.to_owned(),
                embedder: Arc::new(HashEmbedder::default()),
            }),
            other => notices.push(format!("unknown embedder {other:?} left out")),
        }
    }
    (out, notices)
}

/// An [`Embedder`] that remembers the vector of every text it has embedded, so that runs of
/// several experiments on one corpus embed each distinct text once (passages, documents,
/// questions and unchanged report texts). Same identity and vectors as the wrapped embedder
/// (a transformer's masked pooling makes a vector independent of its batch, up to float
/// rounding).
#[derive(Debug)]
pub struct CachingEmbedder {
    inner: Arc<dyn Embedder>,
    cache: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
    misses: std::sync::atomic::AtomicUsize,
}

impl CachingEmbedder {
    /// Wraps `inner` with an empty cache.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Self {
            inner,
            cache: std::sync::Mutex::default(),
            misses: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Texts embedded by the wrapped embedder so far (cache misses).
    pub fn misses(&self) -> usize {
        self.misses.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Embedder for CachingEmbedder {
    fn identity(&self) -> &agrag_engine::embed::EmbedderIdentity {
        self.inner.identity()
    }

    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }

    fn embed_batch(&self, texts: &[&str]) -> agrag_engine::Result<Vec<Vec<f32>>> {
        let mut out: Vec<Option<Vec<f32>>> = {
            let cache = self.cache.lock().expect("cache lock");
            texts.iter().map(|t| cache.get(*t).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed_batch(&batch)?;
            self.misses
                .fetch_add(missing.len(), std::sync::atomic::Ordering::Relaxed);
            let mut cache = self.cache.lock().expect("cache lock");
            for (&i, v) in missing.iter().zip(vectors) {
                cache.insert(texts[i].to_owned(), v.clone());
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

/// Embeds `texts` as the pipeline embeds reports: sorted by length, chunks of `chunk` texts in
/// parallel on the current Rayon pool, vectors returned in input order.
///
/// # Panics
/// When the embedder fails (a benchmark has nothing to report then).
pub fn embed_all(embedder: &dyn Embedder, texts: &[&str], chunk: usize) -> Vec<Vec<f32>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
    let sorted: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
    let chunks: Vec<Vec<Vec<f32>>> = sorted
        .par_chunks(chunk.max(1))
        .map(|c| embedder.embed_batch(c).expect("embedding failed"))
        .collect();
    let mut out = vec![Vec::new(); texts.len()];
    for (&i, v) in order.iter().zip(chunks.into_iter().flatten()) {
        out[i] = v;
    }
    out
}

/// Indices of the `k` rows of `matrix` with the largest dot product with `query`, best first
/// (ties by lower index).
pub fn top_k(matrix: &[Vec<f32>], query: &[f32], k: usize) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = matrix
        .iter()
        .enumerate()
        .map(|(i, row)| (dot(row, query), i))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, i)| i).collect()
}

/// The `p`-th percentile (0–100, nearest rank) of `samples`, or 0 when there are none.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

/// Runs `f` and returns its result with the wall time in milliseconds.
pub fn timed_ms<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64() * 1e3)
}

/// Ranks of each question's own document (1-based; `None` past the cut-off of the search).
#[derive(Debug, Clone, Default)]
pub struct Ranks(pub Vec<Option<usize>>);

impl Ranks {
    /// Share of questions whose document ranks at most `k` (0 when there are none).
    pub fn recall(&self, k: usize) -> f64 {
        let n = self.0.len().max(1) as f64;
        self.0.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n
    }

    /// Mean reciprocal rank: the mean of 1 / rank, a question past the cut-off counting 0.
    pub fn mrr(&self) -> f64 {
        let n = self.0.len().max(1) as f64;
        self.0
            .iter()
            .flatten()
            .map(|&r| 1.0 / r as f64)
            .sum::<f64>()
            / n
    }
}

/// The default conclusions file: `../shared/data/pubmedqa/conclusions.jsonl` beside the
/// workspace, else `/work/shared/data/pubmedqa/conclusions.jsonl`.
pub fn default_conclusions() -> std::path::PathBuf {
    crate::common::workspace()
        .join("../shared/data/pubmedqa/conclusions.jsonl")
        .canonicalize()
        .unwrap_or_else(|_| {
            std::path::PathBuf::from("/work/shared/data/pubmedqa/conclusions.jsonl")
        })
}

/// The conclusion questions of `path` (JSON lines of `{"document_key", "query"}`, PubMedQA's
/// `LONG_ANSWER` of each abstract) paired with the index of their document in `corpus`; lines
/// whose document is not in the corpus, or whose query is empty, are left out.
///
/// # Panics
/// When the file cannot be read or a line is not JSON (a benchmark has nothing to measure then).
pub fn read_conclusions(path: &Path, corpus: &Corpus) -> Vec<(String, usize)> {
    let index: HashMap<&str, usize> = corpus
        .documents
        .iter()
        .enumerate()
        .map(|(i, d)| (d.key.as_str(), i))
        .collect();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{} line {}: {e}", path.display(), n + 1));
        let key = v["document_key"].as_str().unwrap_or_default();
        let query = v["query"].as_str().unwrap_or_default();
        if let Some(&d) = index.get(key)
            && !query.is_empty()
        {
            out.push((query.to_owned(), d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), 50.0);
        assert_eq!(percentile(&s, 99.0), 99.0);
        assert_eq!(percentile(&s, 100.0), 100.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn top_k_orders_by_score_then_index() {
        let m = vec![
            vec![0.0, 1.0],
            vec![1.0, 0.0],
            vec![0.6, 0.8],
            vec![1.0, 0.0],
        ];
        assert_eq!(top_k(&m, &[1.0, 0.0], 3), vec![1, 3, 2]);
    }

    #[test]
    fn embed_all_keeps_input_order() {
        let e = HashEmbedder::new(32);
        let texts = ["short", "a much longer text about statins", "mid length"];
        let all = embed_all(&e, &texts, 2);
        for (t, v) in texts.iter().zip(&all) {
            assert_eq!(v, &e.embed(t).unwrap());
        }
    }
}
