//! Reading a real IP packet, IPv4 (RFC 791, [`crate::wire::ipv4`]) or IPv6
//! (RFC 8200, [`crate::wire::ipv6`]), into the model's [`Packet`]: size,
//! 5-tuple, DSCP and ECN. The version nibble says which; anything that is
//! not a well-formed packet of either is refused with a reason, and
//! nothing here panics on bad bytes.

use std::net::IpAddr;

use squall_link::{Ecn, FlowKey, Packet, PacketId, Payload};

/// Why a packet read from a device is not carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refused {
    /// Neither IPv4 nor IPv6 (a version nibble other than 4 and 6); in
    /// bridge mode, a frame that is neither IP nor the link's own ARP or
    /// neighbour discovery: LLDP, spanning tree and the like.
    NotIp,
    /// Shorter than its header, a header length / total length that does
    /// not fit the bytes, or an IPv6 extension header that runs past the
    /// packet.
    Malformed,
    /// IPv6 traffic of a host's stack that stays on its link (RFC 4291
    /// §2.5.6, §2.7: a link-local source or destination, a multicast
    /// destination of interface- or link-local scope: neighbour discovery,
    /// router solicitations, MLD reports). A namespace host's device is a
    /// point-to-point link to squall, not the path; such packets have no
    /// host to go to.
    LinkLocal,
    /// No host of the scenario has the destination address, or no link
    /// leads there.
    NoRoute,
}

impl Refused {
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::NotIp => "not_ip",
            Refused::Malformed => "malformed",
            Refused::LinkLocal => "link_local",
            Refused::NoRoute => "no_route",
        }
    }
}

/// What the model needs of an IP header: total length, 5-tuple, DSCP and
/// ECN.
pub(crate) struct IpHeader {
    pub size: u32,
    pub flow: FlowKey,
    pub dscp: u8,
    pub ecn: Ecn,
}

/// Reads the IPv4 or IPv6 header at the start of `bytes`.
pub(crate) fn read_header(bytes: &[u8]) -> Result<IpHeader, Refused> {
    match bytes.first().map(|b| b >> 4) {
        Some(4) => crate::wire::ipv4::read_header(bytes),
        Some(6) => crate::wire::ipv6::read_header(bytes),
        _ => Err(Refused::NotIp),
    }
}

/// Reads `bytes` as an IP packet (either family) with id `id`; the bytes
/// become its payload. A segment of a super-packet is read from the
/// headers it shares, with its own length. An IPv6 packet that stays on
/// its link is refused ([`Refused::LinkLocal`]).
pub fn parse(id: PacketId, bytes: impl Into<Payload>) -> Result<Packet, Refused> {
    let bytes = bytes.into();
    let h = read_header(bytes.headers())?;
    if let (IpAddr::V6(src), IpAddr::V6(dst)) = (h.flow.src, h.flow.dst)
        && (crate::wire::ipv6::stays_on_link(src) || crate::wire::ipv6::stays_on_link(dst))
    {
        return Err(Refused::LinkLocal);
    }
    Ok(match bytes {
        Payload::Owned(mut bytes) => {
            bytes.truncate(h.size as usize);
            packet(id, h, Payload::Owned(bytes))
        }
        segment => packet(id, IpHeader { size: segment.len() as u32, ..h }, segment),
    })
}

/// A model packet of header `h` carrying `bytes`.
pub(crate) fn packet(id: PacketId, h: IpHeader, bytes: Payload) -> Packet {
    Packet {
        id,
        size: h.size,
        flow: h.flow,
        dscp: h.dscp,
        ecn: h.ecn,
        payload: Some(bytes),
        l3: 0,
        corrupted: false,
        background: false,
        forward: false,
    }
}

/// The destination address of a packet's bytes, if it is an IP packet
/// long enough for its fixed header.
pub fn destination(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.first()? >> 4 {
        4 if bytes.len() >= 20 => Some(IpAddr::from(<[u8; 4]>::try_from(&bytes[16..20]).ok()?)),
        6 if bytes.len() >= 40 => Some(IpAddr::from(<[u8; 16]>::try_from(&bytes[24..40]).ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    #[test]
    fn the_version_nibble_chooses_the_reader() {
        assert_eq!(parse(PacketId(0), vec![]), Err(Refused::NotIp));
        assert_eq!(parse(PacketId(0), vec![0x70; 60]), Err(Refused::NotIp));
        assert_eq!(parse(PacketId(0), vec![0x45; 10]), Err(Refused::Malformed));
        assert_eq!(parse(PacketId(0), vec![0x60; 39]), Err(Refused::Malformed));
        for n in 0..80 {
            for first in [0x45, 0x4f, 0x60, 0x6f] {
                let bytes = vec![first; n];
                let dst = destination(&bytes);
                if let Ok(p) = parse(PacketId(0), bytes) {
                    assert_eq!(Some(p.flow.dst), dst);
                }
            }
        }
    }

    #[test]
    fn link_local_and_link_scope_multicast_are_refused() {
        let with = |src: Ipv6Addr, dst: Ipv6Addr| {
            let mut b = vec![0x60, 0, 0, 0, 0, 8, 58, 255];
            b.extend_from_slice(&src.octets());
            b.extend_from_slice(&dst.octets());
            b.extend_from_slice(&[133, 0, 0, 0, 0, 0, 0, 0]); // router solicitation
            parse(PacketId(0), b)
        };
        let global: Ipv6Addr = "fd00::1".parse().unwrap();
        let link: Ipv6Addr = "fe80::1".parse().unwrap();
        let all_routers: Ipv6Addr = "ff02::2".parse().unwrap();
        assert_eq!(with(global, all_routers), Err(Refused::LinkLocal));
        assert_eq!(with(link, global), Err(Refused::LinkLocal));
        assert_eq!(with(Ipv6Addr::UNSPECIFIED, "ff02::1:ff00:1".parse().unwrap()), Err(Refused::LinkLocal));
        // Site-scope multicast and global unicast are the model's.
        assert!(with(global, "ff05::2".parse().unwrap()).is_ok());
        assert_eq!(with(global, "fd00::2".parse().unwrap()).unwrap().size, 48);
    }
}
