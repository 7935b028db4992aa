//! Reading a real IPv4 header (RFC 791) into the model's header: total
//! length, 5-tuple, DSCP and ECN ([`crate::wire::ip`] reads either
//! family). Anything that is not a well-formed IPv4 header is refused
//! with a reason; nothing here panics on bad bytes.

use std::net::Ipv4Addr;

use squall_link::{Ecn, FlowKey, Protocol};

use crate::wire::ip::IpHeader;
pub use crate::wire::ip::{Refused, parse};

/// Reads the IPv4 header at the start of `bytes`.
pub(crate) fn read_header(bytes: &[u8]) -> Result<IpHeader, Refused> {
    if bytes.is_empty() || bytes[0] >> 4 != 4 {
        return Err(Refused::NotIp);
    }
    if bytes.len() < 20 {
        return Err(Refused::Malformed);
    }
    let ihl = usize::from(bytes[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
    if ihl < 20 || total < ihl || total > bytes.len() {
        return Err(Refused::Malformed);
    }
    let protocol = Protocol::from_number(bytes[9]);
    let src = Ipv4Addr::new(bytes[12], bytes[13], bytes[14], bytes[15]);
    let dst = Ipv4Addr::new(bytes[16], bytes[17], bytes[18], bytes[19]);
    // Only the first fragment carries the ports.
    let fragment_offset = u16::from_be_bytes([bytes[6], bytes[7]]) & 0x1fff;
    let (src_port, dst_port) = match protocol {
        Protocol::Tcp | Protocol::Udp if fragment_offset == 0 && total >= ihl + 4 => {
            (u16::from_be_bytes([bytes[ihl], bytes[ihl + 1]]), u16::from_be_bytes([bytes[ihl + 2], bytes[ihl + 3]]))
        }
        _ => (0, 0),
    };
    Ok(IpHeader {
        size: total as u32,
        flow: FlowKey { protocol, src: src.into(), dst: dst.into(), src_port, dst_port },
        dscp: bytes[1] >> 2,
        ecn: Ecn::from_bits(bytes[1]),
    })
}

/// The destination address of a packet's bytes, if it is IPv4.
pub fn destination(bytes: &[u8]) -> Option<Ipv4Addr> {
    (bytes.len() >= 20 && bytes[0] >> 4 == 4).then(|| Ipv4Addr::new(bytes[16], bytes[17], bytes[18], bytes[19]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use squall_link::PacketId;

    fn tcp_syn() -> Vec<u8> {
        let mut b = vec![0x45, 0x02, 0, 44, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 1];
        b.extend_from_slice(&[0x13, 0x88, 0x00, 0x50]);
        b.resize(44, 0);
        b
    }

    #[test]
    fn reads_tcp_five_tuple_and_ecn() {
        let p = parse(PacketId(7), tcp_syn()).unwrap();
        assert_eq!(p.size, 44);
        assert_eq!(p.flow.protocol, Protocol::Tcp);
        assert_eq!((p.flow.src_port, p.flow.dst_port), (5000, 80));
        assert_eq!(p.flow.dst, Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(p.ecn, Ecn::Ect0);
    }

    #[test]
    fn refuses_bad_bytes_without_panicking() {
        assert_eq!(parse(PacketId(0), vec![]), Err(Refused::NotIp));
        assert_eq!(read_header(&[0x60; 40]).err(), Some(Refused::NotIp));
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
    fn trailing_bytes_are_cut_to_total_length() {
        let mut b = tcp_syn();
        b.extend_from_slice(&[0; 10]);
        assert_eq!(parse(PacketId(0), b).unwrap().payload.unwrap().len(), 44);
    }
}
