//! Queries over one [`View`](crate::View): theme search, concept search and evidence
//! lookup, each request type beside its query.

pub mod concept;
pub mod evidence;
pub mod theme;

use serde::Serialize;

/// Where a passage sits in its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Location {
    /// 0-based passage index within the document.
    pub position: u32,
}

/// Which documents a query may read. The default is every document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every document of the run.
    #[default]
    All,
    /// Only these document keys (unknown keys match nothing).
    Documents(Vec<String>),
}

/// The question of a theme search: text to embed, or a vector embedded by the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryInput {
    /// Natural-language text, embedded by the engine.
    Text(String),
    /// A query vector and the model that made it (checked against the run's embedder).
    Vector {
        /// Model name of the vector.
        model: String,
        /// The vector (length must be the run's dimension).
        vector: Vec<f32>,
    },
}

/// A query's deadline: the moment its timeout ends, checked between the steps of the read
/// (after embedding, after the candidate window, before each candidate), so an expired query
/// answers `failed` with a failure whose leg is `timeout` and returns nothing half-computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// `None` when `now + timeout` is past what `Instant` can represent (a timeout of
    /// centuries): such a deadline never expires rather than overflowing.
    at: Option<std::time::Instant>,
    timeout: std::time::Duration,
}

impl Deadline {
    /// The deadline `timeout` from now; `None` for no timeout.
    pub fn after(timeout: Option<std::time::Duration>) -> Option<Self> {
        timeout.map(|timeout| Self {
            at: std::time::Instant::now().checked_add(timeout),
            timeout,
        })
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.at.is_some_and(|at| std::time::Instant::now() >= at)
    }

    /// What is left of the timeout (zero once it has passed).
    pub fn remaining(&self) -> std::time::Duration {
        match self.at {
            Some(at) => at.saturating_duration_since(std::time::Instant::now()),
            None => self.timeout,
        }
    }

    /// The failure an expired query answers with: leg `timeout`, saying when it expired.
    pub fn failure(&self, stage: &str) -> theme::Failure {
        theme::Failure {
            leg: "timeout".into(),
            message: format!(
                "the timeout of {:.3} s passed {stage}; nothing was returned",
                self.timeout.as_secs_f64()
            ),
        }
    }
}

/// Checks a request's timeout: `None` or a positive duration.
pub(crate) fn validate_timeout(timeout: Option<std::time::Duration>) -> crate::Result<()> {
    match timeout {
        Some(t) if t.is_zero() => Err(crate::EngineError::InvalidArgument {
            field: "timeout",
            value: "0 s".into(),
            expected: "a positive duration, or no timeout",
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::Deadline;
    use std::time::Duration;

    #[test]
    fn a_timeout_past_what_an_instant_holds_never_expires_and_does_not_panic() {
        let d = Deadline::after(Some(Duration::MAX)).unwrap();
        assert!(!d.expired());
        assert_eq!(d.remaining(), Duration::MAX);
        let d = Deadline::after(Some(Duration::from_secs_f64(1e19))).unwrap();
        assert!(!d.expired());
        assert!(
            Deadline::after(Some(Duration::from_nanos(1))).is_some_and(|d| {
                std::thread::sleep(Duration::from_millis(1));
                d.expired() && d.remaining().is_zero()
            })
        );
    }
}
