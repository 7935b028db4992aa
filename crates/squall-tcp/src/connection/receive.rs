//! Incoming segments (RFC 9293 §3.10.7): the handshake, the acceptability
//! test, data, the receive window, delayed ACKs (RFC 1122 §4.2.3.2,
//! Linux's quick-ACK mode), TIME-WAIT and CLOSED.

use super::*;

impl Connection {
    /// Processes a segment that arrived at `now`.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        self.stats.segments_received += 1;
        match self.state {
            State::Closed => {}
            State::Listen => self.on_segment_listen(now, seg),
            State::SynSent => self.on_segment_syn_sent(now, seg),
            _ => self.on_segment_synchronized(now, seg),
        }
    }

    pub(super) fn on_segment_listen(&mut self, now: Instant, seg: &Segment) {
        if seg.rst() || seg.has_ack() || !seg.syn() {
            return;
        }
        self.take_syn_options(seg);
        self.irs = seg.seq;
        self.rcv_nxt = seg.seq + 1;
        self.rcv_read = self.rcv_nxt;
        self.last_ack_sent = self.rcv_nxt;
        self.snd_wnd = seg.window as u64;
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = seg.seq;
        self.state = State::SynReceived;
        self.queue_syn(now);
        // Data on the SYN is not taken (no TFO).
    }

    pub(super) fn on_segment_syn_sent(&mut self, now: Instant, seg: &Segment) {
        let ack_ok = seg.has_ack() && seg.ack == self.iss + 1;
        if seg.has_ack() && !ack_ok {
            return;
        }
        if seg.rst() {
            if ack_ok {
                self.reset = true;
                self.enter_closed();
            }
            return;
        }
        if !seg.syn() {
            return;
        }
        self.take_syn_options(seg);
        self.irs = seg.seq;
        self.rcv_nxt = seg.seq + 1;
        self.rcv_read = self.rcv_nxt;
        self.snd_wl1 = seg.seq;
        self.snd_wl2 = seg.ack;
        // The window of a SYN is never scaled (RFC 7323 §2.2).
        self.snd_wnd = seg.window as u64;
        self.max_snd_wnd = self.snd_wnd;
        if ack_ok {
            self.ack_syn(now);
            self.state = State::Established;
            self.ack_now = true;
        } else {
            // Simultaneous open.
            self.state = State::SynReceived;
            self.syn_pending = true;
        }
    }

    /// Options of the peer's SYN: MSS, window scale, SACK-permitted.
    pub(super) fn take_syn_options(&mut self, seg: &Segment) {
        let peer_mss = seg.mss.map_or(DEFAULT_MSS, u32::from).max(1);
        self.snd_mss = self.config.mss.min(peer_mss);
        self.rcv_mss = self.snd_mss;
        self.peer_window_scale = seg.window_scale.is_some();
        match (self.config.window_scaling, seg.window_scale) {
            (true, Some(shift)) => {
                self.snd_shift = shift.min(14);
                self.rcv_shift = self.config.window_shift();
            }
            _ => {
                self.snd_shift = 0;
                self.rcv_shift = 0;
                self.rcv_buf = self.rcv_buf.min(65_535);
            }
        }
        self.sack_ok = self.config.sack && seg.sack_permitted;
        // RFC 7323 §3.2: timestamps on every segment once both SYNs carry
        // them; Linux takes their 12 bytes out of the payload
        // (tcp_current_mss).
        self.ts_ok = self.config.timestamps && seg.timestamp.is_some();
        if let Some(ts) = seg.timestamp.filter(|_| self.ts_ok) {
            self.ts_recent = ts.value;
            self.snd_mss = self.snd_mss.saturating_sub(TIMESTAMP_OPTION_LEN).max(1);
            self.rcv_mss = self.snd_mss;
        }
        self.cc = AnyCongestionControl::new(&self.config, self.snd_mss);
    }

    /// Our SYN was acknowledged: take the RTT sample and drop it from the
    /// retransmission queue.
    pub(super) fn ack_syn(&mut self, now: Instant) {
        if let Some(syn) = self.sent.pop_front()
            && !syn.retransmitted
        {
            self.rtt.sample_at(now - syn.first_sent, self.iss + 1, self.iss + 1);
            self.rate.on_rtt(now - syn.first_sent);
            self.stats.rtt_samples += 1;
        }
        self.snd_una = self.iss + 1;
        self.syn_pending = false;
        self.timers.stop(Timer::Rto);
        self.delivered_time = now;
    }

    pub(super) fn on_segment_synchronized(&mut self, now: Instant, seg: &Segment) {
        // A retransmitted SYN while our SYN-ACK is unacknowledged: the
        // SYN-ACK was lost, send it again.
        if self.state == State::SynReceived && seg.syn() && !seg.has_ack() && seg.seq == self.irs {
            self.syn_pending = true;
            return;
        }
        if !self.acceptable(seg) {
            self.on_unacceptable(now, seg);
            return;
        }
        if seg.rst() {
            self.reset = true;
            self.enter_closed();
            return;
        }
        if let Some(ts) = seg.timestamp.filter(|_| self.ts_ok)
            && seg.seq <= self.last_ack_sent
            && ts.value >= self.ts_recent
        {
            // RFC 7323 §4.3: TS.Recent from the segment the next ACK covers.
            self.ts_recent = ts.value;
        }
        if seg.syn() {
            // A SYN in a synchronized state: challenge ACK (RFC 5961 §4).
            self.ack_now = true;
            return;
        }
        if !seg.has_ack() {
            return;
        }
        if self.state == State::SynReceived {
            if seg.ack <= self.iss || seg.ack > self.snd_max {
                return;
            }
            self.ack_syn(now);
            self.state = State::Established;
            self.snd_wnd = (seg.window as u64) << self.snd_shift;
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = seg.ack;
        }
        if !self.on_ack(now, seg) {
            return;
        }
        // Our FIN acknowledged?
        let fin_acked = self.fin_queued && self.snd_una == self.app_end + 1;
        match self.state {
            State::FinWait1 if fin_acked => self.state = State::FinWait2,
            State::Closing if fin_acked => self.enter_time_wait(now),
            State::LastAck if fin_acked => {
                self.enter_closed();
                return;
            }
            _ => {}
        }
        if seg.len > 0 && matches!(self.state, State::Established | State::FinWait1 | State::FinWait2) {
            self.on_data(now, seg);
        }
        if seg.fin() {
            self.fin_at = Some(seg.seq + seg.len as u64);
        }
        self.take_fin_if_due(now);
    }

    /// A segment outside the window (RFC 9293 §3.10.7.4, first check):
    /// answered with an ACK unless it is a reset; a FIN retransmitted
    /// into TIME-WAIT restarts the 2·MSL timer.
    fn on_unacceptable(&mut self, now: Instant, seg: &Segment) {
        if !seg.rst() {
            if seg.len > 0 {
                self.stats.duplicate_segments += 1;
                if self.config.quick_ack {
                    // `tcp_send_dupack`: an old segment (the sender's
                    // RTO) enters quick-ACK mode.
                    self.enter_quickack_mode();
                }
            }
            self.ack_now = true;
        }
        if self.state == State::TimeWait && seg.fin() {
            self.timers.set(Timer::TimeWait, now + self.config.time_wait);
        }
    }

    /// The peer's FIN, once every byte before it has arrived (RFC 9293
    /// §3.10.7.4, eighth check): acknowledged, and the state moves on.
    fn take_fin_if_due(&mut self, now: Instant) {
        if let Some(fin) = self.fin_at
            && !self.fin_received
            && self.rcv_nxt == fin
        {
            self.fin_received = true;
            self.rcv_nxt += 1;
            self.ack_now = true;
            self.ack_scheduled = true;
            match self.state {
                State::Established => self.state = State::CloseWait,
                State::FinWait1 => self.state = State::Closing,
                State::FinWait2 => self.enter_time_wait(now),
                _ => {}
            }
        }
    }

    /// RFC 9293 §3.10.7.4's acceptability test, against the right edge we
    /// advertised.
    pub(super) fn acceptable(&self, seg: &Segment) -> bool {
        let len = seg.seq_len();
        let wnd = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let (start, nxt) = (seg.seq, self.rcv_nxt);
        match (len, wnd) {
            (0, 0) => start == nxt,
            (0, _) => nxt <= start && start < nxt + wnd,
            (_, 0) => false,
            (_, _) => {
                let end = start + len - 1;
                (nxt <= start && start < nxt + wnd) || (nxt <= end && end < nxt + wnd)
            }
        }
    }

    pub(super) fn on_data(&mut self, now: Instant, seg: &Segment) {
        self.stats.data_segments_received += 1;
        self.rcv_mss = self.rcv_mss.max(seg.len);
        self.ack_scheduled = true;
        if self.config.grow_window {
            let (now_ms, full_sized) = (self.ts_clock(now), seg.len >= self.rcv_mss);
            let space = self.rcv_space.get_or_insert_with(|| {
                ReceiveSpace::new(now, self.rcv_buf, self.rcv_nxt, self.rcv_mss, self.syn_window)
            });
            if let Some(ts) = seg.timestamp.filter(|_| self.ts_ok) {
                space.on_timestamp_echo(now_ms, ts.echo, full_sized);
            }
        }
        // Keep what fits in the window we advertised.
        let right = self.rcv_adv.max(self.rcv_nxt);
        let start = seg.seq.max(self.rcv_nxt);
        let end = (seg.seq + seg.len as u64).min(right);
        if end <= start {
            self.stats.duplicate_segments += 1;
            if self.config.quick_ack {
                // `tcp_data_queue`: data wholly received before (or beyond
                // the window) enters quick-ACK mode.
                self.enter_quickack_mode();
            }
            self.ack_now = true;
            return;
        }
        if start == self.rcv_nxt {
            if self.config.quick_ack {
                // `tcp_event_data_recv`, for data in order only.
                self.on_data_timing(now);
            }
            if self.config.ack_pushed && seg.flags.contains(Flags::PSH) && seg.len >= self.rcv_mss {
                // `tcp_measure_rcv_mss`: a full segment with PSH likely
                // ends the sender's write, so the ACK is pushed.
                self.ack_pushed = true;
            }
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt = end;
            self.stats.bytes_received += end - start;
            // Blocks received earlier that now join the in-order data.
            while let Some(b) = self.ooo.first().copied() {
                if b.start > self.rcv_nxt {
                    break;
                }
                if b.end > self.rcv_nxt {
                    self.stats.bytes_received += b.end - self.rcv_nxt;
                    self.rcv_nxt = b.end;
                }
                self.ooo.remove(0);
            }
            self.grow_window(seg.len);
            if had_holes {
                // Filling all or part of a gap: ACK at once (RFC 5681 §4.2,
                // seed 004 §4.2.2).
                self.ack_now = true;
            } else {
                match self.config.delayed_ack {
                    DelayedAck::Off => self.ack_now = true,
                    // Linux's quick-ACK mode: ACK at once.
                    DelayedAck::On(_) if self.quick_acks > 0 => self.ack_now = true,
                    DelayedAck::On(delay) => {
                        // At least every second full-sized segment.
                        if self.rcv_nxt - self.last_ack_sent >= 2 * self.rcv_mss as u64 {
                            self.ack_now = true;
                        } else if !self.timers.is_armed(Timer::DelayedAck) {
                            let wait = if self.config.quick_ack { self.delayed_ack_timeout(delay) } else { delay };
                            self.timers.set(Timer::DelayedAck, now + wait);
                        }
                    }
                }
            }
            // The read takes this segment first: `tcp_recvmsg` runs
            // `tcp_rcv_space_adjust` after each skb it copies.
            self.read_adjust(now, self.ack_now, end);
        } else {
            // Out of order: keep it and ACK (a duplicate ACK), at once or,
            // with SACK compression, soon. Linux 6.x does not enter
            // quick-ACK mode here (`tcp_data_queue_ofo`).
            self.stats.out_of_order_segments += 1;
            if self.compresses_sacks() && self.compressed_acks > 0 && self.sack_rank(start, end) >= SACK_BLOCKS_EXPECTED
            {
                // `tcp_sack_new_ofo_skb`: a block the ACK would not carry
                // among the first two sends the held ACK, as it was.
                self.flushed_ack = Some(self.pure_ack(now));
            }
            // `tcp_data_queue_ofo`: with SACK, `tcp_grow_window` runs before
            // `skb_set_owner_r` charges the segment (without SACK the
            // window does not grow, to force duplicate ACKs); then
            // `tcp_rcvbuf_grow` makes room for what is held.
            if self.sack_ok {
                self.grow_window(seg.len);
            }
            self.insert_ooo(start, end);
            let span = self.ooo_span();
            if let Some(space) = self.rcv_space.as_mut() {
                space.on_out_of_order(span);
            }
            // Nothing new to read: the reader is not woken
            // (`tcp_data_queue_ofo` calls no `tcp_data_ready`), so no
            // `tcp_rcv_space_adjust` ends the measurement here.
            self.ack_out_of_order(now);
        }
    }

    /// SACK compression applies: Linux's delayed-ACK engine with SACK
    /// (`tcp_is_sack`) and delayed ACKs on.
    pub(super) fn compresses_sacks(&self) -> bool {
        self.config.sack_compression && self.sack_ok && matches!(self.config.delayed_ack, DelayedAck::On(_))
    }

    /// Where data `start..end` out of order lands in the ACK's SACK list
    /// (most recently changed block first, RFC 2018 §4): the rank of the
    /// block it extends, or the number of blocks for a new one.
    fn sack_rank(&self, start: u64, end: u64) -> usize {
        match self.ooo.iter().find(|b| b.start <= end && start <= b.end) {
            // Blocks changed more recently come before it.
            Some(b) => self.ooo.iter().filter(|o| o.touched > b.touched).count(),
            None => self.ooo.len(),
        }
    }

    /// `__tcp_ack_snd_check` for data out of order: at once in quick-ACK
    /// mode, with more than a segment in order unacknowledged, without
    /// SACK compression, or when 44 ACKs are held; else the first 3 ACKs
    /// for this `rcv_nxt` at once, and after them one ACK held for
    /// min(1 ms, RTT/20) + 100 µs (`compressed_ack_timer`).
    fn ack_out_of_order(&mut self, now: Instant) {
        if !self.compresses_sacks()
            || self.quick_acks > 0
            || self.rcv_nxt - self.last_ack_sent >= 2 * self.rcv_mss as u64
            || self.compressed_acks >= COMP_SACK_NR
        {
            self.ack_now = true;
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.sack_dupacks = 0;
        }
        if self.sack_dupacks < COMP_SACK_IMMEDIATE {
            self.sack_dupacks += 1;
            self.ack_now = true;
            return;
        }
        self.compressed_acks += 1;
        if !self.timers.is_armed(Timer::CompressedAck) {
            self.timers.set(Timer::CompressedAck, now + self.compressed_ack_delay());
        }
    }

    /// How long a compressed SACK waits: 5 % of the receiver's RTT
    /// estimate (`rcv_rtt_est`, or SRTT when that is smaller; zero before
    /// any), at most 1 ms, plus the timer's slack.
    fn compressed_ack_delay(&self) -> Duration {
        let mut rtt = self.rcv_space.as_ref().and_then(ReceiveSpace::rcv_rtt).unwrap_or(Duration::ZERO);
        if let Some(srtt) = self.rtt.srtt()
            && !srtt.is_zero()
            && srtt < rtt
        {
            rtt = srtt;
        }
        COMP_SACK_DELAY.min(Duration::from_nanos(rtt.as_nanos() / 20)) + COMP_SACK_SLACK
    }

    /// Linux's receive-window growth on a segment of `len` bytes taken
    /// in: while `rcv_ssthresh` grows (`tcp_grow_window`, at the segment's
    /// arrival) the segment is ACKed at once (`icsk_ack.quick |= 1`); then
    /// the application's read moves the clamp with the data per RTT
    /// (`tcp_rcv_space_adjust`, from `tcp_recvmsg`), which the next segment
    /// sees.
    pub(super) fn grow_window(&mut self, len: u32) {
        let queued = self.queued();
        let free = self.rcv_buf.saturating_sub(queued);
        let mss = self.rcv_mss;
        let Some(space) = self.rcv_space.as_mut() else { return };
        if space.on_segment(len, mss, queued, free) {
            self.quick_acks |= 1;
        }
    }

    /// The application's read of data that arrived in order at `now`,
    /// with `tcp_rcv_space_adjust` (Linux 6.18 refreshes `tcp_mstamp` there,
    /// tcp_input.c). The read takes the socket after the receive path has
    /// finished with the segment (`lock_sock` waits for the softirq, which
    /// wakes the reader with `tcp_data_ready` only after
    /// `__tcp_ack_snd_check` in `tcp_rcv_established`), so when that path
    /// sent the segment's ACK at once (`ack_sent`) the read comes
    /// [`ACK_BEFORE_READ`] later than the arrival; a segment whose ACK waits
    /// is read at its arrival. Without that order a measurement that began
    /// at a read after an ACK and ends at a read of a segment exactly one
    /// receiver RTT (whole milliseconds of timestamps) of link time later
    /// is a tie in the simulator, which Linux's reads do not make.
    ///
    /// `first_end` is where the read's first skb ends: `tcp_recvmsg` runs
    /// `tcp_rcv_space_adjust` after each skb, and Linux 6.16 and later
    /// count only what was read less what is still queued (`copied -=
    /// inq`), so when a segment fills a hole the measure ends after that
    /// segment with the data it released still queued.
    pub(super) fn read_adjust(&mut self, now: Instant, ack_sent: bool, first_end: u64) {
        let (rcv_nxt, span) = (self.rcv_nxt, self.ooo_span());
        let Some(space) = self.rcv_space.as_mut() else { return };
        let read_at = if ack_sent { now + ACK_BEFORE_READ } else { now };
        space.on_delivered(read_at, first_end.min(rcv_nxt), rcv_nxt, span);
    }

    /// Bytes the receive buffer holds: received in order and not read, and
    /// out of order (`sk_rmem_alloc` counts both queues: `tcp_queue_rcv`
    /// and `tcp_data_queue_ofo` charge each segment with
    /// `skb_set_owner_r`).
    pub(super) fn queued(&self) -> u64 {
        self.data_end().saturating_sub(self.rcv_read) + self.ooo.iter().map(|b| b.end - b.start).sum::<u64>()
    }

    /// From `rcv_nxt` to the end of the last data held out of order, zero
    /// with none (`ooo_last_skb->end_seq − rcv_nxt` in `tcp_rcvbuf_grow`).
    pub(super) fn ooo_span(&self) -> u64 {
        self.ooo.last().map_or(0, |b| b.end.saturating_sub(self.rcv_nxt))
    }

    /// Linux's `tcp_event_data_recv` on data arriving at `now`: the first
    /// data starts quick-ACK mode with ato at its floor (the configured
    /// delay, `TCP_ATO_MIN`); after that ato follows the gaps m between
    /// arrivals: m ≤ floor/2 → ato/2 + floor/2; m < ato → ato/2 + m (at most
    /// the RTO); m > RTO (a silence) → quick-ACK mode again.
    pub(super) fn on_data_timing(&mut self, now: Instant) {
        let floor = match self.config.delayed_ack {
            DelayedAck::On(delay) => delay,
            DelayedAck::Off => Duration::ZERO,
        };
        let half = |d: Duration| Duration::from_nanos(d.as_nanos() / 2);
        match self.last_data_at {
            _ if self.ato.is_zero() => {
                self.incr_quickack();
                self.ato = floor;
            }
            None => {}
            Some(last) => {
                let m = now - last;
                if m <= half(floor) {
                    self.ato = half(self.ato) + half(floor);
                } else if m < self.ato {
                    self.ato = (half(self.ato) + m).min(self.rtt.rto());
                } else if m > self.rtt.rto() {
                    self.incr_quickack();
                }
            }
        }
        self.last_data_at = Some(now);
    }

    /// Linux's `tcp_send_delayed_ack`: the timer is ato, but above the
    /// floor at most the smoothed RTT (itself at least the floor) and
    /// 500 ms (HZ/2).
    pub(super) fn delayed_ack_timeout(&self, floor: Duration) -> Duration {
        let ato = self.ato.max(floor);
        if ato <= floor {
            return ato;
        }
        let mut max_ato = Duration::from_millis(500);
        if let Some(srtt) = self.rtt.srtt() {
            max_ato = max_ato.min(srtt.max(floor));
        }
        ato.min(max_ato)
    }

    /// `tcp_enter_quickack_mode`: quick ACKs, and ato back to its floor.
    pub(super) fn enter_quickack_mode(&mut self) {
        self.incr_quickack();
        if let DelayedAck::On(floor) = self.config.delayed_ack {
            self.ato = floor;
        }
    }

    /// `tcp_incr_quickack`: up to 16 quick ACKs, at most half the offered
    /// window in full segments (2 if that is none).
    pub(super) fn incr_quickack(&mut self) {
        let window = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let mut quick = (window / (2 * self.rcv_mss.max(1) as u64)) as u32;
        if quick == 0 {
            quick = 2;
        }
        self.quick_acks = self.quick_acks.max(quick.min(MAX_QUICKACKS));
    }

    pub(super) fn insert_ooo(&mut self, start: u64, end: u64) {
        self.ooo_clock += 1;
        let clock = self.ooo_clock;
        let i = self.ooo.partition_point(|b| b.end < start);
        let mut block = OooBlock { start, end, touched: clock };
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].start <= end {
            block.start = block.start.min(self.ooo[j].start);
            block.end = block.end.max(self.ooo[j].end);
            j += 1;
        }
        self.ooo.splice(i..j, [block]);
    }

    /// End of the data received in order (the FIN excluded).
    pub(super) fn data_end(&self) -> u64 {
        self.rcv_nxt - self.fin_received as u64
    }

    /// The receive window to offer now: the free buffer, but grown only by
    /// at least min(buffer/2, MSS) at a time, and never shrinking the right
    /// edge (RFC 9293 §3.8.6.2.2).
    ///
    /// Linux (`__tcp_select_window`, Linux 6.18) offers at most
    /// `rcv_ssthresh` of its free space `tcp_space()`: the buffer less
    /// everything it holds, data out of order included (`sk_rmem_alloc`),
    /// so while a hole is open the window shrinks as the data beyond it
    /// arrives (the right edge stays where it was). Free space below half
    /// the buffer is rounded down to the window scale's unit, and below a
    /// segment or a sixteenth of the buffer it is none (that branch also
    /// ends quick-ACK mode in Linux, `icsk_ack.quick = 0`: not modelled).
    ///
    /// With window scaling Linux has no step of a segment: `rcv_ssthresh`
    /// above the free space is aligned up to the scale's unit ("we ALIGN
    /// up ... rcv_ssthresh is not a hard limit"), and a new window is
    /// offered whenever it is larger than what is left of the last.
    pub(super) fn rcv_window(&self) -> u64 {
        let offered = self.rcv_adv.saturating_sub(self.rcv_nxt);
        if let Some(space) = &self.rcv_space {
            let unit = 1u64 << self.rcv_shift;
            let full = space.buffer();
            let mut free = full.saturating_sub(self.queued());
            if free < full / 2 {
                free = free / unit * unit;
                if free < full / 16 || free < (self.rcv_mss as u64).min(full) {
                    free = 0;
                }
            }
            if free > space.window_cap() {
                free = space.window_cap().div_ceil(unit) * unit;
            }
            return free.max(offered);
        }
        let free = self.rcv_buf.saturating_sub(self.data_end().saturating_sub(self.rcv_read));
        let step = (self.rcv_buf / 2).min(self.rcv_mss as u64).max(1);
        if free >= offered + step { free } else { offered }
    }

    pub(super) fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.timers.set(Timer::TimeWait, now + self.config.time_wait);
        self.timers.stop(Timer::Rto);
        self.timers.stop(Timer::Persist);
    }

    pub(super) fn enter_closed(&mut self) {
        self.state = State::Closed;
        self.timers.stop(Timer::Rto);
        self.timers.stop(Timer::Persist);
        self.timers.stop(Timer::DelayedAck);
        self.timers.stop(Timer::CompressedAck);
        self.timers.stop(Timer::TimeWait);
        self.ack_now = false;
        self.flushed_ack = None;
        self.syn_pending = false;
        self.retransmit_now = None;
        self.probe_pending = false;
    }
}
