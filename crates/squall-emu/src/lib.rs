//! squall-emu: the emulate engine (docs/design.md). Real applications and the
//! real Linux TCP stack run in network namespaces, one per host of the
//! scenario; their packets come to squall through TUN devices and are
//! carried through the same squall-link paths the simulator uses, driven
//! by the wall clock (seed 000 §4 and §6; seed 002 §II.C).
//!
//! The crate is in four layers; each depends only on those below it:
//!
//! - [`engine`]: one run, attached, modelled, supervised and torn down
//!   ([`engine::emulation::run`]), its data plane, routing, recording,
//!   control socket and workloads.
//! - [`tools`]: the traffic tools run inside hosts (bulk, blast, UDP flow,
//!   TCP_INFO).
//! - [`sys`]: every system call that needs `unsafe` (TUN, packet sockets,
//!   AF_XDP rings, BPF, interface ioctls, namespaces, scheduling, socket
//!   options, locks): the only module allowed `unsafe`.
//! - [`wire`]: pure byte code (offloads, IPv4 and IPv6, Ethernet, checksums).
//!
//! [`error`] and [`naming`] are shared by all. Messages go through the
//! `tracing` facade; the binary decides where they are printed.
//!
//! The modules are also re-exported at the root under the names the CLI
//! has used since before the layers (`squall_emu::dataplane`, ...).
#![deny(unsafe_code)]

pub mod engine;
pub mod error;
pub mod naming;
pub mod record;
pub mod sys;
pub mod tools;
pub mod wire;

pub use engine::emulation::{EmulationOptions, EmulationReport, EndReason, HostDevice, run};
#[doc(no_inline)]
pub use engine::{
    baseline, cleanup, clock, control, dataplane, emulation, inline, recording, routing, timing, uplink, wakeup,
    workload,
};
pub use error::EmuError;
#[doc(no_inline)]
pub use sys::{device, interface, netns, packet_socket, veth_host, xdp_redirect, xdp_socket, xsk};
#[doc(no_inline)]
pub use tools::{blast, bulk, tcp_info, udp_flow};
#[doc(no_inline)]
pub use wire::{ethernet, ip, ipv4, ipv6, offload};
