//! The traffic tools squall runs inside hosts (`squall tool ...`) and its
//! benchmarks: no engine code; their system calls are in [`crate::sys`].
//!
//! - [`bulk`]: bulk transfer and request/response over TCP, with
//!   [`tcp_info`] samples (`squall tool bulk`).
//! - [`blast`]: UDP sender and sink of the forwarding benchmark.
//! - [`udp_flow`]: a scenario's UDP flow sent by real sockets
//!   (`squall tool udp-flow`).
#![forbid(unsafe_code)]

pub mod blast;
pub mod bulk;
pub mod tcp_info;
pub mod udp_flow;

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV6, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, SockaddrIn6, bind, listen, setsockopt, socket, sockopt,
};

/// A socket bound to `port` on every address of both families: an IPv6
/// socket on `::` with IPV6_V6ONLY off, which takes IPv4 packets too as
/// IPv4-mapped addresses (RFC 3493 §3.7, Linux ipv6(7)), whatever
/// net.ipv6.bindv6only says; an IPv4 socket on 0.0.0.0 where the kernel
/// has no IPv6. A stream socket listens (SO_REUSEADDR set first, as
/// `std::net::TcpListener::bind` sets it).
fn bind_both_families(ty: SockType, port: u16) -> io::Result<Option<OwnedFd>> {
    let fd = match socket(AddressFamily::Inet6, ty, SockFlag::SOCK_CLOEXEC, None) {
        Ok(fd) => fd,
        Err(Errno::EAFNOSUPPORT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    setsockopt(&fd, sockopt::Ipv6V6Only, &false)?;
    if ty == SockType::Stream {
        setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    }
    bind(fd.as_raw_fd(), &SockaddrIn6::from(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, port, 0, 0)))?;
    if ty == SockType::Stream {
        listen(&fd, Backlog::new(128).map_err(io::Error::from)?)?;
    }
    Ok(Some(fd))
}

/// A TCP listener on `port` for both families ([`bind_both_families`]).
pub(crate) fn tcp_listener(port: u16) -> io::Result<TcpListener> {
    match bind_both_families(SockType::Stream, port)? {
        Some(fd) => Ok(TcpListener::from(fd)),
        None => TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)),
    }
}

/// A UDP socket on `port` for both families ([`bind_both_families`]).
pub(crate) fn udp_socket(port: u16) -> io::Result<UdpSocket> {
    match bind_both_families(SockType::Datagram, port)? {
        Some(fd) => Ok(UdpSocket::from(fd)),
        None => UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port)),
    }
}
