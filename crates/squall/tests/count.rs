//! `[[workload.tcp]]` entries with `count` (issue 35), through the binary:
//! one entry of 100 flows gives the same per-flow results as 100 explicit
//! tables with the same drawn parameters (squall_scenario::count's
//! expansion rule), uniformly drawn starts pass a Kolmogorov–Smirnov test,
//! and bad values get located errors.

use std::path::Path;

mod common;
use common::{csv_rows, ok, squall, summary};

const TOPOLOGY: &str = r#"
[[hosts]]
name = "a"
address = "10.0.0.1"
ephemeral_ports = "32768-60999"
[[hosts]]
name = "b"
address = "10.0.0.2"

[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "bottleneck"
rate = "10 Mbit/s"
delay = "10 ms"
queue = { packets = 30 }
[[links.uplink]]
name = "back"
rate = "10 Mbit/s"
delay = "10 ms"
"#;

fn sim(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join(name);
    ok(squall(&[
        "sim",
        file.to_str().unwrap(),
        "--no-pcap",
        "--no-events",
        "--format",
        "csv",
        "--out",
        out.to_str().unwrap(),
    ]));
    out
}

#[test]
fn a_count_entry_runs_the_flows_of_its_explicit_tables() {
    let dir = tempfile::tempdir().unwrap();
    let counted = sim(
        dir.path(),
        "counted",
        &format!(
            "name = \"counted\"\nduration = \"20 s\"\nseed = 3\n{TOPOLOGY}\n\
             [[workload.tcp]]\nname = \"short\"\nfrom = \"a\"\nto = \"b\"\ncount = 100\ndst_port = 7000\n\
             start = {{ kind = \"uniform\", low = \"0 s\", high = \"2 s\" }}\n\
             app = {{ bulk = {{ kind = \"exponential\", mean = \"30 KB\" }} }}\n"
        ),
    );
    // summary.json lists no flow of the entry, and summarises it.
    let s = summary(&counted);
    let run = &s["runs"][0];
    assert!(run.get("tcp_flows").is_none(), "{run}");
    assert_eq!(run["flows"].as_array().unwrap().len(), 0);
    assert_eq!(run["tcp_counts"][0]["entry"], "short");
    assert_eq!(run["tcp_counts"][0]["flows"], 100);
    // The resolved scenario keeps the entry as it was written.
    let resolved = std::fs::read_to_string(counted.join("scenario.toml")).unwrap();
    assert_eq!(resolved.matches("[[workload.tcp]]").count(), 1, "{resolved}");
    assert!(resolved.contains("count = 100"), "{resolved}");

    let rows = csv_rows(&std::fs::read_to_string(counted.join("flows.csv")).unwrap());
    assert_eq!(rows.len(), 100);
    // The same flows written out: name NAME#k, the drawn start and size,
    // server port dst_port + k, the client's port from the range.
    let mut explicit = format!("name = \"explicit\"\nduration = \"20 s\"\nseed = 3\n{TOPOLOGY}\n");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(r["flow"], k.to_string());
        assert_eq!(r["dst_port"], (7000 + k).to_string());
        let start_ns = (r["start_s"].parse::<f64>().unwrap() * 1e9).round() as u64;
        explicit.push_str(&format!(
            "[[workload.tcp]]\nname = \"short#{k}\"\nfrom = \"a\"\nto = \"b\"\ndst_port = {}\n\
             start = \"{start_ns} ns\"\napp = {{ bulk = \"{} B\" }}\n",
            7000 + k,
            r["bytes"]
        ));
    }
    let explicit = summary(&sim(dir.path(), "explicit", &explicit));
    let flows = explicit["runs"][0]["tcp_flows"].as_array().unwrap();
    assert_eq!(flows.len(), 100);
    let mut retransmitted = 0;
    for (r, f) in rows.iter().zip(flows) {
        assert_eq!(f["name"], format!("short#{}", r["flow"]));
        assert_eq!(r["completed"], "true", "{r:?}");
        assert_eq!(f["completed"], true);
        assert_eq!(f["delivered_bytes"].to_string(), r["bytes"]);
        assert_eq!(format!("{:.9}", f["transfer_time"].as_f64().unwrap()), r["fct_s"], "{r:?}");
        assert_eq!(format!("{:.3}", f["goodput_bps"].as_f64().unwrap()), r["goodput_bps"]);
        assert_eq!(f["sender"]["retransmitted_segments"].to_string(), r["retransmitted_segments"]);
        assert_eq!(f["sender"]["timeouts"].to_string(), r["timeouts"]);
        retransmitted += f["sender"]["retransmitted_segments"].as_u64().unwrap();
    }
    // The flows shared the 30-packet queue: they met, and lost packets.
    assert!(retransmitted > 0, "no flow retransmitted: the flows never competed");
}

#[test]
fn uniformly_drawn_starts_pass_a_kolmogorov_smirnov_test() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1000;
    let out = sim(
        dir.path(),
        "starts",
        &format!(
            "name = \"starts\"\nduration = \"11 s\"\nseed = 11\n{TOPOLOGY}\n\
             [[workload.tcp]]\nname = \"many\"\nfrom = \"a\"\nto = \"b\"\ncount = {n}\ndst_port = 2000\n\
             start = {{ kind = \"uniform\", low = \"0 s\", high = \"10 s\" }}\napp = {{ bulk = \"1 KB\" }}\n"
        ),
    );
    let mut starts: Vec<f64> = csv_rows(&std::fs::read_to_string(out.join("flows.csv")).unwrap())
        .iter()
        .map(|r| r["start_s"].parse().unwrap())
        .collect();
    assert_eq!(starts.len(), n);
    starts.sort_by(f64::total_cmp);
    // D = sup |F_n(x) − F(x)| with F(x) = x / 10 s on [0, 10 s].
    let d = starts
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let f = x / 10.0;
            (f - i as f64 / n as f64).max((i + 1) as f64 / n as f64 - f)
        })
        .fold(0.0, f64::max);
    // The asymptotic critical value at α = 0.01.
    let critical = 1.628 / (n as f64).sqrt();
    assert!(d < critical, "KS statistic {d} ≥ {critical}");
    // And not all at one instant (a constant start would fail by far).
    assert!(starts[0] < 0.1 && starts[n - 1] > 9.9, "{} .. {}", starts[0], starts[n - 1]);
}

#[test]
fn bad_count_values_are_located() {
    let dir = tempfile::tempdir().unwrap();
    // The entry's keys, the key the error names (and the line it starts
    // with), and a part of the message.
    for (keys, key, expect) in [
        ("count = 0\napp = { bulk = \"1 KB\" }", "count", "at least one flow"),
        ("count = 10\nsrc_port = 4000\napp = { bulk = \"1 KB\" }", "src_port", "leave src_port out"),
        ("count = 100\ndst_port = 65500\napp = { bulk = \"1 KB\" }", "dst_port", "server ports 65500 to 65599"),
        ("count = 61000\napp = { bulk = \"1 KB\" }", "count", "server_ports = \"shared\""),
        (
            "server_ports = \"shared\"\napp = { bulk = \"1 KB\" }",
            "server_ports",
            "for the flows of a `count` or `arrivals` entry",
        ),
        ("count = 2\nserver_ports = \"one\"\napp = { bulk = \"1 KB\" }", "server_ports", "per_flow"),
        (
            "count = 2\nstart = { kind = \"uniform\", low = \"2 s\", high = \"1 s\" }\napp = { bulk = \"1 KB\" }",
            "start",
            "uniform needs low <= high",
        ),
        ("count = 2\napp = { bulk = { kind = \"exponential\", mean = \"0 B\" } }", "app", "mean must be positive"),
    ] {
        let text = format!(
            "name = \"bad\"\nduration = \"1 s\"\n{TOPOLOGY}\n[[workload.tcp]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n{keys}\n"
        );
        let line = text.lines().position(|l| l.starts_with(&format!("{key} ="))).unwrap() + 1;
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, &text).unwrap();
        let o = squall(&["sim", file.to_str().unwrap(), "--out", dir.path().join("o").to_str().unwrap()]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("bad.toml:{line}:")), "{keys}: {err}");
        assert!(err.contains(&format!("`workload.tcp[0].{key}")), "{keys}: {err}");
        assert!(err.contains(expect), "{keys}: {err}");
    }
}
