//! Running an emulation: the control socket, CPU pinning, output
//! directories, a killed run, shell mode, a failed workload, an
//! experiment's report, iperf3.

use super::*;

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
        .args(["--out", dir.path().join("a").to_str().unwrap(), "--run", "mobile@0s=sleep 59.875"])
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
    // with its namespace. Its odd duration is its own: the full suite once
    // found another program's `sleep 60` on the machine here.
    let sleepers = Command::new("pgrep").args(["-x", "-f", "sleep 59.875"]).output().unwrap();
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

/// Issue 34: a client that gives up because the server answered an error
/// (wget's exit status 8, "server issued an error response", as in the
/// emulated seed 003 experiment) ends its emulated run as a failed
/// download, not a failed experiment: `squall run` keeps the run and goes
/// on, results.csv says `completed` 0 for it, summary.csv counts it (the
/// completed share of the point is 0) and its TCP flow's elapsed time
/// runs to the scenario's duration (30 s), as a simulated download not in
/// by then. The server is Python's http.server answering 500 to every GET
/// (wget tries again while it is not listening yet: on a loaded machine
/// Python takes more than a second to start, and a refused connection is
/// wget's status 4).
/// Before the fix `squall run` failed: "`squall emu …` failed (exit
/// status: 1)".
#[test]
fn a_download_the_server_refuses_is_a_failed_download_not_a_failed_run() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server500.py");
    std::fs::write(
        &server,
        "import http.server, sys\n\
         class H(http.server.BaseHTTPRequestHandler):\n    \
             def do_GET(self):\n        \
                 self.send_response(500)\n        \
                 self.send_header('Content-Length', '0')\n        \
                 self.end_headers()\n\
         http.server.HTTPServer(('10.0.0.1', 8080), H).serve_forever()\n",
    )
    .unwrap();
    let mut text = std::fs::read_to_string(scenario("tcp-10mbit.toml")).unwrap();
    text.push_str(&format!(
        "\n[[workload.commands]]\nhost = \"fixed\"\nrun = \"exec /usr/bin/python3 {}\"\nbackground = true\n\
         [[workload.commands]]\nhost = \"mobile\"\nat = \"1 s\"\n\
         run = \"wget -nv -O /dev/null --retry-connrefused --waitretry 1 --tries 20 \
         http://10.0.0.1:8080/index.html\"\n",
        server.display()
    ));
    let scenario_file = dir.path().join("refused.toml");
    std::fs::write(&scenario_file, text).unwrap();
    let experiment = dir.path().join("refused-exp.toml");
    std::fs::write(
        &experiment,
        format!(
            "name = \"refused\"\n[[sets]]\nname = \"refused\"\nscenario = \"{}\"\nengine = \"emu\"\nreplications = 1\n",
            scenario_file.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::new(SQUALL)
        .args(["run", experiment.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("exited with status 8; the run is kept as a failed download"), "{stderr}");
    assert!(stdout.contains("1 of 1 runs did not complete"), "{stdout}");
    // wget met the server's answer, which the client's capture holds.
    let rep = out.join("refused/p0/rep-0");
    let wget = std::fs::read_to_string(rep.join("workloads/1-mobile.stderr")).unwrap();
    assert!(wget.contains("ERROR 500: Internal Server Error"), "{wget}");
    let codes = tshark_fields(&rep.join("mobile.pcap"), "http.response", &["http.response.code"]);
    assert_eq!(codes, vec![vec!["500".to_string()]], "the server's answers");
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let rows = csv_rows(&results);
    let tcp: Vec<_> = rows.iter().filter(|r| r["label"].contains("> fixed:8080")).collect();
    assert_eq!(tcp.len(), 1, "{results}");
    assert_eq!(tcp[0]["completed"], "0", "{results}");
    // Opened 1 s after the start (the first SYN; a few more seconds when
    // Python was not listening yet and wget tried again), its elapsed
    // time runs to 30 s: without the mark it would be the fraction of a
    // second the connection took.
    let elapsed: f64 = tcp[0]["elapsed"].parse().unwrap();
    assert!((24.0..=29.0).contains(&elapsed), "elapsed {elapsed} s: {results}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary.lines().any(|l| l.contains("(all flows),completed,1,0,")),
        "the point's completed share (n 1, mean 0):\n{summary}"
    );
    assert!(namespaces_of(std::process::id()).is_empty());
}

/// The rows of a CSV text without quoted commas, as maps from the header.
fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    lines.map(|l| header.iter().map(|h| h.to_string()).zip(l.split(',').map(String::from)).collect()).collect()
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
