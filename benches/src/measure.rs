//! Process measurements from `/proc` (Linux): CPU time and peak resident set size.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc() {
        if cfg!(target_os = "linux") {
            assert!(cpu_seconds().is_some());
            let peak = peak_rss_bytes().unwrap();
            assert!(peak >= rss_bytes().unwrap() / 2 && peak > 0);
        }
    }
}
