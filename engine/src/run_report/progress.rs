//! The report's progress bar: one bar over every row the report reads, on standard error.
//!
//! A 10⁶-document run has tens of millions of relationship rows, which the report scans twice;
//! a person at a terminal sees which table is being read and how far it is. indicatif hides the
//! bar when standard error is not a terminal (a scheduler's log stays clean).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of one report build; a no-op when hidden.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total_rows` rows, drawn on standard error when `visible` (and standard error
    /// is a terminal), else hidden.
    pub(crate) fn new(visible: bool, total_rows: u64) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total_rows), target).with_style(
            ProgressStyle::with_template("report [{bar:30}] {percent:>3}% {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Self { bar }
    }

    /// Names the step now running (`reading relationships.parquet`, `writing the page`).
    pub(crate) fn step(&self, message: &str) {
        self.bar.set_message(message.to_owned());
    }

    /// Counts `rows` more rows read.
    pub(crate) fn advance(&self, rows: u64) {
        self.bar.inc(rows);
    }

    /// Removes the bar from the terminal.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
