//! Per-flow metrics of one run, computed from what the hosts captured and
//! from the event log — the same code for both engines (seed 001 §4;
//! seed 000 §5.2: tcptrace-style retransmission counting).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use serde::Serialize;
use squall_link::{Addresses, EventKind, FlowKey, Instant, Protocol};

use crate::capture::{Captured, read_capture_skipping};
use crate::stats::{mean, percentile, std_dev};

/// A host of the run: its name (its pcap is `NAME.pcap`) and addresses
/// (IPv4, IPv6 or both).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunHost {
    pub name: String,
    pub addresses: Addresses,
}

impl RunHost {
    /// A host with one IPv4 address.
    pub fn v4(name: impl Into<String>, address: Ipv4Addr) -> Self {
        RunHost { name: name.into(), addresses: Addresses::v4(address) }
    }

    /// The hosts of `(name, address)` pairs, a host's addresses gathered
    /// under its name (a dual-stack host is listed once per address), in
    /// the order of their first pair.
    pub fn gather<'a>(pairs: impl IntoIterator<Item = (&'a String, &'a IpAddr)>) -> Vec<RunHost> {
        let mut hosts: Vec<RunHost> = Vec::new();
        for (name, address) in pairs {
            let i = match hosts.iter().position(|h| &h.name == name) {
                Some(i) => i,
                None => {
                    hosts.push(RunHost { name: name.clone(), addresses: Addresses::default() });
                    hosts.len() - 1
                }
            };
            match address {
                IpAddr::V4(a) => hosts[i].addresses.v4 = Some(*a),
                IpAddr::V6(a) => hosts[i].addresses.v6 = Some(*a),
            }
        }
        hosts
    }
}

/// What one directed flow did in one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowStats {
    /// The 5-tuple, as events.csv writes it.
    pub flow: String,
    /// The same flow across replications: hosts, protocol and the ports
    /// that are not ephemeral (a real TCP client's port changes every run).
    pub label: String,
    pub sender: String,
    pub receiver: String,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub received_packets: u64,
    pub received_bytes: u64,
    /// First packet sent to last packet received, seconds.
    pub elapsed: f64,
    /// Received IP bits per second over `elapsed`.
    pub throughput_bps: f64,
    /// Application bits per second over `elapsed`: UDP payload, or TCP
    /// payload bytes received for the first time.
    pub goodput_bps: f64,
    /// TCP data segments the sender sent again (tcptrace's rule: a segment
    /// that ends at or below the highest sequence number already sent).
    pub retransmitted: u64,
    /// TCP segments that carried data, retransmissions included
    /// (tcptrace's "actual data pkts"); 0 for other protocols.
    pub data_segments: u64,
    /// Drops charged to this flow in events.csv, by reason.
    pub dropped: BTreeMap<String, u64>,
    /// One-way delay, seconds (packets matched by IP identification).
    pub delay_mean: f64,
    pub delay_p50: f64,
    pub delay_p99: f64,
    /// TCP round-trip samples (segment sent once → first ACK covering it).
    pub rtt_samples: u64,
    pub rtt_mean: f64,
    /// Time between arrivals at the receiver: mean and population
    /// standard deviation, seconds.
    pub interarrival_mean: f64,
    pub interarrival_sd: f64,
    /// RFC 3550 §6.4.1 interarrival jitter of the one-way delay, seconds
    /// ([`rfc3550_jitter`] over the matched packets in arrival order).
    pub jitter_rfc3550: f64,
    /// Connections (TCP) or flows merged into this one: 1 for a single
    /// flow, more for a workload of many ([`by_workload`]).
    pub connections: u64,
    /// The first packet of the connection in either direction (a TCP
    /// client's SYN), seconds from the start of the run.
    pub opened: f64,
    /// The last packet received that carried data (UDP: any), seconds.
    pub last_data: f64,
    /// Application bytes received (what `goodput_bps` counts).
    pub app_bytes: u64,
}

impl FlowStats {
    /// Retransmitted TCP data segments as a percentage of the data segments
    /// sent (seed 002 Figure 6: "percentage of TCP retransmissions"); 0
    /// when the flow sent none.
    pub fn retransmitted_percent(&self) -> f64 {
        if self.data_segments == 0 { 0.0 } else { 100.0 * self.retransmitted as f64 / self.data_segments as f64 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
    #[error("{file}: {source}")]
    Events { file: String, source: squall_trace::EventLogError },
    #[error("{file}: cannot open: {source}")]
    Open { file: String, source: std::io::Error },
    /// A vectors.csv row that is not `time_s,source,name,value`.
    #[error("{file}:{line}: {message}")]
    Vectors { file: String, line: u64, message: String },
    /// A TCP trace file (`tcp-*.csv`, `*tcpinfo*.csv`) that cannot be read
    /// as CSV with a `time` column, or a row whose time is not a number.
    #[error("{file}:{line}: {message}")]
    TcpTrace { file: String, line: u64, message: String },
}

/// Header bytes of a UDP datagram of `flow`: its IP header (20 IPv4, 40
/// IPv6) and UDP's 8 (RFC 768).
fn udp_overhead(flow: &FlowKey) -> u32 {
    flow.ip_header_len() + 8
}

/// Analyses the run in `dir`: `HOST.pcap` for every host (missing files
/// are skipped: a host may not have been captured) and `events.csv`.
pub fn analyse_run(dir: &Path, hosts: &[RunHost]) -> Result<Vec<FlowStats>, AnalysisError> {
    let mut sent: BTreeMap<FlowKey, (String, Vec<Captured>)> = BTreeMap::new();
    let mut received: BTreeMap<FlowKey, (String, Vec<Captured>)> = BTreeMap::new();
    // ACKs seen by a TCP sender, by the data flow they acknowledge.
    let mut acks_at_sender: BTreeMap<FlowKey, Vec<(Instant, u32)>> = BTreeMap::new();
    for host in hosts {
        let path = dir.join(format!("{}.pcap", host.name));
        if !path.exists() {
            continue;
        }
        // A record corrupted on the way (error_mode = "corrupt") is left
        // out; the engine warns of it (capture::unparsed_records).
        for c in read_capture_skipping(&path)?.0 {
            if host.addresses.has(c.flow.src) {
                sent.entry(c.flow).or_insert_with(|| (host.name.clone(), Vec::new())).1.push(c);
            } else if host.addresses.has(c.flow.dst) {
                if let Some(t) = c.tcp.filter(|t| t.has_ack) {
                    acks_at_sender.entry(reverse(&c.flow)).or_default().push((c.time, t.ack));
                }
                received.entry(c.flow).or_insert_with(|| (host.name.clone(), Vec::new())).1.push(c);
            }
        }
    }
    let drops = read_drops(&dir.join("events.csv"))?;
    let mut out = Vec::new();
    for (key, (sender, packets)) in &sent {
        let is_tcp = key.protocol == Protocol::Tcp;
        // A TCP direction that only carries ACKs is not a flow of its own.
        if is_tcp && packets.iter().all(|p| p.tcp.is_none_or(|t| t.payload_len == 0)) {
            continue;
        }
        let (receiver, arrivals) = received.get(key).map_or((String::new(), &[][..]), |(h, v)| (h.clone(), &v[..]));
        // A TCP connection's client (the end whose first packet is a SYN
        // without ACK) has a port that changes with every connection: the
        // label leaves it out, so a workload's connections share one.
        let first_of = |k: &FlowKey| sent.get(k).and_then(|(_, v)| v.first());
        let is_syn = |c: Option<&Captured>| c.and_then(|c| c.tcp).is_some_and(|t| t.syn && !t.has_ack);
        let client_sends = is_tcp && is_syn(first_of(key));
        let client_receives = is_tcp && is_syn(first_of(&reverse(key)));
        let mut s = FlowStats {
            flow: key.to_string(),
            label: workload_label(key, sender, &receiver, client_sends, client_receives),
            sender: sender.clone(),
            receiver,
            sent_packets: packets.len() as u64,
            sent_bytes: packets.iter().map(|p| p.size as u64).sum(),
            received_packets: arrivals.len() as u64,
            received_bytes: arrivals.iter().map(|p| p.size as u64).sum(),
            dropped: drops.get(key).cloned().unwrap_or_default(),
            ..FlowStats::default()
        };
        let first_sent = packets.first().map(|p| p.time);
        let last_received = arrivals.last().map(|p| p.time);
        if let (Some(a), Some(b)) = (first_sent, last_received) {
            s.elapsed = (b - a).as_secs_f64();
        }
        s.connections = 1;
        let first_back = first_of(&reverse(key)).map(|c| c.time);
        s.opened = first_sent.into_iter().chain(first_back).min().map_or(0.0, |t| t.as_secs_f64());
        s.last_data = arrivals
            .iter()
            .rev()
            .find(|p| p.tcp.is_none_or(|t| t.payload_len > 0))
            .or(arrivals.last())
            .map_or(s.opened, |p| p.time.as_secs_f64());
        let app_bytes = if is_tcp {
            s.retransmitted = count_retransmissions(packets);
            s.data_segments = count_data_segments(packets);
            first_time_payload(arrivals)
        } else {
            arrivals.iter().map(|p| p.size.saturating_sub(udp_overhead(&p.flow)) as u64).sum()
        };
        s.app_bytes = app_bytes;
        if s.elapsed > 0.0 {
            s.throughput_bps = s.received_bytes as f64 * 8.0 / s.elapsed;
            s.goodput_bps = app_bytes as f64 * 8.0 / s.elapsed;
        }
        let delays = one_way_delays(packets, arrivals);
        if !delays.is_empty() {
            s.delay_mean = mean(&delays);
            s.delay_p50 = percentile(&delays, 0.5);
            s.delay_p99 = percentile(&delays, 0.99);
            s.jitter_rfc3550 = rfc3550_jitter(&delays);
        }
        if is_tcp {
            let rtts = rtt_samples(packets, acks_at_sender.get(key).map_or(&[][..], |v| &v[..]));
            s.rtt_samples = rtts.len() as u64;
            if !rtts.is_empty() {
                s.rtt_mean = mean(&rtts);
            }
        }
        let gaps: Vec<f64> = arrivals.windows(2).map(|w| (w[1].time - w[0].time).as_secs_f64()).collect();
        if !gaps.is_empty() {
            s.interarrival_mean = mean(&gaps);
            s.interarrival_sd = std_dev(&gaps);
        }
        out.push(s);
    }
    Ok(out)
}

/// A flow's label with a TCP client's port as `*` (`client_sends`: the
/// flow goes from the client; `client_receives`: to it).
fn workload_label(key: &FlowKey, sender: &str, receiver: &str, client_sends: bool, client_receives: bool) -> String {
    let mut k = *key;
    let base = flow_label(&k, sender, receiver);
    if !(client_sends || client_receives) {
        return base;
    }
    // Mark the client's port ephemeral, so flow_label writes `*`.
    if client_sends {
        k.src_port = k.src_port.max(EPHEMERAL);
    } else {
        k.dst_port = k.dst_port.max(EPHEMERAL);
    }
    flow_label(&k, sender, receiver)
}

/// The flows of one run merged per workload: every flow with the same
/// label (a web page's hundreds of connections, one per object) becomes
/// one, so that a run's results and plots stay one per workload however
/// many connections it opens. A merged flow's `elapsed` runs from its
/// first connection's first packet (the SYN) to the last data received
/// on any of them (seed 003 §3's site download duration); counts and
/// drops are summed, throughput and goodput are over that time, delays,
/// RTT and inter-arrival times are the connections' means weighted by
/// their packets (`delay_p50` too; `delay_p99` is the largest). Flows with
/// a label of their own are kept as they are.
pub fn by_workload(flows: Vec<FlowStats>) -> Vec<FlowStats> {
    let mut groups: BTreeMap<String, Vec<FlowStats>> = BTreeMap::new();
    let mut order = Vec::new();
    for f in flows {
        if !groups.contains_key(&f.label) {
            order.push(f.label.clone());
        }
        groups.entry(f.label.clone()).or_default().push(f);
    }
    order.into_iter().filter_map(|label| groups.remove(&label)).map(merge).collect()
}

fn merge(mut flows: Vec<FlowStats>) -> FlowStats {
    if flows.len() == 1 {
        return flows.pop().unwrap_or_default();
    }
    let weighted = |value: fn(&FlowStats) -> f64, weight: fn(&FlowStats) -> u64| {
        let w: u64 = flows.iter().map(weight).sum();
        if w == 0 { 0.0 } else { flows.iter().map(|f| value(f) * weight(f) as f64).sum::<f64>() / w as f64 }
    };
    let first = &flows[0];
    let mut m = FlowStats {
        flow: format!("{} connections", flows.len()),
        label: first.label.clone(),
        sender: first.sender.clone(),
        receiver: first.receiver.clone(),
        connections: flows.iter().map(|f| f.connections).sum(),
        opened: flows.iter().map(|f| f.opened).fold(f64::INFINITY, f64::min),
        last_data: flows.iter().map(|f| f.last_data).fold(0.0, f64::max),
        sent_packets: flows.iter().map(|f| f.sent_packets).sum(),
        sent_bytes: flows.iter().map(|f| f.sent_bytes).sum(),
        received_packets: flows.iter().map(|f| f.received_packets).sum(),
        received_bytes: flows.iter().map(|f| f.received_bytes).sum(),
        retransmitted: flows.iter().map(|f| f.retransmitted).sum(),
        data_segments: flows.iter().map(|f| f.data_segments).sum(),
        app_bytes: flows.iter().map(|f| f.app_bytes).sum(),
        rtt_samples: flows.iter().map(|f| f.rtt_samples).sum(),
        delay_mean: weighted(|f| f.delay_mean, |f| f.received_packets),
        delay_p50: weighted(|f| f.delay_p50, |f| f.received_packets),
        delay_p99: flows.iter().map(|f| f.delay_p99).fold(0.0, f64::max),
        rtt_mean: weighted(|f| f.rtt_mean, |f| f.rtt_samples),
        interarrival_mean: weighted(|f| f.interarrival_mean, |f| f.received_packets),
        interarrival_sd: weighted(|f| f.interarrival_sd, |f| f.received_packets),
        jitter_rfc3550: weighted(|f| f.jitter_rfc3550, |f| f.received_packets),
        ..FlowStats::default()
    };
    for f in &flows {
        for (reason, n) in &f.dropped {
            *m.dropped.entry(reason.clone()).or_default() += n;
        }
    }
    m.elapsed = (m.last_data - m.opened).max(0.0);
    if m.elapsed > 0.0 {
        m.throughput_bps = m.received_bytes as f64 * 8.0 / m.elapsed;
        m.goodput_bps = m.app_bytes as f64 * 8.0 / m.elapsed;
    }
    m
}

/// Linux's default ephemeral port range starts here.
const EPHEMERAL: u16 = 32768;

/// A flow's name that stays the same across replications.
pub fn flow_label(key: &FlowKey, sender: &str, receiver: &str) -> String {
    let proto = match key.protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
        _ => "ip",
    };
    let port = |p: u16| if p >= EPHEMERAL { "*".to_string() } else { p.to_string() };
    format!("{proto} {sender}:{} > {receiver}:{}", port(key.src_port), port(key.dst_port))
}

fn reverse(k: &FlowKey) -> FlowKey {
    FlowKey { protocol: k.protocol, src: k.dst, dst: k.src, src_port: k.dst_port, dst_port: k.src_port }
}

/// Sequence-space comparison (RFC 9293 §3.4): `a` is after `b`.
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Data segments whose end is not beyond the highest sequence number sent
/// before them (tcptrace's "rexmt data pkts").
pub fn count_retransmissions(sent: &[Captured]) -> u64 {
    let mut highest: Option<u32> = None;
    let mut count = 0;
    for t in sent.iter().filter_map(|p| p.tcp) {
        if t.payload_len == 0 {
            continue;
        }
        let end = t.seq.wrapping_add(t.payload_len);
        match highest {
            Some(h) if !seq_after(end, h) => count += 1,
            _ => highest = Some(end),
        }
    }
    count
}

/// TCP segments that carry payload, first sendings and retransmissions.
pub fn count_data_segments(sent: &[Captured]) -> u64 {
    sent.iter().filter(|p| p.tcp.is_some_and(|t| t.payload_len > 0)).count() as u64
}

/// Payload bytes received at least once: the size of the union of the
/// received sequence ranges (holes filled later count, duplicates don't).
fn first_time_payload(arrivals: &[Captured]) -> u64 {
    // Unwrap 32-bit sequence numbers into a 64-bit space around the first.
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    let mut last: Option<(u32, i64)> = None;
    for t in arrivals.iter().filter_map(|p| p.tcp).filter(|t| t.payload_len > 0) {
        let at = match last {
            None => 0,
            Some((prev, prev_at)) => prev_at + t.seq.wrapping_sub(prev) as i32 as i64,
        };
        last = Some((t.seq, at));
        ranges.push((at, at + t.payload_len as i64));
    }
    ranges.sort_unstable();
    let mut total = 0i64;
    let mut covered_to = i64::MIN;
    for (start, end) in ranges {
        let from = start.max(covered_to);
        if end > from {
            total += end - from;
        }
        covered_to = covered_to.max(end);
    }
    total as u64
}

/// Delays of received packets matched to their sending by IP
/// identification (the most recent unmatched send of that id).
/// RFC 3550 §6.4.1's interarrival jitter over transit times in arrival
/// order: J += (|D(i−1,i)| − J)/16, with D the difference of successive
/// transit times (here one-way delays on one clock), seconds. Zero for
/// fewer than two packets or a constant delay.
pub fn rfc3550_jitter(transits: &[f64]) -> f64 {
    transits.windows(2).fold(0.0, |j, w| j + ((w[1] - w[0]).abs() - j) / 16.0)
}

fn one_way_delays(sent: &[Captured], arrivals: &[Captured]) -> Vec<f64> {
    let mut pending: HashMap<u16, Vec<Instant>> = HashMap::new();
    let mut out = Vec::with_capacity(arrivals.len());
    let mut i = 0;
    for a in arrivals {
        while i < sent.len() && sent[i].time <= a.time {
            pending.entry(sent[i].ip_id).or_default().push(sent[i].time);
            i += 1;
        }
        if let Some(t) = pending.get_mut(&a.ip_id).and_then(|v| v.pop()) {
            out.push((a.time - t).as_secs_f64());
        }
    }
    out
}

/// RTT samples by Karn's rule: a segment sent once, to the first ACK that
/// covers its end.
fn rtt_samples(sent: &[Captured], acks: &[(Instant, u32)]) -> Vec<f64> {
    let data_ends = || {
        sent.iter()
            .filter_map(|p| p.tcp.filter(|t| t.payload_len > 0).map(|t| (t.seq.wrapping_add(t.payload_len), p.time)))
    };
    let mut times_sent: HashMap<u32, u32> = HashMap::new();
    for (end, _) in data_ends() {
        *times_sent.entry(end).or_default() += 1;
    }
    // In the order sent (the capture's), so segments of one flight sent
    // at one instant keep their sequence order: the samples do not
    // depend on the map's iteration order.
    let mut ends: Vec<(u32, Instant)> = data_ends().filter(|(end, _)| times_sent[end] == 1).collect();
    ends.sort_by_key(|&(_, t)| t);
    let mut out = Vec::new();
    let mut a = 0;
    for (end, t) in ends {
        while a < acks.len() && (acks[a].0 < t || seq_after(end, acks[a].1)) {
            a += 1;
        }
        if let Some(&(at, _)) = acks.get(a) {
            out.push((at - t).as_secs_f64());
        }
    }
    out
}

/// Drops per flow and reason from an events.csv (absent file: none).
fn read_drops(path: &Path) -> Result<BTreeMap<FlowKey, BTreeMap<String, u64>>, AnalysisError> {
    let mut out: BTreeMap<FlowKey, BTreeMap<String, u64>> = BTreeMap::new();
    if !path.exists() {
        return Ok(out);
    }
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|source| AnalysisError::Open { file: file.clone(), source })?;
    let reader = squall_trace::EventLogReader::new(std::io::BufReader::new(f))
        .map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
    for e in reader {
        let e = e.map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
        if let (EventKind::Drop(reason), Some(flow)) = (e.kind, e.flow) {
            *out.entry(flow).or_default().entry(reason.as_str().to_string()).or_default() += 1;
        }
    }
    Ok(out)
}

/// Jain's fairness index of the flows' throughputs: (Σx)² / (n·Σx²); 1 when
/// all are equal, 1/n when one takes everything.
pub fn jain_index(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if sq == 0.0 { f64::NAN } else { sum * sum / (xs.len() as f64 * sq) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::TcpFields;

    #[test]
    fn rfc3550_jitter_by_hand_and_for_a_constant_delay() {
        // Transits 10, 14, 12, 12, 20 ms: |D| = 4, 2, 0, 8 ms;
        // J = 0.25, 0.359375, 0.3369141, 0.8158569 ms (RFC 3550 §6.4.1).
        let j = rfc3550_jitter(&[0.010, 0.014, 0.012, 0.012, 0.020]);
        assert!((j - 0.000_815_856_9).abs() < 1e-10, "{j}");
        assert_eq!(rfc3550_jitter(&[0.05; 100]), 0.0);
        assert_eq!(rfc3550_jitter(&[0.05]), 0.0);
    }

    #[test]
    fn a_workloads_connections_merge_into_one_flow() {
        let conn = |opened: f64, last: f64, bytes: u64, drops: u64| FlowStats {
            label: "tcp server:80 > client:*".into(),
            connections: 1,
            opened,
            last_data: last,
            elapsed: last - opened,
            received_packets: 2,
            received_bytes: bytes,
            app_bytes: bytes - 80,
            delay_mean: opened,
            dropped: BTreeMap::from([("queue_overflow".to_string(), drops)]),
            ..FlowStats::default()
        };
        let other = FlowStats { label: "udp a:1 > b:2".into(), connections: 1, elapsed: 7.0, ..FlowStats::default() };
        let merged = by_workload(vec![conn(0.0, 0.05, 1000, 1), other.clone(), conn(0.06, 0.2, 3000, 2)]);
        assert_eq!(merged.len(), 2);
        let site = &merged[0];
        assert_eq!(site.connections, 2);
        assert!((site.elapsed - 0.2).abs() < 1e-12, "{}", site.elapsed);
        assert_eq!(site.received_bytes, 4000);
        assert_eq!(site.dropped["queue_overflow"], 3);
        assert!((site.goodput_bps - 3840.0 * 8.0 / 0.2).abs() < 1e-6);
        assert!((site.delay_mean - 0.03).abs() < 1e-12);
        assert_eq!(merged[1], other);
    }

    fn seg(t_ms: u64, seq: u32, len: u32) -> Captured {
        Captured {
            time: Instant::from_millis(t_ms),
            flow: FlowKey {
                protocol: Protocol::Tcp,
                src: Ipv4Addr::new(10, 0, 0, 1).into(),
                dst: Ipv4Addr::new(10, 0, 1, 1).into(),
                src_port: 1,
                dst_port: 2,
            },
            size: 40 + len,
            ip_id: seq as u16,
            tcp: Some(TcpFields { seq, ack: 0, syn: false, fin: false, rst: false, has_ack: true, payload_len: len }),
        }
    }

    #[test]
    fn retransmissions_counted_like_tcptrace() {
        // 1000-byte segments 0..4000; the one at 1000 is sent again, and a
        // partial resend 2500..3000 also counts.
        let s = [
            seg(0, 0, 1000),
            seg(1, 1000, 1000),
            seg(2, 2000, 1000),
            seg(3, 1000, 1000),
            seg(4, 3000, 1000),
            seg(5, 2500, 500),
        ];
        assert_eq!(count_retransmissions(&s), 2);
        // Six data segments; a pure ACK is not one. 2 of 6 is 33.3%.
        let with_ack: Vec<Captured> = s.iter().cloned().chain([seg(6, 4000, 0)]).collect();
        assert_eq!(count_data_segments(&with_ack), 6);
        let f = FlowStats { retransmitted: 2, data_segments: 6, ..FlowStats::default() };
        assert!((f.retransmitted_percent() - 100.0 / 3.0).abs() < 1e-12);
        assert_eq!(FlowStats::default().retransmitted_percent(), 0.0);
        // Wrap-around of the sequence space is not a retransmission.
        let w = [seg(0, u32::MAX - 999, 1000), seg(1, 0, 1000)];
        assert_eq!(count_retransmissions(&w), 0);
    }

    #[test]
    fn goodput_counts_each_byte_once() {
        // 0..1000, then 2000..3000 out of order, the hole 1000..2000, and a
        // duplicate 1500..2500: 3000 distinct bytes.
        let r = [seg(0, 0, 1000), seg(1, 2000, 1000), seg(2, 1000, 1000), seg(3, 1500, 1000)];
        assert_eq!(first_time_payload(&r), 3000);
        // Across the wrap of the sequence space.
        let w = [seg(0, u32::MAX - 499, 1000), seg(1, 500, 1000), seg(2, u32::MAX - 499, 1000)];
        assert_eq!(first_time_payload(&w), 2000);
    }

    #[test]
    fn rtt_uses_only_segments_sent_once() {
        let s = [seg(0, 0, 1000), seg(10, 1000, 1000), seg(20, 1000, 1000)];
        let acks = [(Instant::from_millis(50), 1000), (Instant::from_millis(90), 2000)];
        assert_eq!(rtt_samples(&s, &acks), vec![0.05]);
    }

    #[test]
    fn rtt_samples_of_a_flight_sent_at_one_instant_follow_its_sequence_order() {
        // Eight segments sent together; delayed ACKs cover two at a time,
        // 50, 60, 70 and 80 ms later: two samples of each, by hand. (Taken
        // in a hash map's order, a later segment first moved past the ACKs
        // of earlier ones, and the samples changed from run to run.)
        let s: Vec<Captured> = (0..8).map(|i| seg(0, i * 1000, 1000)).collect();
        let acks: Vec<(Instant, u32)> = (1..=4).map(|k| (Instant::from_millis(40 + 10 * k as u64), k * 2000)).collect();
        for _ in 0..20 {
            assert_eq!(rtt_samples(&s, &acks), vec![0.05, 0.05, 0.06, 0.06, 0.07, 0.07, 0.08, 0.08]);
        }
    }

    #[test]
    fn jain_index_by_hand() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0, 1.0]), 1.0);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+2+3)^2 / (3·14) = 36/42
        assert!((jain_index(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
    }
}
