//! `text_embeddings.arrow`: the vector of every distinct text a run embedded (its communities'
//! report texts, its documents' titles and passages), keyed by the BLAKE3 hash of the text, so
//! that the next run on the root embeds only texts it has not seen (a content-addressed cache
//! that travels with the run and is verified by its manifest like every other file).
//!
//! Schema, writer and reader of the file live here together.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `text_blake3` | fixed-size binary (32) | BLAKE3 of the text's UTF-8 bytes, as the run stored it |
//! | `embedding` | fixed-size list of float32 (the embedder's dim) | its vector, by the run's embedder |
//!
//! Rows are distinct by `text_blake3`, in the order the run first embedded them (report texts
//! in community order, titles in document order, then passages in row order), written in
//! record batches of
//! [`BATCH_ROWS`]. The file is uncompressed Arrow IPC, mapped (not read) by the next run. The
//! embedder is the manifest's: a run with another embedder identity reuses nothing.
//!
//! Cost: `rows × (32 + 4 · dim)` bytes, about 1.6 KB per text at 384 dimensions (at 10⁵
//! documents of the bench corpus, 0.30 M distinct texts and 0.47 GB). Document vectors are
//! sums of these, so they are not stored again here.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeBinaryArray, FixedSizeListArray, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::manifest::FileEntry;
use super::reader::index_by_key;
use super::writer::{IpcStream, RunWriter};
use super::{Verify, verify_file};
use crate::error::{EngineError, Result};
use crate::store::mmap::{decode_ipc_file, map_file};

/// File name inside the run folder.
pub const FILE: &str = "text_embeddings.arrow";
/// BLAKE3 of the text (fixed-size binary of 32 bytes).
pub const TEXT_HASH: &str = "text_blake3";
/// The text's vector (fixed-size list of float32, length = the embedder's dim).
pub const EMBEDDING: &str = "embedding";
/// Rows per record batch of the file.
pub const BATCH_ROWS: usize = 32 * 1024;

/// BLAKE3 of a text's UTF-8 bytes: the key of its vector.
pub type TextHash = [u8; 32];

/// The key of `text`'s vector.
pub fn text_hash(text: &str) -> TextHash {
    *blake3::hash(text.as_bytes()).as_bytes()
}

/// The file's schema for vectors of `dim` dimensions.
///
/// # Panics
/// When `dim` exceeds `i32::MAX` (no embedder has such vectors).
pub fn schema(dim: usize) -> SchemaRef {
    let dim = i32::try_from(dim).expect("embedding dimension fits in i32");
    Arc::new(Schema::new(vec![
        Field::new(TEXT_HASH, DataType::FixedSizeBinary(32), false),
        Field::new(
            EMBEDDING,
            DataType::FixedSizeList(super::tables::report_embeddings::item_field(), dim),
            false,
        ),
    ]))
}

/// Writes `text_embeddings.arrow` into a run, [`BATCH_ROWS`] vectors at a time: only one
/// batch is held in memory.
#[derive(Debug)]
pub struct TextEmbeddingsWriter {
    stream: IpcStream,
    schema: SchemaRef,
    dim: usize,
    hashes: Vec<u8>,
    values: Vec<f32>,
}

impl TextEmbeddingsWriter {
    /// Starts the file in the run `w` writes, for vectors of `dim` dimensions.
    ///
    /// # Errors
    /// Those of [`RunWriter::start_ipc`].
    pub fn create(w: &RunWriter, dim: usize) -> Result<Self> {
        let schema = schema(dim);
        let stream = w.start_ipc(FILE, &schema)?;
        Ok(Self {
            stream,
            schema,
            dim,
            hashes: Vec::with_capacity(BATCH_ROWS * 32),
            values: Vec::with_capacity(BATCH_ROWS * dim),
        })
    }

    /// Appends the vector of the text whose hash is `hash`. The caller writes each hash once.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when `vector` is not `dim` long; those of
    /// [`IpcStream::write`] when a full batch is written.
    pub fn push(&mut self, hash: &TextHash, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dim {
            return Err(EngineError::Internal(format!(
                "{FILE}: a vector of {} values for dimension {}",
                vector.len(),
                self.dim
            )));
        }
        self.hashes.extend_from_slice(hash);
        self.values.extend_from_slice(vector);
        if self.hashes.len() == BATCH_ROWS * 32 {
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
        let values = Float32Array::from(std::mem::take(&mut self.values));
        let dim = i32::try_from(self.dim)
            .map_err(|_| EngineError::Internal(format!("{FILE}: dimension {}", self.dim)))?;
        let list = FixedSizeListArray::try_new(
            super::tables::report_embeddings::item_field(),
            dim,
            Arc::new(values),
            None,
        )
        .map_err(|e| EngineError::Internal(format!("{FILE}: {e}")))?;
        let batch =
            RecordBatch::try_new(self.schema.clone(), vec![Arc::new(hashes), Arc::new(list)])
                .map_err(|e| EngineError::Internal(format!("{FILE}: {e}")))?;
        self.stream.write(&batch)?;
        self.hashes.reserve(BATCH_ROWS * 32);
        self.values.reserve(BATCH_ROWS * self.dim);
        Ok(())
    }

    /// Writes the last batch and completes the file in `w`'s run (listed in its manifest).
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

/// A run's `text_embeddings.arrow`, mapped, with an index from text hash to row.
#[derive(Debug, Clone)]
pub struct TextEmbeddings {
    batches: Vec<RecordBatch>,
    /// `(batch, row)` of each text hash.
    index: HashMap<TextHash, (u32, u32)>,
    dim: usize,
}

impl TextEmbeddings {
    /// Maps the file of the run in `dir` (whose manifest lists `files`), checked against its
    /// manifest entry (size and BLAKE3) first, for vectors of `dim` dimensions. `Ok(None)` when
    /// the run has no such file (runs written before it existed).
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] naming the file when it is missing, of another size or checksum,
    /// of another schema or dimension, holds nulls or lists a text hash twice (with its row);
    /// [`EngineError::Io`] when it cannot be read.
    pub fn read(dir: &Path, files: &[FileEntry], dim: usize) -> Result<Option<Self>> {
        let Some(entry) = files.iter().find(|f| f.name == FILE) else {
            return Ok(None);
        };
        verify_file(dir, entry, Verify::Checksums)?;
        let path = dir.join(FILE);
        let buffer = map_file(&path)?;
        let batches = decode_ipc_file(&path, &buffer)?;
        let index = index_by_key(
            &path,
            &batches,
            &schema(dim),
            TEXT_HASH,
            "text hash",
            entry.rows,
        )?;
        Ok(Some(Self {
            batches,
            index,
            dim,
        }))
    }

    /// The vector of the text whose hash is `hash`, if the run embedded that text.
    pub fn get(&self, hash: &TextHash) -> Option<&[f32]> {
        let &(b, r) = self.index.get(hash)?;
        // By name, not position: check_schema matches columns by name.
        let list = self
            .batches
            .get(b as usize)?
            .column_by_name(EMBEDDING)?
            .as_fixed_size_list_opt()?;
        let values = list.values().as_primitive::<Float32Type>().values();
        let start = (list.offset() + r as usize) * self.dim;
        values.get(start..start + self.dim)
    }

    /// Texts in the file.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the file holds no text.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::EmbedderIdentity;
    use crate::format::{Layout, Manifest, new_run_id};

    fn identity(dim: usize) -> EmbedderIdentity {
        EmbedderIdentity {
            model: "test".into(),
            dim,
            normalized: true,
            fingerprint: "test".into(),
        }
    }

    #[test]
    fn round_trip_across_batches_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let run_id = new_run_id();
        let w = RunWriter::create(&layout, &run_id).unwrap();
        let dim = 3;
        let mut t = TextEmbeddingsWriter::create(&w, dim).unwrap();
        let n = BATCH_ROWS + 5;
        for i in 0..n {
            let v = [i as f32, -(i as f32), 0.5];
            t.push(&text_hash(&format!("text {i}")), &v).unwrap();
        }
        assert!(t.push(&text_hash("short"), &[1.0]).is_err());
        assert_eq!(t.finish(&w).unwrap(), n);
        let m: Manifest = w
            .finish(
                serde_json::json!({}),
                identity(dim),
                "fp".into(),
                serde_json::json!({}),
            )
            .unwrap();
        let run = layout.run_dir(&run_id);
        let read = TextEmbeddings::read(&run, &m.files, dim).unwrap().unwrap();
        assert_eq!(read.len(), n);
        for i in [0, 1, BATCH_ROWS - 1, BATCH_ROWS, n - 1] {
            let v = read.get(&text_hash(&format!("text {i}"))).unwrap();
            assert_eq!(v, &[i as f32, -(i as f32), 0.5]);
        }
        assert!(read.get(&text_hash("never embedded")).is_none());
        // Another dimension is refused, and a run without the file has nothing to reuse.
        assert!(TextEmbeddings::read(&run, &m.files, 4).is_err());
        assert!(TextEmbeddings::read(&run, &[], dim).unwrap().is_none());
        // A flipped byte is caught by the manifest's checksum, naming the file.
        let path = run.join(FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let e = TextEmbeddings::read(&run, &m.files, dim).unwrap_err();
        assert!(e.to_string().contains(FILE), "{e}");
    }
}
