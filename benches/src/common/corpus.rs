//! A seeded generator of large document corpora from the shipped abstracts, for the scale
//! benches (`corpus-gen`, `nightly-bench`).
//!
//! # What it imitates
//! * **Real sentences.** Every sentence written is a sentence of a shipped abstract (PubMedQA),
//!   so sentence length, vocabulary, punctuation, numbers and the density of MeSH terms per
//!   passage are those of real biomedical abstracts.
//! * **Topical documents.** Each generated document takes one shipped abstract as its topic and
//!   keeps most of its sentences ([`GenConfig::keep_sentence`]) in its passage structure, with
//!   its title, year and MeSH headings; a few sentences of other abstracts are mixed in
//!   ([`GenConfig::mixed_per_passage`]), so co-occurrence is mostly topical with some noise.
//! * **A vocabulary that fills up.** Within a document, each concept the linker finds is swapped,
//!   with probability [`GenConfig::swap_concept`], for a sibling (another child of one of its
//!   parents in `broader.tsv`, which MeSH derives from the tree numbers: the parent of `X.Y.Z`
//!   is the descriptor at `X.Y`), written as the sibling's preferred term, everywhere in the
//!   document (title, passages, headings). The same document keeps one choice per concept, so
//!   a document stays about one set of related things, while over many documents the distinct
//!   concepts grow from the ~3,000 of the sources towards the siblings' part of the vocabulary.
//!
//! # What it does not imitate
//! * New text: there are only ~9,000 distinct source sentences, so at 10⁶ documents each
//!   sentence occurs about a hundred times (swaps aside). Compression ratios, a text index's
//!   dictionary and duplicate-passage rates are therefore optimistic.
//! * Vocabulary growth beyond the siblings of the sources' concepts (real corpora follow
//!   Heaps' law into new branches), and the long tail of rare terms.
//! * Grammar after a swap (a plural may become a singular term) and the case of the swapped
//!   term beyond a lower-case rule; the length distribution of documents beyond the 900 sources'.
//! * Document keys, years and headings of a real bibliographic database: keys are
//!   `syn<index>` and headings are the topic's own (swapped like the text).
//!
//! # Determinism
//! Document `i` depends only on the sources, the vocabulary, the seed and `i` (its random
//! stream is keyed by `(seed, i)`), so the same inputs, `N` and seed give a byte-identical
//! file, and a corpus of `N` documents is a prefix of one of `M > N`.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use agrag_pipeline::ingest::read_jsonl;
use agrag_pipeline::link::{LinkConfig, Linker, TermIndex, load_vocabulary};
use serde::Serialize;

use super::XorShift;

/// Version of the generation rules, part of the cache name of generated corpora: bump it when
/// a change to this module changes the output for the same inputs and seed.
pub const GENERATOR_VERSION: u32 = 1;

/// Knobs of the generator; [`GenConfig::default`] is what `corpus-gen` uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenConfig {
    /// Probability that a sentence of the topic abstract is kept (0..=1). A passage keeps at
    /// least one of its sentences.
    pub keep_sentence: f64,
    /// Mean number of sentences of other abstracts mixed into each passage (≥ 0): the count is
    /// binomial over two draws of `mixed_per_passage / 2` each, so at most 2.
    pub mixed_per_passage: f64,
    /// Probability that a concept found in a document is swapped, throughout that document, for
    /// a sibling's preferred term (0..=1).
    pub swap_concept: f64,
}

impl Default for GenConfig {
    fn default() -> Self {
        Self {
            keep_sentence: 0.8,
            mixed_per_passage: 0.7,
            swap_concept: 0.3,
        }
    }
}

/// A source sentence with the concept mentions the pipeline's linker finds in it.
#[derive(Debug, Clone)]
struct Sentence {
    text: String,
    /// Non-overlapping `(start, end, concept)` byte spans, ascending.
    links: Vec<(usize, usize, u32)>,
}

#[derive(Debug, Clone)]
struct Source {
    title: Sentence,
    year: Option<i32>,
    /// Sentences of each passage, in order.
    passages: Vec<Vec<u32>>,
    /// Headings as concept indices where the vocabulary names them, else the text.
    headings: Vec<Heading>,
}

#[derive(Debug, Clone)]
enum Heading {
    Concept(u32),
    Text(String),
}

/// One generated document, in the JSON Lines shape the pipeline reads (`document_key`,
/// `title`, `year`, `passages`, `mesh`).
#[derive(Debug, Clone, Serialize)]
pub struct GeneratedDocument {
    /// `syn<index, 9 digits>`: unique within a corpus.
    pub document_key: String,
    /// The topic's title, swaps applied.
    pub title: String,
    /// The topic's year.
    pub year: Option<i32>,
    /// Passages: kept topic sentences and mixed-in sentences, swaps applied.
    pub passages: Vec<String>,
    /// The topic's headings, swaps applied, duplicates dropped.
    pub mesh: Vec<String>,
    /// `(concept, sibling)` swaps made in this document (vocabulary indices); not written.
    #[serde(skip)]
    pub swaps: Vec<(u32, u32)>,
    /// Index of the topic abstract among the sources; not written.
    #[serde(skip)]
    pub topic: usize,
    /// Sentences of other abstracts mixed in; not written.
    #[serde(skip)]
    pub num_mixed: u32,
    /// Concepts of the mentions written in the title and passages (as the generator's linking
    /// of the source sentences found them, swaps applied), ascending; not written.
    #[serde(skip)]
    pub concepts: Vec<u32>,
}

/// What [`CorpusGenerator::write`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenStats {
    /// Documents written.
    pub num_documents: u64,
    /// Passages written.
    pub num_passages: u64,
    /// Sentences of other abstracts mixed in.
    pub num_mixed_sentences: u64,
    /// Concept swaps (per document and concept).
    pub num_swaps: u64,
    /// Distinct concepts among the mentions written (source links and swaps), an estimate of
    /// what the pipeline's linker finds.
    pub num_distinct_concepts: u64,
    /// Bytes written.
    pub num_bytes: u64,
}

/// The sources and vocabulary a corpus is generated from; see the module docs.
#[derive(Debug)]
pub struct CorpusGenerator {
    config: GenConfig,
    sources: Vec<Source>,
    sentences: Vec<Sentence>,
    /// Owner (source index) of each sentence.
    sentence_source: Vec<u32>,
    /// Preferred term of every concept.
    terms: Vec<String>,
    /// Swap candidates of each concept the sources' text mentions (sorted, without itself).
    siblings: HashMap<u32, Vec<u32>>,
    num_concepts: usize,
}

/// Splits a passage at sentence ends (". ", "? ", "! " followed by anything), as the
/// pipeline's own passage splitter does; the end mark stays with its sentence.
fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    for i in 0..bytes.len().saturating_sub(1) {
        if matches!(bytes[i], b'.' | b'?' | b'!') && bytes[i + 1] == b' ' {
            let s = text[start..=i].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    let s = text[start..].trim();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// Whether a term needs its capitals kept: a short term with a capital after its first letter
/// (`DNA`, `HbA1c`), which the linker matches case-sensitively.
fn keeps_case(term: &str) -> bool {
    term.chars().count() <= 6 && term.chars().skip(1).any(char::is_uppercase)
}

impl CorpusGenerator {
    /// Reads the sources (a JSON Lines corpus as the pipeline reads it) and the vocabulary,
    /// and finds every mention with the pipeline's own [`Linker`] (default [`LinkConfig`]).
    ///
    /// # Errors
    /// The pipeline's errors reading either input or building the linker.
    pub fn new(
        documents: &Path,
        vocabulary: &Path,
        config: GenConfig,
    ) -> agrag_pipeline::Result<Self> {
        let corpus = read_jsonl(documents)?;
        let vocab = load_vocabulary(vocabulary)?;
        let linker = Linker::new(&vocab, &LinkConfig::default())?;
        let index = TermIndex::new(&vocab);
        let analyse = |text: &str| -> Sentence {
            let mut links: Vec<(usize, usize, u32)> = Vec::new();
            for l in linker.find(text) {
                // A span that links to several concepts is swapped as its first one.
                if links.last().is_none_or(|&(_, e, _)| l.start >= e) {
                    links.push((l.start, l.end, l.concept));
                }
            }
            Sentence {
                text: text.to_owned(),
                links,
            }
        };
        let mut sentences = Vec::new();
        let mut sentence_source = Vec::new();
        let mut sources = Vec::with_capacity(corpus.documents.len());
        for (d, doc) in corpus.documents.iter().enumerate() {
            let passages = doc
                .passages
                .iter()
                .map(|p| {
                    split_sentences(p)
                        .into_iter()
                        .map(|s| {
                            sentences.push(analyse(s));
                            sentence_source.push(d as u32);
                            (sentences.len() - 1) as u32
                        })
                        .collect::<Vec<u32>>()
                })
                .filter(|p| !p.is_empty())
                .collect();
            let headings = doc
                .headings
                .iter()
                .map(|h| {
                    index
                        .get(h)
                        .map_or(Heading::Text(h.clone()), Heading::Concept)
                })
                .collect();
            sources.push(Source {
                title: analyse(&doc.title),
                year: doc.year,
                passages,
                headings,
            });
        }
        // A sibling is a swap candidate when its preferred term, written alone, links back to
        // exactly that concept (not stop-listed, not excluded, no inverted "X, Y" form).
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for &(c, p) in &vocab.broader {
            children.entry(p).or_default().push(c);
        }
        let mut linkable: HashMap<u32, bool> = HashMap::new();
        let mut is_linkable = |c: u32| -> bool {
            *linkable.entry(c).or_insert_with(|| {
                let term = &vocab.concepts[c as usize].preferred_term;
                let links = linker.find(term);
                !term.contains(',')
                    && links.len() == 1
                    && links[0].concept == c
                    && links[0].start == 0
                    && links[0].end == term.len()
            })
        };
        let mut found: Vec<u32> = sentences
            .iter()
            .chain(sources.iter().map(|s| &s.title))
            .flat_map(|s| s.links.iter().map(|l| l.2))
            .collect();
        found.sort_unstable();
        found.dedup();
        let mut siblings = HashMap::with_capacity(found.len());
        for c in found {
            let mut sib: Vec<u32> = vocab
                .parents(c)
                .flat_map(|p| children.get(&p).into_iter().flatten().copied())
                .filter(|&s| s != c)
                .collect();
            sib.sort_unstable();
            sib.dedup();
            sib.retain(|&s| is_linkable(s));
            siblings.insert(c, sib);
        }
        Ok(Self {
            config,
            sources,
            sentences,
            sentence_source,
            terms: vocab
                .concepts
                .iter()
                .map(|c| c.preferred_term.clone())
                .collect(),
            siblings,
            num_concepts: vocab.len(),
        })
    }

    /// Number of source abstracts.
    pub fn num_sources(&self) -> usize {
        self.sources.len()
    }

    /// Whether `b` is one of the swap candidates of `a` (they share a parent).
    pub fn is_sibling(&self, a: u32, b: u32) -> bool {
        self.siblings
            .get(&a)
            .is_some_and(|s| s.binary_search(&b).is_ok())
    }

    /// Document `index` of the corpus generated with `seed`.
    pub fn document(&self, index: u64, seed: u64) -> GeneratedDocument {
        // One stream per (seed, document): splitmix64 of the pair, so documents are independent.
        let mut key = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        key = (key ^ (key >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        key = (key ^ (key >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let mut rng = XorShift::new(key ^ (key >> 31));
        let mut chance = |p: f64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p;
        let num_sources = self.sources.len() as u64;
        // Topics go round the sources from a seeded offset, so every abstract is used alike.
        let topic = ((index + seed % num_sources) % num_sources) as usize;
        let source = &self.sources[topic];
        let mut plan: Vec<Vec<u32>> = Vec::with_capacity(source.passages.len());
        let mut num_mixed = 0;
        let mut rng2 = XorShift::new(key.rotate_left(17) ^ 0x5bd1_e995);
        for sentences in &source.passages {
            let mut kept: Vec<u32> = sentences
                .iter()
                .copied()
                .filter(|_| chance(self.config.keep_sentence))
                .collect();
            if kept.is_empty() {
                kept.push(sentences[0]);
            }
            for _ in 0..2 {
                if !chance(self.config.mixed_per_passage / 2.0) {
                    continue;
                }
                let mut s = rng2.below(self.sentences.len() as u64) as u32;
                if self.sentence_source[s as usize] as usize == topic {
                    s = rng2.below(self.sentences.len() as u64) as u32;
                }
                let at = rng2.below(kept.len() as u64 + 1) as usize;
                kept.insert(at, s);
                num_mixed += 1;
            }
            plan.push(kept);
        }
        // One decision per concept per document: swapped for this sibling, or kept.
        let mut decided: Vec<(u32, Option<u32>)> = Vec::new();
        let mut swaps = Vec::new();
        let mut decide = |c: u32| -> Option<u32> {
            if let Some(&(_, d)) = decided.iter().find(|(k, _)| *k == c) {
                return d;
            }
            let sib = self.siblings.get(&c).map_or(&[][..], Vec::as_slice);
            let d = (!sib.is_empty() && chance(self.config.swap_concept))
                .then(|| sib[rng2.below(sib.len() as u64) as usize]);
            if let Some(s) = d {
                swaps.push((c, s));
            }
            decided.push((c, d));
            d
        };
        let mut concepts: Vec<u32> = Vec::new();
        let mut render = |s: &Sentence, out: &mut String| {
            let mut at = 0;
            for &(start, end, c) in &s.links {
                let Some(sib) = decide(c) else {
                    concepts.push(c);
                    continue;
                };
                concepts.push(sib);
                out.push_str(&s.text[at..start]);
                let term = &self.terms[sib as usize];
                let original = &s.text[start..end];
                if !original.chars().any(char::is_uppercase) && !keeps_case(term) {
                    out.push_str(&term.to_lowercase());
                } else {
                    out.push_str(term);
                }
                at = end;
            }
            out.push_str(&s.text[at..]);
        };
        let mut title = String::new();
        render(&source.title, &mut title);
        let passages = plan
            .iter()
            .map(|p| {
                let mut text = String::new();
                for (k, &s) in p.iter().enumerate() {
                    if k > 0 {
                        text.push(' ');
                    }
                    render(&self.sentences[s as usize], &mut text);
                }
                text
            })
            .collect();
        concepts.sort_unstable();
        concepts.dedup();
        let mut mesh: Vec<String> = Vec::with_capacity(source.headings.len());
        for h in &source.headings {
            let name = match h {
                // A heading follows the text's swap of its concept; a heading the text never
                // mentions (a check tag such as *Humans*, say) stays as it is.
                Heading::Concept(c) => {
                    let c = decided
                        .iter()
                        .find(|(k, _)| k == c)
                        .and_then(|d| d.1)
                        .unwrap_or(*c);
                    self.terms[c as usize].clone()
                }
                Heading::Text(t) => t.clone(),
            };
            if !mesh.contains(&name) {
                mesh.push(name);
            }
        }
        GeneratedDocument {
            document_key: format!("syn{index:09}"),
            title,
            year: source.year,
            passages,
            mesh,
            swaps,
            topic,
            num_mixed,
            concepts,
        }
    }

    /// Writes documents `0..num_documents` of the corpus of `seed` to `out` as JSON Lines, one
    /// document at a time (memory does not grow with `num_documents`). `progress` is called
    /// after every 10,000 documents with the count so far.
    ///
    /// # Errors
    /// An I/O error of `out`.
    pub fn write(
        &self,
        num_documents: u64,
        seed: u64,
        mut out: impl Write,
        mut progress: impl FnMut(u64),
    ) -> io::Result<GenStats> {
        let mut stats = GenStats::default();
        let mut seen = vec![false; self.num_concepts];
        let mut line = Vec::with_capacity(8192);
        for i in 0..num_documents {
            let doc = self.document(i, seed);
            for &c in &doc.concepts {
                seen[c as usize] = true;
            }
            line.clear();
            serde_json::to_writer(&mut line, &doc).map_err(io::Error::other)?;
            line.push(b'\n');
            out.write_all(&line)?;
            stats.num_documents += 1;
            stats.num_passages += doc.passages.len() as u64;
            stats.num_swaps += doc.swaps.len() as u64;
            stats.num_mixed_sentences += u64::from(doc.num_mixed);
            stats.num_bytes += line.len() as u64;
            if (i + 1) % 10_000 == 0 {
                progress(i + 1);
            }
        }
        out.flush()?;
        stats.num_distinct_concepts = seen.iter().filter(|s| **s).count() as u64;
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::common::workspace;

    fn generator() -> &'static CorpusGenerator {
        static GENERATOR: OnceLock<CorpusGenerator> = OnceLock::new();
        GENERATOR.get_or_init(|| {
            CorpusGenerator::new(
                &workspace().join("data/pubmedqa/documents.jsonl"),
                &workspace().join("data/mesh"),
                GenConfig::default(),
            )
            .unwrap()
        })
    }

    fn bytes(n: u64, seed: u64) -> (Vec<u8>, GenStats) {
        let mut out = Vec::new();
        let stats = generator().write(n, seed, &mut out, |_| {}).unwrap();
        (out, stats)
    }

    #[test]
    fn same_n_and_seed_give_the_same_bytes_and_a_prefix_of_larger_n() {
        let (a, sa) = bytes(300, 7);
        let (b, _) = bytes(300, 7);
        assert_eq!(a, b);
        assert_eq!(sa.num_bytes, a.len() as u64);
        let (c, _) = bytes(200, 7);
        assert!(a.starts_with(&c));
        let (d, _) = bytes(300, 8);
        assert_ne!(a, d);
    }

    #[test]
    fn output_is_a_corpus_the_pipeline_reads_with_unique_keys() {
        let (out, stats) = bytes(500, 3);
        let corpus =
            agrag_pipeline::ingest::parse_jsonl(out.as_slice(), Path::new("gen.jsonl")).unwrap();
        assert_eq!(corpus.documents.len(), 500);
        assert_eq!(corpus.num_passages() as u64, stats.num_passages);
        let mut keys: Vec<&str> = corpus.documents.iter().map(|d| d.key.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 500);
        assert!(stats.num_mixed_sentences > 0 && stats.num_swaps > 0);
    }

    #[test]
    fn swaps_are_siblings_written_as_their_preferred_terms() {
        let g = generator();
        let mut num_swaps = 0;
        for i in 0..200 {
            let doc = g.document(i, 11);
            let text = format!("{} {}", doc.title, doc.passages.join(" ")).to_lowercase();
            for &(c, s) in &doc.swaps {
                assert!(g.is_sibling(c, s), "{c} -> {s} share no parent");
                // Every swap is made in the text, as the sibling's preferred term.
                let term = g.terms[s as usize].to_lowercase();
                assert!(text.contains(&term), "{term} missing from document {i}");
                num_swaps += 1;
            }
        }
        assert!(num_swaps > 100, "only {num_swaps} swaps in 200 documents");
    }

    #[test]
    fn distinct_concepts_grow_with_the_corpus() {
        let (_, one_round) = bytes(900, 5);
        let (_, two_rounds) = bytes(1800, 5);
        assert!(
            two_rounds.num_distinct_concepts > one_round.num_distinct_concepts * 21 / 20,
            "{} -> {}",
            one_round.num_distinct_concepts,
            two_rounds.num_distinct_concepts
        );
    }

    #[test]
    fn sentences_split_at_sentence_ends() {
        assert_eq!(
            split_sentences("A b. C 3.5 mg? E f! G. "),
            ["A b.", "C 3.5 mg?", "E f!", "G."]
        );
    }
}
