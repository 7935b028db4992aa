//! Pure byte code: packets and frames as the kernel hands them to squall,
//! read into the model's packets and cut or coalesced for the wire. No
//! system call, no clock, no `unsafe`: every function takes bytes and
//! returns values, so each parser can be a fuzz target (`squall-inputs`).
//!
//! - [`offload`]: `virtio_net_hdr`, GSO super-frames split into wire-sized
//!   segments and coalesced again, checksums (RFC 1071).
//! - [`ipv4`]: an IPv4 packet (RFC 791) read into a model packet.
//! - [`ethernet`]: Ethernet frames (IEEE 802.3) sorted for inline mode.
#![forbid(unsafe_code)]

pub mod ethernet;
pub mod ipv4;
pub mod offload;
