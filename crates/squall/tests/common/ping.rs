//! ping over `squall emu`, read back: its replies, its summary line, and
//! the statistics the emulator tests check them with.

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
    let o = Command::new(SQUALL)
        .args(["emu", "--link", link])
        .args(flags)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--", "sh", "-c", &format!("ping {ping} $SQUALL_PEER")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
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
