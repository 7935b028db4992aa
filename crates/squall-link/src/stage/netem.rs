//! netem's per-packet decisions inside a stage (tc-netem(8), Linux
//! `net/sched/sch_netem.c` `netem_enqueue`): which packets skip the delay
//! (`reorder P [C] gap N`), correlated jitter (`delay D J C`) and which
//! packets are duplicated (`duplicate P [C]`), and slots (`slot`). Each is off unless its stage
//! key is set, and then draws from its own stream, so a stage without them
//! draws exactly the numbers it drew before.

use std::collections::VecDeque;

use crate::config::StageConfig;
use crate::dist::Sampler;
use crate::dist::correlated::Correlated;
use crate::netem::{Duplicate, SendEarly, Slot};
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// The propagation delay a packet gets: `delay + jitter`, the jitter
/// correlated if asked, or none at all for a packet sent early.
#[derive(Debug, Default)]
pub(crate) struct NetemDelay {
    /// Boxed: few stages have either, and every stage has a NetemDelay.
    jitter: Option<Box<Correlated>>,
    early: Option<Box<Early>>,
}

#[derive(Debug)]
struct Early {
    config: SendEarly,
    draw: Correlated,
    /// Packets sent with the delay since the last early one (netem's
    /// `counter`).
    counter: u32,
}

impl NetemDelay {
    pub(crate) fn new(config: &StageConfig, rng: &mut impl FnMut(&str) -> StreamRng) -> Self {
        let mut d = NetemDelay::default();
        d.reconfigure(config, rng);
        d
    }

    /// A state change: the keys' new values; a decision's history (its
    /// correlation's last value) is kept, the gap count restarts as
    /// netem's does on `tc qdisc change`.
    pub(crate) fn reconfigure(&mut self, config: &StageConfig, rng: &mut impl FnMut(&str) -> StreamRng) {
        self.jitter = match (self.jitter.take(), config.jitter_correlation) {
            (_, None) => None,
            (Some(mut c), corr) => {
                c.set_correlation(corr);
                Some(c)
            }
            (None, corr) => Some(Box::new(Correlated::new(corr, rng("jitter_correlation")))),
        };
        self.early = match (self.early.take(), &config.send_early) {
            (_, None) => None,
            (Some(mut e), Some(s)) => {
                e.draw.set_correlation(s.correlation);
                e.config = s.clone();
                e.counter = 0;
                Some(e)
            }
            (None, Some(s)) => Some(Box::new(Early {
                config: s.clone(),
                draw: Correlated::new(s.correlation, rng("send_early")),
                counter: 0,
            })),
        };
    }

    /// The propagation delay of the next packet sent.
    #[inline]
    pub(crate) fn propagation(&mut self, delay: Duration, jitter: Option<&mut Sampler<Duration>>) -> Duration {
        if let Some(e) = &mut self.early {
            // sch_netem.c `netem_enqueue`: the packet is delayed if
            // `counter < gap − 1` or the draw says no; otherwise it goes
            // now and the count restarts. The draw is made only once the
            // gap is passed.
            if e.counter + 1 < e.config.gap || !e.draw.happens(e.config.probability.get()) {
                e.counter += 1;
            } else {
                e.counter = 0;
                return Duration::ZERO;
            }
        }
        let jitter = match (jitter, &mut self.jitter) {
            (None, _) => Duration::ZERO,
            (Some(s), None) => s.sample(),
            (Some(s), Some(c)) => c.delay(s),
        };
        delay + jitter
    }
}

/// Copies of packets entering a stage (tc-netem `duplicate P [C]`).
#[derive(Debug)]
pub(crate) struct Duplicator {
    probability: f64,
    draw: Correlated,
}

impl Duplicator {
    pub(crate) fn new(config: &Duplicate, rng: StreamRng) -> Self {
        Duplicator { probability: config.probability.get(), draw: Correlated::new(config.correlation, rng) }
    }

    pub(crate) fn set(&mut self, config: &Duplicate) {
        self.probability = config.probability.get();
        self.draw.set_correlation(config.correlation);
    }

    /// Whether the packet entering now gets a copy.
    pub(crate) fn copies(&mut self) -> bool {
        self.draw.happens(self.probability)
    }
}

/// netem's slots (tc-netem `slot`; [`Slot`] says the rule): packets the
/// link delivers wait here for the slot in force to start, and leave at
/// slot starts, at most a slot's budget at a time. Follows sch_netem.c
/// `netem_dequeue` (the head packet goes when it is due and the slot has
/// started; a slot that started before the head packet was due is
/// replaced by a new draw from now) and `get_slot_next` (a new slot starts
/// one interval draw after now, with full packet and byte budgets).
#[derive(Debug)]
pub(crate) struct SlotGate {
    config: Option<Slot>,
    interval: Sampler<Duration>,
    /// Start of the slot in force (netem's `slot_next`).
    next: Instant,
    packets_left: i64,
    bytes_left: i64,
    /// Packets due, in the order they became due, with that time.
    waiting: VecDeque<(Instant, Packet)>,
}

impl SlotGate {
    /// The first slot starts at `now` (netem's `get_slot`: `slot_next` is
    /// the time the qdisc is configured).
    pub(crate) fn new(config: &Slot, now: Instant, rng: StreamRng) -> Self {
        SlotGate {
            interval: Sampler::new(config.interval.clone(), rng),
            next: now,
            packets_left: config.packet_budget(),
            bytes_left: config.byte_budget(),
            config: Some(config.clone()),
            waiting: VecDeque::new(),
        }
    }

    /// A state change at `now`: a new slot configuration starts a slot at
    /// `now`, as `tc qdisc change` does (`get_slot`); `None` opens the gate:
    /// the packets waiting leave at the next call.
    pub(crate) fn set(&mut self, config: Option<&Slot>, now: Instant) {
        if let Some(c) = config {
            self.interval.set_distribution(c.interval.clone());
            self.packets_left = c.packet_budget();
            self.bytes_left = c.byte_budget();
        }
        self.next = now;
        self.config = config.cloned();
    }

    /// Whether the gate is open (its slot was removed) and empty: it can go.
    pub(crate) fn done(&self) -> bool {
        self.config.is_none() && self.waiting.is_empty()
    }

    /// Packets waiting for a slot.
    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// When the packets waiting may leave: the slot's start.
    #[inline]
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        (!self.waiting.is_empty()).then_some(self.next)
    }

    /// A packet is due at `now` (its delay spent: netem's `time_to_send`).
    pub(crate) fn arrive(&mut self, now: Instant, packet: Packet) {
        self.waiting.push_back((now, packet));
    }

    fn new_slot(&mut self, now: Instant) {
        let Some(c) = &self.config else { return };
        self.next = now + self.interval.sample();
        self.packets_left = c.packet_budget();
        self.bytes_left = c.byte_budget();
    }

    /// The next packet that leaves at `now`, if the slot in force lets one.
    pub(crate) fn take(&mut self, now: Instant) -> Option<Packet> {
        let &(due, _) = self.waiting.front()?;
        if self.config.is_none() {
            return self.waiting.pop_front().map(|(_, p)| p);
        }
        if self.next < due {
            self.new_slot(now);
        }
        if due > now || self.next > now {
            return None;
        }
        let (_, packet) = self.waiting.pop_front()?;
        self.packets_left -= 1;
        self.bytes_left -= i64::from(packet.size);
        if self.packets_left <= 0 || self.bytes_left <= 0 {
            self.new_slot(now);
        }
        Some(packet)
    }
}
