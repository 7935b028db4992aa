//! Hosts and their stacks: processing delays, sysctls, background
//! generators through the control socket, Linux's TCP keys, the
//! degrader's classes, seed 003's web site, offloads, AF_XDP.

use super::*;

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
            squall_analysis::RunHost::v4("server", [10, 0, 0, 1].into()),
            squall_analysis::RunHost::v4("client", [10, 0, 1, 1].into()),
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
