//! [`Engine`]: the embeddable entry point. Serves the newest valid run of a root, swaps in newer
//! runs on [`Engine::reload`], and applies live visibility to every query.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;

use crate::embed::Embedder;
use crate::embed::query::QueryEmbedder;
use crate::error::{EngineError, Result};
use crate::format::{Layout, Verify};
use crate::ivf::CandidateSearch;
pub use crate::query::QueryInput;
use crate::query::concept::{self, ConceptAnswer, ConceptRequest, ConceptStatus};
use crate::query::evidence::{self, Evidence};
pub use crate::query::theme::ThemeRequest;
use crate::query::theme::{self, IndexState, Status, ThemeAnswer};
use crate::query::{Deadline, Scope};
use crate::retire::retire;
use crate::snapshot::Snapshot;
use crate::view::View;
use crate::visibility::effective::EffectiveVisibility;
use crate::visibility::overlay::Overlay;
use crate::visibility::{Flag, Target, Visibility, VisibilityStore};

/// How the engine embeds query text and checks the runs it opens.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// The query embedder (see [`EmbedderSettings`](crate::embed::EmbedderSettings) to build it
    /// from `EMBEDDING_*`). `None`: use the embedder the run's manifest names, when this build
    /// can run it (the built-in hash embedder always; all-MiniLM-L6-v2 with the `minilm`
    /// feature and the model folder). A given embedder whose model, dimension or weights
    /// fingerprint differs from the run's makes theme searches answer `failed`.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// How theme searches read their candidate window: through the run's IVF index when it
    /// has one (default; approximate, see [`crate::ivf`]) or by an exact scan.
    pub candidate_search: CandidateSearch,
    /// How a run is checked against its manifest before it is served (default: sizes and
    /// BLAKE3 checksums of every file). A run that fails is refused and the served run stays.
    pub verify: Verify,
    /// The all-MiniLM-L6-v2 folder used when the run needs MiniLM and `embedder` is `None`.
    /// `None`: `EMBEDDING_MODEL_PATH`, else the default location
    /// ([`default_model_path`](crate::embed::settings::default_model_path)).
    pub model_path: Option<PathBuf>,
}

/// A run that [`Engine::reload`] refused: its id and the error that refused it, which names
/// the file at fault and keeps its causes.
#[derive(Debug, Clone)]
pub struct RefusedRun {
    /// The run id `LATEST` named.
    pub run_id: String,
    /// Why it was refused.
    pub error: EngineError,
}

impl RefusedRun {
    /// The error's message followed by its causes, for a log line or an answer's text.
    pub fn reason(&self) -> String {
        self.error.with_causes()
    }
}

/// The query engine over one snapshot root.
///
/// Cheap to share (`Arc<Engine>`); every method takes `&self`. A query holds one [`View`] for
/// its whole lifetime, so a concurrent [`reload`](Engine::reload) never changes its answer.
#[derive(Debug)]
pub struct Engine {
    layout: Layout,
    snapshot: ArcSwapOption<Snapshot>,
    not_ready: Mutex<Option<EngineError>>,
    refused: Mutex<Option<RefusedRun>>,
    config: EngineConfig,
    query_embedder: QueryEmbedder,
    overlay: Overlay,
}

impl Engine {
    /// Opens the engine on `root` and maps the run `LATEST` names. A root without a valid run
    /// still opens: queries then answer `index_not_ready` until [`reload`](Engine::reload)
    /// finds one.
    ///
    /// # Errors
    /// None today for a missing or invalid run (see above); reserved for future checks.
    pub fn open(root: impl Into<PathBuf>, config: EngineConfig) -> Result<Self> {
        let engine = Self {
            layout: Layout::new(root),
            snapshot: ArcSwapOption::empty(),
            not_ready: Mutex::new(None),
            refused: Mutex::new(None),
            query_embedder: QueryEmbedder::new(config.embedder.clone(), config.model_path.clone()),
            config,
            overlay: Overlay::default(),
        };
        if let Err(e) = engine.reload() {
            tracing::warn!("no run served from {}: {e}", engine.layout.root().display());
        }
        Ok(engine)
    }

    /// The snapshot root.
    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// Re-reads `LATEST` and, when it names a run other than the served one, opens and
    /// validates it (at [`EngineConfig::verify`]) and swaps it in atomically. Queries in
    /// flight finish on the run they started with. Returns whether the served run changed.
    ///
    /// When a run is already served, the visibility flags are resolved against the incoming
    /// run on this thread before the swap (bitmaps, withdrawn communities and documents, the
    /// run's passage → entity inverse when anything is hidden), so the first queries on it
    /// do not wait for that work: the reload takes longer, the queries do not.
    ///
    /// A refused run is logged (`tracing` warning with the reason) and recorded in
    /// [`last_refused`](Engine::last_refused); the run served before keeps serving.
    ///
    /// # Errors
    /// The run's open error ([`EngineError::Corrupt`] naming the file at fault,
    /// [`EngineError::UnsupportedFormat`], [`EngineError::NotReady`], …).
    pub fn reload(&self) -> Result<bool> {
        let mut latest_id: Option<String> = None;
        let result: Result<bool> = (|| {
            let run_id = self
                .layout
                .read_latest()?
                .ok_or_else(|| EngineError::NotReady {
                    root: self.layout.root().to_owned(),
                    reason: "no LATEST file: run `agrag-pipeline run` first".into(),
                })?;
            latest_id = Some(run_id.clone());
            if let Some(current) = self.snapshot.load_full()
                && current.run_id() == run_id
            {
                return Ok(false);
            }
            let snap =
                Snapshot::open_run_verified(&self.layout.run_dir(&run_id), self.config.verify)?;
            // A swap under load: the visibility of the incoming run is resolved here, so that
            // the first query on it does not resolve it under the overlay's lock while every
            // other query waits. A first open leaves it to the first query (opening stays
            // cheap); a failure here leaves it to the first query too, which reports it.
            if self.snapshot.load().is_some()
                && let Err(e) = self.overlay.prepare(&snap, &self.layout.visibility_path())
            {
                tracing::debug!(
                    "visibility of run {run_id} not prepared before the swap: {}",
                    e.with_causes()
                );
            }
            // Clear the refusal before the new run becomes visible, so that nobody sees the new
            // run served next to the refusal it ends.
            if let Ok(mut r) = self.refused.lock() {
                *r = None;
            }
            if let Some(old) = self.snapshot.swap(Some(Arc::new(snap))) {
                retire(old, "the old run");
            }
            // The query embedder is kept: it is rebuilt only when a run needs another model
            // or dimension (see `QueryEmbedder::for_run`).
            Ok(true)
        })();
        if let Ok(mut r) = self.not_ready.lock() {
            *r = match &result {
                Err(e) if self.snapshot.load().is_none() => Some(e.clone()),
                _ => None,
            };
        }
        if let Ok(mut r) = self.refused.lock() {
            match (&result, latest_id) {
                (Err(e), Some(run_id)) => {
                    *r = Some(RefusedRun {
                        run_id,
                        error: e.clone(),
                    });
                }
                (Ok(_), _) => *r = None,
                (Err(_), None) => {}
            }
        }
        if let Err(e) = &result {
            let serving = self.snapshot.load();
            let serving = serving.as_ref().map_or("no run", |s| s.run_id());
            tracing::warn!(
                root = %self.layout.root().display(),
                serving,
                "reload refused: {}",
                e.with_causes()
            );
        }
        result
    }

    /// The last run [`reload`](Engine::reload) refused, until a reload succeeds.
    pub fn last_refused(&self) -> Option<RefusedRun> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }

    /// The id of the served run, if any.
    pub fn run_id(&self) -> Option<String> {
        self.snapshot.load().as_ref().map(|s| s.run_id().to_owned())
    }

    /// Starts a background thread that polls `LATEST` every `interval` and calls
    /// [`reload`](Engine::reload) when its content changes, so a newly published run is
    /// served within about one interval. A run that fails validation is refused (logged, see
    /// [`last_refused`](Engine::last_refused)) and not retried until `LATEST` changes again.
    /// Each swap is logged (`tracing` info: the new run, the previous one and the root).
    /// The watcher stops when the returned [`Watcher`] is dropped.
    ///
    /// Polling a 37-byte file is cheap and sees the atomic rename of `LATEST` on every file
    /// system (network ones included), which file-event APIs do not guarantee.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] for a zero `interval`; [`EngineError::Io`] when the
    /// thread cannot be started.
    pub fn watch(self: &Arc<Self>, interval: std::time::Duration) -> Result<Watcher> {
        if interval.is_zero() {
            return Err(EngineError::InvalidArgument {
                field: "interval",
                value: "0 ms".into(),
                expected: "a positive duration",
            });
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let engine = Arc::downgrade(self);
        let latest_path = self.layout.latest_path();
        let mut seen = std::fs::read_to_string(&latest_path).ok();
        let thread = std::thread::Builder::new()
            .name("agrag-watch".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(interval)
                {
                    let Some(engine) = engine.upgrade() else {
                        return;
                    };
                    let now = std::fs::read_to_string(&latest_path).ok();
                    if now != seen {
                        let previous = engine.run_id();
                        // Refusals are logged and recorded by reload itself; a swap is logged
                        // here, so that an operator sees when a published run is served.
                        if let Ok(true) = engine.reload() {
                            tracing::info!(
                                root = %engine.root().display(),
                                previous = previous.as_deref().unwrap_or("no run"),
                                "LATEST changed: now serving run {}",
                                engine.run_id().as_deref().unwrap_or("?")
                            );
                        }
                        seen = now;
                    }
                }
            })
            .map_err(|e| EngineError::io(self.layout.root(), e))?;
        Ok(Watcher {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The embedder text queries of the served run are embedded with: the configured one
    /// ([`EngineConfig::embedder`]), else the run's own model when this build can run it.
    /// `None` when no run is served.
    ///
    /// # Errors
    /// [`EngineError::EmbedderUnavailable`] when the run's model cannot be run or loaded here.
    pub fn query_embedder(&self) -> Result<Option<Arc<dyn Embedder>>> {
        match self.snapshot.load_full() {
            Some(snap) => self
                .query_embedder
                .for_run(&snap.manifest.embedder)
                .map(Some),
            None => Ok(None),
        }
    }

    /// Why no run is served, when none is: the error of the last attempt to open one.
    pub fn not_ready_error(&self) -> Option<EngineError> {
        self.not_ready.lock().ok().and_then(|r| r.clone())
    }

    /// [`not_ready_error`](Engine::not_ready_error) as text, causes included, for an
    /// answer's `not_ready_reason`.
    pub fn not_ready_reason(&self) -> Option<String> {
        self.not_ready_error().map(|e| e.with_causes())
    }

    /// The current snapshot and the visibility that applies to it now. The visibility store
    /// is consulted once per call and the bitmap rebuilt only when its version moved.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store exists but cannot be read.
    pub fn view(&self) -> Result<View> {
        self.overlay
            .view(self.snapshot.load_full(), &self.layout.visibility_path())
    }

    /// The id of the served run when it holds no passage (by passage id) or document (by
    /// document key) `key`; `None` when it holds it or no run is served. Flags are keyed by
    /// stable ids and may name what a later run will hold, so callers use this to refuse a
    /// mistyped id rather than store it silently.
    pub fn served_run_lacking(&self, target: Target, key: &str) -> Option<String> {
        let snap = self.snapshot.load_full()?;
        let known = match target {
            Target::Passage => snap.passage_row(key).is_some(),
            Target::Document => snap.document_row(key).is_some(),
        };
        (!known).then(|| snap.run_id().to_owned())
    }

    /// Sets the visibility of a passage or a whole document. Seen by the next query of every
    /// engine on this root, in this process or another.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store cannot be written;
    /// [`EngineError::InvalidArgument`] for an empty key; [`EngineError::Io`] (not found)
    /// when the snapshot root is not a folder: a mistyped root must not create one.
    pub fn set_visibility(
        &self,
        target: Target,
        key: &str,
        state: Visibility,
        reason: Option<&str>,
    ) -> Result<()> {
        let root = self.layout.root();
        if !root.is_dir() {
            return Err(EngineError::io(
                root,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the snapshot root does not exist; flags are kept in an existing root",
                ),
            ));
        }
        let mut store = VisibilityStore::open(&self.layout.visibility_path())?;
        store.set(target, key, state, reason)
    }

    /// Every stored visibility flag of the root, in the store's order (none without a store).
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store cannot be read.
    pub fn visibility_flags(&self) -> Result<Vec<Flag>> {
        let path = self.layout.visibility_path();
        if !path.exists() {
            return Ok(Vec::new());
        }
        VisibilityStore::open(&path)?.list()
    }

    /// The stored flag state of a passage or document (`visible` when never flagged).
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store cannot be read.
    pub fn visibility(&self, target: Target, key: &str) -> Result<Visibility> {
        let path = self.layout.visibility_path();
        if !path.exists() {
            return Ok(Visibility::Visible);
        }
        Ok(VisibilityStore::open(&path)?
            .get(target, key)?
            .map_or(Visibility::Visible, |f| f.state))
    }

    /// The effective visibility of a passage or document: the state queries apply (for a
    /// passage, the more restrictive of its own flag and its document's in the served run),
    /// which flag decides it, and both flags.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the store cannot be read.
    pub fn effective_visibility(&self, target: Target, key: &str) -> Result<EffectiveVisibility> {
        let document_key = match (target, self.snapshot.load_full()) {
            (Target::Passage, Some(snap)) => snap
                .passage_row(key)
                .map(|p| snap.passage(p).document_key().to_owned()),
            _ => None,
        };
        let path = self.layout.visibility_path();
        let store = if path.exists() {
            Some(VisibilityStore::open(&path)?)
        } else {
            None
        };
        EffectiveVisibility::resolve(store.as_ref(), target, key, document_key.as_deref())
    }

    /// Concept search; see [`query::concept`](crate::query::concept) for the exact contract.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming `sample` (0), `concept`/`term` (empty),
    /// `relation` (unknown to the run), `depth` (0), `vector.k` (0), `fusion.k` (≤ 0) or
    /// `keyword_weight` (outside [0, 1]), `timeout` (zero); [`EngineError::Visibility`] when
    /// the store cannot be read. A search past its timeout answers `failed` with a `timeout`
    /// failure. Unknown terms, concepts and node fields are answers, not errors.
    #[allow(clippy::too_many_lines)]
    pub fn find_by_meaning(&self, req: &ConceptRequest) -> Result<ConceptAnswer> {
        let deadline = Deadline::after(req.timeout);
        req.validate()?;
        if let Scope::Documents(keys) = &req.scope
            && keys.is_empty()
        {
            return Ok(concept::nothing(
                ConceptStatus::EmptyScope,
                req.direction,
                "the scope holds no document key",
            ));
        }
        let view = self.view()?;
        let Some(snap) = view.snapshot() else {
            let why = match self.not_ready_reason() {
                Some(reason) => format!("no run is served ({reason})"),
                None => "no run is served".to_owned(),
            };
            return Ok(concept::nothing(
                ConceptStatus::IndexNotReady,
                req.direction,
                &why,
            ));
        };
        req.validate_relation(snap)?;
        let failed = |failure: crate::query::theme::Failure| {
            let mut a = concept::nothing(ConceptStatus::Failed, req.direction, &failure.message);
            a.run_id = Some(snap.run_id().to_owned());
            a.failures.push(failure);
            a
        };
        let timed_out = |stage: &str| {
            deadline
                .filter(Deadline::expired)
                .map(|d| failed(d.failure(stage)))
        };
        let resolved = match concept::resolve(snap, req) {
            Ok(r) => r,
            Err(mut a) => {
                a.run_id = Some(snap.run_id().to_owned());
                return Ok(*a);
            }
        };
        if let Some(a) = timed_out("while the concept set was resolved") {
            return Ok(a);
        }
        let vector = match &req.vector {
            Some(v) => match self.query_embedder.embed(&snap.manifest.embedder, &v.input) {
                Ok(q) => Some(concept::vector_scores(&view, snap, &q, v.k)),
                Err(e) => {
                    return Ok(failed(crate::query::theme::Failure {
                        leg: "embed".into(),
                        message: e.with_causes(),
                    }));
                }
            },
            None => None,
        };
        if let Some(a) = timed_out("while the vector clause was embedded") {
            return Ok(a);
        }
        let answer = concept::search(&view, snap, req, &resolved, vector.as_ref());
        Ok(timed_out("while the documents were ranked").unwrap_or(answer))
    }

    /// Theme search; see [`query::theme`](crate::query::theme) for the exact contract.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming `limit` or `support_limit` when it is 0,
    /// `query` when the text is empty or the vector empty or not finite, or `timeout` when it
    /// is zero. Every other problem is an answer with a status (`index_not_ready`, `failed`,
    /// …), not an error; a search past its timeout is `failed` with a `timeout` failure.
    pub fn search_themes(&self, req: &ThemeRequest) -> Result<ThemeAnswer> {
        self.search_themes_from(req, None)
    }

    /// Theme search whose candidate window comes from the caller's own vector store instead of
    /// the run's index: `hits` are `(community id, score)` pairs for the query, as a store
    /// answers `search(vector, k)` with `k` = [`theme::window_size`]`(limit)`. They are
    /// ordered best first (ties: lower id), a repeated id keeps its best score, and the window
    /// is cut to `k`; visibility, scope and support then apply exactly as in
    /// [`search_themes`](Engine::search_themes). An id that is not a community of the served
    /// run, or a score that is not finite, answers `failed` with a `vector_store` failure.
    ///
    /// # Errors
    /// As [`search_themes`](Engine::search_themes).
    pub fn search_themes_in_window(
        &self,
        req: &ThemeRequest,
        hits: &[(u32, f32)],
    ) -> Result<ThemeAnswer> {
        self.search_themes_from(req, Some(hits))
    }

    fn search_themes_from(
        &self,
        req: &ThemeRequest,
        hits: Option<&[(u32, f32)]>,
    ) -> Result<ThemeAnswer> {
        let deadline = Deadline::after(req.timeout);
        req.validate()?;
        if let Scope::Documents(keys) = &req.scope
            && keys.is_empty()
        {
            return Ok(ThemeAnswer::empty(Status::EmptyScope, None));
        }
        let view = match self.view() {
            Ok(v) => v,
            Err(e) => {
                let run_id = self.snapshot.load().as_ref().map(|s| s.run_id().to_owned());
                return Ok(ThemeAnswer::failed(run_id, "read", e.with_causes()));
            }
        };
        let Some(snap) = view.snapshot() else {
            return Ok(ThemeAnswer::empty(
                Status::IndexNotReady,
                Some(IndexState::NotReady),
            ));
        };
        let run_id = Some(snap.run_id().to_owned());
        let vector = match self
            .query_embedder
            .embed(&snap.manifest.embedder, &req.query)
        {
            Ok(v) => v,
            Err(e) => return Ok(ThemeAnswer::failed(run_id, "embed", e.with_causes())),
        };
        if let Some(d) = deadline.filter(Deadline::expired) {
            return Ok(ThemeAnswer {
                failures: vec![d.failure("while the query was embedded")],
                ..ThemeAnswer::failed(run_id, "", String::new())
            });
        }
        // A question with nothing the embedder reads (only emoji or punctuation, for the
        // hashing embedder) embeds to the zero vector, equally far from every theme: that is
        // no match, not the first themes by id with score 0.
        if vector.iter().all(|&x| x == 0.0) {
            return Ok(ThemeAnswer {
                run_id,
                index_state: Some(IndexState::Ready),
                ..ThemeAnswer::empty(Status::NoMatch, None)
            });
        }
        let window = match hits {
            Some(h) => theme::Window::Given(h),
            None => theme::Window::Index(self.config.candidate_search),
        };
        Ok(theme::search(&view, &vector, req, window, deadline))
    }

    /// The text and location behind evidence ids (passage ids), in the order asked. A hidden,
    /// deleted or superseded passage is answered `not_visible` without its text; an id the
    /// served run does not hold is `unknown`.
    ///
    /// # Errors
    /// [`EngineError::Visibility`] when the visibility store cannot be read.
    pub fn fetch_evidence(&self, ids: &[String]) -> Result<Vec<Evidence>> {
        Ok(evidence::fetch(&self.view()?, ids))
    }
}

/// The handle of a [`Engine::watch`] thread; dropping it stops the thread (and waits for it).
#[derive(Debug)]
pub struct Watcher {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::PassageRow;
    use crate::visibility::overlay::tests::write_run_of;

    /// A reload under service resolves the flags against the incoming run before it is
    /// served (the first query on it then resolves nothing); a first open leaves it to the
    /// first query.
    #[test]
    fn a_swap_resolves_visibility_before_the_new_run_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_run_of(dir.path(), &["a", "b"]);
        let engine = Engine::open(dir.path(), EngineConfig::default()).unwrap();
        assert!(engine.overlay.for_test_cached_runs().is_empty());
        engine
            .set_visibility(Target::Passage, "b#0", Visibility::Hidden, None)
            .unwrap();
        assert_eq!(engine.view().unwrap().num_hidden(), 1);
        assert_eq!(
            engine.overlay.for_test_cached_runs(),
            std::slice::from_ref(&a)
        );

        let b = write_run_of(dir.path(), &["a", "ab", "b"]);
        assert!(engine.reload().unwrap());
        assert_eq!(engine.overlay.for_test_cached_runs(), [b.clone(), a]);
        let view = engine.view().unwrap();
        assert_eq!(view.snapshot().unwrap().run_id(), b);
        assert!(view.is_hidden(PassageRow(2)));
        assert_eq!(view.num_hidden(), 1);
    }
}
