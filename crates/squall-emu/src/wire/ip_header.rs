//! What every IP reader hands back: the header fields the model needs
//! ([`IpHeader`]) or why a packet is refused ([`Refused`]). A leaf module,
//! so that [`crate::wire::ip`] can choose a reader by version and the
//! readers ([`crate::wire::ipv4`], [`crate::wire::ipv6`],
//! [`crate::wire::ethernet`]) need nothing of it.

use squall_link::{Ecn, FlowKey};

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
