//! Linux's receive-window growth (net/ipv4/tcp_input.c `tcp_grow_window`,
//! `tcp_measure_rcv_mss`, `tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`,
//! `tcp_rcv_rtt_measure_ts`; tcp_output.c `__tcp_select_window`), for the
//! `linux` profile's receiver.
//!
//! Linux does not offer its whole buffer at once. The offered window is at
//! most `rcv_ssthresh`, which starts at 64 KiB and grows by at least two
//! segments per segment received while there is room below the window
//! clamp; each such growth puts the receiver in quick-ACK mode for that
//! segment (`icsk_ack.quick |= 1`), so a receiver whose window is growing
//! ACKs every segment instead of every second one. The clamp is the
//! receive buffer counted in window bytes: at the first segment the
//! 128 KiB of `tcp_rmem[1]` times the ratio of payload to buffer memory
//! (`scaling_ratio`), about 80 KB for 1448-byte segments, so the window
//! grows over the first six segments. After that the clamp follows the
//! data delivered per receiver RTT (dynamic right-sizing: twice what
//! arrived in the last RTT, plus twice that times its relative growth, as
//! the sender may be in slow start), up to the receive buffer. What
//! matters for goodput: in slow start, and whenever the sender's rate
//! beats its previous best, the sender sees twice the ACKs (smaller
//! bursts, HyStart's ACK trains); once the clamp stops growing the
//! receiver goes back to delayed ACKs.

use squall_link::{Duration, Instant};

/// `rcv_ssthresh` and the window clamp at the start: what Linux 6.x
/// offers with `tcp_rmem[1]` = 128 KiB (half of it for the window).
pub const INITIAL_WINDOW: u64 = 64 << 10;
/// The receive buffer at the start, bytes (`tcp_rmem[1]`).
const INITIAL_RCVBUF: u64 = 128 << 10;
/// Segments shorter than this do not grow the window (`tcp_event_data_recv`).
const MIN_GROWING_SEGMENT: u32 = 128;
/// `TCP_RMEM_TO_WIN_SCALE`: `scaling_ratio` is a fraction of 256.
const RMEM_TO_WIN_SCALE: u32 = 8;
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
    /// `rcv_nxt` (`tcp_init_buffer_space`), at its first data segment, of
    /// `mss` bytes: `tcp_measure_rcv_mss` sets `scaling_ratio` from it and
    /// the clamp becomes the initial buffer in window bytes
    /// (`tcp_win_from_space` of `tcp_rmem[1]`).
    ///
    /// `rcv_ssthresh` starts at `initial`, the window the SYN offered
    /// (`tcp_connect_init`, `tcp_openreq_init_rwin`: `rcv_ssthresh` =
    /// `rcv_wnd`).
    pub fn new(now: Instant, limit: u64, rcv_nxt: u64, mss: u32, initial: u64) -> Self {
        let clamp = ((INITIAL_RCVBUF * scaling_ratio(mss)) >> RMEM_TO_WIN_SCALE).min(limit);
        // A clamp below `rcv_ssthresh` lowers it (`tcp_measure_rcv_mss`).
        let initial = initial.min(clamp);
        ReceiveSpace {
            rcv_ssthresh: initial,
            window_clamp: clamp,
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

    /// The receive buffer in window bytes now (`tcp_full_space`: the
    /// window clamp follows `sk_rcvbuf` in `tcp_rcvbuf_grow`).
    pub fn buffer(&self) -> u64 {
        self.window_clamp
    }

    /// `tcp_rcvbuf_grow` from `tcp_data_queue_ofo` (Linux 6.16 and later):
    /// with data held out of order up to `span` bytes past `rcv_nxt`, the
    /// buffer grows to twice the data per RTT measured so far plus that
    /// span (the measure itself unchanged, so no slow-start term).
    pub fn on_out_of_order(&mut self, span: u64) {
        let rcvwin = 2 * self.space + span;
        self.window_clamp = self.window_clamp.max(rcvwin.min(self.limit));
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

    /// `tcp_rcv_space_adjust` and `tcp_rcvbuf_grow` at the application's
    /// read, with the data delivered in order standing for what it copied:
    /// once per receiver RTT, a new best of data per RTT raises the clamp to
    /// twice it ("DRS is always one RTT late"), plus twice that times its
    /// growth over the previous best (the sender may be in slow start), at
    /// most the buffer. Linux 6.18; before 6.16 the clamp also had a
    /// cushion of 16 segments.
    ///
    /// The read has taken the data up to `read_to` of the `rcv_nxt`
    /// received in order: what is left (`inq`) does not count (Linux 6.16
    /// and later, `copied -= inq`). `ooo_span`: how far past `rcv_nxt`
    /// data is held out of order.
    pub fn on_delivered(&mut self, now: Instant, read_to: u64, rcv_nxt: u64, ooo_span: u64) {
        let Some(rtt) = self.rcv_rtt else { return };
        if now - self.mark_time < rtt {
            return;
        }
        let inq = rcv_nxt.saturating_sub(read_to);
        let copied = (read_to - self.mark_seq).saturating_sub(inq);
        if copied > self.space {
            let old = self.space.max(1);
            let mut rcvwin = 2 * copied;
            rcvwin += 2 * (rcvwin * (copied - old) / old);
            // Room for what is held out of order (`ooo_last_skb`).
            rcvwin += ooo_span;
            self.window_clamp = self.window_clamp.max(rcvwin.min(self.limit));
            self.space = copied;
        }
        self.mark_seq = read_to;
        self.mark_time = now;
    }

    /// `tcp_grow_window`: a segment of `len` bytes, now queued with the
    /// rest of the `unread` bytes, grows `rcv_ssthresh` by max(2 segments,
    /// 2·len) up to the clamp less what is queued (`tcp_space`: the
    /// buffer's free memory, in window bytes) and the free buffer `free`.
    /// Returns true when it grew: that segment is ACKed at once.
    pub fn on_segment(&mut self, len: u32, mss: u32, unread: u64, free: u64) -> bool {
        if len < MIN_GROWING_SEGMENT {
            return false;
        }
        let room = self.window_clamp.saturating_sub(unread).min(free).saturating_sub(self.rcv_ssthresh);
        if room == 0 {
            return false;
        }
        let incr = (2 * mss as u64).max(2 * len as u64);
        self.rcv_ssthresh += room.min(incr);
        true
    }
}

/// `scaling_ratio` (`tcp_measure_rcv_mss`): a segment's payload over the
/// memory its buffer takes (`skb->truesize`), in 256ths. The buffer of a
/// full-sized Ethernet segment is a 2 KiB head (payload, headers,
/// `NET_SKB_PAD` and `skb_shared_info`, rounded up to the allocator's
/// power of two) plus the 256 bytes of `struct sk_buff` (`SKB_TRUESIZE`):
/// 2 304 bytes for 1448, a ratio of 160, as Linux 6.18 receiving from a
/// TUN device advertises (a clamp of 80 KiB: 79·1024 with window scale 10
/// once a segment is queued).
fn scaling_ratio(len: u32) -> u64 {
    /// TCP/IP headers with timestamps, `NET_SKB_PAD`, `skb_shared_info`.
    const HEAD_OVERHEAD: u64 = 52 + 64 + 320;
    /// `SKB_DATA_ALIGN(sizeof(struct sk_buff))`.
    const SKB_OVERHEAD: u64 = 256;
    let len = u64::from(len.max(1));
    let truesize = (len + HEAD_OVERHEAD).next_power_of_two() + SKB_OVERHEAD;
    ((len << RMEM_TO_WIN_SCALE) / truesize).max(1)
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
        let limit = 3 << 20;
        let seg = MSS as u64;
        let mut s = ReceiveSpace::new(t0, limit, 0, MSS, INITIAL_WINDOW);
        // The first segment sets the scaling ratio: 1448·256/2304 → 160,
        // the clamp 131072·160/256 = 81 920 B. With that segment queued,
        // rcv_ssthresh grows from 65 536 to 81 920 − 1448 = 80 472:
        // 14 936 B, five steps of 2896 and one of 456.
        assert_eq!(s.window_clamp, 81_920);
        let grew = (0..20).take_while(|_| s.on_segment(MSS, MSS, seg, limit)).count();
        assert_eq!(grew, 6);
        assert_eq!(s.window_cap(), 80_472);
        // RTT 100 ms from echoes; 20 segments (28 960 B) in the first RTT,
        // against the initial 10 (14 480 B): rcvwin = 2·28 960 = 57 920,
        // plus twice 57 920·(28 960 − 14 480)/14 480: 173 760 B.
        s.on_timestamp_echo(101, 1, true);
        assert_eq!(s.rcv_rtt, Some(ms(100)));
        s.on_delivered(t0 + ms(100), 20 * seg, 20 * seg, 0);
        assert_eq!(s.window_clamp, 173_760);
        // Each segment now grows rcv_ssthresh by 2 segments (and is ACKed
        // at once) up to 173 760 − 1448: (172 312 − 80 472)/2896 = 31.7,
        // 32 segments.
        let grew = (0..100).take_while(|_| s.on_segment(MSS, MSS, seg, limit)).count();
        assert_eq!(grew, 32);
        assert_eq!(s.window_cap(), 172_312);
        // The same data per RTT again: no new clamp, no quick ACKs.
        s.on_delivered(t0 + ms(200), 40 * seg, 40 * seg, 0);
        assert_eq!(s.window_clamp, 173_760);
        assert!(!s.on_segment(MSS, MSS, seg, limit));
    }

    #[test]
    fn data_held_out_of_order_grows_the_buffer() {
        // `tcp_rcvbuf_grow` from `tcp_data_queue_ofo`: 2·space + the span
        // held, space still the initial 10·1448 = 14 480: 28 960 + 60 000
        // = 88 960 B over the clamp of 81 920; a span of 40 000 (68 960)
        // leaves it. At a read `tcp_rcv_space_adjust` adds the span too:
        // 20 segments in 100 ms give 152 698 (the test above) + 10 000.
        let mut s = ReceiveSpace::new(Instant::ZERO, 3 << 20, 0, MSS, INITIAL_WINDOW);
        s.on_out_of_order(40_000);
        assert_eq!(s.buffer(), 81_920);
        s.on_out_of_order(60_000);
        assert_eq!(s.buffer(), 88_960);
        let mut s = ReceiveSpace::new(Instant::ZERO, 3 << 20, 0, MSS, INITIAL_WINDOW);
        s.on_timestamp_echo(101, 1, true);
        s.on_delivered(Instant::ZERO + ms(100), 11 * MSS as u64, 11 * MSS as u64, 0);
        s.on_delivered(Instant::ZERO + ms(200), 31 * MSS as u64, 31 * MSS as u64, 10_000);
        assert_eq!(s.buffer(), 152_698 + 10_000);
    }

    #[test]
    fn a_read_that_fills_a_hole_counts_only_its_first_segment() {
        // `tcp_rcv_space_adjust` after the first skb of the read, less what
        // is still queued (Linux 6.16+: `copied -= inq`). RTT 100 ms; at
        // 100 ms 11 segments were read (15 928 B > 14 480: space 15 928,
        // rcvwin 38 226 under the clamp). At 200 ms segment 29 fills a
        // hole and releases 30 more (rcv_nxt 60 segments): after it
        // copied = 19 segments − 30 queued < 0: no growth, and the measure
        // starts again after segment 29. Without `inq` the 19 segments
        // (27 512 B) would make rcvwin 55 024 + 2·⌊55 024·11 584/15 928⌋
        // = 135 058; counting all 49 segments (70 952 B) 141 904 +
        // 2·⌊141 904·55 024/15 928⌋ = 1 122 330 (the model before). At
        // 300 ms, 80 segments read: 50
        // since the mark (72 400 B): 144 800 + 2·⌊144 800·56 472/15 928⌋
        // = 1 171 562.
        let seg = MSS as u64;
        let mut s = ReceiveSpace::new(Instant::ZERO, 3 << 20, 0, MSS, INITIAL_WINDOW);
        s.on_timestamp_echo(101, 1, true);
        s.on_delivered(Instant::ZERO + ms(100), 11 * seg, 11 * seg, 0);
        assert_eq!((s.space, s.buffer()), (15_928, 81_920));
        s.on_delivered(Instant::ZERO + ms(200), 30 * seg, 60 * seg, 0);
        assert_eq!((s.space, s.buffer(), s.mark_seq), (15_928, 81_920, 30 * seg));
        s.on_delivered(Instant::ZERO + ms(300), 80 * seg, 80 * seg, 0);
        assert_eq!(s.buffer(), 1_171_562);
    }

    #[test]
    fn scaling_ratio_is_payload_over_buffer_memory() {
        // 1448 + 436 → a 2 KiB head, + 256: 2304 B; 536 + 436 → 1 KiB, 1280 B.
        assert_eq!(scaling_ratio(1448), 1448 * 256 / 2304);
        assert_eq!(scaling_ratio(1448), 160);
        assert_eq!(scaling_ratio(536), 536 * 256 / 1280);
        // Small segments: a clamp below 64 KiB lowers rcv_ssthresh with it.
        let s = ReceiveSpace::new(Instant::ZERO, 3 << 20, 0, 536, INITIAL_WINDOW);
        assert_eq!(s.window_clamp, 131_072 * 107 / 256);
        assert_eq!(s.window_cap(), s.window_clamp);
    }

    #[test]
    fn receiver_rtt_latches_a_smaller_echo_and_averages_a_larger_one() {
        let mut s = ReceiveSpace::new(Instant::ZERO, 3 << 20, 0, MSS, INITIAL_WINDOW);
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
