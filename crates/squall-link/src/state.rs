//! The state schedule (seed 000 §5.1, "State changes"; §3, handovers and
//! blackouts): named states that set parameters on any stages at one
//! instant, entered at set times, after random holding times, or from
//! outside.
//!
//! Like a path, the schedule is driven: `next_wakeup()` says when a state is
//! next due and `poll(now)` hands over the states due by then. The engine
//! applies each state's changes to every path at that instant, so all
//! stages change together.

use serde::{Deserialize, Serialize};

use crate::config::Change;
use crate::dist::{Distribution, Sampler};
use crate::rng::stream;
use crate::time::{Duration, Instant};

/// A named set of changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub name: String,
    pub changes: Vec<Change>,
}

/// When a state is entered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// At a set time from the start of the run.
    At(Duration),
    /// In a cycle: entered when the previous state of the cycle has been
    /// held for a time drawn from the previous state's holding distribution.
    Cycle { hold: Distribution<Duration> },
    /// Only from outside, by [`StateSchedule::enter`].
    External,
}

/// A state with how it is entered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduledState {
    pub state: State,
    pub entry: Entry,
}

/// A state that came due.
#[derive(Clone, Debug, PartialEq)]
pub struct Due<'a> {
    pub at: Instant,
    pub state: &'a State,
}

/// The schedule of one run.
#[derive(Clone, Debug)]
pub struct StateSchedule {
    states: Vec<ScheduledState>,
    /// Indices of timed states, sorted by time then by position.
    timed: Vec<usize>,
    next_timed: usize,
    /// Indices of the states in the cycle, in order.
    cycle: Vec<usize>,
    cycle_pos: usize,
    cycle_next_at: Option<Instant>,
    hold_samplers: Vec<Sampler<Duration>>,
}

impl StateSchedule {
    /// The cycle (if any) starts in its first state at time zero; that first
    /// entry is reported by the first `poll`.
    pub fn new(states: Vec<ScheduledState>, seed: u64) -> Self {
        let mut timed: Vec<usize> = (0..states.len()).filter(|&i| matches!(states[i].entry, Entry::At(_))).collect();
        timed.sort_by_key(|&i| match states[i].entry {
            Entry::At(d) => (d, i),
            _ => unreachable!("filtered to timed states"),
        });
        let cycle: Vec<usize> = (0..states.len()).filter(|&i| matches!(states[i].entry, Entry::Cycle { .. })).collect();
        let hold_samplers = cycle
            .iter()
            .map(|&i| {
                let Entry::Cycle { hold } = &states[i].entry else { unreachable!("filtered to cycle states") };
                Sampler::new(hold.clone(), stream(seed, &format!("state/{}/hold", states[i].state.name)))
            })
            .collect();
        let cycle_next_at = (!cycle.is_empty()).then_some(Instant::ZERO);
        StateSchedule { states, timed, next_timed: 0, cycle, cycle_pos: 0, cycle_next_at, hold_samplers }
    }

    pub fn states(&self) -> impl Iterator<Item = &State> {
        self.states.iter().map(|s| &s.state)
    }

    /// When the next state is due, if any is.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let timed = self.timed.get(self.next_timed).map(|&i| match self.states[i].entry {
            Entry::At(d) => Instant::ZERO + d,
            _ => unreachable!("timed list holds timed states"),
        });
        match (timed, self.cycle_next_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next state due at or before `now`, in time order; call until it
    /// returns `None`. Early calls return `None`.
    pub fn poll(&mut self, now: Instant) -> Option<Due<'_>> {
        let at = self.next_wakeup()?;
        if at > now {
            return None;
        }
        let timed_at = self.timed.get(self.next_timed).map(|&i| match self.states[i].entry {
            Entry::At(d) => Instant::ZERO + d,
            _ => unreachable!("timed list holds timed states"),
        });
        // Timed states go first at equal times: they are the scenario's
        // explicit instants.
        if timed_at == Some(at) {
            let i = self.timed[self.next_timed];
            self.next_timed += 1;
            return Some(Due { at, state: &self.states[i].state });
        }
        let pos = self.cycle_pos;
        let hold = self.hold_samplers[pos].sample();
        self.cycle_pos = (pos + 1) % self.cycle.len();
        self.cycle_next_at = Some(at + hold);
        Some(Due { at, state: &self.states[self.cycle[pos]].state })
    }

    /// The state named `name`, entered from outside (`squall ctl`); `None`
    /// if there is no such state.
    pub fn enter(&self, name: &str) -> Option<&State> {
        self.states.iter().map(|s| &s.state).find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &str) -> State {
        State { name: name.into(), changes: vec![] }
    }

    #[test]
    fn timed_states_come_in_time_order() {
        let mut s = StateSchedule::new(
            vec![
                ScheduledState { state: state("late"), entry: Entry::At(Duration::from_secs(40)) },
                ScheduledState { state: state("early"), entry: Entry::At(Duration::from_secs(0)) },
                ScheduledState { state: state("ext"), entry: Entry::External },
            ],
            1,
        );
        assert_eq!(s.next_wakeup(), Some(Instant::ZERO));
        assert_eq!(s.poll(Instant::ZERO).unwrap().state.name, "early");
        assert!(s.poll(Instant::from_secs(39)).is_none());
        let due = s.poll(Instant::from_secs(41)).unwrap();
        assert_eq!((due.state.name.as_str(), due.at), ("late", Instant::from_secs(40)));
        assert!(s.poll(Instant::from_secs(100)).is_none());
        assert_eq!(s.next_wakeup(), None);
        assert!(s.enter("ext").is_some());
        assert!(s.enter("nope").is_none());
    }

    #[test]
    fn cycle_holds_each_state_for_its_drawn_time() {
        let hold = |s| Entry::Cycle { hold: Distribution::constant(Duration::from_secs(s)) };
        let mut s = StateSchedule::new(
            vec![
                ScheduledState { state: state("good"), entry: hold(10) },
                ScheduledState { state: state("bad"), entry: hold(2) },
            ],
            1,
        );
        let mut seen = vec![];
        while let Some(d) = s.poll(Instant::from_secs(30)) {
            seen.push((d.state.name.clone(), d.at.as_secs_f64()));
        }
        let expect: Vec<(String, f64)> = [("good", 0.0), ("bad", 10.0), ("good", 12.0), ("bad", 22.0), ("good", 24.0)]
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .collect();
        assert_eq!(seen, expect);
    }
}
