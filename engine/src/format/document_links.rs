//! `document_links.arrow`: what linking found in every distinct document a run linked, keyed by
//! the BLAKE3 of the linker's input, so that the next run on the root links only the documents
//! whose title or passages changed (a content-addressed cache that travels with the run and is
//! verified by its manifest like every other file).
//!
//! Schema, writer, reader and the key rule live here together.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `document_blake3` | fixed-size binary (32) | [`document_key`]: keyed BLAKE3 of the link fingerprint, the title and the passages linked |
//! | `links` | binary | [`DocumentLinks`], little-endian `u32` words (layout on [`DocumentLinks::encode`]) |
//!
//! Concepts in `links` are row numbers of the run's vocabulary (as the pipeline loads it), not
//! concept ids: they mean something only under the same link fingerprint. Rows are distinct by
//! `document_blake3`, in the run's document order (sorted by document key), in record batches of
//! [`BATCH_ROWS`]. The file is uncompressed Arrow IPC, mapped (not read) by the next run. The
//! *link fingerprint* (the key of the keyed hash, also in the schema metadata as
//! [`META_LINK_FINGERPRINT`]) is the pipeline's: it covers the vocabulary, the linking
//! parameters and the linker's revision, so a run with another vocabulary or other rules takes
//! nothing from its parent's file (and says why).
//!
//! Cost: 32 bytes of key and about 8 bytes per mention and 12 per concept of the document, about
//! 0.2 KB per document of the generated bench corpus.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{BinaryArray, FixedSizeBinaryArray, RecordBatch};
use arrow_buffer::{Buffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::manifest::FileEntry;
use super::reader::index_by_key;
use super::writer::{IpcStream, RunWriter};
use super::{Verify, verify_file};
use crate::error::{EngineError, Result};
use crate::store::mmap::{decode_ipc_file_with_schema, map_file};

/// File name inside the run folder.
pub const FILE: &str = "document_links.arrow";
/// The document's key (fixed-size binary of 32 bytes, [`document_key`]).
pub const DOCUMENT_HASH: &str = "document_blake3";
/// The encoded [`DocumentLinks`] (binary).
pub const LINKS: &str = "links";
/// Rows per record batch of the file.
pub const BATCH_ROWS: usize = 32 * 1024;
/// Key of the link fingerprint (64 hex digits) in the file's schema metadata.
pub const META_LINK_FINGERPRINT: &str = "link_fingerprint";

/// The key of a document's links.
pub type DocumentHash = [u8; 32];

/// The key of the links of a document whose linker input is `title` and `passages` (the
/// passages linked, in document order), under `link_fingerprint`: BLAKE3 keyed by the
/// fingerprint, over the number of passages and each text with its byte length (so that no two
/// different inputs concatenate to the same bytes).
pub fn document_key(link_fingerprint: &[u8; 32], title: &str, passages: &[&str]) -> DocumentHash {
    let mut h = blake3::Hasher::new_keyed(link_fingerprint);
    h.update(&(passages.len() as u64).to_le_bytes());
    for text in std::iter::once(title).chain(passages.iter().copied()) {
        h.update(&(text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    *h.finalize().as_bytes()
}

/// What linking found in one document, as the next run needs it. Indices of passages are
/// positions among the document's linked passages (0-based, as the linker was given them);
/// concepts are indices into the run's vocabulary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentLinks {
    /// Per linked passage, `(concept, occurrences)` sorted by concept.
    pub passage_mentions: Vec<Vec<(u32, u32)>>,
    /// The document's concept set, ascending.
    pub concepts: Vec<u32>,
    /// Parallel to `concepts`: every way the concept was reached, each a list of passage
    /// positions (empty: the title alone).
    pub ways: Vec<Vec<Vec<u32>>>,
}

impl DocumentLinks {
    /// Appends the links as little-endian `u32` words to `out`:
    /// `P, (m, (concept, occurrences)×m)×P, C, (concept, w, (k, passage×k)×w)×C`.
    ///
    /// # Panics
    /// When a count exceeds `u32::MAX` (no document has four billion passages).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut put = |x: usize| {
            let x = u32::try_from(x).expect("a document's counts fit in u32");
            out.extend_from_slice(&x.to_le_bytes());
        };
        put(self.passage_mentions.len());
        for mentions in &self.passage_mentions {
            put(mentions.len());
            for &(c, n) in mentions {
                put(c as usize);
                put(n as usize);
            }
        }
        put(self.concepts.len());
        for (&c, ways) in self.concepts.iter().zip(&self.ways) {
            put(c as usize);
            put(ways.len());
            for way in ways {
                put(way.len());
                for &k in way {
                    put(k as usize);
                }
            }
        }
    }

    /// Decodes [`encode`](Self::encode)'s words, checking that every concept is below
    /// `num_concepts`, every passage position below the number of passages, and that no word
    /// is missing or left over. `Err` holds what is wrong.
    pub fn decode(bytes: &[u8], num_concepts: usize) -> std::result::Result<Self, String> {
        if !bytes.len().is_multiple_of(4) {
            return Err(format!("{} bytes, not whole u32 words", bytes.len()));
        }
        let mut words = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let mut next = || words.next().ok_or_else(|| "ends early".to_string());
        let concept = |c: u32| {
            if (c as usize) < num_concepts {
                Ok(c)
            } else {
                Err(format!("concept {c} of a vocabulary of {num_concepts}"))
            }
        };
        let num_passages = next()?;
        // Counts are checked against the bytes left before anything is allocated for them.
        let bound = |n: u32, per: usize| {
            if (n as usize).saturating_mul(per) <= bytes.len() / 4 {
                Ok(n as usize)
            } else {
                Err(format!("a count of {n} past the end"))
            }
        };
        let mut out = DocumentLinks {
            passage_mentions: Vec::with_capacity(bound(num_passages, 1)?),
            ..DocumentLinks::default()
        };
        for _ in 0..num_passages {
            let m = bound(next()?, 2)?;
            let mut mentions = Vec::with_capacity(m);
            for _ in 0..m {
                mentions.push((concept(next()?)?, next()?));
            }
            out.passage_mentions.push(mentions);
        }
        let num_doc_concepts = bound(next()?, 2)?;
        out.concepts.reserve(num_doc_concepts);
        out.ways.reserve(num_doc_concepts);
        for _ in 0..num_doc_concepts {
            out.concepts.push(concept(next()?)?);
            let w = bound(next()?, 1)?;
            let mut ways = Vec::with_capacity(w);
            for _ in 0..w {
                let k = bound(next()?, 1)?;
                let mut way = Vec::with_capacity(k);
                for _ in 0..k {
                    let p = next()?;
                    if p >= num_passages {
                        return Err(format!("passage {p} of {num_passages}"));
                    }
                    way.push(p);
                }
                ways.push(way);
            }
            out.ways.push(ways);
        }
        if next().is_ok() {
            return Err("words left over".into());
        }
        Ok(out)
    }
}

/// The file's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(DOCUMENT_HASH, DataType::FixedSizeBinary(32), false),
        Field::new(LINKS, DataType::Binary, false),
    ]))
}

/// Writes `document_links.arrow` into a run, [`BATCH_ROWS`] documents at a time: only one
/// batch is held in memory.
#[derive(Debug)]
pub struct DocumentLinksWriter {
    stream: IpcStream,
    schema: SchemaRef,
    hashes: Vec<u8>,
    bytes: Vec<u8>,
    offsets: Vec<i32>,
}

impl DocumentLinksWriter {
    /// Starts the file in the run `w` writes, for links found under `link_fingerprint`.
    ///
    /// # Errors
    /// Those of [`RunWriter::start_ipc`].
    pub fn create(w: &RunWriter, link_fingerprint: &[u8; 32]) -> Result<Self> {
        let base = schema();
        let meta = HashMap::from([(
            META_LINK_FINGERPRINT.to_owned(),
            blake3::Hash::from_bytes(*link_fingerprint)
                .to_hex()
                .to_string(),
        )]);
        let schema = Arc::new(base.as_ref().clone().with_metadata(meta));
        let stream = w.start_ipc(FILE, &schema)?;
        Ok(Self {
            stream,
            schema,
            hashes: Vec::with_capacity(BATCH_ROWS * 32),
            bytes: Vec::new(),
            offsets: vec![0],
        })
    }

    /// Appends the links of the document whose key is `hash`. The caller writes each key once.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when a batch would pass 2 GiB of links; those of
    /// [`IpcStream::write`] when a full batch is written.
    pub fn push(&mut self, hash: &DocumentHash, links: &DocumentLinks) -> Result<()> {
        self.hashes.extend_from_slice(hash);
        links.encode(&mut self.bytes);
        let end = i32::try_from(self.bytes.len())
            .map_err(|_| EngineError::Internal(format!("{FILE}: a batch of over 2 GiB")))?;
        self.offsets.push(end);
        if self.offsets.len() > BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.hashes.is_empty() {
            return Ok(());
        }
        let hashes =
            FixedSizeBinaryArray::try_new(32, std::mem::take(&mut self.hashes).into(), None)
                .map_err(|e| EngineError::Internal(format!("{FILE}: {e}")))?;
        let offsets = OffsetBuffer::new(std::mem::replace(&mut self.offsets, vec![0]).into());
        let links = BinaryArray::try_new(
            offsets,
            Buffer::from_vec(std::mem::take(&mut self.bytes)),
            None,
        )
        .map_err(|e| EngineError::Internal(format!("{FILE}: {e}")))?;
        let batch =
            RecordBatch::try_new(self.schema.clone(), vec![Arc::new(hashes), Arc::new(links)])
                .map_err(|e| EngineError::Internal(format!("{FILE}: {e}")))?;
        self.stream.write(&batch)?;
        self.hashes.reserve(BATCH_ROWS * 32);
        Ok(())
    }

    /// Writes the last batch and completes the file in `w`'s run (listed in its manifest).
    /// Returns the number of documents written.
    ///
    /// # Errors
    /// Those of [`IpcStream::write`] and [`RunWriter::finish_ipc`].
    pub fn finish(mut self, w: &RunWriter) -> Result<usize> {
        self.flush()?;
        let rows = self.stream.rows();
        w.finish_ipc(self.stream)?;
        Ok(rows)
    }
}

/// What a parent run's `document_links.arrow` offers a run that continues it.
#[derive(Debug, Clone)]
pub enum ParentLinks {
    /// The run has no such file (written before it existed).
    Absent,
    /// The file's links were found under another link fingerprint (another vocabulary, other
    /// linking parameters or another linker): none of them applies.
    OtherFingerprint,
    /// The links, by document key.
    Links(StoredDocumentLinks),
}

/// A run's `document_links.arrow`, mapped, with an index from document key to row.
#[derive(Debug, Clone)]
pub struct StoredDocumentLinks {
    batches: Vec<RecordBatch>,
    /// `(batch, row)` of each document key.
    index: HashMap<DocumentHash, (u32, u32)>,
    path: std::path::PathBuf,
}

impl StoredDocumentLinks {
    /// Maps the file of the run in `dir` (whose manifest lists `files`), checked against its
    /// manifest entry (size and BLAKE3) first, for a run linking under `link_fingerprint`:
    /// [`ParentLinks::Absent`] when the run has no such file, [`ParentLinks::OtherFingerprint`]
    /// (without building an index) when its schema metadata names another fingerprint.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] naming the file when it is missing, of another size or
    /// checksum, of another schema, without a fingerprint, holds nulls, lists a key twice (with
    /// its row) or has other rows than the manifest says; [`EngineError::Io`] when it cannot be
    /// read.
    pub fn read(
        dir: &Path,
        files: &[FileEntry],
        link_fingerprint: &[u8; 32],
    ) -> Result<ParentLinks> {
        let Some(entry) = files.iter().find(|f| f.name == FILE) else {
            return Ok(ParentLinks::Absent);
        };
        verify_file(dir, entry, Verify::Checksums)?;
        let path = dir.join(FILE);
        let buffer = map_file(&path)?;
        let (file_schema, batches) = decode_ipc_file_with_schema(&path, &buffer)?;
        let found = file_schema
            .metadata()
            .get(META_LINK_FINGERPRINT)
            .ok_or_else(|| EngineError::corrupt(&path, format!("no {META_LINK_FINGERPRINT}")))?;
        let ours = blake3::Hash::from_bytes(*link_fingerprint).to_hex();
        if found.as_str() != ours.as_str() {
            return Ok(ParentLinks::OtherFingerprint);
        }
        let index = index_by_key(
            &path,
            &batches,
            &schema(),
            DOCUMENT_HASH,
            "document key",
            entry.rows,
        )?;
        Ok(ParentLinks::Links(Self {
            batches,
            index,
            path,
        }))
    }

    /// The links of the document whose key is `hash`, if the run linked that document, their
    /// concepts checked against a vocabulary of `num_concepts`.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] naming the file and row when the stored words do not decode.
    pub fn get(&self, hash: &DocumentHash, num_concepts: usize) -> Option<Result<DocumentLinks>> {
        let &(b, r) = self.index.get(hash)?;
        let batch = self.batches.get(b as usize)?;
        // By name, not position: check_schema matches columns by name.
        let links = batch
            .column_by_name(LINKS)?
            .as_binary_opt::<i32>()?
            .value(r as usize);
        Some(DocumentLinks::decode(links, num_concepts).map_err(|why| {
            let row: usize = self.batches[..b as usize]
                .iter()
                .map(RecordBatch::num_rows)
                .sum::<usize>()
                + r as usize;
            EngineError::corrupt(&self.path, format!("row {row}: {why}"))
        }))
    }

    /// Documents in the file.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the file holds no document.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::EmbedderIdentity;
    use crate::format::{Layout, Manifest, new_run_id};

    fn sample(i: u32) -> DocumentLinks {
        DocumentLinks {
            passage_mentions: vec![vec![(i % 7, 2), (9, 1)], vec![], vec![(3, i)]],
            concepts: vec![3, 9, 11],
            ways: vec![vec![vec![2]], vec![vec![0], vec![]], vec![vec![0, 2]]],
        }
    }

    #[test]
    fn words_round_trip_and_bad_words_are_refused() {
        let links = sample(5);
        let mut bytes = Vec::new();
        links.encode(&mut bytes);
        assert_eq!(DocumentLinks::decode(&bytes, 12).unwrap(), links);
        let empty = DocumentLinks::default();
        let mut e = Vec::new();
        empty.encode(&mut e);
        assert_eq!(DocumentLinks::decode(&e, 0).unwrap(), empty);
        // A concept outside the vocabulary, a cut, a word too many, a passage out of range.
        assert!(
            DocumentLinks::decode(&bytes, 11)
                .unwrap_err()
                .contains("concept 11")
        );
        assert!(DocumentLinks::decode(&bytes[..bytes.len() - 4], 12).is_err());
        assert!(DocumentLinks::decode(&bytes[..bytes.len() - 1], 12).is_err());
        let mut more = bytes.clone();
        more.extend_from_slice(&0u32.to_le_bytes());
        assert!(
            DocumentLinks::decode(&more, 12)
                .unwrap_err()
                .contains("left over")
        );
        let mut far = DocumentLinks::default();
        far.passage_mentions.push(vec![]);
        far.concepts.push(0);
        far.ways.push(vec![vec![1]]);
        let mut f = Vec::new();
        far.encode(&mut f);
        assert!(
            DocumentLinks::decode(&f, 1)
                .unwrap_err()
                .contains("passage 1 of 1")
        );
        // A huge count does not allocate for it.
        let huge = [u32::MAX.to_le_bytes(), 0u32.to_le_bytes()].concat();
        assert!(DocumentLinks::decode(&huge, 1).is_err());
    }

    #[test]
    fn keys_separate_texts_and_fingerprints() {
        let fp = [7u8; 32];
        let k = document_key(&fp, "Title", &["a b", "c"]);
        assert_eq!(k, document_key(&fp, "Title", &["a b", "c"]));
        assert_ne!(k, document_key(&fp, "Title", &["a", "b c"]));
        assert_ne!(k, document_key(&fp, "Titlea b", &["c"]));
        assert_ne!(k, document_key(&fp, "Title", &["a b", "c", ""]));
        assert_ne!(k, document_key(&[8u8; 32], "Title", &["a b", "c"]));
    }

    #[test]
    fn round_trip_across_batches_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let run_id = new_run_id();
        let w = RunWriter::create(&layout, &run_id).unwrap();
        let fp = [1u8; 32];
        let mut t = DocumentLinksWriter::create(&w, &fp).unwrap();
        let n = BATCH_ROWS + 5;
        for i in 0..n {
            let key = document_key(&fp, &format!("document {i}"), &[]);
            t.push(&key, &sample(i as u32)).unwrap();
        }
        assert_eq!(t.finish(&w).unwrap(), n);
        let identity = EmbedderIdentity {
            model: "test".into(),
            dim: 3,
            normalized: true,
            fingerprint: "test".into(),
        };
        let m: Manifest = w
            .finish(
                serde_json::json!({}),
                identity,
                "fp".into(),
                serde_json::json!({}),
            )
            .unwrap();
        let run = layout.run_dir(&run_id);
        let ParentLinks::Links(read) = StoredDocumentLinks::read(&run, &m.files, &fp).unwrap()
        else {
            panic!("the links of the same fingerprint")
        };
        assert_eq!(read.len(), n);
        for i in [0, 1, BATCH_ROWS - 1, BATCH_ROWS, n - 1] {
            let key = document_key(&fp, &format!("document {i}"), &[]);
            assert_eq!(read.get(&key, 12).unwrap().unwrap(), sample(i as u32));
        }
        assert!(
            read.get(&document_key(&fp, "never linked", &[]), 12)
                .is_none()
        );
        // A vocabulary too small for the stored concepts names the file and row.
        let last = document_key(&fp, &format!("document {}", n - 1), &[]);
        let e = read.get(&last, 10).unwrap().unwrap_err().to_string();
        assert!(
            e.contains(FILE) && e.contains(&format!("row {}", n - 1)),
            "{e}"
        );
        assert!(matches!(
            StoredDocumentLinks::read(&run, &[], &fp).unwrap(),
            ParentLinks::Absent
        ));
        // Links of another vocabulary or other rules: said so, without an index.
        assert!(matches!(
            StoredDocumentLinks::read(&run, &m.files, &[2u8; 32]).unwrap(),
            ParentLinks::OtherFingerprint
        ));
        // A flipped byte is caught by the manifest's checksum, naming the file.
        let path = run.join(FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let e = StoredDocumentLinks::read(&run, &m.files, &fp).unwrap_err();
        assert!(e.to_string().contains(FILE), "{e}");
    }
}
