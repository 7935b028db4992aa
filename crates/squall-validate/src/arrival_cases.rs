//! Case 27 of docs/validation.md: open-loop flow arrivals (issue 35).

use squall_analysis::confidence_interval;
use squall_analysis::summary_file::{BucketSummary, CountFlow, SIZE_BUCKETS};
use squall_link::{Distribution, Duration};
use squall_scenario::count::{expand_tcp, poisson_mean_gap, stage_rate};
use squall_scenario::{Scenario, TcpApp, Topology};
use squall_sim::RunResult;

use crate::Check;

/// The 1% critical value of the Kolmogorov–Smirnov distance for n
/// samples, 1.628/√n (asymptotic; conservative for a discrete law).
fn ks_critical(n: usize) -> f64 {
    1.628 / (n as f64).sqrt()
}

/// Kolmogorov–Smirnov distance sup |F_n − F| between the sorted samples
/// `xs` and the CDF `cdf` (right-continuous), `cdf_below` its left limit
/// (the same for a continuous law): compared at each distinct sample, the
/// empirical CDF after the last of equal samples and before the first.
fn ks_distance(xs: &[f64], cdf: impl Fn(f64) -> f64, cdf_below: impl Fn(f64) -> f64) -> f64 {
    let n = xs.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in xs.iter().enumerate() {
        if i == 0 || xs[i - 1] != x {
            d = d.max((cdf_below(x) - i as f64 / n).abs());
        }
        if xs.get(i + 1) != Some(&x) {
            d = d.max((cdf(x) - (i + 1) as f64 / n).abs());
        }
    }
    d
}

/// Case 27: Poisson arrivals at 60% of the 10 Mbit/s `bottleneck`, sizes
/// from the flow-size CDF scenarios/validation/27-web-sizes.cdf (mean
/// 279 200 B).
///
/// - The generator alone over a window of ~500 000 mean gaps (no packets):
///   the gaps pass a KS test against the exponential of mean
///   E[S]·8/(0.6·R) = 0.37227 s, the sizes against the file's CDF (linear
///   between points; sizes are whole bytes, so a size x is compared with
///   F(x + 0.5) and F(x − 0.5)), and the offered load Σ S·8 / (window·R)
///   is 60% within 1% (its standard deviation is √((1 + cv²)/N) ≈ 0.26%
///   of it, cv ≈ 1.51).
/// - The isolated probe (50 000 B alone on an identical path,
///   10 Mbit/s and 10 ms each way, Linux defaults: IW 10, 1448-byte
///   payloads in 1500-byte packets, 60-byte SYNs, 52-byte ACKs), by hand:
///   handshake 2·(0.048 + 10) = 20.096 ms; 35 segments (34·1448 + 768) in
///   slow-start rounds of 10, 20 and 5; a segment's RTT is 1.2 + 10 +
///   0.0416 + 10 = 21.2416 ms, round 1's 20 segments take 24 ms on the
///   link, so round 2 starts at 20.096 + 21.2416 + 24 = 65.3376 ms and its
///   last 820-byte packet arrives 4·1.2 + 0.656 + 10 ms later: 80.7936 ms.
/// - The web flows' FCT and slowdown (FCT over squall_sim::ideal) by size
///   bucket, each bucket's mean over the replications with its 95% CI;
///   no flow beats its ideal FCT (slowdown ≥ 1).
pub fn open_loop(scenario: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let mut checks = generator_checks(scenario);
    let probe: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.tcp_flows.iter().find(|f| f.name == "probe#0" && f.completed).map(|f| f.transfer_time))
        .collect();
    let probe_fct = if probe.len() == runs.len() { probe.iter().copied().fold(f64::NAN, f64::max) } else { f64::NAN };
    checks.push(Check::within("isolated 50 000-byte flow's FCT, s (hand count)", 0.0807936, probe_fct, None, 1e-9));
    checks.extend(bucket_checks(scenario, runs));
    checks
}

/// KS tests and the offered load of the `web` entry's generator over a
/// long window.
fn generator_checks(scenario: &Scenario) -> Vec<Check> {
    let web = &scenario.workload.tcp[0];
    let (TcpApp::Bulk(size), Some(arrivals)) = (&web.app, &web.arrivals) else {
        return vec![Check::exact("the first entry is a bulk arrivals entry", 1.0, 0.0)];
    };
    let Distribution::Cdf { points, .. } = size else {
        return vec![Check::exact("its sizes come from a CDF", 1.0, 0.0)];
    };
    let poisson = arrivals.poisson.as_ref();
    let rate = poisson.and_then(|p| stage_rate(scenario, &p.of));
    let (Some(poisson), Some(rate), Some(mean_size)) = (poisson, rate, size.mean()) else {
        return vec![Check::exact("Poisson arrivals of a stage with a rate", 1.0, 0.0)];
    };
    let load = poisson.load.get();
    let mean_gap = poisson_mean_gap(mean_size, load, rate).map_or(f64::NAN, |g| g.as_secs_f64());
    let window = 500_000.0 * mean_gap;
    let mut long = scenario.clone();
    long.duration = Duration::from_secs_f64(window);
    if let Some(a) = &mut long.workload.tcp[0].arrivals {
        a.until = None;
        a.from = Duration::ZERO;
    }
    let members = expand_tcp(&long, 0, scenario.seed);
    let starts: Vec<f64> = members.iter().filter_map(|m| m.flow.start.as_constant()).map(|d| d.as_secs_f64()).collect();
    let mut gaps: Vec<f64> = starts.iter().scan(0.0, |prev, &s| Some(s - std::mem::replace(prev, s))).collect();
    let mut sizes: Vec<f64> = members
        .iter()
        .filter_map(|m| match &m.flow.app {
            TcpApp::Bulk(b) => b.as_constant().map(|b| b.0 as f64),
            _ => None,
        })
        .collect();
    let offered = sizes.iter().sum::<f64>() * 8.0 / (window * rate.bits_per_sec() as f64);
    gaps.sort_by(f64::total_cmp);
    sizes.sort_by(f64::total_cmp);
    let exp_cdf = |x: f64| 1.0 - (-x / mean_gap).exp();
    let d_gaps = ks_distance(&gaps, exp_cdf, exp_cdf);
    // A draw v is stored as round(v) bytes: round(v) <= x when v < x + 0.5.
    let whole = |x: f64| squall_link::dist::cdf_at(points, x + 0.5, true);
    let whole_below = |x: f64| squall_link::dist::cdf_at(points, x - 0.5, true);
    let d_sizes = ks_distance(&sizes, whole, whole_below);
    let ks = |name: String, d: f64, n: usize| Check {
        name,
        expected: ks_critical(n),
        measured: d,
        ci: None,
        tolerance: "D < 1.628/sqrt(n)".into(),
        pass: d < ks_critical(n),
    };
    vec![
        ks(format!("KS distance, {} gaps vs exponential (mean {mean_gap:.5} s)", gaps.len()), d_gaps, gaps.len()),
        ks(format!("KS distance, {} sizes vs the CDF's {} points", sizes.len(), points.len()), d_sizes, sizes.len()),
        Check::within_relative("offered load over the long window", load, offered, None, 0.01),
    ]
}

/// FCT and slowdown of the `web` flows by size bucket, over replications.
fn bucket_checks(scenario: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let Ok(topology) = Topology::new(scenario) else {
        return vec![Check::exact("the scenario has a topology", 1.0, 0.0)];
    };
    let mut per_run = Vec::new();
    let mut lowest = f64::INFINITY;
    for run in runs {
        let rows: Vec<CountFlow> = expand_tcp(scenario, 0, run.seed)
            .into_iter()
            .filter_map(|m| {
                let t = run.tcp_flows.iter().find(|t| t.name == m.flow.name)?;
                let ideal = squall_sim::ideal::ideal_fct(scenario, &topology, &m.flow);
                let bytes = match &m.flow.app {
                    TcpApp::Bulk(b) => b.as_constant().map_or(0, |b| b.0),
                    _ => 0,
                };
                Some(CountFlow {
                    replication: 0,
                    entry: "web".into(),
                    flow: m.index.unwrap_or(0),
                    src: m.flow.from.clone(),
                    dst: m.flow.to.clone(),
                    dst_port: 0,
                    start: t.start,
                    bytes,
                    completed: t.completed,
                    fct: t.transfer_time,
                    goodput_bps: t.goodput_bps,
                    retransmitted_segments: 0,
                    timeouts: Some(0),
                    ideal_fct: ideal,
                    slowdown: ideal.map(|i| t.transfer_time / i),
                })
            })
            .collect();
        lowest = rows.iter().filter(|r| r.completed).filter_map(|r| r.slowdown).fold(lowest, f64::min);
        per_run.push(BucketSummary::of(&rows.iter().collect::<Vec<_>>()));
    }
    let mut checks = vec![Check {
        name: "lowest slowdown of any completed web flow (none beats its ideal)".into(),
        expected: 1.0,
        measured: lowest,
        ci: None,
        tolerance: ">= 1".into(),
        pass: lowest >= 1.0 - 1e-9,
    }];
    for (bucket, _, _) in SIZE_BUCKETS {
        let of = |f: fn(&BucketSummary) -> f64| -> Vec<f64> {
            per_run.iter().filter_map(|b| b.iter().find(|b| b.bucket == bucket).map(f)).collect()
        };
        let (fct, slowdown) = (of(|b| b.fct_mean), of(|b| b.slowdown_mean));
        if slowdown.len() < 2 {
            continue;
        }
        let (fct_ci, ci) = (confidence_interval(&fct, 0.95), confidence_interval(&slowdown, 0.95));
        checks.push(Check {
            name: format!(
                "{bucket}: mean FCT {:.4} s (±{:.4}), mean slowdown over {} replications",
                fct_ci.mean,
                fct_ci.half_width(),
                slowdown.len()
            ),
            expected: 1.0,
            measured: ci.mean,
            ci: Some(ci),
            tolerance: "CI >= 1".into(),
            pass: ci.low.is_finite() && ci.high >= ci.low && ci.mean >= 1.0,
        });
    }
    checks
}
