//! One run at a time per root: an exclusive advisory lock on `<root>/run.lock`
//! ([`Layout::run_lock_path`]), held for the whole run.
//!
//! The lock is the operating system's (`flock` on Unix, `LockFileEx` on Windows, through
//! [`File::try_lock`]), not the file's existence: it ends with the process however the process
//! ends, so a run killed with SIGKILL leaves no lock behind and the next run takes the root at
//! once. The file stays; its content is the holder's process id, for the refusal message.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};

use agrag_engine::format::Layout;

use crate::error::{PipelineError, Result};

/// The root's run lock, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    file: File,
}

impl RunLock {
    /// Takes the run lock of `layout`'s root, creating the root and the lock file when missing,
    /// and writes this process's id into it. Never waits.
    ///
    /// # Errors
    /// [`PipelineError::RunInProgress`] naming the holder's process id when another process
    /// holds the lock; [`PipelineError::Write`] when the root or the file cannot be created or
    /// written.
    pub fn acquire(layout: &Layout) -> Result<Self> {
        let path = layout.run_lock_path();
        let write_err = |source| PipelineError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(layout.root()).map_err(|source| PipelineError::Write {
            path: layout.root().to_path_buf(),
            source,
        })?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(write_err)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let holder = match file.read_to_string(&mut holder) {
                    Ok(_) if !holder.trim().is_empty() => holder.trim().to_owned(),
                    _ => "unknown".to_owned(),
                };
                return Err(PipelineError::RunInProgress {
                    root: layout.root().to_path_buf(),
                    lock: path,
                    holder,
                });
            }
            Err(TryLockError::Error(e)) => return Err(write_err(e)),
        }
        file.set_len(0).map_err(write_err)?;
        file.seek(SeekFrom::Start(0)).map_err(write_err)?;
        writeln!(file, "{}", std::process::id()).map_err(write_err)?;
        file.flush().map_err(write_err)?;
        Ok(Self { file })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // The process id is left in the file; the lock, not the content, says who runs.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_root_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path().join("root"));
        let first = RunLock::acquire(&layout).unwrap();
        let err = RunLock::acquire(&layout).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, PipelineError::RunInProgress { holder, .. } if *holder == std::process::id().to_string()),
            "{text}"
        );
        assert!(text.contains("run.lock"), "{text}");
        drop(first);
        let again = RunLock::acquire(&layout).unwrap();
        drop(again);
    }
}
