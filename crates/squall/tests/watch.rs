//! `squall ctl watch` (issue 32): the control socket's live counters of
//! a running emulation, checked against the link's physics, and a state
//! switched with `squall ctl` seen in the stream and in events.csv.
//! Needs root and network namespaces: skipped without them, except under
//! CI=true, where it fails.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

mod common;
use common::{SQUALL, namespaces_available};

/// Emulations in this file one at a time (as tests/emu/ does).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The largest packet the workload sends, bytes (the TUN MTU).
const MTU: f64 = 1500.0;

/// tcp-10mbit.toml with a 4 Mbit/s downlink and a state `slow` that sets
/// it to 1 Mbit/s.
fn scenario(dir: &Path) -> std::path::PathBuf {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/emu/tcp-10mbit.toml");
    let text = std::fs::read_to_string(file).unwrap();
    let down = "name = \"down\"\nrate = \"10 Mbit/s\"";
    assert!(text.contains(down));
    let text = text.replacen(down, "name = \"down\"\nrate = \"4 Mbit/s\"", 1)
        + "\n[[states]]\nname = \"slow\"\nset.down = { rate = \"1 Mbit/s\" }\n";
    let path = dir.join("watched.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A bulk TCP transfer over a 4 Mbit/s downlink for 8 s, watched with
/// `squall ctl watch --json`; at 4 s `squall ctl state slow` drops the
/// rate to 1 Mbit/s.
///
/// `squall emu` of [`scenario`] into `out` with `extra` arguments, a bulk
/// TCP transfer from fixed to mobile that outlasts the run, started in
/// the background.
fn bulk_emulation(dir: &Path, out: &Path, extra: &[&str]) -> std::process::Child {
    Command::new(SQUALL)
        .arg("emu")
        .arg(scenario(dir))
        .arg("--out")
        .arg(out)
        .args(extra)
        .arg("--serve")
        .arg(format!("mobile@0s={SQUALL} tool bulk --server"))
        .arg("--run")
        .arg(format!("fixed@0.1s={SQUALL} tool bulk --client 10.0.1.1 --bytes '50 MB'"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (4 s at most) until `squall ctl list` shows the run `id`.
fn wait_listed(id: &str) {
    for _ in 0..200 {
        let list = Command::new(SQUALL).args(["ctl", "list"]).output().unwrap();
        if String::from_utf8_lossy(&list.stdout).contains(id) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("run {id} not in `squall ctl list`");
}

/// Physics, not timing: a sample counts every delivery scheduled up to
/// the instant the paths were last advanced to, so n packets of S bytes
/// counted between samples dt apart left a link of rate R back to back at
/// best: (n − 1)·S·8/R ≤ dt, i.e. bytes·8 ≤ R·dt + S·8 (one more packet
/// for the one on the wire when the rate changes). And TCP with a queue
/// above the bandwidth-delay product keeps the link busy: after its slow
/// start, at least 80% of R.
#[test]
fn ctl_watch_sees_the_link_rate_and_a_state_switch() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut emu = bulk_emulation(dir.path(), &out, &["--duration", "8 s", "--no-pcap"]);
    let id = emu.id().to_string();
    let ctl = |args: &[&str]| Command::new(SQUALL).arg("ctl").args(args).output().unwrap();
    wait_listed(&id);
    let mut watch = Command::new(SQUALL).args(["ctl", "watch", &id, "--json"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines: Vec<serde_json::Value> = Vec::new();
    let mut switched_at = None;
    for line in BufReader::new(watch.stdout.take().unwrap()).lines() {
        let line: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        let t = line["time"].as_f64().unwrap();
        if switched_at.is_none() && t >= 4.0 {
            let answer = ctl(&["state", &id, "slow"]);
            assert!(answer.status.success(), "{}", String::from_utf8_lossy(&answer.stderr));
            let answer: serde_json::Value = serde_json::from_slice(&answer.stdout).unwrap();
            switched_at = Some(answer["time"].as_f64().unwrap());
        }
        lines.push(line);
    }
    assert!(watch.wait().unwrap().success(), "`squall ctl watch` ends with the run, successfully");
    assert!(emu.wait().unwrap().success());
    let switched_at = switched_at.expect("the run reached 4 s while watched");
    // About five lines a second, from about 0 s to 8 s.
    assert!(lines.len() >= 25, "{} lines", lines.len());
    let down = |line: &serde_json::Value| -> serde_json::Value {
        line["paths"].as_array().unwrap().iter().find(|p| p["direction"] == "downlink").unwrap().clone()
    };
    let mut before = Vec::new();
    let mut after = Vec::new();
    for pair in lines.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (t0, t1) = (a["time"].as_f64().unwrap(), b["time"].as_f64().unwrap());
        let dt = b["interval_s"].as_f64().unwrap();
        assert!((dt - (t1 - t0)).abs() < 1e-9);
        let bytes =
            (down(b)["delivered_bytes"].as_u64().unwrap() - down(a)["delivered_bytes"].as_u64().unwrap()) as f64;
        let bps = down(b)["throughput_bps"].as_f64().unwrap();
        assert!((bps - bytes * 8.0 / dt).abs() < 1e-6 * bps.max(1.0), "{b}");
        // The rate in force over the whole interval: 4 Mbit/s until the
        // switch, 1 Mbit/s for intervals that start after it.
        let rate = if t0 >= switched_at { 1e6 } else { 4e6 };
        assert!(bytes * 8.0 <= rate * dt + 2.0 * MTU * 8.0, "{bytes} B in {dt} s at {rate} bit/s: {b}");
        // The busiest flow is the transfer; it cannot beat its path.
        let flow =
            b["flows"].as_array().unwrap().iter().filter_map(|f| f["throughput_bps"].as_f64()).fold(0.0, f64::max);
        assert!(flow <= rate + 2.0 * MTU * 8.0 / dt, "flow at {flow} bit/s: {b}");
        if t0 >= 2.0 && t1 <= switched_at {
            before.push(bytes * 8.0 / dt);
        }
        if t0 >= switched_at + 1.5 {
            after.push(bytes * 8.0 / dt);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(before.len() >= 5 && after.len() >= 5, "{} and {} intervals", before.len(), after.len());
    assert!(mean(&before) >= 0.8 * 4e6, "before the switch: {} bit/s", mean(&before));
    assert!(mean(&after) >= 0.8 * 1e6 && mean(&after) <= 1e6 * 1.01, "after the switch: {} bit/s", mean(&after));
    // The switch: in one line's events, in the state of every later line,
    // and in events.csv.
    let events: Vec<&serde_json::Value> = lines.iter().flat_map(|l| l["events"].as_array().unwrap()).collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["state"], "slow");
    assert!((events[0]["time"].as_f64().unwrap() - switched_at).abs() < 1e-9);
    let last = lines.last().unwrap();
    assert_eq!(last["state"], "slow");
    assert_eq!(last["dropped_lines"], 0);
    let csv = std::fs::read_to_string(out.join("rep-0/events.csv")).unwrap();
    assert!(csv.lines().any(|l| l.contains("slow")), "events.csv has no `slow` row");
    check_departure_errors(&lines, &common::summary(&out));
}

/// Each line's `departure_error` covers the deliveries since the line
/// before: over the watch they add up to the packets the paths delivered
/// in the same time (the two are counted at the write and at the
/// schedule: a batch apart at most), each interval's p50 ≤ p99 ≤ max,
/// and no interval's maximum or late count exceeds the whole run's in
/// summary.json.
fn check_departure_errors(lines: &[serde_json::Value], summary: &serde_json::Value) {
    let delivered = |line: &serde_json::Value| -> u64 {
        line["paths"].as_array().unwrap().iter().map(|p| p["delivered_packets"].as_u64().unwrap()).sum()
    };
    let errors: Vec<&serde_json::Value> = lines.iter().map(|l| &l["departure_error"]).collect();
    assert_eq!(errors[0]["deliveries"], 0, "the first line starts the interval: {}", errors[0]);
    let counted: u64 = errors[1..].iter().map(|e| e["deliveries"].as_u64().unwrap()).sum();
    let moved = delivered(lines.last().unwrap()) - delivered(&lines[0]);
    assert!(moved > 1000, "{moved} packets delivered while watched");
    assert!(counted.abs_diff(moved) <= 20 + moved / 50, "{counted} deliveries timed, {moved} delivered");
    let run_max_us = summary["timing"]["error_max"].as_f64().unwrap() * 1e6;
    let mut late = 0;
    for e in &errors[1..] {
        let f = |k: &str| e[k].as_f64().unwrap();
        assert!(f("p50_us") <= f("p99_us") && f("p99_us") <= f("max_us"), "{e}");
        assert!(f("max_us") <= run_max_us + 1.0, "{e} against the run's maximum {run_max_us} µs");
        late += e["late"].as_u64().unwrap();
    }
    assert!(late <= summary["timing"]["late"].as_u64().unwrap(), "{late} late deliveries: {}", summary["timing"]);
}

/// A classful downlink (two classes of 30 packets, weighted round robin
/// at 2 Mbit/s) with a UDP flood at twice the link's rate in class
/// `flood` and nothing in class `calm`: once the queue has filled
/// (30 packets at 250 packets/s of excess: 0.12 s) the flood's class
/// stays full — at least 25 and at most 30 packets in every later line —
/// while `calm` holds none, and the stage's packets inside are the
/// classes' plus those on the link and in its delay.
#[test]
fn ctl_watch_shows_each_class_queue() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("classes.toml");
    std::fs::write(
        &scenario,
        r#"name = "watch-classes"
duration = "4 s"
seed = 1

[[hosts]]
name = "fixed"
address = "10.0.0.1"

[[hosts]]
name = "mobile"
address = "10.0.1.1"

[[links]]
between = ["fixed", "mobile"]

[[links.downlink]]
name = "down"
rate = "2 Mbit/s"
delay = "10 ms"
[links.downlink.queue]
scheduler = "wrr"
default_class = "calm"
classes = [{ name = "flood", packets = 30, weight = 1 }, { name = "calm", packets = 30, weight = 1 }]
rules = [{ class = "flood", protocol = "udp", src_port = 4000 }]

[[links.uplink]]
name = "up"
rate = "2 Mbit/s"
delay = "10 ms"

[[workload.udp]]
name = "flood"
from = "fixed"
to = "mobile"
src_port = 4000
size = "1000 B"
rate = "4 Mbit/s"
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut emu = Command::new(SQUALL)
        .arg("emu")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .arg("--no-pcap")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = emu.id().to_string();
    wait_listed(&id);
    let watch = Command::new(SQUALL).args(["ctl", "watch", &id, "--json"]).output().unwrap();
    assert!(watch.status.success());
    assert!(emu.wait().unwrap().success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&watch.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut full = 0;
    for line in &lines {
        let down = line["paths"].as_array().unwrap().iter().find(|p| p["direction"] == "downlink").unwrap();
        let stage = &down["stages"][0];
        let classes = stage["classes"].as_array().unwrap_or_else(|| panic!("no classes: {stage}"));
        let queued = |name: &str| -> u64 {
            classes.iter().find(|c| c["name"] == name).unwrap()["packets_queued"].as_u64().unwrap()
        };
        let (flood, calm) = (queued("flood"), queued("calm"));
        assert_eq!(calm, 0, "{stage}");
        assert!(flood <= 30, "{stage}");
        let inside = stage["packets_inside"].as_u64().unwrap();
        // Beyond the queue: the packet on the link and those in the 10 ms
        // delay line (4 ms a packet at 2 Mbit/s: at most 3), one more at
        // a boundary.
        assert!(inside >= flood && inside <= flood + 5, "{stage}");
        if line["time"].as_f64().unwrap() >= 0.5 {
            assert!(flood >= 25, "the flood's class at {}: {stage}", line["time"]);
            full += 1;
        }
    }
    assert!(full >= 10, "{full} lines after 0.5 s");
}

/// A running `squall serve` on an ephemeral port: (child, base URL, token).
fn serve(workspace: &Path) -> (std::process::Child, String, String) {
    let mut child = Command::new(SQUALL)
        .args(["serve", "--port", "0", "--workspace"])
        .arg(workspace)
        .stdout(Stdio::piped())
        .spawn()
        .expect("squall serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("squall serve prints its URL").unwrap();
        if let Some(url) = line.trim().strip_prefix("http://") {
            break url.to_string();
        }
    };
    let (host, token) = url.split_once("/?token=").unwrap();
    (child, format!("http://{host}"), token.to_string())
}

/// curl with the token: (status, body).
fn curl(base: &str, token: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-X", method, "-w", "\n%{http_code}", "-H"]).arg(format!("X-Squall-Token: {token}"));
    if let Some(b) = body {
        cmd.args(["-H", "Content-Type: application/json", "--data-binary", b]);
    }
    let o = cmd.arg(format!("{base}{path}")).output().expect("curl runs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap(), body.to_string())
}

/// The control tool's live view over HTTP: `squall serve` lists the
/// running emulation, streams its counters as Server-Sent Events (the
/// same lines as `squall ctl watch`, under the same physical bound), and
/// switches its state on a POST, which the stream and events.csv show.
#[test]
fn squall_serve_lists_watches_and_switches_a_running_emulation() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut emu = bulk_emulation(dir.path(), &out, &["--duration", "6 s", "--no-pcap", "--no-events"]);
    let id = emu.id();
    let workspace = tempfile::tempdir().unwrap();
    let (mut server, base, token) = serve(workspace.path());
    let mut listed = None;
    for _ in 0..200 {
        let (status, body) = curl(&base, &token, "GET", "/api/emulations", None);
        assert_eq!(status, 200, "{body}");
        let runs: serde_json::Value = serde_json::from_str(&body).unwrap();
        listed = runs.as_array().unwrap().iter().find(|r| r["id"] == id).cloned();
        if listed.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let listed = listed.unwrap_or_else(|| panic!("run {id} not in GET /api/emulations"));
    assert_eq!(listed["info"]["scenario"], "emu-tcp-10mbit", "{listed}");
    let (status, body) = curl(&base, &token, "GET", "/api/emulations/4000000/watch", None);
    assert_eq!(status, 404, "{body}");
    let mut sse = Command::new("curl")
        .args(["-sSN", "-H"])
        .arg(format!("X-Squall-Token: {token}"))
        .arg(format!("{base}/api/emulations/{id}/watch"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut ended = None;
    let mut switched_at = None;
    for line in BufReader::new(sse.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let Some(data) = line.strip_prefix("data: ") else { continue };
        let value: serde_json::Value = serde_json::from_str(data).unwrap();
        if let Some(end) = value.get("end") {
            ended = Some(end.clone());
            continue;
        }
        if switched_at.is_none() && value["time"].as_f64().unwrap() >= 2.5 {
            let path = format!("/api/emulations/{id}/state");
            let (status, body) = curl(&base, &token, "POST", &path, Some(r#"{"name":"nope"}"#));
            assert_eq!(status, 400, "{body}");
            assert!(body.contains("no state `nope`") && body.contains("slow"), "{body}");
            let (status, body) = curl(&base, &token, "POST", &path, Some(r#"{"name":"slow"}"#));
            assert_eq!(status, 200, "{body}");
            let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(answer["entered"], "slow");
            switched_at = Some(answer["time"].as_f64().unwrap());
        }
        lines.push(value);
    }
    assert!(sse.wait().unwrap().success());
    assert!(emu.wait().unwrap().success());
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(ended, Some(serde_json::json!("the run ended")));
    let switched_at = switched_at.expect("the stream reached 2.5 s");
    assert!(lines.len() >= 15, "{} lines", lines.len());
    for pair in lines.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let down = |l: &serde_json::Value| {
            l["paths"].as_array().unwrap().iter().find(|p| p["direction"] == "downlink").unwrap()["delivered_bytes"]
                .as_u64()
                .unwrap()
        };
        let (t0, t1) = (a["time"].as_f64().unwrap(), b["time"].as_f64().unwrap());
        let rate = if t0 >= switched_at { 1e6 } else { 4e6 };
        let bits = (down(b) - down(a)) as f64 * 8.0;
        assert!(bits <= rate * (t1 - t0) + 2.0 * MTU * 8.0, "{bits} bit in {} s at {rate} bit/s", t1 - t0);
    }
    let last = lines.last().unwrap();
    assert_eq!(last["state"], "slow");
    let events: Vec<&serde_json::Value> = lines.iter().flat_map(|l| l["events"].as_array().unwrap()).collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["state"], "slow");
}
