//! The retransmission queue (Linux's `tcp_rtx_queue`) and the counts
//! Linux keeps beside it so that no ACK has to walk it
//! (include/linux/tcp.h `packets_out`, `sacked_out`, `lost_out`,
//! `retrans_out`; include/net/tcp.h `tcp_left_out`,
//! `tcp_packets_in_flight`).
//!
//! The queue is read as a `VecDeque` (it derefs to one) and changed only
//! through its methods, each of which keeps the counts: a segment's share
//! of them is taken out before a change and put back after it.

use std::collections::VecDeque;
use std::ops::Deref;

use super::Sent;

/// Counts over the segments of a [`RtxQueue`], in segments and in bytes of
/// sequence space (a SYN or a FIN counts one byte).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// Every segment's bytes (`packets_out` is the queue's length).
    bytes: u64,
    /// SACKed segments (`sacked_out`).
    sacked: u64,
    sacked_bytes: u64,
    /// Segments marked lost and not SACKed (`lost_out`).
    lost: u64,
    lost_bytes: u64,
    /// Of those, the ones retransmitted since they were marked (the
    /// model's `rack_rtx`: the part of `retrans_out` that
    /// `tcp_packets_in_flight` adds back for lost segments).
    lost_rtx: u64,
    lost_rtx_bytes: u64,
    /// Bytes of the segments retransmitted, not SACKed and ending at or
    /// below [`RtxQueue::high_rxt`] (RFC 6675 SetPipe's second term).
    rtx_below_high_rxt_bytes: u64,
}

impl Counts {
    /// Adds (`add`) or takes out `s`'s share, `high_rxt` being the
    /// queue's HighRxt.
    #[inline]
    fn tally(&mut self, s: &Sent, high_rxt: u64, add: bool) {
        let len = s.end - s.start;
        let step = |c: &mut u64, n: u64| {
            if add { *c += n } else { *c -= n }
        };
        step(&mut self.bytes, len);
        if s.sacked {
            step(&mut self.sacked, 1);
            step(&mut self.sacked_bytes, len);
            return;
        }
        if s.lost {
            step(&mut self.lost, 1);
            step(&mut self.lost_bytes, len);
            if s.rack_rtx {
                step(&mut self.lost_rtx, 1);
                step(&mut self.lost_rtx_bytes, len);
            }
        }
        if s.retransmitted && s.end <= high_rxt {
            step(&mut self.rtx_below_high_rxt_bytes, len);
        }
    }
}

/// Segments sent and not yet cumulatively acknowledged, in sequence
/// order, with their [`Counts`].
#[derive(Clone, Debug, Default)]
pub(super) struct RtxQueue {
    segments: VecDeque<Sent>,
    counts: Counts,
    /// RFC 6675 HighRxt of the SACK recovery in progress (the connection
    /// moves it with [`Self::set_high_rxt`]); meaningless otherwise.
    high_rxt: u64,
}

impl Deref for RtxQueue {
    type Target = VecDeque<Sent>;
    fn deref(&self) -> &VecDeque<Sent> {
        &self.segments
    }
}

impl RtxQueue {
    /// Appends `s`, sent first no earlier than the last segment (RACK's
    /// walk stops on that order, `Rack::detect_loss`).
    #[inline]
    pub(super) fn push_back(&mut self, s: Sent) {
        debug_assert!(self.segments.back().is_none_or(|b| b.first_sent <= s.first_sent && b.end <= s.start));
        self.counts.tally(&s, self.high_rxt, true);
        self.segments.push_back(s);
    }

    /// Takes the first segment off. Inlined, as is [`Self::push_back`]:
    /// the ACK path takes every segment off here, and out of line (where
    /// rustc left it) each call copied the 96-byte `Sent` through the
    /// stack: some 70 more instructions a segment, which made `squall bench
    /// tcp` 0.7 % more instructions and 2–3 % slower.
    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<Sent> {
        let s = self.segments.pop_front()?;
        self.counts.tally(&s, self.high_rxt, false);
        Some(s)
    }

    /// Changes segment `i` by `change` (which returns what it likes),
    /// keeping the counts.
    pub(super) fn update<R>(&mut self, i: usize, change: impl FnOnce(&mut Sent) -> R) -> R {
        let s = &mut self.segments[i];
        self.counts.tally(s, self.high_rxt, false);
        let out = change(s);
        debug_assert!(s.start < s.end, "a segment keeps some sequence space");
        self.counts.tally(s, self.high_rxt, true);
        debug_assert!(
            (i == 0 || self.segments[i - 1].first_sent <= self.segments[i].first_sent)
                && self.segments.get(i + 1).is_none_or(|n| self.segments[i].first_sent <= n.first_sent),
            "first transmissions stay in sequence order"
        );
        out
    }

    /// Moves HighRxt to `to`: the segments between the old mark and the new
    /// one enter or leave its count.
    pub(super) fn set_high_rxt(&mut self, to: u64) {
        let from = self.high_rxt;
        if from == to {
            return;
        }
        let (low, high) = (from.min(to), from.max(to));
        let first = self.segments.partition_point(|s| s.end <= low);
        let moved: u64 = self
            .segments
            .range(first..)
            .take_while(|s| s.end <= high)
            .filter(|s| s.retransmitted && !s.sacked)
            .map(|s| s.end - s.start)
            .sum();
        if to > from {
            self.counts.rtx_below_high_rxt_bytes += moved;
        } else {
            self.counts.rtx_below_high_rxt_bytes -= moved;
        }
        self.high_rxt = to;
    }

    /// Bytes of sequence space in the queue (SND.MAX − SND.UNA once a
    /// cumulative ACK has been taken).
    pub(super) fn bytes(&self) -> u64 {
        self.counts.bytes
    }

    /// SACKed segments (`sacked_out`).
    pub(super) fn sacked_out(&self) -> u64 {
        self.counts.sacked
    }

    /// Segments marked lost and not SACKed (`lost_out`).
    pub(super) fn lost_out(&self) -> u64 {
        self.counts.lost
    }

    /// Segments marked lost, not SACKed, and retransmitted since (Linux's
    /// `retrans_out` for lost segments).
    pub(super) fn lost_retransmitted(&self) -> u64 {
        self.counts.lost_rtx
    }

    /// Segments marked lost, not SACKed, and not retransmitted since.
    pub(super) fn lost_unrepaired(&self) -> u64 {
        self.counts.lost - self.counts.lost_rtx
    }

    /// Segments neither SACKed nor marked lost.
    pub(super) fn unsacked_unlost(&self) -> u64 {
        self.segments.len() as u64 - self.counts.sacked - self.counts.lost
    }

    /// Linux's `tcp_packets_in_flight` as the model counts it: packets_out
    /// − (sacked_out + lost_out) + the lost segments retransmitted since.
    pub(super) fn packets_in_flight(&self) -> u64 {
        self.unsacked_unlost() + self.counts.lost_rtx
    }

    /// The same in bytes.
    pub(super) fn bytes_in_flight(&self) -> u64 {
        self.unsacked_unlost_bytes() + self.counts.lost_rtx_bytes
    }

    /// RFC 6675 SetPipe with HighRxt at [`Self::high_rxt`]: bytes neither
    /// SACKed nor lost, plus bytes retransmitted below HighRxt.
    pub(super) fn pipe(&self) -> u64 {
        self.unsacked_unlost_bytes() + self.counts.rtx_below_high_rxt_bytes
    }

    pub(super) fn high_rxt(&self) -> u64 {
        self.high_rxt
    }

    fn unsacked_unlost_bytes(&self) -> u64 {
        self.counts.bytes - self.counts.sacked_bytes - self.counts.lost_bytes
    }

    /// The counts taken afresh from every segment (the reference the kept
    /// ones are tested against).
    #[cfg(test)]
    pub(super) fn recount(&self) -> Counts {
        let mut c = Counts::default();
        for s in &self.segments {
            c.tally(s, self.high_rxt, true);
        }
        c
    }

    #[cfg(test)]
    pub(super) fn counts(&self) -> Counts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use squall_link::Instant;

    use super::*;
    use crate::connection::rate::TxState;

    #[derive(Clone, Debug)]
    enum Op {
        /// A segment of this many bytes after the last.
        Push(u64),
        Pop,
        /// The segment at this index (modulo the length) takes these flags:
        /// sacked, lost, rack_rtx, retransmitted.
        Flags(usize, [bool; 4]),
        /// The first segment loses this many bytes from its start (less
        /// than its length).
        Trim(u64),
        /// HighRxt moves to this many bytes past the first segment's start.
        HighRxt(u64),
        /// HighRxt moves to the end of the segment at this index.
        HighRxtAtEnd(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (1u64..3_000).prop_map(Op::Push),
            1 => Just(Op::Pop),
            4 => (any::<usize>(), any::<[bool; 4]>()).prop_map(|(i, f)| Op::Flags(i, f)),
            1 => (1u64..3_000).prop_map(Op::Trim),
            1 => (0u64..40_000).prop_map(Op::HighRxt),
            2 => any::<usize>().prop_map(Op::HighRxtAtEnd),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]
        /// Whatever is pushed, changed, trimmed or taken off, and wherever
        /// HighRxt moves (up or down), the counts kept equal the counts
        /// taken afresh.
        #[test]
        fn kept_counts_equal_a_recount(ops in prop::collection::vec(op(), 1..200)) {
            let mut q = RtxQueue::default();
            let mut next = 1_000u64;
            for op in ops {
                match op {
                    Op::Push(len) => {
                        q.push_back(Sent {
                            start: next,
                            end: next + len,
                            syn: false,
                            fin: false,
                            first_sent: Instant::ZERO,
                            last_sent: Instant::ZERO,
                            retransmitted: false,
                            timer_retransmitted: false,
                            sacked: false,
                            lost: false,
                            rack_rtx: false,
                            delivered: 0,
                            delivered_time: Instant::ZERO,
                            tx: TxState::default(),
                        });
                        next += len;
                    }
                    Op::Pop => {
                        q.pop_front();
                    }
                    Op::Flags(i, [sacked, lost, rack_rtx, retransmitted]) if !q.is_empty() => {
                        q.update(i % q.len(), |s| {
                            (s.sacked, s.lost, s.rack_rtx, s.retransmitted) = (sacked, lost, rack_rtx, retransmitted);
                        });
                    }
                    Op::Trim(by) if !q.is_empty() => {
                        let (start, end) = (q[0].start, q[0].end);
                        q.update(0, |s| s.start = (start + by).min(end - 1));
                    }
                    Op::HighRxt(past) => {
                        let base = q.front().map_or(next, |s| s.start);
                        q.set_high_rxt(base + past);
                    }
                    Op::HighRxtAtEnd(i) if !q.is_empty() => {
                        q.set_high_rxt(q[i % q.len()].end);
                    }
                    Op::Flags(..) | Op::Trim(_) | Op::HighRxtAtEnd(_) => {}
                }
                prop_assert_eq!(q.counts(), q.recount());
            }
        }
    }
}
