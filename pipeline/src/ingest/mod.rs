//! Ingest: documents (JSON Lines) → documents with passages and stable passage ids.
//!
//! The file is UTF-8, optionally gzip-compressed (recognised by its magic bytes, whatever its
//! name, e.g. `documents.jsonl.gz`) and optionally starting with a UTF-8 byte-order mark, which
//! is skipped. UTF-16 and UTF-32 (with a byte-order mark, or recognised by their zero bytes) and
//! any other bytes that are not UTF-8 are refused with an error naming the file, and the
//! encoding or the line.
//!
//! One JSON object per line:
//!
//! ```json
//! {"document_key": "pmid:1", "title": "…", "year": 2011, "passages": ["…", "…"], "mesh": ["Heading", …]}
//! ```
//!
//! * `document_key` (string, required, unique, non-empty).
//! * `passages` (array of strings) — kept as given, in order; or `text` (string), split into
//!   passages at blank lines and then at sentence ends so that no passage exceeds
//!   [`MAX_PASSAGE_CHARS`]. Exactly one of the two is required: a line with both is refused
//!   (which one was meant cannot be told).
//! * `title` (string), `year` (integer), `mesh` (array of strings: the document's own subject
//!   headings, ingested as the `mesh` node field) are optional; other fields are ignored, and
//!   their names logged once in a warning (a misspelt `pasages` should not pass unnoticed).
//!
//! Titles, passages and `text` are stored in normal form ([`normalize_text`]): HTML character
//! references decoded once (`AT&amp;T` → `AT&T`), then Unicode NFC. Linking and the engine's
//! term lookup match on the key of [`agrag_engine::format::normalize`], so text in NFD or with
//! compatibility characters links like its plain form. Passages that are empty or only white
//! space (after that) are dropped and counted ([`Corpus::num_empty_passages_dropped`]).
//!
//! A passage's id is `<document_key>#<position>`, where `position` counts the document's kept
//! (non-empty) passages from 0; it is stable across runs as long as the document's passages are.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use agrag_engine::format::normalize::normalize_text;
use flate2::read::MultiGzDecoder;

use crate::error::{PipelineError, Result};

mod columns;
#[cfg(feature = "tables")]
pub mod graphrag;
#[cfg(feature = "tables")]
mod table;

pub use columns::CorpusColumns;
pub(crate) use columns::CorpusColumnsBuilder;
pub(crate) use columns::ReleasingReader;

/// The format of a documents file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentsFormat {
    /// JSON Lines, plain or gzip-compressed (see the [module docs](self)).
    Jsonl,
    /// Apache Parquet, one row per document (needs the `tables` feature).
    Parquet,
    /// CSV with a header line, one row per document (needs the `tables` feature).
    Csv,
}

impl DocumentsFormat {
    /// The format a file name tells: `.parquet`/`.pq` is Parquet, `.csv` is CSV, anything
    /// else (`.jsonl`, `.jsonl.gz`, `.ndjson`, no extension) is JSON Lines.
    pub fn from_path(path: &Path) -> DocumentsFormat {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.ends_with(".parquet") || name.ends_with(".pq") {
            DocumentsFormat::Parquet
        } else if name.ends_with(".csv") {
            DocumentsFormat::Csv
        } else {
            DocumentsFormat::Jsonl
        }
    }
}

/// The names of the key, text and title columns of a documents table (`--key-column`,
/// `--text-column`, `--title-column`); by default those of the JSON shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnNames {
    /// The document key column (default `document_key`).
    pub key: String,
    /// The running-text column, split into passages (default `text`).
    pub text: String,
    /// The title column (default `title`).
    pub title: String,
}

impl Default for ColumnNames {
    fn default() -> Self {
        ColumnNames {
            key: "document_key".into(),
            text: "text".into(),
            title: "title".into(),
        }
    }
}

/// Reads documents from `path` in `format` (by default the one [`DocumentsFormat::from_path`]
/// tells). JSON Lines is read by [`read_jsonl`]; Parquet and CSV tables with the same columns
/// (see `ingest::table`, documented in README's input formats) go through the same checks.
///
/// # Errors
/// Those of [`read_jsonl`] for JSON Lines; for tables [`PipelineError::Io`],
/// [`PipelineError::Unreadable`], [`PipelineError::Column`] naming a missing or mistyped
/// column, [`PipelineError::Row`] naming a row (null key, duplicate key, both `passages` and
/// `text`) and [`PipelineError::EmptyInput`]; [`PipelineError::InvalidConfig`] for renamed
/// columns with JSON Lines (its field names are fixed), or a table in a build without the
/// `tables` feature.
pub fn read_documents(
    path: &Path,
    format: Option<DocumentsFormat>,
    names: &ColumnNames,
) -> Result<Corpus> {
    let mut documents = Vec::new();
    let source = read_documents_into(path, format, names, &mut documents)?;
    Ok(Corpus::new(documents, source))
}

/// As [`read_documents`], handing each document to `sink` in input order as it is read
/// (nothing else of the input is held); returns what the run records of the source.
///
/// # Errors
/// As [`read_documents`].
pub(crate) fn read_documents_into(
    path: &Path,
    format: Option<DocumentsFormat>,
    names: &ColumnNames,
    sink: &mut dyn DocumentSink,
) -> Result<Source> {
    let format = format.unwrap_or_else(|| DocumentsFormat::from_path(path));
    match format {
        DocumentsFormat::Jsonl => {
            if names != &ColumnNames::default() {
                return Err(PipelineError::InvalidConfig {
                    field: "key-column/text-column/title-column",
                    value: format!("{}/{}/{}", names.key, names.text, names.title),
                    expected: "the default names with JSON Lines (its fields are document_key, text, title); renaming applies to Parquet and CSV",
                });
            }
            let file = std::fs::File::open(path).map_err(|e| PipelineError::Io {
                path: path.to_owned(),
                source: e,
            })?;
            parse_jsonl_into(BufReader::new(file), path, sink)
        }
        #[cfg(feature = "tables")]
        DocumentsFormat::Parquet => {
            table::read_table(path, table::TableFormat::Parquet, names, sink)
        }
        #[cfg(feature = "tables")]
        DocumentsFormat::Csv => table::read_table(path, table::TableFormat::Csv, names, sink),
        #[cfg(not(feature = "tables"))]
        DocumentsFormat::Parquet | DocumentsFormat::Csv => Err(PipelineError::InvalidConfig {
            field: "documents",
            value: path.display().to_string(),
            expected: "a JSON Lines file: this build of agrag-pipeline lacks the `tables` feature that reads Parquet and CSV (rebuild with default features)",
        }),
    }
}

/// Longest passage made when splitting a `text` field, in characters.
pub const MAX_PASSAGE_CHARS: usize = 1200;

/// One input document with its passages.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Unique key.
    pub key: String,
    /// Title (empty when absent).
    pub title: String,
    /// Publication year.
    pub year: Option<i32>,
    /// Passage texts, in order; position = index.
    pub passages: Vec<String>,
    /// The document's own subject headings (the `mesh` field), as given.
    pub headings: Vec<String>,
}

impl Document {
    /// The stable id of passage `position` of this document.
    pub fn passage_id(&self, position: usize) -> String {
        passage_id(&self.key, position)
    }
}

/// The stable id of passage `position` of document `key`: `<key>#<position>`, by the
/// contract's one rule ([`agrag_engine::format::passage_id`]).
pub fn passage_id(key: &str, position: usize) -> String {
    agrag_engine::format::passage_id(key, position as u32)
}

/// Every document of one input, in input order.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The documents.
    pub documents: Vec<Document>,
    /// The file they came from.
    pub source: PathBuf,
    /// BLAKE3 digest (hex) of the file's bytes (decompressed, without a byte-order mark).
    pub fingerprint: String,
    /// Passages that were empty or only white space, dropped at ingest.
    pub num_empty_passages_dropped: usize,
}

/// What a run records of its documents' source, besides the documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file (or folder) the documents came from.
    pub path: PathBuf,
    /// BLAKE3 digest (hex) of its bytes (decompressed, without a byte-order mark).
    pub fingerprint: String,
    /// Passages that were empty or only white space, dropped at ingest.
    pub num_empty_passages_dropped: usize,
}

/// Where a reader hands each document it has checked ([`CorpusBuilder::push`]), in input
/// order: a `Vec` (the owned [`Corpus`]), or the run's columns ([`CorpusColumns`]), which
/// write the passages to a scratch file as they arrive.
pub(crate) trait DocumentSink {
    /// Takes the next document.
    ///
    /// # Errors
    /// Those of the sink's storage (a scratch file that cannot be written).
    fn push(&mut self, document: Document) -> Result<()>;
}

impl DocumentSink for Vec<Document> {
    fn push(&mut self, document: Document) -> Result<()> {
        Vec::push(self, document);
        Ok(())
    }
}

impl Corpus {
    /// The corpus of `documents` (in input order) read from `source`.
    pub fn new(documents: Vec<Document>, source: Source) -> Self {
        Self {
            documents,
            source: source.path,
            fingerprint: source.fingerprint,
            num_empty_passages_dropped: source.num_empty_passages_dropped,
        }
    }

    /// Total number of passages.
    pub fn num_passages(&self) -> usize {
        self.documents.iter().map(|d| d.passages.len()).sum()
    }
}

/// The fields of a JSON line that ingest reads; any other field is ignored (and named once in
/// a warning, so a misspelt field does not pass unnoticed).
const KNOWN_FIELDS: [&str; 6] = ["document_key", "title", "year", "passages", "text", "mesh"];

/// The JSON type of a value, as an error message names it.
fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a non-integer number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Field `name` of a JSON line as a string; `None` when absent or null.
fn string_field(
    fields: &mut serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> std::result::Result<Option<String>, String> {
    match fields.remove(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "field `{name}` must be a string, found {}",
            json_kind(&other)
        )),
    }
}

/// Field `name` of a JSON line as an array of strings, naming the first element that is not.
fn strings_field(
    fields: &mut serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> std::result::Result<Option<Vec<String>>, String> {
    match fields.remove(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                serde_json::Value::String(s) => Ok(s),
                other => Err(format!(
                    "field `{name}` must be an array of strings, but element {i} is {}",
                    json_kind(&other)
                )),
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "field `{name}` must be an array of strings, found {}",
            json_kind(&other)
        )),
    }
}

/// Field `year` of a JSON line as an integer; `None` when absent or null.
fn year_field(
    fields: &mut serde_json::Map<String, serde_json::Value>,
) -> std::result::Result<Option<i64>, String> {
    match fields.remove("year") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
        Some(other) => Err(format!(
            "field `year` must be an integer, found {}",
            json_kind(&other)
        )),
    }
}

/// Most ignored field names a warning lists.
const MAX_IGNORED_NAMED: usize = 10;
/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The first four bytes of a Parquet file.
const PARQUET_MAGIC: &[u8] = b"PAR1";
/// The UTF-8 byte-order mark.
const UTF8_BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// Reads a JSON Lines corpus (plain or gzip-compressed; see the [module docs](self)).
///
/// # Errors
/// * [`PipelineError::Io`] when the file cannot be read or decompressed;
/// * [`PipelineError::UnsupportedEncoding`] naming the file and its encoding when it is UTF-16
///   or UTF-32; [`PipelineError::Unreadable`] when it is a Parquet file;
/// * [`PipelineError::Parse`] naming the line of bytes that are not UTF-8, malformed JSON, a
///   line that is not an object, a field of the wrong type (naming the field, and the element
///   of an array), a missing `document_key`, a year out of range, or a document with neither or
///   both of `passages` and `text`;
/// * [`PipelineError::DuplicateKey`] naming both lines of a repeated `document_key`;
/// * [`PipelineError::EmptyInput`] when the file holds no document or no passage.
pub fn read_jsonl(path: &Path) -> Result<Corpus> {
    read_documents(path, Some(DocumentsFormat::Jsonl), &ColumnNames::default())
}

/// Reads a JSON Lines corpus from `reader` (plain or gzip-compressed); `path` names the source
/// in errors and in the corpus. Same format and errors as [`read_jsonl`] (an I/O error of
/// `reader` is reported as [`PipelineError::Io`] on `path`). Never panics, whatever the bytes
/// (fuzzed).
///
/// # Errors
/// As [`read_jsonl`].
pub fn parse_jsonl(reader: impl BufRead, path: &Path) -> Result<Corpus> {
    let mut documents = Vec::new();
    let source = parse_jsonl_into(reader, path, &mut documents)?;
    Ok(Corpus::new(documents, source))
}

/// As [`parse_jsonl`], handing each document to `sink`.
fn parse_jsonl_into(
    mut reader: impl BufRead,
    path: &Path,
    sink: &mut dyn DocumentSink,
) -> Result<Source> {
    let head = reader.fill_buf().map_err(|e| PipelineError::Io {
        path: path.to_owned(),
        source: e,
    })?;
    if head.starts_with(&GZIP_MAGIC) {
        let mut unzipped = BufReader::new(MultiGzDecoder::new(reader));
        return parse_plain(&mut unzipped, path, sink);
    }
    parse_plain(&mut reader, path, sink)
}

/// The encoding that `head` (the first bytes of a file) shows, when it is not UTF-8: a
/// byte-order mark of UTF-16 or UTF-32, or the zero bytes that UTF-16 puts beside ASCII.
fn foreign_encoding(head: &[u8]) -> Option<&'static str> {
    match head {
        [0x00, 0x00, 0xfe, 0xff, ..] => Some("UTF-32 (big-endian, with a byte-order mark)"),
        [0xff, 0xfe, 0x00, 0x00, ..] => Some("UTF-32 (little-endian, with a byte-order mark)"),
        [0xff, 0xfe, ..] => Some("UTF-16 (little-endian, with a byte-order mark)"),
        [0xfe, 0xff, ..] => Some("UTF-16 (big-endian, with a byte-order mark)"),
        [a, 0x00, ..] if *a != 0 => Some("UTF-16 (little-endian)"),
        [0x00, b, ..] if *b != 0 => Some("UTF-16 (big-endian)"),
        _ => None,
    }
}

fn parse_plain(
    reader: &mut dyn BufRead,
    path: &Path,
    sink: &mut dyn DocumentSink,
) -> Result<Source> {
    let io = |e| PipelineError::Io {
        path: path.to_owned(),
        source: e,
    };
    let head = reader.fill_buf().map_err(io)?;
    if let Some(encoding) = foreign_encoding(head) {
        return Err(PipelineError::UnsupportedEncoding {
            path: path.to_owned(),
            encoding,
        });
    }
    if head.starts_with(PARQUET_MAGIC) {
        return Err(PipelineError::Unreadable {
            path: path.to_owned(),
            format: "JSON Lines",
            reason: "it is a Parquet file (it starts with `PAR1`): read it as a table with \
                     `--documents-format parquet`, or name it `.parquet`"
                .to_owned(),
        });
    }
    if head.starts_with(&UTF8_BOM) {
        reader.consume(UTF8_BOM.len());
    }
    let mut hasher = blake3::Hasher::new();
    let mut builder = CorpusBuilder::new(path, RecordKind::Line, sink);
    let mut bytes: Vec<u8> = Vec::new();
    let mut line_no = 0u64;
    // Field names outside KNOWN_FIELDS, with the line each first appears on.
    let mut ignored: Vec<(String, u64)> = Vec::new();
    loop {
        bytes.clear();
        let n = reader.read_until(b'\n', &mut bytes).map_err(io)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        hasher.update(&bytes);
        let buf = std::str::from_utf8(&bytes).map_err(|e| {
            let at = e.valid_up_to();
            PipelineError::Parse {
                path: path.to_owned(),
                line: line_no,
                reason: format!(
                    "byte 0x{:02X} at byte {} of the line is not UTF-8: documents must be UTF-8 \
                     (convert the file, e.g. from Latin-1 or Windows-1252 with iconv)",
                    bytes[at],
                    at + 1
                ),
            }
        })?;
        let line = buf.trim();
        if line.is_empty() {
            continue;
        }
        let parse = |reason: String| PipelineError::Parse {
            path: path.to_owned(),
            line: line_no,
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| parse(format!("malformed JSON: {e}")))?;
        let serde_json::Value::Object(mut object) = value else {
            return Err(parse(format!(
                "a line must be one JSON object (a document), found {}",
                json_kind(&value)
            )));
        };
        let key = match object.remove("document_key") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s),
            Some(other) => {
                return Err(parse(format!(
                    "field `document_key` must be a string, found {other}"
                )));
            }
        };
        let fields = Fields {
            key,
            title: string_field(&mut object, "title").map_err(parse)?,
            year: year_field(&mut object).map_err(parse)?,
            passages: strings_field(&mut object, "passages").map_err(parse)?,
            text: string_field(&mut object, "text").map_err(parse)?,
            mesh: strings_field(&mut object, "mesh").map_err(parse)?,
        };
        for name in object.keys() {
            if ignored.len() < MAX_IGNORED_NAMED && !ignored.iter().any(|(n, _)| n == name) {
                ignored.push((name.clone(), line_no));
            }
        }
        builder.push(line_no, fields)?;
    }
    if !ignored.is_empty() {
        let names: Vec<String> = ignored
            .iter()
            .map(|(n, line)| format!("`{n}` (first on line {line})"))
            .collect();
        tracing::warn!(
            "{}: ignored field(s) that ingest does not read: {}; it reads {}",
            path.display(),
            names.join(", "),
            KNOWN_FIELDS.join(", ")
        );
    }
    builder.finish(hasher.finalize().to_hex().to_string())
}

/// How a reader counts its records in errors: JSON Lines by 1-based line, tables by 0-based
/// row (as polars and pandas number them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// 1-based line of a text file.
    Line,
    /// 0-based row of a table (only the table readers of feature `tables` count rows).
    #[cfg_attr(not(feature = "tables"), allow(dead_code))]
    Row,
}

/// One input record's fields as a reader found them, before the checks every reader shares
/// ([`CorpusBuilder::push`]). Type errors (a key that is not a string, say) are the reader's.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fields {
    /// `document_key`; `None` when missing or null.
    pub key: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `year`, before the range check.
    pub year: Option<i64>,
    /// `passages`, kept as given.
    pub passages: Option<Vec<String>>,
    /// `text`, split into passages.
    pub text: Option<String>,
    /// `mesh`, the document's own subject headings.
    pub mesh: Option<Vec<String>>,
}

/// The one owner of the rules every document reader enforces: a non-empty key without `#`,
/// unique across the input; a year in range; exactly one of `passages` and `text`; text in
/// normal form; empty passages dropped and counted; a corpus with at least one passage.
pub(crate) struct CorpusBuilder<'s> {
    path: PathBuf,
    kind: RecordKind,
    sink: &'s mut dyn DocumentSink,
    seen: HashMap<String, u64>,
    num_documents: usize,
    num_passages: usize,
    num_empty_passages_dropped: usize,
}

impl<'s> CorpusBuilder<'s> {
    /// An empty corpus read from `path`, whose records are counted as `kind`, its documents
    /// handed to `sink`.
    pub(crate) fn new(
        path: &Path,
        kind: RecordKind,
        sink: &'s mut dyn DocumentSink,
    ) -> CorpusBuilder<'s> {
        CorpusBuilder {
            path: path.to_owned(),
            kind,
            sink,
            seen: HashMap::new(),
            num_documents: 0,
            num_passages: 0,
            num_empty_passages_dropped: 0,
        }
    }

    /// The error of record `at` (a [`PipelineError::Parse`] for lines, a
    /// [`PipelineError::Row`] for rows).
    pub(crate) fn error(&self, at: u64, reason: String) -> PipelineError {
        match self.kind {
            RecordKind::Line => PipelineError::Parse {
                path: self.path.clone(),
                line: at,
                reason,
            },
            RecordKind::Row => PipelineError::Row {
                path: self.path.clone(),
                row: at,
                reason,
            },
        }
    }

    /// Checks record `at` and adds its document.
    ///
    /// # Errors
    /// [`PipelineError::Parse`] (lines) or [`PipelineError::Row`] (rows) for a missing, empty
    /// or `#`-holding key, a year out of range, neither or both of `passages` and `text`;
    /// [`PipelineError::DuplicateKey`] (lines) or [`PipelineError::Row`] (rows) naming both
    /// records of a repeated key.
    pub(crate) fn push(&mut self, at: u64, fields: Fields) -> Result<()> {
        let key = match fields.key {
            Some(s) if !s.trim().is_empty() => s,
            Some(_) => return Err(self.error(at, "document_key is empty".into())),
            None => {
                let reason = match self.kind {
                    RecordKind::Line => "missing field document_key".into(),
                    RecordKind::Row => "document_key is null".into(),
                };
                return Err(self.error(at, reason));
            }
        };
        if key.contains('#') {
            return Err(self.error(
                at,
                format!(
                    "document_key {key:?} contains '#', which separates it from the position in passage ids"
                ),
            ));
        }
        let year = match fields.year {
            None => None,
            Some(y) => Some(
                i32::try_from(y)
                    .map_err(|_| self.error(at, format!("year {y} is out of range")))?,
            ),
        };
        let passages = match (fields.passages, fields.text) {
            (Some(_), Some(_)) => {
                return Err(self.error(
                    at,
                    format!(
                        "document {key:?} has both `passages` and `text`: give one of them \
                         (`passages` are kept as given, `text` is split into passages)"
                    ),
                ));
            }
            (Some(p), None) => p.iter().map(|t| normalize_text(t).into_owned()).collect(),
            (None, Some(t)) => split_passages(&normalize_text(&t)),
            (None, None) => {
                return Err(self.error(
                    at,
                    format!("document {key:?} has neither `passages` nor `text`"),
                ));
            }
        };
        let given = passages.len();
        let passages: Vec<String> = passages
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect();
        self.num_empty_passages_dropped += given - passages.len();
        if let Some(&first) = self.seen.get(&key) {
            return Err(match self.kind {
                RecordKind::Line => PipelineError::DuplicateKey {
                    path: self.path.clone(),
                    line: at,
                    first_line: first,
                    field: "document_key",
                    value: key,
                },
                RecordKind::Row => self.error(
                    at,
                    format!("duplicate document_key {key:?} (first seen in row {first})"),
                ),
            });
        }
        self.seen.insert(key.clone(), at);
        self.num_documents += 1;
        self.num_passages += passages.len();
        self.sink.push(Document {
            key,
            title: normalize_text(&fields.title.unwrap_or_default()).into_owned(),
            year,
            passages,
            headings: fields.mesh.unwrap_or_default(),
        })
    }

    /// The source of the documents handed to the sink, with the input's `fingerprint`
    /// (BLAKE3 hex).
    ///
    /// # Errors
    /// [`PipelineError::EmptyInput`] when it holds no document or no passage.
    pub(crate) fn finish(self, fingerprint: String) -> Result<Source> {
        let path = self.path;
        if self.num_documents == 0 {
            return Err(PipelineError::EmptyInput {
                path,
                reason: "the corpus holds no document".into(),
            });
        }
        if self.num_passages == 0 {
            return Err(PipelineError::EmptyInput {
                path,
                reason: "the corpus holds no passage".into(),
            });
        }
        Ok(Source {
            path,
            fingerprint,
            num_empty_passages_dropped: self.num_empty_passages_dropped,
        })
    }
}

/// Splits running text into passages: at blank lines, then at sentence ends (". ", "? ", "! ")
/// so that no passage exceeds [`MAX_PASSAGE_CHARS`] characters unless one sentence does.
pub fn split_passages(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for para in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        let mut current = String::new();
        for sentence in sentences(para) {
            if !current.is_empty()
                && current.chars().count() + 1 + sentence.chars().count() > MAX_PASSAGE_CHARS
            {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(sentence);
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        if matches!(bytes[i], b'.' | b'?' | b'!')
            && bytes.get(i + 1).is_some_and(|b| b.is_ascii_whitespace())
        {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(lines: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(lines.as_bytes()).unwrap();
        f
    }

    #[test]
    fn reads_passages_and_text() {
        let f = write(concat!(
            r#"{"document_key":"a","title":"T","year":2001,"passages":["p0","p1"],"mesh":["Dogs"]}"#,
            "\n\n",
            r#"{"document_key":"b","text":"One. Two.\n\nThree."}"#,
            "\n"
        ));
        let c = read_jsonl(f.path()).unwrap();
        assert_eq!(c.documents.len(), 2);
        assert_eq!(c.documents[0].passages, vec!["p0", "p1"]);
        assert_eq!(c.documents[0].headings, vec!["Dogs"]);
        assert_eq!(c.documents[0].passage_id(1), "a#1");
        assert_eq!(c.documents[1].passages, vec!["One. Two.", "Three."]);
        assert_eq!(c.num_passages(), 4);
    }

    #[test]
    fn malformed_line_is_named() {
        let f = write("{\"document_key\":\"a\",\"passages\":[\"x\"]}\n{not json\n");
        let e = read_jsonl(f.path()).unwrap_err().to_string();
        assert!(e.contains(":2: malformed JSON"), "{e}");
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        for (line, expected) in [
            (
                r#"{"document_key":"a","title":12,"passages":["x"]}"#,
                ":1: field `title` must be a string, found an integer",
            ),
            (
                r#"{"document_key":"a","passages":["x",3]}"#,
                ":1: field `passages` must be an array of strings, but element 1 is an integer",
            ),
            (
                r#"{"document_key":"a","passages":"x"}"#,
                ":1: field `passages` must be an array of strings, found a string",
            ),
            (
                r#"{"document_key":"a","year":"2011","passages":["x"]}"#,
                ":1: field `year` must be an integer, found a string",
            ),
            (
                r#"{"document_key":"a","year":2011.5,"passages":["x"]}"#,
                ":1: field `year` must be an integer, found a non-integer number",
            ),
            (
                r#"{"document_key":"a","mesh":{"x":1},"passages":["x"]}"#,
                ":1: field `mesh` must be an array of strings, found an object",
            ),
            (
                r#"["a"]"#,
                ":1: a line must be one JSON object (a document), found an array",
            ),
        ] {
            let f = write(&format!("{line}\n"));
            let e = read_jsonl(f.path()).unwrap_err().to_string();
            assert!(e.contains(expected), "{line}: {e}");
        }
    }

    #[test]
    fn a_parquet_file_read_as_json_lines_is_named() {
        let f = write("PAR1\u{0}\u{15}\u{4}binary");
        let e = read_jsonl(f.path()).unwrap_err().to_string();
        assert!(
            e.contains("not a readable JSON Lines file")
                && e.contains("--documents-format parquet"),
            "{e}"
        );
    }

    #[test]
    fn unknown_fields_are_ignored_not_refused() {
        let f = write(concat!(
            r#"{"document_key":"a","passages":["x"],"authors":["Ng"],"url":null}"#,
            "\n"
        ));
        let c = read_jsonl(f.path()).unwrap();
        assert_eq!(c.documents[0].passages, vec!["x"]);
    }

    #[test]
    fn duplicate_key_names_both_lines() {
        let f = write(
            "{\"document_key\":\"a\",\"passages\":[\"x\"]}\n{\"document_key\":\"a\",\"passages\":[\"y\"]}\n",
        );
        let e = read_jsonl(f.path()).unwrap_err().to_string();
        assert!(
            e.contains(":2: duplicate document_key \"a\" (first seen on line 1)"),
            "{e}"
        );
    }

    #[test]
    fn missing_key_and_empty_corpus() {
        let f = write("{\"passages\":[\"x\"]}\n");
        assert!(
            read_jsonl(f.path())
                .unwrap_err()
                .to_string()
                .contains(":1: missing field document_key")
        );
        let f = write("\n\n");
        assert!(
            read_jsonl(f.path())
                .unwrap_err()
                .to_string()
                .contains("no document")
        );
        let f = write("{\"document_key\":\"a\",\"passages\":[]}\n");
        assert!(
            read_jsonl(f.path())
                .unwrap_err()
                .to_string()
                .contains("no passage")
        );
    }

    #[test]
    fn gzip_and_a_utf8_byte_order_mark_are_read() {
        let plain = "{\"document_key\":\"a\",\"passages\":[\"x\"]}\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(format!("\u{feff}{plain}").as_bytes()).unwrap();
        let zipped = gz.finish().unwrap();
        let c = parse_jsonl(zipped.as_slice(), Path::new("d.jsonl.gz")).unwrap();
        assert_eq!(c.documents[0].passages, vec!["x"]);
        let bom = parse_jsonl(format!("\u{feff}{plain}").as_bytes(), Path::new("d.jsonl")).unwrap();
        let without = parse_jsonl(plain.as_bytes(), Path::new("d.jsonl")).unwrap();
        assert_eq!(bom.documents, without.documents);
        assert_eq!(bom.fingerprint, without.fingerprint);
        assert_eq!(c.fingerprint, without.fingerprint);
    }

    #[test]
    fn other_encodings_are_named() {
        let utf16: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(
                "{\"document_key\":\"a\"}"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes),
            )
            .collect();
        let e = parse_jsonl(utf16.as_slice(), Path::new("d.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("d.jsonl: the file is UTF-16 (little-endian"),
            "{e}"
        );
        let no_bom: Vec<u8> = "{\"a\":1}"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        let e = parse_jsonl(no_bom.as_slice(), Path::new("d.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("UTF-16 (big-endian)"), "{e}");
        let latin1 =
            b"{\"document_key\":\"a\",\"passages\":[\"x\"]}\n{\"document_key\":\"caf\xe9\"}\n";
        let e = parse_jsonl(&latin1[..], Path::new("d.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d.jsonl:2: byte 0xE9 at byte 21 of the line is not UTF-8"),
            "{e}"
        );
    }

    #[test]
    fn passages_and_text_together_are_refused() {
        let f = write("{\"document_key\":\"a\",\"passages\":[\"p\"],\"text\":\"t\"}\n");
        let e = read_jsonl(f.path()).unwrap_err().to_string();
        assert!(
            e.contains(":1: document \"a\" has both `passages` and `text`"),
            "{e}"
        );
    }

    #[test]
    fn empty_passages_are_dropped_and_counted() {
        let f = write(concat!(
            r#"{"document_key":"a","passages":["", "  \n", "kept", "&nbsp;"]}"#,
            "\n",
            r#"{"document_key":"b","text":"\n\n  \n\nOne."}"#,
            "\n"
        ));
        let c = read_jsonl(f.path()).unwrap();
        assert_eq!(c.documents[0].passages, vec!["kept"]);
        assert_eq!(c.documents[1].passages, vec!["One."]);
        // The no-break space of `&nbsp;` is white space too.
        assert_eq!(c.num_empty_passages_dropped, 3);
    }

    #[test]
    fn text_is_stored_in_normal_form() {
        let f = write(concat!(
            r#"{"document_key":"a","title":"AT&amp;T","passages":["Me\u0301nie\u0300re &lt;3"]}"#,
            "\n",
            r#"{"document_key":"b","text":"Caf\u0065\u0301 &amp;amp; more."}"#,
            "\n"
        ));
        let c = read_jsonl(f.path()).unwrap();
        assert_eq!(c.documents[0].title, "AT&T");
        assert_eq!(c.documents[0].passages, vec!["M\u{e9}ni\u{e8}re <3"]);
        assert_eq!(c.documents[1].passages, vec!["Caf\u{e9} &amp; more."]);
    }

    #[test]
    fn long_text_is_split_at_sentences() {
        let sentence = "word ".repeat(100).trim().to_owned() + ".";
        let text = [sentence.as_str(); 5].join(" ");
        let parts = split_passages(&text);
        assert!(parts.len() >= 3, "{}", parts.len());
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_PASSAGE_CHARS));
        assert_eq!(parts.join(" "), text);
    }
}
