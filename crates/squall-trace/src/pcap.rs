//! pcap files of the packets a run carried: LINKTYPE_RAW (101, the IP
//! packet with no link header) and nanosecond timestamps, so the model's
//! integer-nanosecond [`Instant`]s are written exactly.

use std::borrow::Cow;
use std::io::Write;

use std::net::IpAddr;

use etherparse::{IpDscp, IpEcn, IpNumber, Ipv4Header, Ipv6FlowLabel, Ipv6Header, TcpHeader, TcpOptions, UdpHeader};
use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use squall_link::{Ecn, Instant, Packet, PacketId, Protocol};

use crate::tcp::TcpHeaderInfo;

/// Largest packet a record may hold, in bytes: the largest IPv4 packet.
pub const SNAPLEN: u32 = 65_535;

const IPV4_HEADER_LEN: usize = Ipv4Header::MIN_LEN;
const IPV6_HEADER_LEN: usize = Ipv6Header::LEN;
/// IPv4's TTL and IPv6's hop limit (Linux's default, net.ipv4.ip_default_ttl
/// and net.ipv6.conf.*.hop_limit).
const TTL: u8 = 64;

/// Why a packet could not be written to a pcap file.
#[derive(Debug, thiserror::Error)]
pub enum PcapWriteError {
    /// The underlying writer failed.
    #[error("writing pcap: {0}")]
    Io(std::io::Error),
    /// The pcap library refused the record.
    #[error("writing pcap: {0}")]
    Pcap(PcapError),
    /// The packet's size cannot hold the headers synthesised for it.
    #[error("packet {}: size {size} bytes is smaller than its {header_len} bytes of headers", .packet.0)]
    TooSmall { packet: PacketId, size: u32, header_len: usize },
    /// The packet is larger than an IPv4 packet can be.
    #[error("packet {}: size {size} bytes exceeds the IPv4 maximum of 65535", .packet.0)]
    TooLarge { packet: PacketId, size: u64 },
    /// The flow's source and destination are of different IP versions.
    #[error("packet {}: its flow's source and destination are of different IP versions", .packet.0)]
    MixedFamilies { packet: PacketId },
    /// The DSCP does not fit in six bits.
    #[error("packet {}: DSCP {dscp} is not in 0..=63", .packet.0)]
    InvalidDscp { packet: PacketId, dscp: u8 },
    /// The TCP options do not fit in the 40 bytes a TCP header allows.
    #[error("packet {}: TCP options need {needed} bytes, at most 40 fit", .packet.0)]
    TcpOptionsTooLong { packet: PacketId, needed: usize },
    /// TCP header fields were given for a packet that is not TCP.
    #[error("packet {}: TCP header info given for a {protocol:?} packet", .packet.0)]
    NotTcp { packet: PacketId, protocol: Protocol },
    /// pcap timestamps hold whole seconds in 32 bits (about 136 years).
    #[error("packet {}: time {time} s is past the largest pcap timestamp", .packet.0)]
    TimeOutOfRange { packet: PacketId, time: Instant },
    /// A captured packet's time is past the largest pcap timestamp.
    #[error("captured packet: time {time} s is past the largest pcap timestamp")]
    CapturedTimeOutOfRange { time: Instant },
    /// A captured packet is longer than an IPv4 packet, or holds more
    /// bytes than its original length.
    #[error("captured packet: {captured} bytes captured of {orig_len}; at most 65535 and at most the original length")]
    CapturedTooLarge { orig_len: u32, captured: usize },
}

impl From<PcapError> for PcapWriteError {
    /// pcap-file calls every I/O error "Error reading bytes", writes too:
    /// the I/O error itself says what went wrong.
    fn from(e: PcapError) -> Self {
        match e {
            PcapError::IoError(io) => PcapWriteError::Io(io),
            e => PcapWriteError::Pcap(e),
        }
    }
}

/// Writes packets to a pcap file, one record per call.
///
/// The file is little-endian whatever the host, so the same packets give
/// the same bytes everywhere.
pub struct PcapWriter<W: Write> {
    pcap: pcap_file::pcap::PcapWriter<W>,
    /// Most bytes a record holds (the file header's snaplen).
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header (nanosecond magic, LINKTYPE_RAW, snaplen
    /// [`SNAPLEN`]); records hold whole packets.
    pub fn new(writer: W) -> Result<Self, PcapWriteError> {
        Self::with_snaplen(writer, SNAPLEN)
    }

    /// Like [`Self::new`], but every record holds at most `snaplen` bytes
    /// of its packet (`tcpdump -s`); the record's original length stays the
    /// packet's. `snaplen` is clamped to 1..=[`SNAPLEN`].
    ///
    /// The file header still says [`SNAPLEN`]: pcap-file 2.0's reader (and
    /// so squall's analysis) refuses a record whose original length exceeds
    /// the header's snaplen, though tcpdump writes such files; records no
    /// longer than the header's snaplen are valid for every reader.
    pub fn with_snaplen(writer: W, snaplen: u32) -> Result<Self, PcapWriteError> {
        let snaplen = snaplen.clamp(1, SNAPLEN);
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        Ok(PcapWriter { pcap: pcap_file::pcap::PcapWriter::with_header(writer, header)?, snaplen })
    }

    /// Writes the first bytes of a captured packet, `data` (already cut
    /// short by the caller or not), as seen at `time`; the packet was
    /// `orig_len` bytes long. `data` beyond the snaplen is not written.
    pub fn write_captured(&mut self, time: Instant, data: &[u8], orig_len: u32) -> Result<(), PcapWriteError> {
        let timestamp = timestamp(time).ok_or(PcapWriteError::CapturedTimeOutOfRange { time })?;
        if orig_len > SNAPLEN || data.len() > orig_len as usize {
            return Err(PcapWriteError::CapturedTooLarge { orig_len, captured: data.len() });
        }
        let data = &data[..data.len().min(self.snaplen as usize)];
        self.pcap.write_packet(&PcapPacket { timestamp, orig_len, data: Cow::Borrowed(data) })?;
        Ok(())
    }

    /// Writes `packet` as seen at `time`: its bytes if it carries them,
    /// otherwise its synthesised IPv4 and UDP headers (IPv4 only for other
    /// protocols, TCP included), truncated there like `tcpdump -s`, with
    /// the record's original length `packet.size`.
    pub fn write_packet(&mut self, time: Instant, packet: &Packet) -> Result<(), PcapWriteError> {
        self.write(time, packet, None)
    }

    /// Like [`Self::write_packet`], but a TCP packet without bytes gets a
    /// real TCP header from `tcp` after its IPv4 header.
    pub fn write_tcp_packet(
        &mut self,
        time: Instant,
        packet: &Packet,
        tcp: &TcpHeaderInfo,
    ) -> Result<(), PcapWriteError> {
        self.write(time, packet, Some(tcp))
    }

    /// The underlying writer; flushing it is the caller's job.
    pub fn into_inner(self) -> W {
        self.pcap.into_writer()
    }

    fn write(&mut self, time: Instant, packet: &Packet, tcp: Option<&TcpHeaderInfo>) -> Result<(), PcapWriteError> {
        let timestamp = timestamp(time).ok_or(PcapWriteError::TimeOutOfRange { packet: packet.id, time })?;
        let (data, orig_len) = match &packet.payload {
            Some(payload) => {
                let bytes = payload.bytes();
                let len = u32::try_from(bytes.len()).ok().filter(|&len| len <= SNAPLEN);
                let len = len.ok_or(PcapWriteError::TooLarge { packet: packet.id, size: bytes.len() as u64 })?;
                (bytes, len)
            }
            None => (Cow::Owned(synthesise_headers(packet, tcp)?), packet.size),
        };
        let data = match data {
            Cow::Borrowed(d) => Cow::Borrowed(&d[..d.len().min(self.snaplen as usize)]),
            Cow::Owned(mut d) => {
                d.truncate(self.snaplen as usize);
                Cow::Owned(d)
            }
        };
        self.pcap.write_packet(&PcapPacket { timestamp, orig_len, data })?;
        Ok(())
    }
}

/// `time` as a pcap timestamp; `None` past what 32-bit seconds hold.
fn timestamp(time: Instant) -> Option<std::time::Duration> {
    let nanos = time.as_nanos();
    (nanos / 1_000_000_000 <= u64::from(u32::MAX)).then(|| std::time::Duration::from_nanos(nanos))
}

/// The headers of a packet that carries no bytes: IPv4 (total length
/// `packet.size`, identification the low 16 bits of the id, TTL 64, DF
/// set, DSCP/ECN from the packet) or, for a flow of IPv6 addresses, the
/// 40-byte IPv6 header (RFC 8200 §3: payload length `packet.size` − 40,
/// traffic class DSCP/ECN, flow label 0, hop limit 64); then UDP or, given
/// `tcp`, TCP. Other protocols get the IP header alone. Over IPv4 the UDP
/// checksum is 0 (none, RFC 768); over IPv6 it is mandatory (RFC 8200
/// §8.1) and computed like TCP's.
///
/// TCP and UDP checksums are computed as if the uncaptured payload were
/// zeros (an IPv6 UDP payload: the packet id in its first 8 bytes, then
/// zeros), so they are deterministic and what such a packet would carry;
/// both use the pseudo-header of the IP version (RFC 9293 §3.1, RFC 8200
/// §8.1).
pub fn synthesise_headers(packet: &Packet, tcp: Option<&TcpHeaderInfo>) -> Result<Vec<u8>, PcapWriteError> {
    let id = packet.id;
    let flow = packet.flow;
    let total_len =
        u16::try_from(packet.size).map_err(|_| PcapWriteError::TooLarge { packet: id, size: packet.size.into() })?;
    let dscp =
        IpDscp::try_new(packet.dscp).map_err(|_| PcapWriteError::InvalidDscp { packet: id, dscp: packet.dscp })?;

    let tcp_header = match (flow.protocol, tcp) {
        (Protocol::Tcp, Some(info)) => Some(tcp_header(packet, info)?),
        (protocol, Some(_)) => {
            return Err(PcapWriteError::NotTcp { packet: id, protocol });
        }
        (_, None) => None,
    };
    let transport_len = match (&tcp_header, flow.protocol) {
        (Some(h), _) => h.header_len(),
        (None, Protocol::Udp) => UdpHeader::LEN,
        (None, _) => 0,
    };
    let ip_len = if flow.is_ipv6() { IPV6_HEADER_LEN } else { IPV4_HEADER_LEN };
    let header_len = ip_len + transport_len;
    if usize::from(total_len) < header_len {
        return Err(PcapWriteError::TooSmall { packet: id, size: packet.size, header_len });
    }
    let transport_total = total_len - ip_len as u16;

    let mut bytes = Vec::with_capacity(header_len);
    // The pseudo-header's bytes before the upper-layer length and
    // protocol: the two addresses.
    let mut addresses = Vec::with_capacity(32);
    match (flow.src, flow.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            let mut ip = Ipv4Header {
                dscp,
                ecn: ip_ecn(packet.ecn),
                total_len,
                identification: id.0 as u16,
                dont_fragment: true,
                more_fragments: false,
                fragment_offset: Default::default(),
                time_to_live: TTL,
                protocol: IpNumber(flow.protocol.number()),
                header_checksum: 0,
                source: src.octets(),
                destination: dst.octets(),
                options: Default::default(),
            };
            ip.header_checksum = ip.calc_header_checksum();
            bytes.extend_from_slice(&ip.to_bytes());
            addresses.extend_from_slice(&src.octets());
            addresses.extend_from_slice(&dst.octets());
        }
        (src, dst) => {
            let (IpAddr::V6(src), IpAddr::V6(dst)) = (src, dst) else {
                return Err(PcapWriteError::MixedFamilies { packet: id });
            };
            let ip = Ipv6Header {
                traffic_class: (packet.dscp << 2) | packet.ecn.bits(),
                flow_label: Ipv6FlowLabel::ZERO,
                payload_length: transport_total,
                next_header: IpNumber(flow.protocol.number()),
                hop_limit: TTL,
                source: src.octets(),
                destination: dst.octets(),
            };
            bytes.extend_from_slice(&ip.to_bytes());
            addresses.extend_from_slice(&src.octets());
            addresses.extend_from_slice(&dst.octets());
        }
    }
    // RFC 9293 §3.1 (IPv4: zero, protocol, 16-bit length) and RFC 8200
    // §8.1 (IPv6: 32-bit length, three zero bytes, next header); both
    // sum to the same 16-bit words when the length fits in 16 bits.
    let [len_hi, len_lo] = transport_total.to_be_bytes();
    if let Some(mut tcp) = tcp_header {
        let pseudo_header = [&addresses[..], &[0, IpNumber::TCP.0, len_hi, len_lo]];
        tcp.checksum = !ones_complement_sum(pseudo_header.into_iter().chain([&tcp.to_bytes()[..]]));
        bytes.extend_from_slice(&tcp.to_bytes());
    } else if flow.protocol == Protocol::Udp {
        let mut udp = UdpHeader {
            source_port: flow.src_port,
            destination_port: flow.dst_port,
            length: transport_total,
            checksum: 0,
        };
        if flow.is_ipv6() {
            // The payload starts with the packet's id (8 bytes, as far as
            // it fits), so that datagrams of one size tell apart by their
            // checksum (IPv6 has no identification field to match a
            // sending with its arrival, squall-analysis capture.rs).
            let room = usize::from(transport_total).saturating_sub(UdpHeader::LEN).min(8);
            let id_bytes = id.0.to_be_bytes();
            let pseudo_header = [&addresses[..], &[0, IpNumber::UDP.0, len_hi, len_lo]];
            // An odd run is summed as if a zero byte followed: the
            // payload's next byte.
            let sum = !ones_complement_sum(pseudo_header.into_iter().chain([&udp.to_bytes()[..], &id_bytes[..room]]));
            // A computed 0 is sent as all ones (RFC 768, RFC 8200 §8.1).
            udp.checksum = if sum == 0 { 0xffff } else { sum };
        }
        bytes.extend_from_slice(&udp.to_bytes());
    }
    Ok(bytes)
}

fn tcp_header(packet: &Packet, info: &TcpHeaderInfo) -> Result<TcpHeader, PcapWriteError> {
    let needed = info.options_len();
    let options = Some(needed)
        .filter(|&n| n <= TcpOptions::MAX_LEN)
        .and_then(|_| TcpOptions::try_from_elements(&info.option_elements()).ok())
        .ok_or(PcapWriteError::TcpOptionsTooLong { packet: packet.id, needed })?;
    let flag = |f| info.flags.contains(f);
    use crate::tcp::TcpFlags as F;
    Ok(TcpHeader {
        source_port: packet.flow.src_port,
        destination_port: packet.flow.dst_port,
        sequence_number: info.seq,
        acknowledgment_number: info.ack,
        ns: false,
        fin: flag(F::FIN),
        syn: flag(F::SYN),
        rst: flag(F::RST),
        psh: flag(F::PSH),
        ack: flag(F::ACK),
        urg: flag(F::URG),
        ece: flag(F::ECE),
        cwr: flag(F::CWR),
        window_size: info.window,
        checksum: 0,
        urgent_pointer: 0,
        options,
    })
}

/// The 16-bit ones' complement sum of byte runs of even length (RFC 1071).
fn ones_complement_sum<'a>(runs: impl IntoIterator<Item = &'a [u8]>) -> u16 {
    let mut sum: u32 = 0;
    for run in runs {
        for word in run.chunks(2) {
            sum += u32::from(u16::from_be_bytes([word[0], word.get(1).copied().unwrap_or(0)]));
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    sum as u16
}

fn ip_ecn(ecn: Ecn) -> IpEcn {
    match ecn {
        Ecn::NotEct => IpEcn::NotEct,
        Ecn::Ect1 => IpEcn::Ect1,
        Ecn::Ect0 => IpEcn::Ect0,
        Ecn::Ce => IpEcn::CongestionExperienced,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use pcap_file::pcap::PcapReader;
    use squall_link::FlowKey;

    use super::*;
    use crate::tcp::TcpFlags;

    fn flow(protocol: Protocol) -> FlowKey {
        FlowKey {
            protocol,
            src: Ipv4Addr::new(10, 0, 0, 1).into(),
            dst: Ipv4Addr::new(10, 0, 0, 2).into(),
            src_port: 5000,
            dst_port: 6000,
        }
    }

    fn udp_packet(id: u64, size: u32) -> Packet {
        Packet::new(PacketId(id), size, flow(Protocol::Udp))
    }

    /// An IPv6 UDP packet of 60 bytes from [fd00::1]:1 to [fd00::2]:2:
    /// the 40-byte header (RFC 8200 §3) and the checksum over the
    /// pseudo-header, the UDP header and a payload of the id (7, 8 bytes)
    /// and 4 zeros, computed apart in Python (RFC 8200 §8.1):
    ///
    /// ```text
    /// ph = src + dst + struct.pack('!IxxxB', 20, 17)
    /// d = ph + struct.pack('!HHHH', 1, 2, 20, 0) + struct.pack('!Q', 7) + bytes(4)
    /// ~(ones' complement sum of d's 16-bit words) = 0x05b8
    /// ```
    #[test]
    fn ipv6_udp_header_and_its_mandatory_checksum() {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: "fd00::1".parse().unwrap(),
            dst: "fd00::2".parse().unwrap(),
            src_port: 1,
            dst_port: 2,
        };
        let mut p = Packet::new(PacketId(7), 60, flow);
        p.dscp = 46;
        p.ecn = Ecn::Ect0;
        let bytes = synthesise_headers(&p, None).unwrap();
        assert_eq!(bytes.len(), 48);
        // Version 6, traffic class 0xba (DSCP 46, ECT(0)), flow label 0.
        assert_eq!(bytes[..4], [0x6b, 0xa0, 0x00, 0x00]);
        // Payload length 20, next header UDP, hop limit 64.
        assert_eq!(bytes[4..8], [0, 20, 17, 64]);
        assert_eq!(bytes[8..24], "fd00::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(bytes[40..48], [0, 1, 0, 2, 0, 20, 0x05, 0xb8]);
    }

    fn syn() -> TcpHeaderInfo {
        TcpHeaderInfo {
            seq: 1000,
            flags: TcpFlags::SYN,
            window: 65535,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamps: Some((1, 0)),
            ..Default::default()
        }
    }

    fn records(file: &[u8]) -> Vec<(std::time::Duration, u32, Vec<u8>)> {
        let mut reader = PcapReader::new(file).unwrap();
        let mut out = Vec::new();
        while let Some(p) = reader.next_packet() {
            let p = p.unwrap();
            out.push((p.timestamp, p.orig_len, p.data.into_owned()));
        }
        out
    }

    #[test]
    fn udp_headers_match_hand_computed_bytes() {
        let mut p = udp_packet(0x1_0002, 100);
        p.dscp = 46; // EF
        p.ecn = Ecn::Ect0;
        // TOS = 46 << 2 | 0b10 = 0xba. Checksum by hand: 0x45ba + 0x0064 +
        // 0x0002 + 0x4000 + 0x4011 + 0x0a00 + 0x0001 + 0x0a00 + 0x0002 =
        // 0xda34, complemented 0x25cb.
        #[rustfmt::skip]
        let expected = [
            0x45, 0xba, 0x00, 0x64, 0x00, 0x02, 0x40, 0x00, 0x40, 0x11, 0x25, 0xcb,
            10, 0, 0, 1, 10, 0, 0, 2,
            0x13, 0x88, 0x17, 0x70, 0x00, 0x50, 0x00, 0x00,
        ];
        assert_eq!(synthesise_headers(&p, None).unwrap(), expected);
    }

    #[test]
    fn file_has_nanosecond_raw_header_and_truncated_records() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(Instant::from_nanos(40_000_000_001), &udp_packet(1, 1500)).unwrap();
        let file = w.into_inner();
        assert_eq!(file[..4], [0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(file[20..24], 101u32.to_le_bytes());
        let recs = records(&file);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].0, std::time::Duration::new(40, 1));
        assert_eq!((recs[0].1, recs[0].2.len()), (1500, 28));
    }

    #[test]
    fn same_packets_give_identical_bytes() {
        let write = || {
            let mut w = PcapWriter::new(Vec::new()).unwrap();
            for i in 0..50u64 {
                w.write_packet(Instant::from_micros(i * 1234), &udp_packet(i, 200 + i as u32)).unwrap();
            }
            let tcp = Packet::new(PacketId(99), 60, flow(Protocol::Tcp));
            w.write_tcp_packet(Instant::from_secs(1), &tcp, &syn()).unwrap();
            w.into_inner()
        };
        assert_eq!(write(), write());
    }

    #[test]
    fn real_bytes_are_written_as_they_are() {
        let mut p = udp_packet(3, 999);
        p.payload = Some(vec![0x45, 1, 2, 3].into());
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(Instant::ZERO, &p).unwrap();
        let (_, orig_len, data) = records(&w.into_inner()).remove(0);
        assert_eq!((orig_len, data), (4, vec![0x45, 1, 2, 3]));
    }

    #[test]
    fn tcp_header_carries_fields_options_and_zero_payload_checksum() {
        let p = Packet::new(PacketId(5), 60, flow(Protocol::Tcp));
        let bytes = synthesise_headers(&p, Some(&syn())).unwrap();
        assert_eq!(bytes.len(), 20 + 40);
        let (tcp, rest) = TcpHeader::from_slice(&bytes[20..]).unwrap();
        assert!(rest.is_empty());
        assert!(tcp.syn && !tcp.ack);
        assert_eq!((tcp.sequence_number, tcp.window_size), (1000, 65535));
        use etherparse::TcpOptionElement::*;
        let options: Vec<_> = tcp.options_iterator().map(Result::unwrap).collect();
        assert!(options.contains(&MaximumSegmentSize(1460)));
        assert!(options.contains(&WindowScale(7)));
        assert!(options.contains(&SelectiveAcknowledgementPermitted));
        assert!(options.contains(&Timestamp(1, 0)));
        // Pseudo header + TCP header sum to 0xffff: a valid checksum for a
        // zero-filled payload.
        let pseudo = [10, 0, 0, 1, 10, 0, 0, 2, 0, 6, 0, 40];
        assert_eq!(ones_complement_sum([&pseudo[..], &bytes[20..]]), 0xffff);
        assert_eq!(bytes[36..38], [0x05, 0x1d], "checksum computed by hand");
    }

    #[test]
    fn snaplen_cuts_records_and_keeps_the_original_length() {
        let mut w = PcapWriter::with_snaplen(Vec::new(), 64).unwrap();
        let bytes: Vec<u8> = (0..200u8).collect();
        w.write_captured(Instant::from_micros(1), &bytes, 200).unwrap();
        w.write_captured(Instant::from_micros(2), &bytes[..64], 1500).unwrap();
        w.write_captured(Instant::from_micros(3), &bytes[..10], 10).unwrap();
        let mut p = udp_packet(4, 100);
        p.payload = Some(bytes.clone().into());
        w.write_packet(Instant::from_micros(4), &p).unwrap();
        assert!(w.write_captured(Instant::ZERO, &bytes, 100).is_err(), "more bytes than the packet had");
        let file = w.into_inner();
        assert_eq!(file[16..20], SNAPLEN.to_le_bytes(), "header snaplen: see with_snaplen");
        let recs: Vec<_> = records(&file).into_iter().map(|(_, orig, data)| (orig, data)).collect();
        assert_eq!(
            recs,
            vec![
                (200, bytes[..64].to_vec()),
                (1500, bytes[..64].to_vec()),
                (10, bytes[..10].to_vec()),
                (200, bytes[..64].to_vec())
            ]
        );
    }

    #[test]
    fn tcp_without_info_gets_ip_header_only() {
        let p = Packet::new(PacketId(5), 1500, flow(Protocol::Tcp));
        assert_eq!(synthesise_headers(&p, None).unwrap().len(), 20);
    }

    #[test]
    fn bad_packets_are_errors_naming_the_packet() {
        let too_small = synthesise_headers(&udp_packet(7, 27), None).unwrap_err();
        assert!(matches!(too_small, PcapWriteError::TooSmall { header_len: 28, .. }));
        assert!(too_small.to_string().contains("packet 7"), "{too_small}");

        let tcp = Packet::new(PacketId(8), 59, flow(Protocol::Tcp));
        assert!(matches!(synthesise_headers(&tcp, Some(&syn())), Err(PcapWriteError::TooSmall { .. })));

        let mut sack = syn();
        sack.sack_blocks = vec![(1, 2), (3, 4), (5, 6), (7, 8)];
        let err = synthesise_headers(&Packet::new(PacketId(9), 1500, flow(Protocol::Tcp)), Some(&sack));
        assert!(matches!(err, Err(PcapWriteError::TcpOptionsTooLong { needed: 56, .. })));

        let err = synthesise_headers(&udp_packet(10, 100), Some(&syn()));
        assert!(matches!(err, Err(PcapWriteError::NotTcp { .. })));

        let mut dscp = udp_packet(11, 100);
        dscp.dscp = 64;
        assert!(matches!(synthesise_headers(&dscp, None), Err(PcapWriteError::InvalidDscp { .. })));
        assert!(matches!(synthesise_headers(&udp_packet(12, 70_000), None), Err(PcapWriteError::TooLarge { .. })));

        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let late = Instant::from_secs(u64::from(u32::MAX) + 1);
        assert!(matches!(w.write_packet(late, &udp_packet(13, 100)), Err(PcapWriteError::TimeOutOfRange { .. })));
    }

    #[test]
    fn sack_blocks_fit_with_timestamps() {
        let info = TcpHeaderInfo {
            flags: TcpFlags::ACK,
            timestamps: Some((5, 6)),
            sack_blocks: vec![(10, 20), (30, 40), (50, 60)],
            ..Default::default()
        };
        let p = Packet::new(PacketId(1), 100, flow(Protocol::Tcp));
        let bytes = synthesise_headers(&p, Some(&info)).unwrap();
        let (tcp, _) = TcpHeader::from_slice(&bytes[20..]).unwrap();
        let options: Vec<_> = tcp.options_iterator().map(Result::unwrap).collect();
        let blocks =
            etherparse::TcpOptionElement::SelectiveAcknowledgement((10, 20), [Some((30, 40)), Some((50, 60)), None]);
        assert!(options.contains(&blocks));
        assert_eq!(tcp.header_len(), 60);
    }
}
