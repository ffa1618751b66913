//! The corpus as a run holds it: documents sorted by key, each field one column, and the
//! passages (most of a corpus's bytes) in a [`TextColumn`] that a run writes into a scratch
//! file of its staging folder as ingest reads them, and maps.
//!
//! A corpus of owned documents ([`super::Corpus`]) costs a `String` (24 bytes, plus the
//! allocator's rounding and header) per key, title, passage and heading, and all of the text
//! on the heap from ingest to publish: 3.1 GB at 10⁶ documents, for a 1.9 GB input. Here the
//! keys, titles and headings are each one heap arena with a 12-byte index entry per text, and
//! the passages are mapped: the stages that read every passage (link, embed, publish) release
//! what they read between batches ([`CorpusColumns::release_passages`]), so the process holds
//! a batch of passage text at a time, whatever the corpus's size.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use agrag_engine::format::staged::{TextColumn, TextColumnBuilder};

use super::{Corpus, Document, DocumentSink, Source};
use crate::error::{PipelineError, Result};

/// The run's corpus in columns: documents sorted by key, passage rows in document order
/// (documents by key, then position), as `passages.parquet` numbers them.
#[derive(Debug, Clone)]
pub struct CorpusColumns {
    keys: TextColumn,
    titles: TextColumn,
    years: Vec<Option<i32>>,
    /// First passage row of each document, and the number of passages at the end.
    first_passage: Vec<u32>,
    passages: TextColumn,
    /// First heading of each document, and the number of headings at the end.
    first_heading: Vec<u32>,
    headings: TextColumn,
    /// The file (or folder) the documents came from.
    pub source: PathBuf,
    /// BLAKE3 digest (hex) of the source's bytes (decompressed, without a byte-order mark).
    pub fingerprint: String,
    /// Passages that were empty or only white space, dropped at ingest.
    pub num_empty_passages_dropped: usize,
}

impl CorpusColumns {
    /// The columns of an owned corpus, held on the heap, its documents sorted by key.
    ///
    /// # Errors
    /// [`PipelineError::Engine`] for a text of 4 GiB or more;
    /// [`PipelineError::InvalidConfig`] for more than 2³² − 1 passages or headings.
    pub fn from_corpus(corpus: Corpus) -> Result<Self> {
        let mut b = CorpusColumnsBuilder::new(TextColumnBuilder::heap());
        for d in corpus.documents {
            b.push(d)?;
        }
        b.finish(Source {
            path: corpus.source,
            fingerprint: corpus.fingerprint,
            num_empty_passages_dropped: corpus.num_empty_passages_dropped,
        })
    }

    /// Number of documents.
    pub fn num_documents(&self) -> usize {
        self.years.len()
    }

    /// Number of passages (rows).
    pub fn num_passages(&self) -> usize {
        self.passages.len()
    }

    /// Key of document `d`.
    ///
    /// # Panics
    /// When `d` is out of range (as do the other accessors of a document).
    pub fn key(&self, d: usize) -> &str {
        self.keys.get(d)
    }

    /// Title of document `d` (empty when it has none).
    pub fn title(&self, d: usize) -> &str {
        self.titles.get(d)
    }

    /// Publication year of document `d`.
    pub fn year(&self, d: usize) -> Option<i32> {
        self.years[d]
    }

    /// Passage rows of document `d`: position `i` is row `start + i`.
    pub fn passage_rows(&self, d: usize) -> Range<usize> {
        self.first_passage[d] as usize..self.first_passage[d + 1] as usize
    }

    /// First passage row of each document, and the number of passages at the end
    /// (`documents + 1` entries, ascending).
    pub fn first_passages(&self) -> &[u32] {
        &self.first_passage
    }

    /// Text of passage row `row`. On a mapped column this reads the pages holding it; see
    /// [`CorpusColumns::release_passages`].
    ///
    /// # Panics
    /// When `row` is out of range.
    pub fn passage(&self, row: usize) -> &str {
        self.passages.get(row)
    }

    /// Subject headings of document `d` (its `mesh` field), as given.
    pub fn headings(&self, d: usize) -> impl Iterator<Item = &str> {
        (self.first_heading[d] as usize..self.first_heading[d + 1] as usize)
            .map(|h| self.headings.get(h))
    }

    /// Whether the passages are a mapped scratch file (a run's), not heap strings.
    pub fn passages_mapped(&self) -> bool {
        self.passages.is_mapped()
    }

    /// Drops the passage text read so far from the process's resident set (a mapped column's
    /// pages; nothing on the heap). A stage reading every passage calls it between batches.
    pub fn release_passages(&self) {
        self.passages.release();
    }
}

/// Passage text a [`ReleasingReader`] reads between two releases of the corpus's mapped pages.
const RELEASE_BYTES: u64 = 64 << 20;

/// Reads the passages of a corpus for a reader that goes through every passage without chunks
/// of its own (the writers at publish, the full-text index): every [`RELEASE_BYTES`] of text
/// handed out, the pages read leave the resident set ([`CorpusColumns::release_passages`];
/// pages a reader still needs fault in again, nothing is lost). Shared between threads.
#[derive(Debug)]
pub(crate) struct ReleasingReader<'a> {
    corpus: &'a CorpusColumns,
    handed_out: AtomicU64,
}

impl<'a> ReleasingReader<'a> {
    /// A reader of `corpus`'s passages, nothing handed out yet.
    pub(crate) fn new(corpus: &'a CorpusColumns) -> Self {
        Self {
            corpus,
            handed_out: AtomicU64::new(0),
        }
    }

    /// The text of passage row `row` (see [`CorpusColumns::passage`]).
    pub(crate) fn passage(&self, row: usize) -> &'a str {
        let text = self.corpus.passage(row);
        let len = text.len() as u64;
        let before = self.handed_out.fetch_add(len, Ordering::Relaxed);
        if before / RELEASE_BYTES != (before + len) / RELEASE_BYTES {
            self.corpus.release_passages();
        }
        text
    }
}

/// Builds [`CorpusColumns`] from documents in input order ([`DocumentSink`]); `finish` sorts
/// them by key, moving only the index of each column (a passage's bytes stay where ingest
/// wrote them).
#[derive(Debug)]
pub(crate) struct CorpusColumnsBuilder {
    keys: TextColumnBuilder,
    titles: TextColumnBuilder,
    years: Vec<Option<i32>>,
    num_passages: Vec<u32>,
    passages: TextColumnBuilder,
    num_headings: Vec<u32>,
    headings: TextColumnBuilder,
}

impl CorpusColumnsBuilder {
    /// An empty corpus whose passages go to `passages` (a run's scratch file, or the heap).
    pub(crate) fn new(passages: TextColumnBuilder) -> Self {
        Self {
            keys: TextColumnBuilder::heap(),
            titles: TextColumnBuilder::heap(),
            years: Vec::new(),
            num_passages: Vec::new(),
            passages,
            num_headings: Vec::new(),
            headings: TextColumnBuilder::heap(),
        }
    }

    /// The columns, documents sorted by key, read from `source`.
    ///
    /// # Errors
    /// [`PipelineError::Engine`] when the passages' scratch file cannot be mapped;
    /// [`PipelineError::InvalidConfig`] for more than 2³² − 1 passages or headings (passage
    /// rows are 32-bit).
    pub(crate) fn finish(self, source: Source) -> Result<CorpusColumns> {
        let mut keys = self.keys.finish()?;
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| keys.get(a).cmp(keys.get(b)));
        let (first_passage, passage_order) = regroup(&self.num_passages, &order, "passages")?;
        let (first_heading, heading_order) = regroup(&self.num_headings, &order, "headings")?;
        let mut titles = self.titles.finish()?;
        let mut passages = self.passages.finish()?;
        let mut headings = self.headings.finish()?;
        keys.reorder(order.iter().copied());
        titles.reorder(order.iter().copied());
        passages.reorder(passage_order);
        headings.reorder(heading_order);
        Ok(CorpusColumns {
            keys,
            titles,
            years: order.iter().map(|&d| self.years[d]).collect(),
            first_passage,
            passages,
            first_heading,
            headings,
            source: source.path,
            fingerprint: source.fingerprint,
            num_empty_passages_dropped: source.num_empty_passages_dropped,
        })
    }
}

impl DocumentSink for CorpusColumnsBuilder {
    fn push(&mut self, document: Document) -> Result<()> {
        let Document {
            key,
            title,
            year,
            passages,
            headings,
        } = document;
        self.keys.push(&key)?;
        self.titles.push(&title)?;
        self.years.push(year);
        for p in &passages {
            self.passages.push(p)?;
        }
        for h in &headings {
            self.headings.push(h)?;
        }
        let count =
            |n: usize, what: &'static str| u32::try_from(n).map_err(|_| too_many(what, n as u64));
        self.num_passages.push(count(passages.len(), "passages")?);
        self.num_headings.push(count(headings.len(), "headings")?);
        Ok(())
    }
}

fn too_many(what: &'static str, n: u64) -> PipelineError {
    PipelineError::InvalidConfig {
        field: what,
        value: n.to_string(),
        expected: "at most 2^32 - 1 passages and headings in a corpus (passage rows are 32-bit)",
    }
}

/// For entries grouped by document (`counts[d]` entries of document `d`, in input order),
/// the first entry of each document in `order` (with the total at the end) and the input
/// index of each entry in that order.
fn regroup(counts: &[u32], order: &[usize], what: &'static str) -> Result<(Vec<u32>, Vec<usize>)> {
    let mut input_first = Vec::with_capacity(counts.len() + 1);
    let mut next = 0u64;
    for &c in counts {
        input_first.push(next);
        next += u64::from(c);
    }
    input_first.push(next);
    if next >= u64::from(u32::MAX) {
        return Err(too_many(what, next));
    }
    let mut first = Vec::with_capacity(counts.len() + 1);
    let mut entries = Vec::with_capacity(next as usize);
    for &d in order {
        first.push(entries.len() as u32);
        entries.extend(input_first[d] as usize..input_first[d + 1] as usize);
    }
    first.push(entries.len() as u32);
    Ok((first, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(key: &str, passages: &[&str], headings: &[&str]) -> Document {
        Document {
            key: key.into(),
            title: format!("title of {key}"),
            year: Some(2000 + key.len() as i32),
            passages: passages.iter().map(|p| (*p).into()).collect(),
            headings: headings.iter().map(|h| (*h).into()).collect(),
        }
    }

    #[test]
    fn columns_sort_documents_by_key_and_keep_each_documents_passages() {
        let docs = vec![
            doc("c", &["c0", "c1"], &["H1"]),
            doc("a", &["a0"], &[]),
            doc("bb", &[], &["H2", "H3"]),
            doc("b", &["b0", "b1", "b2"], &["H4"]),
        ];
        let corpus = Corpus {
            documents: docs,
            source: "in.jsonl".into(),
            fingerprint: "f".into(),
            num_empty_passages_dropped: 2,
        };
        let c = CorpusColumns::from_corpus(corpus).unwrap();
        assert_eq!(c.num_documents(), 4);
        assert_eq!(c.num_passages(), 6);
        let keys: Vec<&str> = (0..4).map(|d| c.key(d)).collect();
        assert_eq!(keys, ["a", "b", "bb", "c"]);
        assert_eq!(c.title(3), "title of c");
        assert_eq!(c.year(2), Some(2002));
        let rows: Vec<Range<usize>> = (0..4).map(|d| c.passage_rows(d)).collect();
        assert_eq!(rows, [0..1, 1..4, 4..4, 4..6]);
        assert_eq!(c.first_passages(), &[0, 1, 4, 4, 6]);
        let texts: Vec<&str> = (0..6).map(|p| c.passage(p)).collect();
        assert_eq!(texts, ["a0", "b0", "b1", "b2", "c0", "c1"]);
        let headings: Vec<Vec<&str>> = (0..4).map(|d| c.headings(d).collect()).collect();
        assert_eq!(headings, [vec![], vec!["H4"], vec!["H2", "H3"], vec!["H1"]]);
        assert_eq!(c.num_empty_passages_dropped, 2);
        assert!(!c.passages_mapped());
    }
}
