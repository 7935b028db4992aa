//! Reading a real IP packet, IPv4 (RFC 791, [`crate::wire::ipv4`]) or IPv6
//! (RFC 8200, [`crate::wire::ipv6`]), into the model's [`Packet`]: size,
//! 5-tuple, DSCP and ECN. The version nibble says which; anything that is
//! not a well-formed packet of either is refused with a reason, and
//! nothing here panics on bad bytes.

use std::net::IpAddr;

use squall_link::{Packet, PacketId, Payload};

pub(crate) use crate::wire::ip_header::IpHeader;
pub use crate::wire::ip_header::Refused;

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
        payload: Some(Box::new(bytes)),
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
    use squall_link::{Ecn, Protocol};
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

    /// An IPv4 TCP SYN, 44 bytes: 10.0.0.1:5000 to 10.0.1.1:80, ECT(0).
    fn tcp_syn() -> Vec<u8> {
        let mut b = vec![0x45, 0x02, 0, 44, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1];
        b.extend_from_slice(&[0x13, 0x88, 0x00, 0x50]);
        b.resize(44, 0);
        b
    }

    #[test]
    fn ipv4_reads_tcp_five_tuple_and_ecn() {
        let p = parse(PacketId(7), tcp_syn()).unwrap();
        assert_eq!(p.size, 44);
        assert_eq!(p.flow.protocol, Protocol::Tcp);
        assert_eq!((p.flow.src_port, p.flow.dst_port), (5000, 80));
        assert_eq!(p.flow.dst, std::net::Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(p.ecn, Ecn::Ect0);
    }

    #[test]
    fn ipv4_refuses_bad_bytes_without_panicking() {
        assert_eq!(parse(PacketId(0), vec![]), Err(Refused::NotIp));
        assert_eq!(crate::wire::ipv4::read_header(&[0x60; 40]).err(), Some(Refused::NotIp));
        assert_eq!(parse(PacketId(0), vec![0x45; 10]), Err(Refused::Malformed));
        let mut b = tcp_syn();
        b[3] = 200; // total length past the bytes
        assert_eq!(parse(PacketId(0), b), Err(Refused::Malformed));
        let mut b = tcp_syn();
        b[0] = 0x44; // header length 16
        assert_eq!(parse(PacketId(0), b), Err(Refused::Malformed));
        for n in 0..64 {
            let _ = parse(PacketId(0), vec![0x4f; n]);
        }
    }

    #[test]
    fn ipv4_trailing_bytes_are_cut_to_total_length() {
        let mut b = tcp_syn();
        b.extend_from_slice(&[0; 10]);
        assert_eq!(parse(PacketId(0), b).unwrap().payload.unwrap().len(), 44);
    }
}
