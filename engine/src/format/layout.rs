//! Where things live under a snapshot root, and the atomic `LATEST` pointer.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{EngineError, Result};

/// Name of the pointer file at the root.
pub const LATEST_FILE: &str = "LATEST";
/// Folder of runs at the root.
pub const RUNS_DIR: &str = "runs";
/// Live visibility store at the root (outside `runs/`: it outlives every run).
pub const VISIBILITY_FILE: &str = "visibility.sqlite";
/// Prefix of a run folder that is still being written; never served, removed by `gc`.
pub const STAGING_PREFIX: &str = ".staging-";
/// File of the root's run lock (see [`Layout::run_lock_path`]).
pub const RUN_LOCK_FILE: &str = "run.lock";

/// Paths of one snapshot root.
///
/// ```text
/// <root>/LATEST                      run id of the newest complete run
/// <root>/runs/<run_id>/              one complete run (write-once)
/// <root>/runs/.staging-<run_id>/     a run being written (never served)
/// <root>/visibility.sqlite           live visibility flags
/// <root>/run.lock                    held by the one run in progress (process id inside)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// A layout rooted at `root` (nothing is touched on disk).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/LATEST`.
    pub fn latest_path(&self) -> PathBuf {
        self.root.join(LATEST_FILE)
    }

    /// `<root>/runs`.
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join(RUNS_DIR)
    }

    /// `<root>/runs/<run_id>`.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(run_id)
    }

    /// `<root>/runs/.staging-<run_id>`.
    pub fn staging_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{STAGING_PREFIX}{run_id}"))
    }

    /// `<root>/run.lock`: a run holds an exclusive advisory lock on it (`flock`) for as long as
    /// it runs, with its process id written inside. The operating system releases the lock
    /// when the process ends, however it ends, so a killed run leaves no lock to clear.
    pub fn run_lock_path(&self) -> PathBuf {
        self.root.join(RUN_LOCK_FILE)
    }

    /// `<root>/visibility.sqlite`.
    pub fn visibility_path(&self) -> PathBuf {
        self.root.join(VISIBILITY_FILE)
    }

    /// The run id `LATEST` names, or `None` when there is no `LATEST`.
    ///
    /// # Errors
    /// [`EngineError::Io`] when it exists but cannot be read (permissions, a failing disk);
    /// [`EngineError::Corrupt`] when it is a folder, not UTF-8, or its content is not a run id.
    pub fn read_latest(&self) -> Result<Option<String>> {
        let path = self.latest_path();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            // A folder named LATEST is a damaged root, not an unreadable file.
            Err(_) if path.is_dir() => {
                return Err(EngineError::corrupt(&path, "is a folder, not a file"));
            }
            Err(e) => return Err(EngineError::io(path, e)),
        };
        let Ok(s) = std::str::from_utf8(&bytes) else {
            return Err(EngineError::corrupt(&path, "is not UTF-8 text"));
        };
        let id = s.trim();
        if !is_valid_run_id(id) {
            return Err(EngineError::corrupt(
                &path,
                format!("{} is not a run id", super::quoted_excerpt(id)),
            ));
        }
        Ok(Some(id.to_owned()))
    }

    /// Points `LATEST` at `run_id` atomically: write a temporary file in the root, sync it,
    /// rename it over `LATEST`, sync the root folder. A reader sees the old or the new id, never
    /// a partial one.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] when `run_id` is not a run id or its folder is missing;
    /// [`EngineError::Io`] on any file-system failure (then `LATEST` is unchanged).
    pub fn write_latest(&self, run_id: &str) -> Result<()> {
        if !is_valid_run_id(run_id) || !self.run_dir(run_id).is_dir() {
            return Err(EngineError::InvalidArgument {
                field: "run_id",
                value: run_id.to_owned(),
                expected: "the id of a complete run under runs/",
            });
        }
        let tmp = self
            .root
            .join(format!(".{LATEST_FILE}.tmp-{}", std::process::id()));
        {
            let mut f = File::create(&tmp).map_err(|e| EngineError::io(&tmp, e))?;
            f.write_all(format!("{run_id}\n").as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|e| EngineError::io(&tmp, e))?;
        }
        super::writer::fault_point("latest-tmp");
        let latest = self.latest_path();
        fs::rename(&tmp, &latest).map_err(|e| EngineError::io(&latest, e))?;
        sync_dir(&self.root)?;
        super::writer::fault_point("latest");
        Ok(())
    }

    /// Ids of the complete runs under `runs/` (staging folders excluded), oldest first.
    ///
    /// # Errors
    /// [`EngineError::Io`] when `runs/` exists but cannot be listed.
    pub fn list_runs(&self) -> Result<Vec<String>> {
        let dir = self.runs_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(EngineError::io(dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| EngineError::io(&dir, e))?;
            if let Some(name) = entry.file_name().to_str()
                && is_valid_run_id(name)
                && entry.path().is_dir()
            {
                ids.push(name.to_owned());
            }
        }
        ids.sort();
        Ok(ids)
    }
}

impl Layout {
    /// Removes complete runs beyond the newest `keep`, never the run `LATEST` names. Returns
    /// the removed run ids, oldest first. An engine that still maps a removed run keeps
    /// answering from it (its open files and maps outlive the unlink).
    ///
    /// Also removes staging folders (`runs/.staging-<run_id>`, left by killed runs) whose run
    /// started before the run `LATEST` names: a run that old cannot become `LATEST` any more
    /// without a newer run overtaking it. A still-running job of that age fails cleanly at its
    /// final rename and publishes nothing.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] for `keep = 0`; [`EngineError::Io`] when a folder cannot
    /// be listed or removed (runs removed before the failure stay removed).
    pub fn gc(&self, keep: usize) -> Result<Vec<String>> {
        if keep == 0 {
            return Err(EngineError::InvalidArgument {
                field: "keep",
                value: "0".into(),
                expected: "an integer ≥ 1 (the run LATEST names is always kept)",
            });
        }
        let latest = self.read_latest()?;
        let runs = self.list_runs()?;
        let cut = runs.len().saturating_sub(keep);
        let mut removed = Vec::new();
        for id in &runs[..cut] {
            if latest.as_deref() == Some(id.as_str()) {
                continue;
            }
            let dir = self.run_dir(id);
            fs::remove_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
            removed.push(id.clone());
        }
        let mut cleaned = false;
        if let Some(latest) = &latest {
            for entry in
                fs::read_dir(self.runs_dir()).map_err(|e| EngineError::io(self.runs_dir(), e))?
            {
                let entry = entry.map_err(|e| EngineError::io(self.runs_dir(), e))?;
                let name = entry.file_name();
                let Some(id) = name.to_str().and_then(|n| n.strip_prefix(STAGING_PREFIX)) else {
                    continue;
                };
                if is_valid_run_id(id) && id < latest.as_str() && entry.path().is_dir() {
                    let dir = entry.path();
                    fs::remove_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
                    cleaned = true;
                }
            }
        }
        if !removed.is_empty() || cleaned {
            sync_dir(&self.runs_dir())?;
        }
        Ok(removed)
    }
}

/// Whether `s` has the shape of a run id (a UUID string: 36 chars of hex and hyphens).
pub fn is_valid_run_id(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok() && s.len() == 36
}

/// Makes a new sortable run id (UUIDv7: milliseconds since the epoch, then randomness).
pub fn new_run_id() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

/// `fsync` a folder so that renames inside it are durable.
///
/// # Errors
/// [`EngineError::Io`] when it cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| EngineError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latest_that_is_not_a_run_id_text_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        assert!(layout.read_latest().unwrap().is_none());
        fs::write(layout.latest_path(), b"\xff\xfe\n").unwrap();
        let e = layout.read_latest().unwrap_err();
        assert!(
            matches!(&e, EngineError::Corrupt { reason, .. } if reason.contains("UTF-8")),
            "{e}"
        );
        fs::remove_file(layout.latest_path()).unwrap();
        fs::create_dir(layout.latest_path()).unwrap();
        let e = layout.read_latest().unwrap_err();
        assert!(
            matches!(&e, EngineError::Corrupt { reason, .. } if reason.contains("folder")),
            "{e}"
        );
    }

    #[test]
    fn gc_keeps_the_newest_and_latest() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let ids: Vec<String> = (0..4)
            .map(|_| {
                let id = new_run_id();
                fs::create_dir_all(layout.run_dir(&id)).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(2));
                id
            })
            .collect();
        layout.write_latest(&ids[0]).unwrap();
        // A staging leftover older than LATEST's run is removed, a newer one kept.
        let old_staging = layout.staging_dir("00000000-0000-7000-8000-000000000000");
        let new_staging = layout.staging_dir(&new_run_id());
        fs::create_dir_all(&old_staging).unwrap();
        fs::create_dir_all(&new_staging).unwrap();
        assert!(layout.gc(0).is_err());
        let removed = layout.gc(2).unwrap();
        assert_eq!(removed, vec![ids[1].clone()]);
        assert_eq!(
            layout.list_runs().unwrap(),
            vec![ids[0].clone(), ids[2].clone(), ids[3].clone()]
        );
        assert_eq!(
            layout.read_latest().unwrap().as_deref(),
            Some(ids[0].as_str())
        );
        assert!(!old_staging.exists());
        assert!(new_staging.exists());
    }
}
