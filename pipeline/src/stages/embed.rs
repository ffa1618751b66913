//! Stage 6, embed: each community's vectors (theme search; see [`CommunityVectors`]), the
//! passages', and the documents' (`find_by_meaning` ranks documents by a vector made of their
//! title's and passages'; see [`crate::embed`]), each batched and parallel.
//!
//! [`CommunityVectors`]: crate::report::CommunityVectors

use agrag_engine::embed::{EmbedderIdentity, l2_normalize};
use agrag_engine::format::tables::ReportVectors;

use crate::embed::{document_vector, embed_texts};
use crate::error::{PipelineError, Result};
use crate::ingest::Corpus;
use crate::run::RunConfig;
use crate::stages::Phases;
use crate::stages::report::Reported;
use crate::stages::visibility::PassageTable;

/// The embed stage's output, in the buffers the snapshot writer takes.
#[derive(Debug)]
pub(crate) struct Embedded {
    /// The communities' vectors, row-major in community order, with each row's community.
    pub(crate) report_vectors: ReportVectors,
    /// One vector per document, in document order, row-major (`documents × dim`).
    pub(crate) document_embeddings: Vec<f32>,
    /// The embedder that made them.
    pub(crate) identity: EmbedderIdentity,
}

/// Stage 6: embeds the reports' texts (phase `embed`), every passage still in the run and
/// those the communities' vectors use (`embed_passages`), and the documents' titles
/// (`embed_documents`), with [`RunConfig::embedder`]. Deleted and superseded passages add
/// nothing to their document's vector. The passage vectors end here.
///
/// # Errors
/// The embedder's; [`PipelineError::Internal`] when a community ends with no vector (a bug:
/// the report stage gives each one a text or a passage).
pub(crate) fn embed(
    cfg: &RunConfig,
    corpus: &Corpus,
    passages: &PassageTable<'_>,
    reported: &Reported,
    phases: &mut Phases,
) -> Result<Embedded> {
    let embedder = cfg.embedder.as_ref();
    let identity = embedder.identity().clone();

    let flat: Vec<&str> = reported
        .texts
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let phase = phases.start("embed", Some(flat.len() as u64));
    let mut text_vectors = embed_texts(embedder, &flat, "reports", &phase.bar)?.into_iter();
    phases.finish(
        phase,
        &format!("{} report vectors by {}", flat.len(), identity.model),
    );
    drop(flat);

    // The passages whose vectors are needed: every passage in the run (a document's vector is
    // made from its title's and its passages'), which includes those of the community vectors.
    let mut needed: Vec<u32> = reported
        .best_passages
        .iter()
        .chain(&reported.centroid_passages)
        .flatten()
        .copied()
        .chain((0..passages.len() as u32).filter(|&p| !passages.excluded[p as usize]))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let phase = phases.start("embed_passages", Some(needed.len() as u64));
    let passage_texts: Vec<&str> = needed
        .iter()
        .map(|&p| passages.refs[p as usize].text)
        .collect();
    let passage_vectors = embed_texts(embedder, &passage_texts, "passages", &phase.bar)?;
    drop(passage_texts);
    phases.finish(
        phase,
        &format!("{} passage vectors by {}", needed.len(), identity.model),
    );
    let passage_vector = |p: u32| -> &[f32] {
        let i = needed.binary_search(&p).unwrap_or_default();
        &passage_vectors[i]
    };

    let titles: Vec<&str> = corpus.documents.iter().map(|d| d.title.as_str()).collect();
    let phase = phases.start("embed_documents", Some(titles.len() as u64));
    let title_vectors = embed_texts(embedder, &titles, "document titles", &phase.bar)?;
    drop(titles);
    // Row-major, written as is: the writer makes its Arrow array over this buffer.
    let mut document_embeddings: Vec<f32> =
        Vec::with_capacity(corpus.documents.len() * identity.dim);
    let mut first_passage = 0u32;
    for (d, title) in corpus.documents.iter().zip(&title_vectors) {
        let rows = first_passage..first_passage + d.passages.len() as u32;
        first_passage = rows.end;
        let mut parts: Vec<&[f32]> = vec![title.as_slice()];
        // A closure of its own: its references coerce to the title's borrow, so the titles'
        // vectors can be dropped once the documents' are made.
        parts.extend(
            rows.filter(|&p| !passages.excluded[p as usize])
                .map(|p| -> &[f32] { passage_vector(p) }),
        );
        document_embeddings.extend(document_vector(&parts));
    }
    drop(title_vectors);
    phases.finish(
        phase,
        &format!(
            "{} document vectors from their titles and passages",
            corpus.documents.len(),
        ),
    );

    // Each community's vectors, row-major in community order: its texts' vectors, then its
    // best passages' own vectors (copied once, from the passage vectors, into the buffer the
    // writer takes), then the centroid.
    let mut report_vectors = ReportVectors::default();
    let communities = reported
        .texts
        .iter()
        .zip(&reported.best_passages)
        .zip(&reported.centroid_passages);
    for (c, ((texts, best), centroid)) in communities.enumerate() {
        let before = report_vectors.values.len();
        for v in text_vectors.by_ref().take(texts.len()) {
            report_vectors.values.extend_from_slice(&v);
        }
        for &p in best {
            report_vectors.values.extend_from_slice(passage_vector(p));
        }
        if !centroid.is_empty() {
            let mut mean = vec![0.0f32; identity.dim];
            for &p in centroid {
                for (m, x) in mean.iter_mut().zip(passage_vector(p)) {
                    *m += x;
                }
            }
            l2_normalize(&mut mean);
            report_vectors.values.extend_from_slice(&mean);
        }
        let rows = (report_vectors.values.len() - before) / identity.dim.max(1);
        if rows == 0 {
            return Err(PipelineError::Internal(format!(
                "community {c} has no vector"
            )));
        }
        report_vectors
            .communities
            .extend(std::iter::repeat_n(c as u32, rows));
    }
    Ok(Embedded {
        report_vectors,
        document_embeddings,
        identity,
    })
}
