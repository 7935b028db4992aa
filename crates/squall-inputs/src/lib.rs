//! Every input surface of squall as a function of bytes.
//!
//! Each [`Surface`] feeds untrusted bytes through the same entry point the
//! program uses (scenario text, `--set`, netem one-liners, experiment
//! files, SNR and empirical files, packets from a host, pcap and
//! events.csv readers, control-socket requests, and a scenario run as a
//! bounded simulation). A surface returns `Ok` or a clean error; a panic,
//! an abort or unbounded memory is a bug.
//!
//! The fuzz targets in `fuzz/` (cargo fuzz, nightly) call [`Surface::feed`];
//! `tests/regressions.rs` replays `fuzz/regressions/SURFACE/*` through the
//! same calls on stable Rust, so every input a fuzzer or a user found stays
//! fixed.

use std::path::Path;

use squall_link::{Bytes, Distribution, Duration, PacketId, Sampler};
use squall_scenario::empirical::read_values;

/// Engine wake-ups a fuzzed scenario may take: a bound in work, so that
/// any scenario ends quickly whatever its duration.
pub const SIM_WAKEUPS: u64 = 20_000;

/// Sweep points taken from each set of a fuzzed experiment.
pub const SWEEP_POINTS: usize = 64;

/// One input surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// A scenario file's text, read and checked.
    Scenario,
    /// A scenario file's text run as a simulation bounded in wake-ups.
    ScenarioSim,
    /// A `--set KEY=VALUE` argument applied to a built-in scenario.
    SetOverride,
    /// A `--link` one-liner: netem's words (`rate 10mbit delay 50ms loss
    /// 1%`) or Mahimahi's shells (`mm-delay 20 mm-loss uplink 0.1`).
    Netem,
    /// An experiment file, its run count and its first sweep points.
    Experiment,
    /// A measured SNR file.
    SnrFile,
    /// An empirical distribution file, read as delays, sizes and ratios.
    EmpiricalFile,
    /// A packet a host writes to its interface (emulation).
    HostPacket,
    /// A pcap file, read by the analysis.
    Pcap,
    /// An events.csv file, read back.
    EventsCsv,
    /// One request line on the control socket.
    ControlRequest,
    /// A Mahimahi trace file (`trace = "cell.down"`).
    MahimahiTrace,
    /// A time-series file (`series.rate = { file = "rate.csv" }`), read as
    /// each parameter in turn.
    SeriesFile,
    /// A netem distribution table in iproute2's `.dist` format
    /// (`distribution FILE`, `{ kind = "netem_table", file = ... }`).
    DistTable,
    /// Flow-size CDF files, `SIZE CDF` a line ([`squall_scenario::flow_cdf`]).
    FlowCdf,
    /// A file of per-packet loss decisions (`error = { sequence = { file =
    /// "loss.txt" } }`).
    LossSequence,
    /// A state series file (`state_series = { file = "states.csv" }`).
    StateSeries,
    /// Samples `squall trace maketable` builds a netem table from
    /// ([`squall_scenario::samples`]), and the table it builds.
    MaketableSamples,
}

impl Surface {
    pub const ALL: [Surface; 18] = [
        Surface::Scenario,
        Surface::ScenarioSim,
        Surface::SetOverride,
        Surface::Netem,
        Surface::Experiment,
        Surface::SnrFile,
        Surface::EmpiricalFile,
        Surface::HostPacket,
        Surface::Pcap,
        Surface::EventsCsv,
        Surface::ControlRequest,
        Surface::MahimahiTrace,
        Surface::SeriesFile,
        Surface::DistTable,
        Surface::FlowCdf,
        Surface::LossSequence,
        Surface::StateSeries,
        Surface::MaketableSamples,
    ];

    /// The name of its fuzz target and of its corpus directories.
    pub fn name(self) -> &'static str {
        match self {
            Surface::Scenario => "scenario",
            Surface::ScenarioSim => "scenario_sim",
            Surface::SetOverride => "set_override",
            Surface::Netem => "netem",
            Surface::Experiment => "experiment",
            Surface::SnrFile => "snr_file",
            Surface::EmpiricalFile => "empirical_file",
            Surface::HostPacket => "host_packet",
            Surface::Pcap => "pcap",
            Surface::EventsCsv => "events_csv",
            Surface::ControlRequest => "control_request",
            Surface::MahimahiTrace => "mahimahi_trace",
            Surface::SeriesFile => "series_file",
            Surface::DistTable => "dist_table",
            Surface::FlowCdf => "flow_cdf",
            Surface::LossSequence => "loss_sequence",
            Surface::StateSeries => "state_series",
            Surface::MaketableSamples => "maketable_samples",
        }
    }

    pub fn from_name(name: &str) -> Option<Surface> {
        Surface::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Feeds `data` through the surface: `Ok` with a short description of
    /// what was read, or the error a user would see.
    pub fn feed(self, data: &[u8]) -> Result<String, String> {
        match self {
            Surface::Scenario => scenario(data).map(|s| format!("{} host(s)", s.hosts.len())),
            Surface::ScenarioSim => scenario_sim(data),
            Surface::SetOverride => set_override(data),
            Surface::Netem => netem(text(data)?),
            Surface::Experiment => experiment(data),
            Surface::SnrFile => squall_scenario::snr_file::parse_snr_csv(text(data)?)
                .map(|t| format!("{} slot(s)", t.rows.len()))
                .map_err(|e| e.message),
            Surface::EmpiricalFile => empirical_file(data),
            Surface::HostPacket => host_packet(data),
            Surface::Pcap => squall_analysis::capture::read_capture_from("fuzz.pcap", data)
                .map(|p| format!("{} packet(s)", p.len()))
                .map_err(|e| e.to_string()),
            Surface::EventsCsv => events_csv(data),
            Surface::ControlRequest => squall_emu::control::parse_request(data).map(|r| format!("{r:?}")),
            Surface::MahimahiTrace => squall_scenario::mahimahi::MahimahiTrace::parse(data, Path::new("fuzz.trace"))
                .map(|t| format!("{} opportunities", t.opportunities().len()))
                .map_err(|e| e.to_string()),
            Surface::SeriesFile => series_file(data),
            Surface::DistTable => squall_scenario::dist_table::parse(data, Path::new("fuzz.dist"))
                .map(|t| format!("{} entries", t.len()))
                .map_err(|e| e.to_string()),
            Surface::FlowCdf => squall_scenario::flow_cdf::parse(data, Path::new("fuzz.cdf"))
                .map(|t| format!("{} points", t.len()))
                .map_err(|e| e.to_string()),
            Surface::LossSequence => squall_scenario::loss_sequence::parse(data, Path::new("fuzz.loss"))
                .map(|d| format!("{} decisions", d.len()))
                .map_err(|e| e.to_string()),
            Surface::StateSeries => squall_scenario::state_series::parse(data, Path::new("fuzz.csv"))
                .map(|r| format!("{} rows", r.times_ns.len()))
                .map_err(|e| e.to_string()),
            Surface::MaketableSamples => {
                let samples =
                    squall_scenario::samples::parse(data, Path::new("fuzz.txt")).map_err(|e| e.to_string())?;
                let table = squall_link::dist::netem_table::maketable(&samples).map_err(|e| e.to_string())?;
                Ok(format!("{} samples, {} entries", samples.len(), table.len()))
            }
        }
    }
}

fn show(e: squall_scenario::ScenarioError) -> String {
    format!("{e:?}")
}

/// A `--link` line: netem's options as a stage, or a line of Mahimahi
/// shells (`mahimahi_line`) as the two directions. An `mm-link` file the
/// data names is only read when it is a regular file (never a device or a
/// pipe the fuzzer happens to name).
fn netem(line: &str) -> Result<String, String> {
    if !squall_scenario::mahimahi_line::is_mm_line(line) {
        return squall_scenario::parse_netem(line).map(|_| "a stage".into()).map_err(show);
    }
    if line.split_whitespace().any(|w| std::path::Path::new(w).exists() && !std::path::Path::new(w).is_file()) {
        return Err("names a file that is not a regular file".into());
    }
    squall_scenario::scenario_from_netem(line, None)
        .map(|s| format!("{} + {} stage(s)", s.links[0].downlink.len(), s.links[0].uplink.len()))
        .map_err(show)
}

fn text(data: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(data).map_err(|e| format!("not UTF-8: {e}"))
}

/// Where a fuzzed scenario looks for its files: a directory that holds
/// none (file names in fuzzed text must not reach real files).
fn no_files() -> &'static Path {
    Path::new("/nonexistent/squall-fuzz")
}

fn scenario(data: &[u8]) -> Result<squall_scenario::Scenario, String> {
    squall_scenario::parse("fuzz.toml", text(data)?, no_files()).map_err(show)
}

fn scenario_sim(data: &[u8]) -> Result<String, String> {
    let s = scenario(data)?;
    let options = squall_sim::RunOptions { record_events: true, record_packets: true, record_captures: true };
    match squall_sim::run_bounded(&s, s.seed, options, SIM_WAKEUPS) {
        Ok(r) => Ok(format!("{} flow(s)", r.flows.len())),
        // The bound, not a failure of the scenario.
        Err(squall_sim::SimError::Livelock { .. }) => Ok("bounded".into()),
        Err(e @ squall_sim::SimError::Conservation(_)) => panic!("a checked scenario broke conservation: {e}"),
        Err(e) => Err(e.to_string()),
    }
}

/// The built-in scenario that `--set` inputs edit.
const SET_BASE: &str = include_str!("../../../scenarios/gsm-udp.toml");

fn set_override(data: &[u8]) -> Result<String, String> {
    let mut sets = Vec::new();
    for line in text(data)?.lines().take(8) {
        sets.push(squall_scenario::parse_set(line).map_err(show)?);
    }
    let edited = squall_scenario::apply_overrides("gsm-udp.toml", SET_BASE, &sets).map_err(show)?;
    squall_scenario::parse("gsm-udp.toml (with --set)", &edited, no_files()).map(|_| "edited".into()).map_err(show)
}

fn experiment(data: &[u8]) -> Result<String, String> {
    let e = squall_scenario::parse_experiment("fuzz-experiment.toml", text(data)?).map_err(show)?;
    let mut points = 0u64;
    for set in &e.sets {
        let _ = set.run_count(1);
        for point in set.points().take(SWEEP_POINTS) {
            let _ = set.overrides(&point);
            points += 1;
        }
    }
    Ok(format!("{points} point(s)"))
}

fn empirical_file(data: &[u8]) -> Result<String, String> {
    let file = Path::new("fuzz.txt");
    fn sample<Q: squall_link::dist::Quantity + Clone>(values: Vec<Q>) -> Result<usize, String> {
        let n = values.len();
        let d = Distribution::Empirical { file: None, values, order: squall_link::dist::Order::Random };
        d.validate().map_err(|e| e.to_string())?;
        let mut s = Sampler::new(d, squall_link::rng::stream(1, "fuzz"));
        for _ in 0..16 {
            let _ = s.sample();
        }
        Ok(n)
    }
    let delays = read_values::<Duration>(data, file).map_err(|e| e.to_string()).and_then(sample);
    let sizes = read_values::<Bytes>(data, file).map_err(|e| e.to_string()).and_then(sample);
    let ratios = read_values::<f64>(data, file).map_err(|e| e.to_string()).and_then(sample);
    match (delays, sizes, ratios) {
        (Err(a), Err(b), Err(c)) => Err(format!("{a}; {b}; {c}")),
        (a, b, c) => Ok(format!("{a:?} {b:?} {c:?}")),
    }
}

/// The bytes as a packet from a host's TUN device (IPv4), and as a read
/// with a virtio_net_hdr (from a TUN device with offloads: an IP packet;
/// from an interface in inline mode: an Ethernet frame), cut into
/// segments; the segments are then joined again as GRO would on the way
/// out, and a joined super-packet must cut back into exactly them.
fn host_packet(data: &[u8]) -> Result<String, String> {
    use squall_emu::offload::{self, Framing};
    if let Some(hdr) = offload::VnetHdr::parse(data) {
        let frame = &data[offload::VNET_HDR_LEN..];
        for framing in [Framing::Ethernet, Framing::Ip] {
            let Ok(segments) = offload::split(&hdr, frame, framing) else { continue };
            for s in &segments {
                assert!(s.len() <= frame.len().max(64) + 64 * 1024, "a segment larger than its super-frame");
                if framing == Framing::Ethernet {
                    let _ = squall_emu::ethernet::parse(PacketId(2), s.clone());
                }
            }
            segments_are_the_wire_cut(hdr, frame, framing, &segments);
            super_frame_agrees(hdr, frame, framing, &segments);
            let refs: Vec<&[u8]> = segments.iter().map(Vec::as_slice).collect();
            for run in offload::runs(&refs, framing) {
                assert!(!run.is_empty() && run.end <= refs.len(), "a run outside the packets");
                let Some((joined_hdr, joined)) = offload::coalesce(&refs[run.clone()], framing) else { continue };
                let again = offload::split(&joined_hdr, &joined, framing).expect("a joined super-packet cuts again");
                assert_eq!(again, refs[run].to_vec(), "joined and cut again, the segments changed");
            }
        }
    }
    // A frame read with no virtio_net_hdr (AF_XDP): a partial checksum is
    // completed in place, and a completed one stays as it is.
    for framing in [Framing::Ethernet, Framing::Ip] {
        let mut once = data.to_vec();
        offload::complete_partial_checksum(&mut once, framing);
        assert_eq!(once.len(), data.len(), "completing a checksum changed the length");
        let mut twice = once.clone();
        offload::complete_partial_checksum(&mut twice, framing);
        assert_eq!(twice, once, "a completed checksum changed when completed again");
    }
    let bytes = data.to_vec();
    let dst = squall_emu::ip::destination(&bytes);
    match squall_emu::ip::parse(PacketId(1), bytes) {
        Ok(p) => {
            assert!(p.size as usize <= data.len(), "a packet larger than its bytes");
            assert_eq!(Some(p.flow.dst), dst, "parse and destination disagree");
            Ok(format!("{:?}", p.flow))
        }
        Err(refused) => Err(refused.as_str().into()),
    }
}

/// An oracle for the cut of a TCP super-frame that shares no code with it:
/// etherparse reads the super-frame and each segment, and the segments
/// must be what the kernel's software GSO makes of it (`tcp_gso_segment`,
/// `inet_gso_segment`): its data in order, `gso_size` bytes a segment (the
/// last may have fewer); each with the super-frame's link header and
/// addresses, the sequence number advanced by the data before it, the IPv4
/// identification by one a segment; FIN and PSH on the last segment only,
/// CWR on the first only (RFC 3168 §6.1.2), the other flags and the
/// options on all; lengths and checksums right (RFC 791, RFC 8200, RFC
/// 9293 §3.1). Frames etherparse does not read as one unfragmented IP
/// packet carrying TCP are left to the other checks.
fn segments_are_the_wire_cut(
    hdr: squall_emu::offload::VnetHdr,
    frame: &[u8],
    framing: squall_emu::offload::Framing,
    segments: &[Vec<u8>],
) {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    use squall_emu::offload::Framing;
    /// What a frame is, as etherparse reads it: (link header, IP, TCP).
    struct Read<'a> {
        link: &'a [u8],
        ip: NetSlice<'a>,
        tcp: etherparse::TcpSlice<'a>,
        /// The link header and IP packet (bytes after it excluded).
        len: usize,
    }
    fn read(frame: &[u8], framing: Framing) -> Option<Read<'_>> {
        let sliced = match framing {
            Framing::Ethernet => SlicedPacket::from_ethernet(frame),
            Framing::Ip => SlicedPacket::from_ip(frame),
        }
        .ok()?;
        let Some(TransportSlice::Tcp(tcp)) = sliced.transport else { return None };
        let ip = sliced.net?;
        let (start, ip_len) = match &ip {
            NetSlice::Ipv4(v4) if v4.extensions().is_empty() => {
                (v4.header().slice().as_ptr(), usize::from(v4.header().total_len()))
            }
            NetSlice::Ipv6(v6) if v6.extensions().first_header().is_none() => {
                (v6.header().slice().as_ptr(), 40 + usize::from(v6.header().payload_length()))
            }
            _ => return None,
        };
        let link = &frame[..start as usize - frame.as_ptr() as usize];
        Some(Read { link, len: link.len() + ip_len, ip, tcp })
    }
    let gso = hdr.gso_type & 0x7f;
    if !(gso == 1 || gso == 4) {
        return;
    }
    let Some(whole) = read(frame, framing) else { return };
    let mss = usize::from(hdr.gso_size);
    let data = whole.tcp.payload();
    let chunks: Vec<&[u8]> = if data.is_empty() { vec![&[]] } else { data.chunks(mss).collect() };
    assert_eq!(segments.len(), chunks.len(), "{} data bytes of {mss} a segment", data.len());
    let flags = |t: &etherparse::TcpSlice| (t.syn(), t.rst(), t.ack(), t.urg(), t.ece());
    for (i, (segment, chunk)) in segments.iter().zip(&chunks).enumerate() {
        let last = i + 1 == chunks.len();
        let s = read(segment, framing).unwrap_or_else(|| panic!("segment {i}: not an IP packet carrying TCP"));
        assert_eq!(s.len, segment.len(), "segment {i}: its IP length is not its length");
        assert_eq!(s.link, whole.link, "segment {i}: another link header");
        assert_eq!(s.tcp.payload(), *chunk, "segment {i}: other data");
        let (t, w) = (&s.tcp, &whole.tcp);
        assert_eq!((t.source_port(), t.destination_port()), (w.source_port(), w.destination_port()), "segment {i}");
        let offset = (i * mss) as u32;
        assert_eq!(t.sequence_number(), w.sequence_number().wrapping_add(offset), "segment {i}: sequence number");
        assert_eq!(t.acknowledgment_number(), w.acknowledgment_number(), "segment {i}: acknowledgment");
        assert_eq!(t.window_size(), w.window_size(), "segment {i}: window");
        assert_eq!(t.options(), w.options(), "segment {i}: options");
        assert_eq!(flags(t), flags(w), "segment {i}: flags");
        assert_eq!((t.fin(), t.psh()), (w.fin() && last, w.psh() && last), "segment {i}: FIN and PSH on the last only");
        assert_eq!(t.cwr(), w.cwr() && i == 0, "segment {i}: CWR on the first only");
        let checksum = match (&s.ip, &whole.ip) {
            (NetSlice::Ipv4(v4), NetSlice::Ipv4(w4)) => {
                let (h, wh) = (v4.header(), w4.header());
                assert_eq!((h.source(), h.destination()), (wh.source(), wh.destination()), "segment {i}: addresses");
                assert_eq!(h.identification(), wh.identification().wrapping_add(i as u16), "segment {i}: IPv4 id");
                // RFC 1071: the header's 16-bit words, checksum included, sum
                // to all ones. (Not etherparse's header value: it drops the
                // reserved flag bit.)
                let mut sum: u32 = h.slice().chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
                while sum > 0xffff {
                    sum = (sum & 0xffff) + (sum >> 16);
                }
                assert_eq!(sum, 0xffff, "segment {i}: IPv4 header checksum");
                t.calc_checksum_ipv4(h.source(), h.destination())
            }
            (NetSlice::Ipv6(v6), NetSlice::Ipv6(w6)) => {
                let (h, wh) = (v6.header(), w6.header());
                assert_eq!((h.source(), h.destination()), (wh.source(), wh.destination()), "segment {i}: addresses");
                t.calc_checksum_ipv6(h.source(), h.destination())
            }
            _ => panic!("segment {i}: another IP version"),
        };
        assert_eq!(Ok(t.checksum()), checksum.map_err(drop), "segment {i}: TCP checksum");
    }
}

/// A super-frame kept whole stands for exactly the segments [`split`]
/// cuts (`segments`): as many, each with the same bytes and length, each
/// read into the model as its cut bytes would be; a frame found whole
/// again for one write carries what its segments carry; and a run of its
/// segments written in one go is the frame GRO joins them into once cut.
///
/// [`split`]: squall_emu::offload::split
fn super_frame_agrees(
    hdr: squall_emu::offload::VnetHdr,
    frame: &[u8],
    framing: squall_emu::offload::Framing,
    segments: &[Vec<u8>],
) {
    use squall_emu::offload::{Framing, SuperFrame};
    use squall_link::{Payload, Segment, Segmented};
    let Ok(Some(whole)) = SuperFrame::new(hdr, frame.to_vec(), framing) else { return };
    assert_eq!(whole.count(), segments.len(), "a super-frame stands for as many segments as split cuts");
    let whole: std::sync::Arc<dyn Segmented> = std::sync::Arc::new(whole);
    let payloads: Vec<Payload> =
        (0..segments.len()).map(|index| Payload::Segment(Segment { of: whole.clone(), index })).collect();
    for (i, (p, cut)) in payloads.iter().zip(segments).enumerate() {
        assert_eq!(p.len(), cut.len(), "segment {i}: its length differs from the cut one's");
        assert_eq!(&p.bytes()[..], &cut[..], "segment {i}: its bytes differ from the cut one's");
        let read = |payload: Payload| match framing {
            Framing::Ethernet => squall_emu::ethernet::parse(PacketId(3), payload).map(|f| match f {
                squall_emu::ethernet::Frame::Ip { packet, .. } => Some((packet.size, packet.flow, packet.dscp)),
                squall_emu::ethernet::Frame::LinkControl(_) => None,
            }),
            Framing::Ip => squall_emu::ip::parse(PacketId(3), payload).map(|p| Some((p.size, p.flow, p.dscp))),
        };
        assert_eq!(read(p.clone()), read(cut.clone().into()), "segment {i}: read otherwise than its cut bytes");
    }
    let refs: Vec<&Payload> = payloads.iter().collect();
    let cut: Vec<&[u8]> = segments.iter().map(Vec::as_slice).collect();
    // Written whole, the frame carries exactly what its segments carry: as
    // long as the one segment, or as the frame GRO joins them into.
    if let Some(whole) = SuperFrame::write_at(&refs, 0).filter(|w| w.head.is_empty()) {
        let joined = match cut.len() {
            1 => Some(cut[0].len()),
            _ => squall_emu::offload::coalesce(&cut, framing).map(|(_, f)| f.len()),
        };
        if let Some(len) = joined {
            assert_eq!(whole.body.len(), len, "a frame written whole carries other bytes than its segments");
        }
    }
    // Some of its segments written in one go (all of them, a frame that
    // cannot go as read), without being cut: exactly the frame GRO joins
    // those segments into once cut, with its header.
    let n = refs.len();
    for range in [0..n, 1..n, 0..n.saturating_sub(1), n / 3..2 * n / 3] {
        if range.len() < 2 {
            continue;
        }
        let Some(w) = SuperFrame::write_at(&refs[range.clone()], 0) else { continue };
        if w.head.is_empty() {
            assert_eq!(range, 0..n, "a super-frame written as read without all its segments");
            continue;
        }
        let carried = &cut[range.start..range.start + w.segments];
        assert_eq!(
            squall_emu::offload::coalesce(carried, framing),
            Some((w.hdr, [&w.head[..], w.body].concat())),
            "segments {range:?}: written otherwise than GRO joins them once cut"
        );
    }
}

fn events_csv(data: &[u8]) -> Result<String, String> {
    let reader = squall_trace::EventLogReader::new(data).map_err(|e| e.to_string())?;
    let mut n = 0;
    for event in reader {
        event.map_err(|e| e.to_string())?;
        n += 1;
    }
    Ok(format!("{n} event(s)"))
}

/// A series file read as each parameter (the header's units differ per
/// parameter); every point read must pass the model's own check.
fn series_file(data: &[u8]) -> Result<String, String> {
    use squall_link::series::{ParameterSeries, SeriesKey};
    use squall_scenario::series_file::SeriesFile;
    let mut read = Vec::new();
    for key in SeriesKey::ALL {
        let Ok(s) = SeriesFile::parse(data, Path::new("fuzz.csv"), key) else { continue };
        let series = ParameterSeries { times_ns: s.times_ns, values: s.values, ..ParameterSeries::default() };
        if let Err(e) = series.validate(key, "series") {
            panic!("the file passed the reader but not the model: {e:?}");
        }
        let _ = series.value_at(u64::MAX / 2);
        read.push(key.as_str());
    }
    if read.is_empty() { Err("not a series of any parameter".into()) } else { Ok(read.join(", ")) }
}

#[cfg(test)]
mod tests {
    use squall_emu::offload::{self, Framing, VnetHdr};

    /// The super-frames of the regression corpus (a 5 000-byte TCP flight
    /// over IPv4 and IPv6, read with a virtio_net_hdr), cut by `split`.
    fn cut(name: &str) -> (VnetHdr, Vec<u8>, Vec<Vec<u8>>) {
        let path = format!("{}/../../fuzz/regressions/host_packet/{name}", env!("CARGO_MANIFEST_DIR"));
        let data = std::fs::read(path).unwrap();
        let hdr = VnetHdr::parse(&data).unwrap();
        let frame = data[offload::VNET_HDR_LEN..].to_vec();
        let segments = offload::split(&hdr, &frame, Framing::Ethernet).unwrap();
        (hdr, frame, segments)
    }

    fn oracle_refuses(hdr: VnetHdr, frame: &[u8], segments: Vec<Vec<u8>>) -> bool {
        std::panic::catch_unwind(|| super::segments_are_the_wire_cut(hdr, frame, Framing::Ethernet, &segments)).is_err()
    }

    /// The oracle passes `split`'s cut and refuses a cut that differs from
    /// the kernel's in one field: so it reads the frames it is given.
    #[test]
    fn the_cut_oracle_tells_a_right_cut_from_a_wrong_one() {
        for name in ["super-frame-tcp4", "super-frame-tcp6"] {
            let (hdr, frame, segments) = cut(name);
            // 5 000 bytes of 1 448: 3 full segments and one of 656.
            assert_eq!(segments.len(), 4, "{name}");
            assert!(!oracle_refuses(hdr, &frame, segments.clone()), "{name}: split's cut refused");
            let tcp = if name.ends_with('4') { 14 + 20 } else { 14 + 40 };
            type Change = Box<dyn Fn(&mut Vec<Vec<u8>>)>;
            let wrong: [(&str, Change); 5] = [
                ("two segments swapped", Box::new(|s| s.swap(1, 2))),
                ("FIN on the first", Box::new(move |s| s[0][tcp + 13] |= 0x01)),
                ("a data byte changed", Box::new(move |s| s[2][tcp + 30] ^= 1)),
                ("the last segment missing", Box::new(|s| drop(s.pop()))),
                ("a sequence number off by one", Box::new(move |s| s[1][tcp + 7] ^= 1)),
            ];
            for (what, change) in &wrong {
                let mut s = segments.clone();
                change(&mut s);
                assert!(oracle_refuses(hdr, &frame, s), "{name}: {what} passed");
            }
        }
    }
}
