//! netem's per-packet decisions inside a stage (tc-netem(8), Linux
//! `net/sched/sch_netem.c` `netem_enqueue`): which packets skip the delay
//! (`reorder P [C] gap N`), correlated jitter (`delay D J C`) and which
//! packets are duplicated (`duplicate P [C]`). Each is off unless its stage
//! key is set, and then draws from its own stream, so a stage without them
//! draws exactly the numbers it drew before.

use crate::config::StageConfig;
use crate::dist::Sampler;
use crate::dist::correlated::Correlated;
use crate::netem::{Duplicate, SendEarly};
use crate::rng::StreamRng;
use crate::time::Duration;

/// The propagation delay a packet gets: `delay + jitter`, the jitter
/// correlated if asked, or none at all for a packet sent early.
#[derive(Debug, Default)]
pub(crate) struct NetemDelay {
    jitter: Option<Correlated>,
    early: Option<Early>,
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
            (None, corr) => Some(Correlated::new(corr, rng("jitter_correlation"))),
        };
        self.early = match (self.early.take(), &config.send_early) {
            (_, None) => None,
            (Some(mut e), Some(s)) => {
                e.draw.set_correlation(s.correlation);
                e.config = s.clone();
                e.counter = 0;
                Some(e)
            }
            (None, Some(s)) => {
                Some(Early { config: s.clone(), draw: Correlated::new(s.correlation, rng("send_early")), counter: 0 })
            }
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
