//! One run over time, in bins: per flow the throughput at the receiver
//! against the capacity of its path, the one-way delay and the drops by
//! reason; per stage the packets inside; the states and blackouts the
//! run went through; TCP's variables where traced. What Mahimahi's
//! `mm-throughput-graph` and `mm-delay-graph` show, for both engines'
//! outputs (the host pcaps and events.csv are written by both).
//!
//! Files are streamed, never loaded whole: events.csv and the pcaps can
//! be hundreds of megabytes, and memory is bounded by the number of bins
//! (at most [`MAX_BINS`] per series) and, for delay matching, by one
//! entry per flow and 16-bit IP identification.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufReader;
use std::net::IpAddr;
use std::path::Path;

use pcap_file::pcap::PcapReader;
use squall_link::{EventKind, FlowKey, Inside, Protocol, Rate};

use crate::capture::{CaptureError, Captured, parse_ip};
use crate::flows::{AnalysisError, RunHost};
use crate::plot::{Mark, Series, Shade};

/// Most bins a time series has: a figure stays a few tens of kilobytes
/// however long the run.
pub const MAX_BINS: usize = 240;

/// The bin width for a run of `end` seconds: 1 s for runs of 2 to 4
/// minutes, otherwise the smallest 1, 2 or 5 × 10^k seconds that cuts
/// the run into at most 120 bins (a 30 s run: 0.5 s; an hour: 50 s).
pub fn bin_width(end: f64) -> f64 {
    let target = (end.max(1e-3)) / 120.0;
    let mut decade = 10f64.powf(target.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * decade >= target * (1.0 - 1e-9) {
                return m * decade;
            }
        }
        decade *= 10.0;
    }
}

/// A directed flow of the run, seen in the hosts' captures.
#[derive(Clone, Debug, Default)]
pub struct FlowTimeline {
    pub key: Option<FlowKey>,
    /// "udp 10.0.0.1:1000 > 10.0.1.1:2000" with the hosts' names.
    pub label: String,
    pub sender: String,
    pub receiver: String,
    /// Received IP bytes per bin.
    pub bytes: Vec<f64>,
    /// Sum and count of one-way delays (s) of packets received in a bin,
    /// and the largest.
    pub delay_sum: Vec<f64>,
    pub delay_count: Vec<f64>,
    pub delay_max: Vec<f64>,
    /// Drops charged to the flow in events.csv, by reason, per bin.
    pub drops: BTreeMap<&'static str, Vec<f64>>,
    /// TCP payload bytes the sender sent (0 for a flow of pure ACKs).
    pub payload: u64,
    pub packets_received: u64,
    /// First packet sent and last packet received, seconds.
    pub first_sent: Option<f64>,
    pub last_received: Option<f64>,
}

impl FlowTimeline {
    /// Throughput (bit/s) per bin, as (bin start, value) points, over the
    /// bins from the flow's first packet sent to its last received.
    pub fn throughput(&self, bin: f64) -> Vec<(f64, f64)> {
        let Some((a, b)) = self.span(bin) else { return Vec::new() };
        (a..=b).map(|i| (i as f64 * bin, self.bytes[i] * 8.0 / bin)).collect()
    }

    /// The bins from that of the flow's first packet sent to that of its
    /// last received (within the bins kept), if it has both and they are
    /// in order.
    fn span(&self, bin: f64) -> Option<(usize, usize)> {
        let (first, last) = (self.first_sent?, self.last_received?);
        let (a, b) = ((first / bin) as usize, ((last / bin) as usize).min(self.bytes.len().saturating_sub(1)));
        (a <= b).then_some((a, b))
    }

    /// Bytes received up to the end of each bin, as (bin end, bytes)
    /// points from the bin of its first packet sent to that of its last
    /// received, starting at (start of the first bin, 0).
    pub fn received_so_far(&self, bin: f64) -> Vec<(f64, f64)> {
        let Some((a, b)) = self.span(bin) else { return Vec::new() };
        let mut total = 0.0;
        let mut points = vec![(a as f64 * bin, 0.0)];
        for (i, bytes) in self.bytes.iter().enumerate().take(b + 1).skip(a) {
            total += bytes;
            points.push(((i + 1) as f64 * bin, total));
        }
        points
    }
}

/// One run's time series.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Bin width, seconds.
    pub bin: f64,
    pub bins: usize,
    pub flows: Vec<FlowTimeline>,
    /// Stage → most packets inside it during each bin.
    pub queues: BTreeMap<String, Vec<f64>>,
    /// States and blackouts as the run went through them.
    pub shades: Vec<Shade>,
    /// (time, state name) of every state entered, in order.
    pub states: Vec<(f64, String)>,
    /// The files the timeline was read from, and those it looked for and
    /// did not find (named in the report).
    pub read: Vec<String>,
    pub missing: Vec<String>,
}

fn bin_of(t: f64, bin: f64, bins: usize) -> usize {
    ((t / bin).max(0.0) as usize).min(bins - 1)
}

/// A host capture read one packet at a time.
struct CaptureStream {
    file: String,
    host: RunHost,
    reader: PcapReader<BufReader<File>>,
    next: Option<Captured>,
    record: usize,
}

impl CaptureStream {
    fn open(path: &Path, host: RunHost) -> Result<Self, CaptureError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|source| CaptureError::Open { file: file.clone(), source })?;
        let reader =
            PcapReader::new(BufReader::new(f)).map_err(|source| CaptureError::Format { file: file.clone(), source })?;
        let mut s = CaptureStream { file, host, reader, next: None, record: 0 };
        s.advance()?;
        Ok(s)
    }

    fn advance(&mut self) -> Result<(), CaptureError> {
        self.next = None;
        let Some(p) = self.reader.next_packet() else { return Ok(()) };
        self.record += 1;
        let p = p.map_err(|source| CaptureError::Format { file: self.file.clone(), source })?;
        let time = squall_link::Instant::from_nanos(p.timestamp.as_nanos() as u64);
        let c = parse_ip(time, &p.data).map_err(|reason| CaptureError::Record {
            file: self.file.clone(),
            record: self.record,
            reason,
        })?;
        self.next = Some(c);
        Ok(())
    }
}

/// Reads run directory `dir` (HOST.pcap of each host, events.csv) into
/// bins of [`bin_width`]`(end)` over `end` seconds.
pub fn read_timeline(dir: &Path, hosts: &[RunHost], end: f64) -> Result<Timeline, AnalysisError> {
    let bin = bin_width(end);
    let bins = ((end / bin).ceil() as usize).clamp(1, MAX_BINS);
    let mut t = Timeline { bin, bins, ..Timeline::default() };
    let name_of =
        |a: IpAddr| hosts.iter().find(|h| h.addresses.has(a)).map_or_else(|| a.to_string(), |h| h.name.clone());
    // Every host's capture, merged in time order: a packet is sent (in
    // its sender's capture) before it is received (in its receiver's).
    let mut streams = Vec::new();
    for h in hosts {
        let path = dir.join(format!("{}.pcap", h.name));
        if path.exists() {
            t.read.push(format!("{}.pcap", h.name));
            streams.push(CaptureStream::open(&path, h.clone())?);
        } else {
            t.missing.push(format!("{}.pcap", h.name));
        }
    }
    let mut index: HashMap<FlowKey, usize> = HashMap::new();
    // (flow, IP identification) → when its latest packet was sent.
    let mut sent: HashMap<(usize, u16), f64> = HashMap::new();
    while let Some(i) = streams
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.next.as_ref().map(|c| (i, c.time)))
        .min_by_key(|(_, time)| *time)
        .map(|(i, _)| i)
    {
        let c = streams[i].next.take().expect("chosen for its packet");
        let host = streams[i].host.addresses;
        let time = c.time.as_secs_f64();
        let fi = *index.entry(c.flow).or_insert_with(|| {
            let proto = match c.flow.protocol {
                Protocol::Tcp => "tcp".to_string(),
                Protocol::Udp => "udp".to_string(),
                p => format!("{p:?}").to_lowercase(),
            };
            t.flows.push(FlowTimeline {
                key: Some(c.flow),
                label: format!(
                    "{proto} {}:{} > {}:{}",
                    name_of(c.flow.src),
                    c.flow.src_port,
                    name_of(c.flow.dst),
                    c.flow.dst_port
                ),
                sender: name_of(c.flow.src),
                receiver: name_of(c.flow.dst),
                bytes: vec![0.0; bins],
                delay_sum: vec![0.0; bins],
                delay_count: vec![0.0; bins],
                delay_max: vec![0.0; bins],
                ..FlowTimeline::default()
            });
            t.flows.len() - 1
        });
        let f = &mut t.flows[fi];
        if host.has(c.flow.src) {
            f.first_sent.get_or_insert(time);
            f.payload += c.tcp.map_or(u64::from(c.size), |tcp| u64::from(tcp.payload_len));
            sent.insert((fi, c.ip_id), time);
        } else if host.has(c.flow.dst) {
            let b = bin_of(time, bin, bins);
            f.bytes[b] += f64::from(c.size);
            f.packets_received += 1;
            f.last_received = Some(time);
            if let Some(s) = sent.get(&(fi, c.ip_id)) {
                let d = time - s;
                f.delay_sum[b] += d;
                f.delay_count[b] += 1.0;
                f.delay_max[b] = f.delay_max[b].max(d);
            }
        }
        streams[i].advance()?;
    }
    read_events(dir, &mut t, &index)?;
    Ok(t)
}

fn read_events(dir: &Path, t: &mut Timeline, index: &HashMap<FlowKey, usize>) -> Result<(), AnalysisError> {
    let path = dir.join("events.csv");
    if !path.exists() {
        t.missing.push("events.csv".into());
        return Ok(());
    }
    t.read.push("events.csv".into());
    let file = path.display().to_string();
    let f = File::open(&path).map_err(|source| AnalysisError::Open { file: file.clone(), source })?;
    let reader = squall_trace::EventLogReader::new(BufReader::new(f))
        .map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
    let (bin, bins) = (t.bin, t.bins);
    // Stage → (packets inside, the last bin that count was written to).
    let mut inside: BTreeMap<String, (Inside, usize)> = BTreeMap::new();
    let mut blackout_from: BTreeMap<String, f64> = BTreeMap::new();
    let mut state_from: Option<(f64, String)> = None;
    let mut last_time = 0.0;
    for e in reader {
        let e = e.map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
        let time = e.time.as_secs_f64();
        last_time = time;
        let stage = &*e.stage;
        match e.kind {
            EventKind::Enqueue | EventKind::Deliver => {}
            EventKind::Drop(r) => {
                if let Some(&fi) = e.flow.as_ref().and_then(|k| index.get(k)) {
                    t.flows[fi].drops.entry(r.as_str()).or_insert_with(|| vec![0.0; bins])[bin_of(time, bin, bins)] +=
                        1.0;
                }
            }
            EventKind::StateChange if !stage.starts_with("blackout-") => {
                if let Some((from, name)) = state_from.take() {
                    t.shades.push(Shade { from, to: time, label: format!("state {name}") });
                }
                state_from = Some((time, stage.to_string()));
                t.states.push((time, stage.to_string()));
                continue;
            }
            EventKind::BlackoutStart => {
                blackout_from.entry(stage.to_string()).or_insert(time);
                continue;
            }
            EventKind::BlackoutEnd => {
                if let Some(from) = blackout_from.remove(stage) {
                    t.shades.push(Shade { from, to: time, label: format!("blackout {stage}") });
                }
                continue;
            }
            _ => continue,
        }
        // Packets inside a stage (squall_link::Inside: in at enqueue, out
        // at delivery or at a drop of a packet that had entered).
        let (n, last) = match inside.get_mut(stage) {
            Some(entry) => entry,
            None => inside.entry(stage.to_string()).or_default(),
        };
        let before = n.packets() as f64;
        if n.apply(&e) {
            let q = t.queues.entry(stage.to_string()).or_insert_with(|| vec![0.0; bins]);
            let b = bin_of(time, bin, bins);
            // Bins without an event of the stage held what it held before.
            for v in &mut q[*last..=b] {
                *v = v.max(before);
            }
            q[b] = q[b].max(n.packets() as f64);
            *last = b;
        }
    }
    let end = last_time.max(t.bins as f64 * t.bin);
    if let Some((from, name)) = state_from {
        t.shades.push(Shade { from, to: end, label: format!("state {name}") });
    }
    for (stage, from) in blackout_from {
        t.shades.push(Shade { from, to: end, label: format!("blackout {stage}") });
    }
    // A state entered at the run's last instant lasted no time: it is
    // neither shaded nor named in a legend.
    t.shades.retain(|s| s.to > s.from);
    for (stage, (n, last)) in inside {
        if let Some(q) = t.queues.get_mut(&stage) {
            for v in &mut q[last..] {
                *v = v.max(n.packets() as f64);
            }
        }
    }
    Ok(())
}

/// A stage's `rate` in a resolved scenario as JSON ("9600 bit/s"), bit/s;
/// `None` when it is absent or not a constant rate.
pub(crate) fn rate_bps(v: &serde_json::Value) -> Option<u64> {
    v.as_str().and_then(|s| s.parse::<Rate>().ok()).map(|r| r.bits_per_sec())
}

/// The capacity of the path a flow takes from `sender` to `receiver`:
/// the smallest configured `rate` of the stages of the direction of the
/// link between them, stepped at the times the run entered a state that
/// sets one (read from the resolved scenario, `scenario`, as summary.json
/// or result.json holds it). `None` when the hosts share no link or a
/// stage's rate is not a constant (a radio channel, a trace).
pub fn capacity(
    scenario: &serde_json::Value,
    sender: &str,
    receiver: &str,
    states: &[(f64, String)],
    end: f64,
) -> Option<Vec<(f64, f64)>> {
    let links = scenario["links"].as_array()?;
    let (link, direction) = links.iter().find_map(|l| {
        let b = l["between"].as_array()?;
        let (a, z) = (b.first()?.as_str()?, b.get(1)?.as_str()?);
        if (a, z) == (sender, receiver) {
            Some((l, "downlink"))
        } else if (a, z) == (receiver, sender) {
            Some((l, "uplink"))
        } else {
            None
        }
    })?;
    let stages = link[direction].as_array()?;
    let rate = |v: &serde_json::Value| rate_bps(v).map(|r| r as f64);
    let mut rates: Vec<(String, f64)> = Vec::new();
    for s in stages {
        rates.push((s["name"].as_str().unwrap_or("").to_string(), rate(&s["rate"])?));
    }
    let bottleneck = |rates: &[(String, f64)]| rates.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let mut points = vec![(0.0, bottleneck(&rates))];
    for (at, name) in states {
        let Some(state) =
            scenario["states"].as_array().and_then(|s| s.iter().find(|s| s["name"].as_str() == Some(name)))
        else {
            continue;
        };
        let before = bottleneck(&rates);
        for (stage, r) in &mut rates {
            if let Some(v) = state["set"].get(stage.as_str()).map(|p| &p["rate"]).filter(|v| !v.is_null()) {
                *r = rate(v)?;
            }
        }
        let after = bottleneck(&rates);
        if after != before {
            points.push((*at, before));
            points.push((*at, after));
        }
    }
    points.push((end, bottleneck(&rates)));
    Some(points)
}

/// TCP variables over time from the run's trace files (`tcp*.csv`
/// beside events.csv, `*tcpinfo*.csv` in workloads/): per file, one
/// series per numeric column (thinned by [`crate::plot::thin`] when
/// drawn).
pub fn tcp_series(dir: &Path) -> Result<Vec<(String, Vec<Series>)>, crate::flows::AnalysisError> {
    crate::detail::read_tcp_trace_files(dir)
}

/// Series of a flow's delay: mean and largest per bin, seconds.
pub fn delay_series(f: &FlowTimeline, bin: f64) -> Vec<Series> {
    let mean: Vec<(f64, f64)> = (0..f.delay_count.len())
        .filter(|&i| f.delay_count[i] > 0.0)
        .map(|i| (i as f64 * bin, f.delay_sum[i] / f.delay_count[i]))
        .collect();
    let max: Vec<(f64, f64)> = (0..f.delay_count.len())
        .filter(|&i| f.delay_count[i] > 0.0)
        .map(|i| (i as f64 * bin, f.delay_max[i]))
        .collect();
    vec![
        Series { name: "mean per bin".into(), mark: Mark::Line, points: mean },
        Series { name: "largest per bin".into(), mark: Mark::Line, points: max },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(bin_width(120.0), 1.0);
        assert_eq!(bin_width(200.0), 2.0);
        assert_eq!(bin_width(30.0), 0.5);
        assert_eq!(bin_width(3600.0), 50.0);
        assert!((bin_width(1.2) - 0.01).abs() < 1e-12);
    }

    /// By hand: 0.5 s bins, first packet sent at 0.6 s (bin 1), last
    /// received at 2.2 s (bin 4): 0 at 0.5 s, then 100, 300, 300, 350.
    #[test]
    fn the_time_sequence_adds_up_the_bytes_received_bin_by_bin() {
        let f = FlowTimeline {
            bytes: vec![0.0, 100.0, 200.0, 0.0, 50.0, 0.0],
            first_sent: Some(0.6),
            last_received: Some(2.2),
            ..FlowTimeline::default()
        };
        assert_eq!(f.received_so_far(0.5), [(0.5, 0.0), (1.0, 100.0), (1.5, 300.0), (2.0, 300.0), (2.5, 350.0)]);
        assert!(FlowTimeline::default().received_so_far(0.5).is_empty());
    }

    #[test]
    fn capacity_steps_where_a_state_changes_the_bottleneck_rate() {
        let scenario = serde_json::json!({
            "links": [{ "between": ["a", "b"],
                "downlink": [{ "name": "d1", "rate": "10 Mbit/s" }, { "name": "d2", "rate": "5 Mbit/s" }],
                "uplink": [{ "name": "u", "rate": "1 Mbit/s" }] }],
            "states": [
                { "name": "slow", "at": "10 s", "set": { "d1": { "rate": "2 Mbit/s" } } },
                { "name": "lossy", "at": "20 s", "set": { "d2": { "error": { "packet": "1%" } } } },
                { "name": "fast", "at": "30 s", "set": { "d1": { "rate": "10 Mbit/s" } } },
            ],
        });
        let states = [(10.0, "slow".to_string()), (20.0, "lossy".to_string()), (30.0, "fast".to_string())];
        assert_eq!(
            capacity(&scenario, "a", "b", &states, 40.0).unwrap(),
            [(0.0, 5e6), (10.0, 5e6), (10.0, 2e6), (30.0, 2e6), (30.0, 5e6), (40.0, 5e6)]
        );
        assert_eq!(capacity(&scenario, "b", "a", &states, 40.0).unwrap(), [(0.0, 1e6), (40.0, 1e6)]);
        assert!(capacity(&scenario, "a", "c", &states, 40.0).is_none());
    }
}
