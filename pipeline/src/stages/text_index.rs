//! Beside the stages: the run's full-text index, built from the corpus as soon as ingest has
//! read it.
//!
//! The index needs only the documents' titles and passages, and tantivy indexes on one
//! thread. Built at publish, beside the tables, it made the publish phase as long as the
//! index's build (at 10⁵ documents about 7 CPU-seconds of the phase's 23); started after
//! ingest, it runs in the gaps the other stages leave (the linker's compilation, the stages'
//! sequential parts, writes waiting on the disk), and publish only waits for it when it has
//! not finished by then.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;

use agrag_engine::EngineError;
use agrag_engine::format::{BuiltTextIndex, PendingTextIndex, TextIndexJob};

use crate::ingest::{CorpusColumns, ReleasingReader};

/// Starts building the full-text index of `corpus` through `job` on a thread of `scope`, and
/// returns the wait for it, for [`RunColumns::text_index`](agrag_engine::format::RunColumns).
/// Dropped uncalled (the run failed), the wait sets `cancel`, which ends the build at the
/// next document, and joins the thread, so that the staging folder is removed only once
/// nothing writes into it.
pub(crate) fn spawn<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    job: TextIndexJob,
    corpus: &'env CorpusColumns,
    cancel: &'env AtomicBool,
) -> PendingTextIndex<'scope> {
    let thread = TextIndexThread {
        handle: Some(scope.spawn(move || build(job, corpus, cancel))),
        cancel,
    };
    Box::new(move || thread.wait())
}

/// The building thread; cancelled and joined when dropped unwaited.
struct TextIndexThread<'scope> {
    handle: Option<ScopedJoinHandle<'scope, agrag_engine::Result<BuiltTextIndex>>>,
    cancel: &'scope AtomicBool,
}

impl TextIndexThread<'_> {
    fn wait(mut self) -> agrag_engine::Result<BuiltTextIndex> {
        match self.handle.take().map(ScopedJoinHandle::join) {
            Some(Ok(built)) => built,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Err(EngineError::Internal(
                "the full-text index was waited for twice".into(),
            )),
        }
    }
}

impl Drop for TextIndexThread<'_> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            self.cancel.store(true, Ordering::Relaxed);
            // The run has failed already; what the build returns no longer matters.
            let _ = handle.join();
        }
    }
}

/// Builds the full-text index of `corpus` through `job`, document rows in order. Stops
/// early, with an error, once `cancel` is set. The passages are read through a
/// [`ReleasingReader`], so what the index has read leaves the resident set.
///
/// # Errors
/// Those of [`TextIndexJob::build`]; [`EngineError::Internal`] when cancelled.
fn build(
    job: TextIndexJob,
    corpus: &CorpusColumns,
    cancel: &AtomicBool,
) -> agrag_engine::Result<BuiltTextIndex> {
    let started = Instant::now();
    // At idle priority: the index takes only what the stages leave of the cores (the
    // linker's compilation, their sequential parts, waits on the disk) instead of a share of
    // the busy parts; tantivy's indexing thread, started from this one, inherits it. Publish
    // waits for the index when it is not done by then, and the index then runs alone.
    if let Err(e) = thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        thread_priority::ThreadPriority::Min,
        thread_priority::ThreadSchedulePolicy::Normal(
            thread_priority::NormalThreadSchedulePolicy::Idle,
        ),
    ) {
        tracing::debug!(error = ?e, "full-text index: idle priority refused, built at normal priority");
    }
    let reader = ReleasingReader::new(corpus);
    let documents = (0..corpus.num_documents())
        .take_while(|_| !cancel.load(Ordering::Relaxed))
        .map(|d| {
            let passages: Vec<&str> = corpus.passage_rows(d).map(|p| reader.passage(p)).collect();
            (corpus.title(d), passages)
        });
    let built = job.build(documents)?;
    if cancel.load(Ordering::Relaxed) {
        return Err(EngineError::Internal(
            "the full-text index was cancelled with the run".into(),
        ));
    }
    tracing::info!(
        seconds = started.elapsed().as_secs_f64(),
        documents = corpus.num_documents(),
        "full-text index built beside the stages"
    );
    Ok(built)
}
