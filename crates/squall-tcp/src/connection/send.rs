//! Outgoing segments: new data within the windows (RFC 5681, RFC 9293
//! §3.8.6.2.1 sender SWS avoidance), retransmissions, loss probes,
//! zero-window probes (RFC 1122 §4.2.2.17) and the ACK fields.

use super::*;

impl Connection {
    pub(super) fn has_new_data(&self) -> bool {
        self.snd_max < self.app_end && self.snd_max > self.iss
    }

    pub(super) fn has_data_to_send(&self) -> bool {
        self.has_new_data() || self.snd_nxt < self.snd_max || self.retransmit_now.is_some()
    }

    /// The next segment to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        match self.state {
            State::Closed | State::Listen => return None,
            State::SynSent | State::SynReceived => {
                if self.syn_pending {
                    return Some(self.transmit_syn(now));
                }
                if self.state == State::SynSent {
                    return None;
                }
            }
            _ => {}
        }
        if let Some(ack) = self.flushed_ack.take() {
            return Some(ack);
        }
        let pacing_rate = self.cc.pacing_rate().filter(|&r| r > 0);
        if pacing_rate.is_some() {
            self.timers.set_opt(Timer::Pace, self.pacer.next_departure(now));
        }
        if self.timers.get(Timer::Pace).is_some_and(|t| t > now) {
            return self.pure_ack_if_due(now);
        }
        if self.state.is_synchronized() && self.state != State::TimeWait {
            if let Some(seg) = self.transmit_data(now) {
                if let Some(rate) = pacing_rate {
                    self.pacer.on_send(now, seg.len, rate, self.cc.burst_segments(self.snd_mss));
                    self.timers.set_opt(Timer::Pace, self.pacer.next_departure(now));
                }
                return Some(seg);
            }
            if let Some(rate) = pacing_rate {
                self.pacer.flush(rate);
                self.timers.set_opt(Timer::Pace, self.pacer.next_departure(now));
            }
            if self.probe_pending {
                return Some(self.transmit_probe(now));
            }
            self.start_persist_if_needed(now);
        }
        self.pure_ack_if_due(now)
    }

    pub(super) fn pure_ack_if_due(&mut self, now: Instant) -> Option<Segment> {
        if !self.ack_now {
            return None;
        }
        Some(self.pure_ack(now))
    }

    /// A segment without data that acknowledges what has arrived.
    pub(super) fn pure_ack(&mut self, now: Instant) -> Segment {
        let mut seg = self.segment(self.snd_max, 0, Flags::ACK);
        self.fill_ack(now, &mut seg);
        self.stats.acks_sent += 1;
        self.stats.segments_sent += 1;
        seg
    }

    pub(super) fn segment(&self, seq: u64, len: u32, flags: Flags) -> Segment {
        Segment { seq, ack: 0, flags, window: 0, len, ..Default::default() }
    }

    /// Sets the ACK field, window and SACK blocks, and clears pending ACKs:
    /// every segment after the handshake acknowledges.
    pub(super) fn fill_ack(&mut self, now: Instant, seg: &mut Segment) {
        seg.flags |= Flags::ACK;
        seg.ack = self.rcv_nxt;
        let window = self.rcv_window();
        let mut field = (window >> self.rcv_shift).min(65_535);
        if (field << self.rcv_shift) + self.rcv_nxt < self.rcv_adv {
            // Rounding down would pull the right edge back: round up.
            field = (window.div_ceil(1 << self.rcv_shift)).min(65_535);
        }
        seg.window = field as u16;
        self.rcv_adv = self.rcv_adv.max(self.rcv_nxt + (field << self.rcv_shift));
        if self.ts_ok {
            seg.timestamp = Some(Timestamp { value: self.ts_clock(now), echo: self.ts_recent });
        }
        if self.sack_ok && !self.ooo.is_empty() {
            // Most recently changed block first (RFC 2018 §4).
            let mut blocks: Vec<&OooBlock> = self.ooo.iter().collect();
            blocks.sort_by_key(|b| std::cmp::Reverse(b.touched));
            let mut sack = SackBlocks::default();
            let room = if self.ts_ok { MAX_SACK_BLOCKS_WITH_TIMESTAMPS } else { MAX_SACK_BLOCKS };
            // A FIN held out of order is part of its block: Linux queues
            // the segment with an `end_seq` that counts the FIN
            // (`tcp_data_queue_ofo`) and builds its SACK blocks from those
            // (`tcp_sack_new_ofo_skb`), so the sender sees its last segment
            // SACKed whole and RACK can mark the hole before it lost
            // (RFC 8985 §6.2) instead of waiting for TLP and the RTO.
            let held_fin = self.fin_at.filter(|_| !self.fin_received);
            for b in blocks.into_iter().take(room) {
                let end = if held_fin == Some(b.end) { b.end + 1 } else { b.end };
                sack.push((b.start, end));
            }
            seg.sack = sack;
        }
        if self.ack_scheduled && self.quick_acks > 0 {
            // `tcp_dec_quickack_mode`: one quick ACK used per ACK of data
            // that arrived since the last (in order or not); leaving the
            // mode deflates ato to its floor.
            self.quick_acks -= 1;
            if self.quick_acks == 0
                && let DelayedAck::On(floor) = self.config.delayed_ack
            {
                self.ato = floor;
            }
        }
        self.last_ack_sent = self.rcv_nxt;
        self.ack_now = false;
        self.ack_scheduled = false;
        // `tcp_event_ack_sent` clears every pending-ACK flag.
        self.ack_pushed = false;
        self.timers.stop(Timer::DelayedAck);
        // `tcp_event_ack_sent`: any ACK sends what SACK compression held.
        self.compressed_acks = 0;
        self.timers.stop(Timer::CompressedAck);
    }

    pub(super) fn transmit_syn(&mut self, now: Instant) -> Segment {
        self.syn_pending = false;
        let mut seg = self.segment(self.iss, 0, Flags::SYN);
        seg.mss = Some(self.config.mss.min(65_535) as u16);
        let listener_side = self.state == State::SynReceived;
        // On a SYN-ACK, options only if the SYN offered them (RFC 7323 §1.3,
        // RFC 2018 §2).
        if self.config.window_scaling && (!listener_side || self.peer_window_scale) {
            seg.window_scale = Some(self.config.window_shift());
        }
        if self.config.sack && (!listener_side || self.sack_ok) {
            seg.sack_permitted = true;
        }
        if self.config.timestamps && (!listener_side || self.ts_ok) {
            let echo = if listener_side { self.ts_recent } else { 0 };
            seg.timestamp = Some(Timestamp { value: self.ts_clock(now), echo });
        }
        // The window of a SYN is not scaled.
        let mut window = self.rcv_buf.min(65_535);
        if self.config.grow_window {
            // Linux offers its initial `rcv_wnd`: 64 KiB of window from the
            // initial buffer, rounded down to whole segments of the MSS it
            // expects (`tcp_select_initial_window`), 1448 B on a SYN-ACK
            // with timestamps agreed, the MSS announced (1460) on a SYN:
            // 65 160 and 64 240 as Linux 6.18 sends them. `rcv_ssthresh`
            // starts there.
            let mss = if listener_side { self.rcv_mss } else { self.config.mss }.max(1) as u64;
            let initial = INITIAL_WINDOW.min(self.rcv_buf);
            window = if initial > mss { initial / mss * mss } else { initial };
            self.syn_window = window;
        }
        if listener_side {
            seg.flags |= Flags::ACK;
            seg.ack = self.rcv_nxt;
            self.rcv_adv = self.rcv_nxt + window;
            self.last_ack_sent = self.rcv_nxt;
            self.ack_now = false;
        }
        seg.window = window as u16;
        if !self.sent.is_empty() {
            let again = self.syn_transmitted;
            self.sent.update(0, |s| {
                if again {
                    s.retransmitted = true;
                } else {
                    s.first_sent = now;
                }
                s.last_sent = now;
            });
            if again {
                self.stats.retransmitted_segments += 1;
            }
        }
        self.syn_transmitted = true;
        self.stats.segments_sent += 1;
        if !self.timers.is_armed(Timer::Rto) {
            self.arm_rto(now);
        }
        seg
    }

    /// Retransmissions first, then new data, within the windows.
    pub(super) fn transmit_data(&mut self, now: Instant) -> Option<Segment> {
        if self.tlp_pending {
            self.tlp_pending = false;
            if let Some(seg) = self.transmit_loss_probe(now) {
                return Some(seg);
            }
        }
        if let Some(seq) = self.retransmit_now.take()
            && let Some(i) = self.index_of(seq)
        {
            if self.recovery.is_some() {
                let high_rxt = self.sent.high_rxt().max(self.sent[i].end);
                self.sent.set_high_rxt(high_rxt);
            }
            return Some(self.retransmit(now, i));
        }
        if let Some(rec) = self.recovery
            && rec.kind == LossRecovery::Sack
        {
            return self.transmit_sack_recovery(now);
        }
        if self.in_loss && self.rack_on() && self.sent.lost_unrepaired() > 0 {
            return self.transmit_lost_after_timeout(now);
        }
        // Going back after a timeout (the RFC profile) or Tahoe's fast
        // retransmit.
        while self.snd_nxt < self.snd_max {
            let Some(i) = self.index_of(self.snd_nxt) else {
                // Not a segment boundary (cannot happen): resume new data.
                self.snd_nxt = self.snd_max;
                break;
            };
            let s = self.sent[i];
            if s.sacked {
                self.snd_nxt = s.end;
                continue;
            }
            if !self.window_allows(self.snd_nxt - self.snd_una, s.end - s.start) {
                return None;
            }
            self.snd_nxt = s.end;
            return Some(self.retransmit(now, i));
        }
        // The window test outside recovery. RFC 5681 counts FlightSize,
        // everything outstanding (RFC 3042 adds its allowance in
        // `transmit_new`). With RACK, Linux's `tcp_cwnd_test`
        // (net/ipv4/tcp_output.c, called by `tcp_write_xmit`) counts
        // `tcp_packets_in_flight`, which leaves SACKed segments out: in the
        // Disorder state every segment SACKed lets a new one go (Linux's
        // limited transmit), also on an ACK that moves SND.UNA.
        let outstanding = if self.rack_on() { self.linux_bytes_in_flight() } else { self.snd_max - self.snd_una };
        self.transmit_new(now, outstanding, false)
    }

    /// RFC 6675 §5 step (C): while cwnd − pipe ≥ 1 SMSS, send NextSeg.
    pub(super) fn transmit_sack_recovery(&mut self, now: Instant) -> Option<Segment> {
        let pipe = self.in_flight();
        let cwnd = self.cwnd();
        if cwnd < pipe + self.snd_mss as u64 {
            return None;
        }
        if self.rack_on() {
            return self.transmit_rack_recovery(now);
        }
        let high_rxt = self.sent.high_rxt();
        let highest_sacked = self.sent.iter().rev().find(|s| s.sacked).map_or(self.snd_una, |s| s.end);
        // (1) the first lost, unSACKed segment above HighRxt.
        let lost = self.sent.iter().position(|s| s.start >= high_rxt && !s.sacked && s.lost);
        // (2) new data.
        // (3) an unSACKed segment above HighRxt below the highest SACK.
        let rule3 = || self.sent.iter().position(|s| s.start >= high_rxt && !s.sacked && s.end <= highest_sacked);
        let pick = match lost {
            Some(i) => Some(i),
            None if self.has_new_data() => None,
            None => rule3(),
        };
        match pick {
            Some(i) => {
                self.sent.set_high_rxt(self.sent[i].end);
                Some(self.retransmit(now, i))
            }
            None => {
                let seg = self.transmit_new(now, 0, false)?;
                Some(seg)
            }
        }
    }

    /// Recovery with RACK (Linux `tcp_xmit_retransmit_queue`): the first
    /// segment marked lost and not retransmitted since, else new data.
    /// Sending the first unacknowledged segment again restarts the RTO
    /// (the `skb == rtx_head` rule of `tcp_xmit_retransmit_queue`), so a
    /// lost retransmission of it that RACK finds gets a whole RTO from its
    /// new transmission, not from the first one.
    pub(super) fn transmit_rack_recovery(&mut self, now: Instant) -> Option<Segment> {
        let unrepaired = if self.sent.lost_unrepaired() > 0 {
            self.sent.iter().position(|s| s.lost && !s.rack_rtx && !s.sacked)
        } else {
            None
        };
        let seg = match unrepaired {
            Some(i) => {
                let seg = self.retransmit(now, i);
                if i == 0 {
                    self.arm_rto(now);
                }
                Some(seg)
            }
            None => self.transmit_new(now, 0, false),
        }?;
        if let Some(prr) = &mut self.prr {
            prr.on_send(seg.len.max(1) as u64);
        }
        Some(seg)
    }

    /// The Linux profile's Loss state, after a timeout (Linux
    /// `tcp_xmit_retransmit_queue`): the first segment marked lost and not
    /// retransmitted since goes again, SACKed segments skipped, while the
    /// window holds a segment beyond what is in flight
    /// (`tcp_packets_in_flight`: SACKed segments and lost ones not yet
    /// retransmitted are not). Sending the first unacknowledged segment
    /// restarts the RTO (`skb == rtx_head`). Once every lost segment is
    /// out, new data goes under the same count (`transmit_data`).
    pub(super) fn transmit_lost_after_timeout(&mut self, now: Instant) -> Option<Segment> {
        let cwnd = self.cc.window().min(self.config.max_window);
        if cwnd < self.linux_bytes_in_flight() + self.snd_mss as u64 {
            return None;
        }
        let i = self.sent.iter().position(|s| s.lost && !s.rack_rtx && !s.sacked)?;
        let seg = self.retransmit(now, i);
        if i == 0 {
            self.arm_rto(now);
        }
        Some(seg)
    }

    /// The tail loss probe (RFC 8985 §7.3; Linux `tcp_send_loss_probe`):
    /// one new segment if the receive window allows, whatever the
    /// congestion window; else the last segment sent again. The RTO
    /// restarts from the probe.
    pub(super) fn transmit_loss_probe(&mut self, now: Instant) -> Option<Segment> {
        let outstanding = self.snd_max - self.snd_una;
        let seg = match self.transmit_new(now, outstanding, true) {
            Some(seg) => {
                self.tlp_retrans = false;
                seg
            }
            None => {
                let i = self.sent.iter().rposition(|s| !s.sacked && !s.syn)?;
                self.tlp_retrans = true;
                self.retransmit(now, i)
            }
        };
        self.tlp_high_seq = Some(self.snd_max);
        self.stats.loss_probes += 1;
        self.arm_rto(now);
        Some(seg)
    }

    /// RFC 3042 §2: on the first and second duplicate ACK outside loss
    /// recovery, up to one more segment each beyond the congestion window
    /// (the window itself is unchanged). None with RACK: its window test
    /// leaves SACKed segments out of the count, which is how Linux does
    /// limited transmit (see `transmit_data`).
    pub(super) fn limited_transmit_allowance(&self) -> u64 {
        if !self.config.limited_transmit
            || self.rack_on()
            || self.recovery.is_some()
            || self.dupacks >= self.config.dupack_threshold
        {
            return 0;
        }
        self.dupacks.min(2) as u64 * self.snd_mss as u64
    }

    pub(super) fn index_of(&self, seq: u64) -> Option<usize> {
        let i = self.sent.partition_point(|s| s.start < seq);
        (i < self.sent.len() && self.sent[i].start == seq).then_some(i)
    }

    /// Whether a retransmission of `len` bytes fits in the congestion
    /// window after `outstanding` bytes (the receiver's window held it
    /// when it was first sent, and its right edge never moves back).
    pub(super) fn window_allows(&self, outstanding: u64, len: u64) -> bool {
        let cwnd = self.cc.window().min(self.config.max_window);
        outstanding == 0 || outstanding + len <= cwnd
    }

    pub(super) fn retransmit(&mut self, now: Instant, i: usize) -> Segment {
        let (delivered, delivered_time) = (self.delivered, self.delivered_time);
        let tx = self.tx_state(now, false);
        let s = self.sent.update(i, |s| {
            s.tx = tx;
            s.retransmitted = true;
            s.rack_rtx = true;
            s.last_sent = now;
            s.delivered = delivered;
            s.delivered_time = delivered_time;
            *s
        });
        let mut flags = Flags::empty_flags();
        if s.fin {
            flags |= Flags::FIN;
        }
        let len = s.data_len() as u32;
        if len > 0 {
            self.last_data_sent = Some(now);
        }
        let mut seg = self.segment(s.start, len, flags);
        self.fill_ack(now, &mut seg);
        self.stats.retransmitted_segments += 1;
        self.stats.retransmitted_bytes += len as u64;
        self.count_sent(&seg);
        if !self.timers.is_armed(Timer::Rto) {
            self.arm_rto(now);
        }
        seg
    }

    /// A new segment from `snd_max`, if the windows and sender-side SWS
    /// avoidance (RFC 9293 §3.8.6.2.1, Nagle when on) allow.
    /// `ignore_cwnd` for a loss probe (RFC 8985 §7.3).
    pub(super) fn transmit_new(&mut self, now: Instant, outstanding: u64, ignore_cwnd: bool) -> Option<Segment> {
        let fin_pending = self.fin_queued && self.snd_max == self.app_end;
        if !self.has_new_data() && !fin_pending {
            return None;
        }
        let base_cwnd = self.cc.window().min(self.config.max_window);
        let cwnd = if ignore_cwnd { u64::MAX / 4 } else { base_cwnd + self.limited_transmit_allowance() };
        let wnd_right = self.snd_una + self.snd_wnd;
        let cwnd_room = cwnd.saturating_sub(outstanding);
        let rwnd_room = wnd_right.saturating_sub(self.snd_max);
        let room = cwnd_room.min(rwnd_room);
        let remaining = self.app_end - self.snd_max;
        let mss = self.snd_mss as u64;
        let len = remaining.min(mss).min(room);
        if remaining > 0 {
            let nothing_outstanding = self.snd_max == self.snd_una;
            let full = len == mss;
            let all = len == remaining && (!self.config.nagle || nothing_outstanding);
            let half_window = self.max_snd_wnd > 0 && len >= self.max_snd_wnd / 2;
            let override_small = nothing_outstanding && len > 0;
            if len == 0 || !(full || all || half_window || override_small) {
                return None;
            }
        } else if self.snd_max > self.snd_una && cwnd_room == 0 {
            // A lone FIN waits for room like data does.
            return None;
        }
        let start = self.snd_max;
        let mut ends_unit = false;
        if self.sends_units() && len > 0 && !ignore_cwnd {
            let unit = self.transmit_unit(now, start, len, room, base_cwnd)?;
            ends_unit = self.ends_unit(unit, start, len) || self.ends_buffer(unit, start, len);
        }
        self.limited_sent += len.saturating_sub(base_cwnd.saturating_sub(outstanding));
        let tx = self.tx_state(now, self.snd_max == self.snd_una);
        let mut flags = Flags::empty_flags();
        let fin = self.fin_queued && start + len == self.app_end;
        if fin {
            flags |= Flags::FIN;
            match self.state {
                State::Established => self.state = State::FinWait1,
                State::CloseWait => self.state = State::LastAck,
                _ => {}
            }
        }
        if len > 0 && (start + len == self.app_end || ends_unit) {
            flags |= Flags::PSH;
        }
        if len > 0 {
            self.last_data_sent = Some(now);
        }
        let end = start + len + fin as u64;
        self.sent.push_back(Sent {
            start,
            end,
            syn: false,
            fin,
            first_sent: now,
            last_sent: now,
            retransmitted: false,
            timer_retransmitted: false,
            sacked: false,
            lost: false,
            rack_rtx: false,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            tx,
        });
        self.snd_max = end;
        self.snd_nxt = self.snd_nxt.max(end);
        let mut seg = self.segment(start, len as u32, flags);
        self.fill_ack(now, &mut seg);
        self.count_sent(&seg);
        if !self.timers.is_armed(Timer::Rto) {
            self.arm_rto(now);
        }
        if !ignore_cwnd && self.rack_on() {
            // Linux re-arms the loss probe after sending new data.
            self.schedule_tlp(now, false);
        }
        Some(seg)
    }

    pub(super) fn count_sent(&mut self, seg: &Segment) {
        self.stats.segments_sent += 1;
        if seg.len > 0 {
            self.stats.data_segments_sent += 1;
            self.stats.data_bytes_sent += seg.len as u64;
        }
    }

    /// Zero window with data waiting and nothing in flight: arm the
    /// persist timer (RFC 9293 §3.8.6.1).
    pub(super) fn start_persist_if_needed(&mut self, now: Instant) {
        if self.snd_wnd == 0
            && self.has_new_data()
            && self.snd_una == self.snd_max
            && !self.timers.is_armed(Timer::Persist)
        {
            self.timers.set(Timer::Persist, now + self.persist_interval());
        }
    }

    /// A one-byte probe beyond the zero window (seed 004 §4.2.3).
    pub(super) fn transmit_probe(&mut self, now: Instant) -> Segment {
        self.probe_pending = false;
        let mut seg = self.segment(self.snd_max, 1, Flags::empty_flags());
        self.fill_ack(now, &mut seg);
        self.probe_end = Some(self.snd_max + 1);
        self.stats.window_probes += 1;
        self.count_sent(&seg);
        self.timers.set(Timer::Persist, now + self.persist_interval());
        seg
    }
}
