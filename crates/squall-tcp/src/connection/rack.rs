//! RACK, the time-based half of RACK-TLP (RFC 8985 §6), as Linux runs it
//! (net/ipv4/tcp_recovery.c `tcp_rack_advance`, `tcp_rack_reo_wnd`,
//! `tcp_rack_detect_loss`, `tcp_rack_mark_lost`). The tail loss probe
//! (§7) lives in the connection, beside the retransmission timer.
//!
//! RACK remembers the most recently *sent* segment that was delivered
//! (acknowledged or SACKed) and the RTT it took. A segment still
//! outstanding that was sent before it is lost once RACK.rtt plus a
//! reordering window has passed since its own transmission; until then
//! the reordering timer waits for the earliest such moment.

use squall_link::{Duration, Instant};

use super::RtxQueue;

/// Linux's `TCP_TIMEOUT_MIN`: two jiffies added to the reordering timer.
pub(super) const TIMEOUT_MIN: Duration = Duration::from_millis(2);

#[derive(Clone, Debug, Default)]
pub(super) struct Rack {
    /// Send time and end of the most recently sent segment delivered
    /// (RACK.xmit_ts, RACK.end_seq).
    xmit_ts: Option<Instant>,
    end_seq: u64,
    /// RTT of the latest delivered segment (RACK.rtt).
    rtt: Duration,
    /// The smallest RTT seen (Linux keeps a windowed minimum over 300 s;
    /// the model keeps the minimum of the connection).
    min_rtt: Option<Duration>,
}

impl Rack {
    /// A segment sent at `sent_at` and ending at `end` was delivered at
    /// `now` (`tcp_rack_advance`): a retransmitted one whose RTT would be
    /// below the minimum is ambiguous (the original may have been the one
    /// delivered) and is skipped.
    pub(super) fn on_delivered(&mut self, now: Instant, sent_at: Instant, end: u64, retransmitted: bool) {
        let rtt = now - sent_at;
        if retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rtt = rtt;
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if self.xmit_ts.is_none_or(|t| sent_after(sent_at, end, t, self.end_seq)) {
            self.xmit_ts = Some(sent_at);
            self.end_seq = end;
        }
    }

    /// A segment last sent at `sent_at` went out less than RACK.rtt before
    /// `now` (`tcp_rack_skb_timeout(tp, skb, 0) > 0`): a timeout leaves it
    /// unmarked (`tcp_timeout_mark_lost`).
    pub(super) fn sent_within_rtt(&self, now: Instant, sent_at: Instant) -> bool {
        now - sent_at < self.rtt
    }

    /// RACK.reo_wnd (`tcp_rack_reo_wnd`; RFC 8985 §6.2 step 4): without
    /// reordering seen (the model never sees any: it has no DSACK), zero
    /// during recovery or once `sacked` segments reach the duplicate
    /// threshold, else a quarter of the minimum RTT, at most SRTT.
    pub(super) fn reo_wnd(&self, srtt: Option<Duration>, in_recovery: bool, sacked: u64, dupthresh: u64) -> Duration {
        if in_recovery || sacked >= dupthresh {
            return Duration::ZERO;
        }
        let quarter = Duration::from_nanos(self.min_rtt.unwrap_or(Duration::ZERO).as_nanos() / 4);
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// RFC 8985 §6.2 step 5 (`tcp_rack_detect_loss`): marks lost every
    /// outstanding segment sent before RACK.xmit_ts whose deadline
    /// (sent + RACK.rtt + reo_wnd) has passed. A segment marked lost and not
    /// retransmitted since is skipped; a lost retransmission is marked
    /// again. Returns the bytes newly marked lost and, if some segments
    /// are not due yet, how long until the last of them is.
    ///
    /// Linux walks its list of segments in the order they were last sent
    /// and stops at the first one sent after RACK.xmit_ts. The model's
    /// queue is in sequence order, in which first transmissions are
    /// sent in time order and a segment is last sent no earlier than
    /// first: once a segment was first sent after RACK.xmit_ts, so was
    /// every segment after it, last transmission included, and the walk
    /// stops there too.
    pub(super) fn detect_loss(&self, now: Instant, sent: &mut RtxQueue, reo_wnd: Duration) -> (u64, Option<Duration>) {
        self.walk(now, sent, reo_wnd, true)
    }

    /// The walk of [`Self::detect_loss`]; `stop_early` stops it at the
    /// first segment first sent after RACK.xmit_ts (without it, the walk
    /// over the whole queue that the property test `rtx_counts` compares
    /// with).
    #[inline]
    fn walk(&self, now: Instant, sent: &mut RtxQueue, reo_wnd: Duration, stop_early: bool) -> (u64, Option<Duration>) {
        let Some(xmit_ts) = self.xmit_ts else { return (0, None) };
        let (mut lost, mut wait) = (0, None::<Duration>);
        for i in 0..sent.len() {
            let s = &sent[i];
            if stop_early && !sent_after(xmit_ts, self.end_seq, s.first_sent, s.end) {
                break;
            }
            if s.sacked || s.syn || (s.lost && !s.rack_rtx) {
                continue;
            }
            if !sent_after(xmit_ts, self.end_seq, s.last_sent, s.end) {
                continue;
            }
            let deadline = s.last_sent + self.rtt + reo_wnd;
            if deadline <= now {
                lost += s.end - s.start;
                sent.update(i, |s| {
                    s.lost = true;
                    s.rack_rtx = false;
                });
            } else {
                let left = deadline - now;
                wait = Some(wait.map_or(left, |w| w.max(left)));
            }
        }
        (lost, wait)
    }

    /// The walk over the whole queue that `detect_loss` stops early, kept as
    /// its reference (the property test `rtx_counts` compares them).
    #[cfg(test)]
    pub(super) fn detect_loss_scan(
        &self,
        now: Instant,
        sent: &mut RtxQueue,
        reo_wnd: Duration,
    ) -> (u64, Option<Duration>) {
        self.walk(now, sent, reo_wnd, false)
    }
}

/// RACK's order of transmissions: later, or at the same time with a higher
/// end (`tcp_rack_sent_after`).
fn sent_after(t1: Instant, seq1: u64, t2: Instant, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}
