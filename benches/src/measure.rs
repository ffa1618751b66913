//! Process measurements from `/proc` (Linux): CPU time and peak resident set size.

use std::fs;

/// Clock ticks per second of `/proc/self/stat` (`USER_HZ`, 100 on every mainstream Linux build).
const USER_HZ: f64 = 100.0;

/// CPU seconds (user + system, all threads) used by this process so far, or `None` off Linux.
pub fn cpu_seconds() -> Option<f64> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5), i.e. 11 and 12 after the name and state.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
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
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
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
