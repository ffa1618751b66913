//! Text embedders: the [`Embedder`] trait, the identity every vector carries, and the built-in
//! model-free [`HashEmbedder`].
//!
//! A run's manifest records the [`EmbedderIdentity`] of its report embeddings; the engine embeds
//! a query only with an embedder of the same identity (model and dimension), and answers
//! `failed` otherwise, so vectors of different spaces are never compared.

pub mod hash;

use serde::{Deserialize, Serialize};

pub use hash::HashEmbedder;

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
    pub fn is_compatible(&self, other: &Self) -> bool {
        self.model == other.model && self.dim == other.dim
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
