//! TCP_INFO (Linux `include/uapi/linux/tcp.h`, `struct tcp_info`): the
//! kernel's view of a connection, sampled by the bulk tool.
#![allow(unsafe_code)] // system calls; they move into `sys` (issue 29)

use std::os::fd::{AsRawFd, BorrowedFd};

use serde::{Deserialize, Serialize};

/// The kernel's `struct tcp_info` up to `tcpi_reord_seen` (Linux 5.4+),
/// field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
}

/// The fields squall records, in the kernel's units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments (very large: not set yet).
    pub ssthresh: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// RTT variation, µs.
    pub rttvar_us: u32,
    /// Smallest RTT seen, µs.
    pub min_rtt_us: u32,
    /// Retransmission timeout, µs.
    pub rto_us: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Unrecovered RTO timeouts in a row.
    pub retransmits: u8,
    /// Bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Bytes retransmitted.
    pub bytes_retrans: u64,
    /// Delivery rate estimate, bytes per second.
    pub delivery_rate: u64,
    /// Sending MSS, bytes.
    pub snd_mss: u32,
    /// Congestion-avoidance state (0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss).
    pub ca_state: u8,
}

/// Reads TCP_INFO from a connected TCP socket.
pub fn read(fd: BorrowedFd<'_>) -> std::io::Result<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let mut len = std::mem::size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: `raw` is a plain struct of integers at least `len` long; the
    // kernel writes at most `len` bytes and reports how many.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(TcpInfo {
        cwnd: raw.snd_cwnd,
        ssthresh: raw.snd_ssthresh,
        rtt_us: raw.rtt,
        rttvar_us: raw.rttvar,
        min_rtt_us: raw.min_rtt,
        rto_us: raw.rto,
        total_retrans: raw.total_retrans,
        retransmits: raw.retransmits,
        bytes_acked: raw.bytes_acked,
        bytes_retrans: raw.bytes_retrans,
        delivery_rate: raw.delivery_rate,
        snd_mss: raw.snd_mss,
        ca_state: raw.ca_state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(std::mem::offset_of!(RawTcpInfo, rtt), 68);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, snd_cwnd), 80);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, pacing_rate), 104);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, min_rtt), 148);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, delivery_rate), 160);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, bytes_retrans), 208);
    }

    #[test]
    fn reads_info_of_a_loopback_connection() {
        use std::os::fd::AsFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let info = read(client.as_fd()).unwrap();
        assert!(info.cwnd > 0);
        assert!(info.snd_mss > 0);
    }
}
