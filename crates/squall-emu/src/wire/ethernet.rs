//! Ethernet frames (IEEE 802.3) read from a real interface in bridge mode,
//! sorted for the data plane: IPv4 (RFC 791) and IPv6 (RFC 8200) packets
//! are carried through the model, the link's own control traffic (ARP, RFC
//! 826; IPv6 neighbour discovery, RFC 4861) passes straight to the other
//! side, as a bridge passes it, and anything else is refused with a
//! reason. The model sees the IP packet's size, as in namespace mode; the
//! frame travels whole.

use squall_link::{Packet, PacketId, Payload};

use crate::wire::ip_header::{IpHeader, Refused};
use crate::wire::offload::ethernet_header;

/// What a frame is to the bridge.
#[derive(Debug)]
pub enum Frame {
    /// An IP packet for the model; `l3` is where its IP header starts.
    Ip { packet: Packet, l3: usize },
    /// ARP or IPv6 neighbour discovery, the link's own business: the
    /// frame, to pass on as it is.
    LinkControl(Vec<u8>),
}

/// ICMPv6 types of neighbour discovery (RFC 4861 §4): router and
/// neighbour solicitation and advertisement, redirect.
const ND_TYPES: std::ops::RangeInclusive<u8> = 133..=137;

/// Reads `frame`; the frame becomes the packet's payload. A segment of a
/// super-frame is read from the headers it shares, with its own length.
pub fn parse(id: PacketId, frame: impl Into<Payload>) -> Result<Frame, Refused> {
    let frame = frame.into();
    let head = frame.headers();
    let Some((l3, ethertype)) = ethernet_header(head) else { return Err(Refused::Malformed) };
    let ip = &head[l3..];
    let header = match ethertype {
        0x0806 => return Ok(Frame::LinkControl(frame.into_vec())),
        0x0800 => crate::wire::ipv4::read_header(ip)?,
        0x86dd => match crate::wire::ipv6::read(ip)? {
            (_, Some(t)) if ND_TYPES.contains(&t) => return Ok(Frame::LinkControl(frame.into_vec())),
            (h, _) => h,
        },
        _ => return Err(Refused::NotIp),
    };
    let header = match &frame {
        Payload::Owned(_) => header,
        Payload::Segment(_) => IpHeader { size: frame.len().saturating_sub(l3) as u32, ..header },
    };
    let mut packet = crate::wire::ip::packet(id, header, frame);
    packet.l3 = l3 as u16;
    Ok(Frame::Ip { packet, l3 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use squall_link::Protocol;

    fn eth(ethertype: u16, body: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(body);
        f
    }

    fn ipv6(next: u8, body: &[u8]) -> Vec<u8> {
        let mut h = vec![0x6b, 0x80, 0, 0]; // traffic class 0xb8: EF (46), not-ECT
        h.extend_from_slice(&(body.len() as u16).to_be_bytes());
        h.extend_from_slice(&[next, 64]);
        h.extend_from_slice(&[0xfd; 32]);
        h.extend_from_slice(body);
        h
    }

    #[test]
    fn ipv4_in_a_vlan_tagged_frame_is_carried_whole() {
        let mut ip = vec![0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        ip.extend_from_slice(&[0x13, 0x88, 0x00, 0x35, 0, 8, 0, 0]);
        let mut body = vec![0, 5, 0x08, 0x00]; // VLAN 5, then IPv4
        body.extend_from_slice(&ip);
        body.extend_from_slice(&[0; 18]); // padding to the 64-byte minimum
        let frame = eth(0x8100, &body);
        let Frame::Ip { packet, l3 } = parse(PacketId(1), frame.clone()).unwrap() else { panic!("not IP") };
        assert_eq!((l3, packet.size), (18, 28));
        assert_eq!((packet.flow.src_port, packet.flow.dst_port), (5000, 53));
        assert_eq!(packet.payload.map(|p| p.into_vec()), Some(frame.clone()));
    }

    #[test]
    fn ipv6_udp_behind_an_extension_header_has_its_ports() {
        let mut body = vec![17, 0, 0, 0, 0, 0, 0, 0]; // hop-by-hop, 8 bytes, then UDP
        body.extend_from_slice(&[0x00, 0x35, 0x13, 0x88, 0, 8, 0, 0]);
        let Frame::Ip { packet, .. } = parse(PacketId(1), eth(0x86dd, &ipv6(0, &body))).unwrap() else { panic!() };
        assert_eq!(packet.size, 40 + 16);
        assert_eq!(packet.flow.protocol, Protocol::Udp);
        assert_eq!((packet.flow.src_port, packet.flow.dst_port), (53, 5000));
        assert_eq!(packet.dscp, 46);
    }

    #[test]
    fn arp_and_neighbour_discovery_are_the_links_own() {
        assert!(matches!(parse(PacketId(1), eth(0x0806, &[0; 28])), Ok(Frame::LinkControl(_))));
        let ns = ipv6(58, &[135, 0, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(parse(PacketId(1), eth(0x86dd, &ns)), Ok(Frame::LinkControl(_))));
        // An echo request (128) is carried through the model.
        let echo = ipv6(58, &[128, 0, 0, 0, 0, 1, 0, 1]);
        assert!(matches!(parse(PacketId(1), eth(0x86dd, &echo)), Ok(Frame::Ip { .. })));
    }

    #[test]
    fn other_and_broken_frames_are_refused_with_a_reason() {
        assert_eq!(parse(PacketId(1), eth(0x88cc, &[0; 40])).unwrap_err(), Refused::NotIp); // LLDP
        assert_eq!(parse(PacketId(1), vec![0; 10]).unwrap_err(), Refused::Malformed);
        let v6 = eth(0x86dd, &ipv6(0, &[17, 200, 0, 0, 0, 0, 0, 0]));
        assert_eq!(parse(PacketId(1), v6).unwrap_err(), Refused::Malformed); // extension past the end
        for n in 0..80 {
            let _ = parse(PacketId(1), eth(0x86dd, &vec![0x60; n]));
            let _ = parse(PacketId(1), eth(0x0800, &vec![0x45; n]));
        }
    }
}
