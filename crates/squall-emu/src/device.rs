//! The devices through which hosts' packets enter and leave squall.
//!
//! [`PacketDevice`] is what the data plane needs from one: a pollable fd,
//! read one IP packet, write one IP packet. [`TunDevice`] is a TUN device
//! inside a host's namespace (seed 000 §4.1: the NPA's "virtual network
//! interface"); an AF_PACKET bridge between two real interfaces would be a
//! second implementation beside it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::error::{Context, EmuError};
use crate::naming::TUN_NAME;
use crate::netns::NetNs;

/// A device carrying raw IPv4 packets between one host and squall.
pub trait PacketDevice: Send {
    /// A name for logs: the host and device.
    fn label(&self) -> &str;
    /// The fd to poll for readability.
    fn fd(&self) -> BorrowedFd<'_>;
    /// Reads one packet into `buf`; `Ok(None)` when none is waiting.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// Hands one packet to the host.
    fn send(&mut self, packet: &[u8]) -> io::Result<()>;
}

nix::ioctl_write_ptr_bad!(tun_set_iff, 0x4004_54ca, libc::ifreq);

/// A TUN device (IFF_TUN | IFF_NO_PI: bare IP packets) in a host's
/// namespace, opened non-blocking.
pub struct TunDevice {
    file: File,
    label: String,
}

impl TunDevice {
    /// Creates the TUN device [`TUN_NAME`] inside `ns`, gives it `address`
    /// (/32), brings it up and routes each of `peers` (/32) through it.
    /// IPv6 is switched off in the namespace so the device carries only
    /// the IPv4 traffic of the workloads.
    pub fn create(ns: &NetNs, address: Ipv4Addr, peers: &[Ipv4Addr], mtu: u32) -> Result<Self, EmuError> {
        let file = ns.run_in(|| {
            for key in ["all", "default"] {
                let path = format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6");
                // A kernel without IPv6 has no such file: nothing to switch off.
                let _ = std::fs::write(path, "1");
            }
            open_tun(TUN_NAME)
        })?;
        let addr = format!("{address}/32");
        let mtu = mtu.to_string();
        ns.ip(&["addr", "add", &addr, "dev", TUN_NAME])?;
        ns.ip(&["link", "set", TUN_NAME, "mtu", &mtu, "up"])?;
        for peer in peers {
            let dst = format!("{peer}/32");
            ns.ip(&["route", "add", &dst, "dev", TUN_NAME, "src", &address.to_string()])?;
        }
        Ok(TunDevice { file, label: format!("{}/{TUN_NAME}", ns.name()) })
    }
}

fn open_tun(name: &str) -> Result<File, EmuError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .context(|| "open /dev/net/tun".to_string())?;
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes().take(libc::IFNAMSIZ - 1)) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: the fd is a TUN control fd and `req` a valid ifreq.
    unsafe { tun_set_iff(file.as_raw_fd(), &req) }.context(|| format!("TUNSETIFF {name}"))?;
    Ok(file)
}

impl PacketDevice for TunDevice {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn send(&mut self, packet: &[u8]) -> io::Result<()> {
        self.file.write(packet).map(|_| ())
    }
}
