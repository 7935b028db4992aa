//! Pure byte code: packets and frames as the kernel hands them to squall,
//! read into the model's packets and cut or coalesced for the wire. No
//! system call, no clock, no `unsafe`: every function takes bytes and
//! returns values, so each parser can be a fuzz target (`squall-inputs`).
//!
//! - [`offload`]: `virtio_net_hdr`, GSO super-frames split into wire-sized
//!   segments and coalesced again, checksums (RFC 1071).
//! - [`ip`]: an IP packet of either family read into a model packet:
//!   [`ipv4`] (RFC 791) and [`ipv6`] (RFC 8200, extension headers) read
//!   the headers.
//! - [`ethernet`]: Ethernet frames (IEEE 802.3) sorted for inline mode.
#![forbid(unsafe_code)]

pub mod ethernet;
pub mod ip;
mod ip_header;
pub mod ipv4;
pub mod ipv6;
pub mod offload;
