//! The stage's vacation schedule (crate::vacation, seed 003 §2.2): a
//! sans-IO timer that says when the link goes on and comes back from
//! vacation, with its own random streams ("vacation/serving",
//! "vacation/length").

use crate::dist::Sampler;
use crate::rng::StreamRng;
use crate::time::Instant;
use crate::vacation::VacationConfig;

#[derive(Debug)]
pub(crate) struct Vacations {
    serving: Sampler<crate::time::Duration>,
    length: Sampler<crate::time::Duration>,
    /// On vacation now.
    away: bool,
    /// When the current period (service or vacation) ends.
    next: Instant,
}

impl Vacations {
    /// A schedule whose first service period starts at `now`; `rng(component)`
    /// gives the stage's random stream of that name.
    pub(crate) fn new(config: &VacationConfig, now: Instant, mut rng: impl FnMut(&str) -> StreamRng) -> Self {
        let mut serving = Sampler::new(config.serving.clone(), rng("vacation/serving"));
        let length = Sampler::new(config.length.clone(), rng("vacation/length"));
        let next = now + serving.sample();
        Vacations { serving, length, away: false, next }
    }

    pub(crate) fn away(&self) -> bool {
        self.away
    }

    /// When the link next goes on or comes back from vacation.
    pub(crate) fn next_wakeup(&self) -> Instant {
        self.next
    }

    /// The period ending at [`Vacations::next_wakeup`] (not after `now`) is
    /// over: a vacation starts or ends. Returns whether the link is now away.
    pub(crate) fn toggle(&mut self) -> bool {
        let at = self.next;
        self.away = !self.away;
        self.next = at + if self.away { self.length.sample() } else { self.serving.sample() };
        self.away
    }
}
