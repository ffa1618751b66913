//! The live visibility overlay of the served run: the bitmaps of hidden passages and
//! documents a [`View`] carries, rebuilt from the [`VisibilityStore`] only when its version
//! moves or another run is served.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use roaring::RoaringBitmap;

use super::withdrawn::Withdrawn;
use super::{Target, Visibility, VisibilityStore};
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;
use crate::view::View;

/// The overlay of an [`Engine`](crate::Engine): its cache of the store's flags resolved
/// against the served run.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    cache: Mutex<VisibilityCache>,
}

/// What the last [`Overlay::view`] resolved, and against which store version and run.
#[derive(Debug, Default)]
struct VisibilityCache {
    /// The store, opened on the first view that finds its file.
    store: Option<VisibilityStore>,
    /// The store's version the bitmaps were built at (0: no store).
    version: i64,
    /// The run the bitmaps index.
    run_id: String,
    /// Passage rows that are not visible.
    hidden: Arc<RoaringBitmap>,
    /// Document rows flagged as a whole.
    hidden_documents: Arc<RoaringBitmap>,
    /// Effective state of each passage row that is not visible.
    states: Arc<HashMap<u32, Visibility>>,
    /// What the hidden passages withdraw from the run's precomputed answers.
    withdrawn: Arc<Withdrawn>,
}

impl Overlay {
    /// `snapshot` and the visibility that applies to it now, from the store at `path` (none
    /// there: everything visible). The store is consulted once per call and the bitmaps
    /// rebuilt only when its version moved or the run changed.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store exists but cannot be read;
    /// [`EngineError::Internal`] when the cache lock is poisoned.
    pub(crate) fn view(&self, snapshot: Option<Arc<Snapshot>>, path: &Path) -> Result<View> {
        let Some(snap) = snapshot.as_ref() else {
            return Ok(View::default());
        };
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| EngineError::Internal("visibility cache lock poisoned".into()))?;
        if cache.store.is_none() && path.exists() {
            cache.store = Some(VisibilityStore::open(path)?);
        }
        let version = match &cache.store {
            Some(store) => store.version()?,
            None => 0,
        };
        if version != cache.version || cache.run_id != snap.run_id() {
            let (hidden, hidden_documents, states) = match &cache.store {
                Some(store) => build_bitmap(snap, store)?,
                None => (RoaringBitmap::new(), RoaringBitmap::new(), HashMap::new()),
            };
            cache.withdrawn = Arc::new(Withdrawn::build(snap, &hidden, &hidden_documents)?);
            cache.hidden = Arc::new(hidden);
            cache.hidden_documents = Arc::new(hidden_documents);
            cache.states = Arc::new(states);
            cache.version = version;
            cache.run_id = snap.run_id().to_owned();
        }
        Ok(View {
            snapshot,
            hidden: cache.hidden.clone(),
            hidden_documents: cache.hidden_documents.clone(),
            states: cache.states.clone(),
            withdrawn: cache.withdrawn.clone(),
        })
    }
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
