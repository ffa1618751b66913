//! Text embedders: the [`Embedder`] trait, the identity every vector carries,
//! all-MiniLM-L6-v2 ([`MiniLmEmbedder`], cargo feature `minilm`), the built-in model-free
//! [`HashEmbedder`], and the `EMBEDDING_*` [`settings`].
//!
//! A run's manifest records the [`EmbedderIdentity`] of its report embeddings; the engine embeds
//! a query only with an embedder of the same identity (model, dimension and, when both sides
//! know it, weights fingerprint), and answers `failed` otherwise, so vectors of different
//! spaces are never compared.

pub mod hash;
pub mod hash_v1;
#[cfg(feature = "minilm")]
pub mod minilm;
pub mod query;
pub mod settings;

use serde::{Deserialize, Serialize};

pub use hash::HashEmbedder;
pub use hash_v1::HashEmbedderV1;
#[cfg(feature = "minilm")]
pub use minilm::MiniLmEmbedder;
pub use settings::{EmbedderChoice, EmbedderSettings, PrecomputedEmbedder, Provider};

/// Model name of all-MiniLM-L6-v2 in manifests (defined without the `minilm` feature too, so
/// that such runs are recognized and explained).
pub const MINILM_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Vector length of all-MiniLM-L6-v2 (its hidden size).
pub const MINILM_DIM: usize = 384;

/// What a transformer embedder does with a text longer than its input limit (for
/// all-MiniLM-L6-v2, 256 word pieces). Setting `EMBEDDING_LONG_TEXTS` (`windows` or
/// `truncate`). Either way the vectors live in the same space (queries are embedded the same
/// way when they fit one window), so it is not part of the [`EmbedderIdentity`]; runs record it
/// in the manifest's `parameters.embedding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LongTexts {
    /// Cut the text into consecutive windows of at most 254 word pieces, run each as its own
    /// sequence, and mean-pool over every real token of every window: the whole text counts,
    /// at a cost proportional to its length. The default: on the shipped corpus it lifts
    /// recall through themes from 0.818 to 0.896 (community reports run to ~370 word pieces;
    /// truncation drops their findings and sources).
    #[default]
    MeanOfWindows,
    /// Keep the first 254 word pieces (plus `[CLS]`/`[SEP]`), as sentence-transformers does:
    /// about half the embedding time on reports.
    Truncate,
    /// The same windows as [`LongTexts::MeanOfWindows`], each mean-pooled over its own real
    /// tokens, then the element-wise maximum over the windows: a window that says something
    /// strongly is not averaged away by the others. A text of one window gets the same
    /// vector as under the other policies.
    MaxOfWindows,
}

impl LongTexts {
    /// The setting's value: `windows` → `"mean_of_windows"`, `truncate` → `"truncate"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MeanOfWindows => "mean_of_windows",
            Self::Truncate => "truncate",
            Self::MaxOfWindows => "max_of_windows",
        }
    }
}

impl std::str::FromStr for LongTexts {
    type Err = crate::EngineError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "windows" | "mean_of_windows" => Ok(Self::MeanOfWindows),
            "truncate" => Ok(Self::Truncate),
            "max_windows" | "max_of_windows" => Ok(Self::MaxOfWindows),
            _ => Err(crate::EngineError::InvalidArgument {
                field: "EMBEDDING_LONG_TEXTS",
                value: s.to_owned(),
                expected: "windows, max_windows or truncate",
            }),
        }
    }
}

/// Files of the all-MiniLM-L6-v2 model folder that are read; together they make its
/// fingerprint.
pub const MINILM_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

use crate::error::Result;

/// What produced a vector: enough to tell whether two vectors live in the same space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// Model name, e.g. `agrag-hash-v2` or `sentence-transformers/all-MiniLM-L6-v2`.
    pub model: String,
    /// Vector length.
    pub dim: usize,
    /// Whether vectors are L2-normalized (then the dot product is the cosine).
    pub normalized: bool,
    /// Fingerprint of the weights or of the algorithm's parameters (hex or a version tag).
    pub fingerprint: String,
}

impl EmbedderIdentity {
    /// Whether vectors of `self` and `other` may be compared (same model and dimension).
    /// The weights are checked separately by [`same_weights`](Self::same_weights).
    pub fn is_compatible(&self, other: &Self) -> bool {
        self.model == other.model && self.dim == other.dim
    }

    /// Whether both identities come from the same weights: equal fingerprints, or one side
    /// does not know its fingerprint (empty, e.g. a [`PrecomputedEmbedder`]).
    pub fn same_weights(&self, other: &Self) -> bool {
        self.fingerprint.is_empty()
            || other.fingerprint.is_empty()
            || self.fingerprint == other.fingerprint
    }
}

/// Turns texts into fixed-length `f32` vectors.
///
/// Implementations are deterministic for a given identity: the same text gives the same vector.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Identity recorded in manifests and checked at query time.
    fn identity(&self) -> &EmbedderIdentity;

    /// How this embedder treats its input beyond its identity (input limit, long-text policy,
    /// pooling), recorded in a run's `parameters.embedding`; `null` when there is nothing to
    /// add.
    fn parameters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Embeds each text; returns one vector of length `identity().dim` per input, in order.
    ///
    /// # Errors
    /// [`EngineError::Embedder`](crate::EngineError::Embedder) when the model fails.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// Embeds one text.
    ///
    /// # Errors
    /// As [`Embedder::embed_batch`].
    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let mut v = self.embed_batch(&[text])?;
        v.pop().ok_or_else(|| {
            crate::EngineError::Internal("embedder returned no vector for one input".into())
        })
    }
}

/// Dot product of two equal-length slices.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent lanes over exact chunks: the compiler vectorizes this without
    // -ffast-math (the summation order is fixed, so results are reproducible).
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Scales `v` to unit L2 norm in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        for x in v {
            *x /= norm;
        }
    }
}
