//! `squall report DIR` on a `squall sim` output: report.html with each
//! flow's throughput against capacity, delay, drops, queues, states (one
//! legend entry per state) and TCP traces, SI-formatted axes, checked
//! against summary.json (computed separately, by the engine) and rendered
//! in headless Chromium (screenshots kept under the test's target tmp dir).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::{csv_rows, ok, pixels_near, squall};

/// A directory kept after the test (for the screenshots), emptied first.
fn kept_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Seawind's GSM link (builtin:gsm-udp) with two states in a cycle, good
/// (4 s) and bad (3 s, 10% errors and half the rate), entered many times
/// over 60 s, and the builtin's downlink blackout at 30 s.
const CYCLING: &str = r#"
name = "gsm-cycle"
duration = "60 s"
seed = 7
[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "gsm-down"
rate = "9600 bit/s"
delay = "200 ms"
queue = { packets = 7, drop = "tail" }
error = { packet = "1%" }
[[links.uplink]]
name = "gsm-up"
rate = "9600 bit/s"
delay = "200 ms"
queue = { packets = 7, drop = "tail" }
[[states]]
name = "good"
hold = "4 s"
set.gsm-down = { rate = "9600 bit/s", error = { packet = "1%" } }
[[states]]
name = "bad"
hold = "3 s"
set.gsm-down = { rate = "4800 bit/s", error = { packet = "10%" } }
[[blackouts]]
at = "30 s"
duration = "2 s"
direction = "downlink"
mode = "hold"
[[workload.udp]]
name = "down"
from = "fixed"
to = "mobile"
size = "296 B"
rate = "4 kbit/s"
"#;

/// The text of every `<text>` element of the page's SVGs.
fn svg_texts(html: &str) -> Vec<String> {
    html.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim().to_string()))
        .collect()
}

/// The flow's bins in report-series.csv: (Σ bits, bin width, bins).
fn binned(dir: &Path, flow: &str) -> (f64, f64, usize) {
    let rows = csv_rows(&std::fs::read_to_string(dir.join("report-series.csv")).unwrap());
    let rows: Vec<_> = rows.iter().filter(|r| r["flow"] == flow).collect();
    assert!(!rows.is_empty(), "no bins of {flow}");
    let bin: f64 = rows[0]["bin_s"].parse().unwrap();
    let bits: f64 = rows.iter().map(|r| r["throughput_bit_per_s"].parse::<f64>().unwrap() * bin).sum();
    (bits, bin, rows.len())
}

/// summary.json's flow `name` of replication 0.
fn summary_flow(dir: &Path, name: &str) -> serde_json::Value {
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    s["runs"][0]["flows"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap().clone()
}

/// Loads `page` in headless Chromium: no console message, and a
/// screenshot `shot` returned as (RGB pixels, samples per pixel).
fn chromium(page: &Path, shot: &Path) -> Option<(Vec<u8>, usize)> {
    let rendered = common::render(page, &shot.with_extension("profile"), "1100,2600", shot)?;
    assert!(rendered.dom.contains("<svg"));
    Some((rendered.pixels, rendered.samples))
}

#[test]
fn a_sim_run_with_cycling_states_gets_its_figures_over_time() {
    let dir = kept_dir("udp-states");
    let scenario = dir.join("cycle.toml");
    std::fs::write(&scenario, CYCLING).unwrap();
    let out = dir.join("out");
    ok(squall(&["sim", scenario.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    ok(squall(&["report", out.to_str().unwrap()]));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();

    // The states were entered many times (events.csv, written by the
    // engine): the legend still names each once per figure.
    let events = std::fs::read_to_string(out.join("rep-0/events.csv")).unwrap();
    let entered = |s: &str| events.lines().filter(|l| l.contains("state_change") && l.contains(s)).count();
    assert!(entered("good") >= 5 && entered("bad") >= 5, "good {}, bad {}", entered("good"), entered("bad"));
    let figures = html.matches("<figure").count();
    assert!(figures >= 4, "{figures} figures");
    let texts = svg_texts(&html);
    for label in ["state good", "state bad", "blackout gsm-down"] {
        assert_eq!(texts.iter().filter(|t| *t == label).count(), figures, "{label}: one legend entry per figure");
    }
    // A colour per state: the throughput figure fills its good and bad
    // intervals in two colours, each used for as many rectangles as the
    // state was entered (plus its legend swatch).
    let throughput = html.split("<figure").find(|f| f.contains("title=\"throughput")).unwrap();
    let fills: BTreeMap<&str, usize> = throughput
        .split("<rect")
        .skip(1)
        .filter(|r| r.contains("opacity=\"0.18"))
        .filter_map(|r| r.split("fill=\"").nth(1)?.split('"').next())
        .fold(BTreeMap::new(), |mut m, c| {
            *m.entry(c).or_default() += 1;
            m
        });
    let mut counts: Vec<usize> = fills.values().copied().collect();
    counts.sort();
    // good, bad, blackout: three colours.
    assert_eq!(fills.len(), 3, "{fills:?}");
    assert!(counts.contains(&entered("good").max(entered("bad"))), "{fills:?}");

    // Throughput: the bins hold exactly the bytes the engine delivered, and
    // their mean over the flow's bins is summary.json's throughput within
    // the rounding of its first and last bin.
    let flow = summary_flow(&out, "down");
    let (bits, bin, bins) = binned(&out, "udp fixed:10000 > mobile:5001");
    let delivered = flow["delivered_bytes"].as_f64().unwrap() * 8.0;
    assert!((bits - delivered).abs() < 1e-6 * delivered, "binned {bits} bits, delivered {delivered}");
    let summary = flow["throughput_bps"].as_f64().unwrap();
    let mean = bits / (bins as f64 * bin);
    let active = delivered / summary;
    assert!(
        mean <= summary * (1.0 + 1e-9) && mean >= summary * active / (active + 2.0 * bin),
        "binned mean {mean} bit/s, summary.json {summary} bit/s over {active} s"
    );

    // Capacity: 9600 bit/s, stepped to 4800 in the bad state.
    assert!(html.contains("capacity (bottleneck rate)"));
    // SI axes: tick labels are short numbers with a prefix, never raw.
    assert!(texts.iter().any(|t| t == "9.6k" || t == "8k" || t == "10k"), "no kilo ticks in {texts:?}");
    for t in &texts {
        if let Ok(v) = t.trim_end_matches(['k', 'M', 'G', 'm', 'µ', 'n']).parse::<f64>() {
            assert!(t.len() <= 5 && v.abs() < 1000.0, "tick {t:?} is not SI-formatted");
        }
    }
    for label in ["throughput (bit/s)", "one-way delay (s)", "packets in stage", "time (s)"] {
        assert!(texts.iter().any(|t| t == label), "no axis label {label:?}");
    }

    let Some((pixels, bpp)) = chromium(&out.join("report.html"), &dir.join("udp-states.png")) else { return };
    // Both states' shading shows: white under 18% of (255, 200, 0) and of
    // (120, 120, 120).
    let total = pixels.len() / bpp;
    for c in [[255, 245, 209], [231, 231, 231]] {
        let n = pixels_near(&pixels, bpp, c, 6);
        assert!(n > total / 100, "shading {c:?} on {n} of {total} pixels");
    }
}

#[test]
fn a_tcp_run_gets_cwnd_and_rtt_and_its_ack_direction_is_not_a_flow() {
    let dir = kept_dir("tcp");
    let out = dir.join("out");
    ok(squall(&["sim", "builtin:gsm-reno", "--replications", "1", "--out", out.to_str().unwrap()]));
    ok(squall(&["report", out.to_str().unwrap()]));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let texts = svg_texts(&html);
    for label in ["cwnd (bytes)", "RTT (s)", "cwnd", "srtt", "state weak-signal"] {
        assert!(texts.iter().any(|t| t == label), "no {label:?} in the figures");
    }
    assert!(html.contains("title=\"throughput tcp fixed:20000 &gt; mobile:5000\""));
    assert!(!html.contains("title=\"throughput tcp mobile:5000"), "the ACKs' direction drawn as a flow");
    // The data the engine delivered, all of it in the bins.
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let down = s["runs"][0]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"]["src_port"] == 20000 && f["key"]["dst_port"] == 5000)
        .unwrap()
        .clone();
    let (bits, _, _) = binned(&out, "tcp fixed:20000 > mobile:5000");
    let delivered = down["delivered_bytes"].as_f64().unwrap() * 8.0;
    assert!((bits - delivered).abs() < 1e-6 * delivered, "binned {bits} bits, delivered {delivered}");
    chromium(&out.join("report.html"), &dir.join("tcp.png"));
}

#[test]
fn a_directory_that_is_no_output_is_named_with_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let o = squall(&["report", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("no experiment.json") && err.contains("no summary.json") && err.contains("no result.json"),
        "{err}"
    );
    let missing = dir.path().join("nothing-here");
    let o = squall(&["report", missing.to_str().unwrap()]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("no such directory"));
    // A sim output asked for a replication it does not have.
    let out = dir.path().join("out");
    ok(squall(&[
        "sim",
        "builtin:gsm-udp",
        "--replications",
        "1",
        "--set",
        "duration=\"10 s\"",
        "--out",
        out.to_str().unwrap(),
    ]));
    let o = squall(&["report", out.to_str().unwrap(), "--replication", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("rep-3") && err.contains("it has rep-0"), "{err}");
}

/// An emulation's output directory, built from a simulated run's files
/// (no namespaces needed): both engines write the same HOST.pcap and
/// events.csv; `squall emu` adds engine "emu" in summary.json,
/// rep-0/timing.csv and the workloads' TCP_INFO samples in
/// rep-0/workloads/ (`squall tool bulk --info-csv tcpinfo.csv`, whose
/// header is copied here from squall-emu's bulk.rs: cwnd in segments,
/// times in microseconds).
#[test]
fn an_emu_output_directory_gets_its_report_with_linux_tcp_info() {
    let dir = kept_dir("emu");
    let out = dir.join("out");
    ok(squall(&[
        "sim",
        "builtin:gsm-udp",
        "--replications",
        "1",
        "--set",
        "duration=\"50 s\"",
        "--out",
        out.to_str().unwrap(),
    ]));
    let path = out.join("summary.json");
    let mut summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let delivered = summary["runs"][0]["flows"].as_array().unwrap().iter().find(|f| f["name"] == "down").unwrap()
        ["delivered_bytes"]
        .as_f64()
        .unwrap();
    summary["engine"] = "emu".into();
    let run = &summary["runs"][0];
    summary["runs"] = serde_json::json!([{ "replication": 0, "seed": run["seed"], "end": run["end"], "flows": [] }]);
    std::fs::write(&path, summary.to_string()).unwrap();
    std::fs::write(out.join("rep-0/timing.csv"), "scheduled,actual\n").unwrap();
    std::fs::create_dir_all(out.join("rep-0/workloads")).unwrap();
    let mut info = String::from(
        "time,cwnd,ssthresh,rtt_us,rttvar_us,min_rtt_us,rto_us,total_retrans,retransmits,bytes_acked,bytes_retrans,delivery_rate,ca_state,snd_mss\n",
    );
    for i in 0..50 {
        info.push_str(&format!(
            "{i},{},2147483647,{},50000,200000,1200000,0,0,0,0,0,0,1448\n",
            10 + i,
            400_000 + 1000 * i
        ));
    }
    std::fs::write(out.join("rep-0/workloads/tcpinfo.csv"), info).unwrap();

    ok(squall(&["report", out.to_str().unwrap()]));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("(emu engine)"));
    // The state entered at 40 s of the 50 s run is shaded.
    let texts = svg_texts(&html);
    for label in ["cwnd (segments)", "RTT (µs)", "rtt_us", "state weak-signal", "throughput (bit/s)"] {
        assert!(texts.iter().any(|t| t == label), "no {label:?} in the figures");
    }
    // Linux's unset ssthresh (2^31 - 1) is not drawn.
    assert!(!texts.iter().any(|t| t == "ssthresh"), "ssthresh of 2^31-1 drawn");
    let (bits, _, _) = binned(&out, "udp fixed:10000 > mobile:5001");
    assert!((bits - delivered * 8.0).abs() < 1e-6 * delivered, "binned {bits} bits, delivered {delivered} bytes");
    chromium(&out.join("report.html"), &dir.join("emu.png"));
}
