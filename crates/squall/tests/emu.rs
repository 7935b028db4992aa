//! `squall emu` end to end: real Linux TCP (reno, cubic) in network
//! namespaces through squall's user-space paths. These tests need root and
//! network namespaces; without them they are skipped with a message, except
//! under CI=true, where they fail.
//!
//! They run one at a time (one lock): the data plane spins, and two at
//! once on two cores would disturb each other's timing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

mod common;
use common::{SQUALL, namespaces_available, run_engine};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/emu").join(name)
}

/// The squall namespaces of process `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("squall-{pid}-")))
        .map(String::from)
        .collect()
}

struct Run {
    dir: tempfile::TempDir,
    summary: serde_json::Value,
    /// The bulk client's JSON line.
    client: serde_json::Value,
}

impl Run {
    fn rep(&self) -> PathBuf {
        self.dir.path().join("rep-0")
    }
}

/// Runs `emulate` until a run keeps its timing, up to three runs in all,
/// and returns the last. A run the emulator flags (a delivery left more
/// than its late threshold after its scheduled time: the machine did not
/// give it the CPU) says nothing about the model; the last run is
/// returned whatever its timing, and the assertions widen their bounds by
/// its measured departure error. `summary` is a run's summary.json.
fn until_on_time<T>(what: &str, mut emulate: impl FnMut() -> T, summary: impl Fn(&T) -> serde_json::Value) -> T {
    let mut run = emulate();
    for _ in 1..3 {
        if summary(&run)["timing"]["on_time"] != false {
            break;
        }
        eprintln!("{what}: the emulation was flagged (timing not kept): running it again");
        run = emulate();
    }
    run
}

/// Runs a bulk transfer of `bytes` with `cc` from fixed to mobile over
/// `scenario_file`, repeated while the emulator flags it
/// ([`until_on_time`]).
fn bulk(scenario_file: &str, cc: &str, bytes: &str, extra: &[&str]) -> Run {
    until_on_time(scenario_file, || bulk_once(scenario_file, cc, bytes, extra), |run| run.summary.clone())
}

fn bulk_once(scenario_file: &str, cc: &str, bytes: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let info = dir.path().join("info.csv");
    let client = format!(
        "{SQUALL} tool bulk --client 10.0.1.1 --bytes '{bytes}' --cc {cc} --info-csv {} --interval-ms 5",
        info.display()
    );
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario(scenario_file))
        .args(["--out", dir.path().to_str().unwrap()])
        .arg("--serve")
        .arg(format!("mobile@0s={SQUALL} tool bulk --server"))
        .arg("--run")
        .arg(format!("fixed@0.1s={client}"))
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "squall emu failed: {stderr}");
    eprintln!("{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let stdout = std::fs::read_to_string(dir.path().join("rep-0/workloads/0-fixed.stdout")).unwrap();
    let client: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout:?}"));
    Run { dir, summary, client }
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn tcp_fills_a_10_mbit_link_with_the_right_rtt() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    // 1500-byte packets carry 1448 bytes of data (20 IP + 20 TCP + 12
    // timestamp option).
    let expected = 10e6 * 1448.0 / 1500.0;
    // RTT floor: 2 × 25 ms plus serialisation at 10 Mbit/s. TCP_INFO's
    // min RTT comes from the smallest exchange, the 60-byte first segment
    // and its 52-byte ACK (0.09 ms); a full segment would add 1.2 ms.
    let rtt_floor_ms = 50.0 + (60.0 + 52.0) * 8.0 / 10e6 * 1e3;
    for cc in ["reno", "cubic"] {
        let (run, late) = common::timer_latency_during(|| bulk("tcp-10mbit.toml", cc, "6 MB", &[]));
        assert_steady_goodput(cc, &run, expected, 6e6, late);
        let min_rtt_ms = f(&run.client["final_info"]["min_rtt_us"]) / 1e3;
        assert!((min_rtt_ms - rtt_floor_ms).abs() < 1.0, "{cc}: min RTT {min_rtt_ms} ms vs {rtt_floor_ms} ms");
        assert_eq!(run.summary["engine"], "emu");
        // Timing is reported, not asserted tightly: a loaded 2-core CI
        // machine delays some deliveries (`squall bench emu` measures it).
        let timing = &run.summary["timing"];
        // The median departure is late by at most 1 ms plus one of the
        // machine's late wake-ups (sleep overshoot p99, measured meanwhile).
        assert!(f(&timing["error_p50"]) < 1e-3 + late.p99, "{cc}: departure error p50 {}", timing["error_p50"]);
        assert!(f(&timing["deliveries"]) > 4000.0);
        for host in ["fixed", "mobile"] {
            let pcap = std::fs::metadata(run.rep().join(format!("{host}.pcap"))).unwrap();
            assert!(pcap.len() > 1_000_000, "{host}.pcap is {} bytes", pcap.len());
        }
        assert!(std::fs::read_to_string(run.rep().join("events.csv")).unwrap().contains(",deliver,"));
        assert!(std::fs::read_to_string(run.dir.path().join("info.csv")).unwrap().lines().count() > 100);
    }
}

/// The steady goodput of a bulk transfer of `bytes` over a link whose
/// payload rate is `expected` bit/s: never above it (physics), and no
/// more than 3% below it (behaviour: the scenario's queue holds more than
/// the path's bandwidth-delay product, so the sender keeps the link
/// busy). Both bounds are widened by the measuring client's own timing
/// only: its window (the last 80% of `bytes`, see `steady_goodput` in
/// squall-emu's bulk.rs) starts and ends at a sample each of which may
/// be late by the machine's sleep overshoot p99 (`late`, measured while
/// the run ran), and by the emulator's own worst departure error
/// (summary.json `timing.error_max`): packets due before the window
/// opened but delivered late fall inside it. How close squall comes is
/// `squall bench timing`'s figure.
fn assert_steady_goodput(what: &str, run: &Run, expected: f64, bytes: f64, late: squall_emu::timing::SleepOvershoot) {
    let goodput = f(&run.client["steady_goodput_bps"]);
    let window = 0.8 * bytes * 8.0 / expected;
    let widen = (2.0 * late.p99 + f(&run.summary["timing"]["error_max"])) / window;
    assert!(
        goodput <= expected * (1.0 + widen) && goodput >= expected * (1.0 - 0.03 - widen),
        "{what}: steady goodput {goodput} vs {expected} (-3% - {widen:.5}, +{widen:.5})"
    );
}

#[test]
fn tcp_recovers_from_one_percent_loss() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    for cc in ["reno", "cubic"] {
        let run = bulk("tcp-10mbit-loss.toml", cc, "2 MB", &[]);
        let retrans = f(&run.client["final_info"]["total_retrans"]);
        let stage = &run.summary["runs"][0]["stages"][0];
        assert_eq!(stage["name"], "down");
        let dropped = f(&stage["dropped"]["error"]);
        let entered = f(&stage["entered"]);
        // 1% of the segments, within the binomial 99.9% interval
        // p ± 3.29·√(p(1−p)/n) (about ±0.009 at the ~1 400 segments of
        // 2 MB): a loss model off by 3× falls outside it.
        let half = 3.29 * (0.01f64 * 0.99 / entered).sqrt();
        assert!(
            entered >= 1000.0 && (dropped / entered - 0.01).abs() <= half,
            "{cc}: {dropped} of {entered} dropped, outside 0.01 ± {half}"
        );
        assert!(retrans >= dropped * 0.8, "{cc}: {retrans} retransmissions for {dropped} drops");
        // Loss keeps the window below the 10 Mbit/s link's capacity.
        let goodput = f(&run.client["goodput_bps"]);
        assert!(goodput < 9.7e6 && goodput > 0.5e6, "{cc}: goodput {goodput}");
    }
}

#[test]
fn blackout_holds_packets_and_state_change_slows_the_link() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let run = bulk("blackout.toml", "cubic", "2 MB", &[]);
    // 2 MB at 4 Mbit/s is 4 s; the 2 s blackout and the slower link after
    // 4 s make it longer.
    let elapsed = f(&run.client["elapsed"]);
    assert!(elapsed > 6.0 && elapsed < 20.0, "elapsed {elapsed}");
    let events = std::fs::read_to_string(run.rep().join("events.csv")).unwrap();
    for needle in ["blackout-0-start", "blackout-0-end", "handover", ",hold,"] {
        assert!(events.contains(needle), "events.csv has no {needle}");
    }
    // Nothing was delivered downlink during the blackout (1 s to 3 s, after
    // the packets already on the wire at 1 s arrived).
    let delivered_in_blackout = events
        .lines()
        .filter(|l| l.contains(",down,downlink,deliver,"))
        .filter_map(|l| l.split(',').next()?.parse::<f64>().ok())
        .filter(|t| (1.1..2.99).contains(t))
        .count();
    assert_eq!(delivered_in_blackout, 0);
    let stage = &run.summary["runs"][0]["stages"][0];
    assert!(stage["dropped"].get("blackout").is_none(), "hold mode drops nothing: {stage}");
}

#[test]
fn gsm_case_transfers_20_kb() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    for cc in ["reno", "cubic"] {
        let run = bulk("gsm-tcp.toml", cc, "20 KB", &[]);
        // 20 KB of data in 1500-byte packets at 9600 bit/s is at least
        // 17.2 s of transmission; losses and timeouts add to it, by how
        // much no hand computation bounds: the transfer must end before
        // the scenario's 120 s (ended_by "workloads", below).
        let elapsed = f(&run.client["elapsed"]);
        assert!(elapsed > 17.0, "{cc}: elapsed {elapsed}");
        let min_rtt_ms = f(&run.client["final_info"]["min_rtt_us"]) / 1e3;
        assert!(min_rtt_ms > 400.0, "{cc}: min RTT {min_rtt_ms} ms");
        assert_eq!(run.summary["emu"]["ended_by"], "workloads");
    }
}

#[test]
fn control_socket_lists_reports_and_changes_a_run() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("blackout.toml"))
        .args(["--out", dir.path().to_str().unwrap(), "--duration", "20 s", "--run", "mobile@0s=sleep 3"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = child.id().to_string();
    let ctl = |args: &[&str]| {
        let out = Command::new(SQUALL).arg("ctl").args(args).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let mut listed = false;
    for _ in 0..100 {
        if ctl(&["list"]).1.contains(&id) {
            listed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(listed, "run {id} not in `squall ctl list`");
    let (ok, status) = ctl(&["status", &id]);
    assert!(ok && status.contains("\"timing\""), "{status}");
    assert!(ctl(&["state", &id, "weak"]).0);
    assert!(!ctl(&["state", &id, "no-such-state"]).0);
    assert!(ctl(&["blackout", &id, "on", "--mode", "drop", "--direction", "uplink"]).0);
    assert!(ctl(&["blackout", &id, "off"]).0);
    assert!(child.wait().unwrap().success());
    let events = std::fs::read_to_string(dir.path().join("rep-0/events.csv")).unwrap();
    assert!(events.contains("weak") && events.contains("ctl-blackout-start") && events.contains("ctl-blackout-end"));
    assert!(namespaces_of(child.id()).is_empty());
}

/// The CPUs in a /proc/PID/status "Cpus_allowed_list:" line ("0-1,3").
fn allowed_cpus(status: &str) -> Vec<usize> {
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
    list.split(',')
        .flat_map(|r| {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
        })
        .collect()
}

/// Runs `squall emu` with `pin` (arguments) and a workload on fixed that
/// prints its allowed CPUs; returns the data plane thread's CPUs (read
/// while the run goes on), the workload's and the summary.
/// The data plane thread is seen as soon as it is spawned, with the
/// affinity it inherits (with `--pin`, the other CPUs: one, on two CPUs),
/// before it moves itself: the run is watched until the thread is on
/// `expect` alone (or, for one CPU, until it is seen), for at most 1 s,
/// and the last affinity seen is returned.
fn cpus_of_a_run(pin: &[&str], single_cpu: bool, expect: usize) -> (Option<Vec<usize>>, Vec<usize>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(pin)
        .args(["--no-pcap", "--no-events", "--out", dir.path().to_str().unwrap()])
        .args(["--run", "fixed@0s=sh -c 'grep Cpus_allowed_list /proc/self/status; sleep 1'"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut dataplane = None;
    for _ in 0..100 {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).into_iter().flatten().flatten();
        dataplane = tasks
            .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "squall-dataplan"))
            .find_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
            .map(|s| allowed_cpus(&s));
        if dataplane.as_deref() == Some(&[expect][..]) || single_cpu && dataplane.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let workload = std::fs::read_to_string(dir.path().join("rep-0/workloads/0-fixed.stdout")).unwrap();
    (dataplane, allowed_cpus(&workload), summary)
}

/// A run into the directory of an earlier one is refused unless --force,
/// which leaves none of the earlier run's files; each run says which it
/// wrote.
#[test]
fn a_run_into_an_earlier_runs_directory_needs_force_and_leaves_nothing_of_it() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let emu = |extra: &[&str]| {
        Command::new(SQUALL)
            .arg("emu")
            .arg(scenario("tcp-10mbit.toml"))
            .args(["--out", dir.path().to_str().unwrap(), "--duration", "0.3 s"])
            .args(extra)
            .output()
            .unwrap()
    };
    let listed = || {
        let mut files: Vec<String> = std::fs::read_dir(dir.path().join("rep-0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        files
    };
    let run = |extra: &[&str]| {
        let out = emu(extra);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
        (
            listed(),
            stderr,
            summary["emu"]["busy_poll"].as_f64(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            summary,
        )
    };
    // Three UDP datagrams from fixed to mobile make a flow to print.
    let send = "fixed@0s=bash -c 'for i in 1 2 3; do echo x > /dev/udp/10.0.1.1/9000; sleep 0.01; done'";
    let (files, stderr, busy_poll, stdout, summary) = run(&["--format", "json", "--run", send]);
    // --format json: stdout is the per-flow results alone, each number
    // summary.json's (one run: its mean), the unit in each name.
    let rows: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is JSON alone");
    let flows = summary["aggregate"]["flows"].as_object().unwrap();
    assert!(!flows.is_empty());
    assert_eq!(rows.as_array().unwrap().len(), flows.len(), "{stdout}");
    for row in rows.as_array().unwrap() {
        let m = &flows[row["flow"].as_str().unwrap()];
        assert_eq!(row["throughput_bit_per_s"], m["throughput_bps"]["mean"], "{row}");
        assert_eq!(row["delay_mean_s"], m["delay_mean"]["mean"], "{row}");
    }
    assert_eq!(files, ["events.csv", "fixed.pcap", "mobile.pcap", "timing.csv", "workloads"]);
    assert!(stderr.contains("rep-0/ (events.csv, HOST.pcap, timing.csv, workloads/)"), "{stderr}");
    // The summary records the loop's settings: busy polling 50 us by default.
    assert_eq!(busy_poll, Some(50e-6));
    // A refused invocation removes nothing: the earlier run is refused
    // without --force, and --force-interface is for inline mode only.
    std::fs::write(dir.path().join("rep-0/mine.pcap"), b"").unwrap();
    let refused = emu(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("already holds a run") && err.contains("--force"), "{err}");
    let refused = emu(&["--force", "--force-interface"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("--force-interface is for inline mode"), "{err}");
    assert_eq!(listed(), ["events.csv", "fixed.pcap", "mine.pcap", "mobile.pcap", "timing.csv", "workloads"]);
    let (files, stderr, busy_poll, _, _) =
        run(&["--force", "--no-pcap", "--no-events", "--no-timing", "--busy-poll", "0 s"]);
    assert_eq!(files, ["workloads"]);
    assert!(stderr.contains("rep-0/ (workloads/)"), "{stderr}");
    assert_eq!(busy_poll, Some(0.0));
}

/// `--pin`: the data plane thread alone on the last CPU squall may use,
/// the workloads on the others; `--dataplane-cpu N`: the data plane on
/// CPU N, the workloads where they were. summary.json says which CPU.
#[test]
fn pin_gives_the_data_plane_the_last_cpu_and_the_workloads_the_rest() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let mine = allowed_cpus(&std::fs::read_to_string("/proc/self/status").unwrap());
    let last = *mine.last().unwrap();
    let (dataplane, workload, summary) = cpus_of_a_run(&["--pin"], mine.len() < 2, last);
    if mine.len() < 2 {
        assert_eq!(summary["emu"]["pinned_cpu"], serde_json::Value::Null, "one CPU: nothing pinned");
        return;
    }
    assert_eq!(dataplane, Some(vec![last]), "the data plane thread");
    assert_eq!(workload, mine[..mine.len() - 1], "the workload");
    assert_eq!(summary["emu"]["pinned_cpu"], serde_json::json!(last));
    let first = mine[0].to_string();
    let (dataplane, workload, summary) = cpus_of_a_run(&["--dataplane-cpu", &first], false, mine[0]);
    assert_eq!(dataplane, Some(vec![mine[0]]), "--dataplane-cpu: the data plane thread");
    assert_eq!(workload, mine, "--dataplane-cpu: the workload");
    assert_eq!(summary["emu"]["pinned_cpu"], serde_json::json!(mine[0]));
}

#[test]
fn a_killed_run_leaves_nothing_after_the_next_one() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut first = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().join("a").to_str().unwrap(), "--run", "mobile@0s=sleep 60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id();
    let mut up = false;
    for _ in 0..200 {
        if namespaces_of(pid).len() == 2 && Path::new(&format!("/run/squall/squall-{pid}.sock")).exists() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(up, "the first run did not set up its namespaces");
    first.kill().unwrap(); // SIGKILL: no cleanup
    first.wait().unwrap();
    assert_eq!(namespaces_of(pid).len(), 2, "namespaces of a SIGKILLed run stay until the next run");

    let second = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().join("b").to_str().unwrap(), "--duration", "0.3 s"])
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    assert!(String::from_utf8_lossy(&second.stderr).contains(&format!("removed stale netns squall-{pid}-")));
    assert!(namespaces_of(pid).is_empty(), "stale namespaces left: {:?}", namespaces_of(pid));
    // Other squall runs may be live on a shared machine: none of a dead
    // owner may be left.
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let stale: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| {
            let owner = n.strip_prefix("squall-").and_then(|r| r.split('-').next());
            owner.is_some_and(|pid| !Path::new("/proc").join(pid).exists())
        })
        .map(String::from)
        .collect();
    assert!(stale.is_empty(), "squall namespaces of dead runs left: {stale:?}");
    assert!(!Path::new(&format!("/run/squall/squall-{pid}.sock")).exists());
    // The workload of the killed run died with it (PR_SET_PDEATHSIG) or
    // with its namespace.
    let sleepers = Command::new("pgrep").args(["-f", "^sleep 60$"]).output().unwrap();
    assert!(sleepers.stdout.is_empty(), "the killed run's workload is still running");
}

#[test]
fn shell_mode_runs_a_command_on_the_mobile_host_with_the_peer_address() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().to_str().unwrap(), "--", "sh", "-c"])
        .arg("echo peer=$SQUALL_PEER; ip -o -4 addr show dev squall0; exit 3")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The command's exit code is squall's.
    assert_eq!(out.status.code(), Some(3), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("peer=10.0.0.1"), "{stdout}");
    assert!(stdout.contains("inet 10.0.1.1/32"), "runs in the mobile host's namespace: {stdout}");
    // Its output went to the terminal, not to files: summary.json names
    // none, and none were written.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let shell = &summary["emu"]["workloads"][0];
    assert!(shell["stdout"].is_null() && shell["stderr"].is_null(), "{shell}");
    let written: Vec<_> = std::fs::read_dir(dir.path().join("rep-0/workloads"))
        .map(|d| d.flatten().map(|e| e.file_name()).filter(|n| n != "bin").collect())
        .unwrap_or_default();
    assert!(written.is_empty(), "{written:?}");
}

#[test]
fn a_failed_workload_is_named_with_the_end_of_its_stderr() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Seven lines on stderr (one blank), as wget -nv ends a download that
    // met an HTTP error, then wget's status for it (8).
    let script = "for i in 1 2 3 4 5; do echo line $i >&2; done; echo >&2; \
                  echo 'ERROR 404: Not Found.' >&2; exit 8";
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().to_str().unwrap(), "--no-pcap", "--no-events", "--run"])
        .arg(format!("mobile@0s={script}"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let stderr_file = dir.path().join("rep-0/workloads/0-mobile.stderr");
    let expected = format!(
        "exited with status 8\nsquall emu: the end of its stderr ({}):\n  line 2\n  line 3\n  line 4\n  line 5\n  \
         ERROR 404: Not Found.\n",
        stderr_file.display()
    );
    assert!(stderr.contains(&expected), "expected the last five non-blank lines:\n{expected}\nin:\n{stderr}");
}

/// Seed 000's case study as an experiment with the emulate engine (real
/// Linux Reno, shortened): the report has the simulator's structure —
/// results.csv columns, the Table 2 summary, the time-sequence and queue
/// plots — plus TCP_INFO plots.
#[test]
fn emulation_experiment_gives_a_report_like_the_simulator() {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let experiment = dir.path().join("emu.toml");
    std::fs::write(
        &experiment,
        format!(
            "name = \"gsm-emu\"\n[[sets]]\nname = \"reno-gsm\"\nscenario = \"{}\"\nengine = \"emu\"\nreplications = 2\n",
            scenario("gsm-reno.toml").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::new(SQUALL)
        .args(["run", experiment.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header = results.lines().next().unwrap();
    assert!(
        header.starts_with("set,point,replication,seed,flow,label,sender,receiver,elapsed,throughput_bps"),
        "{header}"
    );
    // The 20 KB transfer arrived in both replications, and the summary
    // groups them under one label despite the changing client port.
    let data: Vec<&str> = results.lines().filter(|l| l.contains("tcp fixed:* > mobile:5201")).collect();
    assert_eq!(data.len(), 2, "{results}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("elapsed median (s)") && html.contains("tcp fixed:* &gt; mobile:5201"));
    let plots: Vec<String> =
        std::fs::read_dir(out.join("plots")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    for kind in ["_seq.svg", "_queue.svg", "_cwnd.svg", "_srtt.svg"] {
        assert!(plots.iter().any(|p| p.ends_with(kind)), "no {kind} plot in {plots:?}");
    }
    assert!(namespaces_of(std::process::id()).is_empty());
}

/// Mahimahi-style shell mode with iperf3: the server on the fixed host,
/// the client on the mobile host through the 10 Mbit/s path.
#[test]
fn shell_mode_carries_iperf3() {
    if !namespaces_available() {
        return;
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "iperf3 is required in CI");
        eprintln!("iperf3 not installed: skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().to_str().unwrap(), "--serve", "fixed@0s=iperf3 -s -1", "--"])
        .args(["sh", "-c", "sleep 0.5; iperf3 -c $SQUALL_PEER -t 3 -J"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("iperf3 -J output");
    let bps = report["end"]["sum_received"]["bits_per_second"].as_f64().unwrap();
    // Limited by the 10 Mbit/s stage (TCP payload 1448/1500 of it at most),
    // and well above what an unshaped veth would not limit.
    assert!(bps < 10e6 * 1448.0 / 1500.0 * 1.01, "{bps} bit/s through a 10 Mbit/s path");
    assert!(bps > 6e6, "{bps} bit/s");
}

/// VALIDATION case 13 with real Linux TCP (seed 002 Table II): eight bulk
/// transfers at once, BPSK to 256-QAM, each over its own error-free radio
/// downlink (scenarios/emu/radio-capacity.toml). The application goodput
/// at each receiver, measured from its pcap as tcptrace would, must be
/// the case's formula within 0.5% — the same formula and measurement as
/// `squall validate --case 13` in simulation.
#[test]
fn radio_capacity_matches_table_ii_with_linux_tcp() {
    use squall_validate::radio_cases::{
        Arrival, CAPACITY_TOLERANCE, MODULATIONS, steady_goodput, table_ii_goodput_bps,
    };

    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let file = scenario("radio-capacity.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let parsed = squall_scenario::parse(&file.display().to_string(), &text, &scenario("")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (out, late) = common::timer_latency_during(|| {
        Command::new(SQUALL).arg("emu").arg(&file).args(["--out", dir.path().to_str().unwrap(), "--no-events"]).output()
    });
    let out = out.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "squall emu failed: {stderr}");
    eprintln!("{stderr}emulated in {:.1} s", started.elapsed().as_secs_f64());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    // Every transfer finished (the run ended with its workloads, not at
    // the 90 s limit) and the radio queues dropped nothing.
    assert_eq!(summary["emu"]["ended_by"], "workloads", "{}", summary["emu"]);
    for stage in summary["runs"][0]["stages"].as_array().unwrap() {
        let name = stage["name"].as_str().unwrap();
        assert!(stage["dropped"].as_object().is_none_or(|d| d.is_empty()), "{name} dropped: {}", stage["dropped"]);
    }
    let rep = dir.path().join("rep-0");
    let mut failures = Vec::new();
    for (name, label, bits) in MODULATIONS {
        // The sender's last TCP_INFO: timestamps off (MSS 1460), the
        // route's cwnd lock held (at most 40 segments), nothing resent.
        let sender = std::fs::read_dir(rep.join("workloads"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().ends_with(&format!("-sender-{name}.stdout")))
            .unwrap_or_else(|| panic!("no output of sender-{name}"));
        let sent: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&sender).unwrap().trim())
            .unwrap_or_else(|e| panic!("{}: {e}", sender.display()));
        let info = &sent["final_info"];
        assert_eq!(info["snd_mss"], 1460, "{label}: {info}");
        assert!(f(&info["cwnd"]) <= 40.0, "{label}: the cwnd lock did not hold: {info}");
        assert_eq!(info["total_retrans"], 0, "{label}: {info}");
        let host = format!("receiver-{name}");
        let address = parsed.hosts.iter().find(|h| h.name == host).unwrap_or_else(|| panic!("no host {host}")).address;
        let captured = squall_analysis::capture::read_capture(&rep.join(format!("{host}.pcap"))).unwrap();
        // The bulk transfer is the connection to this host that carried
        // the most data (a 1-byte transfer before it set up the cwnd lock).
        let data: Vec<_> =
            captured.iter().filter(|c| c.flow.dst == address && c.tcp.is_some_and(|t| t.payload_len > 0)).collect();
        let mut per_port = std::collections::BTreeMap::<u16, u64>::new();
        for c in &data {
            *per_port.entry(c.flow.src_port).or_default() += u64::from(c.tcp.unwrap().payload_len);
        }
        let port = per_port.iter().max_by_key(|&(_, bytes)| *bytes).map(|(&p, _)| p).expect("data received");
        let arrivals: Vec<Arrival> = data
            .iter()
            .filter(|c| c.flow.src_port == port)
            .map(|c| {
                let t = c.tcp.unwrap();
                Arrival { time: c.time.as_secs_f64(), seq: t.seq, len: t.payload_len }
            })
            .collect();
        // Timestamps off: full segments of 1460 bytes in 1500-byte packets.
        let largest = data.iter().filter(|c| c.flow.src_port == port).map(|c| c.size).max().unwrap();
        assert_eq!(largest, 1500, "{label}: largest data packet");
        assert!(arrivals.iter().all(|a| a.len <= 1460), "{label}: a segment carries more than 1460 bytes");
        // From 5 s after the first data (slow start over; the emulated
        // links saturate within 1 s) to 1 s before the last.
        let measured = steady_goodput(&arrivals, 5.0, 1.0).expect("a steady window of arrivals");
        let expected = table_ii_goodput_bps(bits);
        let deviation = (measured.bps - expected) / expected;
        eprintln!(
            "{label:>8}: expected {:10.1} bit/s, measured {:10.1} bit/s ({:+.4}%) over {:.2}-{:.2} s, {} bytes",
            expected,
            measured.bps,
            deviation * 100.0,
            measured.from,
            measured.to,
            measured.bytes
        );
        // The window's two ends are capture times, each late by at most
        // one wake-up of squall's data plane: the tolerance widens by two
        // sleep overshoots (p99, measured while it ran) over the window.
        let tolerance = CAPACITY_TOLERANCE + 2.0 * late.p99 / (measured.to - measured.from);
        if deviation.abs() > tolerance {
            failures.push(format!("{label}: {:.1} bit/s vs {expected:.1} ({:+.3}%)", measured.bps, deviation * 100.0));
        }
    }
    assert!(failures.is_empty(), "goodput off by more than 0.5% and the timer's widening: {failures:?}");
}

/// A hostile host (issue 15): a program in the mobile host's namespace
/// writes malformed packets straight to its interface with a packet
/// socket. squall refuses each with its reason, counts it in summary.json
/// and carries on; nothing panics.
#[test]
fn malformed_packets_from_a_host_are_refused_with_reasons() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    // Three malformed IPv4 packets (shorter than a header, header length
    // 16, total length past the bytes), one IPv6 packet, one well-formed
    // IPv4 packet to an address outside the scenario.
    let script = r#"
import socket, struct
def ip(dst, ihl=5, total=None, payload=bytes(8)):
    total = 4 * ihl + len(payload) if total is None else total
    h = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, 0, total, 1, 0, 64, 17, 0, socket.inet_aton('10.0.1.1'), socket.inet_aton(dst))
    return h + bytes(4 * ihl - 20) + payload if ihl >= 5 else h + payload
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM)
for p in [bytes([0x45]) * 10, ip('10.0.0.1', ihl=4), ip('10.0.0.1', total=1500),
          bytes([0x60]) + bytes(47), ip('192.0.2.1')]:
    s.sendto(p, ('squall0', 0x0800))
print('sent', flush=True)
# The run ends when this program does: give the data plane time to read.
import time; time.sleep(1)
"#;
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().to_str().unwrap(), "--", "/usr/bin/python3", "-c", script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sent"));
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let refused = &summary["runs"][0]["hosts"]["mobile"]["refused"];
    assert_eq!(refused["malformed"], 3, "{summary}");
    // The kernel may send IPv6 packets of its own (neighbour discovery).
    assert!(refused["not_ipv4"].as_u64().unwrap_or(0) >= 1, "{summary}");
    assert!(refused["no_route"].as_u64().unwrap_or(0) >= 1, "{summary}");
    assert!(stderr.contains("malformed"), "the first refusal of a kind is logged: {stderr}");
}

/// The four-link example of issue 14 with real packets: A sends a UDP
/// datagram to D and D one to A. The emulator carries them over the
/// routes the simulator takes (tests/routes.rs): A -> B -> D and
/// D -> C -> A, whichever engine runs.
#[test]
fn the_four_link_example_routes_real_packets_as_the_simulator_does() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let mut text = String::from("name = \"four-links\"\nduration = \"5 s\"\n");
    for (h, name) in ["A", "B", "C", "D"].iter().enumerate() {
        text.push_str(&format!("[[hosts]]\nname = \"{name}\"\naddress = \"10.0.0.{}\"\n", h + 1));
    }
    for (a, b) in [("A", "C"), ("B", "D"), ("A", "B"), ("C", "D")] {
        text.push_str(&format!(
            "[[links]]\nbetween = [\"{a}\", \"{b}\"]\ndownlink = [{{ name = \"{a}{b}\", rate = \"10 Mbit/s\" }}]\n\
             uplink = [{{ name = \"{b}{a}\", rate = \"10 Mbit/s\" }}]\n"
        ));
    }
    let send = |host: &str, to: &str| {
        format!(
            "[[workload.commands]]\nhost = \"{host}\"\nat = \"0.5 s\"\nrun = \"/usr/bin/python3 -c \\\"import socket; \
             socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x' * 100, ('{to}', 9))\\\"\"\n"
        )
    };
    text.push_str(&send("A", "10.0.0.4"));
    text.push_str(&send("D", "10.0.0.1"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("four-links.toml");
    std::fs::write(&file, &text).unwrap();
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(&file)
        .args(["--out", dir.path().join("out").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = std::fs::read_to_string(dir.path().join("out/rep-0/events.csv")).unwrap();
    let mut stages: Vec<&str> = events
        .lines()
        .filter(|l| l.split(',').nth(3) == Some("enqueue"))
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    stages.sort();
    stages.dedup();
    assert_eq!(stages, vec!["AB", "BD", "CA", "DC"], "{events}");
}

/// One scenario file, two engines (issue 14): the [[workload.tcp]] bulk
/// transfer of scenarios/emu/tcp-workload.toml runs as squall's TCP model
/// in `squall sim` and as real Linux TCP in `squall emu` (configured as
/// the scenario's `rfc` profile: initcwnd 2, rto_min 1 s). Both deliver
/// the 500 KB, no faster than the 10 Mbit/s link allows (0.4 s), and the
/// emulated transfer time is within the parity grid's 10 % of the
/// simulated one (measured 0.684 s against 0.712 s), widened only by the
/// timer latency measured while the emulation ran. Its
/// [[workload.udp]] flow sends, in both engines, the same datagrams: tshark
/// reads the same sequence of IP lengths from both engines' pcaps of the
/// sending host, over the same span of time.
#[test]
fn tcp_and_udp_workloads_run_in_both_engines() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str| run_engine(dir.path(), engine, scenario("tcp-workload.toml"), &[]);
    let sim = run("sim");
    let flow = &sim["runs"][0]["tcp_flows"][0];
    assert_eq!(flow["completed"], true);
    assert_eq!(flow["delivered_bytes"], 500_000);
    let sim_t = f(&flow["transfer_time"]);
    assert!(sim_t > 0.4, "sim transfer time {sim_t}");
    let (emu, late) = common::timer_latency_during(|| run("emu"));
    let flows = emu["runs"][0]["flows"].as_array().unwrap();
    let data = flows.iter().find(|f| f["sender"] == "fixed" && f["receiver"] == "mobile").expect("the download");
    // IP bytes received: the 500 KB plus at least 40 bytes of headers per segment.
    let segments = data["data_segments"].as_u64().unwrap();
    assert!(data["received_bytes"].as_u64().unwrap() >= 500_000 + 40 * segments, "{data}");
    let t = f(&data["elapsed"]);
    eprintln!("500 KB: sim {} s, emu {t} s", f(&flow["transfer_time"]));
    assert!(t > 0.4, "emu transfer time {t}");
    // `elapsed` runs from the first packet sent (the SYN) to the last
    // one received (the FIN); `transfer_time` from the workload's start
    // to the last byte delivered. Both include the handshake; they differ
    // by the process start-up and the closing segments (a few ms each),
    // inside the 10 % band.
    let allowed = 0.10 * sim_t + 2.0 * late.max;
    assert!((t - sim_t).abs() <= allowed, "emu transfer time {t} s, sim {sim_t} s: differ by more than {allowed} s");
    let client = std::fs::read_to_string(dir.path().join("emu/rep-0/workloads/1-fixed.stdout")).unwrap();
    assert!(client.contains("\"bytes\":500000"), "{client}");

    // The UDP flow: 10000 is its default source port (the first entry).
    let sim_sent =
        sim["runs"][0]["flows"].as_array().unwrap().iter().find(|f| f["name"] == "upload").unwrap()["sent_packets"]
            .as_u64()
            .unwrap();
    let datagrams = |engine: &str| -> Vec<(u32, f64)> {
        let pcap = dir.path().join(engine).join("rep-0/mobile.pcap");
        tshark_fields(&pcap, "udp.srcport == 10000", &["ip.len", "frame.time_epoch"])
            .iter()
            .map(|p| (p[0].parse().unwrap(), p[1].parse().unwrap()))
            .collect()
    };
    let (sim_udp, emu_udp) = (datagrams("sim"), datagrams("emu"));
    assert!(sim_udp.len() > 100 && sim_udp.len() as u64 == sim_sent, "{} datagrams, {sim_sent} sent", sim_udp.len());
    let lengths = |d: &[(u32, f64)]| d.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(lengths(&sim_udp), lengths(&emu_udp), "the engines sent different datagrams");
    // Poisson gaps over 1.9 s: the real sender keeps the schedule. The
    // first and the last datagram's capture times may each be late by
    // two wake-ups (the sender's sleep, squall's read), each at most the
    // largest sleep overshoot measured while the run ran.
    let span = |d: &[(u32, f64)]| d.last().unwrap().1 - d[0].1;
    let allowed = 2.0 * 2.0 * late.max;
    assert!(
        (span(&sim_udp) - span(&emu_udp)).abs() <= allowed,
        "spans {} s and {} s, allowed to differ by {allowed} s",
        span(&sim_udp),
        span(&emu_udp)
    );
    let sender = std::fs::read_to_string(dir.path().join("emu/rep-0/workloads/3-mobile.stdout")).unwrap();
    assert!(sender.contains(&format!("\"sent\":{sim_sent},")) && sender.contains("\"refused\":0"), "{sender}");
    // The uplink loses nothing: every datagram reaches the receiver in
    // both engines, the last one too, though the sender exits 20 ms
    // before it arrives (the emulation delivers what its workloads sent
    // before it ends, as the simulator does).
    let received = |engine: &str| {
        let pcap = dir.path().join(engine).join("rep-0/fixed.pcap");
        tshark_fields(&pcap, "udp.srcport == 10000", &["ip.len"]).len() as u64
    };
    assert_eq!((received("sim"), received("emu")), (sim_sent, sim_sent), "datagrams received (sim, emu)");
}

/// `request_response` and `bulk_for` run in both engines from one file:
/// squall's TCP in the simulator, `squall tool bulk --request/--for` over
/// real Linux TCP in emulation. Expectations from the link (10 Mbit/s,
/// 20 ms each way): three exchanges take at least two think times and
/// three round trips with a 50 KB response each (0.44 s); a 2 s stream
/// lasts at least 2 s and never beats the link's rate.
#[test]
fn request_response_and_bulk_for_run_in_both_engines() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str| run_engine(dir.path(), engine, scenario("tcp-apps.toml"), &[]);
    let floor = 2.0 * 0.1 + 3.0 * (0.04 + 50_000.0 * 8.0 / 10e6);
    let sim = run("sim");
    let flows = sim["runs"][0]["tcp_flows"].as_array().unwrap();
    let (queries, stream) = (&flows[0], &flows[1]);
    assert_eq!((queries["completed"].as_bool(), stream["completed"].as_bool()), (Some(true), Some(true)), "{sim}");
    assert_eq!(queries["delivered_bytes"], 150_000);
    assert!((floor..2.0).contains(&f(&queries["transfer_time"])), "sim exchanges {}", queries["transfer_time"]);
    assert!(f(&stream["transfer_time"]) >= 2.0, "sim stream {}", stream["transfer_time"]);
    run("emu");
    let client = |file: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.path().join("emu/rep-0/workloads").join(file)).unwrap();
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{file}: {e}: {text:?}"))
    };
    let (q, st) = (client("1-fixed.stdout"), client("3-mobile.stdout"));
    assert_eq!(u(&q["bytes"]), 3 * (300 + 50_000), "{q}");
    assert!((floor..2.0).contains(&f(&q["elapsed"])), "emu exchanges {}", q["elapsed"]);
    let (bytes, elapsed) = (f(&st["bytes"]), f(&st["elapsed"]));
    assert!(elapsed >= 2.0 && bytes * 8.0 / elapsed <= 10e6 && bytes * 8.0 / elapsed > 5e6, "{st}");
}

/// A run of `squall tool udp` from fixed to mobile over tcp-10mbit.toml:
/// `rate` bit/s of `size`-byte packets for `seconds`, with `extra`
/// arguments to `squall emu`. Returns the output directory and summary.
fn udp_run(rate: &str, size: u32, seconds: f64, extra: &[&str]) -> (tempfile::TempDir, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().to_str().unwrap()])
        .arg("--run")
        .arg(format!("mobile@0s={SQUALL} tool udp --sink --seconds {seconds}"))
        .arg("--run")
        .arg(format!(
            "fixed@0.2s={SQUALL} tool udp --send 10.0.1.1 --size {size} --seconds {seconds} --rate-bps {rate}"
        ))
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "squall emu failed: {stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    (dir, summary, stderr)
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Packets the downlink's sender and receiver saw, and the stage's counts:
/// every packet fixed sent entered the stage and was delivered to mobile
/// or dropped with a reason (the run ends after the sink's last packet,
/// so nothing is left inside).
fn assert_downlink_conserved(summary: &serde_json::Value) -> (u64, u64) {
    let run = &summary["runs"][0];
    let (fixed, mobile) = (&run["hosts"]["fixed"], &run["hosts"]["mobile"]);
    let down = run["stages"].as_array().unwrap().iter().find(|s| s["name"] == "down").unwrap();
    let dropped: u64 = down["dropped"].as_object().map_or(0, |d| d.values().map(u).sum());
    assert_eq!(u(&fixed["sent_packets"]), u(&down["entered"]), "{run}");
    assert_eq!(u(&down["entered"]), u(&down["delivered"]) + dropped, "{run}");
    assert_eq!(u(&mobile["received_packets"]), u(&down["delivered"]), "{run}");
    assert_eq!(u(&mobile["write_errors"]), 0);
    (u(&fixed["sent_packets"]), u(&mobile["received_packets"]))
}

/// Packets in a pcap, counted by tshark if it is installed (required
/// under CI=true).
fn tshark_count(pcap: &Path) -> Option<u64> {
    let Ok(out) =
        Command::new("tshark").args(["-r", pcap.to_str().unwrap(), "-T", "fields", "-e", "frame.len"]).output()
    else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "tshark is required in CI");
        eprintln!("tshark not installed: pcaps are checked with squall's reader only");
        return None;
    };
    assert!(out.status.success(), "tshark -r {}: {}", pcap.display(), String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).lines().count() as u64)
}

/// The (captured, original) length of every record of a pcap.
fn pcap_lengths(pcap: &Path) -> Vec<(u32, u32)> {
    let mut reader = pcap_file::pcap::PcapReader::new(std::fs::File::open(pcap).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.unwrap();
        out.push((p.data.len() as u32, p.orig_len));
    }
    out
}

/// Recording is streamed while the run goes on (issue 10): the pcaps,
/// events.csv and timing.csv it leaves are complete — the same counts as
/// the run's counters — and readable by tshark and by squall's readers;
/// events.csv is in time order.
#[test]
fn streamed_recording_is_complete_and_readable() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    // 12 Mbit/s into 10 Mbit/s: deliveries and queue drops both.
    let (dir, summary, stderr) = udp_run("12e6", 1000, 2.0, &[]);
    let emu = &summary["emu"];
    assert_eq!(emu["capture_dropped"], serde_json::json!({"packets": 0, "events": 0, "deliveries": 0}), "{stderr}");
    let (sent, received) = assert_downlink_conserved(&summary);
    assert!(sent > 2000 && received > 1500, "{sent} sent, {received} received");
    let rep = dir.path().join("rep-0");
    let hosts = &summary["runs"][0]["hosts"];
    let mut records = 0;
    for host in ["fixed", "mobile"] {
        let pcap = rep.join(format!("{host}.pcap"));
        let expected = u(&hosts[host]["sent_packets"]) + u(&hosts[host]["received_packets"]);
        let lengths = pcap_lengths(&pcap);
        assert_eq!(lengths.len() as u64, expected, "{host}.pcap");
        assert!(lengths.iter().all(|&(cap, orig)| cap == orig), "whole packets by default");
        let captured = squall_analysis::capture::read_capture(&pcap).unwrap();
        assert_eq!(captured.len() as u64, expected, "{host}.pcap through squall-analysis");
        if let Some(n) = tshark_count(&pcap) {
            assert_eq!(n, expected, "{host}.pcap through tshark");
        }
        records += expected;
    }
    assert_eq!(u(&emu["recorded"]["packets"]), records);

    let events = std::fs::File::open(rep.join("events.csv")).unwrap();
    let events: Vec<_> = squall_trace::EventLogReader::new(events).unwrap().map(Result::unwrap).collect();
    assert_eq!(events.len() as u64, u(&emu["recorded"]["events"]));
    assert!(events.windows(2).all(|w| w[0].time <= w[1].time), "events.csv is not in time order");
    let delivered =
        events.iter().filter(|e| &*e.stage == "down" && matches!(e.kind, squall_link::EventKind::Deliver)).count();
    assert_eq!(delivered as u64, received, "deliver events at the downlink");
    let drops = events.iter().filter(|e| matches!(e.kind, squall_link::EventKind::Drop(_))).count() as u64;
    assert_eq!(drops, sent - received, "drop events");

    let timing = std::fs::read_to_string(rep.join("timing.csv")).unwrap();
    assert_eq!(timing.lines().count() as u64 - 1, u(&summary["timing"]["deliveries"]));
    assert_eq!(u(&emu["recorded"]["deliveries"]), u(&summary["timing"]["deliveries"]));
}

/// An unpaced sender of 64-byte packets outruns squall on any machine of
/// a few cores: what its TUN device drops before squall reads is counted
/// per host (`kernel_dropped_frames`: one frame per datagram here, no
/// offload joins them), so what the sender says it sent is what squall
/// read plus that, packet for packet.
#[test]
fn packets_a_tun_device_drops_before_squall_are_counted() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let (dir, summary, stderr) = udp_run("1e12", 64, 1.0, &["--no-pcap", "--no-events"]);
    let out = std::fs::read_to_string(dir.path().join("rep-0/workloads/1-fixed.stdout")).unwrap();
    let sent: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let fixed = &summary["runs"][0]["hosts"]["fixed"];
    assert_eq!(u(&sent["sent"]), u(&fixed["sent_packets"]) + u(&fixed["kernel_dropped_frames"]), "{fixed}\n{stderr}");
    assert_downlink_conserved(&summary);
}

/// A recording queue of one record cannot keep up with 20 Mbit/s: records
/// are dropped and counted, a warning is printed, and forwarding is not
/// affected — every packet is still delivered or dropped by the model.
#[test]
fn a_full_recording_queue_drops_records_not_packets() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let (dir, summary, stderr) = udp_run("20e6", 1000, 2.0, &["--record-queue", "1"]);
    let emu = &summary["emu"];
    let dropped = &emu["capture_dropped"];
    let total = u(&dropped["packets"]) + u(&dropped["events"]) + u(&dropped["deliveries"]);
    assert!(total > 0, "a one-record queue dropped nothing: {emu}");
    assert!(stderr.contains("the recording could not keep up"), "{stderr}");
    let (sent, received) = assert_downlink_conserved(&summary);
    assert!(sent > 2000 && received > 1000, "{sent} sent, {received} received");
    // What was written is what the summary says, and packet records
    // written + dropped are every packet each host sent and received.
    let hosts = &summary["runs"][0]["hosts"];
    let mut written = 0;
    let mut seen = 0;
    for host in ["fixed", "mobile"] {
        written += pcap_lengths(&dir.path().join(format!("rep-0/{host}.pcap"))).len() as u64;
        seen += u(&hosts[host]["sent_packets"]) + u(&hosts[host]["received_packets"]);
    }
    assert_eq!(written, u(&emu["recorded"]["packets"]));
    assert_eq!(written + u(&dropped["packets"]), seen);
}

/// `--snaplen 64`: every pcap record holds at most 64 bytes, and its
/// original length is the packet's (1000 bytes for the UDP packets).
#[test]
fn snaplen_cuts_pcap_records_but_keeps_the_original_length() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let (dir, summary, _) = udp_run("2e6", 1000, 1.0, &["--snaplen", "64"]);
    assert_eq!(summary["emu"]["snaplen"], 64);
    for host in ["fixed", "mobile"] {
        let pcap = dir.path().join(format!("rep-0/{host}.pcap"));
        let lengths = pcap_lengths(&pcap);
        assert!(lengths.len() > 100, "{host}: {} records", lengths.len());
        assert!(lengths.iter().all(|&(cap, _)| cap <= 64), "{host}: a record longer than 64 bytes");
        assert!(lengths.iter().all(|&(cap, orig)| cap == orig.min(64)));
        assert!(lengths.iter().any(|&(cap, orig)| (cap, orig) == (64, 1000)), "{host}: no 1000-byte packet");
        if let Some(n) = tshark_count(&pcap) {
            assert_eq!(n, lengths.len() as u64);
        }
    }
    // The analysis reads the shortened pcaps: the UDP flow is there.
    assert!(summary["runs"][0]["flows"].as_array().is_some_and(|f| !f.is_empty()), "{}", summary["runs"][0]);
}

/// The `fields` of each packet of `pcap` that matches the display
/// `filter`, as tshark prints them (one row a packet).
fn tshark_fields(pcap: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-r", pcap.to_str().unwrap(), "-Y", filter, "-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("tshark is needed (apt-get install tshark)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// Shipped scenario `name` with the first `find` replaced by `with`,
/// written into `dir`.
fn edited_scenario(dir: &Path, name: &str, find: &str, with: &str) -> PathBuf {
    let text = std::fs::read_to_string(scenario(name)).unwrap();
    assert!(text.contains(find), "{name} has no `{find}`");
    let path = dir.join(format!("edited-{name}"));
    std::fs::write(&path, text.replacen(find, with, 1)).unwrap();
    path
}

/// The scenario with a `sysctl` table on the mobile host.
fn scenario_with_sysctl(dir: &Path, table: &str) -> PathBuf {
    let address = "address = \"10.0.1.1\"\n";
    edited_scenario(dir, "tcp-10mbit.toml", address, &format!("{address}sysctl = {table}\n"))
}

/// Host processing delays (`hosts[i].processing`, seed 004's host and
/// router processing) in emulation, as the simulator models them: 3 ms on
/// what `fixed` sends, 5 ms on what `mobile` receives, on tcp-10mbit.toml
/// (25 ms each way, 10 Mbit/s). Worked by hand for a 98-byte ICMP echo
/// (84 bytes of IP, 0.0672 ms at 10 Mbit/s): ping at `fixed` sees
/// 3 + 25 + 0.0672 + 5 ms out and 25 + 0.0672 ms back, 58.134 ms. The
/// pcaps are taken where the simulator takes them: `fixed` captures the
/// request after its 3 ms, so its capture shows 55.134 ms from request to
/// reply; `mobile` captures the request as it arrives, before its 5 ms,
/// so the reply leaves at least 5 ms after the request in its capture.
/// Every bound is widened only by the timer overshoot measured while the
/// run ran (two wake-ups per crossing).
#[test]
fn host_processing_delays_hold_packets_where_the_simulator_does() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(scenario("tcp-10mbit.toml")).unwrap();
    let text = text
        .replacen(
            "address = \"10.0.0.1\"\n",
            "address = \"10.0.0.1\"\nprocessing = { delay = \"3 ms\", at = \"output\" }\n",
            1,
        )
        .replacen(
            "address = \"10.0.1.1\"\n",
            "address = \"10.0.1.1\"\nprocessing = { delay = \"5 ms\", at = \"input\" }\n",
            1,
        );
    assert_eq!(text.matches("processing =").count(), 2);
    let file = dir.path().join("processing.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let (o, late) = common::timer_latency_during(|| {
        Command::new(SQUALL)
            .arg("emu")
            .arg(&file)
            .args(["--out", out.to_str().unwrap(), "--run", "fixed@0.2s=ping -c 40 -i 0.05 -s 56 10.0.1.1"])
            .output()
            .unwrap()
    });
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ping = std::fs::read_to_string(out.join("rep-0/workloads/0-fixed.stdout")).unwrap();
    let mut rtts: Vec<f64> =
        ping.lines().filter_map(|l| l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok()).collect();
    assert!(rtts.len() >= 38, "{ping}");
    rtts.sort_by(f64::total_cmp);
    let median = rtts[rtts.len() / 2];
    let slack_ms = 4.0 * late.p99 * 1e3 + 0.3;
    eprintln!("ping median {median} ms, min {} ms, overshoot p99 {} ms", rtts[0], late.p99 * 1e3);
    assert!(rtts[0] >= 58.134 - 0.01, "a ping faster than the link and the delays allow: {} ms", rtts[0]);
    assert!(median <= 58.134 + slack_ms, "ping median {median} ms, expected 58.134 ms + at most {slack_ms} ms");
    // The captures: request to reply at each host, by ICMP sequence.
    let pairs = |host: &str| -> std::collections::BTreeMap<u64, f64> {
        let rows = tshark_fields(
            &out.join(format!("rep-0/{host}.pcap")),
            "icmp",
            &["icmp.type", "icmp.seq", "frame.time_epoch"],
        );
        let mut sent = std::collections::BTreeMap::new();
        let mut gaps = std::collections::BTreeMap::new();
        for r in &rows {
            let (seq, t): (u64, f64) = (r[1].parse().unwrap(), r[2].parse().unwrap());
            match r[0].as_str() {
                "8" => {
                    sent.insert(seq, t);
                }
                "0" => {
                    if let Some(s) = sent.get(&seq) {
                        gaps.insert(seq, (t - s) * 1e3);
                    }
                }
                other => panic!("ICMP type {other} in {host}.pcap"),
            }
        }
        gaps
    };
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    // Per echo, ping's RTT less the gap in fixed's capture is fixed's
    // 3 ms (taken before the capture) plus the time for squall to read
    // the request and for ping to read the reply: never under 3 ms, and
    // the median within the overshoot of it. A capture taken before the
    // delay would make the difference a fraction of a millisecond.
    let by_seq: std::collections::BTreeMap<u64, f64> = ping
        .lines()
        .filter_map(|l| {
            let seq = l.split("icmp_seq=").nth(1)?.split_whitespace().next()?.parse().ok()?;
            Some((seq, l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok()?))
        })
        .collect();
    let at_fixed = pairs("fixed");
    let diffs: Vec<f64> = by_seq.iter().filter_map(|(seq, rtt)| Some(rtt - at_fixed.get(seq)?)).collect();
    assert!(diffs.len() >= 38, "{diffs:?}");
    let (least, m) = (diffs.iter().copied().fold(f64::INFINITY, f64::min), median(diffs.clone()));
    eprintln!("ping RTT less fixed's capture gap: least {least} ms, median {m} ms");
    // ping prints 0.1 ms steps above 10 ms: 0.05 ms of rounding. One echo
    // may come out under 3 ms, by the rounding and by the time between
    // squall's write of the reply (ping's receive time) and squall's clock
    // read after it (the capture's time), longer when the thread is
    // preempted there; the median may not.
    assert!(
        (3.0 - 0.06..=3.0 + 2.0 * late.p99 * 1e3 + 0.5).contains(&m),
        "ping RTT less fixed's capture gap: least {least} ms, median {m} ms; expected fixed's 3 ms, taken before its capture"
    );
    let at_mobile: Vec<f64> = pairs("mobile").into_values().collect();
    assert!(at_mobile.len() >= 38, "{at_mobile:?}");
    let (least, m) = (at_mobile.iter().copied().fold(f64::INFINITY, f64::min), median(at_mobile.clone()));
    assert!(
        least >= 5.0 - 0.01 && m <= 5.0 + slack_ms,
        "mobile's capture: request to reply least {least} ms, median {m} ms; expected 5 ms and a little (its 5 ms \
         are after the capture)"
    );
}

/// A host's sysctls are set in its namespace: a workload there sees them,
/// the other host keeps the kernel's default; a key the kernel does not
/// have, or a value it refuses, is an error naming the host and the key.
#[test]
fn host_sysctls_apply_in_the_host_namespace() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_with_sysctl(
        dir.path(),
        r#"{ "net.ipv4.tcp_rmem" = "4096 131072 6291457", "net.ipv4.tcp_no_metrics_save" = 1 }"#,
    );
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(&file)
        .args(["--out", dir.path().join("a").to_str().unwrap()])
        .args(["--run", "fixed@0s=cat /proc/sys/net/ipv4/tcp_rmem", "--", "sh", "-c"])
        .arg("cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_no_metrics_save")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words, ["4096", "131072", "6291457", "1"], "{stdout}");
    let fixed = std::fs::read_to_string(dir.path().join("a/rep-0/workloads/0-fixed.stdout")).unwrap();
    assert!(!fixed.contains("6291457"), "the fixed host has its own settings: {fixed}");

    // Each refused run gets its own --out: a run that failed in its setup
    // keeps the scenario.toml it wrote, which a rerun there is refused for.
    for (table, key, says, out) in [
        (r#"{ "net.ipv4.no_such_setting" = 1 }"#, "net.ipv4.no_such_setting", "no such setting", "b"),
        (r#"{ "net.ipv4.tcp_rmem" = "many bytes" }"#, "net.ipv4.tcp_rmem", "refused", "c"),
    ] {
        let file = scenario_with_sysctl(dir.path(), table);
        let child = Command::new(SQUALL)
            .arg("emu")
            .arg(&file)
            .args(["--out", dir.path().join(out).to_str().unwrap(), "--", "true"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{table} was accepted");
        assert!(stderr.contains(&format!("host `mobile`: sysctl `{key}`")) && stderr.contains(says), "{stderr}");
        assert!(namespaces_of(pid).is_empty(), "a failed setup left namespaces: {:?}", namespaces_of(pid));
    }
}

/// `squall ctl background` re-rates, stops and restarts one generator while
/// the stage's other generator runs on: the generated counts match CBR
/// arithmetic over the times the changes took effect (their rows in
/// events.csv).
#[test]
fn control_socket_starts_stops_and_re_rates_background_generators() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let queue = "queue = { packets = 200, drop = \"tail\" }\n";
    let background = "background = [{ name = \"cbr\", rate = \"800 kbit/s\", size = \"1000 B\" }, { name = \"other\", rate = \"400 kbit/s\", size = \"1000 B\" }]\n";
    let file = edited_scenario(dir.path(), "blackout.toml", queue, &format!("{queue}{background}"));
    let out = dir.path().join("out");
    let mut child = Command::new(SQUALL)
        .arg("emu")
        .arg(&file)
        .args(["--out", out.to_str().unwrap(), "--duration", "20 s", "--run", "mobile@0s=sleep 2.5"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = child.id().to_string();
    let ctl = |args: &[&str]| {
        let out = Command::new(SQUALL).arg("ctl").args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    for _ in 0..100 {
        if ctl(&["list"]).0 && ctl(&["list"]).1.contains(&id) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let (ok, answer) = ctl(&["background", &id, "down", "cbr", "rate", "1600 kbit/s"]);
    assert!(ok, "{answer}");
    // The answer shows the generator with its new rate.
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let cbr = &answer["running"][0];
    assert!(cbr["name"] == "cbr" && cbr["rate"] == "1600 kbit/s", "{answer}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(ctl(&["background", &id, "down", "cbr", "stop"]).0);
    let (ok, answer) = ctl(&["background", &id, "down", "cbr", "stop"]);
    assert!(!ok && answer.contains("runs no background generator `cbr`"), "{answer}");
    let (ok, answer) = ctl(&["background", &id, "down", "nope", "start"]);
    assert!(!ok && answer.contains("no stopped background generator `nope`"), "{answer}");
    let (ok, answer) = ctl(&["background", &id, "nowhere", "cbr", "stop"]);
    assert!(!ok && answer.contains("no stage `nowhere`"), "{answer}");
    std::thread::sleep(Duration::from_millis(500));
    let (ok, answer) = ctl(&["background", &id, "down", "cbr", "start"]);
    assert!(ok && answer.contains("\"running\""), "{answer}");
    assert!(child.wait().unwrap().success());

    // The times the three accepted changes took effect, and the run's end.
    let events = std::fs::read_to_string(out.join("rep-0/events.csv")).unwrap();
    let times: Vec<f64> = events
        .lines()
        .filter(|l| l.contains("ctl-background"))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(times.len(), 3, "{events}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let run = &summary["runs"][0];
    let end = run["end"].as_f64().unwrap();
    let down = run["stages"].as_array().unwrap().iter().find(|s| s["name"] == "down").unwrap();
    let generated = down["background"]["generated"].as_f64().unwrap();
    // CBR sources send their first packet when they start: `cbr` at 100/s
    // from 0, at 200/s from the re-rate to the stop, and at 200/s again
    // from the restart; `other` at 50/s throughout, undisturbed.
    let (t1, t2, t3) = (times[0], times[1], times[2]);
    let count = |from: f64, to: f64, per_s: f64| ((to - from) * per_s).floor() + 1.0;
    let expected = count(0.0, t1, 100.0) + count(t1, t2, 200.0) + count(t3, end, 200.0) + count(0.0, end, 50.0);
    println!("generated {generated}, expected {expected}, changes at {times:?}, end {end}");
    assert!(
        (generated - expected).abs() <= 4.0,
        "generated {generated}, expected {expected} (changes at {times:?}, end {end})"
    );
    // Without the stop it would be about 100 more.
    assert!(t3 - t2 > 0.4, "{times:?}");
}

/// A [[workload.tcp]] flow's keys reach Linux in emulation (issue 14): MSS
/// (TCP_MAXSEG, both SYNs), receive window (the server never offers more
/// than `rwnd`), SACK off (per-namespace sysctl: no SACK-permitted option),
/// initial window 4 (route `initcwnd`: four data segments before the first
/// ACK of data), an ACK for every segment (`delayed_ack = false`, route
/// `quickack`) and a 300 ms minimum RTO (route `rto_min`: TCP_INFO's RTO is
/// at least that), read back from the pcaps with tshark and from TCP_INFO.
#[test]
fn linux_is_told_the_tcp_keys_it_can_express() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = "app = { bulk = \"500 KB\" }\n";
    let keys = "initial_window = 4\nmin_rto = \"300 ms\"\nsack = false\ndelayed_ack = false\nmss = \"1000 B\"\nrwnd = \"32 KB\"\n";
    let file = edited_scenario(dir.path(), "tcp-workload.toml", app, &format!("{app}{keys}"));
    let out = dir.path().join("out");
    let o = Command::new(SQUALL).arg("emu").arg(&file).args(["--out", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tshark =
        |pcap: &str, filter: &str, fields: &[&str]| tshark_fields(&out.join("rep-0").join(pcap), filter, fields);
    let syns = tshark(
        "fixed.pcap",
        "tcp.port == 15000 && tcp.flags.syn == 1",
        &["tcp.options.mss_val", "tcp.options.sack_perm"],
    );
    assert_eq!(syns.len(), 2, "{syns:?}");
    for syn in &syns {
        assert_eq!(syn[0], "1000", "MSS option: {syns:?}");
        assert_eq!(syn[1], "", "SACK permitted although sack = false: {syns:?}");
    }
    let windows: Vec<u64> = tshark("mobile.pcap", "tcp.srcport == 15000", &["tcp.window_size"])
        .iter()
        .map(|w| w[0].parse().unwrap())
        .collect();
    let largest = windows.iter().copied().max().unwrap();
    assert!((28_000..=32_000).contains(&largest), "largest window offered {largest} B, rwnd 32000 B");
    // Data segments of the client up to the server's first ACK of data.
    let client = tshark("fixed.pcap", "tcp.port == 15000", &["ip.src", "tcp.len", "tcp.ack"]);
    let first_ack = client.iter().position(|p| p[0] == "10.0.1.1" && p[2].parse::<u64>().unwrap() > 1).unwrap();
    let flight = client[..first_ack].iter().filter(|p| p[0] == "10.0.0.1" && p[1] != "0").count();
    assert_eq!(flight, 4, "initial flight {flight} segments, initial_window 4");
    let data = client.iter().filter(|p| p[0] == "10.0.0.1" && p[1] != "0").count();
    let acks = client.iter().filter(|p| p[0] == "10.0.1.1" && p[1] == "0").count();
    assert!(acks as f64 >= 0.9 * data as f64, "{acks} ACKs for {data} data segments with delayed_ack = false");
    let stdout = std::fs::read_to_string(out.join("rep-0/workloads/1-fixed.stdout")).unwrap();
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let rto = f(&result["final_info"]["rto_us"]);
    assert!(rto >= 300_000.0, "RTO {rto} us below min_rto 300 ms");
    let resolved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(resolved.contains("\"net.ipv4.tcp_sack\" = \"0\""), "{resolved}");
}

/// The multi-class stage works unchanged in both engines (issue 12):
/// `builtin:degrader` (classifier, four WRR classes, CBR and Poisson
/// background; without its state at 30 s) run for 4 s in emulation classifies the real voice flow
/// into its class (200 packets, one per 20 ms, none lost) and generates
/// the same background packets as the simulator with the same seed.
#[test]
fn the_degraders_classes_and_background_work_in_both_engines() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str, extra: &[&str]| -> serde_json::Value {
        let summary = run_engine(dir.path(), engine, "builtin:degrader", extra);
        summary["runs"][0]["stages"].as_array().unwrap().iter().find(|s| s["name"] == "degrader").unwrap().clone()
    };
    // The builtin's one state is entered at 30 s, after these 4 s: a state
    // after the run's end is refused (issue 28), so the run leaves it out.
    let sim = run("sim", &["--set", "states=[]", "--set", "duration=\"4 s\""]);
    let emu = run("emu", &["--set", "states=[]", "--duration", "4 s"]);
    let class = |stage: &serde_json::Value, name: &str| -> (u64, u64) {
        let c = stage["classes"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap();
        (c["enqueued"].as_u64().unwrap(), c["dropped"].as_u64().unwrap())
    };
    assert_eq!(class(&sim, "voice"), (200, 0));
    let (voice, lost) = class(&emu, "voice");
    assert!((195..=200).contains(&voice) && lost == 0, "emu voice class: {voice} enqueued, {lost} dropped");
    assert!(class(&emu, "web").0 > 500, "the TCP download is classified as web: {emu}");
    assert_eq!(class(&emu, "unclassified").0, 0, "{emu}");
    let generated = |s: &serde_json::Value| s["background"]["generated"].as_u64().unwrap();
    assert!(generated(&sim) > 1500, "{sim}");
    assert!(
        generated(&emu).abs_diff(generated(&sim)) <= 1,
        "background: emu {} sim {}",
        generated(&emu),
        generated(&sim)
    );
}

/// Seed 003 §3 with real Apache 2 and wget: the site download duration
/// (first SYN to last data byte, every connection of the run together)
/// at no load with keep-alive off and at 90% Poisson load with keep-alive
/// off and on, against the simulator's on the same scenario. Linux starts
/// connections with 10 segments (the simulator's scenario: 2, as Linux
/// 2.4), so a file of up to 14.6 KB takes one round trip in emulation and
/// up to three in the simulator: the emulated durations are shorter, by at
/// most 35%.
#[test]
fn seed003_web_site_with_apache_and_wget_is_within_the_simulators_band() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let have = |p: &str| {
        Command::new("sh").args(["-c", &format!("command -v {p}")]).output().is_ok_and(|o| o.status.success())
    };
    if !(have("apache2") || Path::new("/usr/sbin/apache2").exists()) || !have("wget") {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI=true but apache2 or wget is not installed");
        eprintln!("skipping: apache2 and wget are not installed (apt-get install apache2 wget)");
        return;
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed003-web.toml");
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str, name: &str, sets: &[String]| -> PathBuf {
        let out = dir.path().join(format!("{engine}-{name}"));
        let mut c = Command::new(SQUALL);
        c.arg(engine).arg(&file).args(["--out", out.to_str().unwrap()]);
        if engine == "sim" {
            c.args(["--replications", "4"]);
        }
        for s in sets {
            c.args(["--set", s]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{engine} {name}: {}", String::from_utf8_lossy(&o.stderr));
        out
    };
    // An emulation the emulator flags is repeated ([`until_on_time`]),
    // each run into a fresh directory.
    let emu_run = |name: &str, sets: &[String]| -> PathBuf {
        let emulate = || {
            let out = dir.path().join(format!("emu-{name}"));
            if out.exists() {
                std::fs::remove_dir_all(&out).unwrap();
            }
            run("emu", name, sets)
        };
        let summary =
            |out: &PathBuf| serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        until_on_time(name, emulate, summary)
    };
    for (name, load, keep_alive) in [("off-0", "0%", false), ("off-90", "90%", false), ("on-90", "90%", true)] {
        let mut sets = vec![
            format!("stage.down.background.0.load={load}"),
            "stage.down.background.0.arrivals=poisson".to_string(),
            format!("workload.tcp.0.app.web.keep_alive={keep_alive}"),
        ];
        if keep_alive {
            sets.push("workload.tcp.0.app.web.max_requests=100".into());
            sets.push("workload.tcp.0.app.web.keep_alive_timeout=\"15 s\"".into());
        }
        let sim = run("sim", name, &sets);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sim.join("summary.json")).unwrap()).unwrap();
        let sim_times: Vec<f64> =
            summary["runs"].as_array().unwrap().iter().map(|r| f(&r["tcp_flows"][0]["transfer_time"])).collect();
        let (lo, hi) = sim_times.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &t| (l.min(t), h.max(t)));
        let emu = emu_run(name, &sets);
        let rep = emu.join("rep-0");
        let hosts = [
            squall_analysis::RunHost { name: "server".into(), address: [10, 0, 0, 1].into() },
            squall_analysis::RunHost { name: "client".into(), address: [10, 0, 1, 1].into() },
        ];
        let flows = squall_analysis::by_workload(squall_analysis::analyse_run(&rep, &hosts).unwrap());
        let site = flows.iter().find(|f| f.label == "tcp server:80 > client:*").expect("the site's responses");
        let log = std::fs::read_to_string(rep.join("workloads/1-client.stderr")).unwrap();
        println!(
            "{name}: emulated {:.2} s over {} connections; simulated {lo:.2}..{hi:.2} s",
            site.elapsed, site.connections
        );
        assert!(log.contains("Downloaded: 499 files"), "wget did not fetch the site: {log}");
        // wget keeps a connection for 100 files with keep-alive; without,
        // one per file, less those whose port Linux picked again (the
        // captures see one connection per address and port pair: 475 and
        // 480-499 seen on the same machine, as Linux's choice of port
        // varies). A tenth of the files is the margin; keep-alive's 5 is
        // far outside it.
        if keep_alive {
            assert_eq!(site.connections, 5, "connections");
        } else {
            assert!((449..=499).contains(&site.connections), "{} connections", site.connections);
        }
        // Measured (2026-11-28, two cores under other builds): off-0
        // emulated 31.90 s against 32.00 s simulated, off-90 40.45 s
        // within 39.52..40.87 s, on-90 20.63 s against 18.95..20.28 s
        // (+1.7 % over the range). Before Apache's host was given the
        // flow's initcwnd 2 (it ran Linux's 10) the emulation was 13 %
        // faster without keep-alive: the test caught it at -20 %.
        assert!(
            site.elapsed > 0.9 * lo && site.elapsed < 1.1 * hi,
            "{name}: emulated {} s outside the simulator's {lo}..{hi} s band (-10%, +10%)",
            site.elapsed
        );
    }
}

/// TUN offloads (issue 10): the hosts hand squall TSO super-packets,
/// which are cut into wire-sized segments before the model draws its
/// loss, and segments leaving for one host at one instant are written as
/// the super-packet read, or joined again (GRO). What the model and the pcaps see is the wire: every
/// packet at most the MTU, every checksum right (tshark), the data in
/// sequence; the loss rate is the configured 1% of segments, not of
/// super-packets; without offloads the same holds with nothing cut.
#[test]
fn offloaded_flights_are_cut_into_wire_packets_before_the_model() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    // 16 MB: about 11 600 segments of 1448 bytes.
    let bytes = 16_000_000u64;
    for offloads in [true, false] {
        let extra: &[&str] = if offloads { &[] } else { &["--no-offloads"] };
        let run = bulk("tcp-fast-loss.toml", "cubic", "16 MB", extra);
        let what = if offloads { "with offloads" } else { "without offloads" };
        assert_eq!(u(&run.client["bytes"]), bytes, "{what}: {}", run.client);
        let hosts = &run.summary["runs"][0]["hosts"];
        let (sent, received) = (&hosts["fixed"]["offload"], &hosts["mobile"]["offload"]);
        if offloads {
            assert!(u(&sent["super_packets_read"]) > 100, "{what}: TSO not used: {sent}");
            assert!(u(&sent["segments_cut"]) > 2 * u(&sent["super_packets_read"]), "{what}: {sent}");
            // The down stage has no rate: a super-packet's segments leave
            // at one instant. One that lost none (about 0.99^n of those of
            // n segments) is written as it was read; the survivors of one
            // that lost some are joined as GRO would.
            assert!(u(&received["whole_writes"]) > 100, "{what}: no super-packet written whole: {received}");
            assert!(u(&received["joined_writes"]) > 100, "{what}: GRO not used: {received}");
        } else {
            assert_eq!(u(&sent["super_packets_read"]), 0, "{what}: {sent}");
            assert_eq!(u(&received["joined_writes"]), 0, "{what}: {received}");
            assert_eq!(u(&received["whole_writes"]), 0, "{what}: {received}");
        }
        // 1% of the segments (the binomial 99.9% interval at n ≥ 10 000:
        // ±0.33 percentage points).
        let down = &run.summary["runs"][0]["stages"][0];
        assert_eq!(down["name"], "down");
        let (entered, dropped) = (f(&down["entered"]), f(&down["dropped"]["error"]));
        let p = dropped / entered;
        let half = 3.29 * (0.01f64 * 0.99 / entered).sqrt();
        assert!(entered >= 10_000.0 && (p - 0.01).abs() <= half, "{what}: {dropped} of {entered} dropped");
        for host in ["fixed", "mobile"] {
            let pcap = run.rep().join(format!("{host}.pcap"));
            let longest = pcap_lengths(&pcap).iter().map(|&(_, len)| len).max().unwrap();
            assert!(longest <= 1500, "{what}: a {longest}-byte packet in {host}.pcap");
            let bad = tshark_fields_with(
                &pcap,
                &["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"],
                // Linux writes a TCP checksum that comes out 0x0000 as
                // 0xffff (skb_checksum_help's CSUM_MANGLED_0): the same
                // value in one's complement (RFC 1624), which Wireshark
                // flags (tcp.checksum.ffff). About one packet in 65 536.
                "ip.checksum.status == 0 || (tcp.checksum.status == 0 && !tcp.checksum.ffff) || _ws.malformed \
                 || (_ws.expert.severity == error && !tcp.checksum.ffff)",
                &["frame.number", "_ws.expert.message"],
            );
            assert!(bad.is_empty(), "{what}: {} bad packets in {host}.pcap, first {:?}", bad.len(), bad.first());
        }
        // What mobile received covers the stream without a hole.
        let mut data: Vec<(u64, u64)> = tshark_fields(
            &run.rep().join("mobile.pcap"),
            "tcp.dstport == 5201 && tcp.len > 0",
            &["tcp.seq", "tcp.len"],
        )
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
        .collect();
        data.sort();
        let mut covered = 1;
        for (seq, len) in data {
            assert!(seq <= covered, "{what}: bytes {covered}..{seq} never reached mobile");
            covered = covered.max(seq + len);
        }
        assert!(covered > bytes, "{what}: mobile got the stream up to {covered} of {bytes}");
    }
}

/// [`tshark_fields`] with extra tshark options before the filter.
fn tshark_fields_with(pcap: &Path, options: &[&str], filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-r", pcap.to_str().unwrap()]).args(options).args(["-Y", filter, "-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("tshark is needed (apt-get install tshark)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// `--host-device xdp` (issue 10): hosts joined by veth pairs read and
/// written with AF_XDP carry real TCP as TUN devices do — the rate and RTT
/// of the 10 Mbit/s link, every packet in the pcaps with good checksums
/// (the senders leave them partial for the device: squall completes them)
/// — and an unpaced UDP sender's packets are all accounted for: read by
/// squall or counted as dropped by the kernel before it.
#[test]
fn hosts_joined_by_af_xdp_carry_tcp_and_udp_like_tun_devices() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let expected = 10e6 * 1448.0 / 1500.0;
    let rtt_floor_ms = 50.0 + (60.0 + 52.0) * 8.0 / 10e6 * 1e3;
    let (run, late) =
        common::timer_latency_during(|| bulk("tcp-10mbit.toml", "reno", "6 MB", &["--host-device", "xdp"]));
    assert_eq!(run.summary["emu"]["host_device"], "xdp");
    assert_eq!(u(&run.client["bytes"]), 6_000_000);
    assert_steady_goodput("reno over AF_XDP", &run, expected, 6e6, late);
    let min_rtt_ms = f(&run.client["final_info"]["min_rtt_us"]) / 1e3;
    assert!((min_rtt_ms - rtt_floor_ms).abs() < 1.0, "min RTT {min_rtt_ms} ms vs {rtt_floor_ms} ms");
    for host in ["fixed", "mobile"] {
        let pcap = run.rep().join(format!("{host}.pcap"));
        let bad = tshark_fields_with(
            &pcap,
            &["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"],
            "ip.checksum.status == 0 || (tcp.checksum.status == 0 && !tcp.checksum.ffff) || _ws.malformed",
            &["frame.number", "_ws.expert.message"],
        );
        assert!(bad.is_empty(), "{} bad packets in {host}.pcap, first {:?}", bad.len(), bad.first());
        assert!(tshark_count(&pcap).is_none_or(|n| n > 4000), "{host}.pcap");
    }
    let (dir, summary, stderr) = udp_run("1e12", 64, 1.0, &["--no-pcap", "--no-events", "--host-device", "xdp"]);
    let out = std::fs::read_to_string(dir.path().join("rep-0/workloads/1-fixed.stdout")).unwrap();
    let sent: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let fixed = &summary["runs"][0]["hosts"]["fixed"];
    assert_eq!(u(&sent["sent"]), u(&fixed["sent_packets"]) + u(&fixed["kernel_dropped_frames"]), "{fixed}\n{stderr}");
    assert_downlink_conserved(&summary);
    // An AF_XDP frame is a page less the kernel's headroom: a larger MTU
    // is refused with the reason.
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args([
            "--host-device",
            "xdp",
            "--mtu",
            "9000",
            "--out",
            dir.path().join("mtu").to_str().unwrap(),
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("interface `squall0-xdp`: MTU 9000 is too large for AF_XDP frames of 3840 bytes"),
        "{stderr}"
    );
}
