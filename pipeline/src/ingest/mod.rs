//! Ingest: documents (JSON Lines) → documents with passages and stable passage ids.
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
//!   [`MAX_PASSAGE_CHARS`]. One of the two is required.
//! * `title` (string), `year` (integer), `mesh` (array of strings: the document's own subject
//!   headings, ingested as the `mesh` node field) are optional; other fields are ignored.
//!
//! A passage's id is `<document_key>#<position>`, stable across runs as long as the document's
//! passages are.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{PipelineError, Result};

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

/// The stable id of passage `position` of document `key`: `<key>#<position>`.
pub fn passage_id(key: &str, position: usize) -> String {
    format!("{key}#{position}")
}

/// Every document of one input, in input order.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The documents.
    pub documents: Vec<Document>,
    /// The file they came from.
    pub source: PathBuf,
    /// BLAKE3 digest (hex) of the file's bytes.
    pub fingerprint: String,
}

impl Corpus {
    /// Total number of passages.
    pub fn num_passages(&self) -> usize {
        self.documents.iter().map(|d| d.passages.len()).sum()
    }
}

#[derive(Deserialize)]
struct RawDocument {
    document_key: Option<serde_json::Value>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    year: Option<i64>,
    #[serde(default)]
    passages: Option<Vec<String>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    mesh: Option<Vec<String>>,
}

/// Reads a JSON Lines corpus.
///
/// # Errors
/// * [`PipelineError::Io`] when the file cannot be read;
/// * [`PipelineError::Parse`] naming the line of malformed JSON, a missing or non-string
///   `document_key`, a year out of range, or a document with neither `passages` nor `text`;
/// * [`PipelineError::DuplicateKey`] naming both lines of a repeated `document_key`;
/// * [`PipelineError::EmptyInput`] when the file holds no document or no passage.
pub fn read_jsonl(path: &Path) -> Result<Corpus> {
    let file = std::fs::File::open(path).map_err(|e| PipelineError::Io {
        path: path.to_owned(),
        source: e,
    })?;
    parse_jsonl(BufReader::new(file), path)
}

/// Reads a JSON Lines corpus from `reader`; `path` names the source in errors and in the
/// corpus. Same format and errors as [`read_jsonl`] (an I/O error of `reader` is reported as
/// [`PipelineError::Io`] on `path`). Never panics, whatever the bytes (fuzzed).
///
/// # Errors
/// As [`read_jsonl`].
pub fn parse_jsonl(mut reader: impl BufRead, path: &Path) -> Result<Corpus> {
    let io = |e| PipelineError::Io {
        path: path.to_owned(),
        source: e,
    };
    let mut hasher = blake3::Hasher::new();
    let mut documents = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut buf = String::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader.read_line(&mut buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                PipelineError::Parse {
                    path: path.to_owned(),
                    line: line_no + 1,
                    reason: "line is not valid UTF-8".into(),
                }
            } else {
                io(e)
            }
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        hasher.update(buf.as_bytes());
        let line = buf.trim();
        if line.is_empty() {
            continue;
        }
        let parse = |reason: String| PipelineError::Parse {
            path: path.to_owned(),
            line: line_no,
            reason,
        };
        let raw: RawDocument =
            serde_json::from_str(line).map_err(|e| parse(format!("malformed JSON: {e}")))?;
        let key = match raw.document_key {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s,
            Some(serde_json::Value::String(_)) => {
                return Err(parse("document_key is empty".into()));
            }
            Some(other) => {
                return Err(parse(format!(
                    "document_key must be a string, found {other}"
                )));
            }
            None => return Err(parse("missing field document_key".into())),
        };
        if key.contains('#') {
            return Err(parse(format!(
                "document_key {key:?} contains '#', which separates it from the position in passage ids"
            )));
        }
        let year = match raw.year {
            None => None,
            Some(y) => {
                Some(i32::try_from(y).map_err(|_| parse(format!("year {y} is out of range")))?)
            }
        };
        let passages = match (raw.passages, raw.text) {
            (Some(p), _) => p,
            (None, Some(t)) => split_passages(&t),
            (None, None) => {
                return Err(parse(format!(
                    "document {key:?} has neither `passages` nor `text`"
                )));
            }
        };
        if let Some(&first_line) = seen.get(&key) {
            return Err(PipelineError::DuplicateKey {
                path: path.to_owned(),
                line: line_no,
                first_line,
                field: "document_key",
                value: key,
            });
        }
        seen.insert(key.clone(), line_no);
        documents.push(Document {
            key,
            title: raw.title.unwrap_or_default(),
            year,
            passages,
            headings: raw.mesh.unwrap_or_default(),
        });
    }
    let corpus = Corpus {
        documents,
        source: path.to_owned(),
        fingerprint: hasher.finalize().to_hex().to_string(),
    };
    if corpus.documents.is_empty() {
        return Err(PipelineError::EmptyInput {
            path: path.to_owned(),
            reason: "the corpus holds no document".into(),
        });
    }
    if corpus.num_passages() == 0 {
        return Err(PipelineError::EmptyInput {
            path: path.to_owned(),
            reason: "the corpus holds no passage".into(),
        });
    }
    Ok(corpus)
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
    fn long_text_is_split_at_sentences() {
        let sentence = "word ".repeat(100).trim().to_owned() + ".";
        let text = [sentence.as_str(); 5].join(" ");
        let parts = split_passages(&text);
        assert!(parts.len() >= 3, "{}", parts.len());
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_PASSAGE_CHARS));
        assert_eq!(parts.join(" "), text);
    }
}
