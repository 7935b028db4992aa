//! `[[record]]`: output vectors (seed 004 §5, OMNeT++'s output vectors:
//! "every module records any quantity over time as a vector", plotted and
//! averaged afterwards). Each entry names one source — a stage or a TCP
//! flow of the workload — and one quantity of it, sampled at every change
//! (the default) or every fixed interval; a run writes the samples to
//! vectors.csv (time_s,source,name,value).
//!
//! ```toml
//! [[record]]
//! stage = "bottleneck"
//! quantity = "queue_packets"
//!
//! [[record]]
//! stage = "bottleneck"
//! class = "voice"
//! quantity = "queue_bytes"
//!
//! [[record]]
//! flow = "bulk"
//! quantity = "cwnd"
//! every = "10 ms"
//! ```

use serde::{Deserialize, Serialize};
use squall_link::{DropReason, Duration};

/// One `[[record]]` entry: a source (exactly one of `stage`, `flow`; a
/// `class` of the stage's queue), a quantity and a sampling rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// A stage, by its name (unique in the scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// A class of that stage's classful queue (`queue.classes`), by its
    /// name: the class's own counters, sampled from the model (real and
    /// background packets together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// A `[[workload.tcp]]` flow, by its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// What to record ([`Quantity`]'s names).
    pub quantity: String,
    /// Sample every this long (from time 0 to the run's end), each sample
    /// the value in force at that instant; without it, a sample at every
    /// change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Duration>,
}

/// A quantity a `[[record]]` entry names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quantity {
    /// Packets inside the stage (its queue and its link: from enqueue to
    /// delivery or drop, as events.csv tells them); of a class, the
    /// packets waiting in the class's queue (background ones included).
    QueuePackets,
    /// The same packets' bytes.
    QueueBytes,
    /// Packets the stage dropped so far, for every reason (`None`) or one.
    Drops(Option<DropReason>),
    /// The name of the last `[[states]]` entry that set this stage (empty
    /// before any).
    State,
    /// A TCP sender's congestion window, bytes.
    Cwnd,
    /// Its slow-start threshold, bytes (no sample while it is infinite).
    Ssthresh,
    /// Its smoothed RTT, s (RFC 6298 §2).
    Srtt,
    /// Its RTT variation, s (RFC 6298 §2).
    Rttvar,
    /// Its retransmission timeout, s (backoff included).
    Rto,
    /// Bytes sent and not yet acknowledged.
    InFlight,
    /// The stage's link rate in force, bit/s (its configuration and the
    /// states that set it; `inf` when unlimited).
    Rate,
    /// Bytes delivered so far: by a stage (to the next stage or the
    /// receiving host), or of a TCP flow's data cumulatively acknowledged.
    DeliveredBytes,
    /// A TCP sender's delivery rate, bit/s, as Linux's
    /// `tcpi_delivery_rate` (tcp_rate.c's latest kept sample).
    DeliveryRate,
    /// Those bytes over each sampling interval, bit/s: the throughput over
    /// a window of `every` (which it needs), sampled at the window's end.
    Throughput,
    /// Packets a class handed to the link so far.
    Sent,
    /// Their bytes.
    SentBytes,
}

/// The names of a stage's quantities, as `quantity` takes them.
pub const STAGE_QUANTITIES: &[&str] = &[
    "queue_packets",
    "queue_bytes",
    "drops",
    "drops_queue_overflow",
    "drops_red",
    "drops_error",
    "drops_arq_limit",
    "drops_blackout",
    "drops_sojourn_limit",
    "drops_codel",
    "drops_pie",
    "state",
    "rate",
    "delivered_bytes",
    "throughput",
];

/// The names of a class's quantities, as `quantity` takes them (a class
/// drops in its queue discipline only: errors, ARQ and blackouts are the
/// stage's).
pub const CLASS_QUANTITIES: &[&str] = &[
    "queue_packets",
    "queue_bytes",
    "drops",
    "drops_queue_overflow",
    "drops_red",
    "drops_sojourn_limit",
    "drops_codel",
    "drops_pie",
    "sent",
    "sent_bytes",
];

/// The names of a TCP flow's quantities, as `quantity` takes them.
pub const FLOW_QUANTITIES: &[&str] =
    &["cwnd", "ssthresh", "srtt", "rttvar", "rto", "in_flight", "delivered_bytes", "throughput", "delivery_rate"];

impl Quantity {
    /// The quantity called `name`, if any.
    pub fn parse(name: &str) -> Option<Quantity> {
        Some(match name {
            "queue_packets" => Quantity::QueuePackets,
            "queue_bytes" => Quantity::QueueBytes,
            "drops" => Quantity::Drops(None),
            "state" => Quantity::State,
            "cwnd" => Quantity::Cwnd,
            "ssthresh" => Quantity::Ssthresh,
            "srtt" => Quantity::Srtt,
            "rttvar" => Quantity::Rttvar,
            "rto" => Quantity::Rto,
            "in_flight" => Quantity::InFlight,
            "rate" => Quantity::Rate,
            "delivered_bytes" => Quantity::DeliveredBytes,
            "throughput" => Quantity::Throughput,
            "delivery_rate" => Quantity::DeliveryRate,
            "sent" => Quantity::Sent,
            "sent_bytes" => Quantity::SentBytes,
            other => {
                let reason = other.strip_prefix("drops_")?;
                Quantity::Drops(Some(DropReason::ALL.into_iter().find(|r| r.as_str() == reason)?))
            }
        })
    }

    /// Its name in scenarios and vectors.csv.
    pub fn name(self) -> String {
        match self {
            Quantity::QueuePackets => "queue_packets".into(),
            Quantity::QueueBytes => "queue_bytes".into(),
            Quantity::Drops(None) => "drops".into(),
            Quantity::Drops(Some(r)) => format!("drops_{}", r.as_str()),
            Quantity::State => "state".into(),
            Quantity::Cwnd => "cwnd".into(),
            Quantity::Ssthresh => "ssthresh".into(),
            Quantity::Srtt => "srtt".into(),
            Quantity::Rttvar => "rttvar".into(),
            Quantity::Rto => "rto".into(),
            Quantity::InFlight => "in_flight".into(),
            Quantity::Rate => "rate".into(),
            Quantity::DeliveredBytes => "delivered_bytes".into(),
            Quantity::Throughput => "throughput".into(),
            Quantity::DeliveryRate => "delivery_rate".into(),
            Quantity::Sent => "sent".into(),
            Quantity::SentBytes => "sent_bytes".into(),
        }
    }

    /// Whether a TCP flow has it.
    pub fn of_flow(self) -> bool {
        FLOW_QUANTITIES.contains(&self.name().as_str())
    }

    /// Whether a stage has it.
    pub fn of_stage(self) -> bool {
        STAGE_QUANTITIES.contains(&self.name().as_str())
    }

    /// Whether a class has it.
    pub fn of_class(self) -> bool {
        CLASS_QUANTITIES.contains(&self.name().as_str())
    }

    /// Whether it is a rate over each sampling interval (it needs `every`).
    pub fn needs_interval(self) -> bool {
        self == Quantity::Throughput
    }
}

/// What a checked entry records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordSource {
    Stage(String),
    /// A class of a stage's queue: (stage, class).
    Class(String, String),
    /// A TCP flow by name.
    Flow(String),
}

impl Record {
    /// The source and quantity of an entry that passed the scenario's
    /// check (`None` only for an unchecked one).
    pub fn resolved(&self) -> Option<(RecordSource, Quantity)> {
        let q = Quantity::parse(&self.quantity)?;
        match (&self.stage, &self.flow) {
            (Some(s), None) if self.class.is_some() => {
                q.of_class().then(|| (RecordSource::Class(s.clone(), self.class.clone().unwrap_or_default()), q))
            }
            (Some(s), None) if q.of_stage() => Some((RecordSource::Stage(s.clone()), q)),
            (None, Some(f)) if q.of_flow() && self.class.is_none() => Some((RecordSource::Flow(f.clone()), q)),
            _ => None,
        }
    }
}

/// Whether `records` ask for TCP flow `flow`'s `delivery_rate` (its
/// connections then take rate samples whatever their congestion control).
pub fn records_delivery_rate(records: &[Record], flow: &str) -> bool {
    records
        .iter()
        .any(|r| r.flow.as_deref() == Some(flow) && Quantity::parse(&r.quantity) == Some(Quantity::DeliveryRate))
}

/// The stages whose queue classes `records` name: an engine asks the
/// model to sample their classes (squall_link::Path::record_classes).
pub fn class_stages(records: &[Record]) -> Vec<String> {
    let mut stages: Vec<String> =
        records.iter().filter(|r| r.class.is_some()).filter_map(|r| r.stage.clone()).collect();
    stages.sort();
    stages.dedup();
    stages
}

/// The `[[record]]` entries whose quantity a run in `squall emu` cannot
/// give: a TCP flow's variables (the emulator does not sample TCP_INFO
/// for a scenario's flows), each as a sentence naming the entry.
pub fn refused_in_emulation(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.flow.is_some())
        .map(|(i, r)| {
            format!(
                "record[{i}] asks for flow `{}`'s {}: squall emu records stage quantities only (the emulator \
                 does not sample the real TCP's variables); run it with squall sim, or record a stage",
                r.flow.as_deref().unwrap_or_default(),
                r.quantity
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    const BASE: &str = r#"name = "rec"
duration = "10 s"

[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.1.1"

[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "down"
rate = "10 Mbit/s"
delay = "20 ms"
[[links.uplink]]
name = "up"
rate = "1 Mbit/s"
delay = "20 ms"

[[workload.udp]]
name = "cbr"
from = "fixed"
to = "mobile"
size = "1000 B"
rate = "1 Mbit/s"

[[workload.tcp]]
name = "bulk"
from = "fixed"
to = "mobile"
app = { bulk = "100 KB" }
"#;

    /// BASE (33 lines) with `records` after it.
    fn parse(records: &str) -> Result<crate::Scenario, crate::ScenarioError> {
        crate::parse("rec.toml", &format!("{BASE}{records}"), std::path::Path::new("."))
    }

    #[track_caller]
    fn error(records: &str, kind: ErrorKind, line: usize, key: &str, expected: &[&str]) {
        let err = match parse(records) {
            Ok(_) => panic!("accepted: {records}"),
            Err(e) => e,
        };
        let msg = err.to_string();
        assert_eq!(err.kind(), kind, "{msg}");
        assert_eq!(err.file(), "rec.toml", "{msg}");
        assert_eq!(err.line(), Some(line), "{msg}");
        assert_eq!(err.key_path(), key, "{msg}");
        for e in expected {
            assert!(msg.contains(e), "{e:?} missing from: {msg}");
        }
    }

    #[test]
    fn entries_are_read_and_kept_in_the_resolved_scenario() {
        let s = parse(
            "[[record]]\nstage = \"down\"\nquantity = \"queue_packets\"\n\
             [[record]]\nflow = \"bulk\"\nquantity = \"cwnd\"\nevery = \"10 ms\"\n",
        )
        .unwrap();
        assert_eq!(s.record.len(), 2);
        assert_eq!(s.record[0].resolved(), Some((RecordSource::Stage("down".into()), Quantity::QueuePackets)));
        assert_eq!(s.record[1].resolved(), Some((RecordSource::Flow("bulk".into()), Quantity::Cwnd)));
        assert_eq!(s.record[1].every, Some(Duration::from_millis(10)));
        // The resolved scenario.toml a run writes reads back the same.
        let text = toml::to_string(&s).unwrap();
        assert!(text.contains("[[record]]"), "{text}");
        let again = crate::parse("resolved.toml", &text, std::path::Path::new(".")).unwrap();
        assert_eq!(again.record, s.record);
        // Without entries, nothing is written (resolved files stay as they were).
        let none = parse("").unwrap();
        assert!(!toml::to_string(&none).unwrap().contains("record"));
    }

    #[test]
    fn bad_entries_get_located_errors() {
        error(
            "[[record]]\nstage = \"dwn\"\nquantity = \"queue_packets\"\n",
            ErrorKind::Check,
            35,
            "record[0].stage",
            &["no stage named `dwn`", "the stages are `down`, `up`"],
        );
        error(
            "[[record]]\nstage = \"down\"\nquantity = \"cwnd\"\n",
            ErrorKind::Check,
            36,
            "record[0].quantity",
            &["a stage has no quantity `cwnd`", "`queue_packets`, `queue_bytes`, `drops`", "`state`"],
        );
        error(
            "[[record]]\nflow = \"bulk\"\nquantity = \"goodput\"\n",
            ErrorKind::Check,
            36,
            "record[0].quantity",
            &[
                "a flow has no quantity `goodput`",
                "`cwnd`, `ssthresh`, `srtt`, `rttvar`, `rto`, `in_flight`, `delivered_bytes`, `throughput`, \
                 `delivery_rate`",
            ],
        );
        error(
            "[[record]]\nflow = \"cbr\"\nquantity = \"cwnd\"\n",
            ErrorKind::Check,
            35,
            "record[0].flow",
            &["`cbr` is a UDP flow", "the TCP flows are `bulk`"],
        );
        error(
            "[[record]]\nflow = \"nope\"\nquantity = \"cwnd\"\n",
            ErrorKind::Check,
            35,
            "record[0].flow",
            &["no flow named `nope`", "the TCP flows are `bulk`"],
        );
        error(
            "[[record]]\nstage = \"down\"\nflow = \"bulk\"\nquantity = \"cwnd\"\n",
            ErrorKind::Check,
            34,
            "record[0]",
            &["a record names one source"],
        );
        error(
            "[[record]]\nstage = \"down\"\nquantity = \"drops\"\nevery = \"0 ms\"\n",
            ErrorKind::Check,
            37,
            "record[0].every",
            &["must be positive", "every = \"10 ms\""],
        );
        error(
            "[[record]]\nstage = \"down\"\nquantity = \"drops\"\nevery = \"ten ms\"\n",
            ErrorKind::Schema,
            37,
            "record[0].every",
            &["\"ten ms\""],
        );
        error(
            "[[record]]\nstage = \"down\"\nquantity = \"drops\"\nsample = \"10 ms\"\n",
            ErrorKind::Schema,
            37,
            "record[0].sample",
            &["unknown field `sample`", "`every`"],
        );
    }

    #[test]
    fn flow_quantities_are_refused_in_emulation_naming_the_entry() {
        let s = parse(
            "[[record]]\nstage = \"down\"\nquantity = \"queue_packets\"\n\
             [[record]]\nflow = \"bulk\"\nquantity = \"cwnd\"\n",
        )
        .unwrap();
        let refused = refused_in_emulation(&s.record);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("record[1] asks for flow `bulk`'s cwnd"), "{}", refused[0]);
    }

    #[test]
    fn every_listed_name_parses_back_to_itself() {
        for name in STAGE_QUANTITIES.iter().chain(FLOW_QUANTITIES) {
            let q = Quantity::parse(name).unwrap_or_else(|| panic!("{name} does not parse"));
            assert_eq!(q.name(), *name);
            assert_eq!(q.of_flow(), FLOW_QUANTITIES.contains(name), "{name}");
            assert_eq!(q.of_stage(), STAGE_QUANTITIES.contains(name), "{name}");
        }
        assert_eq!(Quantity::parse("drops_nonsense"), None);
        assert_eq!(Quantity::parse("goodput"), None);
    }
}
