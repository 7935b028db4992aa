//! A scenario's `[[workload.udp]]` flow sent by real sockets
//! (`squall tool udp-flow`): datagrams at the times and of the IP sizes
//! the simulator's pacer gives for the same flow and seed, and a sink that
//! takes them, as the simulator's UDP sink does (seed 001 §2.1), so the
//! receiving host answers no ICMP "port unreachable".

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Serialize;

/// IPv4 + UDP headers, bytes.
pub const HEADERS: u32 = 28;
/// IPv6 + UDP headers, bytes (RFC 8200 §3, RFC 768).
pub const HEADERS_V6: u32 = 48;

/// What the sender did (one JSON line).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SendReport {
    pub sent: u64,
    /// IP bytes (headers included).
    pub bytes: u64,
    /// Datagrams the kernel refused (ENOBUFS, …), counted, not retried.
    pub refused: u64,
    /// How far behind its time the latest datagram left, s.
    pub max_late: f64,
}

/// Sends one datagram per `(offset, ip_size)` to `to` (either family)
/// from local port `src_port`, each at `offset` after the call (or at once
/// if late); ECN-capable (ECT(0), RFC 3168: IP_TOS, or IPV6_TCLASS) if
/// `ecn`. The payload starts with the datagram's sequence number
/// (big-endian u64). An IP size below the headers (28 bytes over IPv4, 48
/// over IPv6) is an error naming the datagram.
pub fn send(
    to: SocketAddr,
    src_port: u16,
    ecn: bool,
    packets: impl IntoIterator<Item = (Duration, u32)>,
) -> io::Result<SendReport> {
    crate::sys::sched::minimise_timer_slack();
    let (socket, headers) = match to {
        SocketAddr::V4(_) => (UdpSocket::bind((Ipv4Addr::UNSPECIFIED, src_port))?, HEADERS),
        SocketAddr::V6(_) => (UdpSocket::bind((Ipv6Addr::UNSPECIFIED, src_port))?, HEADERS_V6),
    };
    socket.connect(to)?;
    if ecn {
        match to {
            SocketAddr::V4(_) => crate::sys::socket::set_int(&socket, libc::IPPROTO_IP, libc::IP_TOS, 0b10, "IP_TOS")?,
            SocketAddr::V6(_) => {
                crate::sys::socket::set_int(&socket, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, 0b10, "IPV6_TCLASS")?
            }
        }
    }
    let start = Instant::now();
    let mut report = SendReport::default();
    let mut payload = Vec::new();
    for (seq, (offset, size)) in packets.into_iter().enumerate() {
        if size < headers {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("datagram {seq}: IP size {size} B is smaller than its {headers} B of headers"),
            ));
        }
        let due = start + offset;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        report.max_late = report.max_late.max(Instant::now().saturating_duration_since(due).as_secs_f64());
        payload.clear();
        payload.resize((size - headers) as usize, 0);
        let seq_bytes = (seq as u64).to_be_bytes();
        let n = payload.len().min(8);
        payload[..n].copy_from_slice(&seq_bytes[..n]);
        match socket.send(&payload) {
            Ok(_) => {
                report.sent += 1;
                report.bytes += size as u64;
            }
            Err(_) => report.refused += 1,
        }
    }
    Ok(report)
}

/// Takes datagrams on `port` of every address, IPv4 and IPv6, until the
/// process is stopped.
pub fn sink(port: u16) -> io::Result<()> {
    let socket = crate::tools::udp_socket(port)?;
    let mut buf = vec![0u8; 65_536];
    loop {
        socket.recv(&mut buf)?;
    }
}
