//! A host joined to squall by a veth pair read and written with AF_XDP
//! (`squall emu --host-device xdp`) instead of a TUN device: squall reads
//! a whole batch of frames from a shared ring with no system call per
//! frame, which a TUN device cannot do, and so carries small packets at a
//! higher rate (docs/guide, "Emulation: Which device joins a host: TUN or AF_XDP": measured with
//! `squall bench emu`). The XDP hook of a veth turns its peer's
//! segmentation offload off, so TCP flights come as wire-sized packets:
//! for bulk TCP the TUN device (the default) is the faster one.
//!
//! Both ends of the pair are in the host's namespace, the host's end
//! ([`TUN_NAME`], the name a TUN device would have) with its address and
//! routes, the other ([`OUTER_NAME`]) with the AF_XDP socket: they go with
//! the namespace, however the run ends. The host's end does not use ARP
//! (IFF_NOARP: it sends every IP packet to squall's end as it is), and
//! squall's frames to the host carry the host end's address, so squall
//! presents bare IP packets to the data plane, as a TUN device does.

use std::io;
use std::net::IpAddr;
use std::os::fd::BorrowedFd;

use squall_link::{Addresses, Payload};

use crate::error::EmuError;
use crate::naming::TUN_NAME;
use crate::sys::device::PacketDevice;
use crate::sys::netns::NetNs;
use crate::sys::xdp_socket::XdpSocket;

/// The name of squall's end of the pair, in the host's namespace.
pub const OUTER_NAME: &str = "squall0-xdp";
/// Locally administered addresses (IEEE 802 "U/L" bit set) of the host's
/// end and squall's end; each pair is alone on its link.
const HOST_MAC: [u8; 6] = [0x02, 0x73, 0x71, 0, 0, 0x01];
const OUTER_MAC: [u8; 6] = [0x02, 0x73, 0x71, 0, 0, 0x02];

/// Bytes of the Ethernet header.
const ETHERNET: usize = 14;

fn mac(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// One host's veth pair and the AF_XDP socket on squall's end.
pub struct VethHost {
    xdp: XdpSocket,
    label: String,
    netns: NetNs,
    /// The header of every frame to the host (EtherType set per packet).
    header: [u8; ETHERNET],
}

impl VethHost {
    /// Makes the pair in `ns`, gives the host's end the host's `addresses`,
    /// `mtu`, and a route to each of `peers` of a family the host has
    /// ([`crate::sys::device::address_device`]), and opens the AF_XDP
    /// socket on squall's end. A host without an IPv6 address gets IPv6
    /// switched off in the namespace, as for a TUN device: the device
    /// carries the workloads' IPv4 traffic.
    pub fn create(ns: &NetNs, addresses: Addresses, peers: &[IpAddr], mtu: u32) -> Result<VethHost, EmuError> {
        if addresses.v6.is_none() {
            ns.run_in(|| {
                for key in ["all", "default"] {
                    let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6"), "1");
                }
                Ok(())
            })?;
        }
        let mtu = mtu.to_string();
        ns.ip(&[
            "link",
            "add",
            TUN_NAME,
            "address",
            &mac(HOST_MAC),
            "mtu",
            &mtu,
            "type",
            "veth",
            "peer",
            "name",
            OUTER_NAME,
            "address",
            &mac(OUTER_MAC),
            "mtu",
            &mtu,
        ])?;
        if addresses.v6.is_some() {
            // squall's end makes no link-local address either: it would
            // send its own router solicitations to the host.
            ns.run_in(|| {
                let path = format!("/proc/sys/net/ipv6/conf/{OUTER_NAME}/addr_gen_mode");
                std::fs::write(&path, "1").map_err(|e| EmuError::io(format!("{}: write 1 to {path}", ns.name()), e))
            })?;
        }
        ns.ip(&["link", "set", OUTER_NAME, "arp", "off", "up"])?;
        crate::sys::device::address_device(ns, TUN_NAME, addresses, peers, &["arp", "off"])?;
        // The host computes its own checksums, as it copies the data in
        // (on its CPU), instead of leaving them for squall to complete.
        ns.run_in(|| {
            transmit_checksums_off(TUN_NAME)
                .map_err(|e| EmuError::io(format!("{}: turn transmit checksum offload off", ns.name()), e))
        })?;
        let xdp = ns.run_in(|| XdpSocket::open(OUTER_NAME))?;
        let mut header = [0u8; ETHERNET];
        header[..6].copy_from_slice(&HOST_MAC);
        header[6..12].copy_from_slice(&OUTER_MAC);
        Ok(VethHost { xdp, label: format!("{}/{OUTER_NAME}", ns.name()), netns: ns.clone(), header })
    }
}

/// ETHTOOL_STXCSUM on interface `name` of this thread's namespace, off
/// (the ioctl `ethtool -K NAME tx off` makes).
fn transmit_checksums_off(name: &str) -> io::Result<()> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_STXCSUM: u32 = 0x17;
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    let mut value = EthtoolValue { cmd: ETHTOOL_STXCSUM, data: 0 };
    // SIOCETHTOOL reads the ethtool_value the union points to, alive for
    // the call.
    crate::sys::interface::interface_ioctl(name, SIOCETHTOOL, |req| {
        req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    })?;
    Ok(())
}

impl PacketDevice for VethHost {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.xdp.fd()
    }

    /// The IP packet of the next frame from the host (a frame too short
    /// for an Ethernet header gives an empty packet, which the data plane
    /// drops with its reason).
    fn recv(&mut self) -> io::Result<Option<Payload>> {
        Ok(self.xdp.recv_skipping(ETHERNET).map(Payload::Owned))
    }

    fn send(&mut self, packet: &[u8]) -> io::Result<()> {
        let mut written = [false];
        self.xdp.send_framed(&[packet], &mut written, &self.header);
        match written[0] {
            true => Ok(()),
            false => Err(self.xdp.write_error().unwrap_or_else(|| io::Error::from_raw_os_error(libc::ENOBUFS))),
        }
    }

    fn send_batch(&mut self, packets: &[&Payload], written: &mut [bool]) {
        crate::sys::device::with_slices(packets, |packets| self.xdp.send_framed(packets, written, &self.header));
    }

    fn write_error(&mut self) -> Option<io::Error> {
        self.xdp.write_error()
    }

    fn last_age(&self) -> Option<std::time::Duration> {
        self.xdp.last_age()
    }

    fn dropped_after_write(&mut self) -> u64 {
        self.xdp.dropped_after_write()
    }

    /// What the host's end dropped on its way to squall's (the pair's
    /// queue was full), and what the socket dropped (its ring was full).
    fn kernel_dropped(&mut self) -> u64 {
        let ns = &self.netns;
        let veth = crate::sys::device::tun_dropped(Some(ns), TUN_NAME).unwrap_or_else(|e| {
            tracing::warn!("squall emu: {}: packets dropped before squall unknown: {e}", self.label);
            0
        });
        veth + self.xdp.dropped()
    }
}
