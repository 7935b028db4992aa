//! Reading a host's pcap (LINKTYPE_RAW IPv4, as both engines write it) into
//! the fields flow analysis needs. Captures may be cut after the headers
//! (the simulator writes headers only): sizes come from the IP header.

use std::fs::File;
use std::io::BufReader;
use std::net::Ipv4Addr;
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

/// One captured IPv4 packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Captured {
    pub time: Instant,
    pub flow: FlowKey,
    /// IP total length in bytes.
    pub size: u32,
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

/// Reads every IPv4 packet of a pcap file. IPv6 packets (which only an
/// inline emulation between real interfaces captures) are passed over:
/// flows are analysed for IPv4. Other records are errors naming the
/// record.
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
        if p.data.first().is_some_and(|b| b >> 4 == 6) && p.data.len() >= 40 {
            continue;
        }
        out.push(parse_ipv4(time, &p.data).map_err(bad)?);
    }
    Ok(out)
}

/// Parses the headers of one raw IPv4 packet.
pub fn parse_ipv4(time: Instant, data: &[u8]) -> Result<Captured, String> {
    let headers = LaxPacketHeaders::from_ip(data).map_err(|e| format!("not an IP packet: {e}"))?;
    let Some(NetHeaders::Ipv4(ip, _)) = &headers.net else { return Err("not IPv4".into()) };
    let size = u32::from(ip.total_len);
    let ip_len = u32::from(ip.header_len() as u16);
    let (src_port, dst_port, tcp) = match &headers.transport {
        Some(TransportHeader::Udp(u)) => (u.source_port, u.destination_port, None),
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
    Ok(Captured {
        time,
        flow: FlowKey {
            protocol: Protocol::from_number(ip.protocol.0),
            src: Ipv4Addr::from(ip.source),
            dst: Ipv4Addr::from(ip.destination),
            src_port,
            dst_port,
        },
        size,
        ip_id: ip.identification,
        tcp,
    })
}
