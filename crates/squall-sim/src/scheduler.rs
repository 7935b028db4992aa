//! The scheduler (seed 001 §2.1): the simulated clock's list of activation
//! requests. Virtual time jumps from one request to the next; all work at
//! one instant takes zero simulated time.
//!
//! Requests have a total order, time then sequence number (smoltcp
//! `tests/netsim.rs`, Shadow `core/work/event.rs`): two requests for the
//! same instant run in the order they were made, so a run is reproducible.
//!
//! The list is a timing wheel (Varghese and Lauck, "Hashed and
//! hierarchical timing wheels", SOSP 1987, scheme 6) in front of a sorted
//! run, as a calendar queue keeps its current day apart (Brown, CACM 31(10),
//! 1988). A request for the current slot of [`SLOT_NANOS`] goes to a small
//! heap; a later one is appended to its slot, in O(1), and is sorted once,
//! with its slot's other requests, when the clock reaches that slot. A
//! single binary heap of every request made each event cost O(log n) in the
//! number of requests pending, that is in the number of flows (each TCP end
//! keeps a timer armed): 600 instructions per packet at 10 flows, 1 229 at
//! 10 000 (callgrind, issue 35). The order requests come out in is the
//! heap's exactly: (time, sequence number) is a total order, and every
//! part below hands out its requests in it.
//!
//! A run with few requests pending (one or a few flows) keeps them all in
//! that small heap and never builds the wheel: with ten requests a heap
//! costs a few comparisons a request, while entering a wheel slot per
//! request cost `squall bench tcp` (one flow) 9 % of its time against the
//! single heap (perf, `--runs 30`). The wheel is built once the heap holds
//! [`HEAP_LIMIT`] requests, and kept to the end of the run.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use squall_link::Instant;

use crate::ids::{AgentId, TimerToken};
use squall_link::PathId;

/// A slot's width in nanoseconds: 2^20 ns, 1.05 ms. Wide enough that a
/// 3 s run crosses at most ~2 900 slots, narrow enough that a slot holds
/// few of the flows' timers (RTOs of 200 ms and more, delayed ACKs).
const SLOT_NANOS: u64 = 1 << 20;
/// Slots in the wheel: 4 096, a span of 4.4 s. A request further ahead
/// (a backed-off RTO, TIME-WAIT) waits in a heap of its own until the
/// wheel's span reaches it.
const SLOTS: u64 = 4096;
/// Requests pending in the heap alone before the wheel is built: a heap
/// of 128 is 7 levels deep, about the cost of entering a slot.
const HEAP_LIMIT: usize = 128;

/// The slot (its number since time zero) of a time.
fn tick(at: Instant) -> u64 {
    at.as_nanos() / SLOT_NANOS
}

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

impl Scheduled {
    /// The request's place in the total order: earlier first.
    fn key(&self) -> (Instant, u64) {
        (self.at, self.seq)
    }
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
        other.key().cmp(&self.key())
    }
}

/// The activation requests of one run.
///
/// Invariant: every request in `run` and `near` is in the slot `current`
/// or an earlier one; every request in `wheel` and `later` in a later
/// slot, `wheel` holding those before `current + SLOTS`. So the earliest
/// request is the first of `run` or of `near`, and when both are empty
/// the wheel's next occupied slot (or `later`'s first) is the next to sort.
#[derive(Debug)]
pub(crate) struct Scheduler {
    /// The current slot's requests as it was entered, sorted earliest
    /// first; `run[run_next..]` are still pending.
    run: Vec<Scheduled>,
    run_next: usize,
    /// Requests made for the current slot (or before) after it was
    /// entered: a heap, small (the work of one slot). Until the wheel is
    /// built, every request.
    near: BinaryHeap<Scheduled>,
    /// The slot the clock is in.
    current: u64,
    /// Whether the wheel is built (`near` once held [`HEAP_LIMIT`]).
    wheeled: bool,
    /// The time of the last request handed out: the clock.
    clock: Instant,
    wheel: Wheel,
    /// Requests for slots at or past `current + SLOTS`.
    later: BinaryHeap<Scheduled>,
    next_seq: u64,
    starts: Starts,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler {
            run: Vec::new(),
            run_next: 0,
            near: BinaryHeap::new(),
            current: 0,
            wheeled: false,
            clock: Instant::ZERO,
            wheel: Wheel { slots: Vec::new(), occupied: Vec::new() },
            later: BinaryHeap::new(),
            next_seq: 0,
            starts: Starts::default(),
        }
    }
}

/// [`SLOTS`] slots, each the requests of one slot's width in the order
/// they were made, with a bitmap of the occupied ones.
struct Wheel {
    slots: Vec<Vec<Scheduled>>,
    occupied: Vec<u64>,
}

impl std::fmt::Debug for Wheel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pending: usize = self.slots.iter().map(Vec::len).sum();
        f.debug_struct("Wheel").field("pending", &pending).finish()
    }
}

impl Wheel {
    fn new() -> Self {
        Wheel { slots: (0..SLOTS).map(|_| Vec::new()).collect(), occupied: vec![0; (SLOTS / 64) as usize] }
    }

    fn insert(&mut self, tick: u64, request: Scheduled) {
        let i = (tick % SLOTS) as usize;
        self.slots[i].push(request);
        self.occupied[i / 64] |= 1 << (i % 64);
    }

    /// The first occupied slot after `current` (every request in the
    /// wheel is in `current + 1 .. current + SLOTS`).
    fn next_after(&self, current: u64) -> Option<u64> {
        let from = ((current + 1) % SLOTS) as usize;
        let words = self.occupied.len();
        // The word holding `from`, without the bits before it; then the
        // others in turn; then that word's bits before `from`.
        let (w0, b0) = (from / 64, from % 64);
        let mut found = None;
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            found = Some(w0 * 64 + first.trailing_zeros() as usize);
        } else {
            for k in 1..=words {
                let w = (w0 + k) % words;
                let bits = if k == words { self.occupied[w] & !(!0u64 << b0) } else { self.occupied[w] };
                if bits != 0 {
                    found = Some(w * 64 + bits.trailing_zeros() as usize);
                    break;
                }
            }
        }
        let i = found? as u64;
        // Slots ahead of `current`, 1..SLOTS.
        let ahead = (i + SLOTS - current % SLOTS) % SLOTS;
        Some(current + ahead)
    }

    /// Hands slot `tick`'s requests over in `into`, which must be empty:
    /// the two lists change places, so nothing is copied and the slot
    /// keeps `into`'s buffer for later requests.
    fn take(&mut self, tick: u64, into: &mut Vec<Scheduled>) {
        debug_assert!(into.is_empty());
        let i = (tick % SLOTS) as usize;
        std::mem::swap(into, &mut self.slots[i]);
        self.occupied[i / 64] &= !(1 << (i % 64));
    }
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
    /// Whether a start is still to be handed out.
    fn pending(&self) -> bool {
        self.next < self.count
    }

    /// The next start not yet handed out.
    fn peek(&self) -> Option<Scheduled> {
        self.pending().then(|| Scheduled {
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

    /// Asks to be woken at `at`; returns the request's sequence number.
    /// Inline: every packet a path handles asks for a wake-up.
    #[inline]
    pub fn schedule(&mut self, at: Instant, wake: Wake) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        // The request is made where it goes: built once before a branch,
        // it was written to the stack and read back (perf: a third of the
        // samples of the caller, `Books::after_call`, on that load).
        if self.wheeled {
            self.place(Scheduled { at, seq, wake });
        } else {
            self.near.push(Scheduled { at, seq, wake });
            if self.near.len() >= HEAP_LIMIT {
                self.build_wheel();
            }
        }
        seq
    }

    /// Puts a request where the invariant wants it, the wheel built.
    fn place(&mut self, request: Scheduled) {
        let t = tick(request.at);
        if t <= self.current {
            self.near.push(request);
        } else if t - self.current < SLOTS {
            self.wheel.insert(t, request);
        } else {
            self.later.push(request);
        }
    }

    /// Builds the wheel at the clock's slot and spreads the heap's
    /// requests over it: those of the clock's slot (or before) stay.
    /// Once per run at most.
    #[cold]
    fn build_wheel(&mut self) {
        self.wheeled = true;
        self.wheel = Wheel::new();
        self.current = tick(self.clock);
        let pending = std::mem::take(&mut self.near).into_vec();
        for request in pending {
            self.place(request);
        }
    }

    /// The earliest request not yet handed out, the starts aside.
    fn first(&mut self) -> Option<Scheduled> {
        loop {
            match (self.run.get(self.run_next), self.near.peek()) {
                (Some(r), Some(n)) => return Some(if r.key() < n.key() { *r } else { *n }),
                (Some(r), None) => return Some(*r),
                (None, Some(n)) => return Some(*n),
                (None, None) => {
                    if !self.enter_next_slot() {
                        return None;
                    }
                }
            }
        }
    }

    /// Removes the request [`Self::first`] returned.
    fn remove_first(&mut self, first: &Scheduled) {
        if self.run.get(self.run_next).is_some_and(|r| r.seq == first.seq) {
            self.run_next += 1;
        } else {
            self.near.pop();
        }
    }

    /// With `run` and `near` empty: moves the clock to the next slot that
    /// has requests and sorts them into `run`. `false` if none is left.
    fn enter_next_slot(&mut self) -> bool {
        if !self.wheeled {
            return false;
        }
        self.run.clear();
        self.run_next = 0;
        let next = match (self.wheel.next_after(self.current), self.later.peek()) {
            (None, None) => return false,
            (Some(w), None) => w,
            (None, Some(l)) => tick(l.at),
            (Some(w), Some(l)) => w.min(tick(l.at)),
        };
        self.current = next;
        // The wheel's span moved on: the requests it reaches now join it.
        while let Some(r) = self.later.peek()
            && tick(r.at) - next < SLOTS
        {
            let r = *r;
            self.later.pop();
            self.wheel.insert(tick(r.at), r);
        }
        self.wheel.take(next, &mut self.run);
        // Made in order of sequence number, mostly in order of time too.
        if self.run.len() > 1 {
            self.run.sort_unstable_by_key(Scheduled::key);
        }
        true
    }

    /// The earliest request, the list's or the next start's, if due by `end`.
    fn due(&mut self, end: Instant) -> Option<(Scheduled, bool)> {
        let listed = self.first();
        let start = self.starts.peek();
        let (first, is_start) = match (listed, start) {
            (None, None) => return None,
            (Some(l), None) => (l, false),
            (None, Some(s)) => (s, true),
            (Some(l), Some(s)) => {
                if s.key() < l.key() {
                    (s, true)
                } else {
                    (l, false)
                }
            }
        };
        (first.at <= end).then_some((first, is_start))
    }

    /// Whether a request is due at or before `end`.
    pub fn has_due(&mut self, end: Instant) -> bool {
        self.due(end).is_some()
    }

    /// The earliest request due at or before `end`, removed from the list.
    #[inline]
    pub fn pop_until(&mut self, end: Instant) -> Option<Scheduled> {
        if !self.wheeled && !self.starts.pending() {
            // The heap alone, as in a run of a few flows once started
            // (`run` fills only once the wheel is built): the earliest
            // request is the heap's top, as `due` would find.
            if self.near.peek()?.at > end {
                return None;
            }
            let first = self.near.pop()?;
            self.clock = self.clock.max(first.at);
            return Some(first);
        }
        let (first, is_start) = self.due(end)?;
        if is_start {
            self.starts.next += 1;
        } else {
            self.remove_first(&first);
        }
        self.clock = self.clock.max(first.at);
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Scheduler {
        /// A scheduler whose wheel is built from the start.
        fn with_wheel() -> Self {
            let mut s = Scheduler::default();
            s.build_wheel();
            s
        }
    }

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

    /// One step of a random workload for [`same_order_as_a_sorted_list`].
    #[derive(Clone, Debug)]
    enum Op {
        /// A request this far from the clock (negative: before it).
        Schedule(i64),
        /// Pop everything due this far after the clock, up to `n` requests.
        Pop { ahead: u64, n: usize },
    }

    /// How far ahead requests are made: the same slot, the wheel's span,
    /// past it (`later`), slot edges, and never.
    fn offset() -> impl proptest::strategy::Strategy<Value = i64> {
        use proptest::prelude::*;
        let slot = SLOT_NANOS as i64;
        let span = (SLOT_NANOS * SLOTS) as i64;
        prop_oneof![
            Just(0i64),
            0..slot,
            -slot..0,
            0..span,
            span - 2 * slot..span + 2 * slot,
            span..40 * span,
            (0..8i64).prop_map(move |k| k * slot),
            (1..8i64).prop_map(move |k| k * span),
            Just(i64::MAX),
        ]
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            3 => offset().prop_map(Op::Schedule),
            1 => (prop_oneof![Just(0u64), 0..SLOT_NANOS, 0..SLOT_NANOS * SLOTS * 4, Just(u64::MAX)], 1..20usize)
                .prop_map(|(ahead, n)| Op::Pop { ahead, n }),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// Whatever the requests, the wheel hands them out in the order of a
        /// list sorted by (time, sequence number): the order the single heap
        /// it replaced gave, so every run's outputs stay the same. Fails
        /// when a slot's requests are not sorted as it is entered, or when
        /// `later` moves a request into the wheel one slot too early.
        #[test]
        fn same_order_as_a_sorted_list(ops in proptest::collection::vec(op(), 1..400), wheel_first in proptest::bool::ANY) {
            // The wheel built from the start, or from the heap once it
            // holds HEAP_LIMIT requests (a list of 400 operations often
            // gets there, at any point of the run).
            let mut s = if wheel_first { Scheduler::with_wheel() } else { Scheduler::default() };
            let mut expected = std::collections::BTreeMap::new();
            let mut now = 0u64;
            for op in ops {
                match op {
                    Op::Schedule(offset) => {
                        let at = Instant::from_nanos(now.saturating_add_signed(offset));
                        let seq = s.schedule(at, Wake::States);
                        expected.insert((at, seq), ());
                    }
                    Op::Pop { ahead, n } => {
                        let end = Instant::from_nanos(now.saturating_add(ahead));
                        for _ in 0..n {
                            let want = expected.first_key_value().map(|(k, _)| *k).filter(|k| k.0 <= end);
                            proptest::prop_assert_eq!(s.has_due(end), want.is_some());
                            let got = s.pop_until(end).map(|r| r.key());
                            proptest::prop_assert_eq!(got, want);
                            let Some(k) = want else { break };
                            expected.remove(&k);
                            now = now.max(k.0.as_nanos());
                        }
                    }
                }
            }
            let rest: Vec<_> = std::iter::from_fn(|| s.pop_until(Instant::FAR_FUTURE).map(|r| r.key())).collect();
            proptest::prop_assert_eq!(rest, expected.into_keys().collect::<Vec<_>>());
        }
    }

    /// The heap hands its requests to the wheel when it reaches
    /// `HEAP_LIMIT`, in the middle of a run, and the order stays the
    /// sorted list's. Fails if a request of the clock's slot is put in the
    /// wheel (it would come out a whole span late) or if the switch loses one.
    #[test]
    fn the_switch_to_the_wheel_keeps_the_order() {
        let mut s = Scheduler::default();
        let mut expected = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        let mut next = |range: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % range
        };
        let mut now = 0u64;
        let mut popped = Vec::new();
        for round in 0..6 {
            for _ in 0..80 {
                // Mostly within a few slots, some past the span.
                let ahead = if next(10) == 0 { next(3 * SLOT_NANOS * SLOTS) } else { next(4 * SLOT_NANOS) };
                let at = Instant::from_nanos(now + ahead);
                let seq = s.schedule(at, Wake::States);
                expected.insert((at, seq));
            }
            assert_eq!(s.wheeled, round >= 2, "built once 128 are pending (round {round})");
            for _ in 0..40 {
                let r = s.pop_until(Instant::FAR_FUTURE).expect("pending");
                now = r.at.as_nanos();
                popped.push(r.key());
            }
        }
        popped.extend(std::iter::from_fn(|| s.pop_until(Instant::FAR_FUTURE).map(|r| r.key())));
        assert_eq!(popped, expected.into_iter().collect::<Vec<_>>());
    }

    /// A request past the wheel's span waits in `later`, joins the wheel
    /// when the span reaches it, and comes out in its place among requests
    /// made later for the same instant and the instants around it.
    #[test]
    fn a_request_past_the_span_keeps_its_place() {
        let mut s = Scheduler::with_wheel();
        let span = SLOT_NANOS * SLOTS;
        let far = Instant::from_nanos(3 * span + 5);
        s.schedule(far, Wake::States); // seq 0, in `later`
        s.schedule(Instant::from_nanos(5 * span / 2), Wake::States); // seq 1, in `later`
        assert!(s.wheel.occupied.iter().all(|&w| w == 0) && s.later.len() == 2);
        assert_eq!(s.pop_until(Instant::FAR_FUTURE).map(|r| r.seq), Some(1));
        // The clock is half a span before `far`: it went into the wheel.
        assert!(s.later.is_empty());
        s.schedule(far, Wake::States); // seq 2, the same instant, made after it
        s.schedule(Instant::from_nanos(3 * span + 4), Wake::States); // seq 3, 1 ns before
        let order: Vec<u64> = std::iter::from_fn(|| s.pop_until(Instant::FAR_FUTURE)).map(|r| r.seq).collect();
        assert_eq!(order, vec![3, 0, 2]);
    }
}
