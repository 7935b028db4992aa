//! IPv6 in the simulator (issue 34): flows between dual-stack hosts take
//! the family the scenario gives, their packets carry a 40-byte IPv6
//! header (RFC 8200 §3), and a TCP flow's goodput over IPv6 differs from
//! its goodput over IPv4 by the header bytes alone, as computed by hand.

use squall_scenario::Scenario;
use squall_sim::{BUCKET_NS, RunOptions, RunResult, run_bounded};

/// Two dual-stack hosts a (10.0.0.1, fd00::1) and b (10.0.1.1,
/// fd00:0:0:1::1): 10 Mbit/s a → b with 20 ms and a queue no window
/// fills, 100 Mbit/s back; one TCP flow a → b with `flow` keys and a
/// 200 KB window (four times the path's 50 KB bandwidth-delay product:
/// the link is busy from the end of slow start on, and never drops).
fn dual_stack(flow: &str) -> Scenario {
    let text = format!(
        r#"
name = "ipv6"
duration = "20 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
address6 = "fd00::1"
[[hosts]]
name = "b"
address = "10.0.1.1"
address6 = "fd00:0:0:1::1"
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "down"
rate = "10 Mbit/s"
delay = "20 ms"
queue = {{ packets = 1000 }}
[[links.uplink]]
name = "up"
rate = "100 Mbit/s"
delay = "20 ms"
[[workload.tcp]]
name = "f"
from = "a"
to = "b"
rwnd = "200 KB"
{flow}
"#
    );
    squall_scenario::parse("ipv6.toml", &text, std::path::Path::new(".")).expect("test scenario loads")
}

fn run(s: &Scenario) -> RunResult {
    run_bounded(s, 1, RunOptions::default(), 50_000_000).expect("run succeeds")
}

/// Goodput from 5 s to 15 s (the link busy throughout), bit/s.
fn steady_goodput(r: &RunResult) -> f64 {
    let t = &r.tcp_flows[0];
    assert_eq!(t.sender.retransmitted_segments, 0, "no loss: {t:?}");
    let (first, end) = (5_000_000_000 / BUCKET_NS, 15_000_000_000 / BUCKET_NS);
    t.delivered.bytes_in_buckets(first, end) as f64 * 8.0 / 10.0
}

/// Same MSS over both versions (1000 B, timestamps on: 988 B of data a
/// segment): a data packet is 988 + 12 + 20 + 20 = 1040 B over IPv4 and
/// 1060 B over IPv6, so the busy 10 Mbit/s link delivers 10⁷ · 988/1040 =
/// 9.5 Mbit/s and 10⁷ · 988/1060 = 9.3208 Mbit/s of data, a ratio of
/// 1040/1060. The MSS of a 1500-byte MTU (1460 B over IPv4, 1440 B over
/// IPv6: RFC 9293 §3.7.1) fills 1500-byte packets either way: 10⁷ ·
/// 1448/1500 = 9.6533 Mbit/s and 10⁷ · 1428/1500 = 9.52 Mbit/s.
#[test]
fn ipv6_goodput_differs_from_ipv4_by_the_header_bytes() {
    let cases = [
        ("mss = \"1000 B\"", 1e7 * 988.0 / 1040.0, 1e7 * 988.0 / 1060.0),
        ("", 1e7 * 1448.0 / 1500.0, 1e7 * 1428.0 / 1500.0),
    ];
    let bulk = "app = { bulk_for = \"20 s\" }";
    for (mss, want_v4, want_v6) in cases {
        let v4 = steady_goodput(&run(&dual_stack(&format!("{bulk}\nip_version = 4\n{mss}"))));
        // No ip_version: both ends have IPv6 addresses, so IPv6.
        let v6 = steady_goodput(&run(&dual_stack(&format!("{bulk}\n{mss}"))));
        for (got, want, what) in [(v4, want_v4, "IPv4"), (v6, want_v6, "IPv6")] {
            assert!((got / want - 1.0).abs() < 0.002, "{mss:?} {what}: {got} bit/s, expected {want}");
        }
        let ratio = v6 / v4;
        assert!((ratio / (want_v6 / want_v4) - 1.0).abs() < 0.001, "{mss:?}: ratio {ratio}");
    }
}

/// The flows' keys hold the family's addresses, and a packet's size its
/// header: the SYN of an IPv6 flow is 20 bytes larger than an IPv4 one's.
#[test]
fn flows_take_the_family_the_scenario_gives() {
    // One MSS for both, so that they send the same segments.
    let r4 = run(&dual_stack("ip_version = 4\nmss = \"1000 B\"\napp = { bulk = \"10 KB\" }"));
    let r6 = run(&dual_stack("mss = \"1000 B\"\napp = { bulk = \"10 KB\" }"));
    assert_eq!(r4.flows[0].key.to_string(), "tcp:10.0.0.1:20000>10.0.1.1:5000");
    assert_eq!(r6.flows[0].key.to_string(), "tcp:[fd00::1]:20000>[fd00:0:0:1::1]:5000");
    for r in [&r4, &r6] {
        assert!(r.tcp_flows[0].completed);
        assert_eq!(r.tcp_flows[0].delivered_bytes, 10_000);
    }
    // Same segments, 20 more bytes of header each over IPv6.
    let (b4, b6) = (r4.flows[0].sent_bytes, r6.flows[0].sent_bytes);
    let packets = r4.flows[0].sent_packets;
    assert_eq!(r6.flows[0].sent_packets, packets);
    assert_eq!(b6 - b4, 20 * packets, "sent {b4} B over IPv4, {b6} B over IPv6 in {packets} packets");
}

/// tshark (an independent decoder) reads every packet of an IPv6 TCP
/// flow and an IPv6 UDP flow as IPv6 with no malformed one: version 6,
/// hop limit 64, flow label 0, payload length = size − 40, and the SYN's
/// MSS option 1440 (RFC 8200 §3, RFC 9293 §3.7.1). Skips without tshark,
/// except under CI=true.
#[test]
fn tshark_decodes_the_ipv6_pcaps() {
    let ok =
        std::process::Command::new("tshark").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "tshark is missing and CI=true");
        eprintln!("SKIPPED: tshark not found");
        return;
    }
    let mut s = dual_stack("app = { bulk = \"200 KB\" }");
    s.workload.udp.push(
        toml::from_str("name = \"u\"\nfrom = \"b\"\nto = \"a\"\nsize = \"200 B\"\nrate = \"64 kbit/s\"").unwrap(),
    );
    let options = RunOptions { record_events: false, record_packets: false, record_captures: true };
    let r = run_bounded(&s, 1, options, 50_000_000).unwrap();
    assert!(r.tcp_flows[0].completed);
    let dir = tempfile::tempdir().unwrap();
    let fields = |path: &std::path::Path, filter: &str, fields: &[&str]| -> Vec<String> {
        let mut cmd = std::process::Command::new("tshark");
        cmd.args(["-n", "-r"]).arg(path).args(["-Y", filter, "-T", "fields", "-E", "separator=,"]);
        for f in fields {
            cmd.args(["-e", f]);
        }
        let out = cmd.output().expect("tshark runs");
        assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    };
    for capture in &r.captures {
        let path = dir.path().join(format!("{}.pcap", capture.host));
        capture.write_pcap(std::io::BufWriter::new(std::fs::File::create(&path).unwrap())).unwrap();
        let all = fields(&path, "", &["frame.number"]).len();
        let bad = fields(&path, "_ws.malformed || _ws.expert.severity == error || !ipv6", &["frame.number"]);
        assert!(all > 100 && bad.is_empty(), "{}: {} packets, not IPv6 or malformed: {bad:?}", capture.host, all);
        let v6 = fields(&path, "ipv6", &["ipv6.version", "ipv6.hlim", "ipv6.flow", "ipv6.plen", "frame.len"]);
        assert_eq!(v6.len(), all);
        for row in &v6 {
            let f: Vec<&str> = row.split(',').collect();
            assert_eq!(&f[..3], ["6", "64", "0x000000"], "{row}");
            // Captures hold headers only: the original length is the
            // packet's, the payload length 40 less.
            let (plen, len): (u32, u32) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            assert_eq!(plen + 40, len, "{row}");
        }
        let udp = fields(&path, "udp", &["udp.length", "ipv6.plen"]);
        assert!(udp.iter().all(|r| r == "160,160"), "{}: UDP rows {:?}", capture.host, &udp[..udp.len().min(3)]);
        assert!(!udp.is_empty());
        let syn_mss = fields(&path, "tcp.flags.syn == 1", &["tcp.options.mss_val"]);
        assert!(syn_mss.iter().all(|m| m == "1440") && !syn_mss.is_empty(), "{syn_mss:?}");
    }
}
