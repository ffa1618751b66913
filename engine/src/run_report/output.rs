//! Writing the page: a temporary file next to the destination, renamed over it once complete,
//! so a reader (a web server, a person reloading) never sees half a page, and a failed build
//! leaves the previous page as it was.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Report;
use crate::error::{EngineError, Result};

/// An HTML page being written: created (and so checked writable) before the report is built,
/// completed by [`write`](Self::write). Dropped unwritten, it removes its temporary file.
#[derive(Debug)]
pub struct HtmlOutput {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

impl HtmlOutput {
    /// Creates the temporary file for a page at `path`.
    ///
    /// # Errors
    /// [`EngineError::Output`] naming `path` when it is a folder or its folder cannot be
    /// written (missing, read-only, not permitted).
    pub fn create(path: &Path) -> Result<Self> {
        let err = |source| EngineError::Output {
            path: path.to_owned(),
            source: std::sync::Arc::new(source),
        };
        if path.is_dir() {
            return Err(err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a folder; give the path of the .html file to write",
            )));
        }
        let name = path
            .file_name()
            .ok_or_else(|| {
                err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "has no file name",
                ))
            })?
            .to_string_lossy()
            .into_owned();
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = folder.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = File::create(&tmp).map_err(err)?;
        Ok(Self {
            path: path.to_owned(),
            tmp,
            file: Some(file),
        })
    }

    /// Writes `report`'s page and renames it into place. Returns the path and the page's
    /// size in bytes.
    ///
    /// # Errors
    /// [`EngineError::Output`] naming the destination when writing or renaming fails.
    pub fn write(mut self, report: &Report) -> Result<(PathBuf, u64)> {
        let page = report.to_html();
        let err = |source| EngineError::Output {
            path: self.path.clone(),
            source: std::sync::Arc::new(source),
        };
        let mut file = self
            .file
            .take()
            .ok_or_else(|| EngineError::Internal("page written twice".into()))?;
        file.write_all(page.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(err)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(err)?;
        Ok((self.path.clone(), page.len() as u64))
    }
}

impl Drop for HtmlOutput {
    fn drop(&mut self) {
        // Unwritten or failed: leave nothing behind (a completed page was renamed away).
        let _ = std::fs::remove_file(&self.tmp);
    }
}
