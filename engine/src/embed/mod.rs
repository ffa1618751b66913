//! Text embedders: the [`Embedder`] trait, the identity every vector carries,
//! all-MiniLM-L6-v2 ([`MiniLmEmbedder`], cargo feature `minilm`), the built-in model-free
//! [`HashEmbedder`], and the `EMBEDDING_*` [`settings`].
//!
//! A run's manifest records the [`EmbedderIdentity`] of its report embeddings; the engine embeds
//! a query only with an embedder of the same identity (model, dimension and, when both sides
//! know it, weights fingerprint), and answers `failed` otherwise, so vectors of different
//! spaces are never compared.

pub mod hash;
#[cfg(feature = "minilm")]
pub mod minilm;
pub mod settings;

use serde::{Deserialize, Serialize};

pub use hash::HashEmbedder;
#[cfg(feature = "minilm")]
pub use minilm::MiniLmEmbedder;
pub use settings::{EmbedderChoice, EmbedderSettings, PrecomputedEmbedder, Provider};

/// Model name of all-MiniLM-L6-v2 in manifests (defined without the `minilm` feature too, so
/// that such runs are recognized and explained).
pub const MINILM_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Vector length of all-MiniLM-L6-v2 (its hidden size).
pub const MINILM_DIM: usize = 384;

/// Files of the all-MiniLM-L6-v2 model folder that are read; together they make its
/// fingerprint.
pub const MINILM_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

use crate::error::Result;

/// What produced a vector: enough to tell whether two vectors live in the same space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// Model name, e.g. `agrag-hash-v1` or `sentence-transformers/all-MiniLM-L6-v2`.
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
    // Four independent accumulators let the compiler vectorize without -ffast-math.
    let mut acc = [0.0f32; 4];
    let chunks = a.len() / 4;
    for i in 0..chunks {
        for (k, slot) in acc.iter_mut().enumerate() {
            *slot += a[4 * i + k] * b[4 * i + k];
        }
    }
    let mut s = acc[0] + acc[1] + acc[2] + acc[3];
    for i in 4 * chunks..a.len() {
        s += a[i] * b[i];
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
