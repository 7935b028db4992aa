//! Outside hosts (issue 11): a scenario host with `outside_interface`
//! stands for the world beyond the scenario. The test plays that world
//! with a namespace squall did not create ("the remote Internet host"),
//! joined to the root namespace by a veth whose root-side end is the
//! outside interface; it runs an unmodified HTTP server (python3 -m
//! http.server) that curl in a scenario host fetches from, across the
//! scenario's path. Then what squall changes in the root namespace (a TUN
//! device, routes, an nft table, net.ipv4.ip_forward) must be gone after
//! SIGKILL (at the next start), after Ctrl-C and SIGTERM with two runs at
//! once, and never made when the interface is missing or down.
//!
//! The same over IPv6 (issue 34): the remote host also has an IPv6 address
//! on its veth, a scenario host an `address6`, and squall adds a /128
//! route, an `ip6` table (NAT66) and IPv6 forwarding, all undone as the
//! IPv4 ones are.
//!
//! Needs root, nftables and curl; under CI=true a namespace that cannot be
//! made is a failure, not a skip. The tests run one at a time: they share
//! the machine's forwarding setting, and the first one measures time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
use common::{SQUALL, ip};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const IP_FORWARD: &str = "/proc/sys/net/ipv4/ip_forward";
const SYSCTL_STATE: &str = "/run/squall/uplink-sysctl.json";

fn skip_or_fail(what: &str) {
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {what}");
    eprintln!("skipping: {what} (need root, iproute2, nftables, curl and /dev/net/tun)");
}

/// The remote Internet host: namespace `sqt-<pid>-<tag>` with 198.18.<tag>.2
/// on its `eth0`, the far side of the veth `sqt<tag>r<pid>` that has
/// 198.18.<tag>.1 in the root namespace (the outside interface).
struct Remote {
    ns: String,
    side: String,
    address: String,
    /// With [`Remote::with_ipv6`]: fd7e:<tag>::2 (fd7e:<tag>::1 on the
    /// root side).
    address6: String,
}

impl Remote {
    fn new(tag: u8) -> Option<Remote> {
        let pid = std::process::id();
        let tools =
            ["nft", "curl"].iter().all(|t| Command::new(t).arg("--version").output().is_ok_and(|o| o.status.success()));
        let remote = Remote {
            ns: format!("sqt-{pid}-{tag}"),
            side: format!("sqt{tag}r{}", pid % 1_000_000),
            address: format!("198.18.{tag}.2"),
            address6: format!("fd7e:{tag}::2"),
        };
        let ok = tools
            && Path::new("/dev/net/tun").exists()
            && ip(&["netns", "add", &remote.ns])
            && ip(&["link", "add", &remote.side, "type", "veth", "peer", "name", "eth0", "netns", &remote.ns])
            && ip(&["addr", "add", &format!("198.18.{tag}.1/24"), "dev", &remote.side])
            && ip(&["link", "set", &remote.side, "up"])
            && ip(&["-n", &remote.ns, "link", "set", "lo", "up"])
            && ip(&["-n", &remote.ns, "addr", "add", &format!("{}/24", remote.address), "dev", "eth0"])
            && ip(&["-n", &remote.ns, "link", "set", "eth0", "up"]);
        if !ok {
            skip_or_fail("the remote host's namespace and veth cannot be made");
            return None;
        }
        Some(remote)
    }

    /// Gives both ends of the veth an IPv6 address (a /64 of unique local
    /// addresses, RFC 4193), without duplicate address detection.
    fn with_ipv6(self) -> Option<Self> {
        let root = self.address6.replace("::2", "::1");
        let ok = ip(&["-6", "addr", "add", &format!("{root}/64"), "dev", &self.side, "nodad"])
            && ip(&["-n", &self.ns, "-6", "addr", "add", &format!("{}/64", self.address6), "dev", "eth0", "nodad"]);
        if !ok {
            skip_or_fail("the remote host's IPv6 addresses cannot be set");
            return None;
        }
        Some(self)
    }

    fn spawn(&self, cmd: &[&str], dir: &Path) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.ns])
            .args(cmd)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// A process killed and reaped when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        // Kills what still runs inside; the veth goes with the namespace.
        let out = Command::new("ip").args(["netns", "pids", &self.ns]).output();
        if let Ok(out) = out {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
        // The veth goes with the namespace, but only once the kernel's
        // namespace clean-up has run (a work queue, after `ip netns
        // delete` returns): the next test's snapshot of the root
        // namespace could still see it (the CI of 5c9e822 did, in the
        // IPv6 curl test: `sqt61r…` before, gone after). Deleting it
        // first takes both ends at once.
        ip(&["link", "delete", &self.side]);
        ip(&["netns", "delete", &self.ns]);
    }
}

/// A scenario: `phone` at 10.77.<net>.1, joined to the outside host
/// `internet` (10.77.<net>.254 on `interface`) by one link with `delay`
/// each way and no rate limit; `duration` long.
fn scenario(dir: &Path, net: u8, interface: &str, delay: &str, duration: &str) -> PathBuf {
    scenario_v6(dir, net, interface, delay, duration, false)
}

/// [`scenario`], and with `ipv6` the phone has fd77:<net>::1 too.
fn scenario_v6(dir: &Path, net: u8, interface: &str, delay: &str, duration: &str, ipv6: bool) -> PathBuf {
    let address6 = if ipv6 { format!("address6 = \"fd77:{net}::1\"\n") } else { String::new() };
    let text = format!(
        r#"
name = "outside"
duration = "{duration}"
[[hosts]]
name = "phone"
address = "10.77.{net}.1"
{address6}[[hosts]]
name = "internet"
address = "10.77.{net}.254"
outside_interface = "{interface}"
[[links]]
between = ["internet", "phone"]
[[links.downlink]]
name = "down"
delay = "{delay}"
[[links.uplink]]
name = "up"
delay = "{delay}"
"#
    );
    let path = dir.join(format!("outside-{net}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// What squall may change in the root namespace: its links, the nft
/// ruleset, forwarding (IPv4, and IPv6's keys on every interface but
/// squall's own), the IPv6 routes and the saved-sysctl file.
#[derive(Debug, PartialEq, Eq)]
struct RootState {
    squall_links: Vec<String>,
    nft: String,
    ip_forward: String,
    ipv6_keys: Vec<String>,
    ipv6_routes: String,
    sysctl_state: bool,
}

/// `DEVICE/KEY = VALUE` for the IPv6 keys forwarding touches, on every
/// interface but squall's devices (which go with their run).
fn ipv6_keys() -> Vec<String> {
    let mut keys = Vec::new();
    let conf = Path::new("/proc/sys/net/ipv6/conf");
    for entry in std::fs::read_dir(conf).unwrap().flatten() {
        let dev = entry.file_name().to_string_lossy().into_owned();
        if dev.starts_with("squall-") {
            continue;
        }
        for key in ["forwarding", "force_forwarding", "accept_ra"] {
            if let Ok(v) = std::fs::read_to_string(entry.path().join(key)) {
                keys.push(format!("{dev}/{key} = {}", v.trim()));
            }
        }
    }
    keys.sort();
    keys
}

/// `ip -6 route`, without the lifetimes of routes learnt from router
/// advertisements (they count down).
fn ipv6_routes() -> String {
    let o = Command::new("ip").args(["-6", "route", "show"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = String::new();
    for line in text.lines() {
        let mut words = line.split_whitespace().peekable();
        while let Some(w) = words.next() {
            if w == "expires" {
                words.next();
                continue;
            }
            out.push_str(w);
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

fn root_state() -> RootState {
    let mut squall_links: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("squall-"))
        .collect();
    squall_links.sort();
    let nft = Command::new("nft").args(["list", "ruleset"]).output().unwrap();
    RootState {
        squall_links,
        nft: String::from_utf8_lossy(&nft.stdout).into_owned(),
        ip_forward: std::fs::read_to_string(IP_FORWARD).unwrap().trim().to_string(),
        ipv6_keys: ipv6_keys(),
        ipv6_routes: ipv6_routes(),
        sysctl_state: Path::new(SYSCTL_STATE).exists(),
    }
}

fn table_exists(pid: u32) -> bool {
    table_of_family_exists("ip", pid)
}

fn table_of_family_exists(family: &str, pid: u32) -> bool {
    Command::new("nft").args(["list", "table", family, &format!("squall-{pid}")]).output().unwrap().status.success()
}

fn emu(scenario: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(SQUALL);
    c.arg("emu").arg(scenario).args(["--out", out.to_str().unwrap()]).args(extra);
    c
}

/// Starts `squall emu` on `scenario` in the background and waits until
/// its outside host is set up (its root TUN device and nft table exist,
/// and it holds forwarding, the last step).
fn start(scenario: &Path, out: &Path) -> Child {
    let mut child = emu(scenario, out, &[]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let link = PathBuf::from(format!("/sys/class/net/squall-{}", child.id()));
    let deadline = Instant::now() + Duration::from_secs(15);
    let holds = |pid: u32| std::fs::read_to_string(SYSCTL_STATE).is_ok_and(|s| s.contains(&pid.to_string()));
    while !(link.exists() && table_exists(child.id()) && holds(child.id())) {
        if let Ok(Some(status)) = child.try_wait() {
            let out = child.wait_with_output().unwrap();
            panic!("squall emu ended early ({status}): {}", String::from_utf8_lossy(&out.stderr));
        }
        assert!(Instant::now() < deadline, "squall emu did not set up its outside host in 15 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn wait(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn curl_reaches_a_server_beyond_the_scenario_across_the_path() {
    curl_across_the_path(false);
}

/// The same over IPv6: the server listens on the remote's IPv6 address
/// only, the phone has an address6, curl and ping go over IPv6 (NAT66 out
/// of the outside interface), with the same bounds.
#[test]
fn curl_reaches_an_ipv6_server_beyond_the_scenario_across_the_path() {
    curl_across_the_path(true);
}

fn curl_across_the_path(ipv6: bool) {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tag = if ipv6 { 68 } else { 61 };
    let Some(remote) = Remote::new(tag) else { return };
    let Some(remote) = (if ipv6 { remote.with_ipv6() } else { Some(remote) }) else { return };
    let before = root_state();
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("hello.txt"), "hello from beyond the scenario\n").unwrap();
    let (server, host) = if ipv6 {
        (remote.address6.clone(), format!("[{}]", remote.address6))
    } else {
        (remote.address.clone(), remote.address.clone())
    };
    let _server = Reaped(remote.spawn(&["python3", "-m", "http.server", "8080", "--bind", &server], &site));
    let url = format!("http://{host}:8080/hello.txt");
    // The server is up when the root namespace (next to it) can fetch.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !Command::new("curl").args(["-sf", "-o", "/dev/null", &url]).status().unwrap().success() {
        assert!(Instant::now() < deadline, "the remote HTTP server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The same fetch from the root namespace, next to the server, with no
    // squall: the slowest of three (connect, total), s.
    let plain_fetch = || -> (f64, f64) {
        let o = Command::new("curl")
            .args(["-sf", "-o", "/dev/null", "-w", "%{time_connect} %{time_total}", &url])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&o.stdout).into_owned();
        let v: Vec<f64> = said.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert!(o.status.success() && v.len() == 2, "plain curl: {said:?}");
        (v[0], v[1])
    };
    let slowest_plain = || (0..3).map(|_| plain_fetch()).fold((0.0f64, 0.0f64), |m, (c, t)| (m.0.max(c), m.1.max(t)));
    let plain_before = slowest_plain();
    let scenario = scenario_v6(dir.path(), tag, &remote.side, "50 ms", "30 s", ipv6);
    let out_dir = dir.path().join("out");
    // Five pings across the path, then three fetches, each on a new
    // connection.
    let fetch = format!(
        "ping -n -q -c 5 -i 0.2 {server} > ping.txt || exit 1; for i in 1 2 3; do curl -sf -o body.txt -w '%{{time_connect}} %{{time_total}}\\n' {url} || exit 1; done",
    );
    // An address this machine routes out of another interface (TEST-NET-3
    // or IPv6's documentation prefix, RFC 3849, by the default route):
    // dropped and counted, never sent.
    let (elsewhere_address, elsewhere) = if ipv6 {
        ("2001:db8::9", "curl -s -m 1 http://[2001:db8::9]/; true")
    } else {
        ("203.0.113.9", "curl -s -m 1 http://203.0.113.9/; true")
    };
    let (out, late) = common::timer_latency_during(|| {
        emu(
            &scenario,
            &out_dir,
            &["--run", &format!("phone@0.2s={fetch}"), "--run", &format!("phone@0.1s={elsewhere}")],
        )
        .output()
        .unwrap()
    });
    // The same three plain fetches again after the run: the server's and
    // curl's own time on a machine whose load changes while the suite
    // runs (the full suite twice saw a median fetch 0.1-0.2 ms above a
    // bound made from the fetches before the run alone).
    let plain_after = slowest_plain();
    let plain = (plain_before.0.max(plain_after.0), plain_before.1.max(plain_after.1));
    eprintln!("curl with no squall: slowest time_connect {} s, time_total {} s", plain.0, plain.1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "squall emu failed: {stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap();
    let outside = &summary["emu"]["outside"];
    assert_eq!(outside["host"], "internet");
    assert_eq!(outside["interface"], remote.side.as_str());
    if ip(&["route", "get", elsewhere_address]) {
        assert!(stderr.contains("would have left through another interface than"), "{stderr}");
        assert!(f64_of(&outside["leaked"]) >= 1.0, "{outside}");
    }
    let workloads = out_dir.join("rep-0/workloads");
    let stdout = std::fs::read_to_string(workloads.join("0-phone.stdout")).unwrap();
    let body = std::fs::read_to_string(workloads.join("body.txt")).unwrap();
    assert_eq!(body, "hello from beyond the scenario\n");
    let mut connect = Vec::new();
    let mut total = Vec::new();
    for line in stdout.lines() {
        let v: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
        connect.push(v[0]);
        total.push(v[1]);
    }
    eprintln!("curl through the outside host: time_connect {connect:?} s, time_total {total:?} s");
    assert_eq!(connect.len(), 3, "{stdout:?}");
    connect.sort_by(f64::total_cmp);
    total.sort_by(f64::total_cmp);
    // ping's round trip across the same path in the same run: 100 ms
    // (2 × 50 ms) and what squall's data plane and the kernel add to two
    // crossings (issue 34: about 0.1 ms per delivery on this kind of VM,
    // beyond the departure error squall records). A delay applied twice
    // would make it 200 ms.
    let ping = std::fs::read_to_string(workloads.join("ping.txt")).unwrap();
    let rtt: Vec<f64> = ping
        .lines()
        .find_map(|l| l.strip_prefix("rtt min/avg/max/mdev = "))
        .unwrap_or_else(|| panic!("no rtt line in ping's output: {ping}"))
        .trim_end_matches(" ms")
        .split('/')
        .map(|x| x.parse::<f64>().unwrap() / 1e3)
        .collect();
    let (ping_min, ping_avg, ping_max) = (rtt[0], rtt[1], rtt[2]);
    eprintln!("ping through the outside host: min {ping_min} s, avg {ping_avg} s");
    assert!((0.0999..0.150).contains(&ping_min) && ping_avg < 0.150, "{ping}");
    // curl's handshake is one such round trip, its fetch two (the
    // request and its answer): never less than 2 × 50 ms per round trip
    // (curl's clock in µs). Above it, the median may carry ping's average
    // round trip, what the same fetch took from the root namespace with
    // no squall (the slowest of three before the run and three after), and one
    // late delivery per crossing of the 50 ms stage (two for the
    // handshake, four in all), each the larger of the machine's sleep
    // overshoot p99 measured while the run ran and the worst departure
    // error the emulator itself recorded (summary.json
    // `timing.error_max`). CI once saw the median fetch 0.04 ms above a
    // bound of 200 ms and sleep overshoots alone: that is what ping's
    // round trip now carries.
    let (plain_connect, plain_total) = plain;
    let error_max = f64_of(&summary["timing"]["error_max"]);
    let crossing = late.p99.max(error_max);
    eprintln!("emulator's departure error max {:.3} ms", error_max * 1e3);
    // A round trip of curl's is bounded by the slowest echo ping saw in
    // the same run as well as by its average plus late crossings: CI
    // once saw a fetch above the second bound while every figure it is
    // made of was small (this VM wakes a sleeping process 64-92 us late
    // at the median, cyclictest, and a fetch wakes curl and the server
    // four times more than a ping does); never more than 5 ms above the
    // configured 100 ms, so a wrong delay still fails.
    let round_trip = (ping_avg + 2.0 * crossing).max(ping_max.min(0.105));
    // Beyond the plain fetch's own time, a fetch across the path wakes the
    // server and curl from a 100 ms sleep at each end of each round trip,
    // which the fetch next to the server does not: four wake-ups at the
    // machine's overshoot p99 (the full suite saw time_total 0.16 ms above
    // the bound without them, server and curl 0.7 ms slower than beside it).
    let (connect_max, total_max) = (round_trip + plain_connect, 2.0 * round_trip + plain_total + 4.0 * late.p99);
    assert!(
        (0.0995..=connect_max).contains(&connect[1]),
        "time_connect median {} s, expected 0.100 s to {connect_max:.4} s",
        connect[1]
    );
    assert!(
        (0.199..=total_max).contains(&total[1]),
        "time_total median {} s, expected 0.200 s to {total_max:.4} s",
        total[1]
    );
    // The outside host's device carried both directions (at least a
    // SYN, a request and an ACK per connection each way).
    let internet = &summary["runs"][0]["hosts"]["internet"];
    assert!(f64_of(&internet["received_packets"]) >= 9.0, "{internet}");
    assert!(f64_of(&internet["sent_packets"]) >= 9.0, "{internet}");
    assert_eq!(root_state(), before, "the run left something behind");
}

fn f64_of(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_sigkilled_run_is_cleaned_up_by_the_next_start() {
    sigkilled_run_is_cleaned_up(false);
}

/// The same with an IPv6 host: the `ip6` table, the /128 route and the
/// IPv6 forwarding keys too.
#[test]
fn a_sigkilled_dual_stack_run_is_cleaned_up_by_the_next_start() {
    sigkilled_run_is_cleaned_up(true);
}

fn sigkilled_run_is_cleaned_up(ipv6: bool) {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(remote) = Remote::new(62) else { return };
    let Some(remote) = (if ipv6 { remote.with_ipv6() } else { Some(remote) }) else { return };
    let before = root_state();
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_v6(dir.path(), 62, &remote.side, "10 ms", "60 s", ipv6);
    let mut first = start(&scenario, &dir.path().join("first"));
    let pid = first.id();
    assert_eq!(std::fs::read_to_string(IP_FORWARD).unwrap().trim(), "1");
    assert!(std::fs::read_to_string(SYSCTL_STATE).unwrap().contains(&pid.to_string()));
    if ipv6 {
        assert!(table_of_family_exists("ip6", pid), "no ip6 table");
        assert!(ipv6_routes().contains(&format!("fd77:62::1 dev squall-{pid}")), "{}", ipv6_routes());
        assert_ne!(ipv6_keys(), before.ipv6_keys, "IPv6 forwarding was not switched on");
    } else {
        assert!(!table_of_family_exists("ip6", pid), "an ip6 table for an IPv4-only scenario");
        assert_eq!(ipv6_keys(), before.ipv6_keys, "IPv6 keys changed for an IPv4-only scenario");
    }
    first.kill().unwrap(); // SIGKILL: no teardown
    first.wait().unwrap();
    assert!(table_exists(pid), "the nft table of a SIGKILLed run stays until the next start");
    // The next start (here a run that is refused at once: its interface is
    // missing) sweeps what the dead run left.
    let missing = scenario_with(dir.path(), 63, "sqtnone0");
    let out = emu(&missing, &dir.path().join("second"), &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(!out.status.success());
    assert!(stderr.contains(&format!("removed stale nft table ip squall-{pid}")), "{stderr}");
    assert!(stderr.contains("removed stale sysctl net.ipv4.ip_forward") || before.ip_forward == "1", "{stderr}");
    assert!(!table_exists(pid) && !table_of_family_exists("ip6", pid));
    if ipv6 {
        assert!(stderr.contains(&format!("removed stale nft table ip6 squall-{pid}")), "{stderr}");
    }
    assert_eq!(root_state(), before, "the next start did not restore everything");
}

/// A scenario whose outside interface is `interface`, 1 s long.
fn scenario_with(dir: &Path, net: u8, interface: &str) -> PathBuf {
    scenario(dir, net, interface, "10 ms", "1 s")
}

#[test]
fn two_runs_at_once_then_sigint_and_sigterm_restore_everything() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(remote) = Remote::new(64) else { return };
    let before = root_state();
    let dir = tempfile::tempdir().unwrap();
    // Different addresses: the /32 routes back of two runs must not clash.
    let first = scenario(dir.path(), 64, &remote.side, "10 ms", "60 s");
    let a = start(&first, &dir.path().join("a"));
    let b = start(&scenario(dir.path(), 65, &remote.side, "10 ms", "60 s"), &dir.path().join("b"));
    let (pa, pb) = (a.id(), b.id());
    let state = std::fs::read_to_string(SYSCTL_STATE).unwrap();
    assert!(state.contains(&pa.to_string()) && state.contains(&pb.to_string()), "{state}");
    assert_eq!(std::fs::read_to_string(IP_FORWARD).unwrap().trim(), "1");
    // A third run with the first one's addresses clashes on the routes back.
    let out = emu(&first, &dir.path().join("c"), &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("cannot route 10.77.64.1"), "{stderr}");
    assert!(std::fs::read_to_string(SYSCTL_STATE).unwrap().contains(&pa.to_string()));

    // Ctrl-C (SIGINT) on one, SIGTERM on the other.
    Command::new("kill").args(["-INT", &pa.to_string()]).status().unwrap();
    let out = wait(a);
    assert!(out.status.success(), "SIGINT ends a run normally: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!table_exists(pa) && table_exists(pb));
    assert!(!Path::new(&format!("/sys/class/net/squall-{pa}")).exists());
    assert_eq!(std::fs::read_to_string(IP_FORWARD).unwrap().trim(), "1", "the other run still needs forwarding");
    assert!(!std::fs::read_to_string(SYSCTL_STATE).unwrap().contains(&pa.to_string()));

    Command::new("kill").args(["-TERM", &pb.to_string()]).status().unwrap();
    let out = wait(b);
    assert!(out.status.success());
    assert_eq!(root_state(), before, "two runs left something behind");
}

#[test]
fn a_missing_or_down_interface_is_refused_by_name() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("sqtnone{}", pid % 1_000_000);
    // A veth pair is down until set up.
    let down = format!("sqtdown{}", pid % 1_000_000);
    let peer = format!("sqtdpeer{}", pid % 1_000_000);
    if !Path::new("/dev/net/tun").exists() || !ip(&["link", "add", &down, "type", "veth", "peer", "name", &peer]) {
        return skip_or_fail("a veth pair cannot be made");
    }
    let before = root_state();
    for (iface, expected) in [(&missing, "no such interface"), (&down, "is down")] {
        // One --out for both refusals: the first leaves its scenario.toml.
        let out = emu(&scenario_with(dir.path(), 66, iface), &dir.path().join("out"), &["--force"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{stderr}");
        assert!(!out.status.success());
        assert!(stderr.contains(&format!("outside interface `{iface}`")), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(stderr.contains("`internet`"), "{stderr}");
    }
    let after = root_state();
    ip(&["link", "delete", &down]);
    assert_eq!(after, before, "a refused run changed something");
}

#[test]
fn sim_compare_and_run_refuse_an_outside_host() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_with(dir.path(), 67, "eth0");
    for cmd in ["sim", "compare"] {
        let out = Command::new(SQUALL)
            .arg(cmd)
            .arg(&scenario)
            .args(["--out", dir.path().join(cmd).to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "squall {cmd} ran an outside host");
        assert!(stderr.contains("host `internet` (hosts[1]) is outside"), "{cmd}: {stderr}");
        assert!(stderr.contains("squall emu"), "{cmd}: {stderr}");
    }
    // An experiment's simulated set too (sets are simulated by default).
    let experiment = dir.path().join("experiment.toml");
    std::fs::write(&experiment, "name = \"x\"\n[[sets]]\nname = \"a\"\nscenario = \"outside-67.toml\"\n").unwrap();
    let out = Command::new(SQUALL)
        .args(["run", experiment.to_str().unwrap(), "--out", dir.path().join("run").to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "squall run simulated an outside host");
    assert!(stderr.contains("set `a`") && stderr.contains("host `internet` (hosts[1]) is outside"), "{stderr}");
}
