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

use crate::dist::{Distribution, Sampler};
use crate::patch::Change;
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
    /// Again and again, as the interruptions of service of seed 000 §3
    /// (a train's tunnels): first a time drawn from `first` after the
    /// start, then, with `every`, a drawn time after each entry (start to
    /// start); `end` is entered a drawn `length` after each entry. An
    /// entry that comes before the previous one's `end` extends it to the
    /// later end instead: entries never overlap, and each run of them is
    /// closed by one `end`. With `gap` instead of `every`, the next entry
    /// is a drawn time after each `end` (end to start): an alternating
    /// renewal process, on for `gap` and off for `length` (Mahimahi's
    /// `mm-onoff`, `StochasticSwitchingLink`).
    Recurring {
        first: Distribution<Duration>,
        every: Option<Distribution<Duration>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gap: Option<Box<Distribution<Duration>>>,
        length: Distribution<Duration>,
        end: State,
    },
    /// At each of the increasing times `at` of a state series (issue 30:
    /// a time series of the states), and, with `period`, again at each
    /// time plus every multiple of `period` (the series loops).
    Series { at: Vec<Duration>, period: Option<Duration> },
}

/// Where one [`Entry::Series`] state is in its times.
#[derive(Clone, Debug)]
struct SeriesCursor {
    /// The state's index.
    index: usize,
    /// The next of its times, if one is left.
    pos: usize,
    /// The loops done times the period.
    base: Duration,
}

/// The draws and pending times of one [`Entry::Recurring`] state.
#[derive(Clone, Debug)]
struct Recurrence {
    /// The state's index.
    index: usize,
    next_start: Option<Instant>,
    /// When the current entry ends, while one lasts.
    end_at: Option<Instant>,
    every: Option<Sampler<Duration>>,
    gap: Option<Sampler<Duration>>,
    length: Sampler<Duration>,
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

/// What a due event enters.
enum Which {
    State(usize),
    /// The `end` of the recurring state at this index.
    End(usize),
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
    recurring: Vec<Recurrence>,
    series: Vec<SeriesCursor>,
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
        let recurring = states
            .iter()
            .enumerate()
            .filter_map(|(index, s)| {
                let Entry::Recurring { first, every, gap, length, .. } = &s.entry else { return None };
                let name = &s.state.name;
                let draw = |what: &str, d: &Distribution<Duration>| {
                    Sampler::new(d.clone(), stream(seed, &format!("state/{name}/{what}")))
                };
                Some(Recurrence {
                    index,
                    next_start: Some(Instant::ZERO + draw("first", first).sample()),
                    end_at: None,
                    every: every.as_ref().map(|e| draw("every", e)),
                    gap: gap.as_ref().map(|g| draw("gap", g)),
                    length: draw("length", length),
                })
            })
            .collect();
        let series = (0..states.len())
            .filter(|&i| matches!(&states[i].entry, Entry::Series { at, .. } if !at.is_empty()))
            .map(|index| SeriesCursor { index, pos: 0, base: Duration::ZERO })
            .collect();
        StateSchedule {
            states,
            timed,
            next_timed: 0,
            cycle,
            cycle_pos: 0,
            cycle_next_at,
            hold_samplers,
            recurring,
            series,
        }
    }

    /// When the series state of `c` is next entered, if it is again.
    fn series_at(&self, c: &SeriesCursor) -> Option<Instant> {
        let Entry::Series { at, .. } = &self.states[c.index].entry else { unreachable!("a series cursor") };
        at.get(c.pos).map(|&t| Instant::ZERO + c.base + t)
    }

    pub fn states(&self) -> impl Iterator<Item = &State> {
        self.states.iter().map(|s| &s.state)
    }

    /// When the next timed state is due, if one is left.
    fn next_timed_at(&self) -> Option<Instant> {
        self.timed.get(self.next_timed).map(|&i| match self.states[i].entry {
            Entry::At(d) => Instant::ZERO + d,
            _ => unreachable!("timed list holds timed states"),
        })
    }

    /// When the next state is due, if any is.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let recurring = self.recurring.iter().flat_map(|r| [r.next_start, r.end_at]).flatten();
        let series = self.series.iter().filter_map(|c| self.series_at(c));
        [self.next_timed_at(), self.cycle_next_at].into_iter().flatten().chain(recurring).chain(series).min()
    }

    /// The next state due at or before `now`, in time order; call until it
    /// returns `None`. Early calls return `None`.
    pub fn poll(&mut self, now: Instant) -> Option<Due<'_>> {
        loop {
            let at = self.next_wakeup()?;
            if at > now {
                return None;
            }
            if let Some(which) = self.due_here(at) {
                let state = match which {
                    Which::State(i) => &self.states[i].state,
                    Which::End(i) => match &self.states[i].entry {
                        Entry::Recurring { end, .. } => end,
                        _ => unreachable!("only recurring states have an end"),
                    },
                };
                return Some(Due { at, state });
            }
        }
    }

    /// Takes the event due at `at` (the earliest pending): which state it
    /// enters, or `None` for a recurring entry that only extended the
    /// current one.
    fn due_here(&mut self, at: Instant) -> Option<Which> {
        let timed_at = self.next_timed_at();
        // Timed states go first at equal times: they are the scenario's
        // explicit instants.
        if timed_at == Some(at) {
            let i = self.timed[self.next_timed];
            self.next_timed += 1;
            return Some(Which::State(i));
        }
        if let Some(k) = (0..self.series.len()).find(|&k| self.series_at(&self.series[k]) == Some(at)) {
            let c = &mut self.series[k];
            let Entry::Series { at: times, period } = &self.states[c.index].entry else { unreachable!("a series") };
            c.pos += 1;
            if c.pos == times.len()
                && let Some(p) = period
            {
                c.pos = 0;
                c.base += *p;
            }
            return Some(Which::State(c.index));
        }
        if self.cycle_next_at == Some(at) {
            let pos = self.cycle_pos;
            let hold = self.hold_samplers[pos].sample();
            self.cycle_pos = (pos + 1) % self.cycle.len();
            self.cycle_next_at = Some(at + hold);
            return Some(Which::State(self.cycle[pos]));
        }
        // An end goes before a start at the same instant.
        if let Some(r) = self.recurring.iter_mut().find(|r| r.end_at == Some(at)) {
            r.end_at = None;
            if let Some(gap) = r.gap.as_mut() {
                r.next_start = Some(at + gap.sample());
            }
            return Some(Which::End(r.index));
        }
        let r = self.recurring.iter_mut().find(|r| r.next_start == Some(at)).expect("the earliest time is due");
        let end = at + r.length.sample();
        r.next_start = r.every.as_mut().map(|e| at + e.sample());
        match r.end_at {
            Some(current) => {
                r.end_at = Some(current.max(end));
                None
            }
            None => {
                r.end_at = Some(end);
                Some(Which::State(r.index))
            }
        }
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

    /// A state series "good at 0, bad at 2 s, good at 3 s, end at 5 s",
    /// looped: good at 0, 3, 5, 8, 10 s; bad at 2, 7 s (the last row, 5
    /// s, is the period and enters nothing); held, the same without
    /// repeats. A timed state at the same instant goes first.
    #[test]
    fn a_state_series_enters_its_states_at_their_times_and_loops() {
        let s = |secs: &[u64]| secs.iter().map(|&t| Duration::from_secs(t)).collect::<Vec<_>>();
        let schedule = |period| {
            StateSchedule::new(
                vec![
                    ScheduledState { state: state("good"), entry: Entry::Series { at: s(&[0, 3]), period } },
                    ScheduledState { state: state("bad"), entry: Entry::Series { at: s(&[2]), period } },
                    ScheduledState { state: state("timed"), entry: Entry::At(Duration::from_secs(3)) },
                ],
                1,
            )
        };
        let entered = |mut sch: StateSchedule| {
            let mut out = Vec::new();
            while let Some(d) = sch.poll(Instant::from_secs(11)) {
                out.push((d.state.name.clone(), (d.at - Instant::ZERO).as_secs_f64()));
            }
            out
        };
        let looped = entered(schedule(Some(Duration::from_secs(5))));
        let names: Vec<(&str, f64)> = looped.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        assert_eq!(
            names,
            vec![
                ("good", 0.0),
                ("bad", 2.0),
                ("timed", 3.0),
                ("good", 3.0),
                ("good", 5.0),
                ("bad", 7.0),
                ("good", 8.0),
                ("good", 10.0)
            ]
        );
        let held = entered(schedule(None));
        let names: Vec<(&str, f64)> = held.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        assert_eq!(names, vec![("good", 0.0), ("bad", 2.0), ("timed", 3.0), ("good", 3.0)]);
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

    fn recurring(
        first: Distribution<Duration>,
        every: Option<Distribution<Duration>>,
        length: Distribution<Duration>,
    ) -> ScheduledState {
        ScheduledState {
            state: state("out"),
            entry: Entry::Recurring { first, every, gap: None, length, end: state("back") },
        }
    }

    fn secs(s: f64) -> Distribution<Duration> {
        Distribution::constant(Duration::from_secs_f64(s))
    }

    fn run(s: &mut StateSchedule, until: f64) -> Vec<(String, f64)> {
        let mut seen = vec![];
        while let Some(d) = s.poll(Instant::ZERO + Duration::from_secs_f64(until)) {
            seen.push((d.state.name.clone(), d.at.as_secs_f64()));
        }
        seen
    }

    #[test]
    fn a_recurring_state_starts_every_period_and_ends_after_its_length() {
        // First at 5 s, every 10 s, 2 s long: out 5, back 7, out 15, back 17, out 25 (by 26 s).
        let mut s = StateSchedule::new(vec![recurring(secs(5.0), Some(secs(10.0)), secs(2.0))], 1);
        let seen = run(&mut s, 26.0);
        let want: Vec<(String, f64)> = [("out", 5.0), ("back", 7.0), ("out", 15.0), ("back", 17.0), ("out", 25.0)]
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .collect();
        assert_eq!(seen, want);
        assert_eq!(s.next_wakeup(), Some(Instant::from_secs(27)));
        // Without `every`, once.
        let mut s = StateSchedule::new(vec![recurring(secs(3.0), None, secs(1.0))], 1);
        assert_eq!(run(&mut s, 100.0), vec![("out".to_string(), 3.0), ("back".to_string(), 4.0)]);
        assert_eq!(s.next_wakeup(), None);
    }

    /// With `gap`, the next entry comes a drawn time after each end: first
    /// at 1 s, 0.5 s long, 2 s between an end and the next start: out 1,
    /// back 1.5, out 3.5, back 4, out 6 (by 6 s).
    #[test]
    fn a_recurring_state_with_a_gap_alternates() {
        let entry = Entry::Recurring {
            first: secs(1.0),
            every: None,
            gap: Some(Box::new(secs(2.0))),
            length: secs(0.5),
            end: state("back"),
        };
        let mut s = StateSchedule::new(vec![ScheduledState { state: state("out"), entry }], 1);
        let want: Vec<(String, f64)> = [("out", 1.0), ("back", 1.5), ("out", 3.5), ("back", 4.0), ("out", 6.0)]
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .collect();
        assert_eq!(run(&mut s, 6.0), want);
        assert_eq!(s.next_wakeup(), Some(Instant::ZERO + Duration::from_secs_f64(6.5)));
    }

    #[test]
    fn an_entry_inside_the_previous_one_extends_it() {
        // Every 3 s, 5 s long: the entries at 3 s and 6 s fall inside the
        // first (0–5 s, then 3–8 s), which lasts until the last one's end
        // would be, one `back` for the run of them: by 10 s, out at 0,
        // extended at 3 (to 8), at 6 (to 11), at 9 (to 14): no `back` yet.
        let mut s = StateSchedule::new(vec![recurring(secs(0.0), Some(secs(3.0)), secs(5.0))], 1);
        assert_eq!(run(&mut s, 10.0), vec![("out".to_string(), 0.0)]);
        // Every 3 s, 3 s long: the end and the next start coincide; the end goes first.
        let mut s = StateSchedule::new(vec![recurring(secs(0.0), Some(secs(3.0)), secs(3.0))], 1);
        let seen = run(&mut s, 6.0);
        let want: Vec<(String, f64)> = [("out", 0.0), ("back", 3.0), ("out", 3.0), ("back", 6.0), ("out", 6.0)]
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn random_starts_and_lengths_follow_their_distributions() {
        // First start uniform in [10, 20] s, then every uniform [30, 90] s
        // (mean 60 s, variance 60²/12 = 300 s²), lengths uniform [2, 6] s
        // (mean 4 s, variance 4²/12): never longer than the shortest
        // period, so no entry merges and every draw is seen. Over 2e6 s,
        // about 33 000 entries: each mean within 3.5 standard errors of its
        // definition, each draw within its bounds.
        let u = |a: u64, b: u64| Distribution::Uniform { low: Duration::from_secs(a), high: Duration::from_secs(b) };
        let schedule = || StateSchedule::new(vec![recurring(u(10, 20), Some(u(30, 90)), u(2, 6))], 7);
        let mut s = schedule();
        let seen = run(&mut s, 2e6);
        let starts: Vec<f64> = seen.iter().filter(|(n, _)| n == "out").map(|(_, t)| *t).collect();
        let lengths: Vec<f64> = seen.windows(2).filter(|w| w[0].0 == "out").map(|w| w[1].1 - w[0].1).collect();
        assert!((10.0..=20.0).contains(&starts[0]), "first start {}", starts[0]);
        let gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let se = |var: f64, n: usize| (var / n as f64).sqrt();
        assert!(gaps.len() > 30_000, "{} entries", gaps.len());
        assert!(gaps.iter().all(|g| (30.0 - 1e-9..=90.0 + 1e-9).contains(g)));
        assert!((mean(&gaps) - 60.0).abs() < 3.5 * se(300.0, gaps.len()), "mean gap {}", mean(&gaps));
        assert!(lengths.iter().all(|l| (2.0 - 1e-9..=6.0 + 1e-9).contains(l)));
        assert!((mean(&lengths) - 4.0).abs() < 3.5 * se(16.0 / 12.0, lengths.len()), "mean length {}", mean(&lengths));
        // Alternating, one `back` after each `out`.
        assert!(seen.iter().zip(["out", "back"].iter().cycle()).all(|((n, _), want)| n == want));
        // The same seed gives the same schedule; another seed another.
        assert_eq!(run(&mut schedule(), 2e6), seen);
        let other = run(&mut StateSchedule::new(vec![recurring(u(10, 20), Some(u(30, 90)), u(2, 6))], 8), 2e6);
        assert_ne!(other, seen);
    }
}
