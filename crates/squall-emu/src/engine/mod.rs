//! The emulation: one run set up, driven in real time and torn down.
//!
//! - [`emulation::run`]: attach the hosts' devices, build the model,
//!   supervise the data plane and the workloads, tear down.
//! - [`dataplane`]: the real-time loop, with [`clock`] and [`timing`].
//! - [`routing`]: which path a packet takes.
//! - [`recording`]: pcaps, events.csv and timing.csv streamed to disk by a
//!   writer thread through a bounded queue.
//! - [`inline`]: squall between two existing interfaces; [`uplink`]: the
//!   outside host, whose packets leave through a real interface.
//! - [`joined`]: existing namespaces (containers) as hosts.
//! - [`control`]: the `squall ctl` socket; [`watch`]: its live view.
//! - [`workload`]: commands per host.
//! - [`cleanup`]: stale objects of dead runs, signals.
//! - [`baseline`]: the benchmark's baselines (plain veth, bare forwarder).

pub mod baseline;
pub mod cleanup;
pub mod clock;
pub mod command;
pub mod control;
pub mod dataplane;
pub mod emulation;
mod histogram;
pub mod inline;
pub mod joined;
pub mod recording;
pub mod routing;
pub mod timing;
pub mod uplink;
pub mod wakeup;
pub mod watch;
pub mod workload;
