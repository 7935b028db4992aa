//! The scheduler (seed 001 §2.1): the simulated clock's list of activation
//! requests. Virtual time jumps from one request to the next; all work at
//! one instant takes zero simulated time.
//!
//! Requests have a total order, time then sequence number (smoltcp
//! `tests/netsim.rs`, Shadow `core/work/event.rs`): two requests for the
//! same instant run in the order they were made, so a run is reproducible.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use squall_link::Instant;

use crate::ids::{AgentId, TimerToken};
use squall_link::PathId;

/// What a request wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// An agent's `start` (every agent starts at time zero).
    Start(AgentId),
    /// A path at its `next_wakeup()`.
    Path(PathId),
    /// An agent's timer.
    Timer(AgentId, TimerToken),
    /// The state schedule at its `next_wakeup()`.
    States,
}

/// One activation request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scheduled {
    pub at: Instant,
    /// Unique, increasing in the order requests were made.
    pub seq: u64,
    pub wake: Wake,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    /// Reversed, so that std's max-heap pops the earliest request first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

/// The activation requests of one run.
#[derive(Debug, Default)]
pub(crate) struct Scheduler {
    heap: BinaryHeap<Scheduled>,
    next_seq: u64,
    starts: Starts,
}

/// Every agent's start at time zero ([`Scheduler::schedule_starts`]):
/// `Start(AgentId(i))` is the request with sequence number `first + i`.
/// Kept beside the heap, not in it: 100 000 flows are 200 000 agents,
/// whose starts would otherwise pass through the heap (and make it that
/// much larger) at the first instant.
#[derive(Debug, Default)]
struct Starts {
    first: u64,
    next: u32,
    count: u32,
}

impl Starts {
    /// The next start not yet handed out.
    fn peek(&self) -> Option<Scheduled> {
        (self.next < self.count).then(|| Scheduled {
            at: Instant::ZERO,
            seq: self.first + u64::from(self.next),
            wake: Wake::Start(AgentId(self.next)),
        })
    }
}

impl Scheduler {
    /// Asks for every agent `0..agents` to be started at time zero, in
    /// that order, as `agents` calls of [`Self::schedule`] would (their
    /// sequence numbers follow the requests made before). Once per run.
    pub fn schedule_starts(&mut self, agents: u32) {
        debug_assert_eq!(self.starts.count, 0, "starts are scheduled once");
        self.starts = Starts { first: self.next_seq, next: 0, count: agents };
        self.next_seq += u64::from(agents);
    }

    /// The earliest request, the heap's or the next start's: which one
    /// comes first by time, then sequence number.
    fn first_is_start(&self) -> Option<bool> {
        match (self.heap.peek(), self.starts.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(h), Some(s)) => Some(s > *h),
        }
    }

    /// Asks to be woken at `at`; returns the request's sequence number.
    pub fn schedule(&mut self, at: Instant, wake: Wake) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { at, seq, wake });
        seq
    }

    /// Whether a request is due at or before `end`.
    pub fn has_due(&self, end: Instant) -> bool {
        self.heap.peek().is_some_and(|r| r.at <= end) || self.starts.peek().is_some_and(|r| r.at <= end)
    }

    /// The earliest request due at or before `end`, removed from the list.
    pub fn pop_until(&mut self, end: Instant) -> Option<Scheduled> {
        if self.first_is_start()? {
            let start = self.starts.peek().filter(|r| r.at <= end)?;
            self.starts.next += 1;
            return Some(start);
        }
        if self.heap.peek()?.at > end {
            return None;
        }
        self.heap.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_by_request_order() {
        let mut s = Scheduler::default();
        s.schedule(Instant::from_millis(2), Wake::States);
        s.schedule(Instant::from_millis(1), Wake::Path(PathId(1)));
        s.schedule(Instant::from_millis(1), Wake::Path(PathId(0)));
        s.schedule(Instant::from_millis(3), Wake::States);
        let end = Instant::from_millis(2);
        let order: Vec<(u64, u64)> =
            std::iter::from_fn(|| s.pop_until(end)).map(|e| (e.at.as_nanos() / 1_000_000, e.seq)).collect();
        assert_eq!(order, vec![(1, 1), (1, 2), (2, 0)]);
        assert!(s.pop_until(end).is_none(), "the request after the end stays");
    }

    /// The starts kept beside the heap come out exactly where the same
    /// requests made one by one through the heap would.
    #[test]
    fn starts_interleave_as_single_requests_would() {
        let order = |batched: bool| {
            let mut s = Scheduler::default();
            s.schedule(Instant::ZERO, Wake::States);
            s.schedule(Instant::from_millis(1), Wake::Path(PathId(7)));
            if batched {
                s.schedule_starts(3);
            } else {
                for a in 0..3 {
                    s.schedule(Instant::ZERO, Wake::Start(AgentId(a)));
                }
            }
            s.schedule(Instant::ZERO, Wake::Path(PathId(0)));
            let mut out = Vec::new();
            // A start asks for a request at time zero, after every start.
            while let Some(r) = s.pop_until(Instant::from_millis(1)) {
                if r.wake == Wake::Start(AgentId(1)) {
                    s.schedule(Instant::ZERO, Wake::Timer(AgentId(1), TimerToken(0)));
                }
                out.push((r.at, r.seq, r.wake));
            }
            assert!(!s.has_due(Instant::FAR_FUTURE));
            out
        };
        let batched = order(true);
        assert_eq!(batched, order(false));
        let wakes: Vec<Wake> = batched.iter().map(|r| r.2).collect();
        assert_eq!(
            wakes,
            vec![
                Wake::States,
                Wake::Start(AgentId(0)),
                Wake::Start(AgentId(1)),
                Wake::Start(AgentId(2)),
                Wake::Path(PathId(0)),
                Wake::Timer(AgentId(1), TimerToken(0)),
                Wake::Path(PathId(7)),
            ]
        );
    }
}
