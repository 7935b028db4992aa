//! The stage's background generators (crate::background): sans-IO sources
//! with `next_wakeup()` and `poll(now)`, each with its own random streams.

use std::net::Ipv4Addr;

use crate::background::{BackgroundConfig, Phase};
use crate::dist::{Distribution, Sampler};
use crate::packet::{FlowKey, Packet, PacketId, Protocol};
use crate::queue::QueueConfig;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Rate};

/// The sizes of a source's bursts (`burst`, packets per arrival event).
#[derive(Debug)]
enum Bursts {
    /// Every arrival is this many packets (CBR, or a `gap` source).
    Fixed(u32),
    /// Batch sizes 1, 2, ... with mean 1/p: 1 + Geometric(p) failures
    /// (a Poisson source's compound arrivals).
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
struct Source {
    /// What it was built from: a change that leaves it as it was keeps
    /// the source running as it is.
    config: BackgroundConfig,
    /// The class index the packets join, if one is named.
    class: Option<usize>,
    gap: Sampler<Duration>,
    size: Sampler<Bytes>,
    bursts: Bursts,
    /// Packets of the current burst still to come (at `next`).
    burst_left: u32,
    /// On and off period lengths of an on/off source.
    on_off: Option<(Sampler<Duration>, Sampler<Duration>)>,
    /// End of the current on period.
    on_until: Instant,
    next: Instant,
    flow: FlowKey,
    /// Packets go on to the next stage (BGL channel).
    forward: bool,
}

impl Source {
    /// Moves `next` past any off period it fell into.
    fn skip_off_periods(&mut self) {
        let Some((on, off)) = self.on_off.as_mut() else { return };
        // Bounded: a source whose periods are all zero would spin.
        for _ in 0..1_000_000 {
            if self.next < self.on_until {
                return;
            }
            // The arrival fell after the on period: an arrival inside the
            // off period moves to the next on period's start; one beyond
            // it (a short off period) stays where it is.
            let start = self.on_until + off.sample();
            self.on_until = start + on.sample();
            self.next = self.next.max(start);
        }
    }
}

/// A packet a generator made, and the class it joins (if it names one).
#[derive(Debug)]
pub(crate) struct Generated {
    pub packet: Packet,
    pub class: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct Background {
    sources: Vec<Source>,
    made: u64,
    /// The stage's rate the sources were built with (a `load` is a share
    /// of it).
    stage_rate: Option<Rate>,
}

impl Background {
    /// Generators starting at `now`; `rng(component)` gives the stage's
    /// random stream of that name ("background/<name>/gap", ...).
    pub(crate) fn new(
        configs: &[BackgroundConfig],
        queue: &QueueConfig,
        stage_rate: Option<Rate>,
        now: Instant,
        mut rng: impl FnMut(&str) -> StreamRng,
    ) -> Self {
        let sources = configs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut stream = |part: &str| rng(&format!("background/{}/{part}", c.name));
                let mut gap = Sampler::new(c.gap_distribution(stage_rate), stream("gap"));
                let size = Sampler::new(c.size.clone(), stream("size"));
                let mut on_off = match (&c.on, &c.off) {
                    (Some(on), Some(off)) => {
                        Some((Sampler::new(on.clone(), stream("on")), Sampler::new(off.clone(), stream("off"))))
                    }
                    _ => None,
                };
                let on_until = on_off.as_mut().map_or(Instant::FAR_FUTURE, |(on, _)| now + on.sample());
                // By default a Poisson source starts with a random gap, a
                // CBR one at once.
                let first = match c.phase {
                    Some(Phase::After(d)) => d,
                    Some(Phase::Random) => {
                        let mean = c.gap_distribution(stage_rate).mean().unwrap_or(0.0).max(0.0);
                        let within =
                            Distribution::Uniform { low: Duration::ZERO, high: Duration::from_nanos_f64(mean) };
                        Sampler::new(within, stream("phase")).sample()
                    }
                    None if c.gap.is_none() && c.arrivals == crate::background::Arrivals::Cbr => Duration::ZERO,
                    None => gap.sample(),
                };
                let b = c.burst_mean();
                let mut bursts = match c.arrivals {
                    crate::background::Arrivals::Poisson if c.gap.is_none() && b > 1 => {
                        let p = 1.0 / b as f64;
                        Bursts::Geometric(rand_distr::Geometric::new(p).expect("0 < p <= 1"), stream("burst"))
                    }
                    _ => Bursts::Fixed(b),
                };
                let burst_left = bursts.sample();
                let mut s = Source {
                    config: c.clone(),
                    class: c.class.as_ref().and_then(|n| queue.classes.iter().position(|q| &q.name == n)),
                    gap,
                    size,
                    bursts,
                    burst_left,
                    on_off,
                    on_until,
                    next: now + first,
                    flow: FlowKey {
                        protocol: Protocol::Other(0),
                        src: Ipv4Addr::UNSPECIFIED,
                        dst: Ipv4Addr::UNSPECIFIED,
                        src_port: i as u16,
                        dst_port: 0,
                    },
                    forward: c.forward,
                };
                if c.is_silent() {
                    s.next = Instant::FAR_FUTURE;
                } else {
                    s.skip_off_periods();
                }
                s
            })
            .collect();
        Background { sources, made: 0, stage_rate }
    }

    /// The generators of `configs` from `now`: a source whose
    /// configuration is unchanged (same name, same keys) keeps its phase and
    /// random streams, as a degrader's other generators run on when one is
    /// re-rated or stopped (seed 003 §2.2); the others start at `now`.
    pub(crate) fn replaced(
        self,
        configs: &[BackgroundConfig],
        queue: &QueueConfig,
        stage_rate: Option<Rate>,
        now: Instant,
        mut rng: impl FnMut(&str) -> StreamRng,
    ) -> Self {
        let mut fresh = Background::new(configs, queue, stage_rate, now, &mut rng);
        let same_rate = self.stage_rate == stage_rate;
        let mut old = self.sources;
        for (i, source) in fresh.sources.iter_mut().enumerate() {
            // A source given as a share of the stage's rate changes with it.
            let unchanged = |o: &Source| o.config == source.config && (same_rate || o.config.load.is_none());
            if let Some(j) = old.iter().position(unchanged) {
                let mut kept = old.swap_remove(j);
                kept.class = source.class;
                kept.flow.src_port = i as u16;
                *source = kept;
            }
        }
        fresh.made = self.made;
        fresh
    }

    /// Finds each source's class again in a new queue configuration (a
    /// state that reorders, renames or replaces the classes).
    pub(crate) fn set_classes(&mut self, queue: &QueueConfig) {
        for s in &mut self.sources {
            s.class = s.config.class.as_ref().and_then(|n| queue.classes.iter().position(|q| &q.name == n));
        }
    }

    /// The class of a packet one of the sources made (its source is
    /// numbered by the flow's source port), if the source names a class.
    pub(crate) fn class_of(&self, packet: &Packet) -> Option<usize> {
        self.sources.get(packet.flow.src_port as usize)?.class
    }

    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        self.sources.iter().map(|s| s.next).min()
    }

    /// The next packet due at or before `now` (the earliest source first).
    pub(crate) fn poll(&mut self, now: Instant) -> Option<(Instant, Generated)> {
        let (i, at) = self.sources.iter().enumerate().map(|(i, s)| (i, s.next)).min_by_key(|&(i, t)| (t, i))?;
        if at > now {
            return None;
        }
        let s = &mut self.sources[i];
        let size = s.size.sample().0.clamp(1, u32::MAX as u64) as u32;
        let mut packet = Packet::new(PacketId(u64::MAX - self.made), size, s.flow);
        packet.background = true;
        packet.forward = s.forward;
        self.made += 1;
        s.burst_left -= 1;
        if s.burst_left == 0 {
            s.burst_left = s.bursts.sample();
            s.next = at + s.gap.sample();
            s.skip_off_periods();
        }
        Some((at, Generated { packet, class: s.class }))
    }
}
