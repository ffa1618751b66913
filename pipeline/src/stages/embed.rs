//! Stage 6, embed: each community's vectors (theme search; see [`CommunityVectors`]) and one
//! vector per document (`find_by_meaning` ranks documents by the unit sum of their title's and
//! passages' vectors; see [`crate::embed`]), each batched and parallel.
//!
//! Memory: the two outputs (community rows and document rows, row-major) are not held: they
//! are written into scratch files of the run's staging folder
//! ([`agrag_engine::format::staged::StagedRows`]), which the snapshot writer maps and streams
//! (at 10⁶ documents they are 4.9 GB and 1.5 GB). Passages are embedded [`PASSAGE_CHUNK`] at a
//! time, in row order: each chunk's vectors are written to the community rows that are those
//! passages and added into their documents' rows, then the chunk is dropped. Passage rows are
//! in document order, so the document rows a chunk touches are a range: it is read, summed
//! into, and written back with every row but the last (which the next chunk may continue)
//! normalized. Only the passages a community centroid averages are kept until their means
//! are taken.
//!
//! The bits are those of embedding every passage in one call and summing each document's
//! title and passages in order ([`crate::embed::document_vector`]): a document's row starts as
//! its title's vector plus zero (`0 + t` is `t`, but for -0.0) and its passages are added in
//! position order, and a corpus of at most [`PASSAGE_CHUNK`] passages is one chunk, batched
//! as one call would be.
//!
//! [`CommunityVectors`]: crate::report::CommunityVectors

use std::collections::{HashMap, HashSet};

use agrag_engine::embed::{Embedder, EmbedderIdentity, l2_normalize};
use agrag_engine::format::RunWriter;
use agrag_engine::format::previous::PreviousRun;
use agrag_engine::format::staged::{RowBuffer, StagedRows};
use agrag_engine::format::tables::ReportVectors;
use agrag_engine::format::text_embeddings::{
    TextEmbeddings, TextEmbeddingsWriter, TextHash, text_hash,
};
use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::embed::embed_texts;
use crate::error::{PipelineError, Result};
use crate::ingest::CorpusColumns;
use crate::run::RunConfig;
use crate::stages::Phases;
use crate::stages::report::Reported;
use crate::stages::visibility::PassageTable;

/// Scratch file of the community rows (see [`StagedRows`]).
const SCRATCH_COMMUNITY_ROWS: &str = "scratch-community-vectors.f32";
/// Scratch file of the document rows.
const SCRATCH_DOCUMENT_ROWS: &str = "scratch-document-vectors.f32";

/// Passages embedded per chunk: the chunk's vectors (about 50 MB at 384 dimensions) are the
/// only passage vectors held at a time. Within a chunk, texts of similar length share a batch.
pub(crate) const PASSAGE_CHUNK: usize = 32 * 1024;

/// What a continuing run may take from its parent instead of embedding it again: the
/// report-text vectors of a community that kept its public id and whose embedded text
/// (`full_content`) is byte for byte the parent's, under the same embedder and the same
/// recipe ([`CommunityVectors`]).
///
/// [`CommunityVectors`]: crate::report::CommunityVectors
pub(crate) struct Reuse<'a> {
    /// The parent run.
    pub(crate) previous: &'a PreviousRun,
    /// Public id of each community, by hierarchy id.
    pub(crate) community_ids: &'a [u32],
}

/// The embed stage's output, in the buffers the snapshot writer takes.
#[derive(Debug)]
pub(crate) struct Embedded {
    /// Communities whose report-text vectors were taken from the parent run.
    pub(crate) reused_report_vectors: usize,
    /// Distinct texts (report texts, titles, passages) whose vectors were taken from the parent
    /// run, and those embedded by this one (the rows of `text_embeddings.arrow`, by origin).
    pub(crate) text_vectors: (usize, usize),
    /// Documents whose title's and passages' vectors all came from the parent run.
    pub(crate) reused_document_vectors: usize,
    /// The communities' vectors, row-major in community order, with each row's community.
    pub(crate) report_vectors: ReportVectors,
    /// One vector per document, in document order, row-major (`documents × dim`).
    pub(crate) document_embeddings: RowBuffer,
    /// The embedder that made them.
    pub(crate) identity: EmbedderIdentity,
}

/// Where each community's rows are: its text rows, then one row per best passage, then its
/// centroid row.
struct RowLayout {
    /// First row of each community, and the total at the end.
    first: Vec<usize>,
    /// `(passage row, community row)` of every best passage, sorted.
    passage_rows: Vec<(u32, usize)>,
}

impl RowLayout {
    fn new(reported: &Reported) -> Result<Self> {
        let mut first = Vec::with_capacity(reported.texts.len() + 1);
        let mut passage_rows = Vec::new();
        let mut next = 0usize;
        let communities = reported
            .texts
            .iter()
            .zip(&reported.best_passages)
            .zip(&reported.centroid_passages);
        for (c, ((texts, best), centroid)) in communities.enumerate() {
            first.push(next);
            next += texts.len();
            for &p in best {
                passage_rows.push((p, next));
                next += 1;
            }
            next += usize::from(!centroid.is_empty());
            if next == first[c] {
                return Err(PipelineError::Internal(format!(
                    "community {c} has no vector"
                )));
            }
        }
        first.push(next);
        passage_rows.sort_unstable();
        Ok(Self {
            first,
            passage_rows,
        })
    }

    fn num_rows(&self) -> usize {
        self.first.last().copied().unwrap_or(0)
    }
}

/// The vectors of texts by content (report texts, titles, passages): the parent run's where it
/// embedded the same text with the same embedder (`text_embeddings.arrow`), this run's
/// embedder's otherwise.
/// Every distinct text's vector is written once to this run's `text_embeddings.arrow`, for
/// the next run.
///
/// With the built-in embedder a reused vector is bit for bit the one embedding the text
/// again gives (a text's vector depends on the text alone). all-MiniLM-L6-v2's vectors of a
/// text differ by up to 1e-5 per component with the batch it is embedded in (see
/// `MiniLmEmbedder`), so a reused one is the parent's, within that.
struct TextVectors<'a> {
    embedder: &'a dyn Embedder,
    parent: Option<&'a TextEmbeddings>,
    out: TextEmbeddingsWriter,
    written: HashSet<TextHash>,
    reused: usize,
    embedded: usize,
}

impl<'a> TextVectors<'a> {
    /// Writes `vector`, the parent's vector of `text` taken another way, to the run's file
    /// (once per text).
    fn record(&mut self, text: &str, vector: &[f32]) -> Result<()> {
        let h = text_hash(text);
        if self.written.insert(h) {
            self.out.push(&h, vector)?;
            self.reused += 1;
        }
        Ok(())
    }

    /// The vectors of `texts` in input order, each with whether it came from the parent run.
    fn vectors(
        &mut self,
        texts: &[&str],
        what: &str,
        bar: &ProgressBar,
    ) -> Result<Vec<(Vec<f32>, bool)>> {
        let hashes: Vec<TextHash> = texts.par_iter().map(|t| text_hash(t)).collect();
        let mut vectors: Vec<Option<(Vec<f32>, bool)>> = hashes
            .iter()
            .map(|h| {
                self.parent
                    .and_then(|p| p.get(h))
                    .map(|v| (v.to_vec(), true))
            })
            .collect();
        bar.inc(vectors.iter().filter(|v| v.is_some()).count() as u64);
        let missing: Vec<&str> = texts
            .iter()
            .zip(&vectors)
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| *t)
            .collect();
        let mut fresh = embed_texts(self.embedder, &missing, what, bar)?.into_iter();
        drop(missing);
        for v in &mut vectors {
            if v.is_none() {
                *v = fresh.next().map(|f| (f, false));
            }
        }
        let vectors: Vec<(Vec<f32>, bool)> = vectors.into_iter().flatten().collect();
        if vectors.len() != texts.len() {
            return Err(PipelineError::Internal(format!(
                "{} vectors for {} {what}",
                vectors.len(),
                texts.len()
            )));
        }
        for (h, (v, from_parent)) in hashes.iter().zip(&vectors) {
            if self.written.insert(*h) {
                self.out.push(h, v)?;
                if *from_parent {
                    self.reused += 1;
                } else {
                    self.embedded += 1;
                }
            }
        }
        Ok(vectors)
    }
}

/// Stage 6: embeds the reports' texts (phase `embed`), the documents' titles
/// (`embed_documents`), then every passage still in the run and those the communities' vectors
/// use (`embed_passages`, which also completes the document vectors and the centroids), with
/// [`RunConfig::embedder`]. Deleted and superseded passages add nothing to their document's
/// vector. Titles and passages whose text the parent run embedded with the same embedder
/// take its vectors (not with [`RunConfig::full`]); every distinct title and passage vector
/// goes to the run's `text_embeddings.arrow` through `w`
/// ([`agrag_engine::format::text_embeddings`]).
///
/// # Errors
/// The embedder's; the writer's; [`PipelineError::Internal`] when a community has no vector
/// (a bug: the report stage gives each one a text or a passage).
pub(crate) fn embed(
    cfg: &RunConfig,
    corpus: &CorpusColumns,
    passages: &PassageTable<'_>,
    reported: &Reported,
    reuse: Option<Reuse<'_>>,
    w: &RunWriter,
    phases: &mut Phases,
) -> Result<Embedded> {
    let embedder = cfg.embedder.as_ref();
    let identity = embedder.identity().clone();
    let dim = identity.dim;
    let layout = RowLayout::new(reported)?;
    let community_rows = StagedRows::create(w, SCRATCH_COMMUNITY_ROWS, layout.num_rows(), dim)?;
    let document_rows = StagedRows::create(w, SCRATCH_DOCUMENT_ROWS, corpus.num_documents(), dim)?;

    // The reports' texts, into their rows: the parent's vectors where the text is the
    // parent's, embedded otherwise.
    let recipe = serde_json::Value::String(cfg.community_vectors.to_string());
    // Title and passage vectors depend on the text and the embedder alone.
    let text_parent: Option<&TextEmbeddings> = reuse
        .as_ref()
        .map(|r| r.previous)
        .filter(|p| !cfg.full && p.embedder == identity)
        .and_then(|p| p.text_embeddings.as_ref());
    let reuse = reuse.filter(|r| {
        !cfg.full && r.previous.embedder == identity && r.previous.community_vectors == recipe
    });
    let from_parent: Vec<Option<&[f32]>> = reported
        .texts
        .iter()
        .zip(&reported.reports)
        .enumerate()
        .map(|(c, (texts, report))| {
            let r = reuse.as_ref().filter(|_| !texts.is_empty())?;
            let row = r
                .previous
                .community_ids
                .binary_search(r.community_ids.get(c)?)
                .ok()?;
            let text = blake3::hash(report.full_content.as_bytes());
            if r.previous.report_text_hashes.get(row)? != text.as_bytes() {
                return None;
            }
            r.previous
                .community_vectors_of(row, texts.len())
                .filter(|v| v.len() == texts.len() * dim)
        })
        .collect();
    // Every text the run embeds, report texts too, goes to text_embeddings.arrow; a report
    // text the parent embedded (under any community) is taken from there.
    let mut text_vectors = TextVectors {
        embedder,
        parent: text_parent,
        out: TextEmbeddingsWriter::create(w, dim)?,
        written: HashSet::new(),
        reused: 0,
        embedded: 0,
    };
    let flat: Vec<&str> = reported
        .texts
        .iter()
        .zip(&from_parent)
        .filter(|(_, parent)| parent.is_none())
        .flat_map(|(texts, _)| texts)
        .map(String::as_str)
        .collect();
    let phase = phases.start("embed", Some(flat.len() as u64));
    let fresh = text_vectors.vectors(&flat, "reports", &phase.bar)?;
    let embedded_now = fresh.iter().filter(|(_, p)| !p).count();
    drop(flat);
    let mut fresh = fresh.into_iter();
    // Communities whose every report-text vector is the parent's, by either way.
    let mut reused_report_vectors = 0;
    for (c, texts) in reported.texts.iter().enumerate() {
        if let Some(parent) = from_parent[c] {
            community_rows.write_rows(layout.first[c], parent)?;
            for (text, v) in texts.iter().zip(parent.chunks_exact(dim.max(1))) {
                text_vectors.record(text, v)?;
            }
            reused_report_vectors += usize::from(!texts.is_empty());
            continue;
        }
        let mut all_from_parent = !texts.is_empty();
        for (i, (v, from_parent)) in fresh.by_ref().take(texts.len()).enumerate() {
            community_rows.write_rows(layout.first[c] + i, &v)?;
            all_from_parent &= from_parent;
        }
        reused_report_vectors += usize::from(all_from_parent);
    }
    drop(from_parent);
    phases.finish(
        phase,
        &format!(
            "{embedded_now} report vectors embedded by {}; the vectors of {reused_report_vectors} communities taken from the parent run",
            identity.model
        ),
    );

    // The titles: each document's row starts as its title's vector.
    let reused_before_titles = text_vectors.reused;
    let titles: Vec<&str> = (0..corpus.num_documents())
        .map(|d| corpus.title(d))
        .collect();
    let phase = phases.start("embed_documents", Some(titles.len() as u64));
    // Whether each document's vector is made of the parent's vectors alone.
    let mut document_reused = Vec::with_capacity(titles.len());
    let mut sums = Vec::new();
    for (i, chunk) in titles.chunks(PASSAGE_CHUNK).enumerate() {
        sums.clear();
        for (v, from_parent) in text_vectors.vectors(chunk, "document titles", &phase.bar)? {
            // Sums from zero, as `document_vector` makes them (a title's -0.0 becomes +0.0).
            sums.extend(v.iter().map(|x| 0.0 + x));
            document_reused.push(from_parent);
        }
        document_rows.write_rows(i * PASSAGE_CHUNK, &sums)?;
    }
    drop((titles, sums));
    phases.finish(
        phase,
        &format!(
            "{} title vectors, by {}; {} of them taken from the parent run",
            corpus.num_documents(),
            identity.model,
            text_vectors.reused - reused_before_titles
        ),
    );

    // The passages, a chunk at a time in row order: into the community rows that are them, added
    // into their documents' rows, and kept only when a centroid averages them.
    let mut needed: Vec<u32> = layout
        .passage_rows
        .iter()
        .map(|&(p, _)| p)
        .chain(reported.centroid_passages.iter().flatten().copied())
        .chain((0..passages.len() as u32).filter(|&p| !passages.excluded[p as usize]))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let mut centroid_members: Vec<u32> = reported
        .centroid_passages
        .iter()
        .flatten()
        .copied()
        .collect();
    centroid_members.sort_unstable();
    centroid_members.dedup();
    let mut kept: HashMap<u32, Vec<f32>> = HashMap::with_capacity(centroid_members.len());
    let phase = phases.start("embed_passages", Some(needed.len() as u64));
    let mut targets = layout.passage_rows.iter().peekable();
    // Documents before `done` are complete and written normalized; `docs` holds the rows
    // from `done` on that the current chunk touches.
    let mut done = 0usize;
    let mut docs: Vec<f32> = Vec::new();
    for chunk in needed.chunks(PASSAGE_CHUNK) {
        let texts: Vec<&str> = chunk.iter().map(|&p| passages.text(p as usize)).collect();
        let vectors = text_vectors.vectors(&texts, "passages", &phase.bar)?;
        drop(texts);
        // The chunk's text is read: its pages leave the resident set.
        corpus.release_passages();
        let last = chunk
            .last()
            .map_or(done, |&p| passages.document(p) as usize)
            .max(done);
        docs.resize((last + 1 - done) * dim, 0.0);
        document_rows.read_rows(done, &mut docs)?;
        for (&p, (v, from_parent)) in chunk.iter().zip(vectors) {
            while let Some(&(_, r)) = targets.next_if(|(q, _)| *q == p) {
                community_rows.write_rows(r, &v)?;
            }
            if !passages.excluded[p as usize] {
                let d = passages.document(p) as usize;
                document_reused[d] &= from_parent;
                for (s, x) in docs[(d - done) * dim..(d - done + 1) * dim]
                    .iter_mut()
                    .zip(&v)
                {
                    *s += x;
                }
            }
            if centroid_members.binary_search(&p).is_ok() {
                kept.insert(p, v);
            }
        }
        // Every document before `last` is complete: later passages are of `last` or after.
        for doc in docs[..(last - done) * dim].chunks_exact_mut(dim.max(1)) {
            l2_normalize(doc);
        }
        document_rows.write_rows(done, &docs)?;
        done = last;
    }
    // The rest: the last chunk's last document and those without a passage after it.
    let nd = corpus.num_documents();
    for first in (done..nd).step_by(PASSAGE_CHUNK) {
        let n = PASSAGE_CHUNK.min(nd - first);
        docs.resize(n * dim, 0.0);
        document_rows.read_rows(first, &mut docs)?;
        for doc in docs.chunks_exact_mut(dim.max(1)) {
            l2_normalize(doc);
        }
        document_rows.write_rows(first, &docs)?;
    }
    drop(docs);
    // Each centroid: the unit mean of its passages' vectors, summed in ranking order.
    for (c, centroid) in reported.centroid_passages.iter().enumerate() {
        if centroid.is_empty() {
            continue;
        }
        let mut mean = vec![0.0f32; dim];
        for p in centroid {
            let v = kept.get(p).ok_or_else(|| {
                PipelineError::Internal(format!("centroid passage {p} was not embedded"))
            })?;
            for (m, x) in mean.iter_mut().zip(v) {
                *m += x;
            }
        }
        l2_normalize(&mut mean);
        community_rows.write_rows(layout.first[c + 1] - 1, &mean)?;
    }
    drop(kept);
    let TextVectors {
        out,
        reused,
        embedded,
        ..
    } = text_vectors;
    out.finish(w)?;
    let reused_document_vectors = document_reused.iter().filter(|&&r| r).count();
    phases.finish(
        phase,
        &format!(
            "{} passage vectors by {}; {} document vectors from their titles and passages; of {} distinct texts, {reused} taken from the parent run",
            needed.len(),
            identity.model,
            corpus.num_documents(),
            reused + embedded,
        ),
    );

    let communities = layout
        .first
        .windows(2)
        .enumerate()
        .flat_map(|(c, w)| std::iter::repeat_n(c as u32, w[1] - w[0]))
        .collect();
    Ok(Embedded {
        reused_report_vectors,
        text_vectors: (reused, embedded),
        reused_document_vectors,
        report_vectors: ReportVectors {
            values: community_rows.finish()?,
            communities,
        },
        document_embeddings: document_rows.finish()?,
        identity,
    })
}
