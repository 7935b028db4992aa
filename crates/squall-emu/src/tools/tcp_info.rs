//! TCP_INFO (Linux `include/uapi/linux/tcp.h`, `struct tcp_info`): the
//! kernel's view of a connection, sampled by the bulk tool.

use std::os::fd::BorrowedFd;

use serde::{Deserialize, Serialize};

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
    let raw = crate::sys::socket::tcp_info(fd)?;
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
    fn reads_info_of_a_loopback_connection() {
        use std::os::fd::AsFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let info = read(client.as_fd()).unwrap();
        assert!(info.cwnd > 0);
        assert!(info.snd_mss > 0);
    }
}
