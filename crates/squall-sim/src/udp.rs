//! UDP (seed 001 §3.1): a source that sends datagrams at a set pace and a
//! sink that takes them. No acknowledgements, no retransmission, no
//! congestion control.
//!
//! The source's pace is either a rate (each gap is the packet's size·8/rate,
//! computed from the bits sent since the period began so rounding never
//! accumulates) or an interval distribution; `arrivals = "poisson"` makes
//! the gaps exponential with the same mean. With `on` and `off`, it
//! alternates between sending periods and silences drawn from those
//! distributions; each sending period starts with a packet.

use squall_link::rng::stream;
use squall_link::{Bytes, Distribution, Duration, Ecn, FlowKey, Instant, Packet, PacketId, Rate, Sampler};
use squall_scenario::{Arrivals, UdpFlow};

use crate::agent::{Agent, Ctx, TimerToken};

/// The source's only timer: send the next packet.
const SEND: TimerToken = TimerToken(0);

/// A silence after this many empty sending periods in a row means the
/// on/off distributions cannot produce a period with a packet.
const MAX_EMPTY_PERIODS: u32 = 1 << 20;

#[derive(Debug)]
enum Pace {
    /// Each gap is the packet's size·8/rate.
    Rate(Rate),
    /// Each gap is drawn from the distribution (the interval distribution,
    /// or the exponential of a Poisson source).
    Gaps(Sampler<Duration>),
}

#[derive(Debug)]
struct OnOff {
    on: Sampler<Duration>,
    off: Sampler<Duration>,
    /// End of the current sending period.
    on_until: Instant,
}

/// When a UDP source sends and how big each packet is: the pure part of
/// the source (seed 001 §3.1), shared by the simulator's agent and the
/// emulator's sender (`squall tool udp-flow`), so the same scenario and
/// seed give the same packets in both engines.
#[derive(Debug)]
pub struct UdpPacer {
    size: Sampler<Bytes>,
    pace: Pace,
    start: Instant,
    /// No packet is sent at or after this time.
    stop: Instant,
    /// Packets still to send, if the flow has a count.
    remaining: Option<u64>,
    on_off: Option<OnOff>,
    /// With a rate: start of the current sending period and bits sent in it.
    period_start: Instant,
    period_bits: u128,
    /// When the next packet is due, once the first has been asked for.
    next: Option<Instant>,
}

impl UdpPacer {
    /// The pacer of `config`. Its random streams are named after the flow
    /// ("udp/NAME/size", ".../gap", ".../on", ".../off"). It sends nothing
    /// at or after `end` (the end of the run) or its own `stop`. Errors
    /// name the key and what is wrong.
    pub fn new(config: &UdpFlow, seed: u64, end: Instant) -> Result<Self, String> {
        let name = &config.name;
        let rng = |component: &str| stream(seed, &format!("udp/{name}/{component}"));
        let check = |key: &str, r: Result<(), squall_link::dist::DistributionError>| {
            r.map_err(|e| format!("workload.udp `{name}`: `{key}`: {e}"))
        };
        check("size", config.size.validate())?;
        let mean_size = config.size.mean().filter(|m| *m >= 0.0);
        // Mean gap in ns, for a Poisson source and the zero-gap check.
        let (pace, mean_gap) = match (config.rate, &config.interval) {
            (Some(rate), None) => {
                let mean = mean_size.map(|s| s * 8.0 * 1e9 / rate.bits_per_sec() as f64);
                (Pace::Rate(rate), mean)
            }
            (None, Some(interval)) => {
                check("interval", interval.validate())?;
                (Pace::Gaps(Sampler::new(interval.clone(), rng("gap"))), interval.mean())
            }
            _ => return Err(format!("workload.udp `{name}`: give exactly one of `rate` and `interval`")),
        };
        if mean_gap.is_some_and(|g| g.is_nan() || g < 1.0) {
            return Err(format!(
                "workload.udp `{name}`: the mean gap between packets is under 1 ns (a zero size or interval?)"
            ));
        }
        let pace = match config.arrivals {
            Arrivals::Constant => pace,
            Arrivals::Poisson => {
                let Some(mean) = mean_gap else {
                    return Err(format!(
                        "workload.udp `{name}`: poisson arrivals need a size or interval distribution with a mean"
                    ));
                };
                let exp = Distribution::Exponential { mean: Duration::from_nanos_f64(mean) };
                Pace::Gaps(Sampler::new(exp, rng("gap")))
            }
        };
        let on_off = match (&config.on, &config.off) {
            (None, None) => None,
            (Some(on), Some(off)) => {
                check("on", on.validate())?;
                check("off", off.validate())?;
                Some(OnOff {
                    on: Sampler::new(on.clone(), rng("on")),
                    off: Sampler::new(off.clone(), rng("off")),
                    on_until: Instant::ZERO,
                })
            }
            _ => return Err(format!("workload.udp `{name}`: give both `on` and `off`, or neither")),
        };
        let start = Instant::ZERO + config.start;
        Ok(UdpPacer {
            size: Sampler::new(config.size.clone(), rng("size")),
            pace,
            start,
            stop: config.stop.map_or(end, |s| end.min(Instant::ZERO + s)),
            remaining: config.count,
            on_off,
            period_start: start,
            period_bits: 0,
            next: None,
        })
    }

    /// The next packet: when it is sent (time from the start of the run)
    /// and its IP size in bytes; None once the source is done. Each random
    /// stream is drawn in the same order whatever calls this, so the
    /// packets depend on the flow and the seed only.
    pub fn next_packet(&mut self) -> Option<(Instant, u32)> {
        let at = match self.next {
            Some(at) => at,
            None => {
                if let Some(oo) = &mut self.on_off {
                    oo.on_until = self.start + oo.on.sample();
                }
                self.start
            }
        };
        let at = self.in_sending_period(at)?;
        // A packet has at least one byte.
        let size = self.size.sample().0.clamp(1, u32::MAX as u64) as u32;
        if let Some(n) = &mut self.remaining {
            *n -= 1;
        }
        self.next = Some(match &mut self.pace {
            Pace::Rate(rate) => {
                self.period_bits += size as u128 * 8;
                let ns = (self.period_bits * 1_000_000_000).div_ceil(rate.bits_per_sec().max(1) as u128);
                self.period_start + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
            }
            Pace::Gaps(gaps) => at + gaps.sample(),
        });
        Some((at, size))
    }

    /// `at`, or the start of the next sending period if `at` falls in a
    /// silence; None if the source is done by then.
    fn in_sending_period(&mut self, at: Instant) -> Option<Instant> {
        let mut at = at;
        if let Some(oo) = &mut self.on_off {
            let mut empty = 0;
            while at >= oo.on_until {
                let period = oo.on_until + oo.off.sample();
                oo.on_until = period + oo.on.sample();
                at = period;
                self.period_start = period;
                self.period_bits = 0;
                empty += 1;
                if at >= self.stop || empty > MAX_EMPTY_PERIODS {
                    return None;
                }
            }
        }
        (at < self.stop && self.remaining != Some(0)).then_some(at)
    }
}

/// A UDP source (seed 001 §3.1's source process): a [`UdpPacer`] sending
/// on a flow.
#[derive(Debug)]
pub struct UdpSource {
    flow: FlowKey,
    ecn: bool,
    pacer: UdpPacer,
    /// The size of the packet the send timer is set for.
    pending: Option<u32>,
}

impl UdpSource {
    /// The source of `config` sending on `flow` (see [`UdpPacer::new`]).
    pub fn new(config: &UdpFlow, flow: FlowKey, seed: u64, end: Instant) -> Result<Self, String> {
        Ok(UdpSource { flow, ecn: config.ecn, pacer: UdpPacer::new(config, seed, end)?, pending: None })
    }

    fn schedule_next(&mut self, ctx: &mut Ctx<'_>) {
        if let Some((at, size)) = self.pacer.next_packet() {
            self.pending = Some(size);
            ctx.set_timer(SEND, at);
        }
    }
}

impl Agent for UdpSource {
    fn start(&mut self, _now: Instant, ctx: &mut Ctx<'_>) {
        self.schedule_next(ctx);
    }

    fn on_packet(&mut self, _now: Instant, _packet: Packet, _tcp: Option<squall_tcp::Segment>, _ctx: &mut Ctx<'_>) {}

    fn on_timer(&mut self, _now: Instant, token: TimerToken, ctx: &mut Ctx<'_>) {
        let Some(size) = self.pending.take().filter(|_| token == SEND) else { return };
        let mut packet = Packet::new(PacketId(0), size, self.flow);
        if self.ecn {
            packet.ecn = Ecn::Ect0;
        }
        // The engine checked the route when it built the run; a refused
        // send ends the source.
        if ctx.send(packet).is_ok() {
            self.schedule_next(ctx);
        }
    }
}

/// A UDP sink (seed 001 §2.1: "discards each packet after processing it").
/// The engine measures each flow; the sink only counts what it took.
#[derive(Debug, Default)]
pub struct UdpSink {
    pub packets: u64,
    pub bytes: u64,
}

impl Agent for UdpSink {
    fn start(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn on_packet(&mut self, _now: Instant, packet: Packet, _tcp: Option<squall_tcp::Segment>, _ctx: &mut Ctx<'_>) {
        self.packets += 1;
        self.bytes += packet.size as u64;
    }

    fn on_timer(&mut self, _now: Instant, _token: TimerToken, _ctx: &mut Ctx<'_>) {}
}
