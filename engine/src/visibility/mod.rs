//! Live visibility flags (tombstones) in `<root>/visibility.sqlite`, outside every run.
//!
//! A flag is keyed by the stable `passage_id` or `document_key` (never a row offset) and holds
//! a [`Visibility`] state, the time of the change and an optional reason. A document flag
//! applies to all its passages; a passage's effective state is the more restrictive of its
//! own flag and its document's (`visible` < `hidden` < `superseded` < `deleted`).
//!
//! The store is SQLite in WAL mode, so several processes may read and write it at once. Every
//! change increments a version counter in the same transaction; an engine compares the counter
//! before each query and rebuilds its bitmap of invisible passages only when it moved.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde::Serialize;

use crate::error::{EngineError, Result};

pub mod effective;
pub(crate) mod overlay;

pub mod withdrawn;

/// Visibility of a passage or document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Returned by queries.
    Visible,
    /// Filtered at query time and kept in storage: the next run keeps its text (so unhiding
    /// works at once) but leaves it out of the graph and the reports.
    Hidden,
    /// Replaced by a newer version: filtered now, left out of the next run.
    Superseded,
    /// Filtered now, left out of the next run.
    Deleted,
}

impl Visibility {
    /// The state's name as stored and as the CLI writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visible => "visible",
            Self::Hidden => "hidden",
            Self::Superseded => "superseded",
            Self::Deleted => "deleted",
        }
    }

    /// Whether the next pipeline run leaves it out altogether (text, graph and reports).
    pub fn is_excluded_from_runs(self) -> bool {
        matches!(self, Self::Deleted | Self::Superseded)
    }
}

impl std::str::FromStr for Visibility {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "visible" => Ok(Self::Visible),
            "hidden" => Ok(Self::Hidden),
            "superseded" => Ok(Self::Superseded),
            "deleted" => Ok(Self::Deleted),
            other => Err(EngineError::InvalidArgument {
                field: "state",
                value: other.to_owned(),
                expected: "one of visible, hidden, deleted, superseded",
            }),
        }
    }
}

/// What a flag is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A passage, by `passage_id`.
    Passage,
    /// A document (all its passages), by `document_key`.
    Document,
}

impl Target {
    /// `passage` or `document`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passage => "passage",
            Self::Document => "document",
        }
    }
}

/// One stored flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flag {
    /// Passage or document.
    pub target: Target,
    /// The passage id or document key.
    pub key: String,
    /// The state.
    pub state: Visibility,
    /// When it was set (RFC 3339 UTC).
    pub changed_at: String,
    /// Why, when given.
    pub reason: Option<String>,
}

/// A connection to `<root>/visibility.sqlite`.
#[derive(Debug)]
pub struct VisibilityStore {
    conn: Connection,
    path: PathBuf,
}

impl VisibilityStore {
    /// Opens (creating when absent) the store at `path`, in WAL mode. An existing store that
    /// cannot be opened for writing (a read-only mount) is opened for reading: its flags apply,
    /// and [`set`](Self::set) fails.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the file cannot be opened or is not a visibility store.
    pub fn open(path: &Path) -> Result<Self> {
        match Self::open_writable(path) {
            Ok(store) => Ok(store),
            Err(e) => match path.is_file().then(|| Self::open_read_only(path)).flatten() {
                Some(store) => Ok(store),
                None => Err(e),
            },
        }
    }

    /// Opens an existing store that cannot be written, or `None`. First as a plain read-only
    /// connection, which sees the changes of writers elsewhere; SQLite can do that for a WAL
    /// database only while a writer keeps its `-shm` file, so without one the file is opened
    /// as immutable: nothing can change it through this mount, and a change made elsewhere is
    /// seen after a restart (said in a warning).
    fn open_read_only(path: &Path) -> Option<Self> {
        // A URI, so that its parameters can be given: `%`, `?` and `#` in the path are escaped.
        let mut uri = String::from("file:");
        for c in path.to_string_lossy().chars() {
            match c {
                '%' => uri.push_str("%25"),
                '?' => uri.push_str("%3f"),
                '#' => uri.push_str("%23"),
                c => uri.push(c),
            }
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        for immutable in [false, true] {
            let query = if immutable { "immutable=1" } else { "mode=ro" };
            let Ok(conn) = Connection::open_with_flags(format!("{uri}?{query}"), flags) else {
                continue;
            };
            let _ = conn.busy_timeout(Duration::from_secs(10));
            let store = Self {
                conn,
                path: path.to_owned(),
            };
            if store.version().is_ok() {
                if immutable {
                    tracing::warn!(
                        path = %path.display(),
                        "the visibility store is read-only here: its flags apply, changes made elsewhere are seen after a restart"
                    );
                }
                return Some(store);
            }
        }
        None
    }

    fn open_writable(path: &Path) -> Result<Self> {
        let err = |e: rusqlite::Error| EngineError::visibility(path.to_owned(), e);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| EngineError::io(parent, e))?;
        }
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS flags (
                 target TEXT NOT NULL CHECK (target IN ('passage', 'document')),
                 key TEXT NOT NULL,
                 state TEXT NOT NULL CHECK (state IN ('visible', 'hidden', 'superseded', 'deleted')),
                 changed_at TEXT NOT NULL,
                 reason TEXT,
                 PRIMARY KEY (target, key)
             );
             CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT OR IGNORE INTO meta (name, value) VALUES ('version', 0);",
        )
        .map_err(err)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    fn err(&self, e: rusqlite::Error) -> EngineError {
        EngineError::visibility(self.path.clone(), e)
    }

    /// The change counter: it moves with every committed change, from any process.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the read fails.
    pub fn version(&self) -> Result<i64> {
        // Every query reads the version: the statement is compiled once per connection.
        self.conn
            .prepare_cached("SELECT value FROM meta WHERE name = 'version'")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// Sets the flag of `key` to `state` (setting `visible` removes the flag's effect but keeps
    /// its history row), with the current time and an optional reason.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] for an empty key; [`EngineError::Visibility`] when the
    /// write fails.
    pub fn set(
        &mut self,
        target: Target,
        key: &str,
        state: Visibility,
        reason: Option<&str>,
    ) -> Result<()> {
        if key.is_empty() {
            return Err(EngineError::InvalidArgument {
                field: "key",
                value: String::new(),
                expected: "a non-empty passage id or document key",
            });
        }
        let now = crate::format::writer::now_rfc3339();
        let tx = self
            .conn
            .transaction()
            .map_err(|e| EngineError::visibility(self.path.clone(), e))?;
        tx.execute(
            "INSERT INTO flags (target, key, state, changed_at, reason) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (target, key) DO UPDATE SET state = ?3, changed_at = ?4, reason = ?5",
            params![target.as_str(), key, state.as_str(), now, reason],
        )
        .and_then(|_| {
            tx.execute(
                "UPDATE meta SET value = value + 1 WHERE name = 'version'",
                [],
            )
        })
        .and_then(|_| tx.commit())
        .map_err(|e| EngineError::visibility(self.path.clone(), e))?;
        Ok(())
    }

    /// The flag of `key`, if one was ever set.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the read fails.
    pub fn get(&self, target: Target, key: &str) -> Result<Option<Flag>> {
        self.conn
            .query_row(
                "SELECT state, changed_at, reason FROM flags WHERE target = ?1 AND key = ?2",
                params![target.as_str(), key],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?
            .map(|(state, changed_at, reason)| {
                Ok(Flag {
                    target,
                    key: key.to_owned(),
                    state: state.parse()?,
                    changed_at,
                    reason,
                })
            })
            .transpose()
    }

    /// Every flag whose state is not `visible`, ordered by target then key.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the read fails.
    pub fn list(&self) -> Result<Vec<Flag>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT target, key, state, changed_at, reason FROM flags
                 WHERE state <> 'visible' ORDER BY target, key",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (target, key, state, changed_at, reason) = row.map_err(|e| self.err(e))?;
            out.push(Flag {
                target: if target == "document" {
                    Target::Document
                } else {
                    Target::Passage
                },
                key,
                state: state.parse()?,
                changed_at,
                reason,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_list_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("visibility.sqlite");
        let mut a = VisibilityStore::open(&path).unwrap();
        let b = VisibilityStore::open(&path).unwrap();
        assert_eq!(b.version().unwrap(), 0);
        a.set(Target::Passage, "d#0", Visibility::Hidden, Some("test"))
            .unwrap();
        a.set(Target::Document, "d2", Visibility::Deleted, None)
            .unwrap();
        // The other connection sees the change.
        assert_eq!(b.version().unwrap(), 2);
        let f = b.get(Target::Passage, "d#0").unwrap().unwrap();
        assert_eq!(
            (f.state, f.reason.as_deref()),
            (Visibility::Hidden, Some("test"))
        );
        assert_eq!(b.list().unwrap().len(), 2);
        a.set(Target::Passage, "d#0", Visibility::Visible, None)
            .unwrap();
        assert_eq!(b.list().unwrap().len(), 1);
        assert!(b.get(Target::Passage, "nope").unwrap().is_none());
        assert!("gone".parse::<Visibility>().is_err());
    }
}
