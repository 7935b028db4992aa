//! The built-in bulk transfer (`squall tool bulk`), the `ttcp` of seed
//! 000 §4.1: a client sends N bytes over one TCP connection with a chosen
//! congestion control, the server acknowledges the last byte with one
//! byte, and the client reports the elapsed time and TCP_INFO samples.
//!
//! Wire format: an 8-byte big-endian length, then that many bytes; the
//! server answers one byte once it has read them all. Two lengths no
//! transfer has announce the other applications of a scenario's
//! `[[workload.tcp]]`: [`FOR_A_TIME`] (bytes until the client closes its
//! side, as long as it was told: `bulk_for`), and [`EXCHANGES`] (then the
//! request and response sizes and the count, each exchange a request the
//! server reads whole and a response it then sends: `request_response`).
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrStorage, connect, setsockopt, socket, sockopt};
use serde::{Deserialize, Serialize};

use crate::tools::tcp_info::{self, TcpInfo};

/// Default port of the bulk tool.
pub const DEFAULT_PORT: u16 = 5201;

/// The length announcing bytes until the client closes.
pub const FOR_A_TIME: u64 = u64::MAX;
/// The length announcing request/response exchanges.
pub const EXCHANGES: u64 = u64::MAX - 1;

/// What the client does over its connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum App {
    /// Send this many bytes (`bulk`).
    Bytes(u64),
    /// Send as fast as it can for this long, then close (`bulk_for`).
    For(std::time::Duration),
    /// `count` exchanges of a `request`-byte request and a `response`-byte
    /// response, `think` between a response and the next request
    /// (`request_response`).
    Exchanges { request: u64, response: u64, count: u32, think: std::time::Duration },
}

/// Socket settings of the receiving end, inherited by each connection
/// it accepts (a scenario's `[[workload.tcp]]` keys in emulation).
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerOptions {
    /// TCP_MAXSEG: the largest segment the server announces in its SYN-ACK.
    pub mss: Option<u32>,
    /// The largest window the server offers (TCP_WINDOW_CLAMP), with a
    /// receive buffer (SO_RCVBUFFORCE) of four times that so the buffer
    /// never limits it first.
    pub window: Option<u32>,
}

/// Serves transfers on `port` of every address, IPv4 and IPv6, until
/// killed (or after one, with `once`).
pub fn serve(port: u16, once: bool, options: ServerOptions) -> io::Result<()> {
    let listener = crate::tools::tcp_listener(port)?;
    if let Some(mss) = options.mss {
        crate::sys::socket::set_int(&listener, libc::IPPROTO_TCP, libc::TCP_MAXSEG, mss, "TCP_MAXSEG")?;
    }
    if let Some(window) = options.window {
        let buffer = window.min(i32::MAX as u32);
        crate::sys::socket::set_int(&listener, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, buffer, "SO_RCVBUFFORCE")?;
        crate::sys::socket::set_int(&listener, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, window, "TCP_WINDOW_CLAMP")?;
    }
    for stream in listener.incoming() {
        let mut stream = stream?;
        // The listener's clamp shapes the SYN-ACK; each connection keeps it
        // only if told again.
        if let Some(window) = options.window {
            crate::sys::socket::set_int(
                &stream,
                libc::IPPROTO_TCP,
                libc::TCP_WINDOW_CLAMP,
                window,
                "TCP_WINDOW_CLAMP",
            )?;
        }
        let handle = std::thread::spawn(move || receive(&mut stream));
        if once {
            return handle.join().unwrap_or_else(|_| Err(io::Error::other("receiver panicked")));
        }
    }
    Ok(())
}

fn read_u64(stream: &mut TcpStream) -> io::Result<u64> {
    let mut b = [0u8; 8];
    stream.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn receive(stream: &mut TcpStream) -> io::Result<()> {
    let announced = read_u64(stream)?;
    let mut buf = vec![0u8; 256 * 1024];
    if announced == FOR_A_TIME {
        // Until the client closes its side.
        while stream.read(&mut buf)? > 0 {}
        return stream.write_all(&[1]);
    }
    if announced == EXCHANGES {
        let (request, response, count) = (read_u64(stream)?, read_u64(stream)?, read_u64(stream)?);
        for _ in 0..count {
            read_exactly(stream, request, &mut buf)?;
            write_bytes(stream, response)?;
        }
        return Ok(());
    }
    read_exactly(stream, announced, &mut buf)?;
    stream.write_all(&[1])
}

/// Reads `n` bytes and drops them.
fn read_exactly(stream: &mut TcpStream, n: u64, buf: &mut [u8]) -> io::Result<()> {
    let mut left = n;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let got = stream.read(&mut buf[..want])?;
        if got == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "sender closed early"));
        }
        left -= got as u64;
    }
    Ok(())
}

/// Writes `n` filler bytes.
fn write_bytes(stream: &mut TcpStream, n: u64) -> io::Result<()> {
    let chunk = [0x5au8; 64 * 1024];
    let mut left = n;
    while left > 0 {
        let k = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        stream.write_all(&chunk[..k])?;
        left -= k as u64;
    }
    Ok(())
}

/// One TCP_INFO sample.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the client started connecting.
    pub time: f64,
    #[serde(flatten)]
    pub info: TcpInfo,
}

/// What the client reports (one JSON line on stdout).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BulkResult {
    pub bytes: u64,
    pub cc: String,
    /// From the start of connect() to the server's acknowledgement, s.
    pub elapsed: f64,
    /// bytes·8 / elapsed.
    pub goodput_bps: f64,
    /// Slope of bytes acknowledged from the first sample in the Open state
    /// after 20% was acknowledged to the end: goodput without the handshake and slow
    /// start.
    pub steady_goodput_bps: Option<f64>,
    /// TCP_INFO at the end of the transfer.
    pub final_info: TcpInfo,
    pub samples: usize,
}

/// Client settings.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// The server's address, of either family.
    pub server: IpAddr,
    pub port: u16,
    pub app: App,
    pub cc: String,
    /// TCP_INFO sampling interval; zero: none.
    pub interval: std::time::Duration,
    /// Give up connecting after this long.
    pub connect_timeout: std::time::Duration,
    /// TCP_MAXSEG before connecting: the largest segment the client
    /// announces and sends.
    pub mss: Option<u32>,
}

/// Sends `options.bytes` to the server; returns the result and the samples.
pub fn send(options: &ClientOptions) -> io::Result<(BulkResult, Vec<Sample>)> {
    let start = std::time::Instant::now();
    let stream = connect_with_cc(options, start)?;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = (!options.interval.is_zero()).then(|| {
        let fd: OwnedFd = stream.as_fd().try_clone_to_owned().expect("dup a socket");
        let stop = Arc::clone(&stop);
        let interval = options.interval;
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                // The clock is read before TCP_INFO: a thread preempted
                // between the two then reports counters no older than
                // its time, so a slope from this sample to a later one
                // never overstates the rate (read after, a 1 ms delay
                // overstated a 4 s steady goodput by 0.025 %).
                let time = start.elapsed().as_secs_f64();
                if let Ok(info) = tcp_info::read(fd.as_fd()) {
                    samples.push(Sample { time, info });
                }
                std::thread::sleep(interval);
            }
            samples
        })
    });
    let mut stream = stream;
    let outcome = run_app(&mut stream, options.app);
    let elapsed = start.elapsed().as_secs_f64();
    let final_info = tcp_info::read(stream.as_fd()).unwrap_or_default();
    stop.store(true, Ordering::Relaxed);
    let mut samples = sampler.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    let bytes = outcome?;
    samples.push(Sample { time: elapsed, info: final_info });
    let steady_goodput_bps = steady_goodput(&samples, bytes);
    let result = BulkResult {
        bytes,
        cc: options.cc.clone(),
        elapsed,
        goodput_bps: bytes as f64 * 8.0 / elapsed,
        steady_goodput_bps,
        final_info,
        samples: samples.len(),
    };
    Ok((result, samples))
}

/// Runs `app` over the connection; returns the bytes carried (both ways
/// for exchanges).
fn run_app(stream: &mut TcpStream, app: App) -> io::Result<u64> {
    let mut ack = [0u8; 1];
    match app {
        App::Bytes(bytes) => {
            // The length goes with the first bytes, in one write: alone it
            // would leave as an 8-byte segment, and Linux's Nagle test
            // (Minshall's variant, net/ipv4/tcp_output.c
            // tcp_minshall_check) would then hold the transfer's last
            // partial segment until that small one is acknowledged, a
            // round trip more for a transfer of one window.
            let first = bytes.min(64 * 1024);
            let mut head = bytes.to_be_bytes().to_vec();
            head.resize(8 + first as usize, 0x5a);
            stream.write_all(&head)?;
            write_bytes(stream, bytes - first)?;
            stream.read_exact(&mut ack)?;
            Ok(bytes)
        }
        App::For(duration) => {
            stream.write_all(&FOR_A_TIME.to_be_bytes())?;
            let chunk = [0x5au8; 64 * 1024];
            let start = std::time::Instant::now();
            let mut sent = 0u64;
            while start.elapsed() < duration {
                stream.write_all(&chunk)?;
                sent += chunk.len() as u64;
            }
            stream.shutdown(std::net::Shutdown::Write)?;
            stream.read_exact(&mut ack)?;
            Ok(sent)
        }
        App::Exchanges { request, response, count, think } => {
            for v in [EXCHANGES, request, response, u64::from(count)] {
                stream.write_all(&v.to_be_bytes())?;
            }
            let mut buf = vec![0u8; 256 * 1024];
            for i in 0..count {
                if i > 0 {
                    std::thread::sleep(think);
                }
                write_bytes(stream, request)?;
                read_exactly(stream, response, &mut buf)?;
            }
            Ok((request + response) * u64::from(count))
        }
    }
}

/// Bytes-acknowledged slope from the first sample past 20% of `bytes` in
/// the Open state (in recovery, data the receiver holds beyond a hole is
/// not yet counted as acknowledged) to the last sample, bit/s.
fn steady_goodput(samples: &[Sample], bytes: u64) -> Option<f64> {
    let from = samples.iter().find(|s| s.info.bytes_acked >= bytes / 5 && s.info.ca_state == 0)?;
    let to = samples.last()?;
    let dt = to.time - from.time;
    (dt > 0.0).then(|| (to.info.bytes_acked - from.info.bytes_acked) as f64 * 8.0 / dt)
}

fn connect_with_cc(options: &ClientOptions, start: std::time::Instant) -> io::Result<TcpStream> {
    let addr = SockaddrStorage::from(SocketAddr::new(options.server, options.port));
    let family = if options.server.is_ipv6() { AddressFamily::Inet6 } else { AddressFamily::Inet };
    loop {
        let fd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
        setsockopt(&fd, sockopt::TcpCongestion, &std::ffi::OsString::from(&options.cc))
            .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("TCP_CONGESTION {}: {e}", options.cc)))?;
        if let Some(mss) = options.mss {
            crate::sys::socket::set_int(&fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, mss, "TCP_MAXSEG")?;
        }
        match connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr) {
            Ok(()) => return Ok(TcpStream::from(fd)),
            Err(e) if start.elapsed() < options.connect_timeout => {
                let _ = e;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => return Err(io::Error::from(e)),
        }
    }
}

/// Writes samples as CSV with a header row: time (s since the client
/// started), then the [`TcpInfo`] fields in the kernel's units (cwnd and
/// ssthresh in segments of `snd_mss` bytes, times in µs).
pub fn write_samples_csv(mut w: impl Write, samples: &[Sample]) -> io::Result<()> {
    writeln!(
        w,
        "time,cwnd,ssthresh,rtt_us,rttvar_us,min_rtt_us,rto_us,total_retrans,retransmits,bytes_acked,bytes_retrans,delivery_rate,ca_state,snd_mss"
    )?;
    for s in samples {
        let i = &s.info;
        writeln!(
            w,
            "{:.6},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            s.time,
            i.cwnd,
            i.ssthresh,
            i.rtt_us,
            i.rttvar_us,
            i.min_rtt_us,
            i.rto_us,
            i.total_retrans,
            i.retransmits,
            i.bytes_acked,
            i.bytes_retrans,
            i.delivery_rate,
            i.ca_state,
            i.snd_mss
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_over_loopback_with_reno() {
        let (result, samples) = over_loopback(App::Bytes(1_000_000), "reno", std::time::Duration::from_millis(1));
        assert_eq!(result.bytes, 1_000_000);
        assert!(result.elapsed > 0.0);
        assert!(!samples.is_empty());
        let mut csv = Vec::new();
        write_samples_csv(&mut csv, &samples).unwrap();
        assert!(String::from_utf8(csv).unwrap().starts_with("time,cwnd"));
    }

    /// Runs `app` with congestion control `cc` against a loopback server,
    /// sampling TCP_INFO every `interval` (zero: only at the end); the
    /// client's result and samples.
    fn over_loopback(app: App, cc: &str, interval: std::time::Duration) -> (BulkResult, Vec<Sample>) {
        over_loopback_to(std::net::Ipv4Addr::LOCALHOST.into(), app, cc, interval)
    }

    fn over_loopback_to(to: IpAddr, app: App, cc: &str, interval: std::time::Duration) -> (BulkResult, Vec<Sample>) {
        let listener = crate::tools::tcp_listener(0).unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            receive(&mut s).unwrap();
        });
        let options = ClientOptions {
            server: to,
            port,
            app,
            cc: cc.into(),
            interval,
            connect_timeout: std::time::Duration::from_secs(2),
            mss: None,
        };
        let sent = send(&options).unwrap();
        server.join().unwrap();
        sent
    }

    /// The server's listener takes both families on one port: an IPv6
    /// client (::1) and an IPv4 one (127.0.0.1, as ::ffff:127.0.0.1).
    #[test]
    fn one_listener_serves_both_families() {
        for to in [std::net::Ipv6Addr::LOCALHOST.into(), std::net::Ipv4Addr::LOCALHOST.into()] {
            if to == IpAddr::from(std::net::Ipv6Addr::LOCALHOST) && std::net::UdpSocket::bind("[::1]:0").is_err() {
                eprintln!("no IPv6 on loopback here: the IPv6 half is skipped");
                continue;
            }
            let (r, _) = over_loopback_to(to, App::Bytes(100_000), "cubic", std::time::Duration::ZERO);
            assert_eq!(r.bytes, 100_000, "to {to}");
        }
    }

    #[test]
    fn bulk_for_sends_until_its_time_is_up() {
        let (r, _) = over_loopback(App::For(std::time::Duration::from_millis(300)), "cubic", std::time::Duration::ZERO);
        assert!(r.elapsed >= 0.3 && r.elapsed < 5.0, "{}", r.elapsed);
        assert!(r.bytes >= 64 * 1024, "{}", r.bytes);
    }

    #[test]
    fn exchanges_take_count_round_trips_and_think_times() {
        let think = std::time::Duration::from_millis(50);
        let (r, _) = over_loopback(
            App::Exchanges { request: 300, response: 200_000, count: 4, think },
            "cubic",
            std::time::Duration::ZERO,
        );
        assert_eq!(r.bytes, 4 * 200_300);
        // Three think times between four exchanges.
        assert!(r.elapsed >= 0.15, "{}", r.elapsed);
    }
}
