//! Reading a host's pcap (LINKTYPE_RAW IPv4 and IPv6, as both engines write it) into
//! the fields flow analysis needs. Captures may be cut after the headers
//! (the simulator writes headers only): sizes come from the IP header.

use std::fs::File;
use std::io::BufReader;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use etherparse::{LaxPacketHeaders, NetHeaders, TransportHeader};
use pcap_file::pcap::PcapReader;
use squall_link::{FlowKey, Instant, Protocol};

/// The TCP fields of a captured segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpFields {
    pub seq: u32,
    pub ack: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub has_ack: bool,
    /// Payload bytes (from the IP total length, not the captured bytes).
    pub payload_len: u32,
}

/// One captured IP packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Captured {
    pub time: Instant,
    pub flow: FlowKey,
    /// IP total length in bytes (IPv6: 40 + the payload length).
    pub size: u32,
    /// What tells a packet from its flow's others, to match a sending
    /// with its arrival: IPv4's identification; IPv6 has none (RFC 8200
    /// §4.5 puts one in fragments only), so a fold of the transport
    /// header's fields that differ between a flow's packets: TCP's
    /// sequence and acknowledgment numbers and payload length (a
    /// retransmission repeats its original's), UDP's checksum (over the
    /// payload, which differs between datagrams that carry a sequence
    /// number, as iperf3's and the simulator's do).
    pub ip_id: u16,
    pub tcp: Option<TcpFields>,
}

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{file}: cannot open: {source}")]
    Open { file: String, source: std::io::Error },
    #[error("{file}: not a pcap file this reader understands: {source}")]
    Format { file: String, source: pcap_file::PcapError },
    #[error("{file}: record {record}: {reason}")]
    Record { file: String, record: usize, reason: String },
}

/// Reads every IPv4 and IPv6 packet of a pcap file. Other records are
/// errors naming the record.
pub fn read_capture(path: &Path) -> Result<Vec<Captured>, CaptureError> {
    let file = path.display().to_string();
    let f = File::open(path).map_err(|source| CaptureError::Open { file: file.clone(), source })?;
    read_capture_from(&file, BufReader::new(f))
}

/// [`read_capture`] from any reader; `file` names it in errors.
pub fn read_capture_from<R: std::io::Read>(file: &str, input: R) -> Result<Vec<Captured>, CaptureError> {
    let file = file.to_string();
    let mut reader = PcapReader::new(input).map_err(|source| CaptureError::Format { file: file.clone(), source })?;
    let mut out = Vec::new();
    let mut record = 0;
    while let Some(p) = reader.next_packet() {
        record += 1;
        let p = p.map_err(|source| CaptureError::Format { file: file.clone(), source })?;
        let time = Instant::from_nanos(p.timestamp.as_nanos() as u64);
        let bad = |reason: String| CaptureError::Record { file: file.clone(), record, reason };
        out.push(parse_ip(time, &p.data).map_err(bad)?);
    }
    Ok(out)
}

/// The records of a host's capture that are not IP packets squall parses
/// (`record N: reason`, in order): a stage in `error_mode = "corrupt"`
/// flips bits anywhere in a packet, its IP header too (an IHL of 4, a
/// version of 5), and the receiving host's capture keeps what arrived.
/// [`read_capture_skipping`] leaves them out of a run's analysis; the
/// engine says how many there were.
pub fn unparsed_records(path: &Path) -> Result<Vec<String>, CaptureError> {
    Ok(read_capture_skipping(path)?.1)
}

/// [`read_capture`], leaving out the records that are not IP packets (see
/// [`unparsed_records`]), which are returned beside the packets.
pub fn read_capture_skipping(path: &Path) -> Result<(Vec<Captured>, Vec<String>), CaptureError> {
    let file = path.display().to_string();
    let f = File::open(path).map_err(|source| CaptureError::Open { file: file.clone(), source })?;
    let mut reader =
        PcapReader::new(BufReader::new(f)).map_err(|source| CaptureError::Format { file: file.clone(), source })?;
    let (mut out, mut unparsed) = (Vec::new(), Vec::new());
    let mut record = 0;
    while let Some(p) = reader.next_packet() {
        record += 1;
        let p = p.map_err(|source| CaptureError::Format { file: file.clone(), source })?;
        match parse_ip(Instant::from_nanos(p.timestamp.as_nanos() as u64), &p.data) {
            Ok(c) => out.push(c),
            Err(reason) => unparsed.push(format!("record {record}: {reason}")),
        }
    }
    Ok((out, unparsed))
}

/// Parses the headers of one raw IPv4 or IPv6 packet.
pub fn parse_ip(time: Instant, data: &[u8]) -> Result<Captured, String> {
    let headers = LaxPacketHeaders::from_ip(data).map_err(|e| format!("not an IP packet: {e}"))?;
    let (size, ip_len, protocol, src, dst, id) = match &headers.net {
        Some(NetHeaders::Ipv4(ip, _)) => (
            u32::from(ip.total_len),
            u32::from(ip.header_len() as u16),
            ip.protocol.0,
            Ipv4Addr::from(ip.source).into(),
            Ipv4Addr::from(ip.destination).into(),
            Some(ip.identification),
        ),
        Some(NetHeaders::Ipv6(ip, ext)) => {
            // Extension headers count as IP header bytes.
            let ext_len = ext.header_len() as u32;
            // The transport behind the extension headers.
            let next = match &headers.transport {
                Some(TransportHeader::Tcp(_)) => 6,
                Some(TransportHeader::Udp(_)) => 17,
                Some(TransportHeader::Icmpv6(_)) => 58,
                _ => ip.next_header.0,
            };
            (
                40 + u32::from(ip.payload_length),
                40 + ext_len,
                next,
                Ipv6Addr::from(ip.source).into(),
                Ipv6Addr::from(ip.destination).into(),
                None,
            )
        }
        _ => return Err("neither IPv4 nor IPv6".into()),
    };
    let (src_port, dst_port, tcp) = match &headers.transport {
        Some(TransportHeader::Udp(u)) => (u.source_port, u.destination_port, None),
        Some(TransportHeader::Icmpv6(_)) => (0, 0, None),
        Some(TransportHeader::Tcp(t)) => {
            let payload_len = size.saturating_sub(ip_len + t.header_len() as u32);
            let fields = TcpFields {
                seq: t.sequence_number,
                ack: t.acknowledgment_number,
                syn: t.syn,
                fin: t.fin,
                rst: t.rst,
                has_ack: t.ack,
                payload_len,
            };
            (t.source_port, t.destination_port, Some(fields))
        }
        _ => (0, 0, None),
    };
    let ip_id = id.unwrap_or_else(|| match (&headers.transport, tcp) {
        (_, Some(t)) => {
            let fold = t.seq ^ t.ack.rotate_left(16) ^ t.payload_len.rotate_left(8);
            (fold ^ (fold >> 16)) as u16
        }
        (Some(TransportHeader::Udp(u)), None) => u.checksum,
        _ => 0,
    });
    Ok(Captured {
        time,
        flow: FlowKey { protocol: Protocol::from_number(protocol), src, dst, src_port, dst_port },
        size,
        ip_id,
        tcp,
    })
}
