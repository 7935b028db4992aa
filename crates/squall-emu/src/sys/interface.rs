//! An existing interface by name: the ifreq that names it to the
//! kernel's interface ioctls (netdevice(7)), shared by the TUN device,
//! the packet socket, the AF_XDP socket and the veth host's offload
//! settings.

use std::io;
use std::os::fd::AsRawFd;

use crate::error::EmuError;

/// The index of interface `name` in this thread's namespace; an error
/// naming it when the name cannot be one or no interface has it.
pub(crate) fn index(name: &str) -> Result<u32, EmuError> {
    let refused = |m: String| EmuError::Interface { name: name.into(), message: m };
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(refused(format!("an interface name has 1 to {} bytes", libc::IFNAMSIZ - 1)));
    }
    let cname = std::ffi::CString::new(name).map_err(|_| refused("the name contains a NUL byte".into()))?;
    // SAFETY: a NUL-terminated name.
    match unsafe { libc::if_nametoindex(cname.as_ptr()) } {
        0 => Err(refused("no such interface (see `ip link`)".into())),
        i => Ok(i),
    }
}

/// An ifreq naming interface `name` (at most IFNAMSIZ - 1 bytes of it,
/// so the name ends with a NUL), its union zeroed.
pub(crate) fn ifreq_named(name: &[u8]) -> libc::ifreq {
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(name.iter().take(libc::IFNAMSIZ - 1)) {
        *dst = src as libc::c_char;
    }
    req
}

/// A new UDP socket of this thread's namespace: what the interface
/// ioctls (netdevice(7)) are called on, and answer for.
pub(crate) fn datagram_socket() -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: a new socket, closed by the OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is the socket just made, owned from here.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Calls ioctl `request` with an ifreq for interface `name` (in this
/// thread's namespace) on a new UDP socket, `fill` setting its union
/// first; the ifreq after the call.
pub(crate) fn interface_ioctl(
    name: &str,
    request: libc::c_ulong,
    fill: impl FnOnce(&mut libc::ifreq),
) -> io::Result<libc::ifreq> {
    let fd = datagram_socket()?;
    let mut req = ifreq_named(name.as_bytes());
    fill(&mut req);
    // SAFETY: `request` takes an ifreq; what its union points to (if
    // anything) is alive for the call, as `fill`'s caller guarantees.
    if unsafe { libc::ioctl(fd.as_raw_fd(), request, &mut req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(req)
}

/// Whether interface `name` is administratively up (SIOCGIFFLAGS on
/// `fd`, which answers for the socket's own network namespace).
pub(crate) fn is_up(fd: &std::os::fd::OwnedFd, name: &str) -> io::Result<bool> {
    Ok(flags(fd, name)? & libc::IFF_UP != 0)
}

/// Whether interface `name` is up and has its carrier (IFF_UP and
/// IFF_RUNNING, RFC 2863's operational state up), asked on `fd` as
/// [`is_up`].
pub(crate) fn is_running(fd: &std::os::fd::OwnedFd, name: &str) -> io::Result<bool> {
    let want = libc::IFF_UP | libc::IFF_RUNNING;
    Ok(flags(fd, name)? & want == want)
}

/// Interface `name`'s flags (SIOCGIFFLAGS on `fd`).
fn flags(fd: &std::os::fd::OwnedFd, name: &str) -> io::Result<i32> {
    let mut req = ifreq_named(name.as_bytes());
    // SAFETY: SIOCGIFFLAGS fills the ifreq it is given.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS wrote the flags member of the union.
    Ok(i32::from(unsafe { req.ifr_ifru.ifru_flags }) & 0xffff)
}

#[cfg(test)]
mod tests {
    /// A name longer than an interface name may be is cut to IFNAMSIZ - 1
    /// (15) bytes, so the kernel finds a NUL at its end.
    #[test]
    fn an_ifreq_name_ends_with_a_nul() {
        let req = super::ifreq_named(b"a-very-long-interface-name");
        let name: Vec<u8> = req.ifr_name.iter().map(|&c| c as u8).collect();
        assert_eq!(&name[..15], b"a-very-long-int");
        assert_eq!(name[15], 0);
        let short = super::ifreq_named(b"rfa");
        assert_eq!(short.ifr_name[..4].iter().map(|&c| c as u8).collect::<Vec<_>>(), b"rfa\0");
    }
}
