//! Between ingest and link: the run's passage rows and the visibility flags that apply to them.
//!
//! Deleted and superseded passages stay out of the run. Hidden ones stay in the run's passages,
//! text index and concept evidence (unhiding them works at once, without a new run) but feed
//! neither the graph nor the reports: a report that quoted a hidden passage, or a theme built
//! around a concept only a hidden passage mentions, would let the hidden words find a theme.

use std::collections::HashSet;

use agrag_engine::format::{Layout, passage_id};
use agrag_engine::visibility::{Target, Visibility, VisibilityStore};

use crate::error::Result;
use crate::ingest::CorpusColumns;
use crate::report::PassageRef;

/// The flags of `visibility.sqlite` that a run acts on, by passage id and document key.
#[derive(Debug, Default)]
pub(crate) struct RunFlags {
    /// Passages deleted or superseded.
    pub(crate) excluded_passages: HashSet<String>,
    /// Documents deleted or superseded.
    pub(crate) excluded_documents: HashSet<String>,
    /// Passages hidden.
    pub(crate) hidden_passages: HashSet<String>,
    /// Documents hidden.
    pub(crate) hidden_documents: HashSet<String>,
}

impl RunFlags {
    /// The flags of the root's visibility store; none when it has no store yet.
    ///
    /// # Errors
    /// [`crate::PipelineError::Engine`] when the store cannot be opened or read.
    pub(crate) fn read(layout: &Layout) -> Result<Self> {
        let mut flags = Self::default();
        let path = layout.visibility_path();
        if !path.exists() {
            return Ok(flags);
        }
        for flag in VisibilityStore::open(&path)?.list()? {
            let (passages, documents) = if flag.state.is_excluded_from_runs() {
                (&mut flags.excluded_passages, &mut flags.excluded_documents)
            } else if flag.state == Visibility::Hidden {
                (&mut flags.hidden_passages, &mut flags.hidden_documents)
            } else {
                continue;
            };
            match flag.target {
                Target::Passage => passages.insert(flag.key),
                Target::Document => documents.insert(flag.key),
            };
        }
        Ok(flags)
    }

    /// Feeds the flags into a run's input fingerprint: for each kind (`excluded`, then
    /// `hidden`), its keys sorted, each followed by a newline.
    pub(crate) fn fingerprint(&self, fp: &mut blake3::Hasher) {
        for (kind, passages, documents) in [
            (
                "excluded",
                &self.excluded_passages,
                &self.excluded_documents,
            ),
            ("hidden", &self.hidden_passages, &self.hidden_documents),
        ] {
            let mut keys: Vec<&String> = passages.iter().chain(documents.iter()).collect();
            keys.sort();
            fp.update(kind.as_bytes());
            for e in keys {
                fp.update(e.as_bytes());
                fp.update(b"\n");
            }
        }
    }
}

/// The run's passages in row order (documents by key, then position) with their flags.
#[derive(Debug)]
pub(crate) struct PassageTable<'a> {
    corpus: &'a CorpusColumns,
    /// Document of each passage row.
    document: Vec<u32>,
    /// Deleted or superseded (itself or its document): out of the run's graph and vectors.
    pub(crate) excluded: Vec<bool>,
    /// Hidden (itself or its document): out of the graph and the reports.
    pub(crate) hidden: Vec<bool>,
}

impl<'a> PassageTable<'a> {
    /// The passage rows of `corpus` (documents sorted by key) under `flags`.
    pub(crate) fn new(corpus: &'a CorpusColumns, flags: &RunFlags) -> Self {
        let n = corpus.num_passages();
        let mut table = Self {
            corpus,
            document: Vec::with_capacity(n),
            excluded: Vec::with_capacity(n),
            hidden: Vec::with_capacity(n),
        };
        for d in 0..corpus.num_documents() {
            let key = corpus.key(d);
            let doc_out = flags.excluded_documents.contains(key);
            let doc_hidden = flags.hidden_documents.contains(key);
            for (i, _) in corpus.passage_rows(d).enumerate() {
                table.document.push(d as u32);
                // Passage ids are built only when some passage is flagged.
                let flagged = |set: &HashSet<String>| {
                    !set.is_empty() && set.contains(&passage_id(key, i as u32))
                };
                table
                    .excluded
                    .push(doc_out || flagged(&flags.excluded_passages));
                table
                    .hidden
                    .push(doc_hidden || flagged(&flags.hidden_passages));
            }
        }
        table
    }

    /// Number of passage rows.
    pub(crate) fn len(&self) -> usize {
        self.document.len()
    }

    /// Passages left out of the run's graph and vectors (deleted or superseded).
    pub(crate) fn num_excluded(&self) -> usize {
        self.excluded.iter().filter(|x| **x).count()
    }

    /// The corpus the rows are of.
    pub(crate) fn corpus(&self) -> &'a CorpusColumns {
        self.corpus
    }

    /// Document of passage row `row`.
    pub(crate) fn document(&self, row: u32) -> u32 {
        self.document[row as usize]
    }

    /// Text of passage row `row` (reads its pages when the corpus is mapped).
    pub(crate) fn text(&self, row: usize) -> &'a str {
        self.corpus.passage(row)
    }

    /// Passage row `row` as a report sees it; its text is read only if the report asks.
    pub(crate) fn reference(&self, row: u32) -> PassageRef<'a> {
        let d = self.document[row as usize];
        let first = self.corpus.first_passages()[d as usize];
        PassageRef::in_corpus(
            self.corpus,
            row,
            row - first,
            self.corpus.title(d as usize),
            d,
        )
    }
}
