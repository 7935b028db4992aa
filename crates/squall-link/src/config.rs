//! How a stage is configured: Seawind's channel (seed 000 §4.3, Figure 3).
//!
//! These types are also the scenario file's schema: they deserialize from
//! TOML with units written out and refuse unknown keys, and they serialize
//! back into a run's resolved scenario.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::background::{Arrivals, BackgroundConfig};
pub use crate::classes::{Rule, Scheduler};
use crate::dist::correlated::Correlation;
use crate::dist::{Distribution, constant_or_table};
pub use crate::error::ConfigError;
use crate::event::Direction;
use crate::keys::Distributions;
pub use crate::netem::{Duplicate, FourState, RateOverhead, SendEarly, Slot};
pub use crate::queue::{ClassConfig, CodelConfig, DropPolicy, FqCodelConfig, PieConfig, QueueConfig, RedConfig};
pub use crate::series::StageSeries;
use crate::time::Duration;
use crate::units::{Bytes, Probability, Rate, UnitError};
pub use crate::vacation::VacationConfig;

crate::keys::stage_keys! {
/// One network element with its outgoing link: input queue, allocation,
/// fragmentation, link send buffer, transmission, errors, propagation, link
/// receive buffer. Every field is a key a state can change
/// ([`StagePatch`]): a new key is this one field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageConfig {
    /// Unique within the scenario; names the stage in events and states.
    pub name: String,
    #[serde(default)]
    pub queue: QueueConfig,
    /// Delay before the link can send when a packet arrives to an empty
    /// stage (radio resource allocation).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub allocation_delay: Option<Distribution<Duration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<Fragmentation>,
    /// Link send buffer: frames waiting for or in transmission. The default,
    /// one packet, is a plain link that takes one packet at a time.
    #[serde(default = "BufferLimit::one_packet")]
    pub send_buffer: BufferLimit,
    /// Link receive buffer: frames transmitted but not yet delivered
    /// (in flight, waiting for reassembly or for order). Acts as the link's
    /// sliding window. Unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_buffer: Option<BufferLimit>,
    /// Line rate. Absent with no `service_time`: transmission takes no time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Bytes added to each frame's length before `rate` times it
    /// (tc-netem `rate R PACKETOVERHEAD CELLSIZE CELLOVERHEAD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_overhead: Option<RateOverhead>,
    /// Transmission time per frame drawn from a distribution instead of
    /// computed from the rate (seed 001's exponential servers).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub service_time: Option<Distribution<Duration>>,
    #[serde(default, skip_serializing_if = "ErrorModel::is_none")]
    pub error: ErrorModel,
    #[serde(default)]
    pub error_mode: ErrorMode,
    /// Correlation between successive `error = { packet = P }` draws
    /// (tc-netem `loss P C`, `corrupt P C`; [`crate::dist::correlated`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_correlation: Option<Correlation>,
    /// An error that would drop a packet marks it Congestion Experienced
    /// instead when it is ECN-capable (tc-netem `ecn`; RFC 3168 §5).
    #[serde(default, skip_serializing_if = "is_false")]
    pub error_ecn: bool,
    /// Copies of packets (tc-netem `duplicate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<Duplicate>,
    /// Fixed propagation delay.
    #[serde(default)]
    pub delay: Duration,
    /// Random part of the propagation delay, added to `delay`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub jitter: Option<Distribution<Duration>>,
    /// Correlation between successive jitter draws (tc-netem `delay D J C`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_correlation: Option<Correlation>,
    /// Chosen packets skip `delay` and `jitter` (tc-netem `reorder P gap N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_early: Option<SendEarly>,
    /// Packets leave only at slot starts, a bounded batch per slot
    /// (tc-netem `slot`; [`Slot`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Slot>,
    /// Let packets of one flow overtake each other (random delays, ARQ).
    /// Off: each flow leaves in the order it entered.
    #[serde(default)]
    pub reorder: bool,
    /// A WIPEMU radio link (seed 002) instead of the channel's link part:
    /// the input queue feeds it one packet at a time; fading, modulation,
    /// frames and ARQ decide when packets leave. Propagation, if any, goes
    /// in a following stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radio: Option<crate::radio::RadioConfig>,
    /// A Mahimahi trace of delivery opportunities instead of the channel's
    /// link part (`mm-link`; [`crate::trace`]): the input queue feeds it,
    /// each opportunity carries 1 504 bytes. Propagation, if any, goes in
    /// a following stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::DeliveryTrace>,
    /// Virtual traffic generators feeding the queue (seed 003 §2.2, seed
    /// 000 §5.1): their packets take queue space and link time, never
    /// reach a host, and are counted apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<BackgroundConfig>,
    /// A server with vacations (seed 003 §2.2): the link stops starting
    /// transmissions for a while, again and again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vacation: Option<VacationConfig>,
    /// Link-level flow control (seed 000 §4.2): the window this stage
    /// announces to the stage before it in the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<FlowControl>,
    /// Parameters that follow a time series ([`crate::series`]):
    /// `series.rate = { file = "rate.csv", between = "step", at_end =
    /// "loop", start = "run" }`, and the same for delay, jitter, loss and
    /// corrupt.
    #[serde(default, skip_serializing_if = "StageSeries::is_empty")]
    pub series: StageSeries,
}
}

impl StageConfig {
    /// A stage that forwards instantly, for tests and as a base to edit:
    /// every key but the name at its default, as a scenario file without
    /// it reads.
    pub fn named(name: &str) -> Self {
        let only_name =
            serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(std::iter::once(("name", name)));
        StageConfig::deserialize(only_name).expect("every stage key but `name` has a default")
    }

    /// Checks what serde cannot: relations between fields and distribution
    /// parameters. Errors name the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let key = |k: &str| format!("{}.{k}", self.name);
        if self.name.is_empty() {
            return Err(ConfigError::new("name", "a stage needs a non-empty name"));
        }
        if self.rate.is_some() && self.service_time.is_some() {
            return Err(ConfigError::new(&key("service_time"), "give either `rate` or `service_time`, not both"));
        }
        for (at, d) in self.distributions_in(&|_| true) {
            d.validate().map_err(|e| ConfigError::new(&key(&crate::keys::dotted(&at)), &e.to_string()))?;
        }
        if let Some(f) = &self.fragmentation {
            if f.frame_payload.0 == 0 {
                return Err(ConfigError::new(&key("fragmentation.frame_payload"), "must be at least 1 B"));
            }
            if !(f.compression > 0.0 && f.compression.is_finite()) {
                return Err(ConfigError::new(
                    &key("fragmentation.compression"),
                    "must be a positive ratio (0.5 halves the size)",
                ));
            }
        }
        for (k, b) in [("send_buffer", Some(self.send_buffer)), ("receive_buffer", self.receive_buffer)] {
            if b.is_some_and(|b| b.count() == 0) {
                return Err(ConfigError::new(&key(k), "must hold at least 1 packet or frame"));
            }
        }
        self.queue.validate(&key("queue"))?;
        crate::background::validate(&self.background, &self.queue, self.rate, &key("background"))?;
        self.error.validate(&key("error"))?;
        self.validate_netem(&key)?;
        if let Some(v) = &self.vacation {
            v.validate(&key("vacation"))?;
        }
        if let Some(f) = &self.flow_control {
            f.validate(&key("flow_control"))?;
        }
        if !self.series.is_empty() {
            self.validate_series(&key)?;
        }
        if let Some(radio) = &self.radio {
            // Every key of the channel's link part is refused: all but
            // those a radio stage uses, given a value other than its default.
            // The radio takes one packet at a time from the queue (no send
            // buffer of more) and reorders as its ARQ does (`reorder` says
            // so and changes nothing): `send_buffer` is refused, not ignored.
            const RADIO_STAGE_KEYS: [&str; 5] = ["name", "queue", "reorder", "radio", "flow_control"];
            let plain = StageConfig::named(&self.name);
            let clash = StageConfig::KEYS.iter().find(|k| !RADIO_STAGE_KEYS.contains(k) && !self.same_key(&plain, k));
            if let Some(k) = clash {
                return Err(ConfigError::new(
                    &key(k),
                    "a radio stage sends with its own frames, modulation and ARQ: remove this key (put propagation delay in a following stage)",
                ));
            }
            radio.validate(&key("radio"))?;
        }
        if let Some(trace) = &self.trace {
            if self.radio.is_some() {
                return Err(ConfigError::new(&key("trace"), "give a stage either `radio` or `trace`, not both"));
            }
            // As for a radio: every key of the channel's link part is
            // refused, given a value other than its default.
            const TRACE_STAGE_KEYS: [&str; 3] = ["name", "queue", "trace"];
            let plain = StageConfig::named(&self.name);
            let clash = StageConfig::KEYS.iter().find(|k| !TRACE_STAGE_KEYS.contains(k) && !self.same_key(&plain, k));
            if let Some(k) = clash {
                return Err(ConfigError::new(
                    &key(k),
                    "a trace stage sends as its trace's delivery opportunities allow (1 504 bytes each): remove this key (put propagation delay, loss or other impairments in another stage of the path)",
                ));
            }
            trace.validate(&key("trace"))?;
        }
        Ok(())
    }
}

impl StageConfig {
    /// What a stage with `series` must hold besides valid points.
    fn validate_series(&self, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
        self.series.validate(&key("series"))?;
        if self.series.rate.is_some() {
            if self.service_time.is_some() {
                return Err(ConfigError::new(
                    &key("series.rate"),
                    "a rate series sets `rate`; remove `service_time` (give either a rate or service times)",
                ));
            }
            if self.vacation.as_ref().is_some_and(|v| !v.is_off()) {
                return Err(ConfigError::new(
                    &key("series.rate"),
                    "a rate of 0 in the series holds the link as a vacation does: give either `vacation` or `series.rate`, not both",
                ));
            }
        }
        let error_series =
            self.series.loss.as_ref().map(|_| "loss").or(self.series.corrupt.as_ref().map(|_| "corrupt"));
        if let Some(which) = error_series {
            if !matches!(self.error, ErrorModel::None | ErrorModel::Packet(_)) {
                return Err(ConfigError::new(
                    &key(&format!("series.{which}")),
                    "a loss or corruption series sets `error = { packet = P }`; remove the stage's other error model",
                ));
            }
            let corrupt = self.error_mode == ErrorMode::Corrupt;
            if which == "loss" && corrupt {
                return Err(ConfigError::new(
                    &key("series.loss"),
                    "the stage corrupts (`error_mode = \"corrupt\"`): use `series.corrupt`, or drop the error_mode",
                ));
            }
            if which == "corrupt" && !corrupt {
                return Err(ConfigError::new(
                    &key("series.corrupt"),
                    "a corruption series needs `error_mode = \"corrupt\"` on the stage (else its packets would be lost, not corrupted: use `series.loss`)",
                ));
            }
        }
        Ok(())
    }
}

impl StageConfig {
    /// Checks the netem keys against the rest of the stage; errors name
    /// the key (`key("send_early")` is the dotted path from the stage).
    pub(crate) fn validate_netem(&self, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
        if self.error_correlation.is_some() && !matches!(self.error, ErrorModel::Packet(_)) {
            return Err(ConfigError::new(
                &key("error_correlation"),
                "correlates the draws of `error = { packet = P }` only; give a per-packet error or remove it",
            ));
        }
        if self.error_ecn && (self.error.is_none() || self.error_mode != ErrorMode::Drop) {
            return Err(ConfigError::new(
                &key("error_ecn"),
                "marks packets an error would drop: it needs an `error` model and error_mode = \"drop\" (tc-netem refuses `ecn` without a loss model too)",
            ));
        }
        if self.rate_overhead.is_some() && self.rate.is_none() {
            return Err(ConfigError::new(
                &key("rate_overhead"),
                "adds bytes to what `rate` charges: give a `rate` too, like rate = \"5 kbit/s\"",
            ));
        }
        if let Some(s) = &self.slot {
            s.validate(&key("slot"))?;
        }
        if let Some(e) = &self.send_early {
            e.validate(&key("send_early"))?;
            if !self.reorder {
                return Err(ConfigError::new(
                    &key("send_early"),
                    "packets sent early overtake the delayed ones: set reorder = true in this stage",
                ));
            }
        }
        Ok(())
    }
}

/// Fragmentation into link frames and reassembly (seed 000 §4.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fragmentation {
    /// Payload bytes per frame; the last frame carries the rest.
    pub frame_payload: Bytes,
    /// Header bytes added to every frame.
    #[serde(default)]
    pub frame_header: Bytes,
    /// Size after compression over size before (1 = none, 0.5 halves).
    #[serde(default = "one")]
    pub compression: f64,
}

fn one() -> f64 {
    1.0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A buffer size in packets or in frames: `"4 packets"`, `"16 frames"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferLimit {
    Packets(u32),
    Frames(u32),
}

impl BufferLimit {
    pub fn one_packet() -> Self {
        BufferLimit::Packets(1)
    }
    pub fn count(self) -> u32 {
        match self {
            BufferLimit::Packets(n) | BufferLimit::Frames(n) => n,
        }
    }
}

impl FromStr for BufferLimit {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err =
            || UnitError { found: s.to_string(), expected: "a buffer size like \"4 packets\" or \"16 frames\"".into() };
        let mut parts = s.split_whitespace();
        let n: u32 = parts.next().and_then(|n| n.parse().ok()).ok_or_else(err)?;
        let limit = match parts.next() {
            Some("packet" | "packets" | "pkts" | "pkt") => BufferLimit::Packets(n),
            Some("frame" | "frames") => BufferLimit::Frames(n),
            _ => return Err(err()),
        };
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(limit)
    }
}

impl fmt::Display for BufferLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BufferLimit::Packets(n) => write!(f, "{n} packets"),
            BufferLimit::Frames(n) => write!(f, "{n} frames"),
        }
    }
}

serde_via_string!(BufferLimit);

/// Transmission errors (seed 000 §3 and §4.3; VALIDATION cases 7–9).
/// With fragmentation, every model applies to each frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ErrorModel {
    #[default]
    None,
    /// Each frame (each packet when not fragmented) is hit with this
    /// probability: `error = { packet = "1%" }`.
    Packet(Probability),
    /// Each bit is hit independently with this probability:
    /// `error = { bit = 1e-5 }`. A frame of B bytes on the wire is hit with
    /// probability 1-(1-b)^(8B).
    Bit(Probability),
    /// Seed 001's mapping, to reproduce its figures: a packet of S bytes is
    /// hit with probability min(1, BER·S) (`error = { ber_per_byte = 1e-5 }`).
    BerPerByte(Probability),
    /// Two-state Markov (Gilbert-Elliott) per frame: `p` good→bad, `r`
    /// bad→good, a frame gets through with probability `k` in good and `h`
    /// in bad (VALIDATION case 8).
    GilbertElliott(GilbertElliott),
    /// The four-state Markov model of tc-netem's `loss state p13 p31 p32
    /// p23 p14` ([`FourState`]), per frame:
    /// `error = { four_state = { p13 = "1%", p31 = "50%" } }`.
    FourState(FourState),
    /// Decisions replayed in order, one per frame, looping
    /// ([`crate::loss_sequence`]): `error = { sequence = { file =
    /// "loss.txt" } }`.
    Sequence(crate::loss_sequence::LossSequence),
}

impl ErrorModel {
    pub fn is_none(&self) -> bool {
        matches!(self, ErrorModel::None)
    }
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        // Every field is a Probability, checked when it was read.
        match self {
            ErrorModel::FourState(f) => f.validate(&format!("{key}.four_state")),
            ErrorModel::Sequence(s) => s.validate(&format!("{key}.sequence")),
            _ => Ok(()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    /// Probability of moving good → bad at each frame.
    pub p: Probability,
    /// Probability of moving bad → good at each frame.
    pub r: Probability,
    /// Probability a frame gets through in the bad state (0 = all lost).
    #[serde(default)]
    pub h: Probability,
    /// Probability a frame gets through in the good state (1 = none lost).
    #[serde(default = "certain")]
    pub k: Probability,
}

fn certain() -> Probability {
    Probability::ONE
}

/// What a transmission error does (seed 000 §4.3).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ErrorMode {
    /// The link receiver detects it and drops the packet.
    #[default]
    Drop,
    /// The packet is delivered with flipped bits (transparent link).
    Corrupt,
    /// Link ARQ: the frame is sent again after `delay`, at most `retries`
    /// times; after that the packet is dropped.
    Arq(ArqConfig),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArqConfig {
    /// Time from the end of a failed transmission until the frame may be
    /// sent again (feedback and processing).
    pub delay: Duration,
    /// Retransmissions allowed per frame before the packet is dropped.
    pub retries: u32,
}

/// What a blackout does with packets (seed 000 §3, "Link blackouts").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlackoutMode {
    /// The link sends nothing; packets wait in the stage and go on after.
    Hold,
    /// Packets in the stage and arriving during the blackout are dropped.
    Drop,
}

/// Link-level flow control (seed 000 §4.2: "the rate at which the packets
/// are transmitted from one network element to another is controlled by the
/// receiving network element ... by using a sliding window"). The stage
/// announces a window of packets to the stage before it: that stage starts
/// sending a packet only while fewer than `window` packets are on their way
/// (started, propagating or handed over) or waiting in this stage's queue.
/// Packets then wait upstream instead of being dropped here when this
/// stage's queue holds at least `window` packets. The window's updates take
/// no time (no feedback delay is modelled).
///
/// ```toml
/// flow_control = { window = "8 packets" }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowControl {
    /// The window, in packets (`"8 packets"`).
    pub window: BufferLimit,
}

impl FlowControl {
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        match self.window {
            BufferLimit::Packets(0) => Err(ConfigError::new(
                &format!("{key}.window"),
                "must be at least 1 packet (the stage before could never send), like window = \"8 packets\"",
            )),
            BufferLimit::Packets(_) => Ok(()),
            BufferLimit::Frames(_) => Err(ConfigError::new(
                &format!("{key}.window"),
                "counts packets, not frames, like window = \"8 packets\"",
            )),
        }
    }

    /// The window in packets.
    pub fn packets(&self) -> u32 {
        self.window.count()
    }
}

/// Checks what the `i`th stage of a path asks of its neighbours: background
/// load forwarded to a next stage that exists and has a channel, flow
/// control announced to a stage before it that has a channel. Errors name
/// the key from the stage name.
pub fn check_stage_in_path(stages: &[StageConfig], i: usize) -> Result<(), ConfigError> {
    let s = &stages[i];
    if let Some(j) = s.background.iter().position(|b| b.forward) {
        let key = format!("{}.background[{j}].forward", s.name);
        match stages.get(i + 1) {
            None => {
                return Err(ConfigError::new(
                    &key,
                    "the last stage of a path has no next stage to forward background load to; remove `forward` (its load is consumed here)",
                ));
            }
            Some(_) if stages[i + 1..].iter().any(|n| n.radio.is_some()) => {
                return Err(ConfigError::new(
                    &key,
                    "forwarded background load would reach a radio stage, which takes no virtual packets; forward it from a stage after the radio, or not at all",
                ));
            }
            Some(_) if stages[i + 1..].iter().any(|n| n.trace.is_some()) => {
                return Err(ConfigError::new(
                    &key,
                    "forwarded background load would reach a trace stage, which takes no virtual packets; forward it from a stage after the trace stage, or not at all",
                ));
            }
            Some(_) => {}
        }
    }
    if s.flow_control.is_some() {
        let key = format!("{}.flow_control", s.name);
        match i.checked_sub(1).map(|p| &stages[p]) {
            None => {
                return Err(ConfigError::new(
                    &key,
                    "the first stage of a path has no stage before it to announce a window to; put flow_control on a later stage",
                ));
            }
            Some(before) if before.radio.is_some() || before.trace.is_some() => {
                return Err(ConfigError::new(
                    &key,
                    "the stage before is a radio or trace stage, which cannot hold packets for a window; put a plain stage between them",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// One direction's path: an ordered list of stages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathConfig {
    pub direction: Direction,
    pub stages: Vec<StageConfig>,
}

impl PathConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.stages.is_empty() {
            return Err(ConfigError::new(&self.direction.to_string(), "a path needs at least one stage"));
        }
        for (i, s) in self.stages.iter().enumerate() {
            s.validate()?;
            check_stage_in_path(&self.stages, i)?;
        }
        Ok(())
    }
}

// Keys of a stage whose types hold no distribution ([`crate::keys`]).
impl Distributions for BufferLimit {}
impl Distributions for Fragmentation {}
impl Distributions for ErrorModel {}
impl Distributions for ErrorMode {}
impl Distributions for FlowControl {}
