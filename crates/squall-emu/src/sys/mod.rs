//! Every call into the kernel that needs `unsafe`, and the devices built
//! on them: the only module of the crate allowed `unsafe` (the crate root
//! denies it), as smoltcp confines it to `src/phy/sys/`. Each `unsafe`
//! block carries a SAFETY comment.
//!
//! - [`device`]: the [`device::PacketDevice`] trait and TUN devices
//!   (`IFF_VNET_HDR`, TUNSETOFFLOAD).
//! - [`packet_socket`]: AF_PACKET sockets with receive rings (packet(7)).
//! - [`xsk`], [`xdp_socket`], [`xdp_redirect`]: AF_XDP rings, sockets and
//!   the XDP program loaded with bpf(2); [`veth_host`] a host joined by a
//!   veth pair read with AF_XDP.
//! - [`interface`]: interface ioctls (netdevice(7)).
//! - [`netns`]: network namespaces (`ip netns`, setns(2)).
//! - [`sched`]: timer slack, the real-time class, CPU affinity.
//! - [`socket`]: socket options and TCP_INFO for the tools.
//! - [`lock`]: flock(2) on lock files.
#![allow(unsafe_code)]

pub mod device;
pub mod interface;
pub mod lock;
pub mod netns;
pub mod packet_socket;
pub mod sched;
pub mod socket;
#[cfg(test)]
pub(crate) mod test_env;
pub mod veth_host;
pub mod xdp_redirect;
pub mod xdp_socket;
pub mod xsk;
