//! An experiment's outputs (seed 000 §5.2 and §7): results.csv (one row per
//! replication and flow, every swept parameter a column), summary.csv (per
//! set, point, flow and metric: mean, median, 10th/90th percentile,
//! standard deviation, 95% CI), plots as SVG files, and a self-contained
//! report.html that fetches nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use crate::detail::RunDetail;
use crate::flows::FlowStats;
use crate::param_value::{ParamUnit, param_value};
use crate::plot::{Axes, Bars, bars_plot, series_plot};
use crate::stats::{Summary, summarize};

/// One replication's analysed flows.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub set: String,
    pub point: usize,
    pub replication: u32,
    pub seed: u64,
    pub flows: Vec<FlowStats>,
    /// Jain's index over the run's flows' throughputs.
    pub fairness: f64,
    /// Whether the run's TCP applications finished: false for a download
    /// not in by the scenario's duration, a workload cut at the end of
    /// the run, or one that gave up (wget's exit status 8 when the server
    /// answered an error): seed 003 §3's failed download.
    pub completed: bool,
}

/// A replication set as the report shows it.
#[derive(Clone, Debug)]
pub struct SetInfo {
    pub name: String,
    pub engine: String,
    pub scenario: String,
    /// Each point's swept (key, value) pairs, by point index.
    pub points: Vec<Vec<(String, String)>>,
    /// The first replication of each point, for the time plots.
    pub details: BTreeMap<usize, RunDetail>,
    /// Per point, the page (relative to the report) with its first
    /// replication's figures over time ([`crate::run_report`]): every
    /// point has one, while report.html itself stays bounded.
    pub run_pages: BTreeMap<usize, String>,
    /// Per point with `count` or `arrivals` entries, its FCT/slowdown
    /// table by size bucket as HTML ([`crate::buckets::bucket_table_section`]),
    /// the numbers `squall report` prints for it.
    pub bucket_tables: BTreeMap<usize, String>,
}

/// Time plots are drawn for at most this many points of a set
/// ([`detail_points`]): a sweep of hundreds of points keeps a report of a
/// few dozen plots (seed 003's 880-run sweep: 66 plots, its report under
/// 5 MB).
pub const MAX_DETAIL_POINTS: usize = 3;
/// Time-sequence diagrams (and TCP trace files drawn) per detailed run:
/// the connections with the most retransmissions (then the first); a web
/// page's hundreds of connections are summarised, not drawn one by one.
pub const MAX_SEQUENCE_PLOTS: usize = 2;

/// The points of a set of `points` whose first replication gets time
/// plots: the first, the last, and evenly between, at most
/// [`MAX_DETAIL_POINTS`].
pub fn detail_points(points: usize) -> Vec<usize> {
    if points <= MAX_DETAIL_POINTS {
        return (0..points).collect();
    }
    let mut chosen: Vec<usize> = (0..MAX_DETAIL_POINTS).map(|i| i * (points - 1) / (MAX_DETAIL_POINTS - 1)).collect();
    chosen.dedup();
    chosen
}

/// The per-flow metrics summarised and plotted, with their labels.
pub const METRICS: &[(&str, &str)] = &[
    ("elapsed", "elapsed time (s)"),
    ("throughput_bps", "throughput (bit/s)"),
    ("goodput_bps", "goodput (bit/s)"),
    ("retransmitted", "retransmitted packets"),
    ("retransmitted_pct", "TCP retransmissions (% of data segments)"),
    ("dropped", "dropped packets"),
    ("delay_mean", "mean one-way delay (s)"),
    ("rtt_mean", "mean RTT (s)"),
    ("interarrival_mean", "mean inter-arrival time (s)"),
    ("jitter_rfc3550", "RFC 3550 interarrival jitter (s)"),
    ("sent_packets", "packets sent"),
    ("received_packets", "packets received"),
];

pub fn metric(f: &FlowStats, name: &str) -> f64 {
    match name {
        "elapsed" => f.elapsed,
        "throughput_bps" => f.throughput_bps,
        "goodput_bps" => f.goodput_bps,
        "retransmitted" => f.retransmitted as f64,
        "retransmitted_pct" => f.retransmitted_percent(),
        "dropped" => f.dropped.values().sum::<u64>() as f64,
        "delay_mean" => f.delay_mean,
        "rtt_mean" => f.rtt_mean,
        "interarrival_mean" => f.interarrival_mean,
        "interarrival_sd" => f.interarrival_sd,
        "jitter_rfc3550" => f.jitter_rfc3550,
        "sent_packets" => f.sent_packets as f64,
        "received_packets" => f.received_packets as f64,
        _ => f64::NAN,
    }
}

/// A parameter value as a number for plotting: "1%" → 0.01, "200 ms" →
/// 0.2 (seconds), "9600 bit/s" → 9600, plain numbers as they are.
pub fn numeric(value: &str) -> Option<f64> {
    if let Ok(v) = value.trim().parse::<f64>() {
        return Some(v);
    }
    if let Ok(p) = value.parse::<squall_link::Probability>() {
        return Some(p.get());
    }
    if let Ok(d) = value.parse::<squall_link::Duration>() {
        return Some(d.as_secs_f64());
    }
    if let Ok(r) = value.parse::<squall_link::Rate>() {
        return Some(r.bits_per_sec() as f64);
    }
    value.parse::<squall_link::Bytes>().ok().map(|b| b.0 as f64)
}

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// `s` escaped for HTML text and attribute values.
pub fn html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Every (set, point, flow) → metric → values over replications.
type Grouped = BTreeMap<(String, usize, String), BTreeMap<&'static str, Vec<f64>>>;

fn group(runs: &[RunRecord]) -> Grouped {
    let mut g: Grouped = BTreeMap::new();
    for r in runs {
        for f in &r.flows {
            let m = g.entry((r.set.clone(), r.point, f.label.clone())).or_default();
            for (name, _) in METRICS {
                m.entry(name).or_default().push(metric(f, name));
            }
        }
        let m = g.entry((r.set.clone(), r.point, "(all flows)".into())).or_default();
        m.entry("fairness").or_default().push(r.fairness);
        // Its mean is the share of the replications that completed.
        m.entry("completed").or_default().push(f64::from(u8::from(r.completed)));
    }
    g
}

/// Writes `contents` to `path` through a temporary file in the same
/// directory renamed over it, so an interrupted report leaves the old
/// file or the new one, never half of one.
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".squall-").suffix(".partial").tempfile_in(dir)?;
    // tempfile makes its files 0600; a report is for everyone to read.
    tmp.as_file().set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    io::Write::write_all(&mut tmp, contents.as_ref())?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes results.csv, summary.csv, plots/*.svg and report.html into `out`.
pub fn write_report(out: &Path, title: &str, sets: &[SetInfo], runs: &[RunRecord]) -> io::Result<()> {
    // Plots are rebuilt whole: none of an earlier report may linger.
    let plots = out.join("plots");
    if plots.exists() {
        fs::remove_dir_all(&plots)?;
    }
    fs::create_dir_all(&plots)?;
    let params: BTreeSet<String> =
        sets.iter().flat_map(|s| s.points.iter().flatten().map(|(k, _)| k.clone())).collect();
    let point_params = |set: &str, point: usize| -> BTreeMap<String, String> {
        sets.iter()
            .find(|s| s.name == set)
            .and_then(|s| s.points.get(point))
            .map_or_else(BTreeMap::new, |p| p.iter().cloned().collect())
    };

    // results.csv: each swept parameter as written, then as a number
    // with its unit in the column name ("0.5%" → KEY_fraction = 0.005).
    let units: BTreeMap<&String, ParamUnit> = params
        .iter()
        .filter_map(|p| {
            let unit = sets
                .iter()
                .flat_map(|s| s.points.iter().flatten())
                .filter(|(k, _)| k == p)
                .find_map(|(_, v)| param_value(v).map(|(_, u)| u))?;
            Some((p, unit))
        })
        .collect();
    // The swept parameters' header cells and a point's cells, shared by
    // results.csv and summary.csv.
    let mut param_header = String::new();
    for p in &params {
        write!(param_header, ",{}", csv_field(p)).unwrap();
        if let Some(unit) = units.get(p) {
            write!(param_header, ",{}", csv_field(&format!("{p}_{}", unit.suffix()))).unwrap();
        }
    }
    let param_cells = |pp: &BTreeMap<String, String>| {
        let mut cells = String::new();
        for p in &params {
            let text = pp.get(p).map_or("", String::as_str);
            write!(cells, ",{}", csv_field(text)).unwrap();
            if let Some(unit) = units.get(p) {
                match param_value(text).filter(|(_, u)| u == unit) {
                    Some((x, _)) => write!(cells, ",{x}").unwrap(),
                    None => cells.push(','),
                }
            }
        }
        cells
    };
    let mut csv = format!("set,point{param_header}");
    csv.push_str(",replication,seed,flow,label,sender,receiver");
    for (m, _) in METRICS {
        write!(csv, ",{m}").unwrap();
    }
    csv.push_str(",delay_p50,delay_p99,interarrival_sd,rtt_samples,connections,fairness,completed\n");
    for r in runs {
        let pp = point_params(&r.set, r.point);
        for f in &r.flows {
            write!(csv, "{},{}{}", csv_field(&r.set), r.point, param_cells(&pp)).unwrap();
            write!(
                csv,
                ",{},{},{},{},{},{}",
                r.replication,
                r.seed,
                csv_field(&f.flow),
                csv_field(&f.label),
                f.sender,
                f.receiver
            )
            .unwrap();
            for (m, _) in METRICS {
                write!(csv, ",{}", metric(f, m)).unwrap();
            }
            writeln!(
                csv,
                ",{},{},{},{},{},{},{}",
                f.delay_p50,
                f.delay_p99,
                f.interarrival_sd,
                f.rtt_samples,
                f.connections,
                r.fairness,
                u8::from(r.completed)
            )
            .unwrap();
        }
    }
    write_atomic(&out.join("results.csv"), csv)?;

    // summary.csv: the point's parameters as in results.csv (as written,
    // then as a number with its unit in the column name), and `params`,
    // all of them as one text.
    let grouped = group(runs);
    let mut sum =
        format!("set,point{param_header},params,flow,metric,n,mean,median,p10,p90,std_dev,ci95_low,ci95_high\n");
    for ((set, point, flow), metrics) in &grouped {
        let point_map = point_params(set, *point);
        let pp: Vec<String> = point_map.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let cells = param_cells(&point_map);
        for (m, xs) in metrics {
            let s = summarize(xs);
            writeln!(
                sum,
                "{},{}{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(set),
                point,
                cells,
                csv_field(&pp.join(" ")),
                csv_field(flow),
                m,
                s.n,
                s.mean,
                s.median,
                s.p10,
                s.p90,
                s.std_dev,
                s.ci95.low,
                s.ci95.high
            )
            .unwrap();
        }
    }
    write_atomic(&out.join("summary.csv"), sum)?;

    // Plots and the page.
    let mut page = String::new();
    writeln!(
        page,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:1100px}} table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}} th{{background:#f3f3f3}} td:first-child{{text-align:left}}\
         figure{{margin:1em 0}} figcaption{{font-size:90%;color:#555}} .plot svg{{max-width:100%;height:auto}}</style></head><body>\n\
         <h1>{t}</h1>\n<p>{n} run(s) in {k} replication set(s). Data: <a href=\"results.csv\">results.csv</a>, \
         <a href=\"summary.csv\">summary.csv</a>; every plot is also in <code>plots/</code>.</p>",
        t = html(title),
        n = runs.len(),
        k = sets.len()
    )
    .unwrap();
    let mut plot_no = 0;
    let mut figure = |page: &mut String, name: &str, caption: &str, svg: String| -> io::Result<()> {
        plot_no += 1;
        let file = format!("{plot_no:03}-{}.svg", name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        fs::write(out.join("plots").join(&file), &svg)?;
        writeln!(
            page,
            "<figure class=\"plot\" data-file=\"{file}\">{svg}<figcaption>{}</figcaption></figure>",
            html(caption)
        )
        .unwrap();
        Ok(())
    };
    for set in sets {
        writeln!(
            page,
            "<h2>Set {} <small>({} engine, {})</small></h2>",
            html(&set.name),
            html(&set.engine),
            html(&set.scenario)
        )
        .unwrap();
        for (point, pp) in set.points.iter().enumerate() {
            let label: Vec<String> = pp.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            if !label.is_empty() {
                writeln!(page, "<h3>{}</h3>", html(&label.join(", "))).unwrap();
            }
            page.push_str(&table2(&grouped, &set.name, point));
            if let Some(t) = set.bucket_tables.get(&point) {
                page.push_str(t);
            }
            if let Some(href) = set.run_pages.get(&point) {
                writeln!(
                    page,
                    "<p class=\"run-page\"><a href=\"{}\">This point over time</a>: throughput against capacity, delay, queues, drops, states and TCP traces of its first replication.</p>",
                    html(href)
                )
                .unwrap();
            }
        }
        page.push_str(&cross_tables(&grouped, set));
        // Time plots of the first replication of each point.
        for (point, d) in &set.details {
            let at = set
                .points
                .get(*point)
                .map(|p| p.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            let suffix = if at.is_empty() { String::new() } else { format!(" ({at})") };
            // The most eventful connections (retransmissions), at most
            // MAX_SEQUENCE_PLOTS of them.
            let mut ranked: Vec<(usize, &(String, Vec<crate::plot::Series>))> = d
                .sequence
                .iter()
                .map(|f| (f.1.iter().filter(|s| s.name != "sent").map(|s| s.points.len()).sum(), f))
                .collect();
            ranked.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
            let shown = ranked.len().min(MAX_SEQUENCE_PLOTS);
            if shown < ranked.len() {
                writeln!(
                    page,
                    "<p>Time-sequence diagrams{suffix}: {shown} of {} connections, those with the most retransmissions.</p>",
                    ranked.len()
                )
                .unwrap();
            }
            for (_, (flow, series)) in ranked.into_iter().take(shown) {
                let svg =
                    series_plot(&format!("time-sequence {flow}"), "time (s)", "sequence / packet", series, &d.shades);
                figure(
                    &mut page,
                    &format!("{}-p{point}-seq", set.name),
                    &format!(
                        "Time-sequence diagram, {flow}, first replication{suffix}: sent, retransmitted and dropped packets; states and blackouts shaded."
                    ),
                    svg,
                )?;
            }
            if !d.occupancy.is_empty() {
                let svg = series_plot("packets in each stage", "time (s)", "packets", &d.occupancy, &d.shades);
                figure(
                    &mut page,
                    &format!("{}-p{point}-queue", set.name),
                    &format!("Queue: packets inside each stage over time, first replication{suffix}."),
                    svg,
                )?;
            }
            for (file, series) in d.tcp.iter().take(MAX_SEQUENCE_PLOTS) {
                for wanted in [["cwnd", "ssthresh"].as_slice(), ["srtt", "rtt", "rttvar", "rto"].as_slice()] {
                    let chosen: Vec<_> =
                        series.iter().filter(|s| wanted.iter().any(|w| s.name.starts_with(w))).cloned().collect();
                    if !chosen.is_empty() {
                        let what = wanted[0];
                        let svg =
                            series_plot(&format!("{what} over time ({file})"), "time (s)", what, &chosen, &d.shades);
                        figure(
                            &mut page,
                            &format!("{}-p{point}-{what}", set.name),
                            &format!(
                                "{} from {file}{suffix}.",
                                chosen.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                            ),
                            svg,
                        )?;
                    }
                }
            }
        }
        // Each metric against each numeric swept parameter of at least
        // three values (two are read better in the tables), with 95% CI
        // bars: a curve per flow and per value of the set's other keys.
        let keys: BTreeSet<&String> = set.points.iter().flatten().map(|(k, _)| k).collect();
        for key in keys.into_iter().filter(|k| distinct_values(std::slice::from_ref(set), k) >= MIN_CURVE_POINTS) {
            for (m, label) in METRICS {
                let Some(bars) = sweep_curves(&grouped, set, key, m, false) else { break };
                if bars.is_empty() {
                    continue;
                }
                let svg = bars_plot(&format!("{label} vs {key}"), key, label, &bars, axes(&bars));
                figure(
                    &mut page,
                    &format!("{}-{m}-vs-{key}", set.name),
                    &format!("{label} against {key}: mean over replications with 95% confidence interval."),
                    svg,
                )?;
            }
        }
    }
    // Sets that sweep the same numeric key, and nothing else, on one plot
    // (seed 002 Figures 4 to 7: configurations against ARQ persistence).
    // Sets that also sweep other keys already have a curve per value of
    // them in their own plots; putting every set's curves together would
    // only repeat those plots, less legibly.
    let shared: BTreeSet<&String> = sets.iter().flat_map(|s| s.points.iter().flatten().map(|(k, _)| k)).collect();
    let mut across = String::new();
    let only_key = |key: &str| {
        sets.iter().all(|s| {
            s.points.iter().flatten().all(|(k, _)| k == key) || !s.points.iter().flatten().any(|(k, _)| k == key)
        })
    };
    for key in shared.into_iter().filter(|k| distinct_values(sets, k) >= MIN_CURVE_POINTS && only_key(k)) {
        for (m, label) in METRICS {
            let curves: Vec<Vec<Bars>> =
                sets.iter().filter_map(|set| sweep_curves(&grouped, set, key, m, true)).collect();
            if curves.len() < 2 {
                break;
            }
            let bars: Vec<Bars> = curves.into_iter().flatten().collect();
            if bars.is_empty() {
                continue;
            }
            let svg = bars_plot(&format!("{label} vs {key}, all sets"), key, label, &bars, axes(&bars));
            figure(
                &mut across,
                &format!("all-{m}-vs-{key}"),
                &format!(
                    "{label} against {key}, every set that sweeps it: mean over replications with 95% confidence interval."
                ),
                svg,
            )?;
        }
    }
    if !across.is_empty() {
        page.push_str("<h2>All sets</h2>\n");
        page.push_str(&across);
    }
    page.push_str("</body></html>\n");
    write_atomic(&out.join("report.html"), page)
}

/// A swept key with fewer values than this gets no plot against it.
const MIN_CURVE_POINTS: usize = 3;

/// How many values `key` takes over the points of `sets`.
fn distinct_values(sets: &[SetInfo], key: &str) -> usize {
    let values: BTreeSet<&String> =
        sets.iter().flat_map(|s| s.points.iter().flatten()).filter(|(k, _)| k == key).map(|(_, v)| v).collect();
    values.len()
}

/// Curves of metric `m` against the numeric swept key `key` in `set`: one
/// per flow and per combination of the set's other swept values, each
/// named by what tells it apart (with the set's name when `with_set`).
/// `None` when the set does not sweep `key` or a value is not a number.
fn sweep_curves(grouped: &Grouped, set: &SetInfo, key: &str, m: &str, with_set: bool) -> Option<Vec<Bars>> {
    let xs: Vec<f64> = set
        .points
        .iter()
        .map(|p| p.iter().find(|(k, _)| k == key).and_then(|(_, v)| numeric(v)))
        .collect::<Option<_>>()?;
    let flows: BTreeSet<&String> = grouped
        .iter()
        .filter(|((s, _, _), metrics)| s == &set.name && metrics.contains_key("elapsed"))
        .map(|((_, _, f), _)| f)
        .collect();
    let mut bars: BTreeMap<String, Bars> = BTreeMap::new();
    for ((s, point, flow), metrics) in grouped {
        if s != &set.name {
            continue;
        }
        let (Some(&x), Some(values)) = (xs.get(*point), metrics.get(m)) else { continue };
        let mut parts: Vec<String> = Vec::new();
        if with_set {
            parts.push(set.name.clone());
        }
        for (k, v) in set.points[*point].iter().filter(|(k, _)| k != key) {
            parts.push(format!("{}={v}", k.rsplit('.').next().unwrap_or(k)));
        }
        if flows.len() > 1 || parts.is_empty() {
            parts.push(flow.clone());
        }
        let name = parts.join(", ");
        let sm: Summary = summarize(values);
        bars.entry(name.clone()).or_insert_with(|| Bars { name, points: Vec::new() }).points.push((
            x,
            sm.mean,
            sm.ci95.low,
            sm.ci95.high,
        ));
    }
    let mut bars: Vec<Bars> =
        bars.into_values().filter(|b| b.points.iter().any(|p| p.1.is_finite() && p.1 != 0.0)).collect();
    for b in &mut bars {
        b.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Some(bars)
}

/// A log x axis for positive values spanning two decades or more; a log y
/// axis for positive means spanning one decade or more (a duration that
/// grows tenfold under load, seed 003 Figures 5 and 6).
fn axes(bars: &[Bars]) -> Axes {
    let span = |xs: Vec<f64>, decades: f64| {
        let (lo, hi) = xs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        !xs.is_empty() && lo > 0.0 && hi / lo >= 10f64.powf(decades)
    };
    Axes {
        log_x: span(bars.iter().flat_map(|b| b.points.iter().map(|p| p.0)).collect(), 2.0),
        log_y: span(bars.iter().flat_map(|b| b.points.iter().map(|p| p.1)).collect(), 1.0),
    }
}

/// The metrics a networks × workloads table shows, with their unit's
/// scale: (metric, heading, factor, decimals).
const CROSS_METRICS: &[(&str, &str, f64, usize)] = &[
    ("goodput_bps", "goodput (kbit/s)", 1e-3, 2),
    ("elapsed", "elapsed time (s)", 1.0, 2),
    ("delay_mean", "mean one-way delay (ms)", 1e3, 1),
    ("retransmitted_pct", "TCP retransmissions (% of data segments)", 1.0, 2),
];

/// Seed 000 §4.1's replication sets grouped "by each": for a set that
/// crosses networks with workloads, one table per metric with a row per
/// network and a column per workload, each cell the mean over
/// replications and its 95% confidence interval, for every flow of the
/// combination (the workloads' flows differ, so a cell names them). A set
/// that also sweeps other keys gets one group of tables per combination
/// of their values. Empty for a set that does not cross both.
fn cross_tables(grouped: &Grouped, set: &SetInfo) -> String {
    let value = |point: &[(String, String)], key: &str| point.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let mut networks: Vec<String> = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    // The other swept values of each point, as a label, in point order.
    let mut others: Vec<String> = Vec::new();
    let mut cell_points: BTreeMap<(String, String, String), Vec<usize>> = BTreeMap::new();
    for (i, point) in set.points.iter().enumerate() {
        let (Some(n), Some(w)) = (value(point, "network"), value(point, "workload")) else { return String::new() };
        let other: Vec<String> = point
            .iter()
            .filter(|(k, _)| k != "network" && k != "workload")
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let other = other.join(", ");
        for (list, item) in [(&mut networks, &n), (&mut workloads, &w), (&mut others, &other)] {
            if !list.contains(item) {
                list.push(item.clone());
            }
        }
        cell_points.entry((other, n, w)).or_default().push(i);
    }
    if networks.len() < 2 && workloads.len() < 2 {
        return String::new();
    }
    let mut t = format!("<h3>Networks × workloads</h3>\n<div class=\"cross\" data-set=\"{}\">\n", html(&set.name));
    for other in &others {
        if !other.is_empty() {
            writeln!(t, "<h4>{}</h4>", html(other)).unwrap();
        }
        for &(m, heading, factor, decimals) in CROSS_METRICS {
            write!(t, "<table class=\"cross-{m}\"><caption>{} (mean ± 95% CI over replications)</caption><tr><th>network \\ workload</th>", html(heading)).unwrap();
            for w in &workloads {
                write!(t, "<th>{}</th>", html(w)).unwrap();
            }
            t.push_str("</tr>\n");
            for n in &networks {
                write!(t, "<tr><td>{}</td>", html(n)).unwrap();
                for w in &workloads {
                    let points = cell_points.get(&(other.clone(), n.clone(), w.clone())).map_or(&[][..], |p| &p[..]);
                    let lines: Vec<String> = grouped
                        .iter()
                        .filter(|((s, p, _), metrics)| {
                            s == &set.name && points.contains(p) && metrics.contains_key("elapsed")
                        })
                        .filter_map(|((_, _, flow), metrics)| {
                            let s = summarize(metrics.get(m)?);
                            s.mean.is_finite().then(|| {
                                format!(
                                    "{}: {:.d$} ± {:.d$}",
                                    html(flow),
                                    s.mean * factor,
                                    s.ci95.half_width() * factor,
                                    d = decimals
                                )
                            })
                        })
                        .collect();
                    write!(t, "<td>{}</td>", if lines.is_empty() { "–".to_string() } else { lines.join("<br>") })
                        .unwrap();
                }
                t.push_str("</tr>\n");
            }
            t.push_str("</table>\n");
        }
    }
    t.push_str("</div>\n");
    t
}

/// Seed 000 Table 2's summary for one point: per flow, elapsed time
/// percentiles, throughput, goodput, retransmitted and dropped packets.
fn table2(grouped: &Grouped, set: &str, point: usize) -> String {
    let mut t = String::from(
        "<table><tr><th>flow</th><th>n</th><th>elapsed p10 (s)</th><th>elapsed median (s)</th><th>elapsed p90 (s)</th>\
         <th>throughput (kbit/s)</th><th>± 95% CI</th><th>goodput (kbit/s)</th><th>retransmitted</th><th>retransmitted (%)</th>\
         <th>dropped</th><th>delay (ms)</th><th>jitter, RFC 3550 (ms)</th></tr>\n",
    );
    for ((s, p, flow), m) in grouped {
        if s != set || *p != point || !m.contains_key("elapsed") {
            continue;
        }
        let sm = |k: &str| summarize(m.get(k).map_or(&[][..], |v| &v[..]));
        let (e, th, g, r, rp, d, dl, j) = (
            sm("elapsed"),
            sm("throughput_bps"),
            sm("goodput_bps"),
            sm("retransmitted"),
            sm("retransmitted_pct"),
            sm("dropped"),
            sm("delay_mean"),
            sm("jitter_rfc3550"),
        );
        writeln!(
            t,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>",
            html(flow), e.n, e.p10, e.median, e.p90, th.mean / 1e3, th.ci95.half_width() / 1e3, g.mean / 1e3, r.mean, rp.mean, d.mean, dl.mean * 1e3, j.mean * 1e3
        )
        .unwrap();
    }
    if let Some(f) = grouped.get(&(set.to_string(), point, "(all flows)".to_string())).and_then(|m| m.get("fairness")) {
        let s = summarize(f);
        if s.mean.is_finite() {
            writeln!(
                t,
                "<tr><td colspan=\"13\">Jain's fairness index over flows: {:.3} (95% CI {:.3}–{:.3})</td></tr>",
                s.mean, s.ci95.low, s.ci95.high
            )
            .unwrap();
        }
    }
    t.push_str("</table>\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(set: &str, point: usize, replication: u32, throughput: f64, retransmitted: u64) -> RunRecord {
        let flow = FlowStats {
            label: "tcp a:* > b:5000".into(),
            elapsed: 1.0,
            throughput_bps: throughput,
            retransmitted,
            data_segments: 100,
            ..FlowStats::default()
        };
        RunRecord { set: set.into(), point, replication, seed: 1, flows: vec![flow], fairness: 1.0, completed: true }
    }

    fn set(name: &str, points: &[&[(&str, &str)]]) -> SetInfo {
        SetInfo {
            name: name.into(),
            engine: "sim".into(),
            scenario: "s.toml".into(),
            points: points.iter().map(|p| p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).collect(),
            details: BTreeMap::new(),
            run_pages: BTreeMap::new(),
            bucket_tables: BTreeMap::new(),
        }
    }

    #[test]
    fn sweep_curves_split_by_the_other_swept_keys_and_by_set() {
        // Set "fixed" sweeps retries × modulation (cartesian), "adaptive"
        // retries only; throughput 1000·retries (+500 for 4qam), two
        // replications 100 apart.
        let r = "stage.radio.radio.arq.retries";
        let m = "stage.radio.radio.modulation";
        let fixed = set(
            "fixed",
            &[&[(r, "3"), (m, "bpsk")], &[(r, "3"), (m, "4qam")], &[(r, "30"), (m, "bpsk")], &[(r, "30"), (m, "4qam")]],
        );
        let adaptive = set("adaptive", &[&[(r, "3")], &[(r, "30")]]);
        let mut runs = Vec::new();
        for (point, retries, extra) in [(0, 3.0, 0.0), (1, 3.0, 500.0), (2, 30.0, 0.0), (3, 30.0, 500.0)] {
            for rep in 0..2 {
                runs.push(run("fixed", point, rep, 1000.0 * retries + extra + 100.0 * rep as f64, rep as u64 * 10));
            }
        }
        runs.push(run("adaptive", 0, 0, 7.0, 6));
        runs.push(run("adaptive", 1, 0, 9.0, 0));
        let g = group(&runs);
        let curves = sweep_curves(&g, &fixed, r, "throughput_bps", false).unwrap();
        let names: Vec<&str> = curves.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["modulation=4qam", "modulation=bpsk"]);
        let (x, mean, low, high) = curves[0].points[1];
        assert_eq!((x, mean), (30.0, 30_550.0));
        assert!(low < mean && mean < high);
        // A key that is not a number has no curves; one the set does not
        // sweep neither.
        assert!(sweep_curves(&g, &fixed, m, "throughput_bps", false).is_none());
        assert!(sweep_curves(&g, &adaptive, m, "throughput_bps", false).is_none());
        // Across sets, curves carry the set's name; a single-key set's curve
        // is the set alone.
        let a = sweep_curves(&g, &adaptive, r, "retransmitted_pct", true).unwrap();
        assert_eq!(a[0].name, "adaptive");
        assert_eq!(a[0].points, vec![(3.0, 6.0, 6.0, 6.0), (30.0, 0.0, 0.0, 0.0)]);
        assert_eq!(sweep_curves(&g, &fixed, r, "throughput_bps", true).unwrap()[1].name, "fixed, modulation=bpsk");
        // Without other keys or a set name, a curve is named by its flow.
        assert_eq!(sweep_curves(&g, &adaptive, r, "throughput_bps", false).unwrap()[0].name, "tcp a:* > b:5000");
    }

    #[test]
    fn detailed_points_are_at_most_three_the_first_the_middle_and_the_last() {
        assert_eq!(detail_points(2), [0, 1]);
        assert_eq!(detail_points(3), [0, 1, 2]);
        assert_eq!(detail_points(22), [0, 10, 21]);
        assert_eq!(detail_points(44), [0, 21, 43]);
    }

    #[test]
    fn parameter_values_become_numbers() {
        assert_eq!(numeric("1e-5"), Some(1e-5));
        assert_eq!(numeric("10%"), Some(0.1));
        assert_eq!(numeric("200 ms"), Some(0.2));
        assert_eq!(numeric("9600 bit/s"), Some(9600.0));
        assert_eq!(numeric("fast"), None);
    }
}
