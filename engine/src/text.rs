//! Full-text (BM25) index of a run's documents, built with tantivy when the run is written and
//! opened read-only by the engine. Used by the keyword clause and the `query` ranking of concept
//! queries.
//!
//! Each document is indexed once: its title and all its passages, English-stemmed, stop words
//! removed; a fast field `doc_ord` holds the document's row in `documents.parquet`.

use std::path::Path;

use std::sync::Arc;

use roaring::RoaringBitmap;
use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::query::QueryParser;
use tantivy::schema::{FAST, Field, INDEXED, STORED, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument};

use crate::error::{EngineError, Result};

/// Folder of the text index inside a run.
pub const TEXT_INDEX_DIR: &str = "text_index";
const TOKENIZER: &str = "agrag_en";

struct Fields {
    doc_ord: Field,
    title: Field,
    body: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(tantivy::schema::IndexRecordOption::WithFreqsAndPositions),
    );
    let doc_ord = b.add_u64_field("doc_ord", INDEXED | FAST | STORED);
    let title = b.add_text_field("title", text.clone());
    let body = b.add_text_field("body", text);
    (
        b.build(),
        Fields {
            doc_ord,
            title,
            body,
        },
    )
}

fn register_tokenizer(index: &Index) -> Result<()> {
    let stop = StopWordFilter::new(Language::English)
        .ok_or_else(|| EngineError::Internal("tantivy has no English stop words".into()))?;
    let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(stop)
        .filter(Stemmer::new(Language::English))
        .build();
    index.tokenizers().register(TOKENIZER, analyzer);
    Ok(())
}

fn terr(path: &Path) -> impl Fn(tantivy::TantivyError) -> EngineError + '_ {
    move |e| EngineError::Parquet {
        path: path.to_owned(),
        reason: format!("text index: {e}"),
    }
}

/// Builds the index in `dir` (created) over `(title, passages)` per document, in document order.
/// Single-threaded, one segment, so the same input gives the same index.
///
/// # Errors
/// [`EngineError::Io`] / [`EngineError::Parquet`] when tantivy fails.
pub fn build_text_index<'a>(
    dir: &Path,
    documents: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    let (schema, f) = schema();
    let err = terr(dir);
    let index = Index::create_in_dir(dir, schema).map_err(&err)?;
    register_tokenizer(&index)?;
    let mut writer: tantivy::IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, 50_000_000).map_err(&err)?;
    for (i, (title, passages)) in documents.into_iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.doc_ord, i as u64);
        doc.add_text(f.title, title);
        for p in passages {
            doc.add_text(f.body, p);
        }
        writer.add_document(doc).map_err(&err)?;
    }
    writer.commit().map_err(&err)?;
    writer.wait_merging_threads().map_err(&err)?;
    Ok(())
}

/// An opened, read-only text index.
pub struct TextIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl std::fmt::Debug for TextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndex").finish_non_exhaustive()
    }
}

impl TextIndex {
    /// Opens the index in `dir` without writing to it.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] when it cannot be opened.
    pub fn open(dir: &Path) -> Result<Self> {
        let corrupt =
            |e: tantivy::TantivyError| EngineError::corrupt(dir, format!("text index: {e}"));
        let index = Index::open_in_dir(dir).map_err(corrupt)?;
        register_tokenizer(&index)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(corrupt)?;
        let (_, fields) = schema();
        Ok(Self {
            index,
            reader,
            fields,
        })
    }

    /// BM25 scores of every document that matches `query` (any of its terms, in title or
    /// passages), as `(document row, score)`, best first, ties by document row.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming `query` when it does not parse.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(u32, f32)>> {
        let searcher = self.reader.searcher();
        let parser = QueryParser::for_index(&self.index, vec![self.fields.title, self.fields.body]);
        let (q, _errors) = parser.parse_query_lenient(query);
        let limit = limit.max(1);
        let top = searcher
            .search(&q, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| EngineError::Internal(format!("text search: {e}")))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let reader = searcher.segment_reader(addr.segment_ord);
            let col = reader
                .fast_fields()
                .u64("doc_ord")
                .map_err(|e| EngineError::Internal(format!("text index doc_ord: {e}")))?;
            if let Some(ord) = col.first(addr.doc_id) {
                out.push((ord as u32, score));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// BM25 scores of the documents in `within` that match `query`, as `(document row,
    /// score)`, best first, ties by document row. One pass over the query's hits, keeping only
    /// those in `within`: the cost follows the hits, not the size of the index.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when the search fails.
    pub fn search_within(&self, query: &str, within: &RoaringBitmap) -> Result<Vec<(u32, f32)>> {
        let searcher = self.reader.searcher();
        let parser = QueryParser::for_index(&self.index, vec![self.fields.title, self.fields.body]);
        let (q, _errors) = parser.parse_query_lenient(query);
        let mut out = searcher
            .search(
                &q,
                &WithinCollector {
                    within: RowSet::new(within),
                },
            )
            .map_err(|e| EngineError::Internal(format!("text search: {e}")))?;
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// Number of indexed documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

/// From this many rows a search's filter is copied into a plain bitset.
const DENSE_FROM: u64 = 4096;

/// The rows a search keeps: the roaring bitmap itself for small sets, a plain bitset (one bit
/// per row up to the largest) for large ones, where a test is one load instead of a search in a
/// container. (A query such as "statin mortality" over 1M documents hits ~250k of them; with the
/// roaring test, 39 % of the search went to `contains`.)
#[derive(Clone)]
enum RowSet {
    Sparse(Arc<RoaringBitmap>),
    Dense(Arc<Vec<u64>>),
}

impl RowSet {
    fn new(rows: &RoaringBitmap) -> Self {
        if rows.len() < DENSE_FROM {
            return Self::Sparse(Arc::new(rows.clone()));
        }
        let max = rows.max().unwrap_or(0) as usize;
        let mut bits = vec![0u64; max / 64 + 1];
        for r in rows.iter() {
            bits[r as usize / 64] |= 1 << (r % 64);
        }
        Self::Dense(Arc::new(bits))
    }

    #[inline]
    fn contains(&self, row: u32) -> bool {
        match self {
            Self::Sparse(b) => b.contains(row),
            Self::Dense(bits) => bits
                .get(row as usize / 64)
                .is_some_and(|w| (w >> (row % 64)) & 1 == 1),
        }
    }
}

/// Collects `(document row, score)` of hits whose row is in `within`.
struct WithinCollector {
    within: RowSet,
}

struct WithinSegment {
    within: RowSet,
    doc_ord: Column<u64>,
    hits: Vec<(u32, f32)>,
}

impl Collector for WithinCollector {
    type Fruit = Vec<(u32, f32)>;
    type Child = WithinSegment;

    fn for_segment(
        &self,
        _segment_local_id: tantivy::SegmentOrdinal,
        segment: &tantivy::SegmentReader,
    ) -> tantivy::Result<WithinSegment> {
        Ok(WithinSegment {
            within: self.within.clone(),
            doc_ord: segment.fast_fields().u64("doc_ord")?,
            hits: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<(u32, f32)>>) -> tantivy::Result<Vec<(u32, f32)>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for WithinSegment {
    type Fruit = Vec<(u32, f32)>;

    fn collect(&mut self, doc: tantivy::DocId, score: tantivy::Score) {
        if let Some(ord) = self.doc_ord.first(doc)
            && let Ok(ord) = u32::try_from(ord)
            && self.within.contains(ord)
        {
            self.hits.push((ord, score));
        }
    }

    fn harvest(self) -> Vec<(u32, f32)> {
        self.hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain bitset of a large filter answers exactly as the roaring bitmap it copies.
    #[test]
    fn dense_and_sparse_row_sets_agree() {
        let rows: RoaringBitmap = (0..200_000u32)
            .filter(|r| r % 7 == 3 || r % 1000 == 0)
            .collect();
        assert!(rows.len() >= DENSE_FROM);
        let dense = RowSet::new(&rows);
        assert!(matches!(dense, RowSet::Dense(_)));
        for r in (0..250_000u32).chain([u32::MAX - 1, u32::MAX]) {
            assert_eq!(dense.contains(r), rows.contains(r), "row {r}");
        }
        let small = RoaringBitmap::from_iter([5u32, 9, 4_000_000]);
        let sparse = RowSet::new(&small);
        assert!(matches!(sparse, RowSet::Sparse(_)));
        assert!(sparse.contains(4_000_000) && !sparse.contains(6));
    }
}
