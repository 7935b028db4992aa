//! What the benchmarks' soaks share: the `--soak` duration and the memory
//! figures read from /proc/PID/status.

use squall_link::Duration;

/// A "kB" field (`VmHWM`, `VmRSS`, ...) of /proc/PID/status (proc(5)); `pid`
/// may be `self`.
pub(crate) fn proc_status_kb(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A soak duration: squall's time units, plus "10m" for ten minutes.
pub(crate) fn parse_soak_duration(s: &str) -> Result<Duration, String> {
    let minutes = s.strip_suffix('m').filter(|n| !n.is_empty() && n.trim().parse::<f64>().is_ok());
    let text = minutes.map_or_else(|| s.to_string(), |n| format!("{n} min"));
    let d: Duration = text.parse().map_err(|e| format!("{e}"))?;
    if d == Duration::ZERO {
        return Err("the soak needs a positive duration, like 10m".into());
    }
    Ok(d)
}
