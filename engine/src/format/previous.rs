//! What a published run hands to the next run on the same root: its entities (by concept id)
//! and edges, and its communities with their members, read back from the
//! run's tables so that the next run can warm-start detection and keep community ids.

use std::path::{Path, PathBuf};

use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch, UInt32Array};

use super::manifest::{FileEntry, Manifest};
use super::reader::{column_no_nulls, read_parquet};
use super::tables::{communities, entities, membership, relationships, report_embeddings, reports};
use super::text_embeddings::TextEmbeddings;
use super::{Verify, verify_file};
use crate::embed::EmbedderIdentity;
use crate::error::{EngineError, Result};

/// A published run's entities and communities.
#[derive(Debug, Clone)]
pub struct PreviousRun {
    /// Its run id.
    pub run_id: String,
    /// Concept id of each entity (index = `entity_id`).
    pub entity_concepts: Vec<String>,
    /// The run's edges `(source, target, weight)` over entity ids, `source < target`, sorted.
    pub edges: Vec<(u32, u32, f64)>,
    /// Public id of each community, strictly ascending (row order of `communities.parquet`).
    pub community_ids: Vec<u32>,
    /// Level of each community (same rows).
    pub community_level: Vec<u32>,
    /// `(level, entity_id, community row)` of every membership row, in file order (sorted by
    /// level, then entity).
    pub membership: Vec<(u32, u32, u32)>,
    /// The detection parameters the run recorded (`parameters.detection` of its manifest),
    /// `Null` when absent.
    pub detection: serde_json::Value,
    /// The embedder of the run's vectors.
    pub embedder: EmbedderIdentity,
    /// What the run's community vectors were made of (`parameters.community_vectors` of its
    /// manifest), `Null` when absent.
    pub community_vectors: serde_json::Value,
    /// BLAKE3 of each community's embedded report text (`reports.parquet`'s `full_content`),
    /// by community row (empty until [`read_vectors`](Self::read_vectors)).
    pub report_text_hashes: Vec<[u8; 32]>,
    /// The run's community vectors (`report_embeddings.arrow`, mapped, not copied; empty
    /// until [`read_vectors`](Self::read_vectors)).
    pub report_vectors: RecordBatch,
    /// Community row `c`'s vectors are rows `report_offsets[c]..report_offsets[c + 1]`
    /// (empty until [`read_vectors`](Self::read_vectors)).
    pub report_offsets: Vec<u32>,
    /// The vectors of every text the run embedded, by text hash (`None`
    /// until [`read_text_embeddings`](Self::read_text_embeddings), and for runs without
    /// that file).
    pub text_embeddings: Option<TextEmbeddings>,
    /// The run's folder.
    pub dir: PathBuf,
    /// The run's files as its manifest lists them.
    pub files: Vec<FileEntry>,
    /// Smallest community id that no run on the root had used: the manifest's
    /// `next_community_id`, or for runs written before it was recorded the largest id + 1.
    pub next_community_id: u32,
}

impl PreviousRun {
    /// Reads what detection continues from in the run in `dir`: its manifest (checked against
    /// `manifest.blake3`), then `entities.parquet`, `relationships.parquet`,
    /// `communities.parquet` and `membership.parquet`, each checked against the manifest's
    /// size and BLAKE3 first. The community vectors are read by
    /// [`read_vectors`](Self::read_vectors).
    ///
    /// # Errors
    /// [`EngineError::Io`] when a file cannot be read; [`EngineError::Corrupt`] naming the
    /// file when it is missing, not listed, of another size or checksum, or damaged (and the
    /// row: ids not strictly ascending, a membership row naming an entity or community the run
    /// lacks).
    pub fn read(dir: &Path) -> Result<Self> {
        let manifest = Manifest::read(dir)?;
        let run_id = Some(manifest.run_id.as_str());
        for name in [
            entities::FILE,
            relationships::FILE,
            communities::FILE,
            membership::FILE,
        ] {
            verified(dir, &manifest.files, name)?;
        }
        let entity_concepts = entities::read_concept_ids(dir, run_id)?;
        let edges = relationships::read(dir, run_id, entity_concepts.len())?;
        let (community_ids, community_level) = communities::read_ids_and_levels(dir, run_id)?;
        let rows = membership::read_rows(dir, run_id, &community_ids, entity_concepts.len())?;
        let next_community_id = manifest
            .next_community_id
            .unwrap_or_else(|| community_ids.last().map_or(0, |&c| c.saturating_add(1)));
        Ok(PreviousRun {
            detection: manifest
                .parameters
                .get("detection")
                .cloned()
                .unwrap_or_default(),
            community_vectors: manifest
                .parameters
                .get("community_vectors")
                .cloned()
                .unwrap_or_default(),
            embedder: manifest.embedder.clone(),
            report_text_hashes: Vec::new(),
            report_vectors: RecordBatch::new_empty(report_embeddings::schema(
                manifest.embedder.dim,
            )),
            report_offsets: Vec::new(),
            text_embeddings: None,
            dir: dir.to_owned(),
            files: manifest.files.clone(),
            run_id: manifest.run_id,
            entity_concepts,
            edges,
            community_ids,
            community_level,
            membership: rows,
            next_community_id,
        })
    }
}

impl PreviousRun {
    /// Reads the community vectors of the run (`reports.parquet`'s embedded texts, hashed, and
    /// `report_embeddings.arrow`, mapped), each file checked against the manifest's size and
    /// BLAKE3 first, so that a continuing run can take the vectors of unchanged texts.
    ///
    /// # Errors
    /// As [`read`](Self::read), for those two files; then nothing is reused.
    pub fn read_vectors(&mut self) -> Result<()> {
        let dir = self.dir.clone();
        let run_id = Some(self.run_id.as_str());
        verified(&dir, &self.files, reports::FILE)?;
        verified(&dir, &self.files, report_embeddings::IPC_FILE)?;
        let hashes = reports::read_text_hashes(&dir, run_id, &self.community_ids)?;
        let path = dir.join(report_embeddings::IPC_FILE);
        let vectors = super::tables::map_embeddings(
            &path,
            &report_embeddings::schema(self.embedder.dim),
            None,
        )?;
        let offsets = report_embeddings::offsets(&path, &vectors, &self.community_ids)?;
        self.report_text_hashes = hashes;
        self.report_vectors = vectors;
        self.report_offsets = offsets;
        Ok(())
    }

    /// Maps the run's [`text_embeddings`](super::text_embeddings) file (checked against the
    /// manifest first), so that a continuing run embeds only texts the run did not. A run
    /// without that file leaves [`text_embeddings`](Self::text_embeddings) `None`.
    ///
    /// # Errors
    /// Those of [`TextEmbeddings::read`]; then nothing is reused.
    pub fn read_text_embeddings(&mut self) -> Result<()> {
        self.text_embeddings = TextEmbeddings::read(&self.dir, &self.files, self.embedder.dim)?;
        Ok(())
    }

    /// The first `n` vectors of community row `row` (its report-text vectors, by the run's
    /// recipe), row-major, or `None` when it has fewer.
    pub fn community_vectors_of(&self, row: usize, n: usize) -> Option<&[f32]> {
        let start = *self.report_offsets.get(row)? as usize;
        let end = *self.report_offsets.get(row + 1)? as usize;
        if end - start < n {
            return None;
        }
        let list = self
            .report_vectors
            .column(1)
            .as_any()
            .downcast_ref::<FixedSizeListArray>()?;
        let dim = list.value_length() as usize;
        let values = list.values().as_any().downcast_ref::<Float32Array>()?;
        let offset = list.offset();
        values
            .values()
            .get((offset + start) * dim..(offset + start + n) * dim)
    }

    /// Drops what only detection needed (edges, membership).
    pub fn keep_only_vectors(&mut self) {
        self.edges = Vec::new();
        self.membership = Vec::new();
    }
}

/// Checks the file `name` of the run in `dir` against its entry in `files` (size and BLAKE3).
fn verified(dir: &Path, files: &[FileEntry], name: &str) -> Result<()> {
    let entry = files
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| EngineError::corrupt(dir.join(name), "not listed in the run's manifest"))?;
    verify_file(dir, entry, Verify::Checksums)
}

/// The next community id after those of `communities.parquet` in the run folder `dir`, read
/// without its manifest (best effort, for a run whose manifest cannot be read: its ids must not
/// be used again); `None` when the table cannot be read.
pub fn next_id_on_disk(dir: &Path) -> Option<u32> {
    let path = dir.join(communities::FILE);
    let b = read_parquet(&path, &communities::schema(), None).ok()?;
    let ids = column_no_nulls::<UInt32Array>(&b, communities::COMMUNITY_ID, &path).ok()?;
    Some(
        ids.values()
            .iter()
            .max()
            .map_or(0, |&m| m.saturating_add(1)),
    )
}
