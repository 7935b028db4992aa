//! What can go wrong while setting up, running or tearing down an
//! emulation. One documented message per variant.

use std::io;

/// Errors of the emulate engine.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// An `ip` command (namespaces, addresses, routes) failed.
    #[error("`{command}` failed: {stderr}")]
    IpCommand { command: String, stderr: String },
    /// A system call failed; `what` says what squall was doing.
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    /// The scenario cannot be emulated as written.
    #[error("scenario: {0}")]
    Scenario(String),
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
    Recording(#[from] crate::recording::RecordingError),
    /// The outside host's interface cannot be used (missing, down), or
    /// what squall sets up around it failed.
    #[error("outside interface `{interface}`: {message}")]
    Uplink { interface: String, message: String },
    /// The control socket could not be used.
    #[error("control socket {path}: {message}")]
    Control { path: String, message: String },
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
