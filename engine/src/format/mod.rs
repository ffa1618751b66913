//! The on-disk contract shared by the pipeline (writer) and the engine (reader).
//!
//! A *snapshot root* holds runs; a *run* is a write-once folder of Parquet tables (the contract
//! data engineers read with polars, pandas, pyarrow or DuckDB), an uncompressed Arrow IPC copy of
//! the report embeddings (mapped by the engine), and `manifest.json`, which lists every file
//! with rows, bytes and BLAKE3 checksum. See [`tables`] for every table's columns (one module
//! per table, with its writer and readers), [`mapped`] for the column files the engine maps,
//! [`layout::Layout`] for the folder layout, and [`normalize`] for the one rule by which stored
//! text is normalised and terms are matched.
//!
//! Writing: [`writer::RunWriter::create`] → `write_parquet` / `write_ipc` → `finish` (manifest,
//! fsync, rename of the staging folder) → [`layout::Layout::write_latest`] (atomic swap).

pub mod document_links;
pub mod layout;
pub mod manifest;
pub mod mapped;
pub mod normalize;
pub mod previous;
pub mod reader;
pub mod staged;
pub mod tables;
pub mod text_embeddings;
pub mod writer;

use std::path::Path;

pub use layout::{Layout, new_run_id};
pub use manifest::{FileEntry, Manifest};
pub use tables::{
    BuiltTextIndex, PendingTextIndex, RunColumns, RunData, RunLookups, TextIndexJob, passage_id,
    push_passage_id, write_run, write_run_columns, write_run_columns_into,
};
pub use writer::RunWriter;

use crate::error::{EngineError, Result};

/// The snapshot format this build writes. Any change of a table's columns or types bumps it.
pub const FORMAT_VERSION: u32 = 2;

/// The snapshot formats this build reads.
pub const SUPPORTED_FORMAT_VERSIONS: &[u32] = &[1, 2];

/// Key of the run id in every file's key-value metadata.
pub const META_RUN_ID: &str = "run_id";
/// Key of the format version in every file's key-value metadata.
pub const META_FORMAT_VERSION: &str = "format_version";

/// How thoroughly [`verify_run`] checks a run.
///
/// The default is `Checksums`: a bit flip keeps a file's size, and not every flip makes a
/// Parquet page undecodable, so only the checksum catches it. See `benches/RESULTS.md` for
/// what each level costs when opening a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verify {
    /// Every listed file exists with the listed size (cheap: metadata only).
    Sizes,
    /// As `Sizes`, and every file's BLAKE3 checksum matches (reads every byte).
    #[default]
    Checksums,
}

/// Checks the files of the run in `dir` against its manifest.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the first file that is missing, of another size, or (with
/// [`Verify::Checksums`]) of another checksum; [`EngineError::Io`] when a file cannot be read
/// (permission denied, for instance).
pub fn verify_run(dir: &Path, manifest: &Manifest, level: Verify) -> Result<()> {
    for entry in &manifest.files {
        verify_file(dir, entry, level)?;
    }
    Ok(())
}

/// Checks one file of the run in `dir` against its manifest entry, as [`verify_run`] does.
///
/// # Errors
/// As [`verify_run`], for that file.
pub fn verify_file(dir: &Path, entry: &FileEntry, level: Verify) -> Result<()> {
    {
        let path = dir.join(&entry.name);
        // A missing file is a damaged run; any other refusal (permission denied, say) is the
        // operating system's, not the run's.
        let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                EngineError::corrupt_because(&path, "listed in the manifest but missing", e)
            }
            _ => EngineError::io(&path, e),
        })?;
        if meta.len() != entry.bytes {
            return Err(EngineError::corrupt(
                &path,
                format!(
                    "size is {} bytes, the manifest says {}",
                    meta.len(),
                    entry.bytes
                ),
            ));
        }
        if level == Verify::Checksums {
            let mut hasher = blake3::Hasher::new();
            hasher
                .update_reader(std::fs::File::open(&path).map_err(|e| EngineError::io(&path, e))?)
                .map_err(|e| EngineError::io(&path, e))?;
            let found = hasher.finalize().to_hex().to_string();
            if found != entry.blake3 {
                return Err(EngineError::corrupt(
                    &path,
                    format!("checksum is {found}, the manifest says {}", entry.blake3),
                ));
            }
        }
    }
    Ok(())
}

/// A file's content as an error message quotes it: at most 64 characters, debug-quoted, with
/// `…` when cut, so that a control file overwritten by a large one does not make an error
/// message of its size.
pub(crate) fn quoted_excerpt(text: &str) -> String {
    let shown: String = text.chars().take(64).collect();
    let more = if shown.len() < text.len() { "…" } else { "" };
    format!("{shown:?}{more}")
}
