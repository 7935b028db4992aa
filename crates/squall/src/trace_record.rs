//! `squall trace record`: a Mahimahi trace (or a rate series) from what a
//! link delivered (issue 30).
//!
//! - From a squall run (its directory, or one replication's events.csv):
//!   the `deliver` events of one stage, its exact departures in
//!   nanoseconds.
//! - From a capture (pcap: raw IP, Ethernet or Linux cooked, as tcpdump
//!   writes them): the packets a saturated receiver got, as Saturator's
//!   receiver recorded them for Mahimahi (Winstein et al., NSDI 2013 §3),
//!   with time 0 at the capture's first record.
//!
//! Both become opportunities with [`squall_link::trace::record_departures`]
//! (1 504 bytes each, a packet costing its IP length plus 4, at the
//! departure's millisecond rounded up); `--format series` writes those
//! opportunities per `--interval` as a rate series, as `convert` does.

use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{Context, Result, bail};
use etherparse::{LaxPacketHeaders, NetHeaders};
use pcap_file::DataLink;
use pcap_file::pcap::PcapReader;
use squall_link::{Direction, EventKind, Instant};

/// Where `record` reads departures from.
pub struct Source<'a> {
    pub from: &'a Path,
    /// Run: the stage whose departures are recorded.
    pub stage: Option<&'a str>,
    pub direction: Option<Direction>,
    /// Run directory: which replication's events.csv.
    pub replication: u32,
    /// Capture: only packets to this address.
    pub to: Option<Ipv4Addr>,
}

/// The departures (instant, IP size) `source` holds, in time order, and
/// what they were read from (for the message).
pub fn departures(source: &Source) -> Result<(Vec<(Instant, u32)>, String)> {
    let from = source.from;
    if from.is_dir() {
        let events = from.join(format!("rep-{}", source.replication)).join("events.csv");
        if !events.is_file() {
            bail!(
                "{}: no rep-{}/events.csv; expected the directory of a `squall sim` or `squall emu` run made with events (not --no-events)",
                from.display(),
                source.replication
            );
        }
        return from_events(&events, source);
    }
    let mut magic = [0u8; 4];
    {
        use std::io::Read as _;
        let mut f = std::fs::File::open(from).with_context(|| format!("cannot read {}", from.display()))?;
        let n = f.read(&mut magic).with_context(|| format!("cannot read {}", from.display()))?;
        if n < 4 {
            bail!("{}: {n} bytes; expected a run directory, an events.csv or a pcap capture", from.display());
        }
    }
    match u32::from_le_bytes(magic) {
        0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 => from_capture(from, source),
        0x0a0d_0d0a => bail!(
            "{}: a pcapng capture; expected classic pcap (tcpdump -w writes it; convert with `editcap -F pcap IN OUT`)",
            from.display()
        ),
        _ => from_events(from, source),
    }
}

fn from_events(path: &Path, source: &Source) -> Result<(Vec<(Instant, u32)>, String)> {
    let Some(stage) = source.stage else {
        bail!(
            "{}: give --stage NAME, the stage whose departures to record (the `stage` column of events.csv)",
            path.display()
        );
    };
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let reader =
        squall_trace::EventLogReader::new(std::io::BufReader::new(f)).with_context(|| format!("{}", path.display()))?;
    let mut out = Vec::new();
    let mut stages = std::collections::BTreeSet::new();
    for event in reader {
        let event = event.with_context(|| format!("{}", path.display()))?;
        if *event.stage != *stage {
            if stages.len() < 64 {
                stages.insert(event.stage.to_string());
            }
            continue;
        }
        if source.direction.is_some_and(|d| d != event.direction) {
            continue;
        }
        if event.kind == EventKind::Deliver {
            out.push((event.time, event.size));
        }
    }
    if out.is_empty() {
        let known: Vec<String> = stages.into_iter().filter(|s| !s.is_empty()).collect();
        bail!(
            "{}: stage `{stage}` delivered no packet{}; stages with events: {}",
            path.display(),
            source.direction.map_or(String::new(), |d| format!(" on the {}", d.as_str())),
            if known.is_empty() { "none".into() } else { known.join(", ") }
        );
    }
    Ok((out, format!("{} stage {stage}", path.display())))
}

fn from_capture(path: &Path, source: &Source) -> Result<(Vec<(Instant, u32)>, String)> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {name}"))?;
    let mut reader =
        PcapReader::new(std::io::BufReader::new(f)).with_context(|| format!("{name}: not a pcap capture"))?;
    let link = reader.header().datalink;
    if !matches!(link, DataLink::RAW | DataLink::IPV4 | DataLink::ETHERNET | DataLink::LINUX_SLL) {
        bail!("{name}: link type {link:?}; expected raw IP, Ethernet or Linux cooked (tcpdump -i any) captures");
    }
    let mut out = Vec::new();
    let mut first: Option<u64> = None;
    let mut record = 0u64;
    while let Some(p) = reader.next_packet() {
        record += 1;
        let p = p.with_context(|| format!("{name}: record {record}"))?;
        let t = u64::try_from(p.timestamp.as_nanos()).unwrap_or(u64::MAX);
        let start = *first.get_or_insert(t);
        if t < start {
            bail!(
                "{name}: record {record} is at {:.9} s, before the first record; expected records in time order",
                t as f64 / 1e9
            );
        }
        let headers = match link {
            DataLink::ETHERNET => LaxPacketHeaders::from_ethernet(&p.data).map_err(|e| e.to_string()),
            DataLink::LINUX_SLL => LaxPacketHeaders::from_linux_sll(&p.data).map_err(|e| e.to_string()),
            _ => LaxPacketHeaders::from_ip(&p.data).map_err(|e| e.to_string()),
        };
        // Records that are not IPv4 (ARP, IPv6) are not the saturating
        // flow's: passed over.
        let Ok(LaxPacketHeaders { net: Some(NetHeaders::Ipv4(ip, _)), .. }) = headers else { continue };
        if source.to.is_some_and(|to| Ipv4Addr::from(ip.destination) != to) {
            continue;
        }
        out.push((Instant::from_nanos(t - start), u32::from(ip.total_len)));
    }
    if out.is_empty() {
        bail!(
            "{name}: no IPv4 packet{} in {record} records; expected the capture of a saturated receiver",
            source.to.map_or(String::new(), |a| format!(" to {a}"))
        );
    }
    let to = source.to.map_or(String::new(), |a| format!(", packets to {a}"));
    Ok((out, format!("{name}{to}")))
}

/// The opportunities of `departures`, refused when they last no time
/// (a trace's last value is its period and must be above 0).
pub fn opportunities(departures: &[(Instant, u32)], what: &str) -> Result<Vec<u64>> {
    let o = squall_link::trace::record_departures(departures.iter().copied());
    if o.last().is_none_or(|&l| l == 0) {
        bail!(
            "{what}: every departure is at 0 ms; expected departures over some time (a trace's last line is its period)"
        );
    }
    Ok(o)
}

/// One packet that entered a stage in a run: when, its IP size, and how
/// long it stayed (enqueue to delivery; `None` when it was not delivered:
/// dropped, or still inside at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub at: Instant,
    pub size: u32,
    pub stayed: Option<squall_link::Duration>,
}

/// The packets that entered `source.stage` (its `enqueue` events, in
/// order) in a run's events.csv, each with its time in the stage, for
/// `--format delays`, `gaps` and `sizes`.
pub fn entries(source: &Source) -> Result<(Vec<Entry>, String)> {
    let from = source.from;
    let path = if from.is_dir() {
        from.join(format!("rep-{}", source.replication)).join("events.csv")
    } else {
        from.to_owned()
    };
    let Some(stage) = source.stage else {
        bail!("{}: give --stage NAME, the stage whose packets to record", path.display());
    };
    let f = std::fs::File::open(&path).with_context(|| {
        format!(
            "cannot read {}; --format delays, gaps and sizes read a run (its directory or events.csv)",
            path.display()
        )
    })?;
    let reader =
        squall_trace::EventLogReader::new(std::io::BufReader::new(f)).with_context(|| format!("{}", path.display()))?;
    let mut out: Vec<Entry> = Vec::new();
    let mut inside: std::collections::HashMap<squall_link::PacketId, usize> = std::collections::HashMap::new();
    for event in reader {
        let event = event.with_context(|| format!("{}", path.display()))?;
        if *event.stage != *stage || source.direction.is_some_and(|d| d != event.direction) {
            continue;
        }
        let Some(id) = event.packet else { continue };
        match event.kind {
            EventKind::Enqueue => {
                inside.insert(id, out.len());
                out.push(Entry { at: event.time, size: event.size, stayed: None });
            }
            EventKind::Deliver => {
                if let Some(i) = inside.remove(&id) {
                    out[i].stayed = Some(event.time.saturating_since(out[i].at));
                }
            }
            _ => {}
        }
    }
    if out.len() < 2 {
        bail!(
            "{}: {} packet(s) entered stage `{stage}`{}; expected at least 2 (check --stage and --direction)",
            path.display(),
            out.len(),
            source.direction.map_or(String::new(), |d| format!(" on the {}", d.as_str()))
        );
    }
    Ok((out, format!("stage {stage}")))
}

/// `entries` as an empirical-distribution file replayed with `order =
/// "sequence"` (one value with its unit per line, `#` comments):
/// `delays`, each delivered packet's time in the stage in the order the
/// packets entered (a jitter: what a measured path gives each packet);
/// `gaps`, the times between successive entries, and `sizes`, each
/// entry's IP size (a background source's `gap` and `size`: the stored
/// pattern replayed, seed 003 §2.2).
pub fn sequence_text(entries: &[Entry], what: &str, format: &str) -> String {
    let mut text = String::new();
    match format {
        "delays" => {
            let n = entries.iter().filter(|e| e.stayed.is_some()).count();
            text.push_str(&format!(
                "# per-packet delays in {what} (enqueue to delivery), in the order the packets entered: {n} delivered of {} that entered\n",
                entries.len()
            ));
            for d in entries.iter().filter_map(|e| e.stayed) {
                text.push_str(&format!("{} ns\n", d.as_nanos()));
            }
        }
        "gaps" => {
            text.push_str(&format!("# gaps between the {} packets that entered {what}, in order\n", entries.len()));
            for w in entries.windows(2) {
                text.push_str(&format!("{} ns\n", w[1].at.saturating_since(w[0].at).as_nanos()));
            }
        }
        _ => {
            text.push_str(&format!("# IP sizes of the {} packets that entered {what}, in order\n", entries.len()));
            for e in entries {
                text.push_str(&format!("{} B\n", e.size));
            }
        }
    }
    text
}
