//! TCP header fields for segments the simulator makes without bytes.
//!
//! The simulator's TCP model fills a [`TcpHeaderInfo`] per segment so the
//! pcap shows what tcptrace and Wireshark need: sequence and acknowledgment
//! numbers, flags, window and options (RFC 9293 §3.1, RFC 7323, RFC 2018).

use std::ops::BitOr;

use etherparse::TcpOptionElement;

/// The control bits of a TCP header, as the 13th byte of the header
/// (RFC 9293 §3.1; ECE and CWR from RFC 3168 §6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const URG: TcpFlags = TcpFlags(0x20);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

/// What the pcap writer needs to write a real TCP header for a segment
/// whose bytes are not carried. Options are written in Linux's order and
/// NOP-aligned to 4 bytes: MSS, SACK-permitted + timestamps, window scale,
/// SACK blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpHeaderInfo {
    /// Sequence number of the first byte of data (or of the SYN or FIN).
    pub seq: u32,
    /// Next sequence number expected from the peer; meaningful with ACK set.
    pub ack: u32,
    pub flags: TcpFlags,
    /// Receive window field as sent, i.e. already shifted right by the
    /// window scale (RFC 7323 §2.3), in units of 2^scale bytes.
    pub window: u16,
    /// Maximum segment size option in bytes (RFC 9293 §3.7.1), on SYNs.
    pub mss: Option<u16>,
    /// Window scale option, the shift count 0..=14 (RFC 7323 §2.2), on SYNs.
    pub window_scale: Option<u8>,
    /// SACK-permitted option (RFC 2018 §2), on SYNs.
    pub sack_permitted: bool,
    /// SACK blocks as (left edge, right edge) sequence numbers (RFC 2018
    /// §3): at most 4, or 3 together with timestamps.
    pub sack_blocks: Vec<(u32, u32)>,
    /// Timestamps option as (TSval, TSecr) (RFC 7323 §3.2).
    pub timestamps: Option<(u32, u32)>,
}

impl TcpHeaderInfo {
    /// Length of the options in bytes, padding included; more than 40 does
    /// not fit in a TCP header.
    pub fn options_len(&self) -> usize {
        let mss = if self.mss.is_some() { 4 } else { 0 };
        let ts_and_sack_ok = match (self.timestamps, self.sack_permitted) {
            (Some(_), _) => 12,
            (None, true) => 4,
            (None, false) => 0,
        };
        let wscale = if self.window_scale.is_some() { 4 } else { 0 };
        let sack = if self.sack_blocks.is_empty() { 0 } else { 4 + 8 * self.sack_blocks.len() };
        mss + ts_and_sack_ok + wscale + sack
    }

    /// The options as etherparse elements, each group NOP-padded to 4
    /// bytes. The caller checks [`Self::options_len`] first.
    pub(crate) fn option_elements(&self) -> Vec<TcpOptionElement> {
        use TcpOptionElement::*;
        let mut options = Vec::new();
        if let Some(mss) = self.mss {
            options.push(MaximumSegmentSize(mss));
        }
        match (self.timestamps, self.sack_permitted) {
            (Some((tsval, tsecr)), sack_ok) => {
                options.extend(if sack_ok { vec![SelectiveAcknowledgementPermitted] } else { vec![Noop, Noop] });
                options.push(Timestamp(tsval, tsecr));
            }
            (None, true) => options.extend([Noop, Noop, SelectiveAcknowledgementPermitted]),
            (None, false) => {}
        }
        if let Some(shift) = self.window_scale {
            options.extend([Noop, WindowScale(shift)]);
        }
        if let Some((&first, rest)) = self.sack_blocks.split_first() {
            let mut more = [None; 3];
            for (slot, &block) in more.iter_mut().zip(rest) {
                *slot = Some(block);
            }
            options.extend([Noop, Noop, SelectiveAcknowledgement(first, more)]);
        }
        options
    }
}
