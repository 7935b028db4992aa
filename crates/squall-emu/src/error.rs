//! What can go wrong while setting up, running or tearing down an
//! emulation. One documented message per variant.

use std::io;
use std::path::PathBuf;

use squall_trace::{EventLogError, PcapWriteError};

/// Errors of the emulate engine.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// An `ip` command (namespaces, addresses, routes) failed.
    #[error("`{command}` failed: {stderr}")]
    IpCommand { command: String, stderr: String },
    /// A system call failed; `what` says what squall was doing.
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    /// Inline mode cannot carry the scenario or the options as given
    /// (two hosts and one link, two different interfaces, no workloads, no
    /// outside host).
    #[error("scenario: {0}")]
    Inline(String),
    /// The scenario's hosts, links and routes do not make a topology.
    #[error("scenario: {0}")]
    Topology(#[from] squall_scenario::TopologyError),
    /// The data plane was asked to run on a CPU this process may not use.
    #[error("the data plane cannot run on CPU {cpu}: this process may use CPUs {usable:?}")]
    Cpu { cpu: usize, usable: Vec<usize> },
    /// A thread squall started (the data plane, one entered into a
    /// namespace) panicked; `thread` says which.
    #[error("{thread} panicked")]
    Panicked { thread: String },
    /// A tool squall ran (the bulk client, the UDP sink of the benchmark)
    /// printed something other than its JSON report.
    #[error("{tool} output: {source}")]
    ToolOutput { tool: &'static str, source: serde_json::Error },
    /// A device's counters are missing from a kernel table.
    #[error("{table} has no counters for {device}")]
    Counters { table: String, device: String },
    /// An interface named for inline mode cannot be used: missing, down,
    /// the machine's own, in use by another run, or its settings.
    #[error("interface `{name}`: {message}")]
    Interface { name: String, message: String },
    /// A workload's `HOST@TIME=COMMAND` specification is malformed.
    #[error("workload `{spec}`: {message}")]
    Workload { spec: String, message: String },
    /// The model rejected a path configuration.
    #[error("path {what}: {source}")]
    Path { what: String, source: squall_link::ConfigError },
    /// A host's sysctl could not be set in its namespace: the key does
    /// not exist there, or the kernel refused the value.
    #[error("host `{host}`: sysctl `{key}` = \"{value}\": {message}")]
    Sysctl { host: String, key: String, value: String, message: String },
    /// A recording file could not be started.
    #[error("recording: {0}")]
    Recording(#[from] RecordingError),
    /// The outside host's interface cannot be used (missing, down), or
    /// what squall sets up around it failed.
    /// An existing namespace a host names (`netns`, `netns_pid`) cannot
    /// be joined.
    #[error("host `{host}`: namespace {netns}: {message}")]
    Netns { host: String, netns: String, message: String },

    #[error("outside interface `{interface}`: {message}")]
    Uplink { interface: String, message: String },
    /// The control socket could not be used.
    #[error("control socket {path}: {message}")]
    Control { path: String, message: String },
}

/// Why a recording file could not be written. Before the run, the run
/// does not start; during it, the run goes on and the first error is
/// reported at its end.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// A pcap file could not be written.
    #[error("{path}: {source}")]
    Pcap { path: PathBuf, source: PcapWriteError },
    /// events.csv could not be written.
    #[error("{path}: {source}")]
    Events { path: PathBuf, source: EventLogError },
    /// timing.csv could not be written.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// The writer thread panicked.
    #[error("the recording thread panicked")]
    Panicked,
}

impl EmuError {
    /// Wraps an I/O error with what squall was doing.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        EmuError::Io { what: what.into(), source }
    }
}

impl From<nix::Error> for EmuError {
    fn from(e: nix::Error) -> Self {
        EmuError::io("system call", io::Error::from(e))
    }
}

/// Adds what squall was doing to a `nix` or `io` error.
pub(crate) trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EmuError>;
}

impl<T> Context<T> for Result<T, nix::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EmuError> {
        self.map_err(|e| EmuError::io(what(), io::Error::from(e)))
    }
}

impl<T> Context<T> for Result<T, io::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EmuError> {
        self.map_err(|e| EmuError::io(what(), e))
    }
}
