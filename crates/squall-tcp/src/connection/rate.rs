//! Delivery-rate estimation as Linux runs it (net/ipv4/tcp_rate.c;
//! draft-cheng-iccrg-delivery-rate-estimation §3): every transmission
//! snapshots the connection's delivery state, and every ACK turns the
//! snapshot of the most recently sent segment it delivered into a rate
//! sample, delivered packets over max(send interval, ACK interval).
//!
//! Counts are in packets (segments), as Linux's `tp->delivered` and
//! `tp->lost`. The calls, in the order Linux makes them:
//!
//! - [`DeliveryRate::on_send`] for every (re)transmission
//!   (`tcp_rate_skb_sent`);
//! - [`DeliveryRate::on_delivered`] for each segment an ACK newly
//!   acknowledges or SACKs (`tcp_rate_skb_delivered`);
//! - [`DeliveryRate::generate`] once per ACK (`tcp_rate_gen`);
//! - [`DeliveryRate::check_app_limited`] when the application writes
//!   (`tcp_rate_check_app_limited`).

use squall_link::{Duration, Instant};

use crate::congestion::DeliveryRateSample;

/// The delivery state when a segment was sent (Linux's `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxState {
    /// `tp->delivered` then.
    pub delivered: u64,
    /// `tp->delivered_mstamp` then; `None` once the segment was SACKed
    /// (it gives no second sample when cumulatively acknowledged).
    pub delivered_time: Option<Instant>,
    /// `tp->first_tx_mstamp` then: the send time of the segment that
    /// started the current send interval.
    pub first_tx_time: Instant,
    /// Sent while the connection was application-limited.
    pub app_limited: bool,
}

/// The sample being built from the segments one ACK delivered.
#[derive(Clone, Copy, Debug)]
struct Pending {
    prior_delivered: u64,
    prior_time: Instant,
    send_interval: Duration,
    is_app_limited: bool,
    /// Send time and end sequence number of the segment the sample comes
    /// from (the most recently sent one delivered).
    sent_at: Instant,
    end_seq: u64,
}

/// The connection's delivery-rate state.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeliveryRate {
    /// Packets delivered (acknowledged or SACKed), each once.
    pub delivered: u64,
    /// When `delivered` last grew (`tp->delivered_mstamp`).
    pub delivered_time: Option<Instant>,
    /// Packets marked lost (`tp->lost`).
    pub lost: u64,
    /// Send time of the segment that starts the send interval of the
    /// next sample (`tp->first_tx_mstamp`).
    first_tx_time: Option<Instant>,
    /// Non-zero while application-limited: the `delivered` count past
    /// which the bubble has left the network (`tp->app_limited`).
    app_limited: u64,
    /// The smallest RTT seen (`tcp_min_rtt`; Linux windows it over
    /// 300 s, longer than any run here).
    pub min_rtt: Option<Duration>,
    pending: Option<Pending>,
    /// Packets delivered by the ACK being processed.
    acked_sacked: u64,
    /// The RTT sample of the ACK being processed (Linux's `rs->rtt_us`).
    pub ack_rtt: Option<Duration>,
}

impl DeliveryRate {
    /// An RTT sample was taken (the handshake's too).
    pub fn on_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// A segment leaves at `now`; `nothing_outstanding` when no packet was
    /// outstanding before it (`!tp->packets_out`), which starts a fresh
    /// interval. Returns the snapshot to keep with the segment.
    pub fn on_send(&mut self, now: Instant, nothing_outstanding: bool) -> TxState {
        if nothing_outstanding {
            self.first_tx_time = Some(now);
            self.delivered_time = Some(now);
        }
        TxState {
            delivered: self.delivered,
            delivered_time: Some(self.delivered_time.unwrap_or(now)),
            first_tx_time: self.first_tx_time.unwrap_or(now),
            app_limited: self.app_limited != 0,
        }
    }

    /// The segment sent at `sent_at` with snapshot `tx`, ending at
    /// `end_seq`, is newly delivered by the ACK being processed; `sacked`
    /// when by a SACK block (the snapshot is then spent). The sample
    /// follows the most recently sent segment delivered, ties broken by
    /// the higher sequence (`tcp_skb_sent_after`).
    pub fn on_delivered(&mut self, tx: &mut TxState, sent_at: Instant, end_seq: u64, sacked: bool) {
        self.acked_sacked += 1;
        let Some(delivered_time) = tx.delivered_time else { return };
        let newer = match (self.pending, self.first_tx_time) {
            (None, _) | (_, None) => true,
            (Some(p), Some(first)) => sent_at > first || (sent_at == first && end_seq > p.end_seq),
        };
        if newer {
            self.pending = Some(Pending {
                prior_delivered: tx.delivered,
                prior_time: delivered_time,
                send_interval: sent_at.saturating_since(tx.first_tx_time),
                is_app_limited: tx.app_limited,
                sent_at,
                end_seq,
            });
            self.first_tx_time = Some(sent_at);
        }
        if sacked {
            tx.delivered_time = None;
        }
    }

    /// Ends the ACK at `now`: `lost` packets newly marked lost by it.
    /// Returns the packets it delivered and the rate sample, if valid
    /// (`tcp_rate_gen`: none without a delivered segment's snapshot, or
    /// when the interval is shorter than the minimum RTT, which only ACK
    /// compression or a stretched ACK can make).
    pub fn generate(&mut self, now: Instant, lost: u64) -> (u64, Option<DeliveryRateSample>) {
        let acked_sacked = std::mem::take(&mut self.acked_sacked);
        self.delivered += acked_sacked;
        self.lost += lost;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if acked_sacked > 0 {
            self.delivered_time = Some(now);
        }
        let Some(p) = self.pending.take() else { return (acked_sacked, None) };
        let ack_interval = now.saturating_since(p.prior_time);
        let interval = p.send_interval.max(ack_interval);
        if self.min_rtt.is_some_and(|m| interval < m) || interval.is_zero() {
            return (acked_sacked, None);
        }
        let _ = p.sent_at;
        let sample = DeliveryRateSample {
            prior_delivered: p.prior_delivered,
            delivered: self.delivered - p.prior_delivered,
            interval,
            is_app_limited: p.is_app_limited,
        };
        (acked_sacked, Some(sample))
    }

    /// The application wrote: if less than a segment is waiting to be
    /// sent, the window is not full and every lost packet was
    /// retransmitted, the connection is application-limited until the
    /// packets now in flight are delivered (`tcp_rate_check_app_limited`).
    pub fn check_app_limited(&mut self, unsent_below_mss: bool, in_flight: u64, cwnd: u64, lost_unrepaired: bool) {
        if unsent_below_mss && in_flight < cwnd && !lost_unrepaired {
            self.app_limited = (self.delivered + in_flight).max(1);
        }
    }

    /// Marks the connection application-limited as BBR's PROBE_RTT does
    /// (`tp->app_limited = delivered + in flight`).
    pub fn set_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    /// Whether samples are being marked application-limited.
    #[cfg(test)]
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    /// Four segments sent 1 ms apart from an idle start, ACKed one by one
    /// 100 ms after each was sent. By hand (tcp_rate.c): the ACK of the
    /// segment sent at 3 ms (delivered then 0, first_tx 0 ms) delivers
    /// 4 packets; its send interval is 3 − 0 = 3 ms, its ACK interval
    /// 103 ms − 0 ms (delivered_mstamp at the idle start) = 103 ms, so the
    /// sample is 4 packets over 103 ms.
    #[test]
    fn a_flight_from_idle_gives_delivered_over_the_ack_interval() {
        let mut r = DeliveryRate::default();
        let mut tx: Vec<TxState> = (0..4).map(|i| r.on_send(at(i), i == 0)).collect();
        let mut last = None;
        for (i, t) in tx.iter_mut().enumerate() {
            let i = i as u64;
            r.on_delivered(t, at(i), (i + 1) * 1000, false);
            last = r.generate(at(100 + i), 0).1;
        }
        let s = last.expect("a valid sample");
        assert_eq!(s.delivered, 4);
        assert_eq!(s.prior_delivered, 0);
        assert_eq!(s.interval, Duration::from_millis(103));
        assert!(!s.is_app_limited);
        assert_eq!(r.delivered, 4);
    }

    /// The send interval wins when the sender was slower than the ACKs:
    /// segments sent at 0 and 50 ms, both ACKed by one ACK at 60 ms. By
    /// hand: the sample follows the segment sent at 50 ms, whose snapshot
    /// has delivered 0, first_tx 0, delivered_mstamp 0; send interval
    /// 50 ms, ACK interval 60 ms → 2 packets over 60 ms. Then a third
    /// segment sent at 70 ms (first_tx now 50 ms, delivered 2 at 60 ms),
    /// ACKed at 72 ms: send 20 ms, ACK 12 ms → 1 packet over 20 ms, which
    /// is below a min RTT of 30 ms: no sample.
    #[test]
    fn interval_is_the_larger_of_send_and_ack_intervals_and_at_least_min_rtt() {
        let mut r = DeliveryRate::default();
        r.on_rtt(Duration::from_millis(10));
        let mut a = r.on_send(at(0), true);
        let mut b = r.on_send(at(50), false);
        r.on_delivered(&mut a, at(0), 1000, false);
        r.on_delivered(&mut b, at(50), 2000, false);
        let (acked, s) = r.generate(at(60), 0);
        assert_eq!(acked, 2);
        let s = s.expect("sample");
        assert_eq!((s.delivered, s.interval), (2, Duration::from_millis(60)));
        // Not idle: the interval goes on from the last segment delivered.
        let mut r2 = r.clone();
        r2.min_rtt = Some(Duration::from_millis(30));
        let mut c = r.on_send(at(70), true);
        assert_eq!(c.first_tx_time, at(70));
        let mut c2 = r2.on_send(at(70), false);
        assert_eq!(c2.first_tx_time, at(50));
        assert_eq!(c2.delivered_time, Some(at(60)));
        r2.on_delivered(&mut c2, at(70), 3000, false);
        assert_eq!(r2.generate(at(72), 0), (1, None));
        r.on_delivered(&mut c, at(70), 3000, false);
        assert!(r.generate(at(90), 0).1.is_some());
    }

    /// A SACKed segment gives its sample once: when the cumulative ACK
    /// later covers it, it is delivered (counted) but gives no sample.
    #[test]
    fn a_sacked_segment_gives_no_second_sample() {
        let mut r = DeliveryRate::default();
        let mut a = r.on_send(at(0), true);
        let mut b = r.on_send(at(1), false);
        r.on_delivered(&mut b, at(1), 2000, true);
        assert!(r.generate(at(100), 0).1.is_some());
        // Now the hole is repaired: a is delivered; b's snapshot is spent.
        r.on_delivered(&mut a, at(0), 1000, false);
        let (acked, s) = r.generate(at(200), 1);
        assert_eq!(acked, 1);
        let s = s.expect("a's sample");
        assert_eq!(s.delivered, 2);
        assert_eq!(r.lost, 1);
        assert_eq!(b.delivered_time, None);
    }

    /// Application-limited marking: with 3 packets in flight and 5
    /// delivered, the mark is 8; samples of segments sent meanwhile are
    /// app-limited, and the mark clears once delivered passes 8.
    #[test]
    fn app_limited_lasts_until_the_bubble_is_delivered() {
        let mut r = DeliveryRate { delivered: 5, ..DeliveryRate::default() };
        r.check_app_limited(true, 3, 10, false);
        assert!(r.is_app_limited());
        let mut t = r.on_send(at(0), true);
        assert!(t.app_limited);
        r.on_delivered(&mut t, at(0), 1000, false);
        let s = r.generate(at(50), 0).1.expect("sample");
        assert!(s.is_app_limited);
        assert!(r.is_app_limited(), "6 delivered, mark 8");
        r.acked_sacked = 3;
        r.generate(at(60), 0);
        assert!(!r.is_app_limited(), "9 delivered > 8");
        // A full window, or lost data not yet repaired, is not app-limited.
        let mut q = DeliveryRate::default();
        q.check_app_limited(true, 10, 10, false);
        q.check_app_limited(true, 3, 10, true);
        q.check_app_limited(false, 3, 10, false);
        assert!(!q.is_app_limited());
    }
}
