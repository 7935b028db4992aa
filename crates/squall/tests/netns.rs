//! `squall emu` and namespaces it does not own: a run SIGKILLed while its
//! parent does not reap it (a zombie) is swept by the next start, and an
//! existing namespace (standing in for a container) joins a scenario as a
//! host and is left exactly as it was, however the run ends. These tests
//! need root and network namespaces; without them they are skipped with a
//! message, except under CI=true, where they fail.
//!
//! They run one at a time (one lock), as in emu.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

mod common;
use common::{SQUALL, namespaces_available, namespaces_named};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/emu").join(name)
}

/// Field 3 (state) of /proc/PID/stat, read after the last `)` (proc(5)).
fn state_of(pid: u32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..].split_whitespace().next()?.chars().next()
}

/// The pids whose command line is exactly `command` (pgrep -x -f).
fn pids_running(command: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-x", "-f", command]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().map(String::from).collect()
}

#[test]
fn a_killed_run_that_is_a_zombie_is_swept_by_the_next_start() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // This test process is the parent of the first run and does not reap
    // it after SIGKILL: it stays a zombie until the end of the test. Its
    // workload leaves an orphan (`sleep`, not the shell squall started, so
    // PR_SET_PDEATHSIG does not reach it) in the mobile host's namespace.
    let orphan = "sleep 61.25";
    let mut first = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().join("a").to_str().unwrap(), "--no-pcap", "--no-events", "--", "sh", "-c"])
        .arg(format!("{orphan} & sleep 60"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id();
    let mine = format!("squall-{pid}-");
    let socket = format!("/run/squall/squall-{pid}.sock");
    let record = format!("/run/squall/squall-{pid}.run");
    let mut up = false;
    for _ in 0..300 {
        if namespaces_named(&mine).len() == 2 && Path::new(&socket).exists() && !pids_running(orphan).is_empty() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(up, "the first run did not set up its namespaces, socket and workload");
    assert!(Path::new(&record).exists(), "the run is recorded in {record}");
    // SIGKILL, and no wait(): the first run becomes a zombie.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let mut zombie = false;
    for _ in 0..300 {
        if state_of(pid) == Some('Z') {
            zombie = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(zombie, "the killed run is not a zombie: {:?}", state_of(pid));
    assert_eq!(namespaces_named(&mine).len(), 2, "a SIGKILLed run's namespaces stay until the next start");
    assert!(!pids_running(orphan).is_empty(), "the orphan outlives the killed run until the next start");

    let second = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().join("b").to_str().unwrap(), "--duration", "0.3 s", "--no-pcap", "--no-events"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "the second run failed: {stderr}");
    assert!(stderr.contains(&format!("removed stale netns squall-{pid}-")), "{stderr}");
    assert_eq!(state_of(pid), Some('Z'), "the first run was still a zombie when the second started");
    assert!(namespaces_named(&mine).is_empty(), "stale namespaces left: {:?}", namespaces_named(&mine));
    assert!(!Path::new(&socket).exists(), "the zombie's control socket is left");
    assert!(!Path::new(&record).exists(), "the zombie's record is left");
    assert!(pids_running(orphan).is_empty(), "the zombie's workload is still running");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("b/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["emu"]["ended_by"], "duration", "{summary}");
    first.wait().unwrap();
}

/// A namespace made by the test, standing in for a container: a veth
/// pair (a container's link; the dummy driver may be missing) with its own
/// address on one end and a route through it, IPv6 as the kernel
/// sets it up. Removed when dropped.
struct Container {
    name: String,
}

impl Container {
    fn new() -> Container {
        let name = format!("sqtest-{}", std::process::id());
        let c = Container { name };
        for args in [
            vec!["netns", "add", &c.name],
            vec!["-n", &c.name, "link", "set", "lo", "up"],
            vec!["-n", &c.name, "link", "add", "ctr0", "type", "veth", "peer", "name", "ctr1"],
            vec!["-n", &c.name, "addr", "add", "10.9.0.2/24", "dev", "ctr0"],
            vec!["-n", &c.name, "link", "set", "ctr0", "up"],
            vec!["-n", &c.name, "link", "set", "ctr1", "up"],
            vec!["-n", &c.name, "route", "add", "10.8.0.0/16", "via", "10.9.0.1", "dev", "ctr0"],
        ] {
            ip_ok(&args);
        }
        c
    }

    /// `ip -n NS addr`, `ip -n NS route`, `ip -n NS link` (no counters:
    /// `-s` is not given), the sysctl the scenario sets and `ip -n NS -6
    /// route`.
    fn state(&self) -> [String; 5] {
        let out = |args: &[&str]| {
            let o = Command::new("ip").args(["-n", &self.name]).args(args).output().unwrap();
            assert!(o.status.success());
            // IPv6 duplicate address detection of the veth ends' link-local
            // addresses ends a second or two after set-up: its flag is
            // the kernel's progress, not a change.
            String::from_utf8(o.stdout).unwrap().replace(" tentative ", " ")
        };
        [out(&["addr"]), out(&["route"]), out(&["link"]), self.ttl(), out(&["-6", "route"])]
    }

    fn ttl(&self) -> String {
        let o = Command::new("ip")
            .args(["netns", "exec", &self.name, "cat", "/proc/sys/net/ipv4/ip_default_ttl"])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    }

    /// `ip netns pids NS`: the processes in the namespace.
    fn pids(&self) -> Vec<String> {
        let o = Command::new("ip").args(["netns", "pids", &self.name]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).split_whitespace().map(String::from).collect()
    }

    fn has_squall_device(&self) -> bool {
        Command::new("ip")
            .args(["-n", &self.name, "link", "show", "squall0"])
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "delete", &self.name]).status();
    }
}

fn ip_ok(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

/// A 10 Mbit/s, 10 ms each way link between `fixed` (a namespace squall
/// makes) and `mobile`, the existing namespace `netns`, whose default TTL
/// the scenario sets to 77 (a sysctl to put back).
fn joined_scenario(dir: &Path, netns: &str) -> PathBuf {
    joined_scenario_v6(dir, netns, false)
}

/// [`joined_scenario`], with `ipv6` dual-stack: fixed fd00:77::1, mobile
/// fd00:77:0:1::1.
fn joined_scenario_v6(dir: &Path, netns: &str, ipv6: bool) -> PathBuf {
    let path = dir.join("joined.toml");
    let (fixed6, mobile6) =
        if ipv6 { ("address6 = \"fd00:77::1\"\n", "address6 = \"fd00:77:0:1::1\"\n") } else { ("", "") };
    std::fs::write(
        &path,
        format!(
            r#"name = "joined"
duration = "20 s"

[[hosts]]
name = "fixed"
address = "10.0.0.1"
{fixed6}
[[hosts]]
name = "mobile"
address = "10.0.1.1"
{mobile6}netns = "{netns}"
sysctl = {{ "net.ipv4.ip_default_ttl" = "77" }}

[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "down"
rate = "10 Mbit/s"
delay = "10 ms"
queue = {{ packets = 100 }}
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "10 ms"
queue = {{ packets = 100 }}
"#
        ),
    )
    .unwrap();
    path
}

/// Starts `squall emu SCENARIO` with a long workload (`mobile@0s=` +
/// `workload`) in the background and waits until its device is in the
/// container.
fn start_joined(scenario: &Path, out: &Path, container: &Container, workload: &str) -> std::process::Child {
    let mut child = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario)
        .args(["--out", out.to_str().unwrap(), "--no-pcap", "--no-events", "--run"])
        .arg(format!("mobile@0s={workload}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..300 {
        if container.has_squall_device() && container.ttl() == "77" {
            return child;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the run did not join namespace {}", container.name);
}

#[test]
fn an_existing_namespace_joins_as_a_host_and_is_left_as_it_was() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let container = Container::new();
    let before = container.state();
    assert_eq!(before[3], "64", "Linux's default TTL in a new namespace (ip-sysctl.rst)");
    let dir = tempfile::tempdir().unwrap();
    let joined = joined_scenario(dir.path(), &container.name);

    // Traffic: ping and a bulk transfer between the two hosts.
    let out = dir.path().join("normal");
    let o = Command::new(SQUALL)
        .arg("emu")
        .arg(&joined)
        .args(["--out", out.to_str().unwrap(), "--no-pcap", "--no-events"])
        .arg("--serve")
        .arg(format!("mobile@0s={SQUALL} tool bulk --server"))
        .args(["--run", "fixed@0s=ping -n -c 3 -i 0.2 10.0.1.1", "--run"])
        .arg(format!("fixed@0.8s={SQUALL} tool bulk --client 10.0.1.1 --bytes '1 MB'"))
        .output()
        .unwrap();
    assert!(o.status.success(), "the run with a joined host failed: {}", String::from_utf8_lossy(&o.stderr));
    let mut ping = None;
    let mut bulk = None;
    for entry in std::fs::read_dir(out.join("rep-0/workloads")).unwrap().flatten() {
        if !entry.path().is_file() {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        if text.contains("rtt min/avg/max") {
            ping = Some(text);
        } else if let Ok(v) = serde_json::from_str::<serde_json::Value>(text.trim())
            && v.get("goodput_bps").is_some()
        {
            bulk = Some(v);
        }
    }
    let ping = ping.expect("ping's output");
    assert!(ping.contains("3 received"), "{ping}");
    // rtt min/avg/max/mdev = a/b/c/d ms: at least 2 x 10 ms of propagation.
    let min: f64 = ping.split("= ").nth(1).unwrap().split('/').next().unwrap().parse().unwrap();
    assert!(min >= 20.0, "ping's minimum RTT {min} ms is below the path's 20 ms: {ping}");
    let bulk = bulk.expect("the bulk client's JSON line");
    let goodput = bulk["goodput_bps"].as_f64().unwrap();
    // Payload over a 10 Mbit/s link: below the line rate, and a clean
    // link with a queue above the BDP (25 packets) fills most of it.
    assert!(goodput < 10e6 && goodput > 5e6, "goodput {goodput} bit/s over a 10 Mbit/s link");
    assert_eq!(container.state(), before, "after a normal end");

    // SIGTERM: the normal teardown.
    let mut run = start_joined(&joined, &dir.path().join("term"), &container, "sleep 30");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    run.wait().unwrap();
    assert_eq!(container.state(), before, "after SIGTERM");

    // SIGKILL: the TUN device goes with the process, the sysctl stays
    // until the next start puts it back from the run's record; so does a
    // workload's orphan (the shell's background job, which
    // PR_SET_PDEATHSIG does not reach) until the next start kills it.
    let orphan = "sleep 61.75";
    let mut run = start_joined(&joined, &dir.path().join("kill"), &container, &format!("{orphan} & sleep 30"));
    let killed = run.id();
    for _ in 0..300 {
        if !pids_running(orphan).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    assert_eq!(container.ttl(), "77", "a SIGKILLed run leaves its sysctl");
    let orphans = pids_running(orphan);
    assert_eq!(orphans.len(), 1, "the workload's orphan outlives the killed run until the next start");
    // The container runs nothing of its own: what is left in it is the
    // workload's (the orphan, and the shell's `sleep 30` if the shell
    // forked it rather than exec'd it).
    let left = container.pids();
    assert!(left.contains(&orphans[0]), "the orphan {} is in the joined namespace: {left:?}", orphans[0]);
    let o = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().join("next").to_str().unwrap(), "--duration", "0.2 s", "--no-pcap", "--no-events"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("changes in namespace {} (host `mobile` of run {killed})", container.name)),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("workload processes ({}) on host `mobile` of run {killed}", left.len())),
        "{stderr}"
    );
    assert!(container.pids().is_empty(), "processes of the killed run left in the joined namespace");
    assert_eq!(container.state(), before, "after SIGKILL and the next start");

    // Held by another run: refused, naming the holder.
    let mut holder = start_joined(&joined, &dir.path().join("holder"), &container, "sleep 30");
    let o = Command::new(SQUALL)
        .arg("emu")
        .arg(&joined)
        .args(["--out", dir.path().join("second").to_str().unwrap(), "--duration", "0.2 s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains(&format!(
            "host `mobile`: namespace {}: squall run {} holds it (one run per namespace)",
            container.name,
            holder.id()
        )),
        "{stderr}"
    );
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(holder.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    holder.wait().unwrap();
    assert_eq!(container.state(), before, "after the holder's end");

    // Clashes: the host's address already there, a route to the peer.
    let refused = |what: &str| {
        let o = Command::new(SQUALL)
            .arg("emu")
            .arg(&joined)
            .args(["--out", dir.path().join("clash").to_str().unwrap(), "--force", "--duration", "0.2 s"])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{what}: the run was not refused");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    ip_ok(&["-n", &container.name, "addr", "add", "10.0.1.1/32", "dev", "ctr0"]);
    let clashed = container.state();
    let stderr = refused("address");
    assert!(
        stderr.contains(&format!(
            "host `mobile`: namespace {}: address 10.0.1.1 (the host's) is on its interface ctr0 already",
            container.name
        )),
        "{stderr}"
    );
    assert_eq!(container.state(), clashed, "a refused run changes nothing");
    ip_ok(&["-n", &container.name, "addr", "del", "10.0.1.1/32", "dev", "ctr0"]);
    ip_ok(&["-n", &container.name, "route", "add", "10.0.0.1/32", "via", "10.9.0.1", "dev", "ctr0"]);
    let stderr = refused("route");
    assert!(
        stderr.contains(&format!(
            "host `mobile`: namespace {}: it has a route to 10.0.0.1/32 (a peer's address) already, through ctr0",
            container.name
        )),
        "{stderr}"
    );
    ip_ok(&["-n", &container.name, "route", "del", "10.0.0.1/32"]);
    assert_eq!(container.state(), before);
}

/// A joined namespace with an IPv6 host (issue 34): squall sets its
/// address6 and /128 route on its device there, ping -6 and a bulk
/// transfer to that address cross the path (an IPv6 segment carries
/// 1500 − 40 − 20 − 12 = 1428 bytes, RFC 8200 §3, RFC 7323 §3), and after a
/// normal end and after SIGKILL followed by a next start the namespace's
/// addresses, routes of both families, links and sysctl are as before. An
/// IPv6 address or /128 route of the host already there is refused by
/// name.
#[test]
fn an_existing_namespace_carries_ipv6_and_is_left_as_it_was() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let container = Container::new();
    let before = container.state();
    let dir = tempfile::tempdir().unwrap();
    let joined = joined_scenario_v6(dir.path(), &container.name, true);
    let out = dir.path().join("normal");
    let o = Command::new(SQUALL)
        .arg("emu")
        .arg(&joined)
        .args(["--out", out.to_str().unwrap(), "--no-events"])
        .arg("--serve")
        .arg(format!("mobile@0s={SQUALL} tool bulk --server"))
        .args(["--run", "fixed@0s=ping -6 -n -c 3 -i 0.2 fd00:77:0:1::1", "--run"])
        .arg(format!("fixed@0.8s={SQUALL} tool bulk --client fd00:77:0:1::1 --bytes '1 MB'"))
        .output()
        .unwrap();
    assert!(o.status.success(), "the run with a joined IPv6 host failed: {}", String::from_utf8_lossy(&o.stderr));
    let mut ping = None;
    let mut bulk = None;
    for entry in std::fs::read_dir(out.join("rep-0/workloads")).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        if text.contains("rtt min/avg/max") {
            ping = Some(text);
        } else if let Ok(v) = serde_json::from_str::<serde_json::Value>(text.trim())
            && v.get("goodput_bps").is_some()
        {
            bulk = Some(v);
        }
    }
    let ping = ping.expect("ping -6's output");
    assert!(ping.contains("3 received"), "{ping}");
    let min: f64 = ping.split("= ").nth(1).unwrap().split('/').next().unwrap().parse().unwrap();
    assert!(min >= 20.0, "ping -6's minimum RTT {min} ms is below the path's 20 ms: {ping}");
    let bulk = bulk.expect("the bulk client's JSON line");
    assert_eq!(bulk["final_info"]["snd_mss"], 1428, "not over IPv6: {bulk}");
    assert_eq!(bulk["bytes"], 1_000_000, "{bulk}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flows: Vec<&str> =
        summary["runs"][0]["flows"].as_array().unwrap().iter().filter_map(|f| f["flow"].as_str()).collect();
    assert!(flows.iter().any(|f| f.starts_with("tcp:[fd00:77::1]:")), "{flows:?}");
    assert_eq!(container.state(), before, "after a normal end");

    // SIGKILL, then the next start.
    let mut run = start_joined(&joined, &dir.path().join("kill"), &container, "sleep 30");
    let killed = run.id();
    let o = Command::new("ip").args(["-n", &container.name, "-6", "addr", "show", "dev", "squall0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("fd00:77:0:1::1/128"), "no address6 on squall0");
    run.kill().unwrap();
    run.wait().unwrap();
    let o = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario("tcp-10mbit.toml"))
        .args(["--out", dir.path().join("next").to_str().unwrap(), "--duration", "0.2 s", "--no-pcap", "--no-events"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("changes in namespace {} (host `mobile` of run {killed})", container.name)),
        "{stderr}"
    );
    assert_eq!(container.state(), before, "after SIGKILL and the next start");

    // Clashes of the IPv6 kind.
    let refused = || {
        let o = Command::new(SQUALL)
            .arg("emu")
            .arg(&joined)
            .args(["--out", dir.path().join("clash").to_str().unwrap(), "--force", "--duration", "0.2 s"])
            .output()
            .unwrap();
        assert!(!o.status.success(), "the run was not refused");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    ip_ok(&["-n", &container.name, "-6", "addr", "add", "fd00:77:0:1::1/128", "dev", "ctr0", "nodad"]);
    let stderr = refused();
    assert!(
        stderr.contains(&format!(
            "host `mobile`: namespace {}: address fd00:77:0:1::1 (the host's) is on its interface ctr0 already",
            container.name
        )),
        "{stderr}"
    );
    ip_ok(&["-n", &container.name, "-6", "addr", "del", "fd00:77:0:1::1/128", "dev", "ctr0"]);
    ip_ok(&["-n", &container.name, "-6", "route", "add", "fd00:77::1/128", "dev", "ctr0"]);
    let stderr = refused();
    assert!(
        stderr.contains(&format!(
            "host `mobile`: namespace {}: it has a route to fd00:77::1/128 (a peer's address) already, through ctr0",
            container.name
        )),
        "{stderr}"
    );
    ip_ok(&["-n", &container.name, "-6", "route", "del", "fd00:77::1/128"]);
    assert_eq!(container.state(), before);
}

#[test]
fn the_simulator_runs_a_host_in_an_existing_namespace_as_any_other() {
    // No root needed: in virtual time the key means nothing, so the
    // summary is the one of the same scenario without it.
    let dir = tempfile::tempdir().unwrap();
    let with = joined_scenario(dir.path(), "no-such-namespace");
    let text = std::fs::read_to_string(&with).unwrap().replace("duration = \"20 s\"", "duration = \"3 s\"")
        + "\n[[workload.tcp]]\nname = \"t\"\nfrom = \"fixed\"\nto = \"mobile\"\napp = { bulk = \"100 KB\" }\n";
    std::fs::write(&with, &text).unwrap();
    let without = dir.path().join("without.toml");
    std::fs::write(&without, text.replace("netns = \"no-such-namespace\"\n", "")).unwrap();
    let flows = |scenario: &Path, out: &str| {
        let o = Command::new(SQUALL)
            .arg("sim")
            .arg(scenario)
            .args(["--out", dir.path().join(out).to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let (a, b) = (flows(&with, "with"), flows(&without, "without"));
    assert!(a.contains("\"t:c2s\""), "the flow is reported: {a}");
    assert_eq!(a, b);
}
