//! Timing and progress of the job's phases.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The phases run so far with their wall seconds, and whether to draw progress bars.
#[derive(Debug)]
pub(crate) struct Phases {
    progress: bool,
    seconds: BTreeMap<String, f64>,
}

/// A phase under way: its bar (counts, rate and ETA when its length is known, a spinner
/// otherwise) and its start.
#[derive(Debug)]
pub(crate) struct Phase {
    name: &'static str,
    pub(crate) bar: ProgressBar,
    started: Instant,
}

impl Phases {
    /// No phase yet; bars drawn on stderr when `progress` (the caller checks it is a terminal).
    pub(crate) fn new(progress: bool) -> Self {
        Self {
            progress,
            seconds: BTreeMap::new(),
        }
    }

    /// Starts phase `name`, of `len` units of work when known.
    pub(crate) fn start(&self, name: &'static str, len: Option<u64>) -> Phase {
        self.start_at(name, len, Instant::now())
    }

    /// Starts phase `name`, of `len` units of work when known, with its clock started at
    /// `started`: a phase that first waits for work done beside the previous one counts the
    /// wait as its own.
    pub(crate) fn start_at(&self, name: &'static str, len: Option<u64>, started: Instant) -> Phase {
        let target = if self.progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), target).with_style(
                ProgressStyle::with_template(
                    "{prefix:>15} [{bar:30}] {human_pos}/{human_len} {per_sec} eta {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            ),
            None => ProgressBar::with_draw_target(None, target).with_style(
                ProgressStyle::with_template("{prefix:>15} {spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        bar.set_prefix(name);
        bar.enable_steady_tick(Duration::from_millis(120));
        tracing::info!(phase = name, "start");
        Phase { name, bar, started }
    }

    /// Ends `phase` with `msg`, recording its wall seconds.
    pub(crate) fn finish(&mut self, phase: Phase, msg: &str) {
        let s = phase.started.elapsed().as_secs_f64();
        phase.bar.finish_with_message(format!("{msg} ({s:.2} s)"));
        tracing::info!(phase = phase.name, seconds = s, "{msg}");
        self.seconds.insert(phase.name.to_owned(), s);
    }

    /// Wall seconds of each finished phase, by name.
    pub(crate) fn seconds(&self) -> &BTreeMap<String, f64> {
        &self.seconds
    }

    /// The finished phases' seconds, taken.
    pub(crate) fn into_seconds(self) -> BTreeMap<String, f64> {
        self.seconds
    }
}
