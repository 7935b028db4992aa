//! `squall bench timing`'s machine part (issue 34): this machine's timer
//! latency as `cyclictest` (rt-tests) measures it, beside squall's
//! departure error with a data plane that sleeps to each deadline, one
//! that never sleeps, and the default (`--early-wakeup auto`).

use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use squall_emu::dataplane::DataplaneOptions;
use squall_emu::timing::TimingSummary;
use squall_emu::wakeup::EarlyWakeup;

use crate::bench_more::{PingFigures, Setup, emulate_with, scenario};

/// cyclictest's wake-up latency, µs: one thread at normal priority
/// (SCHED_OTHER, as the data plane runs) waking every `interval_us`,
/// `loops` times, from its histogram (`-h`).
#[derive(Clone, Debug, Serialize)]
pub struct Cyclictest {
    pub interval_us: u32,
    pub loops: u32,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// Runs cyclictest (None when it is not installed).
pub fn cyclictest(loops: u32) -> Result<Option<Cyclictest>> {
    let interval_us = 1000;
    let out = match Command::new("cyclictest")
        // `--policy other`, two words: `-p 0` or `--policy=other` leave
        // the thread in SCHED_FIFO at priority 2 (rt-tests 2.4, checked
        // with chrt -p on its thread).
        .args([
            "-q",
            "-m",
            "--policy",
            "other",
            "-i",
            &interval_us.to_string(),
            "-l",
            &loops.to_string(),
            "-h",
            "20000",
        ])
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context("run cyclictest"),
    };
    if !out.status.success() {
        bail!("cyclictest failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let (hist, max) = parse_histogram(&text).with_context(|| format!("cyclictest printed {text}"))?;
    let total: u64 = hist.iter().map(|(_, n)| n).sum();
    let at = |q: f64| {
        let rank = (q * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        hist.iter()
            .find(|(_, n)| {
                seen += n;
                seen >= rank
            })
            .map_or(max, |(us, _)| *us as f64)
    };
    Ok(Some(Cyclictest { interval_us, loops, p50_us: at(0.5), p99_us: at(0.99), p999_us: at(0.999), max_us: max }))
}

/// cyclictest's `-h` output: lines `LATENCY_US COUNT` (one thread), then
/// `# Max Latencies: N`; latencies past the histogram's end are counted
/// in `# Histogram Overflows` and taken at the maximum.
fn parse_histogram(text: &str) -> Option<(Vec<(u64, u64)>, f64)> {
    let mut hist = Vec::new();
    let mut max = None;
    let mut overflows = 0;
    for line in text.lines() {
        let field = |name: &str| line.strip_prefix(name).and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok());
        if let Some(m) = field("# Max Latencies:") {
            max = Some(m);
        } else if let Some(o) = field("# Histogram Overflows:") {
            overflows = o;
        } else if !line.starts_with('#') {
            let mut w = line.split_whitespace();
            if let (Some(us), Some(n)) = (w.next(), w.next()) {
                hist.push((us.parse().ok()?, n.parse().ok()?));
            }
        }
    }
    let max = max?;
    if overflows > 0 {
        hist.push((max, overflows));
    }
    Some((hist, max as f64))
}

/// One way of keeping time, under ping over 25 ms each way.
#[derive(Clone, Debug, Serialize)]
pub struct LoopFigures {
    pub label: String,
    pub early_wakeup: String,
    pub ping: PingFigures,
    pub timing: TimingSummary,
}

/// ping (`count` echoes 20 ms apart) over 25 ms each way with a data plane
/// that sleeps to each deadline (`--early-wakeup 0 s`), one that never
/// sleeps (`20 ms`: it spins) and the default (`auto`).
pub fn loops(count: u32) -> Result<Vec<LoopFigures>> {
    let stage = "delay = \"25 ms\"";
    let text = scenario(stage, stage, "");
    let ways = [
        ("sleeping", EarlyWakeup::Fixed(squall_link::Duration::ZERO)),
        ("spinning", EarlyWakeup::Fixed(squall_link::Duration::from_millis(20))),
        ("default", EarlyWakeup::Auto),
    ];
    let mut figures = Vec::new();
    for (label, early_wakeup) in ways {
        let setup = Setup { dataplane: DataplaneOptions { early_wakeup, ..Default::default() }, ..Setup::default() };
        let (report, dir, _) =
            emulate_with(&text, &[&format!("fixed@0.2s=ping -n -i 0.02 -c {count} 10.0.1.1")], &setup)?;
        let out = std::fs::read_to_string(dir.path().join("0-fixed.stdout"))?;
        figures.push(LoopFigures {
            label: label.to_string(),
            early_wakeup: early_wakeup.to_string(),
            ping: PingFigures::from_output(&out, count, 50.0)?,
            timing: report.dataplane.timing,
        });
    }
    Ok(figures)
}

/// One line per way of keeping time.
pub fn describe(l: &LoopFigures) -> String {
    let t = &l.timing;
    format!(
        "{:<9} (--early-wakeup {:<5}): departure error p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, {} late of {}; \
         late by cause: wake-up {}, preemption {}, slow write {}, busy {}; \
         data plane {:.1} % of a core (chosen {:.0} us, ceiling {:.0} us lowered {} times, spins {:.0} % lost); \
         writes p50 {:.1} us, p99 {:.1} us; ping median {:.2} ms, p99 {:.2} ms, avg {:.3} ms",
        l.label,
        l.early_wakeup,
        t.error_p50 * 1e6,
        t.error_p99 * 1e6,
        t.error_p999 * 1e6,
        t.late,
        t.deliveries,
        t.late_causes.wakeup_latency,
        t.late_causes.preemption,
        t.late_causes.slow_write,
        t.late_causes.overload,
        t.wakeup.dataplane_cpu_share * 100.0,
        t.wakeup.chosen * 1e6,
        t.wakeup.ceiling * 1e6,
        t.wakeup.ceiling_lowered,
        t.wakeup.spin_stolen_share * 100.0,
        t.writes.p50 * 1e6,
        t.writes.p99 * 1e6,
        l.ping.median_ms,
        l.ping.p99_ms,
        l.ping.avg_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictests_histogram_gives_its_percentiles() {
        // As cyclictest -q -h prints it for one thread (trimmed).
        let text = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000000\n000050 000090\n000060 000009\n\
                    000900 000001\n# Total: 000000100\n# Min Latencies: 00050\n# Avg Latencies: 00060\n\
                    # Max Latencies: 00900\n# Histogram Overflows: 00000\n";
        let (hist, max) = parse_histogram(text).unwrap();
        assert_eq!(hist.iter().map(|(_, n)| n).sum::<u64>(), 100);
        assert_eq!(max, 900.0);
        let with_overflow = text
            .replace("Overflows: 00000", "Overflows: 00002")
            .replace("Max Latencies: 00900", "Max Latencies: 25000");
        let (hist, max) = parse_histogram(&with_overflow).unwrap();
        assert_eq!(hist.last(), Some(&(25000, 2)));
        assert_eq!(max, 25000.0);
        assert!(parse_histogram("no histogram").is_none());
    }
}
