//! `--downlink-trace` / `--uplink-trace` (mm-link's DOWNLINK-TRACE and
//! UPLINK-TRACE) on a `--link` one-liner: a Mahimahi trace stage follows
//! the netem stage, in the simulator here (both engines share the loader).

use std::process::Command;

mod common;
use common::SQUALL;

#[test]
fn a_link_one_liner_takes_mahimahi_traces() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("12mbit.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let out = dir.path().join("out");
    let o = Command::new(SQUALL)
        .args(["sim", "--link", "delay 10ms", "--udp", "20 Mbit/s", "--set", "duration=\"10 s\"", "--downlink-trace"])
        .arg(&trace)
        .arg("--uplink-trace")
        .arg(&trace)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let link = &s["resolved_scenario"]["links"][0];
    assert_eq!(link["downlink"][1]["name"], "trace-down");
    assert_eq!(link["uplink"][1]["name"], "trace-up");
    assert_eq!(link["uplink"][1]["trace"]["opportunities_ms"], serde_json::json!([1]));
    // The 1200-byte packets of --udp reach the trace stage from 10 ms on:
    // 9 990 opportunities of 1 504 B to 10 s, each packet costing 1 204 B:
    // 9 990 · 1 504 / 1 204 = 12 479.4 packets (one is partly sent at the end).
    let stages = s["runs"][0]["stages"].as_array().unwrap();
    let trace_down = stages.iter().find(|st| st["name"] == "trace-down").unwrap();
    let delivered = trace_down["delivered"].as_f64().unwrap();
    assert!((delivered - 9990.0 * 1504.0 / 1204.0).abs() <= 1.0, "trace-down delivered {delivered}");

    // A bad trace names the flag, the file and the line.
    std::fs::write(&trace, "2\n1\n").unwrap();
    let o =
        Command::new(SQUALL).args(["sim", "--link", "delay 10ms", "--downlink-trace"]).arg(&trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("--downlink-trace") && err.contains("12mbit.trace:2: 1 ms comes after 2 ms"), "{err}");
    // Only with --link.
    let o = Command::new(SQUALL).args(["sim", "builtin:gsm-udp", "--downlink-trace"]).arg(&trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("in a scenario file give the stage `trace"), "{err}");
}

/// `squall sim --link "delay 20ms" --downlink-trace 12mbit.trace
/// --downlink-queue=KIND [--downlink-queue-args=ARGS] EXTRA` for `secs`
/// seconds: the trace stage's resolved queue and its counters.
fn mm_link_run(
    kind: &str,
    args: Option<&str>,
    extra: &[&str],
    secs: u32,
) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("12mbit.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let out = dir.path().join("out");
    let mut cmd = Command::new(SQUALL);
    cmd.args(["sim", "--link", "delay 20ms", "--no-pcap", "--set", &format!("duration=\"{secs} s\"")])
        .arg("--downlink-trace")
        .arg(&trace)
        .arg(format!("--downlink-queue={kind}"))
        .args(extra)
        .arg("--out")
        .arg(&out);
    if let Some(a) = args {
        cmd.arg(format!("--downlink-queue-args={a}"));
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = common::summary(&out);
    let queue = s["resolved_scenario"]["links"][0]["downlink"][1]["queue"].clone();
    let stage =
        s["runs"][0]["stages"].as_array().unwrap().iter().find(|st| st["name"] == "trace-down").unwrap().clone();
    let flow = s["runs"][0]["flows"][0].clone();
    (queue, stage, flow)
}

/// 20 Mbit/s of 1 200-byte UDP packets into the 12 Mbit/s trace `1`:
/// the queue is always full, so it holds exactly its limit, and the trace
/// still delivers its 4 980 opportunities (5 s less the 20 ms before the
/// first packet) × 1 504 B / 1 204 B = 6 220.9 packets. Which end drops
/// shows in the delay (Little's law over the full queue of 20): with tail
/// drop a delivered packet moves up one place per departure, 1 249.2 a
/// second (1 504/1 204 per ms), so it waits 20/1 249.2 = 16.0 ms; with
/// head drop it moves up one place per arrival (a departure or a drop at
/// the head), 2 083.3 a second, so 20/2 083.3 = 9.6 ms. The flow's mean
/// delay is that, the 20 ms stage and up to 1 ms to the next opportunity.
const UDP_OVERLOAD: [&str; 2] = ["--udp", "20 Mbit/s"];

#[test]
fn mm_link_droptail_limits_the_trace_stages_queue_in_packets() {
    let (queue, stage, flow) = mm_link_run("droptail", Some("packets=20"), &UDP_OVERLOAD, 5);
    assert_eq!(queue, serde_json::json!({ "packets": 20, "drop": "tail" }));
    assert_eq!(stage["max_queue_len"], 20);
    assert!(stage["dropped"]["queue_overflow"].as_u64().unwrap() > 3000, "{stage}");
    assert!((stage["delivered"].as_f64().unwrap() - 4980.0 * 1504.0 / 1204.0).abs() <= 1.0, "{stage}");
    let queued = flow["delay_mean"].as_f64().unwrap() - 0.020;
    assert!((0.0160..0.0170).contains(&queued), "{queued} s in the queue, expected 16.0 ms + up to 1 ms");
}

/// bytes=24080 is 20 packets of 1 204 B: the same limit, now in bytes and
/// dropping from the head (mm-link's drophead takes the arrival).
#[test]
fn mm_link_drophead_limits_the_trace_stages_queue_in_bytes() {
    let (queue, stage, flow) = mm_link_run("drophead", Some("bytes=24080"), &UDP_OVERLOAD, 5);
    assert_eq!(queue, serde_json::json!({ "bytes": "24080 B", "drop": "head" }));
    assert_eq!(stage["max_queue_len"], 20);
    assert!(stage["dropped"]["queue_overflow"].as_u64().unwrap() > 3000, "{stage}");
    assert!((stage["delivered"].as_f64().unwrap() - 4980.0 * 1504.0 / 1204.0).abs() <= 1.0, "{stage}");
    // Tail drop here would give 16.4 ms (measured with droptail above).
    let queued = flow["delay_mean"].as_f64().unwrap() - 0.020;
    assert!((0.0096..0.0106).contains(&queued), "{queued} s in the queue, expected 9.6 ms + up to 1 ms");
}

/// A bulk TCP flow (cubic) through the trace `1` (one 1 500-byte packet
/// per ms): with mm-link's default `infinite` queue it stands hundreds of
/// packets deep; CoDel (target 5 ms, RFC 8289) holds the mean queue below
/// 2 × target = 10 packets, PIE (qdelay_ref 15 ms, RFC 8033) near 15
/// (between 7.5 and 30), each by its own drops, none by the 1 000-packet
/// limit.
#[test]
fn mm_link_codel_and_pie_control_the_queue_infinite_does_not() {
    let (queue, stage, _) = mm_link_run("infinite", None, &["--tcp", "cubic"], 20);
    assert_eq!(queue, serde_json::json!({ "drop": "tail" }));
    assert!(stage["mean_queue_len"].as_f64().unwrap() > 100.0, "{stage}");

    let (queue, stage, _) = mm_link_run("codel", Some("packets=1000, target=5, interval=100"), &["--tcp", "cubic"], 20);
    assert_eq!(
        queue,
        serde_json::json!({ "packets": 1000, "drop": "tail",
            "codel": { "target": "5 ms", "interval": "100 ms", "ecn": false } })
    );
    assert!(stage["mean_queue_len"].as_f64().unwrap() < 10.0, "{stage}");
    assert!(stage["dropped"]["codel"].as_u64().unwrap() > 0 && stage["dropped"].get("queue_overflow").is_none());

    let (queue, stage, _) =
        mm_link_run("pie", Some("packets=1000,qdelay_ref=15,max_burst=100"), &["--tcp", "cubic"], 20);
    assert_eq!(
        queue,
        serde_json::json!({ "packets": 1000, "drop": "tail",
            "pie": { "target": "15 ms", "t_update": "30 ms", "alpha": 0.125, "beta": 1.25, "max_burst": "100 ms", "ecn": false } })
    );
    let mean = stage["mean_queue_len"].as_f64().unwrap();
    assert!((7.5..30.0).contains(&mean), "{stage}");
    assert!(stage["dropped"]["pie"].as_u64().unwrap() > 0 && stage["dropped"].get("queue_overflow").is_none());
}

/// Bad queue options are refused before the run, naming the option.
#[test]
fn mm_link_bad_queue_options_name_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    std::fs::write(&trace, "1\n").unwrap();
    let t = trace.to_str().unwrap();
    let err = |args: &[&str]| {
        let o = Command::new(SQUALL).args(["sim", "--link", "delay 1ms"]).args(args).output().unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = err(&["--uplink-trace", t, "--uplink-queue=red"]);
    assert!(
        e.contains("--uplink-queue \"red\": not a queue type of mm-link; expected one of infinite, droptail"),
        "{e}"
    );
    let e = err(&["--uplink-trace", t, "--uplink-queue=pie", "--uplink-queue-args=packets=10, qdelay_ref=x"]);
    assert!(
        e.contains("--uplink-queue-args \"packets=10, qdelay_ref=x\": `qdelay_ref=x`: expected a whole number of ms"),
        "{e}"
    );
    let e = err(&["--downlink-trace", t, "--downlink-queue=codel", "--downlink-queue-args=target=5,interval=100"]);
    assert!(e.contains("codel needs a limit, packets=N or bytes=N"), "{e}");
    // A queue needs its trace, as in mm-link (the queue is the trace link's).
    let e = err(&["--downlink-queue=droptail"]);
    assert!(e.contains("--downlink-trace <FILE>"), "{e}");
    let e = err(&["--onoff", "both 1 1"]);
    assert!(e.contains("--onoff \"both 1 1\": `both` is not a direction"), "{e}");
}

/// mm-onoff's means, drawn by the simulator: `--onoff "downlink 0.5 0.2"`
/// for 400 s gives 557 on and 557 off periods (seed 1); each mean is within 3.5
/// standard errors (an exponential's deviation is its mean: SE = mean /
/// √n) of the argument. The uplink never goes off, and the downlink's UDP
/// packets get through for the on fraction 0.5 / 0.7 of the time (the
/// delivered share within 3 %).
#[test]
fn mm_onoff_periods_have_the_means_given() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = Command::new(SQUALL)
        .args(["sim", "--link", "delay 10ms", "--onoff", "downlink 0.5 0.2", "--udp", "1 Mbit/s", "--no-pcap"])
        .args(["--set", "duration=\"400 s\"", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let events = common::events(&out.join("rep-0/events.csv"), Some("netem-down"));
    let times = |kind: &str| -> Vec<f64> {
        events.iter().filter(|e| e["event"] == kind).map(|e| e["time"].parse().unwrap()).collect()
    };
    let (starts, ends) = (times("blackout_start"), times("blackout_end"));
    assert!(starts.len() > 450 && ends.len() + 1 >= starts.len(), "{} starts, {} ends", starts.len(), ends.len());
    // On: from 0 to the first start, then from each end to the next start.
    let on: Vec<f64> = std::iter::once(starts[0]).chain(ends.iter().zip(&starts[1..]).map(|(e, s)| s - e)).collect();
    let off: Vec<f64> = starts.iter().zip(&ends).map(|(s, e)| e - s).collect();
    for (what, periods, mean) in [("on", &on, 0.5), ("off", &off, 0.2)] {
        let n = periods.len() as f64;
        let measured = periods.iter().sum::<f64>() / n;
        let se = mean / n.sqrt();
        assert!(
            (measured - mean).abs() < 3.5 * se,
            "{what}: mean {measured} s over {n} periods, expected {mean} ± {}",
            3.5 * se
        );
        assert!(periods.iter().all(|&p| p >= 0.0));
    }
    let s = common::summary(&out);
    let stages = s["runs"][0]["stages"].as_array().unwrap();
    let down = stages.iter().find(|st| st["name"] == "netem-down").unwrap();
    let share = down["delivered"].as_f64().unwrap() / down["entered"].as_f64().unwrap();
    assert!((share - 0.5 / 0.7).abs() < 0.03, "delivered share {share}");
    assert_eq!(down["dropped"].as_object().unwrap().keys().collect::<Vec<_>>(), ["blackout"]);
    let up = stages.iter().find(|st| st["name"] == "netem-up").unwrap();
    assert!(up["dropped"].as_object().is_none_or(|d| d.is_empty()), "{up}");
    assert!(
        !common::events(&out.join("rep-0/events.csv"), Some("netem-up")).iter().any(|e| e["event"] == "blackout_start")
    );
}

/// mm-onoff's blackout is on its own stage alone (guide, netem and
/// Mahimahi users: "a packet already past it when the link goes off is
/// not dropped"): `mm-onoff downlink 0.5 0.2 mm-delay 100` puts the on/off
/// stage before a 100 ms delay stage; over 100 s, with about 140 off
/// periods each finding about 10 packets in the delay stage, the delay
/// stage drops none and delivers every packet it took (but those still in
/// it at the end), while the on/off stage drops the packets that meet it
/// off (the share off, 0.2/0.7, within 3 %). A blackout of every stage
/// would drop the ~1 400 in the delay stage too.
#[test]
fn mm_onoff_blacks_out_its_own_stage_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = Command::new(SQUALL)
        .args(["sim", "--link", "mm-onoff downlink 0.5 0.2 mm-delay 100", "--udp", "1 Mbit/s", "--no-pcap"])
        .args(["--set", "duration=\"100 s\"", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = common::summary(&out);
    let stages = s["runs"][0]["stages"].as_array().unwrap();
    let names: Vec<&str> = stages.iter().filter_map(|st| st["name"].as_str()).collect();
    let stage = |name: &str| stages.iter().find(|st| st["name"] == name).unwrap_or_else(|| panic!("{names:?}"));
    let onoff = stage("mm-onoff-down");
    let dropped = onoff["dropped"]["blackout"].as_f64().unwrap();
    let share = dropped / onoff["entered"].as_f64().unwrap();
    assert!((share - 0.2 / 0.7).abs() < 0.03, "{onoff}");
    let delay = stages.iter().find(|st| st["direction"] == "downlink" && st["name"] != "mm-onoff-down").unwrap();
    assert!(delay["dropped"].as_object().is_none_or(|d| d.is_empty()), "{delay}");
    let (entered, delivered) = (delay["entered"].as_u64().unwrap(), delay["delivered"].as_u64().unwrap());
    assert!(entered - delivered <= 11, "{delay}");
    assert_eq!(entered, onoff["delivered"].as_u64().unwrap());
}
