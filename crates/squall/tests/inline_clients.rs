//! `squall emu --inline` with `[[inline.clients]]`: several clients behind
//! one inline box, each on its own path (issue 34: a gateway that gives
//! every phone of a test bench its own profile). The test makes three
//! client namespaces joined by a Linux bridge to one veth that squall
//! attaches to, and a `lab` namespace behind the other; unmodified ping
//! and iperf3 measure each client's path apart, and a state switched with
//! `squall ctl` changes one client's path only. Needs root; under CI=true
//! a namespace that cannot be made is a failure, not a skip.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{SQUALL, ip};

/// The lab's address, and each client's (10.203.0.1 to .3, one subnet:
/// ARP crosses squall).
const LAB: &str = "10.203.0.10";

/// Client `i`'s MAC address (0-based).
fn mac(i: usize) -> String {
    format!("02:00:00:00:03:{:02x}", i + 1)
}

/// The three clients and the lab, with what squall attaches to: `side[0]`
/// (the clients' bridge side) and `side[1]` (the lab's).
struct Testbed {
    clients: Vec<String>,
    lab: String,
    bridge: String,
    side: [String; 2],
}

impl Testbed {
    fn new() -> Option<Testbed> {
        let pid = std::process::id();
        let tag = pid % 100_000;
        let bed = Testbed {
            clients: (1..=3).map(|i| format!("sqc-{pid}-c{i}")).collect(),
            lab: format!("sqc-{pid}-lab"),
            bridge: format!("sqcbr{tag}"),
            side: [format!("sqca{tag}"), format!("sqcb{tag}")],
        };
        let peer = format!("sqcp{tag}");
        let mut ok = ip(&["link", "add", &bed.bridge, "type", "bridge"])
            && std::fs::write(format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", bed.bridge), "1").is_ok()
            && ip(&["link", "set", &bed.bridge, "up"])
            && ip(&["link", "add", &bed.side[0], "type", "veth", "peer", "name", &peer])
            && ip(&["link", "set", &peer, "master", &bed.bridge])
            && ip(&["link", "set", &peer, "up"])
            && ip(&["link", "set", &bed.side[0], "up"]);
        for (i, ns) in bed.clients.iter().enumerate() {
            let port = format!("sqcc{i}{tag}");
            ok = ok
                && ip(&["netns", "add", ns])
                && ip(&["link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", ns])
                && ip(&["link", "set", &port, "master", &bed.bridge])
                && ip(&["link", "set", &port, "up"])
                && ip(&["-n", ns, "link", "set", "eth0", "address", &mac(i)])
                && ip(&["-n", ns, "addr", "add", &format!("10.203.0.{}/24", i + 1), "dev", "eth0"])
                && ip(&["-n", ns, "link", "set", "lo", "up"])
                && ip(&["-n", ns, "link", "set", "eth0", "up"]);
        }
        ok = ok
            && ip(&["netns", "add", &bed.lab])
            && ip(&["link", "add", &bed.side[1], "type", "veth", "peer", "name", "eth0", "netns", &bed.lab])
            && ip(&["link", "set", &bed.side[1], "up"])
            && ip(&["-n", &bed.lab, "addr", "add", &format!("{LAB}/24"), "dev", "eth0"])
            && ip(&["-n", &bed.lab, "link", "set", "lo", "up"])
            && ip(&["-n", &bed.lab, "link", "set", "eth0", "up"]);
        if !ok {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but the testbed cannot be made");
            eprintln!("skipping: namespaces, veths and a bridge cannot be made here (need root and iproute2)");
            return None;
        }
        Some(bed)
    }

    fn exec(&self, ns: &str, cmd: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", ns]).args(cmd).output().unwrap()
    }

    fn spawn(&self, ns: &str, cmd: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// iperf3 from every client `i` in `clients` at once, each to its own
    /// server port on the lab, with `args` after `-c LAB -p PORT -J`:
    /// their reports, in order. Bounded as the one-path test's.
    fn iperf3_at_once(&self, clients: &[usize], args: &[&str]) -> Vec<serde_json::Value> {
        let mut servers: Vec<Child> = clients
            .iter()
            .map(|i| self.spawn(&self.lab, &["iperf3", "-s", "-1", "-B", LAB, "-p", &(5300 + i).to_string()]))
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let running: Vec<Child> = clients
            .iter()
            .map(|i| {
                let port = (5300 + i).to_string();
                let mut cmd =
                    vec!["timeout", "60", "iperf3", "-c", LAB, "-p", &port, "--connect-timeout", "5000", "-J"];
                cmd.extend(args);
                self.spawn(&self.clients[*i], &cmd)
            })
            .collect();
        let outputs: Vec<Output> = running.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        for s in &mut servers {
            let _ = s.kill();
            let _ = s.wait();
        }
        outputs
            .iter()
            .zip(clients)
            .map(|(out, i)| {
                let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                assert!(out.status.success(), "iperf3 from client {i} failed: {said}");
                let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert!(report.get("error").is_none(), "iperf3 from client {i}: {}", report["error"]);
                report
            })
            .collect()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for ns in self.clients.iter().chain([&self.lab]) {
            ip(&["netns", "delete", ns]);
        }
        ip(&["link", "del", &self.bridge]);
        ip(&["link", "del", &self.side[0]]);
    }
}

/// Each client's link to the lab: (rate in Mbit/s, one-way delay in ms,
/// loss on the way to the lab).
const PATHS: [(f64, f64, &str); 3] = [(2.0, 10.0, "0%"), (10.0, 30.0, "0%"), (4.0, 5.0, "5%")];

/// Three clients, each on its own link to the lab; client 1 known by its
/// address, client 2 by its MAC, client 3 by both. State `c1-slow` sets
/// client 1's link to 0.5 Mbit/s both ways.
fn scenario(dir: &Path, bed: &Testbed) -> PathBuf {
    let mut text = String::from("name = \"three-clients\"\nduration = \"120 s\"\n");
    for i in 0..3 {
        text += &format!("[[hosts]]\nname = \"c{}\"\naddress = \"10.203.0.{}\"\n", i + 1, i + 1);
    }
    text += &format!("[[hosts]]\nname = \"lab\"\naddress = \"{LAB}\"\n");
    for (i, (rate, delay, loss)) in PATHS.iter().enumerate() {
        let c = i + 1;
        text += &format!(
            "[[links]]\nbetween = [\"c{c}\", \"lab\"]\n\
             [[links.downlink]]\nname = \"c{c}-out\"\nrate = \"{rate} Mbit/s\"\ndelay = \"{delay} ms\"\n\
             error = {{ packet = \"{loss}\" }}\nqueue = {{ packets = 200 }}\n\
             [[links.uplink]]\nname = \"c{c}-in\"\nrate = \"{rate} Mbit/s\"\ndelay = \"{delay} ms\"\nqueue = {{ packets = 200 }}\n"
        );
    }
    text += "[[states]]\nname = \"c1-slow\"\nset.c1-out = { rate = \"0.5 Mbit/s\" }\n\
             set.c1-in = { rate = \"0.5 Mbit/s\" }\n";
    text += &format!(
        "[inline]\ninterfaces = [\"{}\", \"{}\"]\n\
         [[inline.clients]]\nhost = \"c1\"\nprefix = \"10.203.0.1\"\n\
         [[inline.clients]]\nhost = \"c2\"\nmac = \"{}\"\n\
         [[inline.clients]]\nhost = \"c3\"\nmac = \"{}\"\nprefix = \"10.203.0.3/32\"\n",
        bed.side[0],
        bed.side[1],
        mac(1),
        mac(2)
    );
    let path = dir.join("clients.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Kills the run if the test ends before it stops it.
struct Run(Option<Child>);

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn rtts(out: &Output) -> Vec<f64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Goodput of a TCP flow at `rate` (bit/s): 1448 payload bytes of each
/// 1500-byte IP packet (RFC 7323 timestamps).
fn line(rate: f64) -> f64 {
    rate * 1448.0 / 1500.0
}

#[test]
fn three_clients_behind_one_inline_box_each_get_their_own_path() {
    let Some(bed) = Testbed::new() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), &bed);
    let out = dir.path().join("out");
    let inline = format!("{},{}", bed.side[0], bed.side[1]);
    let child = Command::new(SQUALL)
        .args(["emu", "--inline", &inline, "--out", out.to_str().unwrap(), file.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut run = Run(Some(child));
    // Ready when every client's ping crosses (ARP too).
    for ns in &bed.clients {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !bed.exec(ns, &["ping", "-c", "1", "-W", "1", LAB]).status.success() {
            if Instant::now() >= deadline {
                let mut child = run.0.take().unwrap();
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "no ping from {ns} through squall within 10 s; squall: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }

    // Each client's round trip is its own link's: twice its delay, plus
    // two 98-byte transmissions at its rate. None is faster; the median
    // is within 2 ms of it (another client's path differs by 10 ms or
    // more).
    for (i, (rate, delay, _)) in PATHS.iter().enumerate() {
        let bps = rate * 1e6;
        let expect = 2.0 * delay + 2.0 * 98.0 * 8.0 / bps * 1e3;
        let r = rtts(&bed.exec(&bed.clients[i], &["ping", "-c", "20", "-i", "0.05", LAB]));
        let m = median(&r);
        let min = r.iter().cloned().fold(f64::MAX, f64::min);
        println!("client {}: ping median {m:.3} ms, min {min:.3}, expected {expect:.3} ms", i + 1);
        // Client 3's echo requests cross a 5 % loss: most come back.
        assert!(r.len() >= 15, "client {}: {} of 20 replies", i + 1, r.len());
        assert!(r.iter().all(|&x| x >= expect - 0.05), "client {}: RTTs {r:?} below {expect} ms", i + 1);
        assert!(m <= expect + 2.0, "client {}: median {m} ms against {expect} ms", i + 1);
    }

    // TCP from clients 1 and 2 at once: each gets its own link's rate
    // (tolerances as the one-path test's: at most the line rate + 1 %, at
    // least half of it; 2 and 10 Mbit/s are apart by more than that).
    let reports = bed.iperf3_at_once(&[0, 1], &["-t", "5", "-O", "1"]);
    let got: Vec<f64> = reports.iter().map(|r| r["end"]["sum_received"]["bits_per_second"].as_f64().unwrap()).collect();
    println!("TCP at once: client 1 {:.3} Mbit/s, client 2 {:.3} Mbit/s", got[0] / 1e6, got[1] / 1e6);
    for (g, rate) in got.iter().zip([2e6, 10e6]) {
        assert!((line(rate) / 2.0..=line(rate) * 1.01).contains(g), "{g} bit/s against the line rate {}", line(rate));
    }

    // UDP from client 3 through its 5 % loss: lost within the binomial
    // 95 % interval (the other clients' links have none).
    let report = &bed.iperf3_at_once(&[2], &["-u", "-b", "3M", "-l", "1200", "-k", "1500"])[0];
    let sum = &report["end"]["sum"];
    let (lost, total) = (sum["lost_packets"].as_f64().unwrap(), sum["packets"].as_f64().unwrap());
    let half = 1.96 * (total * 0.05 * 0.95).sqrt();
    println!("client 3 UDP: {lost} of {total} lost, expected {:.0} ± {half:.0}", total * 0.05);
    assert!((lost - total * 0.05).abs() <= half, "client 3 lost {lost} of {total}");

    // Client 1's path slows down; client 2's does not.
    let answer = Command::new(SQUALL).args(["ctl", "state", &pid, "c1-slow"]).output().unwrap();
    assert!(answer.status.success(), "{}", String::from_utf8_lossy(&answer.stderr));
    let reports = bed.iperf3_at_once(&[0, 1], &["-t", "5", "-O", "1"]);
    let after: Vec<f64> =
        reports.iter().map(|r| r["end"]["sum_received"]["bits_per_second"].as_f64().unwrap()).collect();
    println!("after c1-slow: client 1 {:.3} Mbit/s, client 2 {:.3} Mbit/s", after[0] / 1e6, after[1] / 1e6);
    assert!((line(0.5e6) / 2.0..=line(0.5e6) * 1.01).contains(&after[0]), "client 1 after c1-slow: {}", after[0]);
    assert!((line(10e6) / 2.0..=line(10e6) * 1.01).contains(&after[1]), "client 2 after c1-slow: {}", after[1]);
    assert!((after[1] - got[1]).abs() <= 0.1 * got[1], "client 2 went from {} to {} bit/s", got[1], after[1]);

    // SIGINT: the summary counts each client apart.
    let mut child = run.0.take().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    let summary = common::summary(&out);
    let hosts = &summary["runs"][0]["hosts"];
    println!("hosts: {hosts}");
    for c in ["c1", "c2", "c3"] {
        assert!(hosts[c]["sent_packets"].as_u64().unwrap() > 100, "{c}: {}", hosts[c]);
        assert!(hosts[c]["received_packets"].as_u64().unwrap() > 20, "{c}: {}", hosts[c]);
        assert!(out.join(format!("rep-0/{c}.pcap")).exists());
    }
    // Only client 3's link lost packets to errors.
    let stages = summary["runs"][0]["stages"].as_array().unwrap();
    let errors = |name: &str| {
        let s = stages.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no stage {name}: {stages:?}"));
        s["dropped"]["error"].as_u64().unwrap_or(0)
    };
    assert!(errors("c3-out") > 20 && errors("c1-out") == 0 && errors("c2-out") == 0);
    // The state switch touched client 1's stages only.
    let events = common::events(&out.join("rep-0/events.csv"), None);
    let switched: Vec<&String> = events.iter().filter(|e| e["event"] == "state_change").map(|e| &e["stage"]).collect();
    assert_eq!(switched, ["c1-slow"], "state changes");
}

/// A client no rule knows, and a mistake in `[[inline.clients]]`, are
/// named (no namespaces needed: the scenario is refused before anything
/// is set up).
#[test]
fn bad_inline_clients_are_refused_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let base = "name = \"x\"\nduration = \"1 s\"\n\
                [[hosts]]\nname = \"c1\"\naddress = \"10.0.0.1\"\n\
                [[hosts]]\nname = \"c2\"\naddress = \"10.0.0.2\"\n\
                [[hosts]]\nname = \"lab\"\naddress = \"10.0.0.10\"\n\
                [[links]]\nbetween = [\"c1\", \"lab\"]\n[[links.downlink]]\nname = \"d1\"\n[[links.uplink]]\nname = \"u1\"\n\
                [[links]]\nbetween = [\"c2\", \"lab\"]\n[[links.downlink]]\nname = \"d2\"\n[[links.uplink]]\nname = \"u2\"\n\
                [inline]\ninterfaces = [\"a0\", \"b0\"]\n";
    let cases = [
        (
            "[[inline.clients]]\nhost = \"c1\"\nmac = \"02:00:00:00:00:1\"\n",
            "02:00:00:00:00:1",
            "is not an Ethernet address",
        ),
        ("[[inline.clients]]\nhost = \"c9\"\nprefix = \"10.0.0.1\"\n", "inline.clients[0].host", "no host named `c9`"),
        (
            "[[inline.clients]]\nhost = \"c1\"\n[[inline.clients]]\nhost = \"c2\"\nmac = \"02:00:00:00:00:02\"\n",
            "inline.clients[0]",
            "needs a `mac` or a `prefix`",
        ),
        ("[[inline.clients]]\nhost = \"c1\"\nprefix = \"10.0.0.1\"\n", "links[1].between", "neither a client"),
    ];
    for (i, (clients, key, message)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&file, format!("{base}{clients}")).unwrap();
        let out = Command::new(SQUALL)
            .args(["sim", file.to_str().unwrap(), "--out", dir.path().join(format!("out{i}")).to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "case {i} accepted");
        assert!(err.contains(key) && err.contains(message), "case {i}: {err}");
    }
}
