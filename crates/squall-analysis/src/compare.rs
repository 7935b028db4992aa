//! Parity of the two engines: one scenario's flows in the simulator and in
//! the emulator, each analysed from its pcaps by the same code
//! ([`crate::flows`]), side by side per flow and metric with the relative
//! difference (emu − sim) / emu and a verdict against a tolerance;
//! compare.csv, and compare.html with the same table and the first
//! replication of each engine overlaid (time-sequence, cwnd, RTT).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use crate::detail::RunDetail;
use crate::flows::FlowStats;
use crate::plot::{Mark, Series, series_plot};
use crate::report::{csv_field, html, metric};
use crate::stats::{Summary, summarize};

/// What is compared for a TCP flow: goodput (bit/s), retransmitted data
/// segments (% of those sent), mean RTT (s, Karn's rule from the sender's
/// capture) and elapsed time (s, first packet sent to last received: the
/// transfer time of a bulk flow).
pub const TCP_METRICS: &[&str] = &["goodput_bps", "retransmitted_pct", "rtt_mean", "elapsed"];
/// What is compared for a UDP flow: goodput (bit/s), mean one-way delay
/// (s) and elapsed time (s).
pub const UDP_METRICS: &[&str] = &["goodput_bps", "delay_mean", "elapsed"];

/// One workload's flow, found in each engine's runs.
#[derive(Clone, Debug, Default)]
pub struct MatchedFlow {
    /// The workload's name in the scenario.
    pub name: String,
    /// "tcp" or "udp".
    pub protocol: &'static str,
    /// The flow's label in each engine's analysis (the server ports
    /// differ: the simulator's and the emulator's bulk servers listen on
    /// ports of their own).
    pub sim_label: String,
    pub emu_label: String,
    /// (replication, the flow in that run), for the runs that had it.
    pub sim: Vec<(u32, FlowStats)>,
    pub emu: Vec<(u32, FlowStats)>,
}

impl MatchedFlow {
    pub fn metrics(&self) -> &'static [&'static str] {
        if self.protocol == "tcp" { TCP_METRICS } else { UDP_METRICS }
    }
}

/// Largest |relative difference| that passes, per metric, as a fraction
/// (0.1 for 10%).
#[derive(Clone, Debug, PartialEq)]
pub struct Tolerances {
    pub default: f64,
    pub per_metric: BTreeMap<String, f64>,
}

impl Tolerances {
    pub fn of(&self, metric: &str) -> f64 {
        self.per_metric.get(metric).copied().unwrap_or(self.default)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// One flow and metric in both engines.
#[derive(Clone, Debug)]
pub struct ParityRow {
    pub flow: String,
    pub sim_label: String,
    pub emu_label: String,
    pub metric: &'static str,
    pub sim: Summary,
    pub emu: Summary,
    /// (emu mean − sim mean) / emu mean.
    pub relative_difference: f64,
    pub tolerance: f64,
    pub verdict: Verdict,
}

/// (emu − sim) / emu: how far the simulator is from real Linux, relative
/// to Linux. 0 when both are equal (two zeros included); infinite when
/// only the emulator's is 0; NaN when either is missing.
pub fn relative_difference(sim: f64, emu: f64) -> f64 {
    if sim == emu { 0.0 } else { (emu - sim) / emu }
}

/// Pass when |relative difference| ≤ tolerance; a missing value fails.
pub fn verdict(relative_difference: f64, tolerance: f64) -> Verdict {
    if relative_difference.abs() <= tolerance { Verdict::Pass } else { Verdict::Fail }
}

/// The rows of the parity table: every flow, every metric of its protocol.
pub fn parity(flows: &[MatchedFlow], tolerances: &Tolerances) -> Vec<ParityRow> {
    let mut rows = Vec::new();
    for f in flows {
        for &m in f.metrics() {
            let values = |runs: &[(u32, FlowStats)]| -> Vec<f64> { runs.iter().map(|(_, s)| metric(s, m)).collect() };
            let (sim, emu) = (summarize(&values(&f.sim)), summarize(&values(&f.emu)));
            let d = relative_difference(sim.mean, emu.mean);
            let tolerance = tolerances.of(m);
            rows.push(ParityRow {
                flow: f.name.clone(),
                sim_label: f.sim_label.clone(),
                emu_label: f.emu_label.clone(),
                metric: m,
                sim,
                emu,
                relative_difference: d,
                tolerance,
                verdict: verdict(d, tolerance),
            });
        }
    }
    rows
}

/// A metric's name for people, with its unit as the table shows it.
pub fn metric_title(metric: &str) -> &'static str {
    match metric {
        "goodput_bps" => "goodput",
        "retransmitted_pct" => "retransmitted",
        "rtt_mean" => "mean RTT",
        "delay_mean" => "mean delay",
        "elapsed" => "elapsed",
        _ => "?",
    }
}

/// The unit people read `metric` in: (factor from the SI value, decimals,
/// unit). Goodput in Mbit/s, RTT and delay in ms, elapsed time in s,
/// retransmissions in %.
fn unit(metric: &str) -> (f64, usize, &'static str) {
    match metric {
        "goodput_bps" => (1e-6, 3, "Mbit/s"),
        "retransmitted_pct" => (1.0, 3, "%"),
        "rtt_mean" | "delay_mean" => (1e3, 2, "ms"),
        "elapsed" => (1.0, 3, "s"),
        _ => (1.0, 6, ""),
    }
}

/// A value of `metric` in the unit people read it in.
pub fn display(metric: &str, value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    let (factor, decimals, unit) = unit(metric);
    format!("{:.*} {unit}", decimals, value * factor)
}

/// `mean ± 95% CI half-width unit`.
pub fn display_summary(metric: &str, s: &Summary) -> String {
    if s.n == 0 || !s.mean.is_finite() {
        return "no flow".into();
    }
    let (factor, decimals, unit) = unit(metric);
    if s.n < 2 {
        // One run gives no interval.
        return format!("{:.*} {unit} (1 run)", decimals, s.mean * factor);
    }
    format!("{:.*} ± {:.*} {unit}", decimals, s.mean * factor, decimals, s.ci95.half_width() * factor)
}

/// A relative difference as a signed percentage.
pub fn display_relative(d: f64) -> String {
    if d.is_finite() { format!("{:+.1}%", d * 100.0) } else { "—".into() }
}

/// The rows as CSV: per flow and metric, both engines' n, mean and 95% CI,
/// the relative difference, the tolerance (fractions) and the verdict.
pub fn to_csv(rows: &[ParityRow]) -> String {
    let mut csv = String::from(
        "flow,sim_label,emu_label,metric,sim_n,sim_mean,sim_ci95_low,sim_ci95_high,emu_n,emu_mean,emu_ci95_low,\
         emu_ci95_high,relative_difference,tolerance,verdict\n",
    );
    for r in rows {
        writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.flow),
            csv_field(&r.sim_label),
            csv_field(&r.emu_label),
            r.metric,
            r.sim.n,
            r.sim.mean,
            r.sim.ci95.low,
            r.sim.ci95.high,
            r.emu.n,
            r.emu.mean,
            r.emu.ci95.low,
            r.emu.ci95.high,
            r.relative_difference,
            r.tolerance,
            r.verdict.as_str()
        )
        .expect("writing to a String");
    }
    csv
}

/// A plot of both engines' series.
#[derive(Clone, Debug)]
pub struct Overlay {
    /// File name stem under plots/.
    pub name: String,
    pub title: String,
    pub y_label: String,
    pub caption: String,
    pub series: Vec<Series>,
}

/// The files the first replication of each engine has for one flow.
#[derive(Clone, Debug, Default)]
pub struct TraceFiles {
    /// The simulator's TCP trace of the sending end (tcp-FLOW-0-client.csv).
    pub sim: String,
    /// The bulk tool's TCP_INFO samples (tcp-FLOW.csv in workloads/).
    pub emu: String,
    /// Segment size for TCP_INFO's cwnd when its file has no `snd_mss`
    /// column, bytes.
    pub mss: f64,
}

fn shifted(points: &[(f64, f64)], by: f64, scale: f64) -> Vec<(f64, f64)> {
    points.iter().map(|&(t, y)| (t - by, y * scale)).collect()
}

fn column<'a>(detail: &'a RunDetail, file: &str, name: &str) -> Option<&'a Series> {
    detail.tcp.iter().find(|(f, _)| f == file)?.1.iter().find(|s| s.name == name)
}

/// The overlaid plots of `flow`'s first replication: the time-sequence
/// diagram of both engines (time from the connection's first packet), and
/// for TCP the simulator's trace beside Linux's TCP_INFO: cwnd in bytes
/// (TCP_INFO's segments × `snd_mss`) and smoothed RTT. A plot whose data
/// one engine lacks still shows the other's.
pub fn overlays(flow: &MatchedFlow, sim: &RunDetail, emu: &RunDetail, traces: &TraceFiles) -> Vec<Overlay> {
    let first = |runs: &[(u32, FlowStats)]| runs.iter().find(|(r, _)| *r == 0).map(|(_, f)| f.clone());
    let (Some(sim_flow), Some(emu_flow)) = (first(&flow.sim), first(&flow.emu)) else { return Vec::new() };
    let mut out = Vec::new();
    let mut sequence = Vec::new();
    for (engine, detail, f) in [("sim", sim, &sim_flow), ("emu", emu, &emu_flow)] {
        if let Some((_, series)) = detail.sequence.iter().find(|(name, _)| name == &f.flow) {
            for s in series {
                sequence.push(Series {
                    name: format!("{engine} {}", s.name),
                    mark: s.mark,
                    points: shifted(&s.points, f.opened, 1.0),
                });
            }
        }
    }
    if !sequence.is_empty() {
        // Sent packets of both engines first, then retransmissions and drops.
        sequence.sort_by_key(|s| !s.name.ends_with(" sent"));
        let y = if flow.protocol == "tcp" { "relative sequence number (bytes)" } else { "packet" };
        out.push(Overlay {
            name: format!("{}-sequence", flow.name),
            title: format!("time-sequence, {}", flow.name),
            y_label: y.into(),
            caption: format!(
                "Time-sequence diagram of `{}`, first replication of each engine ({} and {}), from the flow's first \
                 packet: sent, retransmitted and dropped packets.",
                flow.name, sim_flow.flow, emu_flow.flow
            ),
            series: sequence,
        });
    }
    if flow.protocol != "tcp" {
        return out;
    }
    let emu_mss = column(emu, &traces.emu, "snd_mss");
    let mut cwnd = Vec::new();
    if let Some(s) = column(sim, &traces.sim, "cwnd") {
        cwnd.push(Series {
            name: "sim cwnd".into(),
            mark: Mark::Line,
            points: shifted(&s.points, sim_flow.opened, 1.0),
        });
    }
    if let Some(s) = column(emu, &traces.emu, "cwnd") {
        let points = match emu_mss {
            Some(mss) if mss.points.len() == s.points.len() => {
                s.points.iter().zip(&mss.points).map(|(&(t, c), &(_, m))| (t, c * m)).collect()
            }
            _ => shifted(&s.points, 0.0, traces.mss),
        };
        cwnd.push(Series { name: "emu cwnd (Linux)".into(), mark: Mark::Line, points });
    }
    if !cwnd.is_empty() {
        out.push(Overlay {
            name: format!("{}-cwnd", flow.name),
            title: format!("cwnd, {}", flow.name),
            y_label: "cwnd (bytes)".into(),
            caption: format!(
                "Congestion window of `{}`, first replication, from the connection's first packet: the simulator's \
                 trace ({}) beside Linux's TCP_INFO ({}, segments × snd_mss).",
                flow.name, traces.sim, traces.emu
            ),
            series: cwnd,
        });
    }
    let mut rtt = Vec::new();
    if let Some(s) = column(sim, &traces.sim, "srtt") {
        // srtt is 0 before the first sample.
        let points = shifted(&s.points, sim_flow.opened, 1.0).into_iter().filter(|p| p.1 > 0.0).collect();
        rtt.push(Series { name: "sim srtt".into(), mark: Mark::Line, points });
    }
    if let Some(s) = column(emu, &traces.emu, "rtt_us") {
        let points = shifted(&s.points, 0.0, 1e-6).into_iter().filter(|p| p.1 > 0.0).collect();
        rtt.push(Series { name: "emu srtt (Linux)".into(), mark: Mark::Line, points });
    }
    if !rtt.is_empty() {
        out.push(Overlay {
            name: format!("{}-rtt", flow.name),
            title: format!("smoothed RTT, {}", flow.name),
            y_label: "srtt (s)".into(),
            caption: format!(
                "Smoothed RTT of `{}`, first replication, from the connection's first packet: the simulator's srtt \
                 beside Linux's tcpi_rtt.",
                flow.name
            ),
            series: rtt,
        });
    }
    out
}

/// What compare.html says above its table.
#[derive(Clone, Debug, Default)]
pub struct PageInfo {
    pub title: String,
    /// Lines of plain text (escaped when written).
    pub lines: Vec<String>,
}

/// Writes compare.csv, plots/*.svg and compare.html into `out`.
pub fn write_report(out: &Path, info: &PageInfo, rows: &[ParityRow], overlays: &[Overlay]) -> io::Result<()> {
    crate::report::write_atomic(&out.join("compare.csv"), to_csv(rows))?;
    let plots = out.join("plots");
    if plots.exists() {
        fs::remove_dir_all(&plots)?;
    }
    fs::create_dir_all(&plots)?;
    let mut page = String::new();
    let w = |page: &mut String, s: String| page.push_str(&s);
    w(
        &mut page,
        format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
             body{{font-family:sans-serif;margin:2em;max-width:1100px}} table{{border-collapse:collapse;margin:1em 0}}\
             td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}} th{{background:#f3f3f3}} \
             td.l{{text-align:left}} td.pass{{background:#e3f6e3}} td.fail{{background:#fbe0e0;font-weight:bold}}\
             figure{{margin:1em 0}} figcaption{{font-size:90%;color:#555}} .plot svg{{max-width:100%;height:auto}}\
             </style></head><body>\n<h1>{t}</h1>\n",
            t = html(&info.title)
        ),
    );
    for line in &info.lines {
        w(&mut page, format!("<p>{}</p>\n", html(line)));
    }
    w(
        &mut page,
        "<p>Data: <a href=\"compare.csv\">compare.csv</a>; every plot is also in <code>plots/</code>; each \
         engine's runs are under <code>sim/</code> and <code>emu/</code>.</p>\n<table><tr><th>flow</th><th>metric</th>\
         <th>sim mean ± 95% CI</th><th>emu mean ± 95% CI</th><th>(emu − sim) / emu</th><th>tolerance</th>\
         <th>verdict</th></tr>\n"
            .into(),
    );
    for r in rows {
        w(
            &mut page,
            format!(
                "<tr><td class=\"l\" title=\"sim: {} / emu: {}\">{}</td><td class=\"l\">{}</td><td>{} (n={})</td>\
                 <td>{} (n={})</td><td>{}</td><td>{:.1}%</td><td class=\"{v}\">{v}</td></tr>\n",
                html(&r.sim_label),
                html(&r.emu_label),
                html(&r.flow),
                metric_title(r.metric),
                html(&display_summary(r.metric, &r.sim)),
                r.sim.n,
                html(&display_summary(r.metric, &r.emu)),
                r.emu.n,
                display_relative(r.relative_difference),
                r.tolerance * 100.0,
                v = r.verdict.as_str()
            ),
        );
    }
    w(&mut page, "</table>\n".into());
    for (i, o) in overlays.iter().enumerate() {
        let svg = series_plot(&o.title, "time from the flow's first packet (s)", &o.y_label, &o.series, &[]);
        let file = format!("{:03}-{}.svg", i + 1, o.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        fs::write(plots.join(&file), &svg)?;
        w(
            &mut page,
            format!(
                "<figure class=\"plot\" data-file=\"{file}\">{svg}<figcaption>{}</figcaption></figure>\n",
                html(&o.caption)
            ),
        );
    }
    page.push_str("</body></html>\n");
    crate::report::write_atomic(&out.join("compare.html"), page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(goodputs: (&[f64], &[f64])) -> MatchedFlow {
        let runs = |xs: &[f64]| -> Vec<(u32, FlowStats)> {
            xs.iter()
                .enumerate()
                .map(|(i, &g)| {
                    let f = FlowStats { goodput_bps: g, elapsed: 1.0, data_segments: 10, ..FlowStats::default() };
                    (i as u32, f)
                })
                .collect()
        };
        MatchedFlow {
            name: "download".into(),
            protocol: "tcp",
            sim_label: "tcp a:* > b:5000".into(),
            emu_label: "tcp a:* > b:15000".into(),
            sim: runs(goodputs.0),
            emu: runs(goodputs.1),
        }
    }

    #[test]
    fn relative_difference_is_relative_to_the_emulator() {
        assert_eq!(relative_difference(90.0, 100.0), 0.1);
        assert_eq!(relative_difference(110.0, 100.0), -0.1);
        assert_eq!(relative_difference(0.0, 0.0), 0.0);
        assert!(relative_difference(1.0, 0.0).is_infinite());
        assert!(relative_difference(f64::NAN, 1.0).is_nan());
        assert_eq!(verdict(-0.1, 0.1), Verdict::Pass);
        assert_eq!(verdict(0.1001, 0.1), Verdict::Fail);
        assert_eq!(verdict(f64::NAN, 0.1), Verdict::Fail);
        assert_eq!(verdict(f64::INFINITY, 0.1), Verdict::Fail);
    }

    #[test]
    fn parity_rows_per_metric_with_their_tolerance() {
        let tolerances = Tolerances { default: 0.05, per_metric: BTreeMap::from([("elapsed".to_string(), 0.0)]) };
        let rows = parity(&[flow((&[9.0e6, 9.2e6], &[9.6e6, 9.8e6]))], &tolerances);
        assert_eq!(rows.iter().map(|r| r.metric).collect::<Vec<_>>(), TCP_METRICS);
        let g = &rows[0];
        assert_eq!((g.sim.n, g.emu.n), (2, 2));
        assert!((g.relative_difference - (9.7e6 - 9.1e6) / 9.7e6).abs() < 1e-12);
        assert_eq!(g.verdict, Verdict::Fail, "6.2% > 5%");
        // Elapsed equal in both (1 s): passes even at tolerance 0.
        let e = rows.iter().find(|r| r.metric == "elapsed").unwrap();
        assert_eq!((e.tolerance, e.verdict), (0.0, Verdict::Pass));
        // A flow missing from one engine fails.
        let rows = parity(&[flow((&[9.0e6], &[]))], &tolerances);
        assert_eq!(rows[0].emu.n, 0);
        assert_eq!(rows[0].verdict, Verdict::Fail);
        let csv = to_csv(&rows);
        assert!(csv.starts_with("flow,sim_label,emu_label,metric,sim_n,sim_mean"));
        assert!(csv.lines().nth(1).unwrap().starts_with("download,tcp a:* > b:5000,tcp a:* > b:15000,goodput_bps,1,"));
    }

    #[test]
    fn values_read_in_their_units() {
        assert_eq!(display("goodput_bps", 9_412_000.0), "9.412 Mbit/s");
        assert_eq!(display("rtt_mean", 0.0612), "61.20 ms");
        assert_eq!(display_relative(-0.0123), "-1.2%");
        let s = summarize(&[1.0e6, 3.0e6]);
        assert!(display_summary("goodput_bps", &s).starts_with("2.000 ± "), "{}", display_summary("goodput_bps", &s));
        assert!(display_summary("goodput_bps", &s).ends_with(" Mbit/s"));
        assert_eq!(display_summary("goodput_bps", &summarize(&[2.5e6])), "2.500 Mbit/s (1 run)");
    }
}
