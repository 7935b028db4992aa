//! The stage's background generators (crate::background): each an
//! [`ArrivalProcess`] with its own random streams, polled with `now`.

use std::net::Ipv4Addr;

use crate::arrival::ArrivalProcess;
use crate::background::BackgroundConfig;
use crate::packet::{FlowKey, Packet, PacketId, Protocol};
use crate::queue::QueueConfig;
use crate::rng::StreamRng;
use crate::time::Instant;
use crate::units::Rate;

/// One generator: its arrival process and where its packets go.
#[derive(Debug)]
struct Source {
    /// What it was built from: a change that leaves it as it was keeps
    /// the source running as it is.
    config: BackgroundConfig,
    /// The class index the packets join, if one is named.
    class: Option<usize>,
    arrivals: ArrivalProcess,
    flow: FlowKey,
    /// Packets go on to the next stage (BGL channel).
    forward: bool,
}

impl Source {
    /// When its next packet is due (never, for a silent or finished one).
    fn next(&self) -> Instant {
        self.arrivals.next_arrival().unwrap_or(Instant::FAR_FUTURE)
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
                let stream = |part: &str| rng(&format!("background/{}/{part}", c.name));
                let spec = c.arrival_spec(stage_rate, now);
                Source {
                    config: c.clone(),
                    class: c.class.as_ref().and_then(|n| queue.classes.iter().position(|q| &q.name == n)),
                    arrivals: if c.is_silent() {
                        ArrivalProcess::silent(&spec, stream)
                    } else {
                        ArrivalProcess::new(&spec, stream)
                    },
                    flow: FlowKey {
                        protocol: Protocol::Other(0),
                        src: Ipv4Addr::UNSPECIFIED.into(),
                        dst: Ipv4Addr::UNSPECIFIED.into(),
                        src_port: i as u16,
                        dst_port: 0,
                    },
                    forward: c.forward,
                }
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
        self.sources.iter().map(Source::next).min()
    }

    /// The next packet due at or before `now` (the earliest source first).
    pub(crate) fn poll(&mut self, now: Instant) -> Option<(Instant, Generated)> {
        let (i, _) = self.sources.iter().enumerate().map(|(i, s)| (i, s.next())).min_by_key(|&(i, t)| (t, i))?;
        let s = &mut self.sources[i];
        let (at, size) = s.arrivals.poll(now)?;
        let mut packet = Packet::new(PacketId(u64::MAX - self.made), size, s.flow);
        packet.background = true;
        packet.forward = s.forward;
        self.made += 1;
        Some((at, Generated { packet, class: s.class }))
    }
}
