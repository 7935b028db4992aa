//! Pacing as Linux's TCP does it without the fq qdisc (net/ipv4/tcp_output.c:
//! `tcp_update_skb_after_send`, `tcp_pacing_check`, the internal pacing
//! hrtimer): each burst (one TSO/GSO packet of up to `burst_segments`
//! segments, `tcp_tso_autosize`) leaves at the earliest departure time
//! (`tcp_wstamp_ns`), which then moves on by the burst's length over the
//! pacing rate. A sender late on its schedule gets up to half a burst's
//! time back (the "credit"), and the first 10 data segments are not paced
//! (`tp->data_segs_out >= 10`). quinn's `connection/pacing.rs` shape: the
//! pacer says when the next packet may leave, it never sleeps.

use squall_link::{Duration, Instant};

/// Segments sent before pacing starts (tcp_update_skb_after_send).
const UNPACED_SEGMENTS: u64 = 10;

/// One burst being filled: its departure time, segments and payload bytes.
#[derive(Clone, Copy, Debug)]
struct Burst {
    at: Instant,
    segments: u32,
    bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Pacer {
    /// Earliest departure time of the next burst (`tcp_wstamp_ns`).
    wstamp: Option<Instant>,
    burst: Option<Burst>,
    /// Data segments sent (`tp->data_segs_out`).
    data_segments: u64,
}

impl Pacer {
    /// When the next segment may leave, if not now: none while a burst
    /// is open (its segments leave together).
    pub fn next_departure(&self, now: Instant) -> Option<Instant> {
        if self.burst.is_some_and(|b| b.at == now) {
            return None;
        }
        self.wstamp.filter(|&t| t > now)
    }

    /// A segment of `len` payload bytes left at `now`, at `rate` bytes
    /// per second, in bursts of `burst_segments`.
    pub fn on_send(&mut self, now: Instant, len: u32, rate: u64, burst_segments: u32) {
        if self.burst.is_some_and(|b| b.at != now) {
            self.close(rate);
        }
        if len > 0 {
            self.data_segments += 1;
        }
        let b = self.burst.get_or_insert(Burst { at: now, segments: 0, bytes: 0 });
        b.segments += 1;
        b.bytes += len as u64;
        if b.segments >= burst_segments.max(1) {
            self.close(rate);
        }
    }

    /// Nothing more to send at `now`: the open burst leaves as it is.
    pub fn flush(&mut self, rate: u64) {
        self.close(rate);
    }

    /// `tcp_update_skb_after_send` for the open burst.
    fn close(&mut self, rate: u64) {
        let Some(b) = self.burst.take() else { return };
        let prior = self.wstamp.unwrap_or(Instant::ZERO);
        let mut w = prior.max(b.at);
        if self.data_segments >= UNPACED_SEGMENTS && rate > 0 {
            let len_ns = (b.bytes as u128 * 1_000_000_000 / rate as u128).min(u64::MAX as u128) as u64;
            let credit = (w - prior).as_nanos();
            w += Duration::from_nanos(len_ns - (len_ns / 2).min(credit));
        }
        self.wstamp = Some(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    /// At 1 000 000 B/s a 2-segment burst of 2 000 bytes takes 2 ms; the
    /// burst that brings the count to 10 segments is the first paced.
    #[test]
    fn bursts_leave_at_the_pacing_rate_after_ten_segments() {
        let mut p = Pacer::default();
        let rate = 1_000_000;
        // Ten segments at 0 ms in bursts of 2: unpaced, all leave at 0.
        for _ in 0..10 {
            assert_eq!(p.next_departure(ms(0)), None);
            p.on_send(ms(0), 1000, rate, 2);
        }
        // The 10th segment's burst closed with data_segments = 10: paced,
        // 2 000 bytes → 2 ms, less a credit of min(1 ms, 0 − 0) = 0.
        assert_eq!(p.next_departure(ms(0)), Some(ms(2)));
        p.on_send(ms(2), 1000, rate, 2);
        assert_eq!(p.next_departure(ms(2)), None, "the burst is open");
        p.on_send(ms(2), 1000, rate, 2);
        assert_eq!(p.next_departure(ms(2)), Some(ms(4)));
        // Late by 3 ms (sent at 7 ms against 4): credit min(1 ms, 3 ms).
        p.on_send(ms(7), 1000, rate, 2);
        p.flush(rate);
        assert_eq!(p.next_departure(ms(7)), Some(Instant::from_micros(7_500)));
    }

    /// The first nine segments are not paced; the tenth, at 1 000 B/s,
    /// holds the next for 1 s less the credit: it left at 9 ms, 1 ms after
    /// the previous departure time (8 ms), so 1 000 − 1 = 999 ms.
    #[test]
    fn the_first_ten_segments_are_not_paced() {
        let mut p = Pacer::default();
        for i in 0..9 {
            p.on_send(ms(i), 1000, 1000, 1);
            assert_eq!(p.next_departure(ms(i)), None, "segment {i}");
        }
        p.on_send(ms(9), 1000, 1000, 1);
        assert_eq!(p.next_departure(ms(9)), Some(ms(1008)));
    }
}
