//! ping over `squall emu`, read back: its replies, its summary line, and
//! the statistics the emulator tests check them with.

use std::path::Path;
use std::process::Command;

use super::SQUALL;

/// One reply line of ping: `[1732900000.123456] 64 bytes from 10.0.1.1:
/// icmp_seq=3 ttl=64 time=20.1 ms (DUP!)`; `at` is the `-D` time stamp
/// (s) when given.
#[derive(Debug, Clone, Copy)]
pub struct Echo {
    pub seq: u64,
    pub rtt_ms: f64,
    pub at: Option<f64>,
    pub dup: bool,
}

/// The replies in ping's output, in the order printed.
pub fn echoes(ping: &str) -> Vec<Echo> {
    ping.lines()
        .filter_map(|l| {
            let field = |name: &str| l.split(name).nth(1)?.split_whitespace().next();
            let at = l.strip_prefix('[').and_then(|r| r.split(']').next()).and_then(|t| t.parse().ok());
            Some(Echo {
                seq: field("icmp_seq=")?.parse().ok()?,
                rtt_ms: field("time=")?.parse().ok()?,
                at,
                dup: l.contains("(DUP!)"),
            })
        })
        .collect()
}

/// How many of `n` timed echoes a test lets this kind of 2-core VM make
/// late by its timer tail: 2 %, rounded up. Measured here
/// (`squall bench timing`, 2026-12-01): a sleeping data plane's
/// departures p99.9 2.45 ms late; in 300 pings through `--inline`, three
/// deliveries 1.5 to 4.4 ms late; and in runs of the emulator tests, three
/// of 300 RTTs 2 to 5.3 ms above their slot (tests/trace_emu.rs
/// `ping_sees_netem_slots`) and three loaded RTTs of about 120 above
/// their bound (`ping_sees_a_background_pattern_phase_by_phase`), where
/// 2 were allowed. A model that gets the delay wrong moves most echoes,
/// not 2 %.
pub fn timer_tail(n: usize) -> usize {
    n.div_ceil(50)
}

/// Mean and (sample) standard deviation.
pub fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (mean, (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

/// Whether `k` of `n` is within 3.5 binomial standard errors of `p`.
pub fn within_binomial(k: usize, n: usize, p: f64) -> bool {
    let (k, n) = (k as f64, n as f64);
    (k / n - p).abs() <= 3.5 * (p * (1.0 - p) / n).sqrt()
}

/// ping's output over `squall emu --link LINK` and the `flags` after it
/// (`--uplink "delay 5ms"`, `--onoff ...`): ping runs on the mobile host
/// with `ping` its arguments before the fixed host's address, so its
/// echo requests cross the uplink and the replies the `--link` downlink.
pub fn ping_link(link: &str, flags: &[&str], ping: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    link_script(link, flags, &format!("ping {ping} $SQUALL_PEER"), &dir.path().join("out")).0
}

/// `sh -c SCRIPT` on the mobile host over `squall emu --link LINK FLAGS
/// --out OUT` (`$SQUALL_PEER` is the fixed host's address), run in
/// `OUT`'s parent directory (where a trace named on the line is read):
/// the script's output and squall's stderr.
pub fn link_script(link: &str, flags: &[&str], script: &str, out: &Path) -> (String, String) {
    let o = Command::new(SQUALL)
        .current_dir(out.parent().unwrap())
        .args(["emu", "--link", link])
        .args(flags)
        .arg("--out")
        .arg(out)
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), stderr)
}

/// The replies in order of arrival (`-D` time stamps), in batches: a
/// reply less than `gap` seconds after the one before is in its batch
/// (one write of the emulator's).
pub fn batches(mut e: Vec<Echo>, gap: f64) -> Vec<Vec<Echo>> {
    e.sort_by(|a, b| a.at.unwrap().total_cmp(&b.at.unwrap()));
    let mut batches: Vec<Vec<Echo>> = Vec::new();
    for x in e {
        match batches.last_mut() {
            Some(b) if x.at.unwrap() - b.last().unwrap().at.unwrap() < gap => b.push(x),
            _ => batches.push(vec![x]),
        }
    }
    batches
}

/// Lag-`lag` autocorrelation of `x`.
pub fn autocorrelation(x: &[f64], lag: usize) -> f64 {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    let den: f64 = x.iter().map(|v| (v - m).powi(2)).sum();
    x.windows(lag + 1).map(|w| (w[0] - m) * (w[lag] - m)).sum::<f64>() / den
}

/// ping's `rtt min/avg/max/mdev` over `squall emu --link LINK` (ping
/// runs on the mobile host, `count` echoes 10 ms apart).
pub fn ping_over(link: &str, count: u32) -> [f64; 4] {
    ping_over_with(link, &[], count)
}

/// The same with `flags` after the link (`--uplink "delay 5ms"`).
pub fn ping_over_with(link: &str, flags: &[&str], count: u32) -> [f64; 4] {
    let stdout = ping_link(link, flags, &format!("-c {count} -i 0.01 -q"));
    // `rtt min/avg/max/mdev = 22.828/41.372/59.726/8.079 ms, pipe 5`
    let line = stdout.lines().find(|l| l.contains("min/avg/max/mdev")).unwrap_or_else(|| panic!("{stdout}"));
    let v: Vec<f64> = line
        .split('=')
        .nth(1)
        .unwrap()
        .split(" ms")
        .next()
        .unwrap()
        .trim()
        .split('/')
        .map(|x| x.parse().unwrap())
        .collect();
    println!("{link}: {line}");
    [v[0], v[1], v[2], v[3]]
}
