//! squall-sim: the discrete-event engine. Virtual time, as fast as the CPU
//! allows; hosts with agents (UDP sources and sinks now, TCP later) joined
//! by squall-link paths; the state schedule applied to every path at once.
//!
//! Contract used by the CLI and the validation cases:
//! [`run`]`(scenario, seed, options) -> RunResult`.
//!
//! The process model is seed 001 §2.1's: a scheduler that keeps the
//! virtual clock (`scheduler`), sources and sinks (`agent`, `udp`), and
//! between them queues and servers, which here are squall-link's paths
//! (`network`). Modules:
//!
//! - `scheduler`: activation requests in total order (time, sequence);
//! - `engine`: builds a run from a scenario and drives it;
//! - `network`, `host`, `routing`: hosts, paths, next hops, forwarding;
//! - [`agent`]: the agent interface ([`agent::Agent`], [`agent::Ctx`]);
//! - [`udp`]: the UDP source and sink;
//! - [`tcp`]: TCP clients, servers and the split-TCP proxy (squall-tcp's
//!   connections in the engine);
//! - `ledger`, `metrics`: packets inside the network, per-flow measures;
//! - `replications`: a scenario's replications on several threads.

pub mod agent;
pub mod any_agent;
mod engine;
mod hash;
mod host;
pub mod ideal;
mod ids;
mod ledger;
mod metrics;
mod network;
mod ports;
mod recorder;
mod replications;
mod result;
mod scheduler;
pub mod tcp;
pub mod udp;
mod vectors;

pub use host::HostId;
pub use recorder::{EventFilter, FileRecorder, RunRecorder, tcp_trace_stem};
pub use replications::{for_each_replication, run_replications, run_replications_with};
pub use result::*;
pub use squall_scenario::ports::{tcp_ports, udp_ports};
pub use vectors::{CwndLife, VECTORS_HEADER, VectorWriter, class_source, tcp_source};

use squall_link::Instant;
use squall_scenario::Scenario;

/// What a run records beyond its counters (all of it costs memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Keep every model event (for events.csv).
    pub record_events: bool,
    /// Keep one record per packet sent by an agent (send time, fate).
    pub record_packets: bool,
    /// Keep every packet each host sent and received (for pcap).
    pub record_captures: bool,
}

/// Why a run could not be made or finished.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario names something that does not exist or cannot run.
    #[error("scenario cannot run: {0}")]
    Scenario(String),
    /// A path's configuration was refused by the model.
    #[error(transparent)]
    Config(#[from] squall_link::ConfigError),
    /// Packets were created or lost without a recorded reason: a bug.
    #[error("packet conservation violated: {0}")]
    Conservation(String),
    /// Virtual time stopped advancing (too many wakeups at one instant), or
    /// a bounded run ([`run_bounded`]) was not over within its bound.
    #[error("livelock: {wakeups} wakeups and virtual time stuck at {at} s")]
    Livelock { wakeups: u64, at: Instant },
    /// A TCP connection that names no port found none free on its host
    /// (crate::ports).
    #[error(
        "host `{host}`: no ephemeral port free in {range} for a connection of workload.tcp `{flow}` at {at} s: \
         {held} connections of the host hold one (open, or in TIME-WAIT for 60 s after closing) and {other} \
         are bound by flows that name their ports or by servers; give the host a wider range, like \
         ephemeral_ports = \"32768-60999\", or the flow a `src_port`"
    )]
    PortsExhausted {
        host: String,
        range: squall_scenario::EphemeralPorts,
        flow: String,
        at: Instant,
        held: usize,
        other: usize,
    },
}

/// Runs one replication of `scenario` with `seed`, until the scenario's
/// duration has elapsed in virtual time.
///
/// Deterministic: the same scenario and seed give the same result, events
/// included. Every random stream is seeded from `seed` and a stable name.
///
/// The events and captures are kept in the result: memory grows with the
/// run. [`run_recorded`] streams them instead.
pub fn run(scenario: &Scenario, seed: u64, options: RunOptions) -> Result<RunResult, SimError> {
    let mut sim = engine::Simulation::new(scenario, seed, options, None)?;
    sim.run(None)?;
    Ok(sim.finish()?.0)
}

/// [`run`], handing the events and captures to `recorder` as the run makes
/// them (the result holds none), so memory stays bounded however long the
/// run; the recorder comes back with the result, to be finished
/// ([`RunRecorder::finish`]).
pub fn run_recorded(
    scenario: &Scenario,
    seed: u64,
    options: RunOptions,
    recorder: Box<dyn RunRecorder>,
) -> Result<(RunResult, Box<dyn RunRecorder>), SimError> {
    let mut sim = engine::Simulation::new(scenario, seed, options, Some(recorder))?;
    sim.run(None)?;
    match sim.finish()? {
        (result, Some(recorder)) => Ok((result, recorder)),
        (_, None) => unreachable!("a run given a recorder streams to it"),
    }
}

/// [`run`], but fails with [`SimError::Livelock`] if the run is not over
/// after `max_wakeups` engine wakeups: a step bound for tests (quinn's
/// `drive_bounded`), so a livelock fails instead of hanging.
pub fn run_bounded(
    scenario: &Scenario,
    seed: u64,
    options: RunOptions,
    max_wakeups: u64,
) -> Result<RunResult, SimError> {
    let mut sim = engine::Simulation::new(scenario, seed, options, None)?;
    sim.run(Some(max_wakeups))?;
    Ok(sim.finish()?.0)
}
