//! Reading a real IPv4 header (RFC 791) into the model's header: total
//! length, 5-tuple, DSCP and ECN ([`crate::wire::ip`] reads either
//! family). Anything that is not a well-formed IPv4 header is refused
//! with a reason; nothing here panics on bad bytes.

use std::net::Ipv4Addr;

use squall_link::{Ecn, FlowKey, Protocol};

use crate::wire::ip_header::{IpHeader, Refused};

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
