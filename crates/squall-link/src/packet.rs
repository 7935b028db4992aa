//! Packets as the model sees them: a size on the wire, a flow key, an id,
//! and, in the emulator, the real bytes.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Unique id of a packet within a run, assigned by the engine that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PacketId(pub u64);

/// IP protocol number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Protocol {
    Tcp,
    Udp,
    Icmp,
    Other(u8),
}

impl Protocol {
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Icmp => 1,
            Protocol::Other(n) => n,
        }
    }
    pub fn from_number(n: u8) -> Self {
        match n {
            6 => Protocol::Tcp,
            17 => Protocol::Udp,
            1 => Protocol::Icmp,
            n => Protocol::Other(n),
        }
    }
}

/// The two ECN bits of the IP header (RFC 3168 §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect1,
    Ect0,
    Ce,
}

impl Ecn {
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
    pub fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    /// ECN-capable transport: a router may mark it instead of dropping.
    pub fn is_capable(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// What identifies a flow: the 5-tuple, of either IP family (both
/// addresses of one family). The DSCP (upper six bits of the TOS byte) is
/// carried alongside for classifiers but does not split a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FlowKey {
    pub protocol: Protocol,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FlowKey {
    /// Whether the flow is IPv6 (its destination's family).
    pub fn is_ipv6(&self) -> bool {
        self.dst.is_ipv6()
    }

    /// Bytes of the IP header without options or extension headers: 20
    /// for IPv4 (RFC 791), 40 for IPv6 (RFC 8200 §3).
    pub fn ip_header_len(&self) -> u32 {
        if self.is_ipv6() { 40 } else { 20 }
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.protocol {
            Protocol::Tcp => f.write_str("tcp")?,
            Protocol::Udp => f.write_str("udp")?,
            Protocol::Icmp => f.write_str("icmp")?,
            Protocol::Other(n) => write!(f, "ip{n}")?,
        }
        // IPv6 addresses in brackets, as in URLs (RFC 3986 §3.2.2): their
        // colons would run into the ports'.
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => write!(f, ":{s}:{}>{d}:{}", self.src_port, self.dst_port),
            (s, d) => write!(f, ":[{s}]:{}>[{d}]:{}", self.src_port, self.dst_port),
        }
    }
}

/// A packet in the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub id: PacketId,
    /// Size of the IP packet in bytes, headers included.
    pub size: u32,
    pub flow: FlowKey,
    /// DSCP, the upper six bits of the TOS byte.
    pub dscp: u8,
    pub ecn: Ecn,
    /// The IP packet's bytes, when the engine carries real ones (the
    /// emulator always; the simulator leaves it empty and the trace writer
    /// synthesises headers). "Corrupt" errors flip bits here.
    ///
    /// Boxed: a packet moves by value through every queue and stage, and
    /// 8 bytes here instead of the payload's 32 keep it at 72 bytes, as
    /// before flow keys held IPv6 addresses (at 96, `squall bench tcp`
    /// ran 5 % slower; issue 29). The simulator's packets carry none; the
    /// emulator's take one small allocation each, next to the system
    /// calls that move them (`squall bench emu`'s forwarding rates with
    /// and without the box differ by less than their run-to-run spread).
    pub payload: Option<Box<Payload>>,
    /// Where the IP header starts in `payload`: 0, or after the link
    /// header when the engine carries whole frames (the emulator's bridge
    /// mode carries Ethernet frames).
    pub l3: u16,
    /// Set once a stage delivered it with bit errors ("corrupt" error mode).
    pub corrupted: bool,
    /// A virtual packet of a stage's background load: it never leaves the
    /// stage that made it, unless `forward`.
    pub background: bool,
    /// A virtual packet that goes on to the following stages of the path
    /// (Seawind's BGL channel, seed 000 §5.1) and is consumed at its end.
    pub forward: bool,
}

impl Packet {
    /// A packet without real bytes, as the simulator makes them.
    pub fn new(id: PacketId, size: u32, flow: FlowKey) -> Self {
        Packet {
            id,
            size,
            flow,
            dscp: 0,
            ecn: Ecn::NotEct,
            payload: None,
            l3: 0,
            corrupted: false,
            background: false,
            forward: false,
        }
    }
}

impl Packet {
    /// Sets the ECN bits, in the real IP header too when the packet
    /// carries bytes: IPv4's TOS byte, with the header checksum updated
    /// (RFC 3168 §5), or IPv6's traffic class (RFC 8200 §7).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
        let l3 = usize::from(self.l3);
        let Some(payload) = self.payload.as_mut() else { return };
        let header = payload.headers().get(l3..).unwrap_or(&[]);
        if is_ipv4(header) {
            let ip = &mut payload.make_mut()[l3..];
            ip[1] = (ip[1] & !0b11) | ecn.bits();
            update_ipv4_checksum(ip);
        } else if header.len() >= 40 && header[0] >> 4 == 6 {
            // Version (4 bits), then the traffic class: its low two bits
            // are the second byte's bits 4 and 5.
            let ip = &mut payload.make_mut()[l3..];
            ip[1] = (ip[1] & !0x30) | (ecn.bits() << 4);
        }
    }

    /// Flips bit `bit` (0 = most significant bit of the IP packet's first
    /// byte) of the real bytes, if the packet has them. The IP checksum is
    /// left as it was: the receiver sees a corrupted packet, as on a
    /// transparent link.
    pub fn flip_bit(&mut self, bit: u64) {
        if let Some(payload) = self.payload.as_mut() {
            let bytes = payload.make_mut();
            let byte = (bit / 8) as usize + usize::from(self.l3);
            if let Some(b) = bytes.get_mut(byte) {
                *b ^= 0x80 >> (bit % 8);
            }
        }
        self.corrupted = true;
    }
}

/// The real bytes a packet carries: its own, or one wire segment of a
/// larger buffer that an engine read in one go (a GSO super-frame, many
/// TCP segments behind one set of headers), whose bytes are made only when
/// something asks for them. The model treats both alike; a stage that
/// changes bytes (ECN marks, bit errors) gives the segment bytes of its
/// own first ([`Payload::make_mut`]).
#[derive(Clone, Debug)]
pub enum Payload {
    Owned(Vec<u8>),
    Segment(Segment),
}

/// Segment `index` of `of`.
#[derive(Clone, Debug)]
pub struct Segment {
    pub of: Arc<dyn Segmented>,
    pub index: usize,
}

/// Bytes that stand for several wire packets sharing their headers, as an
/// engine read them (the engine's own type: the model only asks for a
/// segment's bytes).
pub trait Segmented: fmt::Debug + Send + Sync + std::any::Any {
    /// How many wire packets the bytes stand for.
    fn count(&self) -> usize;
    /// The bytes of segment `index` (< `count`), headers and all, as a
    /// wire would carry them.
    fn segment(&self, index: usize) -> Vec<u8>;
    /// The bytes as read: the segments' shared headers, then all their
    /// data.
    fn frame(&self) -> &[u8];
    /// Bytes of segment `index`: the length of what [`Self::segment`]
    /// makes, without making it.
    fn segment_len(&self, index: usize) -> usize;
}

impl Payload {
    /// The bytes: borrowed when owned, made when a segment.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        match self {
            Payload::Owned(b) => Cow::Borrowed(b),
            Payload::Segment(s) => Cow::Owned(s.of.segment(s.index)),
        }
    }

    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Payload::Owned(b) => b,
            Payload::Segment(s) => s.of.segment(s.index),
        }
    }

    /// The bytes to change: a segment gets bytes of its own first.
    pub fn make_mut(&mut self) -> &mut Vec<u8> {
        if let Payload::Segment(s) = self {
            *self = Payload::Owned(s.of.segment(s.index));
        }
        match self {
            Payload::Owned(b) => b,
            Payload::Segment(_) => unreachable!("made owned above"),
        }
    }

    /// Bytes that start with the packet's headers, without cutting: its
    /// own bytes, or a segment's super-frame, whose headers it shares but
    /// for lengths, identifiers, sequence numbers and checksums.
    pub fn headers(&self) -> &[u8] {
        match self {
            Payload::Owned(b) => b,
            Payload::Segment(s) => s.of.frame(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Payload::Owned(b) => b.len(),
            Payload::Segment(s) => s.of.segment_len(s.index),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Self {
        Payload::Owned(bytes)
    }
}

/// A packet's own bytes, boxed as [`Packet::payload`] holds them.
impl From<Vec<u8>> for Box<Payload> {
    fn from(bytes: Vec<u8>) -> Self {
        Box::new(Payload::Owned(bytes))
    }
}

/// Payloads are equal when their bytes are.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Payload {}

fn is_ipv4(bytes: &[u8]) -> bool {
    bytes.len() >= 20 && bytes[0] >> 4 == 4 && (bytes[0] & 0x0f) as usize * 4 <= bytes.len()
}

/// Recomputes the IPv4 header checksum (RFC 791) in place.
fn update_ipv4_checksum(bytes: &mut [u8]) {
    let ihl = (bytes[0] & 0x0f) as usize * 4;
    bytes[10] = 0;
    bytes[11] = 0;
    let mut sum: u32 = 0;
    for pair in bytes[..ihl].chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    bytes[10..12].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP packet of `size` bytes from 10.0.0.1:1 to 10.0.0.2:2 carrying
    /// `bytes`, its IP header at `l3`.
    fn udp(size: u32, bytes: Vec<u8>, l3: u16) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: std::net::Ipv4Addr::new(10, 0, 0, 1).into(),
            dst: std::net::Ipv4Addr::new(10, 0, 0, 2).into(),
            src_port: 1,
            dst_port: 2,
        };
        let mut p = Packet::new(PacketId(1), size, flow);
        p.payload = Some(bytes.into());
        p.l3 = l3;
        p
    }

    /// Whether an IPv4 header's 16-bit words sum to 0xffff: its checksum
    /// is right (RFC 1071).
    fn checksum_right(header: &[u8]) -> bool {
        let mut sum: u32 = header.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    /// An Ethernet frame (bridge mode): the mark goes into the IP header
    /// after the link header, IPv4 and IPv6 alike, and never into the MAC
    /// addresses, even one whose first byte looks like an IPv4 header's.
    #[test]
    fn ecn_mark_finds_the_ip_header_in_a_frame() {
        let mut v4 = vec![0x45, 0, 0, 0, 0, 2, 0x46, 0, 0, 0, 0, 1, 0x08, 0x00];
        let mut ip = vec![0x45, 0x02, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        update_ipv4_checksum(&mut ip);
        v4.extend(&ip);
        v4.extend([0; 8]);
        let mut p = udp(28, v4.clone(), 14);
        p.set_ecn(Ecn::Ce);
        let b = p.payload.as_ref().unwrap().bytes().into_owned();
        assert_eq!(b[..14], v4[..14], "the link header is left as it was");
        assert_eq!(b[15] & 0b11, 0b11, "CE in the TOS byte");
        assert!(checksum_right(&b[14..34]), "the header checksum is right again");
        // IPv6: traffic class 0x01 (ECT(1)) becomes CE (0x03) and the
        // flow label is left alone.
        let mut v6 = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd, 0x60, 0x1a, 0xbc, 0xde];
        v6.extend([0; 36]);
        let mut p = udp(40, v6.clone(), 14);
        p.set_ecn(Ecn::Ce);
        let b = p.payload.as_ref().unwrap().bytes().into_owned();
        assert_eq!(&b[14..18], &[0x60, 0x3a, 0xbc, 0xde]);
        assert_eq!(b[..14], v6[..14]);
    }

    #[test]
    fn ecn_mark_rewrites_header_with_valid_checksum() {
        // A real IPv4 header (from RFC 1071's style example), checksum valid.
        let mut hdr = vec![0x45, 0x02, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        update_ipv4_checksum(&mut hdr);
        let mut p = udp(20, hdr, 0);
        p.set_ecn(Ecn::Ce);
        let b = p.payload.as_ref().unwrap().bytes();
        assert_eq!(b[1] & 0b11, 0b11);
        assert!(checksum_right(&b));
    }
}
