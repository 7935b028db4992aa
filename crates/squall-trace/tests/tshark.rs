//! Wireshark reads what the pcap writer writes: real fields, nothing
//! malformed. Needs `tshark`; without it the test fails when `CI=true` and
//! is skipped otherwise.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use squall_link::{Ecn, FlowKey, Instant, Packet, PacketId, Protocol};
use squall_trace::{PcapWriter, TcpFlags, TcpHeaderInfo};

fn flow(protocol: Protocol, src: [u8; 4], dst: [u8; 4], dst_port: u16) -> FlowKey {
    FlowKey { protocol, src: Ipv4Addr::from(src).into(), dst: Ipv4Addr::from(dst).into(), src_port: 40000, dst_port }
}

/// Runs tshark on `file` with `args`; returns stdout after checking it
/// exited 0 and wrote nothing to stderr but its warning about running as
/// root.
fn tshark(file: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark").arg("-n").arg("-r").arg(file).args(args).output().expect("run tshark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<_> = stderr.lines().filter(|l| !l.starts_with("Running as user \"root\"")).collect();
    assert!(out.status.success() && complaints.is_empty(), "tshark {args:?}: {}\n{stderr}", out.status);
    String::from_utf8(out.stdout).expect("utf-8 from tshark")
}

fn tshark_available() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "tshark is not installed, and CI=true requires this test");
    eprintln!("skipping: tshark is not installed (apt-get install tshark)");
    false
}

#[test]
fn tshark_reads_synthesised_headers() {
    if !tshark_available() {
        return;
    }
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("squall-trace-tshark.pcap");
    let mut pcap = PcapWriter::new(std::fs::File::create(&file).unwrap()).unwrap();
    let udp = [
        (1, 1500, flow(Protocol::Udp, [10, 0, 0, 1], [10, 0, 0, 2], 9000)),
        (2, 28, flow(Protocol::Udp, [10, 0, 0, 1], [10, 0, 0, 2], 9000)),
        (3, 576, flow(Protocol::Udp, [192, 168, 1, 7], [172, 16, 0, 9], 5353)),
    ];
    for (i, &(id, size, flow)) in udp.iter().enumerate() {
        let mut p = Packet::new(PacketId(id), size, flow);
        p.ecn = Ecn::Ect0;
        pcap.write_packet(Instant::from_nanos(1_000_000_007 * i as u64), &p).unwrap();
    }
    let syn = TcpHeaderInfo {
        seq: 12345,
        ack: 0,
        flags: TcpFlags::SYN,
        window: 64240,
        mss: Some(1460),
        window_scale: Some(7),
        sack_permitted: true,
        timestamps: Some((100, 0)),
        sack_blocks: vec![],
    };
    let tcp_flow = flow(Protocol::Tcp, [10, 0, 0, 2], [10, 0, 0, 1], 80);
    pcap.write_tcp_packet(Instant::from_secs(4), &Packet::new(PacketId(4), 60, tcp_flow), &syn).unwrap();
    let ack = TcpHeaderInfo {
        seq: 12346,
        ack: 777,
        flags: TcpFlags::ACK | TcpFlags::PSH,
        window: 501,
        timestamps: Some((200, 150)),
        sack_blocks: vec![(1000, 2000), (3000, 4000)],
        ..Default::default()
    };
    pcap.write_tcp_packet(Instant::from_secs(5), &Packet::new(PacketId(5), 1500, tcp_flow), &ack).unwrap();
    drop(pcap.into_inner());

    let fields = ["-T", "fields", "-e", "ip.src", "-e", "ip.dst", "-e", "udp.dstport", "-e", "ip.len"];
    assert_eq!(
        tshark(&file, &fields),
        "10.0.0.1\t10.0.0.2\t9000\t1500\n\
         10.0.0.1\t10.0.0.2\t9000\t28\n\
         192.168.1.7\t172.16.0.9\t5353\t576\n\
         10.0.0.2\t10.0.0.1\t\t60\n\
         10.0.0.2\t10.0.0.1\t\t1500\n"
    );

    let tcp_fields = [
        "-o",
        "tcp.relative_sequence_numbers:FALSE",
        "-Y",
        "tcp",
        "-T",
        "fields",
        "-E",
        "separator=,",
        "-e",
        "tcp.srcport",
        "-e",
        "tcp.seq_raw",
        "-e",
        "tcp.ack_raw",
        "-e",
        "tcp.flags",
        "-e",
        "tcp.window_size_value",
        "-e",
        "tcp.options.mss_val",
        "-e",
        "tcp.options.wscale.shift",
        "-e",
        "tcp.options.sack_perm",
        "-e",
        "tcp.options.timestamp.tsval",
        "-e",
        "tcp.options.sack_le",
    ];
    assert_eq!(
        tshark(&file, &tcp_fields),
        "40000,12345,0,0x0002,64240,1460,7,0402,100,\n\
         40000,12346,777,0x0018,501,,,,200,1000,3000\n"
    );

    // Truncation is fine ("packet size limited during capture"); a
    // malformed or erroneous header is not.
    // Checksums are validated where the bytes they cover were captured.
    let problems = tshark(
        &file,
        &[
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-Y",
            "_ws.malformed || _ws.expert.severity >= \"Warning\"",
        ],
    );
    assert_eq!(problems, "", "tshark found problems");
}
