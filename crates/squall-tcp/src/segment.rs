//! TCP segments as the model exchanges them (RFC 9293 §3.1 header fields,
//! RFC 7323 window scale and timestamps, RFC 2018 SACK). Data is virtual: a segment says
//! how many bytes it carries, not which.
//!
//! Sequence numbers are 64-bit and never wrap inside the model; the low 32
//! bits are what goes on the wire (see [`Segment::wire_seq`]).

/// The control bits the model uses (RFC 9293 §3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    pub const FIN: Flags = Flags(0x01);
    pub const SYN: Flags = Flags(0x02);
    pub const RST: Flags = Flags(0x04);
    pub const PSH: Flags = Flags(0x08);
    pub const ACK: Flags = Flags(0x10);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

/// At most this many SACK blocks fit in a header without timestamps
/// (2 NOPs + 2 + 8·4 = 36 of the 40 option bytes; RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 4;

/// At most this many SACK blocks fit beside the timestamp option (12 + 4 +
/// 8·3 = 40 option bytes).
pub const MAX_SACK_BLOCKS_WITH_TIMESTAMPS: usize = 3;

/// Option bytes the timestamp option takes on every segment, two NOPs
/// included (RFC 7323 §3.2, Appendix A's layout, as Linux sends it).
pub const TIMESTAMP_OPTION_LEN: u32 = 12;

/// The timestamp option (RFC 7323 §3): the sender's clock and the echo of
/// the peer's, in the sender's clock unit (milliseconds here, as Linux's
/// `TCP_TS_HZ`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamp {
    pub value: u32,
    pub echo: u32,
}

/// The SACK blocks of one segment, (left edge, right edge) with the right
/// edge exclusive, first block the most recently received (RFC 2018 §4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlocks {
    len: u8,
    blocks: [(u64, u64); MAX_SACK_BLOCKS],
}

impl SackBlocks {
    /// Adds a block; ignored once [`MAX_SACK_BLOCKS`] are held.
    pub fn push(&mut self, block: (u64, u64)) {
        if (self.len as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.len as usize] = block;
            self.len += 1;
        }
    }
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len as usize]
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

impl<'a> FromIterator<&'a (u64, u64)> for SackBlocks {
    fn from_iter<I: IntoIterator<Item = &'a (u64, u64)>>(iter: I) -> Self {
        let mut s = SackBlocks::default();
        for b in iter {
            s.push(*b);
        }
        s
    }
}

/// One TCP segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Sequence number of the first octet (of the SYN, on a SYN).
    pub seq: u64,
    /// Next sequence number expected from the peer; meaningful with ACK.
    pub ack: u64,
    pub flags: Flags,
    /// Window field as sent: already shifted right by the sender's window
    /// scale, except on SYNs (RFC 7323 §2.2).
    pub window: u16,
    /// Payload bytes (virtual).
    pub len: u32,
    /// MSS option (RFC 9293 §3.7.1), on SYNs only.
    pub mss: Option<u16>,
    /// Window scale option, shift count 0..=14 (RFC 7323 §2.2), on SYNs.
    pub window_scale: Option<u8>,
    /// SACK-permitted option (RFC 2018 §2), on SYNs.
    pub sack_permitted: bool,
    pub sack: SackBlocks,
    /// Timestamp option (RFC 7323 §3), on every segment once both SYNs
    /// carried it.
    pub timestamp: Option<Timestamp>,
}

/// IPv4 header without options, bytes.
pub const IP_HEADER_LEN: u32 = 20;
/// TCP header without options, bytes.
pub const TCP_HEADER_LEN: u32 = 20;

impl Segment {
    pub fn syn(&self) -> bool {
        self.flags.contains(Flags::SYN)
    }
    pub fn fin(&self) -> bool {
        self.flags.contains(Flags::FIN)
    }
    pub fn rst(&self) -> bool {
        self.flags.contains(Flags::RST)
    }
    pub fn has_ack(&self) -> bool {
        self.flags.contains(Flags::ACK)
    }

    /// Sequence space the segment occupies: its payload, plus one for a SYN
    /// and one for a FIN (RFC 9293 §3.4).
    pub fn seq_len(&self) -> u64 {
        self.len as u64 + self.syn() as u64 + self.fin() as u64
    }

    /// Length of the options in bytes, NOP-padded to 4 as Linux lays them
    /// out (MSS 4, SACK-permitted 4, window scale 4, SACK blocks 4 + 8·n,
    /// timestamps 12, or 12 for SACK-permitted and timestamps together).
    pub fn options_len(&self) -> u32 {
        let mss = if self.mss.is_some() { 4 } else { 0 };
        let ts = if self.timestamp.is_some() { TIMESTAMP_OPTION_LEN } else { 0 };
        // Linux puts SACK-permitted in the timestamp option's two NOPs.
        let sack_ok = if self.sack_permitted && self.timestamp.is_none() { 4 } else { 0 };
        let ws = if self.window_scale.is_some() { 4 } else { 0 };
        let sack = if self.sack.is_empty() { 0 } else { 4 + 8 * self.sack.len() as u32 };
        mss + sack_ok + ws + sack + ts
    }

    /// Size of the IP packet carrying this segment: 40 bytes of headers,
    /// the options and the payload.
    pub fn ip_size(&self) -> u32 {
        IP_HEADER_LEN + TCP_HEADER_LEN + self.options_len() + self.len
    }

    /// The 32-bit sequence number on the wire.
    pub fn wire_seq(&self) -> u32 {
        self.seq as u32
    }

    /// The 32-bit acknowledgment number on the wire.
    pub fn wire_ack(&self) -> u32 {
        self.ack as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_header_layout() {
        let data = Segment { len: 1460, flags: Flags::ACK, ..Default::default() };
        assert_eq!(data.ip_size(), 1500);
        let syn = Segment {
            flags: Flags::SYN,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            ..Default::default()
        };
        assert_eq!((syn.ip_size(), syn.seq_len()), (52, 1));
        let mut ack = Segment { flags: Flags::ACK, ..Default::default() };
        ack.sack.push((10, 20));
        ack.sack.push((30, 40));
        assert_eq!(ack.ip_size(), 40 + 4 + 16);
        for i in 0..5 {
            ack.sack.push((i, i + 1));
        }
        assert_eq!(ack.sack.len(), MAX_SACK_BLOCKS);
    }

    #[test]
    fn timestamps_take_twelve_bytes() {
        // Linux's SYN: MSS 4, SACK-permitted and timestamps 12, window
        // scale 4 = 20 option bytes, a 60-byte packet.
        let ts = Some(Timestamp { value: 1, echo: 0 });
        let syn = Segment {
            flags: Flags::SYN,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamp: ts,
            ..Default::default()
        };
        assert_eq!(syn.ip_size(), 60);
        let data = Segment { len: 1448, flags: Flags::ACK, timestamp: ts, ..Default::default() };
        assert_eq!(data.ip_size(), 1500);
        let mut ack = Segment { flags: Flags::ACK, timestamp: ts, ..Default::default() };
        for i in 0..3 {
            ack.sack.push((i, i + 1));
        }
        assert_eq!(ack.options_len(), 40, "three SACK blocks fill the option space beside timestamps");
    }
}
