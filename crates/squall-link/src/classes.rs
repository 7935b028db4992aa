//! Classes inside a stage's queue: the classifier's rules, each class's
//! queue, and the scheduler between classes (seed 003 §2.2: the FPGA
//! degrader's classifier into 8 queues served by strict priority or
//! weighted round robin; seed 000 §4.2: multiple queues per channel).
//!
//! ```toml
//! queue = { scheduler = "drr", default_class = "bulk", classes = [
//!     { name = "voice", packets = 20, quantum = "300 B" },
//!     { name = "bulk", packets = 200, quantum = "1500 B", codel = { target = "5 ms", interval = "100 ms" } },
//!   ], rules = [ { class = "voice", protocol = "udp", dst_port = "5000-5100" } ] }
//! ```

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::packet::{Ecn, Packet};
use crate::units::{Bytes, UnitError};

/// Most classes a stage may have.
pub const MAX_CLASSES: usize = 64;

/// How the link's time is shared between classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    /// The first class (in the order listed) with a packet goes first; a
    /// packet on the link is never pre-empted (seed 003 §2.2).
    #[default]
    StrictPriority,
    /// Weighted round robin in packets: each class sends up to `weight`
    /// packets per round (seed 003 §2.2).
    Wrr,
    /// Deficit round robin in bytes: each class may send `quantum` bytes per
    /// round (Shreedhar and Varghese 1996; the byte-fair variant of RFC
    /// 8290 §4.2, where a deficit may go negative).
    Drr,
}

/// An address or prefix of either family: `"10.0.0.0/24"`, `"10.0.1.1"`
/// (= /32), `"fd00::/64"`, `"fd00::2"` (= /128). A prefix matches only
/// addresses of its own family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpPrefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl IpPrefix {
    pub fn contains(self, a: IpAddr) -> bool {
        match (self.addr, a) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                let mask = if self.len == 0 { 0 } else { u32::MAX << (32 - u32::from(self.len)) };
                u32::from(a) & mask == u32::from(p) & mask
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                let mask = if self.len == 0 { 0 } else { u128::MAX << (128 - u32::from(self.len)) };
                u128::from(a) & mask == u128::from(p) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpPrefix {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError {
            found: s.to_string(),
            expected: "an IPv4 or IPv6 address or prefix like \"10.0.0.0/24\" or \"fd00::/64\"".into(),
        };
        let (addr, len) = match s.trim().split_once('/') {
            Some((a, l)) => (a, Some(l.parse::<u8>().map_err(|_| err())?)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        let bits = if addr.is_ipv6() { 128 } else { 32 };
        let len = len.unwrap_or(bits);
        if len > bits {
            return Err(err());
        }
        Ok(IpPrefix { addr, len })
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

serde_via_string!(IpPrefix);

/// A port or an inclusive range of ports: `80` or `"5000-5100"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PortRange {
    One(u16),
    Range(String),
}

impl PortRange {
    /// (low, high), inclusive; `None` if the range does not parse or is
    /// empty.
    pub fn bounds(&self) -> Option<(u16, u16)> {
        match self {
            PortRange::One(p) => Some((*p, *p)),
            PortRange::Range(s) => {
                let (lo, hi) = match s.split_once('-') {
                    Some((lo, hi)) => (lo.trim().parse().ok()?, hi.trim().parse().ok()?),
                    None => {
                        let p = s.trim().parse().ok()?;
                        (p, p)
                    }
                };
                (lo <= hi).then_some((lo, hi))
            }
        }
    }
}

/// An IP protocol by name (`"tcp"`, `"udp"`, `"icmp"`) or number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProtocolMatch {
    Number(u8),
    Name(String),
}

impl ProtocolMatch {
    pub fn number(&self) -> Option<u8> {
        match self {
            ProtocolMatch::Number(n) => Some(*n),
            ProtocolMatch::Name(s) => match s.to_ascii_lowercase().as_str() {
                "tcp" => Some(6),
                "udp" => Some(17),
                "icmp" => Some(1),
                _ => None,
            },
        }
    }
}

/// ECN bits a rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMatch {
    NotEct,
    Ect0,
    Ect1,
    Ce,
    /// ECT(0) or ECT(1).
    Capable,
}

impl EcnMatch {
    fn matches(self, e: Ecn) -> bool {
        match self {
            EcnMatch::NotEct => e == Ecn::NotEct,
            EcnMatch::Ect0 => e == Ecn::Ect0,
            EcnMatch::Ect1 => e == Ecn::Ect1,
            EcnMatch::Ce => e == Ecn::Ce,
            EcnMatch::Capable => e.is_capable(),
        }
    }
}

/// A classifier rule: every field given must match; the first rule that
/// matches puts the packet in its class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub class: String,
    /// 4 or 6. The model carries IPv4 packets, so a rule for 6 never
    /// matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ProtocolMatch>,
    /// DSCP, the upper six bits of the TOS byte, 0..=63.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// The whole TOS byte (DSCP and ECN bits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<IpPrefix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<IpPrefix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<PortRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<PortRange>,
    /// Packets of at least this size (IP packet, headers included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<Bytes>,
    /// Packets of at most this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Bytes>,
}

/// A rule ready to match packets: ranges and names parsed once.
#[derive(Clone, Debug, PartialEq)]
pub struct Matcher {
    ip_version: Option<u8>,
    protocol: Option<Option<u8>>,
    dscp: Option<u8>,
    tos: Option<u8>,
    ecn: Option<EcnMatch>,
    src: Option<IpPrefix>,
    dst: Option<IpPrefix>,
    src_port: Option<Option<(u16, u16)>>,
    dst_port: Option<Option<(u16, u16)>>,
    min_size: Option<u64>,
    max_size: Option<u64>,
}

impl Matcher {
    /// Whether `p` matches every field the rule gives.
    pub fn matches(&self, p: &Packet) -> bool {
        let in_range = |r: Option<Option<(u16, u16)>>, port: u16| {
            r.is_none_or(|r| r.is_some_and(|(lo, hi)| (lo..=hi).contains(&port)))
        };
        self.ip_version.is_none_or(|v| v == if p.flow.is_ipv6() { 6 } else { 4 })
            && self.protocol.is_none_or(|n| n == Some(p.flow.protocol.number()))
            && self.dscp.is_none_or(|d| d == p.dscp)
            && self.tos.is_none_or(|t| t == (p.dscp << 2) | p.ecn.bits())
            && self.ecn.is_none_or(|e| e.matches(p.ecn))
            && self.src.is_none_or(|n| n.contains(p.flow.src))
            && self.dst.is_none_or(|n| n.contains(p.flow.dst))
            && in_range(self.src_port, p.flow.src_port)
            && in_range(self.dst_port, p.flow.dst_port)
            && self.min_size.is_none_or(|s| p.size as u64 >= s)
            && self.max_size.is_none_or(|s| p.size as u64 <= s)
    }
}

impl Rule {
    /// The rule ready to match packets.
    pub fn matcher(&self) -> Matcher {
        Matcher {
            ip_version: self.ip_version,
            protocol: self.protocol.as_ref().map(ProtocolMatch::number),
            dscp: self.dscp,
            tos: self.tos,
            ecn: self.ecn,
            src: self.src,
            dst: self.dst,
            src_port: self.src_port.as_ref().map(PortRange::bounds),
            dst_port: self.dst_port.as_ref().map(PortRange::bounds),
            min_size: self.min_size.map(|b| b.0),
            max_size: self.max_size.map(|b| b.0),
        }
    }

    /// Checks the rule against the stage's class names, in their order.
    pub(crate) fn validate(&self, key: &str, classes: &[&str]) -> Result<(), ConfigError> {
        if !classes.contains(&self.class.as_str()) {
            let names: Vec<String> = classes.iter().map(|c| format!("`{c}`")).collect();
            return Err(ConfigError::new(
                &format!("{key}.class"),
                &format!("names no class of this stage; the classes are {}", names.join(", ")),
            ));
        }
        self.validate_match(key)
    }

    /// Checks the fields that match packets (not the class): `key` is the
    /// rule's key.
    pub fn validate_match(&self, key: &str) -> Result<(), ConfigError> {
        if self.ip_version.is_some_and(|v| v != 4 && v != 6) {
            return Err(ConfigError::new(&format!("{key}.ip_version"), "must be 4 or 6"));
        }
        if let Some(p) = &self.protocol
            && p.number().is_none()
        {
            return Err(ConfigError::new(
                &format!("{key}.protocol"),
                "must be \"tcp\", \"udp\", \"icmp\" or a protocol number like 47",
            ));
        }
        if self.dscp.is_some_and(|d| d > 63) {
            return Err(ConfigError::new(&format!("{key}.dscp"), "must be 0..=63 (the TOS byte's upper six bits)"));
        }
        for (k, r) in [("src_port", &self.src_port), ("dst_port", &self.dst_port)] {
            if r.as_ref().is_some_and(|r| r.bounds().is_none()) {
                return Err(ConfigError::new(
                    &format!("{key}.{k}"),
                    "must be a port like 80 or a range low-high like \"5000-5100\" with low <= high",
                ));
            }
        }
        if let (Some(lo), Some(hi)) = (self.min_size, self.max_size)
            && lo.0 > hi.0
        {
            return Err(ConfigError::new(&format!("{key}.min_size"), "must not exceed max_size"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowKey, PacketId, Protocol};

    fn packet(protocol: Protocol, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, size: u32) -> Packet {
        let flow = FlowKey { protocol, src: src.into(), dst: dst.into(), src_port: sport, dst_port: dport };
        Packet::new(PacketId(1), size, flow)
    }

    fn rule() -> Rule {
        Rule {
            class: "c".into(),
            ip_version: None,
            protocol: None,
            dscp: None,
            tos: None,
            ecn: None,
            src: None,
            dst: None,
            src_port: None,
            dst_port: None,
            min_size: None,
            max_size: None,
        }
    }

    #[test]
    fn each_field_of_a_rule_must_match() {
        let p = packet(Protocol::Udp, [10, 0, 0, 7], 4000, [192, 168, 1, 9], 5060, 300);
        let m = |r: Rule| r.matcher().matches(&p);
        assert!(m(rule()), "an empty rule matches everything");
        assert!(m(Rule { protocol: Some(ProtocolMatch::Name("udp".into())), ..rule() }));
        assert!(m(Rule { protocol: Some(ProtocolMatch::Number(17)), ..rule() }));
        assert!(!m(Rule { protocol: Some(ProtocolMatch::Name("tcp".into())), ..rule() }));
        assert!(m(Rule { src: Some("10.0.0.0/24".parse().unwrap()), ..rule() }));
        assert!(!m(Rule { src: Some("10.0.1.0/24".parse().unwrap()), ..rule() }));
        assert!(m(Rule { dst: Some("192.168.1.9".parse().unwrap()), ..rule() }));
        assert!(m(Rule { dst: Some("0.0.0.0/0".parse().unwrap()), ..rule() }));
        assert!(!m(Rule { dst: Some("192.168.1.8".parse().unwrap()), ..rule() }));
        assert!(m(Rule { dst_port: Some(PortRange::Range("5000-5100".into())), ..rule() }));
        assert!(m(Rule { dst_port: Some(PortRange::Range("5060".into())), ..rule() }));
        assert!(!m(Rule { dst_port: Some(PortRange::Range("5061-5100".into())), ..rule() }));
        assert!(m(Rule { src_port: Some(PortRange::One(4000)), ..rule() }));
        assert!(!m(Rule { src_port: Some(PortRange::One(4001)), ..rule() }));
        assert!(m(Rule { min_size: Some(Bytes(300)), max_size: Some(Bytes(300)), ..rule() }));
        assert!(!m(Rule { min_size: Some(Bytes(301)), ..rule() }));
        assert!(m(Rule { ip_version: Some(4), ..rule() }));
        assert!(!m(Rule { ip_version: Some(6), ..rule() }), "an IPv4 packet");
    }

    /// An IPv6 packet: prefixes of its family match by their bits
    /// (checked by hand: fd00:0:0:1::/64 holds fd00::1:0:0:7, not
    /// fd00::2:0:0:7), an IPv4 prefix never, `ip_version` 6 does.
    #[test]
    fn ipv6_packets_match_ipv6_prefixes_only() {
        let flow = FlowKey {
            protocol: Protocol::Tcp,
            src: "fd00:0:0:1::7".parse().unwrap(),
            dst: "fd00::2".parse().unwrap(),
            src_port: 40000,
            dst_port: 80,
        };
        let p = Packet::new(PacketId(1), 100, flow);
        let m = |r: Rule| r.matcher().matches(&p);
        assert!(m(Rule { ip_version: Some(6), ..rule() }));
        assert!(!m(Rule { ip_version: Some(4), ..rule() }));
        assert!(m(Rule { src: Some("fd00:0:0:1::/64".parse().unwrap()), ..rule() }));
        assert!(!m(Rule { src: Some("fd00:0:0:2::/64".parse().unwrap()), ..rule() }));
        assert!(m(Rule { dst: Some("fd00::2".parse().unwrap()), ..rule() }));
        assert!(m(Rule { dst: Some("::/0".parse().unwrap()), ..rule() }));
        assert!(!m(Rule { dst: Some("0.0.0.0/0".parse().unwrap()), ..rule() }), "an IPv4 prefix");
        assert!(!m(Rule { dst: Some("fd00::3".parse().unwrap()), ..rule() }));
        assert!(m(Rule { dst_port: Some(PortRange::One(80)), ..rule() }));
    }

    #[test]
    fn dscp_tos_and_ecn_come_from_the_tos_byte() {
        let mut p = packet(Protocol::Tcp, [10, 0, 0, 1], 1, [10, 0, 0, 2], 2, 100);
        p.dscp = 46; // EF
        p.ecn = Ecn::Ect0;
        let m = |r: Rule| r.matcher().matches(&p);
        assert!(m(Rule { dscp: Some(46), ..rule() }));
        assert!(!m(Rule { dscp: Some(0), ..rule() }));
        // TOS = DSCP << 2 | ECN = 0xb8 | 0b10.
        assert!(m(Rule { tos: Some(0xba), ..rule() }));
        assert!(!m(Rule { tos: Some(0xb8), ..rule() }));
        assert!(m(Rule { ecn: Some(EcnMatch::Ect0), ..rule() }));
        assert!(m(Rule { ecn: Some(EcnMatch::Capable), ..rule() }));
        assert!(!m(Rule { ecn: Some(EcnMatch::NotEct), ..rule() }));
    }

    #[test]
    fn prefixes_and_ranges_refuse_nonsense() {
        for bad in ["10.0.0.0/33", "10.0.0", "ten", "10.0.0.0/x"] {
            assert!(bad.parse::<IpPrefix>().is_err(), "{bad}");
        }
        for bad in ["fd00::/129", "fd00:::1", "fd00::/-1"] {
            assert!(bad.parse::<IpPrefix>().is_err(), "{bad}");
        }
        assert_eq!("10.1.2.3/8".parse::<IpPrefix>().unwrap().to_string(), "10.1.2.3/8");
        assert_eq!("fd00::2".parse::<IpPrefix>().unwrap().to_string(), "fd00::2/128");
        assert_eq!(PortRange::Range("6000-5000".into()).bounds(), None);
        assert_eq!(PortRange::Range("80 - 90".into()).bounds(), Some((80, 90)));
    }
}
