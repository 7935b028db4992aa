//! One arrival process for every traffic source: a stage's background
//! generators ([`crate::background`]; seed 003 §2.2, seed 000 §5.1), the
//! simulator's UDP source (seed 001 §3.1) and `squall tool udp-flow`, which
//! replays the UDP source's packets with real sockets. Sans-IO: it says
//! when its next packet is due ([`ArrivalProcess::next_arrival`]) and hands
//! out packets due by `now` ([`ArrivalProcess::poll`]).
//!
//! A process is a pace (a rate, each gap the packet's size · 8 / rate, or
//! gaps drawn from a distribution: constant for CBR, exponential for
//! Poisson), packet sizes, bursts (packets per arrival), an optional on/off
//! modulation, a first arrival and an end (a stop time, a packet count).
//!
//! On/off: the source sends only in its on periods. An arrival that falls
//! in an off period moves to the start of the next on period (a rate pace
//! starts again there); one that falls beyond the off period stays where
//! it is, so off periods of zero leave the source as if it were always on
//! (docs/validation.md, "on/off"). The seeds define no on/off source; this
//! is the rule `crates/squall-link/tests/background.rs` checks by hand
//! count.
//!
//! Random streams are asked for by component name: `size`, `gap`, `on`,
//! `off`, `phase`, `burst`; the caller prefixes them with the source's name
//! (`udp/NAME/gap`, `background/NAME/gap` in a stage's streams), so each
//! source draws the same values whatever else the run holds.

use crate::dist::{Distribution, Sampler};
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Rate};

/// Empty on periods in a row after which a source is taken to be done:
/// its on/off distributions cannot produce a period with a packet.
const MAX_EMPTY_PERIODS: u32 = 1 << 20;

/// How arrivals are spaced.
#[derive(Clone, Debug, PartialEq)]
pub enum Pace {
    /// Each gap is the packet's size · 8 / rate, computed from the bits
    /// sent since the on period began (rounded up to the ns), so rounding
    /// never accumulates.
    Rate(Rate),
    /// Each gap is drawn from the distribution (stream `gap`).
    Gaps(Distribution<Duration>),
}

/// Packets per arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Burst {
    /// Every arrival is this many packets (at least 1).
    Fixed(u32),
    /// Batches of 1 + Geometric(1/mean) packets, mean `mean` (stream
    /// `burst`): a Poisson source's compound arrivals.
    Geometric { mean: u32 },
}

/// When the first packet comes, after the source starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum First {
    /// This long after the start (zero: at the start).
    After(Duration),
    /// Uniformly within the first mean gap (stream `phase`).
    RandomWithinGap,
    /// One gap after the start (a Poisson source's first arrival).
    AfterOneGap,
}

/// What an arrival process is made of.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrivalSpec {
    pub pace: Pace,
    /// Packet sizes, drawn one per packet (stream `size`); at least 1 B is
    /// sent.
    pub size: Distribution<Bytes>,
    pub burst: Burst,
    /// On and off period lengths (streams `on`, `off`); the source starts
    /// with an on period.
    pub on_off: Option<(Distribution<Duration>, Distribution<Duration>)>,
    pub first: First,
    /// The source's start.
    pub start: Instant,
    /// No packet comes at or after this time.
    pub stop: Instant,
    /// Packets in all, if the source has a count.
    pub count: Option<u64>,
}

#[derive(Debug)]
enum Spacing {
    Rate(Rate),
    Gaps(Sampler<Duration>),
}

#[derive(Debug)]
enum Bursts {
    Fixed(u32),
    /// 1 + Geometric(p) failures.
    Geometric(rand_distr::Geometric, StreamRng),
}

impl Bursts {
    fn sample(&mut self) -> u32 {
        match self {
            Bursts::Fixed(n) => *n,
            Bursts::Geometric(g, rng) => 1 + rand_distr::Distribution::sample(g, rng).min(u32::MAX as u64 - 1) as u32,
        }
    }
}

#[derive(Debug)]
struct OnOff {
    on: Sampler<Duration>,
    off: Sampler<Duration>,
    /// End of the current on period.
    on_until: Instant,
}

/// A running arrival process (see the module's documentation).
#[derive(Debug)]
pub struct ArrivalProcess {
    spacing: Spacing,
    size: Sampler<Bytes>,
    bursts: Bursts,
    /// Packets of the current burst still to come (at `next`).
    burst_left: u32,
    on_off: Option<OnOff>,
    stop: Instant,
    /// Packets still to send, if the source has a count.
    remaining: Option<u64>,
    /// With a rate: start of the current on period and bits sent in it.
    period_start: Instant,
    period_bits: u128,
    /// When the next packet is due; `None` once the source is done.
    next: Option<Instant>,
}

impl ArrivalProcess {
    /// The process `spec` describes; `rng(component)` gives the source's
    /// random stream of that name.
    pub fn new(spec: &ArrivalSpec, mut rng: impl FnMut(&str) -> StreamRng) -> Self {
        let mut gaps = match &spec.pace {
            Pace::Rate(r) => Spacing::Rate(*r),
            Pace::Gaps(g) => Spacing::Gaps(Sampler::new(g.clone(), rng("gap"))),
        };
        let on_off = spec.on_off.as_ref().map(|(on, off)| {
            let mut on = Sampler::new(on.clone(), rng("on"));
            let on_until = spec.start + on.sample();
            OnOff { on, off: Sampler::new(off.clone(), rng("off")), on_until }
        });
        let first = match spec.first {
            First::After(d) => d,
            First::RandomWithinGap => {
                let mean = match &spec.pace {
                    Pace::Gaps(g) => g.mean().unwrap_or(0.0).max(0.0),
                    Pace::Rate(r) => spec.size.mean().unwrap_or(0.0).max(0.0) * 8e9 / r.bits_per_sec().max(1) as f64,
                };
                let within = Distribution::Uniform { low: Duration::ZERO, high: Duration::from_nanos_f64(mean) };
                Sampler::new(within, rng("phase")).sample()
            }
            First::AfterOneGap => match &mut gaps {
                Spacing::Gaps(g) => g.sample(),
                Spacing::Rate(_) => Duration::ZERO,
            },
        };
        let mut bursts = match spec.burst {
            Burst::Fixed(n) => Bursts::Fixed(n.max(1)),
            Burst::Geometric { mean } if mean > 1 => {
                let p = 1.0 / f64::from(mean);
                Bursts::Geometric(rand_distr::Geometric::new(p).expect("0 < p <= 1"), rng("burst"))
            }
            Burst::Geometric { .. } => Bursts::Fixed(1),
        };
        let burst_left = bursts.sample();
        let mut process = ArrivalProcess {
            spacing: gaps,
            size: Sampler::new(spec.size.clone(), rng("size")),
            bursts,
            burst_left,
            on_off,
            stop: spec.stop,
            remaining: spec.count,
            period_start: spec.start,
            period_bits: 0,
            next: None,
        };
        process.next = process.in_on_period(spec.start + first);
        process
    }

    /// A process that never sends (a silent source).
    pub fn silent(spec: &ArrivalSpec, rng: impl FnMut(&str) -> StreamRng) -> Self {
        ArrivalProcess { next: None, ..ArrivalProcess::new(spec, rng) }
    }

    /// When the next packet is due; `None` once the source is done.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.next
    }

    /// The next packet if it is due at or before `now`: its time and its
    /// size in bytes. Each random stream is drawn in the same order
    /// whatever calls this, so the packets depend on the spec and the
    /// streams only.
    pub fn poll(&mut self, now: Instant) -> Option<(Instant, u32)> {
        let at = self.next.filter(|&at| at <= now)?;
        // A packet has at least one byte.
        let size = self.size.sample().0.clamp(1, u32::MAX as u64) as u32;
        if let Some(n) = &mut self.remaining {
            *n -= 1;
        }
        self.period_bits += u128::from(size) * 8;
        self.burst_left -= 1;
        if self.burst_left > 0 {
            // The burst's next packet comes at the same instant.
            self.next = self.within_limits(at);
            return Some((at, size));
        }
        self.burst_left = self.bursts.sample();
        let next = match &mut self.spacing {
            Spacing::Rate(rate) => {
                let ns = (self.period_bits * 1_000_000_000).div_ceil(u128::from(rate.bits_per_sec().max(1)));
                self.period_start + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
            }
            Spacing::Gaps(gaps) => at + gaps.sample(),
        };
        self.next = self.in_on_period(next);
        Some((at, size))
    }

    /// Every packet in turn, without waiting for `now` (a sender that
    /// plans its packets ahead, `squall tool udp-flow`).
    pub fn next_packet(&mut self) -> Option<(Instant, u32)> {
        self.poll(Instant::FAR_FUTURE)
    }

    /// `at`, moved to the start of the next on period if it falls in an
    /// off period; `None` if the source is done by then.
    fn in_on_period(&mut self, mut at: Instant) -> Option<Instant> {
        if let Some(oo) = &mut self.on_off {
            let mut empty = 0;
            while at >= oo.on_until {
                let period = oo.on_until + oo.off.sample();
                oo.on_until = period + oo.on.sample();
                if at < period {
                    // In the off period: the next on period starts with it.
                    at = period;
                    self.period_start = period;
                    self.period_bits = 0;
                }
                empty += 1;
                if at >= self.stop || empty > MAX_EMPTY_PERIODS {
                    return None;
                }
            }
        }
        self.within_limits(at)
    }

    fn within_limits(&self, at: Instant) -> Option<Instant> {
        (at < self.stop && self.remaining != Some(0)).then_some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    const MS: u64 = 1_000_000;

    fn ms(n: u64) -> Duration {
        Duration::from_nanos(n * MS)
    }

    /// 100 B at 8 kbit/s: a packet every 100 ms while on.
    fn rate_source(on: u64, off: u64) -> ArrivalProcess {
        let spec = ArrivalSpec {
            pace: Pace::Rate("8 kbit/s".parse().unwrap()),
            size: Distribution::constant(Bytes(100)),
            burst: Burst::Fixed(1),
            on_off: Some((Distribution::constant(ms(on)), Distribution::constant(ms(off)))),
            first: First::After(Duration::ZERO),
            start: Instant::ZERO,
            stop: Instant::ZERO + ms(1000),
            count: None,
        };
        ArrivalProcess::new(&spec, |c| stream(1, c))
    }

    fn times(mut p: ArrivalProcess) -> Vec<u64> {
        std::iter::from_fn(|| p.next_packet()).map(|(t, _)| t.as_nanos() / MS).collect()
    }

    /// By hand: on 250 ms, off 100 ms. 0, 100, 200; 300 falls in the off
    /// period [250, 350), so the next on period starts with it at 350 and
    /// the pace starts again: 450, 550; 650 falls in [600, 700): 700, 800,
    /// 900; 1000 is the stop.
    #[test]
    fn an_arrival_in_an_off_period_starts_the_next_on_period() {
        assert_eq!(times(rate_source(250, 100)), vec![0, 100, 200, 350, 450, 550, 700, 800, 900]);
    }

    /// By hand: on 250 ms, off 10 ms. 300 falls beyond the off period
    /// [250, 260) and stays where it is: the source sends as if always on
    /// (the UDP pacer this replaced pulled it back to 260).
    #[test]
    fn an_arrival_beyond_a_short_off_period_stays() {
        assert_eq!(times(rate_source(250, 10)), (0..10).map(|i| i * 100).collect::<Vec<_>>());
    }

    /// A count ends the source; a burst's packets share their instant.
    #[test]
    fn counts_end_and_bursts_share_an_instant() {
        let spec = ArrivalSpec {
            pace: Pace::Gaps(Distribution::constant(ms(10))),
            size: Distribution::constant(Bytes(1)),
            burst: Burst::Fixed(3),
            on_off: None,
            first: First::AfterOneGap,
            start: Instant::ZERO + ms(5),
            stop: Instant::FAR_FUTURE,
            count: Some(7),
        };
        let p = ArrivalProcess::new(&spec, |c| stream(1, c));
        assert_eq!(times(p), vec![15, 15, 15, 25, 25, 25, 35]);
    }
}
