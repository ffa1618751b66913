//! Process measurements from `/proc` (Linux): CPU time, peak resident set size, a thread's
//! scheduler and paging counters, and the machine's steal time.

use std::fs;

/// Clock ticks per second of `/proc/self/stat` (`USER_HZ`, 100 on every mainstream Linux build).
const USER_HZ: f64 = 100.0;

/// CPU seconds (user + system, all threads) used by this process so far, or `None` off Linux.
pub fn cpu_seconds() -> Option<f64> {
    stat_cpu_seconds(&fs::read_to_string("/proc/self/stat").ok()?)
}

/// CPU seconds (user + system, all threads, dead ones included) of process `pid`, or `None`
/// when it is gone or off Linux.
pub fn cpu_seconds_of(pid: u32) -> Option<f64> {
    stat_cpu_seconds(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// User + system CPU seconds of a `/proc/<pid>/stat` line (proc(5)).
fn stat_cpu_seconds(stat: &str) -> Option<f64> {
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5), i.e. 11 and 12 after the name and state.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// The machine's 1-, 5- and 15-minute load averages as `/proc/loadavg` gives them
/// (`"1.02 0.87 0.60"`), or `"unknown"` off Linux: every timing the benches print carries it.
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Peak resident set size of this process (`VmHWM`) in bytes, or `None` off Linux.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

/// Current resident set size (`VmRSS`) in bytes, or `None` off Linux.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// Resets the peak resident set size to the current one (`echo 5 > /proc/self/clear_refs`), so a
/// later [`peak_rss_bytes`] measures one phase. Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn status_kib(key: &str) -> Option<u64> {
    kib_field(&fs::read_to_string("/proc/self/status").ok()?, key)
}

/// The value in kB of the line starting with `key` (`"VmHWM:"`) of a `/proc/<pid>/status` text.
pub fn kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Scheduler and paging counters of the calling thread, read from `/proc/thread-self`
/// (Linux, proc(5)): what a latency bench needs to tell a query that waited for a core, slept
/// (on a lock, a futex, I/O) or faulted from a query whose core was taken by the hypervisor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadCounters {
    /// Nanoseconds spent runnable without a core (`schedstat`, second field).
    pub run_queue_wait_ns: u64,
    /// Times the thread gave its core up itself: it slept on a lock, a futex or I/O
    /// (`voluntary_ctxt_switches` of `status`).
    pub voluntary_switches: u64,
    /// Times the scheduler took its core away (`nonvoluntary_ctxt_switches`).
    pub involuntary_switches: u64,
    /// Page faults served without I/O (`minflt`, field 10 of `stat`).
    pub minor_faults: u64,
    /// Page faults that waited for I/O (`majflt`, field 12 of `stat`).
    pub major_faults: u64,
    /// The CPU the thread last ran on (`processor`, field 39 of `stat`).
    pub cpu: u32,
}

impl ThreadCounters {
    /// The calling thread's counters now, or `None` off Linux (three small `/proc` reads,
    /// a few microseconds).
    pub fn read() -> Option<Self> {
        let run_queue_wait_ns = fs::read_to_string("/proc/thread-self/schedstat")
            .ok()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let status = fs::read_to_string("/proc/thread-self/status").ok()?;
        let count = |key: &str| -> Option<u64> {
            let line = status.lines().find(|l| l.starts_with(key))?;
            line[key.len()..].trim().parse().ok()
        };
        let stat = fs::read_to_string("/proc/thread-self/stat").ok()?;
        // Fields after the command name (in parentheses, may contain spaces): field n of
        // stat(5) is at index n - 3.
        let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
        let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
        Some(Self {
            run_queue_wait_ns,
            voluntary_switches: count("voluntary_ctxt_switches:")?,
            involuntary_switches: count("nonvoluntary_ctxt_switches:")?,
            minor_faults: field(10)?,
            major_faults: field(12)?,
            cpu: u32::try_from(field(39)?).ok()?,
        })
    }

    /// The counts from `earlier` to `self` (`cpu` stays `self`'s).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            run_queue_wait_ns: self
                .run_queue_wait_ns
                .saturating_sub(earlier.run_queue_wait_ns),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            cpu: self.cpu,
        }
    }
}

/// Steal time of each CPU of the machine so far, in nanoseconds (the eighth value of each
/// `cpuN` line of `/proc/stat`, kept in `USER_HZ` ticks, so a step is 10 ms): time the
/// hypervisor gave the virtual CPU's physical core to something else while the guest wanted to
/// run. Index = CPU number; `None` off Linux or when the kernel does not account steal.
pub fn steal_ns_per_cpu() -> Option<Vec<u64>> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let mut steal = Vec::new();
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            break;
        };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue; // the machine-wide `cpu` line
        }
        let mut fields = rest.split_whitespace();
        let cpu: usize = fields.next()?.parse().ok()?;
        let ticks: u64 = fields.nth(7)?.parse().ok()?;
        if steal.len() <= cpu {
            steal.resize(cpu + 1, 0);
        }
        steal[cpu] = (ticks as f64 / USER_HZ * 1e9) as u64;
    }
    (!steal.is_empty()).then_some(steal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc() {
        if cfg!(target_os = "linux") {
            assert!(cpu_seconds().is_some());
            let peak = peak_rss_bytes().unwrap();
            assert!(peak >= rss_bytes().unwrap() / 2 && peak > 0);
            let before = ThreadCounters::read().unwrap();
            // Touch fresh pages: minor faults of this thread.
            let v = vec![1_u8; 64 << 20];
            std::hint::black_box(&v);
            let after = ThreadCounters::read().unwrap();
            let d = after.since(&before);
            assert!(d.minor_faults > 0, "{before:?} -> {after:?}");
            let steal = steal_ns_per_cpu().unwrap();
            assert!((after.cpu as usize) < steal.len(), "{steal:?} {after:?}");
        }
    }
}
