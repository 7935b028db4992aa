//! `squall trace record` (from a run and from a capture) and mm-link's
//! `--once` on the one-liner.

use std::borrow::Cow;
use std::path::Path;

mod common;
use common::{SQUALL, events};

fn squall_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(SQUALL).current_dir(dir).args(args).output().unwrap()
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &std::process::Output) -> String {
    assert!(!o.status.success(), "expected a failure: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lines(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| l.parse().unwrap()).collect()
}

/// From a run: the trace holds one line per 1 500-byte departure of the
/// stage, at its ms rounded up, as read from events.csv by this test
/// (validation case 29's scenario: 3 750 departures, all on whole ms);
/// the series form gives the rates of the rate series that made them.
#[test]
fn a_run_becomes_one_opportunity_per_departure() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/validation/29-trace-record.toml");
    ok(&squall_in(dir.path(), &["sim", scenario.to_str().unwrap(), "--no-pcap", "--out", "run"]));
    let said = ok(&squall_in(dir.path(), &["trace", "record", "run", "--stage", "rec", "--out", "rec.down"]));
    assert!(said.contains("3750 departures (5625000 B of IP)"), "{said}");
    let by_hand: Vec<u64> = events(&dir.path().join("run/rep-0/events.csv"), Some("rec"))
        .into_iter()
        .filter(|r| r["event"] == "deliver")
        .map(|r| {
            // Seconds with nine decimals: integer ns, then ms rounded up.
            let (s, ns) = r["time"].split_once('.').unwrap();
            (s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap()).div_ceil(1_000_000)
        })
        .collect();
    assert_eq!(by_hand.len(), 3750);
    assert_eq!(lines(&dir.path().join("rec.down")), by_hand);
    // 12, 6, 3, 12 Mbit/s for 1 s each, then 12: per 1 s interval, 1 000,
    // 500, 250, 1 000 and 1 000 opportunities of 12 032 bit.
    ok(&squall_in(
        dir.path(),
        &[
            "trace",
            "record",
            "run/rep-0/events.csv",
            "--stage",
            "rec",
            "--format",
            "series",
            "--interval",
            "1 s",
            "--out",
            "rec.csv",
        ],
    ));
    let series = std::fs::read_to_string(dir.path().join("rec.csv")).unwrap();
    let rates: Vec<&str> =
        series.lines().filter(|l| !l.starts_with('#')).skip(1).map(|l| l.split(',').nth(1).unwrap()).collect();
    assert_eq!(rates, ["12032000", "6016000", "3008000", "12032000", "12032000", "12032000"], "{series}");
    // Refused, each with what was expected.
    let e = err(&squall_in(dir.path(), &["trace", "record", "run", "--out", "x"]));
    assert!(e.contains("give --stage NAME"), "{e}");
    let e = err(&squall_in(dir.path(), &["trace", "record", "run", "--stage", "nope", "--out", "x"]));
    assert!(e.contains("stage `nope` delivered no packet; stages with events: rec, wire"), "{e}");
    let e = err(&squall_in(dir.path(), &["trace", "record", "run", "--stage", "rec", "--out", "rec.down"]));
    assert!(e.contains("exists; give --force"), "{e}");
    let e =
        err(&squall_in(dir.path(), &["trace", "record", "run", "--replication", "7", "--stage", "rec", "--out", "y"]));
    assert!(e.contains("no rep-7/events.csv"), "{e}");
}

/// Writes a pcap of `link_type` with `(µs, frame)` records.
fn pcap(path: &Path, datalink: pcap_file::DataLink, records: &[(u64, Vec<u8>)]) {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let header = PcapHeader { datalink, ..Default::default() };
    let mut w = PcapWriter::with_header(std::fs::File::create(path).unwrap(), header).unwrap();
    for (us, data) in records {
        let p = PcapPacket {
            timestamp: std::time::Duration::from_micros(*us),
            orig_len: data.len() as u32,
            data: Cow::Borrowed(data),
        };
        w.write_packet(&p).unwrap();
    }
}

/// An IPv4 UDP packet of `size` bytes (IP length) to `dst`.
fn ipv4(dst: [u8; 4], size: usize) -> Vec<u8> {
    let mut p = vec![0u8; size];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(size as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&dst);
    p[20..22].copy_from_slice(&5000u16.to_be_bytes());
    p[22..24].copy_from_slice(&6000u16.to_be_bytes());
    p[24..26].copy_from_slice(&((size - 20) as u16).to_be_bytes());
    p
}

fn ethernet(payload: Vec<u8>, ethertype: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    f.extend(ethertype.to_be_bytes());
    f.extend(payload);
    f
}

/// From a capture (Ethernet, as tcpdump writes it): time 0 is the first
/// record; packets to the receiver count, others (an ACK the other way, an
/// ARP frame) do not. By hand, from a first record at 100 s: 1 500-byte
/// packets at +0.5, +1.0, +2.2 ms make lines 1, 1, 3; four 400-byte
/// packets (404 B each) at +4.0 ms complete one 1 504-byte opportunity
/// with the fourth (1 616 B), and the 112 B left make a last line at 4.
#[test]
fn a_capture_becomes_opportunities_from_its_first_record() {
    let dir = tempfile::tempdir().unwrap();
    let to = [10, 0, 0, 2];
    let t0 = 100_000_000;
    let mut records = vec![
        (t0, ethernet(vec![0u8; 28], 0x0806)),
        (t0 + 500, ethernet(ipv4(to, 1500), 0x0800)),
        (t0 + 700, ethernet(ipv4([10, 0, 0, 1], 52), 0x0800)),
        (t0 + 1000, ethernet(ipv4(to, 1500), 0x0800)),
        (t0 + 2200, ethernet(ipv4(to, 1500), 0x0800)),
    ];
    records.extend((0..4).map(|_| (t0 + 4000, ethernet(ipv4(to, 400), 0x0800))));
    pcap(&dir.path().join("rx.pcap"), pcap_file::DataLink::ETHERNET, &records);
    let said = ok(&squall_in(dir.path(), &["trace", "record", "rx.pcap", "--to", "10.0.0.2", "--out", "rx.down"]));
    assert!(said.contains("7 departures (6100 B of IP)"), "{said}");
    assert_eq!(lines(&dir.path().join("rx.down")), [1, 1, 3, 4, 4]);
    // Without --to, the ACK (52 B + 4) counts too: 56 B carried from 1 ms
    // on, so the 400-byte packets complete 1 672 B and leave 168 B; the
    // same lines here.
    let said = ok(&squall_in(dir.path(), &["trace", "record", "rx.pcap", "--out", "all.down"]));
    assert!(said.contains("8 departures (6152 B of IP)"), "{said}");
    assert_eq!(lines(&dir.path().join("all.down")), [1, 1, 3, 4, 4]);
    // Raw IP captures (squall's own pcaps) read the same.
    let raw: Vec<(u64, Vec<u8>)> = [(0, 1500), (3000, 1500)].iter().map(|&(us, s)| (us, ipv4(to, s))).collect();
    pcap(&dir.path().join("raw.pcap"), pcap_file::DataLink::RAW, &raw);
    ok(&squall_in(dir.path(), &["trace", "record", "raw.pcap", "--out", "raw.down"]));
    assert_eq!(lines(&dir.path().join("raw.down")), [0, 3]);
    // Linux cooked captures (`tcpdump -i any`, SLL): the same packets
    // behind a 16-byte header (packet type, ARPHRD_ETHER, address length 6,
    // the address, the protocol), the ACK marked outgoing (type 4): the
    // same lines.
    let sll = |packet_type: u16, payload: Vec<u8>, protocol: u16| {
        let mut f = packet_type.to_be_bytes().to_vec();
        f.extend(1u16.to_be_bytes());
        f.extend(6u16.to_be_bytes());
        f.extend([0x02, 0, 0, 0, 0, 1, 0, 0]);
        f.extend(protocol.to_be_bytes());
        f.extend(payload);
        f
    };
    let mut cooked = vec![
        (t0, sll(0, vec![0u8; 28], 0x0806)),
        (t0 + 500, sll(0, ipv4(to, 1500), 0x0800)),
        (t0 + 700, sll(4, ipv4([10, 0, 0, 1], 52), 0x0800)),
        (t0 + 1000, sll(0, ipv4(to, 1500), 0x0800)),
        (t0 + 2200, sll(0, ipv4(to, 1500), 0x0800)),
    ];
    cooked.extend((0..4).map(|_| (t0 + 4000, sll(0, ipv4(to, 400), 0x0800))));
    pcap(&dir.path().join("any.pcap"), pcap_file::DataLink::LINUX_SLL, &cooked);
    let said = ok(&squall_in(dir.path(), &["trace", "record", "any.pcap", "--to", "10.0.0.2", "--out", "any.down"]));
    assert!(said.contains("7 departures (6100 B of IP)"), "{said}");
    assert_eq!(lines(&dir.path().join("any.down")), [1, 1, 3, 4, 4]);
    let said = ok(&squall_in(dir.path(), &["trace", "record", "any.pcap", "--out", "any-all.down"]));
    assert!(said.contains("8 departures (6152 B of IP)"), "{said}");
    // Refused: nothing to the receiver; one packet at 0 (no period);
    // pcapng; an unknown link type.
    let e = err(&squall_in(dir.path(), &["trace", "record", "rx.pcap", "--to", "10.9.9.9", "--out", "x"]));
    assert!(e.contains("no IPv4 packet to 10.9.9.9 in 9 records"), "{e}");
    pcap(&dir.path().join("one.pcap"), pcap_file::DataLink::RAW, &[(5, ipv4(to, 1500))]);
    let e = err(&squall_in(dir.path(), &["trace", "record", "one.pcap", "--out", "x"]));
    assert!(e.contains("every departure is at 0 ms"), "{e}");
    std::fs::write(dir.path().join("x.pcapng"), [0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0]).unwrap();
    let e = err(&squall_in(dir.path(), &["trace", "record", "x.pcapng", "--out", "x"]));
    assert!(e.contains("a pcapng capture; expected classic pcap"), "{e}");
    pcap(&dir.path().join("wifi.pcap"), pcap_file::DataLink::IEEE802_11, &[(5, vec![0; 40])]);
    let e = err(&squall_in(dir.path(), &["trace", "record", "wifi.pcap", "--out", "x"]));
    assert!(e.contains("expected raw IP, Ethernet or Linux cooked"), "{e}");
}

/// mm-link's `--once`: a 100 ms trace of one opportunity per ms, played
/// once under a 20 Mbit/s flood of `--udp`'s 1 200-byte packets (1 204 B
/// on a trace link): 100 · 1 504 / 1 204 = 124.9, so 124 packets cross
/// and the run ends at 100 ms, its last event; looped (no --once), 60 s
/// carry 60 000 · 1 504 / 1 204 = 74 950.2.
#[test]
fn once_plays_the_trace_once_and_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let trace: String = (1..=100).map(|m| format!("{m}\n")).collect();
    std::fs::write(dir.path().join("t.down"), trace).unwrap();
    let run = |extra: &[&str], out: &str| {
        let mut args = vec!["sim", "--link", "delay 0ms", "--downlink-trace", "t.down", "--udp", "20 Mbit/s"];
        args.extend(extra);
        args.extend(["--no-pcap", "--out", out]);
        ok(&squall_in(dir.path(), &args));
        let rows = events(&dir.path().join(out).join("rep-0/events.csv"), None);
        let delivered = rows.iter().filter(|r| r["stage"] == "trace-down" && r["event"] == "deliver").count();
        let last = rows.iter().map(|r| r["time"].parse::<f64>().unwrap()).fold(0.0, f64::max);
        (delivered, last)
    };
    assert_eq!(run(&["--once"], "once"), (124, 0.1));
    let (looped, last) = run(&[], "looped");
    assert!(looped.abs_diff(74_950) <= 1, "{looped}");
    assert!(last > 59.99, "{last}");
    let e = err(&squall_in(dir.path(), &["sim", "--link", "delay 0ms", "--once"]));
    assert!(e.contains("--once plays a trace once"), "{e}");
    // Two traces, `--once` (mm-link's `--once UP DOWN`): each plays once and
    // the run ends at the end of the shorter, whichever direction it is. A
    // 40 ms uplink trace beside the 100 ms downlink one: the run's last
    // event is at 40 ms, and the downlink has carried 40 · 1 504 / 1 204 =
    // 49.97, so 49 packets; swapped, the same at 40 ms.
    let short: String = (1..=40).map(|m| format!("{m}\n")).collect();
    std::fs::write(dir.path().join("t.up"), short).unwrap();
    assert_eq!(run(&["--uplink-trace", "t.up", "--once"], "two"), (49, 0.04));
    std::fs::write(dir.path().join("long.up"), (1..=200).map(|m| format!("{m}\n")).collect::<String>()).unwrap();
    std::fs::write(dir.path().join("t.down"), (1..=40).map(|m| format!("{m}\n")).collect::<String>()).unwrap();
    assert_eq!(run(&["--uplink-trace", "long.up", "--once"], "swapped"), (49, 0.04));
}

/// Per-packet delays replayed in order: a jitter `{ kind = "empirical",
/// file, order = "sequence" }` gives packet k the file's value k (looping),
/// where `order = "random"` (the default) draws among them. One packet
/// every 20 ms, the stage reorders (each packet keeps its own delay): the
/// delays are exactly 10, 0, 5, 30 ms, again and again.
#[test]
fn a_sequence_of_delays_is_replayed_in_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("delays.txt"), "# measured, one per packet\n10 ms\n0 ms\n5 ms\n30 ms\n").unwrap();
    let scenario = |order: &str| {
        format!(
            r#"name = "seq"
duration = "2 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.1.1"
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "path"
reorder = true
jitter = {{ kind = "empirical", file = "delays.txt", order = "{order}" }}
[[links.uplink]]
name = "up"
[[workload.udp]]
name = "u"
from = "a"
to = "b"
size = "100 B"
rate = "40 kbit/s"
"#
        )
    };
    let delays = |order: &str| {
        std::fs::write(dir.path().join("s.toml"), scenario(order)).unwrap();
        ok(&squall_in(dir.path(), &["sim", "s.toml", "--no-pcap", "--out", order, "--force"]));
        let mut entered = std::collections::BTreeMap::new();
        let mut out = Vec::new();
        for r in events(&dir.path().join(order).join("rep-0/events.csv"), Some("path")) {
            let t: f64 = r["time"].parse().unwrap();
            match r["event"].as_str() {
                "enqueue" => {
                    entered.insert(r["packet"].parse::<u64>().unwrap(), t);
                }
                "deliver" => {
                    let p = r["packet"].parse::<u64>().unwrap();
                    out.push((p, ((t - entered[&p]) * 1e3).round() as u64));
                }
                _ => {}
            }
        }
        out.sort();
        out.into_iter().map(|(_, d)| d).collect::<Vec<u64>>()
    };
    let seq = delays("sequence");
    assert!(seq.len() >= 90, "{}", seq.len());
    let expected: Vec<u64> = (0..seq.len()).map(|k| [10, 0, 5, 30][k % 4]).collect();
    assert_eq!(seq, expected);
    let random = delays("random");
    assert!(random.iter().all(|d| [10, 0, 5, 30].contains(d)));
    assert_ne!(random, expected[..random.len()]);
    // A bad order is refused at its key.
    std::fs::write(dir.path().join("s.toml"), scenario("shuffled")).unwrap();
    let e = err(&squall_in(dir.path(), &["sim", "s.toml", "--out", "x"]));
    assert!(e.contains("shuffled") && e.contains("sequence"), "{e}");
}

/// The example traces in scenarios/traces are squall's own: the commands
/// scenarios/traces/README.md gives make the same bytes.
#[test]
fn shipped_traces_are_made_by_squall() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/traces");
    for (file, args) in [
        (
            "cell-steps.down",
            &[
                "--rates",
                "12.032 Mbit/s,6.016 Mbit/s",
                "--interval",
                "1 s",
                "--duration",
                "2 s",
                "--format",
                "mahimahi",
            ][..],
        ),
        ("rate-steps.csv", &["--rates", "10 Mbit/s,1 Mbit/s,5 Mbit/s", "--interval", "2 s", "--duration", "6 s"][..]),
        ("gilbert-loss.txt", &["gilbert", "--p", "0.01", "--r", "0.25", "--count", "10000", "--seed", "30"][..]),
        (
            "train-states.csv",
            &[
                "states",
                "--states",
                "open,tunnel",
                "--switch",
                "0.3",
                "--interval",
                "1 s",
                "--duration",
                "20 s",
                "--seed",
                "30",
            ][..],
        ),
    ] {
        let mut all = vec!["trace", "generate"];
        if !matches!(args[0], "gilbert" | "states") {
            all.push("stepped");
        }
        all.extend_from_slice(args);
        all.extend_from_slice(&["--out", file]);
        ok(&squall_in(dir.path(), &all));
        let made = std::fs::read(dir.path().join(file)).unwrap();
        assert_eq!(made, std::fs::read(shipped.join(file)).unwrap(), "{file} differs from what squall makes");
    }
    // delay-ramp.csv: the shell command the README gives (squall trace
    // generate makes rate traces only).
    let o = std::process::Command::new("sh")
        .current_dir(dir.path())
        .args([
            "-c",
            "printf '# Propagation delay rising from 20 ms to 80 ms over 3 s and back, looped every 6 s.\\ntime (ms),delay (ms)\\n0,20\\n3000,80\\n6000,20\\n' > delay-ramp.csv",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let made = std::fs::read(dir.path().join("delay-ramp.csv")).unwrap();
    assert_eq!(made, std::fs::read(shipped.join("delay-ramp.csv")).unwrap(), "delay-ramp.csv differs");
    // path-delays.dist: `squall trace maketable` of path-delays.txt's
    // numbers (ns), the README's `grep -v '^#' path-delays.txt | cut -d' '
    // -f1 > samples.txt`.
    let samples: Vec<String> = sequence(&shipped.join("path-delays.txt")).iter().map(u64::to_string).collect();
    std::fs::write(dir.path().join("samples.txt"), samples.join("\n") + "\n").unwrap();
    ok(&squall_in(dir.path(), &["trace", "maketable", "samples.txt", "-o", "path-delays.dist"]));
    let made = std::fs::read(dir.path().join("path-delays.dist")).unwrap();
    assert_eq!(made, std::fs::read(shipped.join("path-delays.dist")).unwrap(), "path-delays.dist differs");
}

/// The values of an empirical-distribution file written by `squall trace
/// record --format delays|gaps|sizes` (`123 ns`, `1500 B`), numbers only.
fn sequence(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// `--format delays`, `gaps`, `sizes` from a run: each packet that
/// entered the stage, in order, as events.csv has it (read by this test):
/// its time to delivery, the time since the one before, its size. The
/// scenarios/traces files made this way are the bytes squall makes
/// (scenarios/traces/README.md gives the commands).
#[test]
fn a_run_becomes_per_packet_sequences_and_the_shipped_ones_are_made_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rate_series = root.join("scenarios/rate-series.toml");
    ok(&squall_in(
        dir.path(),
        &["sim", rate_series.to_str().unwrap(), "--set", "duration=\"6 s\"", "--no-pcap", "--out", "run"],
    ));
    let said = ok(&squall_in(
        dir.path(),
        &["trace", "record", "run", "--stage", "cell-down", "--format", "delays", "--out", "path-delays.txt"],
    ));
    println!("{said}");
    // By hand from events.csv: enqueue -> deliver of each packet, in the
    // order they entered.
    let mut entered: Vec<(u64, f64)> = Vec::new();
    let mut left = std::collections::BTreeMap::new();
    for r in events(&dir.path().join("run/rep-0/events.csv"), Some("cell-down")) {
        let (p, t) = (r["packet"].parse::<u64>().unwrap(), r["time"].parse::<f64>().unwrap());
        match r["event"].as_str() {
            "enqueue" => entered.push((p, t)),
            "deliver" => {
                left.insert(p, t);
            }
            _ => {}
        }
    }
    let by_hand: Vec<u64> =
        entered.iter().filter_map(|(p, t)| left.get(p).map(|d| ((d - t) * 1e9).round() as u64)).collect();
    let recorded = sequence(&dir.path().join("path-delays.txt"));
    assert_eq!(recorded.len(), by_hand.len());
    // events.csv's times have 9 decimals of a second: within 1 ns.
    assert!(recorded.iter().zip(&by_hand).all(|(a, b)| a.abs_diff(*b) <= 1), "delays differ from events.csv");
    assert!(said.contains(&format!(
        "of {} packets that entered stage cell-down ({} delivered)",
        entered.len(),
        by_hand.len()
    )));
    assert_eq!(
        std::fs::read(dir.path().join("path-delays.txt")).unwrap(),
        std::fs::read(root.join("scenarios/traces/path-delays.txt")).unwrap(),
        "scenarios/traces/path-delays.txt differs from what squall makes"
    );

    ok(&squall_in(
        dir.path(),
        &[
            "sim",
            "--link",
            "rate 10mbit delay 20ms",
            "--tcp",
            "cubic",
            "--set",
            "duration=\"3 s\"",
            "--no-pcap",
            "--out",
            "tcp",
        ],
    ));
    for (format, file) in [("gaps", "tcp-gaps.txt"), ("sizes", "tcp-sizes.txt")] {
        ok(&squall_in(
            dir.path(),
            &["trace", "record", "tcp", "--stage", "netem-down", "--format", format, "--out", file],
        ));
        assert_eq!(
            std::fs::read(dir.path().join(file)).unwrap(),
            std::fs::read(root.join("scenarios/traces").join(file)).unwrap(),
            "scenarios/traces/{file} differs from what squall makes"
        );
    }
    let entries: Vec<(f64, u64)> = events(&dir.path().join("tcp/rep-0/events.csv"), Some("netem-down"))
        .into_iter()
        .filter(|r| r["event"] == "enqueue" && r["direction"] == "downlink")
        .map(|r| (r["time"].parse().unwrap(), r["size"].parse().unwrap()))
        .collect();
    let gaps: Vec<u64> = entries.windows(2).map(|w| ((w[1].0 - w[0].0) * 1e9).round() as u64).collect();
    let recorded = sequence(&dir.path().join("tcp-gaps.txt"));
    assert_eq!(recorded.len(), gaps.len());
    assert!(recorded.iter().zip(&gaps).all(|(a, b)| a.abs_diff(*b) <= 1), "gaps differ from events.csv");
    assert_eq!(sequence(&dir.path().join("tcp-sizes.txt")), entries.iter().map(|e| e.1).collect::<Vec<u64>>());
    // A stage no packet entered (a name not in the run) is refused.
    let e =
        err(&squall_in(dir.path(), &["trace", "record", "tcp", "--stage", "nope", "--format", "gaps", "--out", "x"]));
    assert!(e.contains("0 packet(s) entered stage `nope`"), "{e}");
}

/// scenarios/delay-sequence.toml: the k-th packet that enters the
/// `measured-path` stage leaves exactly the file's k-th delay later
/// (to the nanosecond, as events.csv writes times).
#[test]
fn the_delay_sequence_scenario_replays_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("scenarios/delay-sequence.toml");
    ok(&squall_in(dir.path(), &["sim", scenario.to_str().unwrap(), "--no-pcap", "--out", "run"]));
    let file = sequence(&root.join("scenarios/traces/path-delays.txt"));
    let mut entered = Vec::new();
    let mut left = std::collections::BTreeMap::new();
    for r in events(&dir.path().join("run/rep-0/events.csv"), Some("measured-path")) {
        let (p, t) = (r["packet"].parse::<u64>().unwrap(), r["time"].parse::<f64>().unwrap());
        match r["event"].as_str() {
            "enqueue" => entered.push((p, t)),
            "deliver" => {
                left.insert(p, t);
            }
            _ => {}
        }
    }
    let mut checked = 0;
    for (k, (p, t)) in entered.iter().enumerate() {
        if let Some(d) = left.get(p) {
            let delay = ((d - t) * 1e9).round() as u64;
            assert!(delay.abs_diff(file[k % file.len()]) <= 1, "packet {k}: {delay} ns, the file says {}", file[k]);
            checked += 1;
        }
    }
    println!("{checked} of {} packets delivered, each its delay", entered.len());
    assert!(checked >= 1000, "{checked}");
}

/// scenarios/background-pattern.toml: the stored transfer's packets come
/// at the file's gaps from 0, one after the other, looping: the number
/// generated in 10 s is the number of cumulative gaps (from 0) before
/// 10 s, counted from the file here.
#[test]
fn the_background_pattern_scenario_replays_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("scenarios/background-pattern.toml");
    ok(&squall_in(dir.path(), &["sim", scenario.to_str().unwrap(), "--no-pcap", "--out", "run"]));
    let gaps = sequence(&root.join("scenarios/traces/tcp-gaps.txt"));
    let (mut at, mut arrivals) = (0u64, 0u64);
    while at < 10_000_000_000 {
        arrivals += 1;
        at += gaps[(arrivals as usize - 1) % gaps.len()];
    }
    let s = common::summary(&dir.path().join("run"));
    let stage = s["runs"][0]["stages"].as_array().unwrap().iter().find(|st| st["name"] == "degrader").unwrap().clone();
    println!("{}", stage["background"]);
    assert_eq!(stage["background"]["generated"].as_u64().unwrap(), arrivals, "{stage}");
}

/// The rows of a rate series written by squall trace: (ns, bit/s).
fn series_rows(path: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("time"))
        .map(|l| {
            let (t, v) = l.split_once(',').unwrap();
            (t.parse().unwrap(), v.parse().unwrap())
        })
        .collect()
}

/// `squall trace generate constant|sawtooth|gaussian|markov` against the
/// definitions the guide's Traces page gives them, one rate per
/// `--interval` and a last row at `--duration`:
/// - constant 12.032 Mbit/s: that rate throughout; as Mahimahi, one
///   12 032-bit opportunity per ms, the lines 1 to 1 000 in 1 s.
/// - sawtooth 1 -> 10 Mbit/s over 2 s in 100 ms steps: each tooth starts at
///   --low and rises 9/20 Mbit/s a step (the linear rise held per
///   interval), 20 steps a tooth; `trace stats` gives the tooth's mean,
///   1 + 9 · 19/40 = 5.275 Mbit/s.
/// - gaussian mean 10, sd 2 Mbit/s, 10 000 draws: mean within 4.5 · 2/100
///   Mbit/s, deviation within 4.5 · 2/√20 000, none below 0; the same
///   seed the same file, another seed another.
/// - markov 10 / 1 Mbit/s switching with probability 0.1, 10 000
///   intervals: only the two rates; switches a binomial 0.1 of the 9 999
///   steps (4.5σ), runs of mean 1/0.1 = 10 intervals; half the time at
///   each (σ widened by √((1+λ)/(1−λ)) = 3, λ = 1 − 2·0.1).
#[test]
fn generated_rate_traces_follow_their_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let generate = |args: &[&str]| {
        let mut all = vec!["trace", "generate"];
        all.extend_from_slice(args);
        ok(&squall_in(dir.path(), &all));
    };
    generate(&["constant", "--rate", "12.032 Mbit/s", "--duration", "1 s", "--out", "c.csv"]);
    let c = series_rows(&dir.path().join("c.csv"));
    assert_eq!(c.len(), 11);
    assert!(c.iter().enumerate().all(|(i, &(t, v))| t == i as u64 * 100_000_000 && v == 12_032_000), "{c:?}");
    generate(&["constant", "--rate", "12.032 Mbit/s", "--duration", "1 s", "--format", "mahimahi", "--out", "c.mahi"]);
    assert_eq!(lines(&dir.path().join("c.mahi")), (1..=1000).collect::<Vec<u64>>());

    generate(&[
        "sawtooth",
        "--low",
        "1 Mbit/s",
        "--rate",
        "10 Mbit/s",
        "--period",
        "2 s",
        "--duration",
        "6 s",
        "--out",
        "s.csv",
    ]);
    let s = series_rows(&dir.path().join("s.csv"));
    assert_eq!(s.len(), 61);
    for (i, &(_, v)) in s[..60].iter().enumerate() {
        assert_eq!(v, 1_000_000 + 450_000 * (i as u64 % 20), "step {i}");
    }
    let stats = ok(&squall_in(dir.path(), &["trace", "stats", "s.csv"]));
    assert!(stats.contains("mean 5.275,"), "{stats}");

    let at = |seed: &str, out: &str| {
        generate(&[
            "gaussian",
            "--rate",
            "10 Mbit/s",
            "--sd",
            "2 Mbit/s",
            "--duration",
            "1000 s",
            "--seed",
            seed,
            "--out",
            out,
        ]);
        std::fs::read_to_string(dir.path().join(out)).unwrap()
    };
    let (g1, g1_again, g2) = (at("5", "g1.csv"), at("5", "g1b.csv"), at("6", "g2.csv"));
    assert_eq!(g1, g1_again);
    assert_ne!(g1, g2);
    let g: Vec<f64> = series_rows(&dir.path().join("g1.csv"))[..10_000].iter().map(|&(_, v)| v as f64 / 1e6).collect();
    let mean = g.iter().sum::<f64>() / g.len() as f64;
    let sd = (g.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (g.len() - 1) as f64).sqrt();
    assert!((mean - 10.0).abs() < 4.5 * 2.0 / 100.0, "mean {mean}");
    assert!((sd - 2.0).abs() < 4.5 * 2.0 / 20_000f64.sqrt(), "sd {sd}");
    assert!(g.iter().all(|&v| v >= 0.0));

    generate(&[
        "markov",
        "--rates",
        "10 Mbit/s,1 Mbit/s",
        "--switch",
        "0.1",
        "--duration",
        "1000 s",
        "--seed",
        "3",
        "--out",
        "m.csv",
    ]);
    let m: Vec<u64> = series_rows(&dir.path().join("m.csv"))[..10_000].iter().map(|&(_, v)| v).collect();
    assert!(m.iter().all(|&v| v == 10_000_000 || v == 1_000_000));
    let switches = m.windows(2).filter(|w| w[0] != w[1]).count() as f64;
    assert!((switches - 999.9).abs() < 4.5 * (9999.0f64 * 0.1 * 0.9).sqrt(), "{switches} switches");
    let mean_run = m.len() as f64 / (switches + 1.0);
    assert!((mean_run - 10.0).abs() < 1.5, "mean run {mean_run}");
    let high = m.iter().filter(|&&v| v == 10_000_000).count() as f64 / m.len() as f64;
    assert!((high - 0.5).abs() < 4.5 * 3.0 * (0.25f64 / 10_000.0).sqrt(), "{high} at 10 Mbit/s");
}

/// The Traces page's `convert` round trip, run as printed there: the
/// stepped 10 -> 1 -> 10 Mbit/s series as Mahimahi, its stats, and back
/// per 2 s: 20 Mbit / 12 032 bit = 1 662.2 opportunities (1 662 whole,
/// the rest carried), 2 Mbit / 12 032 = 166.2 (166 plus the carry),
/// so 1 662 · 12 032 / 2 = 9 998 592 bit/s and 166 · 6 016 = 998 656.
#[test]
fn the_traces_page_convert_figures_are_what_convert_gives() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| ok(&squall_in(dir.path(), args));
    run(&[
        "trace",
        "generate",
        "stepped",
        "--rates",
        "10 Mbit/s,1 Mbit/s,10 Mbit/s",
        "--interval",
        "2 s",
        "--duration",
        "6 s",
        "--out",
        "steps.csv",
    ]);
    let stats = run(&["trace", "stats", "steps.csv"]);
    assert!(stats.contains("mean 7.000, p5 1.000, p50 10.000, p95 10.000"), "{stats}");
    run(&["trace", "convert", "steps.csv", "--out", "steps.mahi"]);
    let stats = run(&["trace", "stats", "steps.mahi"]);
    assert!(stats.contains("steps.mahi: 6.000 s"), "{stats}");
    assert!(stats.contains("mean 6.999, p5 0.963, p50 9.987, p95 10.107"), "{stats}");
    let per_2s = |lo: u64| lines(&dir.path().join("steps.mahi")).iter().filter(|&&t| t > lo && t <= lo + 2000).count();
    assert_eq!([per_2s(0), per_2s(2000), per_2s(4000)], [1662, 166, 1662]);
    run(&["trace", "convert", "steps.mahi", "--out", "back.csv", "--interval", "2 s"]);
    let back: Vec<u64> = series_rows(&dir.path().join("back.csv")).iter().map(|r| r.1).collect();
    assert_eq!(back[..3], [9_998_592, 998_656, 9_998_592]);
}
