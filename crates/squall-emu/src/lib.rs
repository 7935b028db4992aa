//! squall-emu: the emulate engine (docs/design.md). Real applications and the
//! real Linux TCP stack run in network namespaces, one per host of the
//! scenario; their packets come to squall through TUN devices and are
//! carried through the same squall-link paths the simulator uses, driven
//! by the wall clock (seed 000 §4 and §6; seed 002 §II.C).
//!
//! - [`emulation::run`]: one run, set up and torn down.
//! - [`dataplane`]: the real-time loop and its timing record.
//! - [`recording`]: pcaps, events.csv and timing.csv streamed to disk by a
//!   writer thread through a bounded queue.
//! - [`netns`], [`device`]: namespaces and the [`device::PacketDevice`]
//!   trait with its TUN implementation.
//! - [`cleanup`]: stale objects of dead runs, signals.
//! - [`uplink`]: the outside host, a TUN device in the root namespace
//!   whose packets leave the machine through a real interface.
//! - [`control`]: the `squall ctl` socket.
//! - [`workload`]: commands per host.
//! - [`tcp_info`], [`bulk`]: the built-in bulk-transfer tool.

pub mod baseline;
pub mod blast;
pub mod bulk;
pub mod cleanup;
pub mod clock;
pub mod control;
pub mod dataplane;
pub mod device;
pub mod emulation;
pub mod error;
pub mod ethernet;
pub mod inline;
pub mod interface;
pub mod ipv4;
pub mod naming;
pub mod netns;
pub mod offload;
pub mod packet_socket;
pub mod recording;
pub mod routing;
pub mod tcp_info;
pub mod timing;
pub mod udp_flow;
pub mod uplink;
pub mod veth_host;
pub mod workload;
pub mod xdp_redirect;
pub mod xdp_socket;
pub mod xsk;

pub use emulation::{EmulationOptions, EmulationReport, EndReason, HostDevice, run};
pub use error::EmuError;
