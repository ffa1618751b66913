//! Stage 2, link: the vocabulary's concepts found in each document (dictionary matching and
//! the linker's rules, [`DocumentLinker`]), or the mentions a GraphRAG index gives, as the
//! graph's input mentions and each document's concept set.
//!
//! ```text
//! corpus + vocabulary ──link_corpus──► Linked ──► graph (co-occurrence)
//! GraphRAG index ──────given_links───► Linked ──► graph (the index's relationships)
//! ```

use std::collections::HashSet;
use std::path::Path;

use indicatif::ProgressBar;
use rayon::prelude::*;
use serde::Serialize;

use agrag_engine::format::document_links::{
    DocumentHash, DocumentLinks, DocumentLinksWriter, ParentLinks, StoredDocumentLinks,
    document_key,
};
use agrag_engine::format::{Layout, Manifest, RunWriter};

use crate::error::Result;
use crate::graph::builder::Mention;
use crate::ingest::CorpusColumns;
use crate::link::{
    BrokenCycle, DocumentConcepts, DocumentLinker, LinkConfig, TermIndex, Vocabulary,
    load_vocabulary,
};
use crate::publish::ConceptEvidence;
use crate::run::{NODE_FIELD_CONCEPT, NODE_FIELD_MESH};
use crate::stages::Phases;
use crate::stages::visibility::PassageTable;

/// Documents linked per chunk by [`link_corpus`]: enough to keep both cores busy, few enough
/// that the chunk's nested results are a few megabytes.
const LINK_CHUNK: usize = 4096;

/// What linking found: the graph's input mentions and each document's concepts.
#[derive(Debug, Default)]
pub(crate) struct Linked {
    /// `(passage row, concept)` of passages neither excluded nor hidden.
    pub(crate) mentions: Vec<Mention>,
    /// Occurrences of each mention's concept in its passage, parallel to `mentions`.
    pub(crate) occurrences: Vec<u32>,
    /// Whether each document has at least one linked concept.
    pub(crate) document_linked: Vec<bool>,
    /// `(node_field, document, concept)`.
    pub(crate) document_concepts: Vec<(&'static str, u32, u32)>,
    /// Why each concept of the `concept` field is there.
    pub(crate) concept_evidence: Vec<ConceptEvidence>,
    /// The input's own headings that name no concept.
    pub(crate) unresolved_headings: usize,
}

impl Linked {
    /// Appends document `d`'s links: `kept` are its passage rows that were linked (in the
    /// order `links` lists them), `links` what linking found in them.
    fn push_document(
        &mut self,
        d: u32,
        kept: &[usize],
        links: &DocumentLinks,
        passages: &PassageTable<'_>,
    ) {
        for (&p, concepts) in kept.iter().zip(&links.passage_mentions) {
            if passages.hidden[p] {
                continue;
            }
            for &(c, n) in concepts {
                self.mentions.push(Mention {
                    passage: p as u32,
                    concept: c,
                });
                self.occurrences.push(n);
            }
        }
        for (&concept, ways) in links.concepts.iter().zip(&links.ways) {
            self.document_concepts
                .push((NODE_FIELD_CONCEPT, d, concept));
            for (w, way) in ways.iter().enumerate() {
                let w = w as u32;
                if way.is_empty() {
                    self.concept_evidence.push((d, concept, w, None));
                }
                for &k in way {
                    self.concept_evidence
                        .push((d, concept, w, Some(kept[k as usize] as u32)));
                }
            }
        }
        self.document_linked[d as usize] = !links.concepts.is_empty();
    }

    /// Documents with at least one linked concept.
    pub(crate) fn linked_documents(&self) -> usize {
        self.document_linked.iter().filter(|x| **x).count()
    }
}

/// Revision of the linker's rules, part of the [`link_fingerprint`]: raised whenever a change
/// of the linking code can change what a document links to, so that a run never takes links
/// its parent's linker found under other rules.
pub(crate) const LINKER_REVISION: u32 = 1;

/// The key under which a run's document links are stored and looked up
/// ([`document_key`]): BLAKE3 of the linker's revision, the crate version, the vocabulary's
/// fingerprint and the linking parameters. Two runs share it exactly when the same document
/// links to the same concepts in both.
pub(crate) fn link_fingerprint(vocab: &Vocabulary, link: &LinkConfig) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"agrag document links\0");
    h.update(&LINKER_REVISION.to_le_bytes());
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(b"\0");
    h.update(vocab.fingerprint.as_bytes());
    h.update(b"\0");
    // LinkConfig serialises to JSON without error: strings, numbers and booleans only.
    h.update(&serde_json::to_vec(link).unwrap_or_default());
    *h.finalize().as_bytes()
}

/// What a document's linking gives, in the form the next run reads back.
fn stored_form(dc: DocumentConcepts) -> DocumentLinks {
    DocumentLinks {
        concepts: dc.concepts.iter().map(|c| c.concept).collect(),
        passage_mentions: dc.passage_mentions,
        ways: dc.evidence,
    }
}

/// One document's links as [`link_corpus`] found or took them.
struct LinkedDocument {
    /// Its passage rows that were linked, in document order.
    kept: Vec<usize>,
    /// The key of its links.
    key: DocumentHash,
    links: DocumentLinks,
    /// Whether `links` are the parent run's.
    reused: bool,
}

/// Passages and documents whose links came from the parent run, and those linked.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct LinkReuse {
    /// Passages (not excluded) of documents whose links were the parent's.
    pub(crate) reused_passages: usize,
    /// Passages (not excluded) of documents linked by this run.
    pub(crate) linked_passages: usize,
    /// Documents whose links were the parent's.
    pub(crate) reused_documents: usize,
    /// Documents linked by this run.
    pub(crate) linked_documents: usize,
}

/// Links every document of `corpus` against `vocab` (whole documents in parallel: title and
/// the passages that are not excluded) and resolves the documents' own headings. A document
/// whose linker input (title, passages linked, [`link_fingerprint`]) is in `parent` takes the
/// links stored there instead, which are what linking it gives; every distinct document's
/// links go to `document_links.arrow` of the run `writer` writes. Returns the links and what
/// was taken from `parent`.
///
/// # Errors
/// Those of writing `document_links.arrow`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn link_corpus(
    corpus: &CorpusColumns,
    vocab: &Vocabulary,
    linker: &DocumentLinker,
    passages: &PassageTable<'_>,
    excluded_documents: &HashSet<String>,
    fingerprint: &[u8; 32],
    parent: Option<&StoredDocumentLinks>,
    writer: &RunWriter,
    bar: &ProgressBar,
) -> Result<(Linked, LinkReuse)> {
    let num_concepts = vocab.len();
    let num_documents = corpus.num_documents();
    let mut out = Linked {
        document_linked: vec![false; num_documents],
        ..Linked::default()
    };
    let mut reuse = LinkReuse::default();
    let mut stored = DocumentLinksWriter::create(writer, fingerprint)?;
    // Two documents with the same title and passages have one row.
    let mut written: HashSet<DocumentHash> = HashSet::new();
    // Documents are linked LINK_CHUNK at a time (in parallel within a chunk) and each chunk's
    // nested per-document results are flattened into the integer columns before the next: the
    // nested vectors of a whole corpus were most of the job's memory at 10⁶ documents.
    // A chunk's passage text leaves the resident set once it is linked.
    for base in (0..num_documents).step_by(LINK_CHUNK) {
        let docs = base..(base + LINK_CHUNK).min(num_documents);
        let found: Vec<Option<LinkedDocument>> = docs
            .into_par_iter()
            .map(|d| {
                let rows = corpus.passage_rows(d);
                bar.inc(rows.len() as u64);
                let kept: Vec<usize> = rows.filter(|&p| !passages.excluded[p]).collect();
                if kept.is_empty() {
                    return None;
                }
                let texts: Vec<&str> = kept.iter().map(|&p| passages.text(p)).collect();
                let title = corpus.title(d);
                let key = document_key(fingerprint, title, &texts);
                let from_parent = match parent.and_then(|p| p.get(&key, num_concepts)) {
                    Some(Ok(links)) if links.passage_mentions.len() == kept.len() => Some(links),
                    Some(Ok(_)) => None,
                    Some(Err(e)) => {
                        tracing::warn!(
                            "{}; the document {:?} is linked again",
                            e.with_causes(),
                            corpus.key(d)
                        );
                        None
                    }
                    None => None,
                };
                let reused = from_parent.is_some();
                let links =
                    from_parent.unwrap_or_else(|| stored_form(linker.link_document(title, &texts)));
                Some(LinkedDocument {
                    kept,
                    key,
                    links,
                    reused,
                })
            })
            .collect();
        corpus.release_passages();
        for (i, found) in found.into_iter().enumerate() {
            if let Some(LinkedDocument {
                kept,
                key,
                links,
                reused,
            }) = found
            {
                if reused {
                    reuse.reused_passages += kept.len();
                    reuse.reused_documents += 1;
                } else {
                    reuse.linked_passages += kept.len();
                    reuse.linked_documents += 1;
                }
                if written.insert(key) {
                    stored.push(&key, &links)?;
                }
                out.push_document((base + i) as u32, &kept, &links, passages);
            }
        }
    }
    stored.finish(writer)?;
    // The input's own headings, resolved by preferred term or synonym (case-folded).
    let term_index = TermIndex::new(vocab);
    for d in 0..num_documents {
        if excluded_documents.contains(corpus.key(d)) {
            continue;
        }
        for h in corpus.headings(d) {
            match term_index.get(h) {
                Some(c) => out.document_concepts.push((NODE_FIELD_MESH, d as u32, c)),
                None => out.unresolved_headings += 1,
            }
        }
    }
    Ok((out, reuse))
}

/// Links from mentions an index gives (`(passage row, concept)`): the passages that are
/// neither excluded nor hidden feed the graph, and every passage not excluded is evidence of
/// its document's concepts, as with [`link_corpus`].
pub(crate) fn given_links(
    mentions: &[Mention],
    passages: &PassageTable<'_>,
    num_documents: usize,
) -> Linked {
    let mut out = Linked {
        document_linked: vec![false; num_documents],
        ..Linked::default()
    };
    let mut per_document: Vec<(u32, u32, u32)> = Vec::new();
    for m in mentions {
        let p = m.passage as usize;
        if passages.excluded[p] {
            continue;
        }
        per_document.push((passages.document(p as u32), m.concept, m.passage));
        if !passages.hidden[p] {
            out.mentions.push(*m);
            out.occurrences.push(1);
        }
    }
    per_document.sort_unstable();
    per_document.dedup();
    for (i, &(d, c, p)) in per_document.iter().enumerate() {
        if i == 0 || per_document[i - 1].0 != d || per_document[i - 1].1 != c {
            out.document_concepts.push((NODE_FIELD_CONCEPT, d, c));
        }
        // One way of evidence per concept: the passages whose text unit lists the entity.
        out.concept_evidence.push((d, c, 0, Some(p)));
        out.document_linked[d as usize] = true;
    }
    out
}

/// What linking counted.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LinkStats {
    /// Distinct `(passage, concept)` mentions feeding the graph.
    pub(crate) mentions: usize,
    /// Documents with at least one linked concept.
    pub(crate) linked_documents: usize,
    /// Patterns of the linker's automaton (`None` when an index gave the mentions).
    pub(crate) patterns: Option<usize>,
    /// The input's own headings that name no concept.
    pub(crate) unresolved_headings: usize,
    /// Cycles of the vocabulary's broader edges, each broken by dropping one edge.
    pub(crate) vocabulary_cycles_broken: Vec<BrokenCycle>,
    /// What was taken from the parent run's links and what was linked.
    pub(crate) reuse: LinkReuse,
}

/// The vocabulary and the linker compiled from it, made before the corpus is read and while
/// it is ([`prepare`]): building the automaton of a whole MeSH's terms is a serial second or
/// two that ingest's reading hides.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The vocabulary of the run's vocabulary folder.
    pub(crate) vocabulary: Vocabulary,
    /// Its linker under the run's linking parameters.
    pub(crate) linker: DocumentLinker,
    /// The key of the run's document links ([`link_fingerprint`]).
    pub(crate) fingerprint: [u8; 32],
    /// Seconds spent loading the vocabulary and compiling the linker.
    pub(crate) seconds: f64,
}

/// Loads the vocabulary of `vocabulary_dir` and compiles its [`DocumentLinker`] under
/// `config`, warning of each cycle of broader edges the load broke.
///
/// # Errors
/// Those of [`load_vocabulary`] and [`DocumentLinker::new`].
pub(crate) fn prepare(config: &LinkConfig, vocabulary_dir: &Path) -> Result<Prepared> {
    let started = std::time::Instant::now();
    let vocabulary = load_vocabulary(vocabulary_dir)?;
    warn_broken_cycles(&vocabulary);
    let linker = DocumentLinker::new(&vocabulary, config)?;
    let fingerprint = link_fingerprint(&vocabulary, config);
    Ok(Prepared {
        vocabulary,
        linker,
        fingerprint,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn warn_broken_cycles(vocabulary: &Vocabulary) {
    for c in &vocabulary.broken_cycles {
        tracing::warn!(
            "vocabulary cycle {:?} broken by dropping {} -> {}",
            c.concepts,
            c.dropped_edge.0,
            c.dropped_edge.1
        );
    }
}

/// What the link stage links with.
#[derive(Debug)]
pub(crate) enum LinkInput<'a> {
    /// A vocabulary and its linker ([`prepare`]): the corpus is linked. The link phase's clock
    /// starts at `since`, when the corpus was read, so any wait for the linker counts as
    /// linking.
    Prepared {
        /// The vocabulary and its linker.
        prepared: Box<Prepared>,
        /// When the stage before ended.
        since: std::time::Instant,
    },
    /// An index's entities as the vocabulary, with the mentions it gives.
    Given(Vocabulary, &'a [Mention]),
}

/// The link stage's output: the vocabulary the run used and what linking found.
#[derive(Debug)]
pub(crate) struct LinkOutput {
    /// The vocabulary (read from the run's vocabulary folder, or an index's entities).
    pub(crate) vocabulary: Vocabulary,
    /// Mentions and document concepts.
    pub(crate) linked: Linked,
    /// Counts.
    pub(crate) stats: LinkStats,
}

/// Stage 2: links the corpus with a [`prepare`]d vocabulary and linker, taking the links of
/// documents that the run `LATEST` names on `parent_root` linked with the same input
/// ([`parent_links`]; `None` links everything), or takes the mentions an index gives. Writes
/// `document_links.arrow` into `writer`'s run (empty when an index gave the mentions).
///
/// # Errors
/// Those of writing the file.
#[allow(clippy::too_many_arguments)]
pub(crate) fn link(
    config: &LinkConfig,
    input: LinkInput<'_>,
    corpus: &CorpusColumns,
    passages: &PassageTable<'_>,
    excluded_documents: &HashSet<String>,
    parent_root: Option<&Layout>,
    writer: &RunWriter,
    phases: &mut Phases,
) -> Result<LinkOutput> {
    let len = Some(passages.len() as u64);
    let phase = match &input {
        LinkInput::Prepared { since, .. } => phases.start_at("link", len, *since),
        LinkInput::Given(..) => phases.start("link", len),
    };
    let (vocabulary, linked, patterns, reuse, prepare_seconds) = match input {
        LinkInput::Given(vocabulary, mentions) => {
            warn_broken_cycles(&vocabulary);
            let fingerprint = link_fingerprint(&vocabulary, config);
            let l = given_links(mentions, passages, corpus.num_documents());
            phase.bar.inc(passages.len() as u64);
            DocumentLinksWriter::create(writer, &fingerprint)?.finish(writer)?;
            (vocabulary, l, None, LinkReuse::default(), None)
        }
        LinkInput::Prepared { prepared, .. } => {
            let Prepared {
                vocabulary,
                linker,
                fingerprint,
                seconds,
            } = *prepared;
            let parent = parent_root.and_then(|root| parent_links(root, &fingerprint));
            let (l, reuse) = link_corpus(
                corpus,
                &vocabulary,
                &linker,
                passages,
                excluded_documents,
                &fingerprint,
                parent.as_ref(),
                writer,
                &phase.bar,
            )?;
            let patterns = linker.num_patterns();
            (vocabulary, l, Some(patterns), reuse, Some(seconds))
        }
    };
    let stats = LinkStats {
        mentions: linked.mentions.len(),
        linked_documents: linked.linked_documents(),
        patterns,
        unresolved_headings: linked.unresolved_headings,
        vocabulary_cycles_broken: vocabulary.broken_cycles.clone(),
        reuse,
    };
    let message = match (patterns, prepare_seconds) {
        (Some(p), Some(compiled)) => format!(
            "{} mentions, {} of {} documents linked, {p} patterns (compiled in {compiled:.1} s while the corpus was read); {} documents' links taken from the parent run, {} linked",
            stats.mentions,
            stats.linked_documents,
            corpus.num_documents(),
            reuse.reused_documents,
            reuse.linked_documents
        ),
        _ => format!(
            "{} mentions given, {} of {} documents linked",
            stats.mentions,
            stats.linked_documents,
            corpus.num_documents()
        ),
    };
    phases.finish(phase, &message);
    Ok(LinkOutput {
        vocabulary,
        linked,
        stats,
    })
}

/// The document links of the run `LATEST` names on `layout`'s root, for a run that continues
/// it and links under `fingerprint`; `None` (and everything is linked) when there is none, when
/// it predates the file, when its links were found under another fingerprint (said, as the
/// reason why nothing is taken), or when it cannot be read (warned: a damaged parent only costs
/// the time of linking again).
pub(crate) fn parent_links(layout: &Layout, fingerprint: &[u8; 32]) -> Option<StoredDocumentLinks> {
    let id = layout.read_latest().ok().flatten()?;
    let dir = layout.run_dir(&id);
    let read =
        Manifest::read(&dir).and_then(|m| StoredDocumentLinks::read(&dir, &m.files, fingerprint));
    match read {
        Ok(ParentLinks::Links(links)) => Some(links),
        Ok(ParentLinks::Absent) => None,
        Ok(ParentLinks::OtherFingerprint) => {
            tracing::info!(
                "the published run {id} linked with another vocabulary, other linking parameters or another linker version; every document is linked again"
            );
            None
        }
        Err(e) => {
            tracing::warn!(
                "the document links of the published run {id} cannot be reused ({}); every document is linked again",
                e.with_causes()
            );
            None
        }
    }
}
