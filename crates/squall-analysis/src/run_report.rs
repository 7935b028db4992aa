//! The figures of one run over time ([`crate::timeline`]) and the page
//! that shows them: `squall report DIR` on a `squall sim` or `squall emu`
//! output, and one page per sweep point of an experiment. A page is
//! self-contained (its SVGs inline, nothing fetched) and bounded in size:
//! at most [`MAX_FLOWS`] flows and [`crate::timeline::MAX_BINS`] bins per
//! series.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::flows::{AnalysisError, RunHost};
use crate::plot::{Mark, Series, series_plot};
use crate::report::html;
use crate::timeline::{FlowTimeline, Timeline, capacity, delay_series, read_timeline, tcp_series};

/// Flows drawn per run: those that received the most bytes. A web page's
/// hundreds of connections are counted, not drawn one by one.
pub const MAX_FLOWS: usize = 6;
/// TCP trace files drawn per run (each: a cwnd and an RTT figure).
pub const MAX_TCP_FILES: usize = 2;

/// One figure: an SVG and what it shows.
#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub caption: String,
    pub svg: String,
}

/// A run's figures, and the data behind its flow figures.
#[derive(Clone, Debug)]
pub struct RunFigures {
    pub timeline: Timeline,
    pub figures: Vec<Figure>,
    /// Notes for the reader: flows left out, files the run lacks.
    pub notes: Vec<String>,
}

/// The flows worth a figure: every UDP flow, TCP flows that carried data
/// (not the ACKs' direction), most bytes received first.
pub fn drawn_flows(t: &Timeline) -> Vec<&FlowTimeline> {
    let mut flows: Vec<&FlowTimeline> = t
        .flows
        .iter()
        .filter(|f| f.packets_received > 0 && f.payload > 0)
        .filter(|f| !f.label.starts_with("tcp ") || f.payload > f.packets_received.saturating_mul(64))
        .collect();
    flows.sort_by(|a, b| b.bytes.iter().sum::<f64>().total_cmp(&a.bytes.iter().sum::<f64>()));
    flows
}

/// Reads the run in `dir` and draws its figures. `scenario` is the
/// resolved scenario (summary.json's or result.json's
/// `resolved_scenario`), `end` the run's length in seconds.
pub fn run_figures(
    dir: &Path,
    hosts: &[RunHost],
    scenario: &serde_json::Value,
    end: f64,
) -> Result<RunFigures, AnalysisError> {
    let t = read_timeline(dir, hosts, end)?;
    let mut figures = Vec::new();
    let mut notes = Vec::new();
    let bin = t.bin;
    let bin_text = format!("{bin} s bins");
    let flows = drawn_flows(&t);
    if flows.len() > MAX_FLOWS {
        notes.push(format!("{} of {} flows drawn, those that received the most bytes.", MAX_FLOWS, flows.len()));
    }
    for f in flows.iter().take(MAX_FLOWS) {
        let mut series =
            vec![Series { name: "throughput at the receiver".into(), mark: Mark::Line, points: f.throughput(bin) }];
        let cap = capacity(scenario, &f.sender, &f.receiver, &t.states, t.bins as f64 * bin);
        let cap_note = match &cap {
            Some(points) => {
                series.push(Series {
                    name: "capacity (bottleneck rate)".into(),
                    mark: Mark::Line,
                    points: points.clone(),
                });
                "against the path's capacity (the smallest configured stage rate, stepped where a state changes it)"
            }
            None => "(no capacity line: the hosts share no link, or a stage's rate is not a constant)",
        };
        figures.push(Figure {
            title: format!("throughput {}", f.label),
            caption: format!(
                "Throughput of {} over time: IP bits received per bin ({bin_text}), {cap_note}; states and blackouts shaded.",
                f.label
            ),
            svg: series_plot(&format!("throughput, {}", f.label), "time (s)", "throughput (bit/s)", &series, &t.shades),
        });
        if f.packets_received > 0 {
            figures.push(Figure {
                title: format!("time-sequence {}", f.label),
                caption: format!(
                    "Time-sequence of {}: IP bytes received so far at the end of each bin ({bin_text}); its slope is \
                     the throughput, a flat step a stall (a loss recovered by timeout, a blackout).",
                    f.label
                ),
                svg: series_plot(
                    &format!("time-sequence, {}", f.label),
                    "time (s)",
                    "bytes received so far",
                    &[Series { name: "bytes received".into(), mark: Mark::Line, points: f.received_so_far(bin) }],
                    &t.shades,
                ),
            });
        }
        if f.delay_count.iter().any(|c| *c > 0.0) {
            figures.push(Figure {
                title: format!("delay {}", f.label),
                caption: format!(
                    "One-way delay of {} (sent to received, packets matched by IP identification): mean and largest per bin ({bin_text}).",
                    f.label
                ),
                svg: series_plot(
                    &format!("one-way delay, {}", f.label),
                    "time (s)",
                    "one-way delay (s)",
                    &delay_series(f, bin),
                    &t.shades,
                ),
            });
        }
        if !f.drops.is_empty() {
            let series: Vec<Series> = f
                .drops
                .iter()
                .map(|(reason, counts)| Series {
                    name: (*reason).to_string(),
                    mark: Mark::Line,
                    points: counts.iter().enumerate().map(|(i, n)| (i as f64 * bin, *n)).collect(),
                })
                .collect();
            figures.push(Figure {
                title: format!("drops {}", f.label),
                caption: format!("Packets of {} dropped per bin ({bin_text}), by reason (events.csv).", f.label),
                svg: series_plot(
                    &format!("drops by reason, {}", f.label),
                    "time (s)",
                    "packets dropped per bin",
                    &series,
                    &t.shades,
                ),
            });
        }
    }
    if !t.queues.is_empty() {
        let series: Vec<Series> = t
            .queues
            .iter()
            .map(|(stage, q)| Series {
                name: stage.clone(),
                mark: Mark::Line,
                points: q.iter().enumerate().map(|(i, n)| (i as f64 * bin, *n)).collect(),
            })
            .collect();
        figures.push(Figure {
            title: "queue length".into(),
            caption: format!(
                "Packets inside each stage (queue and link), the most per bin ({bin_text}), from events.csv."
            ),
            svg: series_plot("queue length per stage", "time (s)", "packets in stage", &series, &t.shades),
        });
    }
    let traces = tcp_series(dir)?;
    if traces.len() > MAX_TCP_FILES {
        notes.push(format!("TCP traces of {} of {} connection ends drawn.", MAX_TCP_FILES, traces.len()));
    }
    for (file, series) in traces.iter().take(MAX_TCP_FILES) {
        for (what, unit, wanted) in [
            ("congestion window", "cwnd", ["cwnd", "ssthresh"].as_slice()),
            ("round-trip time", "RTT", ["srtt", "rtt", "rttvar", "rto"].as_slice()),
        ] {
            let chosen: Vec<Series> =
                series.iter().filter(|s| wanted.iter().any(|w| s.name.starts_with(w))).cloned().collect();
            if chosen.is_empty() {
                continue;
            }
            // The column names carry their units (cwnd_bytes, srtt_s, ...).
            let names: Vec<&str> = chosen.iter().map(|s| s.name.as_str()).collect();
            figures.push(Figure {
                title: format!("{what} {file}"),
                caption: format!("TCP {what} from {file}: {}.", names.join(", ")),
                svg: series_plot(
                    &format!("TCP {what} ({file})"),
                    "time (s)",
                    &axis_unit(unit, file, &names),
                    &chosen,
                    &t.shades,
                ),
            });
        }
    }
    vector_figures(dir, end, &t.shades, &mut figures, &mut notes)?;
    if !t.missing.is_empty() {
        notes.push(format!(
            "This run has no {}: the figures drawn from {} are left out.",
            t.missing.join(", "),
            if t.missing.iter().any(|m| m == "events.csv") {
                "events.csv (queues, drops, states)"
            } else {
                "those files"
            }
        ));
    }
    Ok(RunFigures { timeline: t, figures, notes })
}

/// Output vectors drawn per run (vectors.csv, `[[record]]`).
pub const MAX_VECTORS: usize = 16;

/// The `[[record]]` vectors of the run (vectors.csv): one figure each,
/// its caption with the time-average, minimum and maximum.
fn vector_figures(
    dir: &Path,
    end: f64,
    shades: &[crate::plot::Shade],
    figures: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> Result<(), AnalysisError> {
    let vectors = crate::vectors::read_vectors(dir)?;
    let numeric: Vec<_> = vectors.iter().filter_map(|v| v.stats(end).map(|s| (v, s))).collect();
    if numeric.len() > MAX_VECTORS {
        notes.push(format!("{MAX_VECTORS} of {} output vectors drawn (vectors.csv has them all).", numeric.len()));
    }
    for (v, st) in numeric.into_iter().take(MAX_VECTORS) {
        let what = format!("{} of {}", v.name, v.source);
        figures.push(Figure {
            title: format!("vector {what}"),
            caption: format!(
                "Output vector {what} (vectors.csv, {} samples): time-average {:.6} (each value held to the next \
                 sample, from the first to the run's end at {end} s), min {}, max {}.",
                st.samples, st.time_average, st.min, st.max
            ),
            svg: series_plot(
                &what,
                "time (s)",
                &v.name,
                &[Series { name: v.name.clone(), mark: Mark::Line, points: step_points(&v.points, end) }],
                shades,
            ),
        });
    }
    for v in vectors.iter().filter(|v| v.points.is_empty() && v.names > 0) {
        notes.push(format!("Output vector {} of {}: {} named values (vectors.csv).", v.name, v.source, v.names));
    }
    Ok(())
}

/// A step function's corners: each value held until the next sample, the
/// last until `end`.
fn step_points(points: &[(f64, f64)], end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2 + 1);
    for (i, &(t, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push((t, points[i - 1].1));
        }
        out.push((t, v));
    }
    if let Some(&(t, v)) = points.last()
        && end > t
    {
        out.push((end, v));
    }
    out
}

/// A y-axis label with its unit. The simulator's `tcp-*.csv` give the
/// congestion window in bytes and times in seconds (squall-sim's
/// recorder); Linux's TCP_INFO, as `squall tool bulk --info-csv` writes it
/// (`*tcpinfo*.csv`), the window in segments (`tcpi_snd_cwnd`,
/// include/uapi/linux/tcp.h) and times in microseconds (`rtt_us`).
fn axis_unit(what: &str, file: &str, names: &[&str]) -> String {
    let linux = file.contains("tcpinfo");
    let unit = match (what, linux) {
        ("cwnd", false) => "bytes",
        ("cwnd", true) => "segments",
        (_, false) => "s",
        (_, true) if names.iter().all(|n| n.ends_with("_us")) => "µs",
        _ => "as in the trace's columns",
    };
    format!("{what} ({unit})")
}

/// The figures of a run as HTML (headings, figures, notes), for a page.
pub fn figures_html(run: &RunFigures) -> String {
    let mut s = String::new();
    for n in &run.notes {
        writeln!(s, "<p class=\"note\">{}</p>", html(n)).unwrap();
    }
    for f in &run.figures {
        writeln!(
            s,
            "<figure class=\"plot\" title=\"{}\">{}<figcaption>{}</figcaption></figure>",
            html(&f.title),
            f.svg,
            html(&f.caption)
        )
        .unwrap();
    }
    s
}

/// The data behind the flow figures, as CSV: one row per flow and bin,
/// throughput in bit/s and delays in seconds (empty where no packet was
/// received in the bin).
pub fn series_csv(run: &RunFigures) -> String {
    let mut s = String::from("flow,bin_start_s,bin_s,throughput_bit_per_s,delay_mean_s,delay_max_s\n");
    let t = &run.timeline;
    for f in drawn_flows(t) {
        for (start, bps) in f.throughput(t.bin) {
            let i = (start / t.bin).round() as usize;
            let (mean, max) = if f.delay_count[i] > 0.0 {
                ((f.delay_sum[i] / f.delay_count[i]).to_string(), f.delay_max[i].to_string())
            } else {
                (String::new(), String::new())
            };
            writeln!(s, "{},{start},{},{bps},{mean},{max}", crate::report::csv_field(&f.label), t.bin).unwrap();
        }
    }
    s
}

/// A self-contained page: `title`, an `intro` (HTML) and `body` (HTML).
pub fn page(title: &str, intro: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:1100px}} table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}} th{{background:#f3f3f3}} td:first-child{{text-align:left}}\
         figure{{margin:1em 0}} figcaption{{font-size:90%;color:#555}} .plot svg{{max-width:100%;height:auto}} .note{{color:#844}}</style></head><body>\n\
         <h1>{t}</h1>\n{intro}\n{body}</body></html>\n",
        t = html(title)
    )
}

/// Writes `html` to `path` through a temporary file renamed into place,
/// so that an interrupted report never leaves half a page.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
