//! squall-tcp: a TCP model with no I/O and no clock (the sans-IO shape of
//! quinn-proto; smoltcp's `socket/tcp.rs` for the state machine).
//!
//! Read RFC 9293 before working on [`connection`]; each file names the RFCs
//! it follows. Time comes in as a [`squall_link::Instant`]; data is virtual
//! (byte counts). Modules:
//!
//! - [`segment`]: what travels (header fields, options, virtual payload);
//! - [`config`]: every setting, with its RFC default;
//! - [`rtt`]: RFC 6298 RTT estimation, Karn's rule and backoff;
//! - [`congestion`]: the congestion control trait and Tahoe, Reno, NewReno,
//!   SACK and CUBIC;
//! - [`connection`]: one connection end: handshake, data, ACKs, timers,
//!   close.

pub mod config;
pub mod congestion;
pub mod connection;
pub mod rtt;
pub mod segment;

pub use config::{CcKind, ConfigError, DelayedAck, LossDetection, Profile, RtoVariant, TcpConfig, WindowGrowth};
pub use congestion::{AckSample, AnyCongestionControl, CongestionControl, LossRecovery, RateSample};
pub use connection::{CcSnapshot, Connection, SendError, State, TcpStats};
pub use segment::{
    Flags, IP_HEADER_LEN, MAX_SACK_BLOCKS, MAX_SACK_BLOCKS_WITH_TIMESTAMPS, SackBlocks, Segment, TCP_HEADER_LEN,
    TIMESTAMP_OPTION_LEN, Timestamp,
};
