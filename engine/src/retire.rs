//! Releasing what queries may still hold off the query path.
//!
//! A swapped-out run, or the visibility resolved for it, is freed by whoever drops the last
//! reference. Left to chance that is a query, which then pays for unmapping files and freeing
//! indexes after its answer is made (milliseconds for a large run). [`retire`] hands the
//! reference to a thread that waits for the other holders and drops it last, the way
//! crossbeam's epoch collector defers a free until no reader can see the value.

use std::sync::Arc;
use std::time::Duration;

/// How often a retiring thread looks whether it holds the last reference.
const POLL: Duration = Duration::from_millis(2);

/// Drops `old` on a thread of its own once it holds the last reference, polling every 2 ms.
/// `what` names the value in the debug log when no thread can be started; then `old` is
/// dropped here at once and the value goes with its last holder, as any `Arc`.
pub(crate) fn retire<T: Send + Sync + 'static>(old: Arc<T>, what: &str) {
    let spawned = std::thread::Builder::new()
        .name("agrag-retire".into())
        .spawn(move || {
            while Arc::strong_count(&old) > 1 {
                std::thread::sleep(POLL);
            }
        });
    if let Err(e) = spawned {
        tracing::debug!("no thread to release {what}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records the name of the thread that drops it.
    struct Recorder(Arc<Mutex<Option<String>>>);
    impl Drop for Recorder {
        fn drop(&mut self) {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            *self.0.lock().unwrap() = Some(name);
        }
    }

    /// The value outlives its retirement while another holder keeps it, and is dropped by
    /// the retiring thread, not by that holder, once the holder lets go.
    #[test]
    fn the_last_holder_does_not_pay_the_drop() {
        let dropped_by = Arc::new(Mutex::new(None));
        let value = Arc::new(Recorder(dropped_by.clone()));
        let holder = value.clone();
        retire(value, "a test value");
        std::thread::sleep(POLL * 5);
        assert_eq!(*dropped_by.lock().unwrap(), None, "dropped while held");
        drop(holder);
        let start = std::time::Instant::now();
        while dropped_by.lock().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(10), "never dropped");
            std::thread::sleep(POLL);
        }
        assert_eq!(dropped_by.lock().unwrap().as_deref(), Some("agrag-retire"));
    }
}
