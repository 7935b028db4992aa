//! Reading a real IPv6 packet (RFC 8200) into the model's header: the
//! fixed header's payload length, traffic class (DSCP and ECN, RFC 2474,
//! RFC 3168) and addresses, and the transport header found behind the
//! extension headers, each skipped by its own length rule. Nothing here
//! panics on bad bytes.

use std::net::Ipv6Addr;

use squall_link::{Ecn, FlowKey, Protocol};

use crate::wire::ip_header::{IpHeader, Refused};

/// Bytes of the fixed header (RFC 8200 §3).
pub const HEADER: usize = 40;

/// ICMPv6's next-header number (RFC 4443).
const ICMPV6: u8 = 58;

/// Reads the IPv6 header at the start of `ip`.
pub(crate) fn read_header(ip: &[u8]) -> Result<IpHeader, Refused> {
    read(ip).map(|(h, _)| h)
}

/// Reads the IPv6 header at the start of `ip`, and the ICMPv6 type if the
/// packet is the first (or only) fragment of an ICMPv6 message.
///
/// Extension headers are skipped as RFC 8200 §4 lays them out: hop-by-hop
/// options (0), routing (43), destination options (60) and those that
/// follow their format (RFC 6564 §4: mobility 135, HIP 139, shim6 140)
/// are 8 + 8 × `Hdr Ext Len` bytes; a fragment header (44) is 8 bytes and
/// only the first fragment (offset 0) carries the ports; an
/// authentication header (51, RFC 4302 §2.2) is 4 × (`Payload Len` + 2)
/// bytes. Anything else ends the chain and is the packet's protocol (TCP,
/// UDP, ICMPv6, ESP (50), no next header (59), ...); ports are read for TCP
/// and UDP only. A chain that runs past the packet is malformed.
pub(crate) fn read(ip: &[u8]) -> Result<(IpHeader, Option<u8>), Refused> {
    if ip.len() < HEADER {
        return Err(Refused::Malformed);
    }
    if ip[0] >> 4 != 6 {
        return Err(Refused::NotIp);
    }
    let total = HEADER + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    if total > ip.len() {
        return Err(Refused::Malformed);
    }
    let traffic_class = (u16::from_be_bytes([ip[0], ip[1]]) >> 4) as u8;
    let (mut next, mut at, mut first_fragment) = (ip[6], HEADER, true);
    loop {
        let (Some(&n), Some(&len)) = (ip.get(at), ip.get(at + 1)) else {
            if is_extension(next) {
                return Err(Refused::Malformed);
            }
            break;
        };
        let length = match next {
            0 | 43 | 60 | 135 | 139 | 140 => 8 + usize::from(len) * 8,
            51 => 4 * (usize::from(len) + 2),
            44 => {
                let off = ip.get(at + 2..at + 4).ok_or(Refused::Malformed)?;
                first_fragment &= u16::from_be_bytes([off[0], off[1]]) >> 3 == 0;
                8
            }
            _ => break,
        };
        next = n;
        at += length;
        if at > total {
            return Err(Refused::Malformed);
        }
    }
    let protocol = Protocol::from_number(next);
    let icmp_type = (next == ICMPV6 && first_fragment).then(|| ip.get(at).copied()).flatten();
    let (src_port, dst_port) = match protocol {
        Protocol::Tcp | Protocol::Udp if first_fragment && at + 4 <= total => {
            (u16::from_be_bytes([ip[at], ip[at + 1]]), u16::from_be_bytes([ip[at + 2], ip[at + 3]]))
        }
        _ => (0, 0),
    };
    let header = IpHeader {
        size: total as u32,
        flow: FlowKey {
            protocol,
            src: address(&ip[8..24]).into(),
            dst: address(&ip[24..40]).into(),
            src_port,
            dst_port,
        },
        dscp: traffic_class >> 2,
        ecn: Ecn::from_bits(traffic_class),
    };
    Ok((header, icmp_type))
}

/// The extension headers [`read`] skips.
fn is_extension(next: u8) -> bool {
    matches!(next, 0 | 43 | 44 | 51 | 60 | 135 | 139 | 140)
}

/// Whether a packet from or to `a` stays on its link: a link-local
/// unicast address (fe80::/10, RFC 4291 §2.5.6), the unspecified address
/// (a duplicate-address probe's source, RFC 4862 §5.4.2), or a multicast
/// address of interface- or link-local scope (ff01::/16, ff02::/16, RFC
/// 4291 §2.7: all-nodes, all-routers, solicited-node, MLD).
pub fn stays_on_link(a: Ipv6Addr) -> bool {
    let first = a.segments()[0];
    a.is_unspecified() || first & 0xffc0 == 0xfe80 || (a.is_multicast() && matches!(first & 0x000f, 1 | 2))
}

fn address(bytes: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(bytes);
    Ipv6Addr::from(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv6 packet from fd00::1 to fd00::2 with traffic class 0xb8 (EF,
    /// not-ECT), `next` after the fixed header, and `body`.
    pub(crate) fn ipv6(next: u8, body: &[u8]) -> Vec<u8> {
        let mut h = vec![0x6b, 0x80, 0, 0];
        h.extend_from_slice(&(body.len() as u16).to_be_bytes());
        h.extend_from_slice(&[next, 64]);
        h.extend_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(body);
        h
    }

    const TCP_80_TO_5000: [u8; 20] = [0, 80, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0];

    #[test]
    fn reads_the_five_tuple_and_traffic_class_of_tcp() {
        let (h, icmp) = read(&ipv6(6, &TCP_80_TO_5000)).unwrap();
        assert_eq!((h.size, h.dscp, h.ecn, icmp), (60, 46, Ecn::NotEct, None));
        assert_eq!(h.flow.protocol, Protocol::Tcp);
        assert_eq!((h.flow.src_port, h.flow.dst_port), (80, 5000));
        assert_eq!(h.flow.dst, "fd00::2".parse::<std::net::IpAddr>().unwrap());
    }

    /// Each extension header by its own length rule (worked by hand: the
    /// transport header starts at 40 + the lengths), then the ports.
    #[test]
    fn skips_each_extension_header_by_its_rule() {
        // Hop-by-hop with Hdr Ext Len 1: 16 bytes.
        let mut body = vec![43, 1];
        body.resize(16, 0);
        // Routing, Hdr Ext Len 0: 8 bytes.
        body.extend_from_slice(&[51, 0, 0, 0, 0, 0, 0, 0]);
        // AH with Payload Len 4: 4 × (4 + 2) = 24 bytes (RFC 4302 §2.2).
        let mut ah = vec![60, 4];
        ah.resize(24, 0);
        body.extend_from_slice(&ah);
        // Destination options, 8 bytes, then TCP.
        body.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 0]);
        body.extend_from_slice(&TCP_80_TO_5000);
        let (h, _) = read(&ipv6(0, &body)).unwrap();
        assert_eq!(h.size as usize, 40 + 16 + 8 + 24 + 8 + 20);
        assert_eq!((h.flow.protocol, h.flow.src_port, h.flow.dst_port), (Protocol::Tcp, 80, 5000));
        // With the AH read as 8 + 8 × 4 = 40 bytes, the ports would come
        // from elsewhere: the rule matters.
    }

    #[test]
    fn a_later_fragment_has_no_ports_and_esp_is_opaque() {
        let mut first = vec![17, 0, 0, 0, 0, 0, 0, 1]; // offset 0, more fragments
        first.extend_from_slice(&[0, 53, 0x13, 0x88, 0, 8, 0, 0]);
        let (h, _) = read(&ipv6(44, &first)).unwrap();
        assert_eq!((h.flow.protocol, h.flow.src_port, h.flow.dst_port), (Protocol::Udp, 53, 5000));
        let mut later = vec![17, 0, 0, 0x10, 0, 0, 0, 1]; // offset 2 (×8 bytes)
        later.extend_from_slice(&[0, 53, 0x13, 0x88, 0, 8, 0, 0]);
        let (h, _) = read(&ipv6(44, &later)).unwrap();
        assert_eq!((h.flow.protocol, h.flow.src_port, h.flow.dst_port), (Protocol::Udp, 0, 0));
        let (h, _) = read(&ipv6(50, &[0, 0, 1, 0, 0, 0, 0, 1, 9, 9, 9, 9])).unwrap();
        assert_eq!((h.flow.protocol, h.flow.src_port, h.size), (Protocol::from_number(50), 0, 52));
    }

    #[test]
    fn an_icmpv6_type_is_read_from_the_first_fragment() {
        assert_eq!(read(&ipv6(58, &[135, 0, 0, 0, 0, 0, 0, 0])).unwrap().1, Some(135));
        let mut later = vec![58, 0, 0, 0x10, 0, 0, 0, 1];
        later.extend_from_slice(&[135, 0, 0, 0]);
        assert_eq!(read(&ipv6(44, &later)).unwrap().1, None);
    }

    #[test]
    fn broken_packets_are_refused_without_panicking() {
        // An extension header longer than the packet; one cut off.
        assert_eq!(read(&ipv6(0, &[17, 200, 0, 0, 0, 0, 0, 0])).err(), Some(Refused::Malformed));
        assert_eq!(read(&ipv6(0, &[])).err(), Some(Refused::Malformed));
        assert_eq!(read(&ipv6(51, &[6, 1, 0, 0])).err(), Some(Refused::Malformed));
        // Payload length past the bytes.
        let mut b = ipv6(6, &TCP_80_TO_5000);
        b[5] = 200;
        assert_eq!(read(&b).err(), Some(Refused::Malformed));
        for n in 0..96 {
            for fill in [0x00, 0x2c, 0x33, 0x60, 0xff] {
                let mut b = vec![fill; n];
                if let Some(v) = b.first_mut() {
                    *v = 0x60;
                }
                let _ = read(&b);
            }
        }
    }
}
