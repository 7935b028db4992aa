//! Background load: virtual packets generated inside a stage (seed 003
//! §2.2, the degrader's background traffic generators; seed 000 §5.1,
//! Seawind's background load). They take queue space and transmission
//! time and are dropped like real packets, but never reach a host; the
//! stage counts them apart from real traffic and records no events for
//! them.
//!
//! ```toml
//! background = [
//!   { name = "cbr", rate = "2 Mbit/s", size = "1000 B" },
//!   { name = "web", rate = "1 Mbit/s", arrivals = "poisson", size = { kind = "exponential", mean = "800 B" },
//!     on = { kind = "exponential", mean = "1 s" }, off = { kind = "exponential", mean = "3 s" }, class = "bulk" },
//! ]
//! ```

use serde::{Deserialize, Serialize};

use crate::arrival::{ArrivalSpec, Burst, First, Pace};
use crate::dist::{Distribution, constant_or_table};
use crate::error::ConfigError;
use crate::queue::QueueConfig;
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Probability, Rate};

/// How packets of a rate-driven source are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Constant bit rate: one packet every mean size · 8 / rate.
    #[default]
    Cbr,
    /// A Poisson process: exponential gaps with that mean.
    Poisson,
}

/// When a generator's first packet comes ([`BackgroundConfig::phase`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Uniformly within the first gap.
    Random,
    /// This long after the source starts.
    After(Duration),
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Phase::Random => f.write_str("random"),
            Phase::After(d) => write!(f, "{d}"),
        }
    }
}

impl std::str::FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "random" {
            return Ok(Phase::Random);
        }
        s.parse::<Duration>()
            .map(Phase::After)
            .map_err(|e| format!("expected \"random\" or a duration like \"3 ms\": {e}"))
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One virtual traffic generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundConfig {
    /// Unique within the stage; names the generator's random stream.
    pub name: String,
    /// Mean rate while on. Give `rate`, `load` or `gap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Long-run mean rate as a share of the stage's `rate` (seed 003 §3's
    /// "offered background-traffic load", 0 to 100%); 0% is a source that
    /// never sends, so a sweep can start at no load. Unlike `rate`, it
    /// counts the off periods of an on/off source: one on half the time
    /// at `load = "80%"` sends at 160% of the stage's rate while on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Probability>,
    #[serde(default)]
    pub arrivals: Arrivals,
    /// Time between packets from a distribution, instead of `rate`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub gap: Option<Distribution<Duration>>,
    /// Packet size (IP packet).
    #[serde(deserialize_with = "constant_or_table::deserialize")]
    pub size: Distribution<Bytes>,
    /// Packets per arrival event (default 1): they arrive together, as
    /// from a generator sending faster than the stage's link. CBR: exactly
    /// this many every `burst` gaps; Poisson: geometrically distributed
    /// batch sizes with this mean, the batches a Poisson process of rate
    /// mean rate / (`burst` × mean size) (a compound Poisson, or batch
    /// Poisson, process: Kleinrock, Queueing Systems vol. 1, §4.5, the
    /// M^X/G/1 queue). The mean rate stays as given; with `gap`, the gap
    /// is between bursts of exactly `burst` packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// When the first arrival comes after the source starts (at time zero
    /// or at the state change that starts it). Default: a CBR source at
    /// once, a Poisson one after one random gap (memoryless: any start is
    /// the same). `"random"`: uniformly within the first gap, from the
    /// source's own random stream, as a generator switched on at an
    /// instant unrelated to the traffic it meets; so replications of a
    /// CBR background differ in where its packets fall. A duration: that
    /// long after the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// On/off source: lengths of the on periods (packets are generated)
    /// and of the off periods (silence). Both or neither.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub on: Option<Distribution<Duration>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub off: Option<Distribution<Duration>>,
    /// The class the packets join; absent: the classifier decides (the
    /// default class, or the single queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Seawind's BGL channel (seed 000 §5.1, Figure 4): after this stage's
    /// link the packets go on to the next stage of the path, taking queue
    /// space and link time there too, and so on to the end of the path,
    /// where they are consumed. Off: consumed after this stage's link. At
    /// later stages the classifier picks their class (their flow: protocol
    /// 0, addresses 0.0.0.0, source port the source's index) and they count
    /// against flow-control windows like real packets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward: bool,
}

impl BackgroundConfig {
    /// A source with `load = "0%"`: it never sends.
    pub fn is_silent(&self) -> bool {
        self.load.is_some_and(|l| l.get() == 0.0)
    }

    /// The rate while on, bit/s: `rate`, or `load` × the stage's rate ÷
    /// the share of time an on/off source is on (`load` is the long-run
    /// mean, seed 003 §3's offered load; an on/off source offers it in its
    /// on periods).
    pub fn mean_rate(&self, stage_rate: Option<Rate>) -> f64 {
        match (self.rate, self.load) {
            (Some(r), _) => r.bits_per_sec() as f64,
            (None, Some(l)) => {
                l.get() * stage_rate.map_or(0.0, |r| r.bits_per_sec() as f64) / self.on_share().unwrap_or(1.0)
            }
            (None, None) => 0.0,
        }
    }

    /// The long-run share of time an on/off source is on: mean on ÷ (mean
    /// on + mean off); `None` without on/off periods or where a period
    /// has no finite mean (or the on periods' is zero).
    pub fn on_share(&self) -> Option<f64> {
        let (on, off) = (self.on.as_ref()?.mean()?, self.off.as_ref()?.mean()?);
        (on > 0.0 && on.is_finite() && off.is_finite()).then(|| on / (on + off.max(0.0)))
    }

    /// Packets per arrival event (`burst`, default 1).
    pub fn burst_mean(&self) -> u32 {
        self.burst.unwrap_or(1).max(1)
    }

    /// The distribution of the gaps between arrival events: `gap`, or the
    /// mean rate's with the mean size and the mean burst; `stage_rate` is
    /// the rate of the stage the source is in.
    /// The generator's arrival process ([`crate::arrival`]), starting at
    /// `start`: gaps from [`BackgroundConfig::gap_distribution`]; by
    /// default a CBR source's first packet comes at once, a Poisson or
    /// `gap` source's one gap later; batches of geometric size for a
    /// Poisson source with a `burst`.
    pub fn arrival_spec(&self, stage_rate: Option<Rate>, start: Instant) -> ArrivalSpec {
        let first = match self.phase {
            Some(Phase::After(d)) => First::After(d),
            Some(Phase::Random) => First::RandomWithinGap,
            None if self.gap.is_none() && self.arrivals == Arrivals::Cbr => First::After(Duration::ZERO),
            None => First::AfterOneGap,
        };
        let b = self.burst_mean();
        let burst = match self.arrivals {
            Arrivals::Poisson if self.gap.is_none() && b > 1 => Burst::Geometric { mean: b },
            _ => Burst::Fixed(b),
        };
        ArrivalSpec {
            pace: Pace::Gaps(self.gap_distribution(stage_rate)),
            size: self.size.clone(),
            burst,
            on_off: self.on.clone().zip(self.off.clone()),
            first,
            start,
            stop: Instant::FAR_FUTURE,
            count: None,
        }
    }

    pub fn gap_distribution(&self, stage_rate: Option<Rate>) -> Distribution<Duration> {
        if let Some(g) = &self.gap {
            return g.clone();
        }
        let mean_size = self.size.mean().unwrap_or(0.0).max(1.0) * self.burst_mean() as f64;
        let rate = self.mean_rate(stage_rate).max(1.0);
        let mean = Duration::from_nanos((mean_size * 8.0 * 1e9 / rate).round().max(1.0) as u64);
        match self.arrivals {
            Arrivals::Cbr => Distribution::constant(mean),
            Arrivals::Poisson => Distribution::Exponential { mean },
        }
    }
}

/// Checks the stage's generators; `key` is `stage.background`,
/// `stage_rate` the stage's `rate`.
pub(crate) fn validate(
    sources: &[BackgroundConfig],
    queue: &QueueConfig,
    stage_rate: Option<Rate>,
    key: &str,
) -> Result<(), ConfigError> {
    for (i, b) in sources.iter().enumerate() {
        let k = |f: &str| format!("{key}[{i}].{f}");
        if b.name.is_empty() {
            return Err(ConfigError::new(&k("name"), "a background source needs a non-empty name"));
        }
        if sources[..i].iter().any(|o| o.name == b.name) {
            return Err(ConfigError::new(&k("name"), "another background source of this stage has this name"));
        }
        if b.load.is_some() && (b.rate.is_some() || b.gap.is_some()) {
            return Err(ConfigError::new(&k("load"), "give one of `rate`, `load` and `gap`, not two"));
        }
        if b.load.is_some() && stage_rate.is_none() {
            return Err(ConfigError::new(
                &k("load"),
                "is a share of the stage's `rate`, and this stage has none: give the source a rate like rate = \"2 Mbit/s\"",
            ));
        }
        match (&b.rate, &b.gap) {
            (Some(_), Some(_)) => return Err(ConfigError::new(&k("gap"), "give either `rate` or `gap`, not both")),
            (None, None) if b.load.is_none() => {
                return Err(ConfigError::new(
                    &k("rate"),
                    "give a mean rate like rate = \"2 Mbit/s\" (or load = \"50%\" of the stage's rate, or a gap)",
                ));
            }
            (Some(r), None) if r.bits_per_sec() == 0 => {
                return Err(ConfigError::new(&k("rate"), "must be above zero, like \"2 Mbit/s\""));
            }
            _ => {}
        }
        if let Some(g) = &b.gap {
            g.validate().map_err(|e| ConfigError::new(&k("gap"), &e.to_string()))?;
            if g.mean().is_some_and(|m| m <= 0.0) {
                return Err(ConfigError::new(&k("gap"), "needs a mean gap above zero"));
            }
        }
        b.size.validate().map_err(|e| ConfigError::new(&k("size"), &e.to_string()))?;
        if b.burst == Some(0) {
            return Err(ConfigError::new(&k("burst"), "is the number of packets per arrival, at least 1"));
        }
        if b.size.mean().is_some_and(|m| m < 1.0) {
            return Err(ConfigError::new(&k("size"), "needs a mean size of at least 1 B"));
        }
        match (&b.on, &b.off) {
            (Some(on), Some(off)) => {
                on.validate().map_err(|e| ConfigError::new(&k("on"), &e.to_string()))?;
                off.validate().map_err(|e| ConfigError::new(&k("off"), &e.to_string()))?;
                if b.load.is_some() && b.on_share().is_none() {
                    return Err(ConfigError::new(
                        &k("on"),
                        "with `load` (a long-run mean) the on and off periods need finite means, the on periods' above zero, so the rate while on is load ÷ the share of time on",
                    ));
                }
            }
            (Some(_), None) => return Err(ConfigError::new(&k("on"), "an on/off source needs `off` too")),
            (None, Some(_)) => return Err(ConfigError::new(&k("off"), "an on/off source needs `on` too")),
            (None, None) => {}
        }
        if let Some(c) = &b.class
            && !queue.classes.iter().any(|q| &q.name == c)
        {
            return Err(ConfigError::new(&k("class"), "names no class of this stage's queue"));
        }
    }
    Ok(())
}

crate::keys::struct_distributions!(BackgroundConfig { gap, size, on, off });
