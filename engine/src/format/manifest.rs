//! `manifest.json`: what a run is and which files make it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::embed::EmbedderIdentity;
use crate::error::{EngineError, Result};

/// Manifest file name inside a run folder.
pub const MANIFEST_FILE: &str = "manifest.json";
/// File holding the BLAKE3 digest (lower-case hex and a newline) of `manifest.json`'s bytes.
/// Written with the manifest; catches a damaged manifest that is still valid JSON. Runs
/// written before it existed have none and are read without that check.
pub const MANIFEST_CHECKSUM_FILE: &str = "manifest.blake3";

/// The manifest of one run: `runs/<run_id>/manifest.json`.
///
/// Written last, after every data file is complete and synced; the engine refuses a run whose
/// files do not match it (missing file, other size, and with [`verify`](crate::format::verify_run)
/// other checksum).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Snapshot format version; see [`FORMAT_VERSION`](super::FORMAT_VERSION).
    pub format_version: u32,
    /// Sortable run id (UUIDv7, lower-case hyphenated).
    pub run_id: String,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// Parameters of the run (linking, graph, detection), as the pipeline recorded them.
    pub parameters: serde_json::Value,
    /// Identity of the embedder of `report_embeddings`.
    pub embedder: EmbedderIdentity,
    /// BLAKE3 digest (hex) over the inputs (documents, vocabulary, visibility exclusions).
    pub input_fingerprint: String,
    /// Run statistics (counts per phase, detection statistics, seconds per phase).
    pub stats: serde_json::Value,
    /// Leaf communities larger than the run's `max_cluster_size` (detection parameter): ones
    /// that Leiden could not split (on its induced subgraph it finds a single community, as on
    /// a star) and ones at the last level the hierarchy allows. The run writer copies it from
    /// the `oversized_leaves` entry of `stats`; `None` for runs written before it was recorded
    /// (the field is then absent from `manifest.json`, and such manifests still parse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oversized_leaves: Option<u64>,
    /// The run whose communities this run's continue (see the `community_lineage` table);
    /// absent for a root's first run and for runs written before lineage was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Smallest community id that no run on this root has used (the next new community's
    /// id); absent for runs written before it was recorded, whose ids are their row numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_community_id: Option<u32>,
    /// Every file of the run except the manifest itself, sorted by name.
    pub files: Vec<FileEntry>,
}

/// One file of a run as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// File name inside the run folder.
    pub name: String,
    /// Number of rows of the table it holds.
    pub rows: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// BLAKE3 digest of the file's bytes, lower-case hex.
    pub blake3: String,
}

impl Manifest {
    /// Reads and parses `dir/manifest.json`, checks it against `dir/manifest.blake3` (which
    /// must exist), and checks its format version.
    ///
    /// # Errors
    /// [`EngineError::Io`] when it cannot be read, [`EngineError::Corrupt`] when it is not a
    /// manifest, its checksum differs or `manifest.blake3` is missing,
    /// [`EngineError::UnsupportedFormat`] for an unknown
    /// `format_version`.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = std::fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
        let sum_path = dir.join(MANIFEST_CHECKSUM_FILE);
        match std::fs::read_to_string(&sum_path) {
            Ok(want) => {
                let want = want.trim();
                // A checksum file that holds no checksum is the damaged file, not the manifest.
                if want.len() != 64 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(EngineError::corrupt(
                        &sum_path,
                        format!(
                            "holds {}, not a BLAKE3 checksum (64 hex digits)",
                            super::quoted_excerpt(want)
                        ),
                    ));
                }
                let found = blake3::hash(&bytes).to_hex();
                if found.as_str() != want {
                    return Err(EngineError::corrupt(
                        &path,
                        format!("checksum is {found}, {MANIFEST_CHECKSUM_FILE} says {want:?}"),
                    ));
                }
            }
            // Every run, the golden run of format 1 included, is written with it: a run without
            // it has lost it, and then nothing would tell an edited manifest from a good one.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(EngineError::corrupt(
                    &sum_path,
                    format!("missing, so {MANIFEST_FILE} cannot be checked"),
                ));
            }
            Err(e) => return Err(EngineError::io(sum_path, e)),
        }
        Self::parse(&bytes).map_err(|e| match e {
            EngineError::Corrupt { reason, source, .. } => EngineError::Corrupt {
                path: path.clone(),
                reason,
                source,
            },
            other => other,
        })
    }

    /// Parses manifest bytes and checks the format version.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] (with an empty path) when the bytes are not a manifest,
    /// [`EngineError::UnsupportedFormat`] for an unknown `format_version`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        // Look at the version first, so that a future format gets the precise error.
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| EngineError::corrupt_because("", "manifest is not JSON", e))?;
        let found = value
            .get("format_version")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| EngineError::corrupt("", "manifest has no integer format_version"))?;
        let found = u32::try_from(found).map_err(|_| {
            EngineError::corrupt("", format!("format_version {found} is out of range"))
        })?;
        if !super::SUPPORTED_FORMAT_VERSIONS.contains(&found) {
            return Err(EngineError::UnsupportedFormat {
                found,
                supported: super::SUPPORTED_FORMAT_VERSIONS,
            });
        }
        let manifest: Self = serde_json::from_value(value)
            .map_err(|e| EngineError::corrupt_because("", "manifest does not parse", e))?;
        if manifest.embedder.dim == 0 {
            return Err(EngineError::corrupt("", "embedder.dim is 0"));
        }
        Ok(manifest)
    }

    /// The entry of file `name`, if the run has it.
    pub fn file(&self, name: &str) -> Option<&FileEntry> {
        self.files.iter().find(|f| f.name == name)
    }
}
