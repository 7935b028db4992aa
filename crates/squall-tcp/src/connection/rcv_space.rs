//! Linux's receive-window growth (net/ipv4/tcp_input.c `tcp_grow_window`,
//! `tcp_rcv_space_adjust`, `tcp_rcv_rtt_measure_ts`; tcp_output.c
//! `__tcp_select_window`), for the `linux` profile's receiver.
//!
//! Linux does not offer its whole buffer at once. The offered window is at
//! most `rcv_ssthresh`, which starts at 64 KiB and grows by at least two
//! segments per segment received while there is room below the window
//! clamp; each such growth puts the receiver in quick-ACK mode for that
//! segment (`icsk_ack.quick |= 1`), so a receiver whose window is growing
//! ACKs every segment instead of every second one. The clamp follows the
//! data delivered per receiver RTT (dynamic right-sizing: twice what
//! arrived in the last RTT plus 16 segments, more while that grows), up to
//! the receive buffer. What matters for goodput: in slow start, and
//! whenever the sender's rate beats its previous best, the sender sees
//! twice the ACKs (smaller bursts, HyStart's ACK trains); once the clamp
//! stops growing the receiver goes back to delayed ACKs.

use squall_link::{Duration, Instant};

/// `rcv_ssthresh` and the window clamp at the start: what Linux 6.x
/// offers with `tcp_rmem[1]` = 128 KiB (half of it for the window).
pub const INITIAL_WINDOW: u64 = 64 << 10;
/// Segments shorter than this do not grow the window (`tcp_event_data_recv`).
const MIN_GROWING_SEGMENT: u32 = 128;
/// The cushion of dynamic right-sizing, segments (`16 * tp->advmss`).
const DRS_CUSHION_SEGMENTS: u64 = 16;
/// The initial measure of data per RTT, segments (`TCP_INIT_CWND`).
const INITIAL_SPACE_SEGMENTS: u64 = 10;

#[derive(Clone, Debug, PartialEq)]
pub struct ReceiveSpace {
    /// Most the offered window may be, bytes (`rcv_ssthresh`).
    rcv_ssthresh: u64,
    /// What `rcv_ssthresh` may grow to, bytes (`window_clamp`).
    window_clamp: u64,
    /// The receive buffer: the largest clamp, bytes (`tcp_rmem[2]`'s window).
    limit: u64,
    /// Most bytes delivered in one receiver RTT so far (`rcvq_space.space`),
    /// and where and when the current measurement began (`rcvq_space.seq`,
    /// `rcvq_space.time`).
    space: u64,
    mark_seq: u64,
    mark_time: Instant,
    /// The receiver's RTT estimate from timestamp echoes (`rcv_rtt_est`),
    /// and the last echo used (`rcv_rtt_last_tsecr`).
    rcv_rtt: Option<Duration>,
    last_echo: u32,
}

impl ReceiveSpace {
    /// A receiver with a buffer of `limit` bytes whose data starts at
    /// `rcv_nxt` (`tcp_init_buffer_space`), receiving segments of `mss`.
    pub fn new(now: Instant, limit: u64, rcv_nxt: u64, mss: u32) -> Self {
        let initial = INITIAL_WINDOW.min(limit);
        ReceiveSpace {
            rcv_ssthresh: initial,
            window_clamp: initial,
            limit,
            space: (INITIAL_SPACE_SEGMENTS * mss as u64).min(initial),
            mark_seq: rcv_nxt,
            mark_time: now,
            rcv_rtt: None,
            last_echo: 0,
        }
    }

    /// The most the receiver may offer now, bytes.
    pub fn window_cap(&self) -> u64 {
        self.rcv_ssthresh
    }

    /// The receiver's RTT estimate, once it has one.
    pub fn rcv_rtt(&self) -> Option<Duration> {
        self.rcv_rtt
    }

    /// `tcp_rcv_rtt_measure_ts`: a full-sized segment echoing a timestamp
    /// not used before gives an RTT sample `now − echo`; the estimate takes
    /// a smaller sample at once and moves 1/8 of the way to a larger one
    /// (`tcp_rcv_rtt_update` with `win_dep` 0, Linux 6.16 and later).
    pub fn on_timestamp_echo(&mut self, now_ms: u32, echo: u32, full_sized: bool) {
        if echo == 0 || echo == self.last_echo {
            return;
        }
        self.last_echo = echo;
        if !full_sized {
            return;
        }
        let delta = now_ms.wrapping_sub(echo) as i32;
        if delta <= 0 {
            return;
        }
        let sample = Duration::from_millis(delta as u64);
        // `tcp_rcv_rtt_update` since Linux 6.16 (commit b879dcb1aeec, "tcp:
        // always seek minimum rtt in tcp_rcv_rtt_update()"): a smaller
        // sample is taken at once, a larger one weighs an eighth. With the
        // average alone a queue that builds in slow start inflated the
        // estimate, so the window clamp rose later in each round and the
        // receiver went back to delayed ACKs at each round's start.
        self.rcv_rtt = Some(match self.rcv_rtt {
            Some(est) if sample >= est => {
                Duration::from_nanos(est.as_nanos() - est.as_nanos() / 8 + sample.as_nanos() / 8)
            }
            _ => sample,
        });
    }

    /// `tcp_rcv_space_adjust`, with the data delivered in order standing
    /// for what the application copied: once per receiver RTT, a new best
    /// of data per RTT raises the clamp to twice it plus 16 segments, plus
    /// twice that times its relative growth (the sender may be in slow
    /// start), at most the buffer.
    pub fn on_delivered(&mut self, now: Instant, rcv_nxt: u64, mss: u32) {
        let Some(rtt) = self.rcv_rtt else { return };
        if now - self.mark_time < rtt {
            return;
        }
        let copied = rcv_nxt - self.mark_seq;
        if copied > self.space {
            let mut rcvwin = 2 * copied + DRS_CUSHION_SEGMENTS * mss as u64;
            let grow = rcvwin * (copied - self.space) / self.space.max(1);
            rcvwin += 2 * grow;
            self.window_clamp = self.window_clamp.max(rcvwin.min(self.limit));
            self.space = copied;
        }
        self.mark_seq = rcv_nxt;
        self.mark_time = now;
    }

    /// `tcp_grow_window`: a segment of `len` bytes grows `rcv_ssthresh` by
    /// max(2 segments, 2·len) up to the clamp and the free buffer `free`.
    /// Returns true when it grew: that segment is ACKed at once.
    pub fn on_segment(&mut self, len: u32, mss: u32, free: u64) -> bool {
        if len < MIN_GROWING_SEGMENT {
            return false;
        }
        let room = self.window_clamp.min(free).saturating_sub(self.rcv_ssthresh);
        if room == 0 {
            return false;
        }
        let incr = (2 * mss as u64).max(2 * len as u64);
        self.rcv_ssthresh += room.min(incr);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn window_grows_two_segments_per_segment_up_to_the_clamp() {
        let t0 = Instant::ZERO;
        let mut s = ReceiveSpace::new(t0, 3 << 20, 0, MSS);
        // At the start the clamp is the initial 64 KiB: no room, no growth.
        assert!(!s.on_segment(MSS, MSS, 3 << 20));
        // RTT 100 ms from echoes; 20 segments arrive in the first RTT, more
        // than the initial 10: clamp = 2·20 + 16 = 56 segments, plus twice
        // 56·(20 − 10)/10: 168 segments.
        s.on_timestamp_echo(101, 1, true);
        assert_eq!(s.rcv_rtt, Some(ms(100)));
        s.on_delivered(t0 + ms(100), 20 * MSS as u64, MSS);
        assert_eq!(s.window_clamp, 168 * MSS as u64);
        // Each segment now grows rcv_ssthresh by 2 segments (and is
        // ACKed at once) until it reaches the clamp: (168·1448 − 65536)/2896
        // = 61.4 → 62 segments.
        let grew = (0..100).take_while(|_| s.on_segment(MSS, MSS, 3 << 20)).count();
        assert_eq!(grew, 62);
        assert_eq!(s.window_cap(), 168 * MSS as u64);
        // The same data per RTT again: no new clamp, no quick ACKs.
        s.on_delivered(t0 + ms(200), 40 * MSS as u64, MSS);
        assert_eq!(s.window_clamp, 168 * MSS as u64);
        assert!(!s.on_segment(MSS, MSS, 3 << 20));
    }

    #[test]
    fn receiver_rtt_latches_a_smaller_echo_and_averages_a_larger_one() {
        let mut s = ReceiveSpace::new(Instant::ZERO, 3 << 20, 0, MSS);
        s.on_timestamp_echo(201, 101, true);
        s.on_timestamp_echo(400, 200, true);
        // 100 ms, then 7/8·100 + 1/8·200 = 112.5 ms.
        assert_eq!(s.rcv_rtt, Some(Duration::from_micros(112_500)));
        // The same echo twice, or a short segment, gives no sample.
        s.on_timestamp_echo(900, 200, true);
        s.on_timestamp_echo(900, 300, false);
        assert_eq!(s.rcv_rtt, Some(Duration::from_micros(112_500)));
        // A smaller sample is the estimate at once (Linux 6.16's
        // `tcp_rcv_rtt_update`), not 7/8·112.5 + 1/8·105 = 111.56 ms.
        s.on_timestamp_echo(1005, 900, true);
        assert_eq!(s.rcv_rtt, Some(ms(105)));
    }
}
