//! Full-text (BM25) index of a run's documents, built with tantivy when the run is written and
//! opened read-only by the engine. Used by the keyword clause and the `query` ranking of concept
//! queries.
//!
//! Each document is indexed once: its title and all its passages, English-stemmed, stop words
//! removed; a fast field `doc_ord` holds the document's row in `documents.parquet`.

use std::path::Path;

use std::sync::Arc;

use roaring::RoaringBitmap;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};
use tantivy::query::QueryParser;
use tantivy::schema::{FAST, Field, INDEXED, STORED, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument};

use crate::error::{EngineError, Result};

/// Folder of the text index inside a run.
pub const TEXT_INDEX_DIR: &str = "text_index";
/// The analyzer new indexes are written with: accents folded (see [`register_tokenizer`]).
const TOKENIZER: &str = "agrag_en_folded";
/// The analyzer of indexes written before accents were folded; kept so that they still read
/// as written (tantivy names a field's analyzer in the index's schema).
const TOKENIZER_UNFOLDED: &str = "agrag_en";

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

/// Registers both analyzers: words split on non-alphanumerics, longer than 40 bytes dropped,
/// lower-cased, (for [`TOKENIZER`]) accents folded to ASCII as the matching key of
/// [`normalize`](crate::format::normalize) folds them (`Sjögren` and `Sjogren` are one word),
/// English stop words removed, Porter-stemmed.
fn register_tokenizer(index: &Index) -> Result<()> {
    let stop = || {
        StopWordFilter::new(Language::English)
            .ok_or_else(|| EngineError::Internal("tantivy has no English stop words".into()))
    };
    let folded = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(stop()?)
        .filter(Stemmer::new(Language::English))
        .build();
    let unfolded = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(stop()?)
        .filter(Stemmer::new(Language::English))
        .build();
    index.tokenizers().register(TOKENIZER, folded);
    index.tokenizers().register(TOKENIZER_UNFOLDED, unfolded);
    Ok(())
}

fn terr(path: &Path) -> impl Fn(tantivy::TantivyError) -> EngineError + '_ {
    move |e| EngineError::parquet(path, "text index build", e)
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
    readable_like_meta(dir)
}

/// tantivy writes `.managed.json` atomically through a temporary file, which is created
/// owner-only (0600), while every other file of a run gets the process's usual mode; an engine
/// serving the run as another user could then not open it. Every file of the index takes the
/// mode of `meta.json`, written like the run's other files.
#[cfg(unix)]
fn readable_like_meta(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = dir.join("meta.json");
    let mode = std::fs::metadata(&meta)
        .map_err(|e| EngineError::io(&meta, e))?
        .permissions()
        .mode();
    for entry in std::fs::read_dir(dir).map_err(|e| EngineError::io(dir, e))? {
        let path = entry.map_err(|e| EngineError::io(dir, e))?.path();
        let perms = std::fs::metadata(&path)
            .map_err(|e| EngineError::io(&path, e))?
            .permissions();
        if path.is_file() && perms.mode() & 0o777 != mode & 0o777 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| EngineError::io(&path, e))?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn readable_like_meta(_dir: &Path) -> Result<()> {
    Ok(())
}

/// A run's text index as a tantivy directory that never writes.
///
/// tantivy's reader takes the meta lock (creating `.tantivy-meta.lock` in the index folder)
/// while it opens segments, so that a writer's garbage collection cannot delete them under it.
/// A run is write-once and no writer ever opens it again, so there is nothing to guard
/// against: the lock is granted without touching the disk, and every write is refused. That
/// is what lets a read-only mount be served.
#[derive(Debug, Clone)]
struct ReadOnlyDirectory(MmapDirectory);

/// The error every write to a [`ReadOnlyDirectory`] gets.
fn read_only_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ReadOnlyFilesystem,
        "a run's text index is opened read-only",
    )
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> std::result::Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> std::result::Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only_error()),
            filepath: path.to_owned(),
        })
    }

    fn exists(&self, path: &Path) -> std::result::Result<bool, OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(&self, path: &Path) -> std::result::Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::wrap_io_error(
            read_only_error(),
            path.to_owned(),
        ))
    }

    fn atomic_read(&self, path: &Path) -> std::result::Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> std::io::Result<()> {
        Err(read_only_error())
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> std::result::Result<DirectoryLock, LockError> {
        // Nothing can change or delete a run's files while it is read (see the type's docs).
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, _callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        // The index never changes, so there is nothing to watch.
        Ok(WatchHandle::empty())
    }
}

/// The I/O error inside a tantivy error, with the file it happened on (relative to the index
/// folder, or absolute), when there is one.
fn io_error_of(e: &tantivy::TantivyError) -> Option<(&Arc<std::io::Error>, Option<&Path>)> {
    use tantivy::TantivyError as T;
    use tantivy::directory::error::OpenDirectoryError;
    match e {
        T::IoError(io) | T::LockFailure(LockError::IoError(io), _) => Some((io, None)),
        T::OpenReadError(OpenReadError::IoError { io_error, filepath })
        | T::OpenWriteError(OpenWriteError::IoError { io_error, filepath }) => {
            Some((io_error, Some(filepath.as_path())))
        }
        T::OpenDirectoryError(OpenDirectoryError::IoError {
            io_error,
            directory_path,
        }) => Some((io_error, Some(directory_path.as_path()))),
        _ => None,
    }
}

/// The engine error for a failure to open the text index in `dir`: the operating system's
/// refusals (permission denied, read-only file system) are [`EngineError::Io`] naming the file,
/// with the `io::Error` as source; anything else means the index is not what the run promises
/// ([`EngineError::Corrupt`]).
fn text_index_open_error(dir: &Path, e: tantivy::TantivyError) -> EngineError {
    use std::io::ErrorKind;
    if let Some((io, file)) = io_error_of(&e)
        && matches!(
            io.kind(),
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
        )
    {
        let path = file.map_or_else(|| dir.to_owned(), |f| dir.join(f));
        // tantivy shares its io::Error through an Arc, as we do: the same error is the source.
        return EngineError::Io {
            path,
            source: Arc::clone(io),
        };
    }
    EngineError::corrupt_because(dir, "text index", e)
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
    /// Opens the index in `dir` for reading only: nothing is written, no lock file is taken, so
    /// a run on a read-only mount (or owned by another user) is served as any other.
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the file when the operating system refuses to read it
    /// (permission denied, for instance), with the `io::Error` as its source; a permission
    /// problem is never reported as corruption. [`EngineError::Corrupt`] when the index cannot
    /// be read for any other reason.
    pub fn open(dir: &Path) -> Result<Self> {
        let open_error = |e: tantivy::TantivyError| text_index_open_error(dir, e);
        let directory = MmapDirectory::open(dir)
            .map_err(|e| open_error(tantivy::TantivyError::OpenDirectoryError(e)))?;
        let index = Index::open(ReadOnlyDirectory(directory)).map_err(open_error)?;
        register_tokenizer(&index)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(open_error)?;
        let (_, fields) = schema();
        Ok(Self {
            index,
            reader,
            fields,
        })
    }

    /// BM25 scores of the documents in `within` that match `query`, as `(document row,
    /// score)`, best first, ties by document row. One pass over the query's hits, keeping only
    /// those in `within`: the cost follows the hits, not the size of the index.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when the search fails.
    // Test-only: queries use `search_within_readable`.
    #[cfg(test)]
    pub fn search_within(&self, query: &str, within: &RoaringBitmap) -> Result<Vec<(u32, f32)>> {
        self.search_within_readable(query, within, None)
    }

    /// BM25 scores of the documents in `within` that match `query`, as `(document row,
    /// score)`, best first, ties by document row (one pass over the query's hits, keeping only
    /// those in `within`), with the documents of `overlay` scored from
    /// the overlay's text (their title and visible passages) instead of the text indexed at
    /// publish time. Their scores use this index's corpus statistics (document count, document
    /// frequencies, average field lengths), so a document scores exactly as it would have if
    /// the run had indexed only its readable text; a document the hidden words alone matched
    /// is not returned.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when the search fails.
    pub fn search_within_readable(
        &self,
        query: &str,
        within: &RoaringBitmap,
        overlay: Option<&TextOverlay>,
    ) -> Result<Vec<(u32, f32)>> {
        let searcher = self.reader.searcher();
        let fields = vec![self.fields.title, self.fields.body];
        let (q, _errors) =
            QueryParser::for_index(&self.index, fields.clone()).parse_query_lenient(query);
        let search_err =
            |e: tantivy::TantivyError| EngineError::Internal(format!("text search: {e}"));
        let mut out = match overlay {
            Some(o) if !within.is_disjoint(&o.documents) => {
                let mut out = searcher
                    .search(
                        &q,
                        &WithinCollector {
                            within: RowSet::new(&(within - &o.documents)),
                        },
                    )
                    .map_err(search_err)?;
                let (oq, _errors) =
                    QueryParser::for_index(&o.index, fields).parse_query_lenient(query);
                out.extend(
                    o.reader
                        .searcher()
                        .search_with_statistics_provider(
                            &oq,
                            &WithinCollector {
                                within: RowSet::new(&(within & &o.documents)),
                            },
                            &searcher,
                        )
                        .map_err(search_err)?,
                );
                out
            }
            _ => searcher
                .search(
                    &q,
                    &WithinCollector {
                        within: RowSet::new(within),
                    },
                )
                .map_err(search_err)?,
        };
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// Indexes `documents` — `(document row, title, readable passages)` — apart from the run's
    /// index, in memory, for [`search_within_readable`](Self::search_within_readable). Built
    /// when visibility changes, for the documents that have a hidden passage; the cost follows
    /// their text.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when tantivy fails.
    pub fn overlay<'a>(
        &self,
        documents: impl IntoIterator<Item = (u32, &'a str, Vec<&'a str>)>,
    ) -> Result<TextOverlay> {
        let err = |e: tantivy::TantivyError| EngineError::Internal(format!("text overlay: {e}"));
        // The run's own schema, so the overlay's words are analysed as the run's index was
        // (runs written before accents were folded included) and their scores compare.
        let f = &self.fields;
        let index = Index::create_in_ram(self.index.schema());
        register_tokenizer(&index)?;
        let mut writer: tantivy::IndexWriter<TantivyDocument> = index
            .writer_with_num_threads(1, OVERLAY_WRITER_BYTES)
            .map_err(err)?;
        let mut rows = RoaringBitmap::new();
        for (row, title, passages) in documents {
            rows.insert(row);
            let mut doc = TantivyDocument::default();
            doc.add_u64(f.doc_ord, u64::from(row));
            doc.add_text(f.title, title);
            for p in passages {
                doc.add_text(f.body, p);
            }
            writer.add_document(doc).map_err(err)?;
        }
        writer.commit().map_err(err)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(err)?;
        Ok(TextOverlay {
            index,
            reader,
            documents: rows,
        })
    }

    /// Number of indexed documents.
    #[cfg(test)]
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

/// Indexing memory of an overlay: tantivy's minimum for one thread.
const OVERLAY_WRITER_BYTES: usize = 15_000_000;

/// The readable text of documents that have a hidden passage, indexed in memory with the run's
/// schema and analyzer; see [`TextIndex::overlay`].
pub struct TextOverlay {
    index: Index,
    reader: IndexReader,
    documents: RoaringBitmap,
}

impl std::fmt::Debug for TextOverlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextOverlay")
            .field("documents", &self.documents.len())
            .finish_non_exhaustive()
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

    /// Every file of a built index has the same mode as `meta.json` (tantivy's own
    /// `.managed.json` would otherwise be owner-only).
    #[cfg(unix)]
    #[test]
    fn every_index_file_is_as_readable_as_meta_json() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let index_dir = dir.path().join(TEXT_INDEX_DIR);
        build_text_index(&index_dir, [("Aspirin", vec!["aspirin relieves pain"])]).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let want = mode(&index_dir.join("meta.json"));
        for e in std::fs::read_dir(&index_dir).unwrap() {
            let p = e.unwrap().path();
            assert_eq!(mode(&p), want, "{}", p.display());
        }
    }

    /// A document scored from the overlay scores exactly as it does in the run's index when the
    /// overlay holds the same text, and loses only what the hidden passage held otherwise.
    #[test]
    fn overlay_scores_use_the_runs_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let index_dir = dir.path().join(TEXT_INDEX_DIR);
        let docs = [
            ("Aspirin", vec!["aspirin relieves pain", "xylophone music"]),
            ("Stroke", vec!["aspirin after stroke"]),
            ("Rivers", vec!["rivers and lakes"]),
        ];
        build_text_index(&index_dir, docs.iter().map(|(t, p)| (*t, p.clone()))).unwrap();
        let index = TextIndex::open(&index_dir).unwrap();
        let all: RoaringBitmap = (0..3).collect();
        let plain = index.search_within("aspirin xylophone", &all).unwrap();
        let same = index.overlay([(0, docs[0].0, docs[0].1.clone())]).unwrap();
        let through = index
            .search_within_readable("aspirin xylophone", &all, Some(&same))
            .unwrap();
        assert_eq!(plain, through);
        let readable = index.overlay([(0, docs[0].0, vec![docs[0].1[0]])]).unwrap();
        assert!(
            index
                .search_within_readable("xylophone", &all, Some(&readable))
                .unwrap()
                .is_empty()
        );
        let hits = index
            .search_within_readable("aspirin", &all, Some(&readable))
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [0, 1]);
        // Outside `within`, the overlay's documents stay out too.
        let only_1: RoaringBitmap = [1].into_iter().collect();
        let hits = index
            .search_within_readable("aspirin", &only_1, Some(&readable))
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [1]);
    }

    /// The files (names) and modification time of a folder.
    fn listing(dir: &Path) -> (Vec<String>, std::time::SystemTime) {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        (names, std::fs::metadata(dir).unwrap().modified().unwrap())
    }

    /// Opening and searching an index writes nothing into its folder: no lock file, no
    /// changed entry (the tests run as root, whom permissions do not stop, so this is how a
    /// read-only mount's refusal is anticipated here; the integration tests mount one).
    #[test]
    fn opening_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let index_dir = dir.path().join(TEXT_INDEX_DIR);
        build_text_index(&index_dir, [("Aspirin", vec!["aspirin relieves pain"])]).unwrap();
        // The writer leaves its lock files behind; remove them, so that a reader taking a lock
        // would have to create one.
        for e in std::fs::read_dir(&index_dir).unwrap() {
            let path = e.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with(".lock")
            {
                std::fs::remove_file(path).unwrap();
            }
        }
        let before = listing(&index_dir);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let index = TextIndex::open(&index_dir).unwrap();
        let all: RoaringBitmap = (0..1).collect();
        assert_eq!(index.search_within("pain", &all).unwrap().len(), 1);
        assert_eq!(index.num_docs(), 1);
        drop(index);
        assert_eq!(listing(&index_dir), before);
    }

    /// The operating system's refusals become `Io` errors naming the file, with the
    /// `io::Error` as source; other failures are corruption.
    #[test]
    fn permission_errors_are_io_errors_not_corruption() {
        use std::io::ErrorKind;
        use std::path::PathBuf;
        use tantivy::TantivyError;
        let dir = Path::new("/srv/agrag/runs/r1/text_index");
        let denied = || std::io::Error::from(ErrorKind::PermissionDenied);
        let cases = [
            (
                TantivyError::OpenReadError(OpenReadError::wrap_io_error(
                    denied(),
                    PathBuf::from("meta.json"),
                )),
                dir.join("meta.json"),
            ),
            (
                TantivyError::LockFailure(LockError::wrap_io_error(denied()), None),
                dir.to_owned(),
            ),
            (
                TantivyError::OpenDirectoryError(
                    tantivy::directory::error::OpenDirectoryError::wrap_io_error(
                        std::io::Error::from(ErrorKind::ReadOnlyFilesystem),
                        dir.to_owned(),
                    ),
                ),
                dir.to_owned(),
            ),
        ];
        for (e, want) in cases {
            let mapped = text_index_open_error(dir, e);
            match &mapped {
                EngineError::Io { path, source } => {
                    assert_eq!(path, &want);
                    assert!(
                        matches!(
                            source.kind(),
                            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
                        ),
                        "{source:?}"
                    );
                }
                other => panic!("expected an Io error, got {other:?}"),
            }
            assert!(std::error::Error::source(&mapped).is_some());
            assert!(!mapped.to_string().contains("corrupt"), "{mapped}");
        }
        let damaged = text_index_open_error(
            dir,
            TantivyError::DataCorruption(tantivy::error::DataCorruption::comment_only(
                "bad footer",
            )),
        );
        assert!(
            matches!(damaged, EngineError::Corrupt { .. }),
            "{damaged:?}"
        );
        let missing = text_index_open_error(
            dir,
            TantivyError::OpenReadError(OpenReadError::wrap_io_error(
                std::io::Error::from(ErrorKind::NotFound),
                PathBuf::from("meta.json"),
            )),
        );
        assert!(
            matches!(missing, EngineError::Corrupt { .. }),
            "{missing:?}"
        );
    }

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
