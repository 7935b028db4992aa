//! Socket options the tools set and read (socket(7), tcp(7), ip(7)).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Sets an integer socket option, naming it in the error.
pub fn set_int(socket: &impl std::os::fd::AsRawFd, level: i32, option: i32, value: u32, name: &str) -> io::Result<()> {
    let value = value as libc::c_int;
    // SAFETY: the option takes a c_int that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{name} = {value}: {e}")))
    }
}

/// The kernel's `struct tcp_info` up to `tcpi_reord_seen` (Linux 5.4+),
/// field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RawTcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
}

/// Reads TCP_INFO from a connected TCP socket (tcp(7)).
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<RawTcpInfo> {
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
        return Err(io::Error::last_os_error());
    }
    Ok(raw)
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
}
