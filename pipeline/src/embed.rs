//! The embed stage's arithmetic: texts embedded in length-sorted parallel batches, and a
//! document's vector made from the vectors of its parts.
//!
//! A document's vector is the normalised sum of the unit vectors of its title and of each of
//! its passages ([`document_vector`]) rather than the embedding of the whole text. The passage
//! vectors are needed anyway (theme search scores a community by its supporting passages), so a
//! document then costs one short extra text, its title, where embedding it whole ran every
//! passage through the model a second time. A sentence encoder reads at most 256 word pieces,
//! so a whole abstract was already the mean of windows; the mean of its passages is the same
//! pooling at passage boundaries instead of every 254 pieces. `document-recall` in the benches
//! measures both ways on titles and conclusions (see `benches/RESULTS.md`).

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::error::{PipelineError, Result};
use crate::run::EMBED_CHUNK_TEXTS;

/// The vector of a document made of `parts` (its title's and its passages' unit vectors, all of
/// one length): their sum scaled to unit length. Empty `parts` give an empty vector; parts that
/// cancel out give the zero vector, which no query matches.
pub fn document_vector(parts: &[&[f32]]) -> Vec<f32> {
    let Some(first) = parts.first() else {
        return Vec::new();
    };
    let mut sum = vec![0.0f32; first.len()];
    for p in parts {
        for (s, x) in sum.iter_mut().zip(p.iter()) {
            *s += x;
        }
    }
    agrag_engine::embed::l2_normalize(&mut sum);
    sum
}

/// Embeds `texts` with `embedder`, one vector per text in input order.
///
/// Texts of similar length share a batch (a transformer pads a batch to its longest text):
/// they are sorted longest first, cut into batches of [`EMBED_CHUNK_TEXTS`], the batches run in
/// parallel on the current Rayon pool, and the vectors go back to input order. `what` names the
/// texts in errors.
///
/// # Errors
/// The embedder's error; [`PipelineError::Internal`] when it returns another number of vectors
/// than it was given texts.
pub(crate) fn embed_texts(
    embedder: &dyn agrag_engine::embed::Embedder,
    texts: &[&str],
    what: &str,
    bar: &ProgressBar,
) -> Result<Vec<Vec<f32>>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
    let sorted: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
    let chunks: Vec<Vec<Vec<f32>>> = sorted
        .par_chunks(EMBED_CHUNK_TEXTS)
        .map(|chunk| {
            let v = embedder.embed_batch(chunk);
            bar.inc(chunk.len() as u64);
            v
        })
        .collect::<agrag_engine::Result<Vec<_>>>()?;
    let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
    let mut returned = 0usize;
    for (&i, v) in order.iter().zip(chunks.into_iter().flatten()) {
        vectors[i] = v;
        returned += 1;
    }
    if returned != texts.len() {
        return Err(PipelineError::Internal(format!(
            "the embedder returned {returned} vectors for {} {what}",
            texts.len()
        )));
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_vector_is_the_unit_mean_of_its_parts() {
        let v = document_vector(&[&[1.0, 0.0], &[0.0, 1.0]]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - h).abs() < 1e-6 && (v[1] - h).abs() < 1e-6, "{v:?}");
        assert_eq!(document_vector(&[&[0.6, 0.8]]), vec![0.6, 0.8]);
        assert!(document_vector(&[]).is_empty());
        assert_eq!(
            document_vector(&[&[1.0, 0.0], &[-1.0, 0.0]]),
            vec![0.0, 0.0]
        );
    }
}
