//! Runs a child process under a memory watchdog and measures it from `/proc` (Linux): wall and
//! CPU seconds and peak resident set size, for the whole process and per phase of its log.
//!
//! Phases come from the child's stderr: a line with `phase=NAME` and the word `start` opens
//! phase `NAME`; a line with `phase=NAME` and `seconds=` closes it (the format of
//! `agrag-pipeline`'s log when stderr is not a terminal). The time between two phases is an
//! interval of its own, named `after NAME`. At every boundary the watcher reads the child's CPU
//! time (`/proc/<pid>/stat`) and its peak RSS (`VmHWM` in `/proc/<pid>/status`), then resets
//! the peak to the current RSS (`echo 5 > /proc/<pid>/clear_refs`, Linux ≥ 4.0, see proc(5)),
//! so each interval's peak is the kernel's own high-water mark over exactly that interval, and
//! the process peak is the largest of them. Where the reset is refused, an interval's peak is
//! the largest `VmRSS` sampled in it (every poll) and is marked as sampled.
//!
//! The watchdog kills the child (SIGKILL) when its RSS exceeds a limit, the machine's
//! `MemAvailable` falls below a floor or it runs past a time limit, so a run that would exhaust a shared machine becomes a
//! measured failure instead.

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Limits and sampling of [`run_watched`].
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Kill the child when its resident set exceeds this many bytes.
    pub rss_limit_bytes: u64,
    /// Kill the child when the machine's `MemAvailable` falls below this many bytes.
    pub min_available_bytes: u64,
    /// Time between two samples.
    pub poll: Duration,
    /// Kill the child when it has run this long.
    pub max_wall: Duration,
}

/// One stretch of the child's life: a phase of its log, the gap after one, its start-up
/// (`startup`) or its end after the last phase (`exit`).
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Phase name, `after NAME`, `startup` or `exit`.
    pub name: String,
    /// Whether this is a phase the child named (not a gap).
    pub is_phase: bool,
    /// Wall seconds, as seen by the watcher.
    pub wall_seconds: f64,
    /// CPU seconds (user + system, all threads) of the child in it.
    pub cpu_seconds: f64,
    /// Peak resident set in it, bytes.
    pub peak_rss_bytes: u64,
    /// Resident set when it began, bytes (0 for `startup`).
    pub start_rss_bytes: u64,
    /// Whether the peak is only the largest sample (the kernel's high-water mark was not
    /// available for this interval).
    pub is_sampled: bool,
    /// The log message that closed the phase (empty for gaps).
    pub message: String,
}

/// What [`run_watched`] measured.
#[derive(Debug, Clone)]
pub struct Watched {
    /// Exit status (a killed child has one too).
    pub status: ExitStatus,
    /// Why the watchdog killed the child, if it did.
    pub killed: Option<String>,
    /// Wall seconds from spawn to exit.
    pub wall_seconds: f64,
    /// CPU seconds of the child up to its last sample (the last ≤ `poll` before exit is missed).
    pub cpu_seconds: f64,
    /// Peak resident set of the whole process, bytes: the largest interval peak.
    pub peak_rss_bytes: u64,
    /// Intervals in time order.
    pub intervals: Vec<Interval>,
    /// Everything the child wrote to stdout.
    pub stdout: String,
    /// The last lines the child wrote to stderr.
    pub stderr_tail: Vec<String>,
}

struct State {
    pid: u32,
    name: String,
    is_phase: bool,
    start: Instant,
    start_cpu: f64,
    sampled_peak: u64,
    start_rss: u64,
    last_cpu: f64,
    hwm_works: bool,
    intervals: Vec<Interval>,
}

fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    crate::measure::kib_field(&status, key)
}

/// CPU seconds (user + system, all threads, dead ones included) of process `pid`.
pub fn proc_cpu_seconds(pid: u32) -> Option<f64> {
    crate::measure::cpu_seconds_of(pid)
}

/// The machine's `MemAvailable` in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    crate::measure::kib_field(&info, "MemAvailable:").map(|k| k * 1024)
}

impl State {
    /// Closes the current interval and opens `name`.
    fn boundary(&mut self, name: String, is_phase: bool, message: String, alive: bool) {
        let now = Instant::now();
        let mut peak = self.sampled_peak;
        let mut is_sampled = true;
        if alive {
            if let Some(cpu) = proc_cpu_seconds(self.pid) {
                self.last_cpu = cpu;
            }
            if self.hwm_works
                && let Some(hwm) = proc_status_kib(self.pid, "VmHWM:")
            {
                peak = peak.max(hwm * 1024);
                is_sampled = false;
            }
            // Start the next interval's high-water mark at the current RSS.
            self.hwm_works =
                self.hwm_works && fs::write(format!("/proc/{}/clear_refs", self.pid), "5").is_ok();
        }
        self.intervals.push(Interval {
            name: std::mem::replace(&mut self.name, name),
            is_phase: std::mem::replace(&mut self.is_phase, is_phase),
            wall_seconds: (now - self.start).as_secs_f64(),
            cpu_seconds: (self.last_cpu - self.start_cpu).max(0.0),
            peak_rss_bytes: peak,
            start_rss_bytes: self.start_rss,
            is_sampled,
            message,
        });
        self.start = now;
        self.start_cpu = self.last_cpu;
        self.sampled_peak = proc_status_kib(self.pid, "VmRSS:").map_or(0, |k| k * 1024);
        self.start_rss = self.sampled_peak;
    }
}

/// The phase event of one log line: `(name, is_start, message)`.
fn phase_event(line: &str) -> Option<(String, bool, String)> {
    let at = line.find("phase=")?;
    let value = line[at + 6..].split_whitespace().next()?;
    let name = value.trim_matches('"').to_owned();
    let head = &line[..at];
    // The message sits between the target ("agrag_pipeline::run: ") and the fields.
    let message = head
        .rfind(": ")
        .map_or(head, |i| &head[i + 2..])
        .trim()
        .to_owned();
    if line.contains("seconds=") {
        Some((name, false, message))
    } else if message == "start" {
        Some((name, true, String::new()))
    } else {
        None
    }
}

/// Spawns `cmd` (stdout and stderr piped), watches it until it exits and returns what was
/// measured. `echo` receives every stderr line as it arrives (to show progress).
///
/// # Errors
/// The error of spawning the child or of waiting for it.
pub fn run_watched(
    mut cmd: Command,
    cfg: &WatchConfig,
    echo: impl Fn(&str) + Send + 'static,
) -> io::Result<Watched> {
    let spawned = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let state = Arc::new(Mutex::new(State {
        pid,
        name: "startup".into(),
        is_phase: false,
        start: spawned,
        start_cpu: 0.0,
        sampled_peak: 0,
        start_rss: 0,
        last_cpu: 0.0,
        hwm_works: fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok(),
        intervals: Vec::new(),
    }));
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_state = Arc::clone(&state);
    let err_thread = std::thread::spawn(move || {
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some((name, is_start, message)) = phase_event(&line) {
                let mut st = err_state.lock().unwrap_or_else(PoisonError::into_inner);
                if is_start {
                    st.boundary(name, true, String::new(), true);
                } else {
                    st.boundary(format!("after {name}"), false, message, true);
                }
            }
            echo(&line);
            if tail.len() == 20 {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        Vec::from(tail)
    });
    let mut killed = None;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        {
            let mut st = state.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(cpu) = proc_cpu_seconds(pid) {
                st.last_cpu = cpu;
            }
            let rss = proc_status_kib(pid, "VmRSS:").map_or(0, |k| k * 1024);
            st.sampled_peak = st.sampled_peak.max(rss);
            if killed.is_none() {
                let available = mem_available_bytes().unwrap_or(u64::MAX);
                let reason = if rss > cfg.rss_limit_bytes {
                    Some(format!(
                        "killed by the watchdog: RSS {:.2} GB over the limit of {:.2} GB",
                        rss as f64 / 1e9,
                        cfg.rss_limit_bytes as f64 / 1e9
                    ))
                } else if spawned.elapsed() > cfg.max_wall {
                    Some(format!(
                        "killed by the watchdog after {:.0} s (the time limit) at RSS {:.2} GB",
                        cfg.max_wall.as_secs_f64(),
                        rss as f64 / 1e9
                    ))
                } else if available < cfg.min_available_bytes {
                    Some(format!(
                        "killed by the watchdog: the machine's MemAvailable fell to {:.2} GB (floor {:.2} GB) at RSS {:.2} GB",
                        available as f64 / 1e9,
                        cfg.min_available_bytes as f64 / 1e9,
                        rss as f64 / 1e9
                    ))
                } else {
                    None
                };
                if let Some(r) = reason {
                    // Close the interval while /proc still has the child.
                    let name = format!("{} (killed)", st.name);
                    st.boundary(name, false, String::new(), true);
                    child.kill()?;
                    killed = Some(r);
                }
            }
        }
        std::thread::sleep(cfg.poll);
    };
    let wall_seconds = spawned.elapsed().as_secs_f64();
    let stdout = out_thread.join().unwrap_or_default();
    let stderr_tail = err_thread.join().unwrap_or_default();
    let mut st = state.lock().unwrap_or_else(PoisonError::into_inner);
    let last = if st.is_phase {
        format!("{} (unfinished)", st.name)
    } else if st.name.starts_with("after ") && st.intervals.iter().any(|i| i.is_phase) {
        "exit".to_owned()
    } else {
        st.name.clone()
    };
    st.name = last;
    st.boundary(String::new(), false, String::new(), false);
    let intervals = std::mem::take(&mut st.intervals);
    Ok(Watched {
        status,
        killed,
        wall_seconds,
        cpu_seconds: st.last_cpu,
        peak_rss_bytes: intervals
            .iter()
            .map(|i| i.peak_rss_bytes)
            .max()
            .unwrap_or(0),
        intervals,
        stdout,
        stderr_tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_lines_of_the_pipeline_log() {
        let start = "2026-12-02T01:40:11.123Z  INFO agrag_pipeline::run: start phase=\"link\"";
        assert_eq!(
            phase_event(start),
            Some(("link".into(), true, String::new()))
        );
        let end = "2026-12-02T01:40:12.5Z  INFO agrag_pipeline::run: 10 mentions, 3 of 4 documents linked phase=\"link\" seconds=1.25";
        assert_eq!(
            phase_event(end),
            Some((
                "link".into(),
                false,
                "10 mentions, 3 of 4 documents linked".into()
            ))
        );
        assert_eq!(phase_event("WARN something else"), None);
    }

    #[test]
    fn a_shell_child_is_measured_per_phase() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(
            "echo 'x: start phase=\"a\"' >&2; sleep 0.3; \
             echo 'x: done phase=\"a\" seconds=0.3' >&2; echo out",
        );
        let cfg = WatchConfig {
            rss_limit_bytes: u64::MAX,
            min_available_bytes: 0,
            poll: Duration::from_millis(10),
            max_wall: Duration::from_secs(60),
        };
        let w = run_watched(cmd, &cfg, |_| {}).unwrap();
        assert!(w.status.success() && w.killed.is_none());
        assert_eq!(w.stdout, "out\n");
        let names: Vec<&str> = w.intervals.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["startup", "a", "exit"]);
        assert!(w.intervals[1].wall_seconds >= 0.25 && w.intervals[1].message == "done");
        assert!(w.peak_rss_bytes > 0);
    }

    #[test]
    fn the_watchdog_kills_a_child_over_its_limit() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        let cfg = WatchConfig {
            rss_limit_bytes: 1,
            min_available_bytes: 0,
            poll: Duration::from_millis(10),
            max_wall: Duration::from_secs(60),
        };
        let w = run_watched(cmd, &cfg, |_| {}).unwrap();
        assert!(!w.status.success());
        assert!(w.killed.unwrap().contains("over the limit"));
        assert!(w.wall_seconds < 4.0);
    }
}
