//! The traffic tools squall runs inside hosts (`squall tool ...`) and its
//! benchmarks: no engine code; their system calls are in [`crate::sys`].
//!
//! - [`bulk`]: bulk transfer and request/response over TCP, with
//!   [`tcp_info`] samples (`squall tool bulk`).
//! - [`blast`]: UDP sender and sink of the forwarding benchmark.
//! - [`udp_flow`]: a scenario's UDP flow sent by real sockets
//!   (`squall tool udp-flow`).
#![forbid(unsafe_code)]

pub mod blast;
pub mod bulk;
pub mod tcp_info;
pub mod udp_flow;
