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
}

impl Scheduler {
    /// Asks to be woken at `at`; returns the request's sequence number.
    pub fn schedule(&mut self, at: Instant, wake: Wake) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { at, seq, wake });
        seq
    }

    /// Whether a request is due at or before `end`.
    pub fn has_due(&self, end: Instant) -> bool {
        self.heap.peek().is_some_and(|r| r.at <= end)
    }

    /// The earliest request due at or before `end`, removed from the list.
    pub fn pop_until(&mut self, end: Instant) -> Option<Scheduled> {
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
}
