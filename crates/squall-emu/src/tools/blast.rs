//! UDP traffic for the forwarding benchmark (`squall bench emu`): a sender
//! of fixed-size datagrams, unpaced or paced to a bit rate, and a sink that
//! counts what arrives.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Port the sink listens on.
pub const SINK_PORT: u16 = 5202;
/// IPv4 + UDP headers, bytes.
const HEADERS: usize = 28;

/// What the sink counted (one JSON line).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SinkReport {
    pub packets: u64,
    /// IP bytes (headers included).
    pub bytes: u64,
    /// From the first to the last packet, s.
    pub seconds: f64,
    pub pps: f64,
    /// IP bit rate.
    pub bps: f64,
}

/// Sends `ip_size`-byte IP packets to `to` for `seconds`; paced to
/// `rate_bps` (IP bits per second) if given, else as fast as possible.
/// Returns how many were sent.
pub fn send(to: Ipv4Addr, ip_size: usize, seconds: f64, rate_bps: Option<f64>) -> io::Result<u64> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    socket.connect(SocketAddrV4::new(to, SINK_PORT))?;
    let payload = vec![0u8; ip_size.saturating_sub(HEADERS).max(1)];
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut sent = 0u64;
    while Instant::now() < end {
        if let Some(rate) = rate_bps {
            let due = start + Duration::from_secs_f64(sent as f64 * (ip_size * 8) as f64 / rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        // A full socket buffer (ENOBUFS) is the sender outrunning the path.
        if socket.send(&payload).is_ok() {
            sent += 1;
        }
    }
    Ok(sent)
}

/// Counts datagrams until `idle` passes without one (after the first) or
/// `limit` passes in all.
pub fn sink(idle: Duration, limit: Duration) -> io::Result<SinkReport> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, SINK_PORT))?;
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let started = Instant::now();
    let mut buf = vec![0u8; 65_536];
    let (mut packets, mut bytes) = (0u64, 0u64);
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    while started.elapsed() < limit {
        match socket.recv(&mut buf) {
            Ok(n) => {
                let now = Instant::now();
                first.get_or_insert(now);
                last = now;
                packets += 1;
                bytes += (n + HEADERS) as u64;
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if first.is_some() && last.elapsed() > idle {
                    break;
                }
            }
            Err(e) => return Err(e),
        }
    }
    let seconds = first.map_or(0.0, |f| (last - f).as_secs_f64());
    let per_s = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    Ok(SinkReport { packets, bytes, seconds, pps: per_s(packets as f64), bps: per_s(bytes as f64 * 8.0) })
}
