//! The live visibility overlay of the served run: the bitmaps of hidden passages and
//! documents a [`View`] carries, rebuilt from the [`VisibilityStore`] only when its version
//! moves or another run is served.
//!
//! Every query reads the store's version, so that a flag set by any process is seen by the
//! next query. That read is the only work on the common path, and it takes no lock that
//! another query holds for longer than a pointer push: each query borrows a connection of its
//! own from a small pool (SQLite connections are not shared between threads), and the
//! resolutions are read through an [`ArcSwap`]. A lock held by every query for a SQL read
//! would make any query wait a whole scheduler slice whenever the holder loses its core, which
//! on a machine with more query threads than cores is often.
//!
//! Resolving the flags against a run costs work in proportion to what is hidden (key
//! lookups, [`Withdrawn`], and on the first time anything is hidden the run's passage →
//! entity inverse, **O(mentions)**). A query that finds no resolution for its run at the
//! store's version makes it, one at a time, and the queries that need the same one wait for
//! it: a flag change must be seen by the next query. A run swap need not cost that wait:
//! - [`Overlay::prepare`] resolves the incoming run before it is served, on the reloading
//!   thread, and the first query on it finds the bitmaps ready (tantivy warms a new
//!   searcher the same way before it publishes it);
//! - the resolution of the run served before stays cached beside it, so a query that took
//!   the old run just before the swap does not resolve it again, and make the next query on
//!   the new run resolve that one again too;
//! - a resolution pushed out of the cache is released by [`retire`], never by a query (its
//!   full-text overlay is a small index of its own).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use arc_swap::ArcSwap;
use roaring::RoaringBitmap;

use super::withdrawn::Withdrawn;
use super::{Target, Visibility, VisibilityStore};
use crate::error::{EngineError, Result};
use crate::retire::retire;
use crate::snapshot::Snapshot;
use crate::view::View;

/// How many resolutions the cache keeps: the served run's, the run served before it (queries
/// that took it before a swap), and one prepared for the next.
const CACHED_RESOLUTIONS: usize = 3;

/// The overlay of an [`Engine`](crate::Engine): the store's flags resolved against the runs
/// it serves, and the connections that read the store's version.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    /// Idle connections to the store; a query takes one and puts it back (about as many as
    /// queries ever ran at once).
    idle: Mutex<Vec<VisibilityStore>>,
    /// Resolutions, the newest first; at most one per run, at most [`CACHED_RESOLUTIONS`].
    resolved: ArcSwap<Vec<Arc<Resolved>>>,
    /// Held while a resolution is made or filed, so that one is made once.
    resolving: Mutex<()>,
}

/// The flags of one store version resolved against one run: what a [`View`] reads. Shared
/// whole, so that whoever drops it last drops all of it (see [`retire`]).
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// The store's version the bitmaps were built at (0: no store).
    version: i64,
    /// The run the bitmaps index.
    run_id: String,
    /// Passage rows that are not visible.
    pub(crate) hidden: RoaringBitmap,
    /// Document rows flagged as a whole.
    pub(crate) hidden_documents: RoaringBitmap,
    /// Effective state of each passage row that is not visible.
    pub(crate) states: HashMap<u32, Visibility>,
    /// What the hidden passages withdraw from the run's precomputed answers.
    pub(crate) withdrawn: Withdrawn,
}

impl Resolved {
    /// Resolves the flags of `store` (none: everything visible), at `version`, against `snap`.
    fn build(snap: &Snapshot, store: Option<&VisibilityStore>, version: i64) -> Result<Self> {
        let (hidden, hidden_documents, states) = match store {
            Some(store) => build_bitmap(snap, store)?,
            None => (RoaringBitmap::new(), RoaringBitmap::new(), HashMap::new()),
        };
        let withdrawn = Withdrawn::build(snap, &hidden, &hidden_documents)?;
        Ok(Self {
            version,
            run_id: snap.run_id().to_owned(),
            hidden,
            hidden_documents,
            states,
            withdrawn,
        })
    }
}

/// A connection borrowed from [`Overlay::idle`], put back when dropped.
struct Borrowed<'a> {
    overlay: &'a Overlay,
    store: Option<VisibilityStore>,
}

impl Borrowed<'_> {
    fn store(&self) -> &VisibilityStore {
        self.store
            .as_ref()
            .expect("a borrowed connection is held until it is dropped")
    }
}

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        if let (Some(store), Ok(mut idle)) = (self.store.take(), self.overlay.idle.lock()) {
            idle.push(store);
        }
    }
}

impl Overlay {
    /// `snapshot` and the visibility that applies to it now, from the store at `path` (none
    /// there: everything visible). The store's version is read once per call; the flags are
    /// resolved again only when no cached resolution is of that version and this run (a run
    /// [`prepare`](Self::prepare)d at the current version is served as it was resolved).
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store exists but cannot be read;
    /// [`EngineError::Internal`] when a lock is poisoned.
    pub(crate) fn view(&self, snapshot: Option<Arc<Snapshot>>, path: &Path) -> Result<View> {
        let Some(snap) = snapshot.as_ref() else {
            return Ok(View::default());
        };
        let borrowed = self.borrow(path)?;
        let store = borrowed.as_ref().map(Borrowed::store);
        let version = version_of(store)?;
        let resolved = match self.find(snap, version) {
            Some(r) => r,
            None => self.resolve_once(snap, store, version)?,
        };
        drop(borrowed);
        Ok(View {
            snapshot,
            visibility: resolved,
        })
    }

    /// Resolves the flags of the store at `path` against `snap`, a run about to be served,
    /// so that its first [`view`](Self::view) finds them ready: the bitmaps, what they
    /// withdraw (with the run's inverses it needs) and the full-text overlay of the partly
    /// hidden documents. Runs on the caller's thread and holds no lock a query takes on its
    /// common path, so queries on the served run go on meanwhile. A flag set meanwhile moves
    /// the store's version, and the first view then resolves again, as it would have without
    /// this call.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store exists but cannot be read; the run's error
    /// reading its concept evidence; [`EngineError::Internal`] when a lock is poisoned.
    pub(crate) fn prepare(&self, snap: &Snapshot, path: &Path) -> Result<()> {
        let store = self.borrow(path)?;
        let store = store.as_ref().map(Borrowed::store);
        // The version is read before the flags: what is resolved is then at least as new as
        // the version it is filed under, never older.
        let version = version_of(store)?;
        let resolved = Resolved::build(snap, store, version)?;
        if let Err(e) = resolved.withdrawn.text_overlay(snap, &resolved.hidden) {
            // Kept in the `Withdrawn`: the query that needs the overlay reports it.
            tracing::debug!("text overlay of run {}: {e}", snap.run_id());
        }
        let _one_at_a_time = lock(&self.resolving)?;
        self.file(Arc::new(resolved));
        Ok(())
    }

    /// A connection to the store at `path`: an idle one, else a new one; `None` when there is
    /// no store (nothing is hidden; no store is created).
    fn borrow(&self, path: &Path) -> Result<Option<Borrowed<'_>>> {
        let idle = lock(&self.idle)?.pop();
        let store = match idle {
            Some(store) => store,
            None if path.exists() => VisibilityStore::open(path)?,
            None => return Ok(None),
        };
        Ok(Some(Borrowed {
            overlay: self,
            store: Some(store),
        }))
    }

    /// The resolution of `snap` at `version`, made from `store` unless another query made
    /// it while this one waited: one query at a time resolves, and the others that need the
    /// same resolution take it when their turn comes.
    fn resolve_once(
        &self,
        snap: &Snapshot,
        store: Option<&VisibilityStore>,
        version: i64,
    ) -> Result<Arc<Resolved>> {
        let _one_at_a_time = lock(&self.resolving)?;
        if let Some(r) = self.find(snap, version) {
            return Ok(r);
        }
        let r = Arc::new(Resolved::build(snap, store, version)?);
        self.file(r.clone());
        Ok(r)
    }

    /// The cached resolution of `snap` at `version`.
    fn find(&self, snap: &Snapshot, version: i64) -> Option<Arc<Resolved>> {
        self.resolved
            .load()
            .iter()
            .find(|r| r.version == version && r.run_id == snap.run_id())
            .cloned()
    }

    /// Files `new` first, in place of any older resolution of its run, and retires what it
    /// pushes out. The caller holds [`Overlay::resolving`].
    fn file(&self, new: Arc<Resolved>) {
        let old = self.resolved.load_full();
        let (mut out, keep): (Vec<_>, Vec<_>) =
            old.iter().cloned().partition(|r| r.run_id == new.run_id);
        let mut now: Vec<Arc<Resolved>> = std::iter::once(new).chain(keep).collect();
        if now.len() > CACHED_RESOLUTIONS {
            out.extend(now.drain(CACHED_RESOLUTIONS..));
        }
        self.resolved.store(Arc::new(now));
        for r in out {
            retire(r, "a visibility resolution");
        }
    }
}

/// The version of `store`; 0 when there is none (nothing hidden).
fn version_of(store: Option<&VisibilityStore>) -> Result<i64> {
    store.map_or(Ok(0), VisibilityStore::version)
}

fn lock<T>(m: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| EngineError::Internal("visibility overlay lock poisoned".into()))
}

/// Bitmaps of passage rows and document rows that are not visible, and the passages'
/// effective states.
type Bitmaps = (RoaringBitmap, RoaringBitmap, HashMap<u32, Visibility>);

fn build_bitmap(snap: &Snapshot, store: &VisibilityStore) -> Result<Bitmaps> {
    let mut states: HashMap<u32, Visibility> = HashMap::new();
    let mut hidden_documents = RoaringBitmap::new();
    for flag in store.list()? {
        if flag.target == Target::Document
            && let Some(d) = snap.document_row(&flag.key)
        {
            hidden_documents.insert(d.0);
        }
        let rows: Vec<u32> = match flag.target {
            Target::Passage => snap
                .passage_row(&flag.key)
                .map(|p| p.0)
                .into_iter()
                .collect(),
            Target::Document => snap
                .document_row(&flag.key)
                .map(|d| snap.document(d).passage_range().collect::<Vec<u32>>())
                .unwrap_or_default(),
        };
        for p in rows {
            let s = states.entry(p).or_insert(Visibility::Visible);
            *s = (*s).max(flag.state);
        }
    }
    states.retain(|_, s| *s != Visibility::Visible);
    let hidden = states.keys().copied().collect();
    Ok((hidden, hidden_documents, states))
}

#[cfg(test)]
impl Overlay {
    /// The runs whose resolution the cache holds, the newest first.
    pub(crate) fn for_test_cached_runs(&self) -> Vec<String> {
        self.resolved
            .load()
            .iter()
            .map(|r| r.run_id.clone())
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::embed::{Embedder, HashEmbedder};
    use crate::format::tables::{for_test_one_passage_documents, for_test_write_run};
    use crate::format::{Layout, new_run_id};
    use crate::snapshot::PassageRow;

    /// Writes a run of documents `keys`, one passage `<key>#0` each, under `root` (and
    /// points `LATEST` at it); returns its id.
    pub(crate) fn write_run_of(root: &Path, keys: &[&str]) -> String {
        let embedder = HashEmbedder::new(8);
        let data = for_test_one_passage_documents(keys, false, &embedder);
        let layout = Layout::new(root);
        let run_id = new_run_id();
        for_test_write_run(&layout, &run_id, &data, embedder.identity());
        layout.write_latest(&run_id).unwrap();
        run_id
    }

    /// A run of documents `keys`, one passage `<key>#0` each, opened.
    fn open_run(root: &Path, keys: &[&str]) -> Arc<Snapshot> {
        let run_id = write_run_of(root, keys);
        Arc::new(Snapshot::open_run(&Layout::new(root).run_dir(&run_id)).unwrap())
    }

    /// A store at `<dir>/visibility.sqlite` in which passage `b#0` is hidden.
    fn store_hiding_b(dir: &Path) -> (std::path::PathBuf, VisibilityStore) {
        let path = dir.join("visibility.sqlite");
        let mut store = VisibilityStore::open(&path).unwrap();
        store
            .set(Target::Passage, "b#0", Visibility::Hidden, None)
            .unwrap();
        (path, store)
    }

    fn hidden_ids(view: &View) -> Vec<String> {
        let snap = view.snapshot().unwrap();
        view.hidden_passages()
            .iter()
            .map(|p| snap.passage(PassageRow(p)).id())
            .collect()
    }

    /// The first view of a prepared run serves what `prepare` resolved, built once; the
    /// served run's views are untouched by the preparation.
    #[test]
    fn the_first_view_of_a_prepared_run_takes_what_was_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _store) = store_hiding_b(dir.path());
        let old = open_run(dir.path(), &["a", "b"]);
        let overlay = Overlay::default();
        let served = overlay.view(Some(old.clone()), &path).unwrap();
        assert_eq!(hidden_ids(&served), ["b#0"]);

        // The new run holds one more document before `b`, so `b#0` is another row there.
        let new = open_run(dir.path(), &["a", "ab", "b"]);
        overlay.prepare(&new, &path).unwrap();
        let prepared = overlay.resolved.load()[0].clone();
        // Queries on the served run still read its own resolution.
        let again = overlay.view(Some(old.clone()), &path).unwrap();
        assert!(Arc::ptr_eq(&again.visibility, &served.visibility));

        let first = overlay.view(Some(new.clone()), &path).unwrap();
        assert_eq!(hidden_ids(&first), ["b#0"]);
        assert_eq!(first.hidden_passages().iter().collect::<Vec<_>>(), [2]);
        assert!(
            Arc::ptr_eq(&first.visibility, &prepared),
            "the first view took the prepared resolution instead of building its own"
        );
        // A query that took the old run before the swap reads its resolution as it was.
        let straggler = overlay.view(Some(old.clone()), &path).unwrap();
        assert!(Arc::ptr_eq(&straggler.visibility, &served.visibility));
        let second = overlay.view(Some(new.clone()), &path).unwrap();
        assert!(Arc::ptr_eq(&second.visibility, &prepared));

        // Later runs push the oldest resolutions out; the cache stays bounded.
        for keys in [&["a", "b", "c"][..], &["b"], &["b", "d"]] {
            let next = open_run(dir.path(), keys);
            overlay.prepare(&next, &path).unwrap();
            assert_eq!(
                hidden_ids(&overlay.view(Some(next), &path).unwrap()),
                ["b#0"]
            );
        }
        assert_eq!(overlay.resolved.load().len(), CACHED_RESOLUTIONS);
    }

    /// A flag set between the preparation and the first view is seen by that view: the
    /// prepared resolution is of an older version and is dropped.
    #[test]
    fn a_flag_set_after_preparing_is_seen_by_the_first_view() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut store) = store_hiding_b(dir.path());
        let old = open_run(dir.path(), &["a", "b"]);
        let overlay = Overlay::default();
        overlay.view(Some(old), &path).unwrap();
        let new = open_run(dir.path(), &["a", "b", "c"]);
        overlay.prepare(&new, &path).unwrap();
        store
            .set(Target::Document, "c", Visibility::Deleted, None)
            .unwrap();
        store
            .set(Target::Passage, "b#0", Visibility::Visible, None)
            .unwrap();
        let first = overlay.view(Some(new), &path).unwrap();
        assert_eq!(hidden_ids(&first), ["c#0"]);
        assert_eq!(first.hidden_documents().iter().collect::<Vec<_>>(), [2]);
    }

    /// Without a store file, preparing resolves nothing hidden and creates no store.
    #[test]
    fn preparing_without_a_store_creates_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("visibility.sqlite");
        let new = open_run(dir.path(), &["a"]);
        let overlay = Overlay::default();
        overlay.prepare(&new, &path).unwrap();
        assert!(!path.exists());
        let view = overlay.view(Some(new), &path).unwrap();
        assert_eq!(view.num_hidden(), 0);
    }
}
