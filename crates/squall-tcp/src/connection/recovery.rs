//! The ACK side of the sender: SACK scoreboard (RFC 2018, RFC 6675),
//! new and duplicate ACKs (RFC 5681 §3.2, RFC 6582), RACK-TLP (RFC 8985),
//! PRR (RFC 6937) and the model-based algorithms' rate samples
//! (Linux tcp_rate.c).

use super::*;

impl Connection {
    /// The ACK field and window of `seg` (RFC 9293 §3.10.7.4, fifth check;
    /// RFC 5681 §3.2 and §2 for duplicate ACKs). Returns false if the
    /// segment is to be dropped.
    pub(super) fn on_ack(&mut self, now: Instant, seg: &Segment) -> bool {
        let ack = seg.ack;
        self.take_probe_byte(now, ack);
        if ack > self.snd_max {
            // Acknowledges something not sent yet.
            self.ack_now = true;
            return false;
        }
        let window_changed = self.update_send_window(seg);
        let prior_in_flight = if self.cc.is_model_based() { self.packets_in_flight() } else { 0 };
        let sacked = if self.sack_ok { self.take_sack(now, seg) } else { Sacked::default() };
        let una_before = self.snd_una;
        let was_recovering = self.recovery.is_some() || self.in_loss;
        let mut lost_bytes = 0;
        self.rate.ack_rtt = sacked.oldest_rtt;
        let mut delivered = sacked.bytes;
        if ack > self.snd_una {
            delivered += self.on_new_ack(now, ack, &sacked, seg.timestamp.filter(|_| self.ts_ok));
        } else {
            if let Some(r) = sacked.oldest_rtt.filter(|_| self.config.rto_variant == RtoVariant::Linux) {
                // Linux takes an RTT sample from newly SACKed data too
                // (tcp_ack_update_rtt's sack_rtt_us).
                self.rtt.sample_at(r, self.snd_una, self.snd_max);
                self.stats.rtt_samples += 1;
            }
            if ack == self.snd_una
                && self.snd_max > self.snd_una
                && seg.len == 0
                && !seg.syn()
                && !seg.fin()
                && !window_changed
            {
                self.on_duplicate_ack(now, sacked.bytes > 0);
            }
        }
        if self.in_loss && self.snd_una >= self.recover {
            // Linux's `tcp_process_loss`: everything outstanding at the
            // timeout is acknowledged, the Loss state ends (Open), before
            // RACK looks for losses (`tcp_fastretrans_alert`).
            self.in_loss = false;
        }
        if self.rack_on() {
            self.on_tlp_ack(now, ack, ack > una_before);
            let retransmitted_before = self.sent.lost_retransmitted();
            let newly_lost = if delivered > 0 { self.rack_detect_loss(now) } else { 0 };
            lost_bytes = newly_lost;
            // Linux's tcp_fastretrans_alert (tcp_input.c): an ACK that ends
            // recovery (or the Loss state) sets Open (step D), then marks
            // losses and, by tcp_time_to_recover's "the loss is proven"
            // (`lost_out`, segments marked lost and not yet delivered),
            // enters recovery again at once (step E): a model-based
            // algorithm, whose `cong_control` runs after, sees one
            // recovery; a window-based one takes a new ssthresh from the
            // window just set to the old one (tcp_enter_recovery ->
            // tcp_init_cwnd_reduction) and PRR goes on from there, never
            // an Open state whose window test counts the SACKed and lost
            // segments still outstanding.
            let loss_proven = newly_lost > 0 || (was_recovering && self.lost_out());
            // In the Loss state a retransmission RACK finds lost
            // (FLAG_LOST_RETRANS, `tcp_identify_packet_loss`) starts
            // Recovery at once: `tcp_fastretrans_alert` falls through from
            // TCP_CA_Loss to `tcp_time_to_recover` and
            // `tcp_enter_recovery`.
            let lost_retransmission = self.in_loss && self.sent.lost_retransmitted() < retransmitted_before;
            if (loss_proven && self.recovery.is_none() && self.snd_una >= self.recover) || lost_retransmission {
                self.enter_loss_recovery(now, LossRecovery::Sack);
            }
            self.prr_on_ack(delivered, ack > una_before, newly_lost > 0);
            self.schedule_tlp(now, ack > una_before);
        } else {
            self.prr_on_ack(delivered, ack > una_before, false);
        }
        if self.cc.is_model_based() {
            self.model_ack(now, prior_in_flight, lost_bytes);
        } else if self.config.rate_samples {
            let mss = self.snd_mss.max(1) as u64;
            self.rate_sample(now, lost_bytes.div_ceil(mss));
        }
        true
    }

    /// The byte of an unanswered zero-window probe, acknowledged: it
    /// counts as sent (no RTT sample from it).
    fn take_probe_byte(&mut self, now: Instant, ack: u64) {
        if let Some(end) = self.probe_end.take()
            && ack == end
            && ack == self.snd_max + 1
        {
            self.sent.push_back(Sent {
                start: self.snd_max,
                end,
                syn: false,
                fin: false,
                first_sent: now,
                last_sent: now,
                retransmitted: true,
                timer_retransmitted: false,
                sacked: false,
                lost: false,
                rack_rtx: false,
                delivered: self.delivered,
                delivered_time: self.delivered_time,
                tx: TxState::default(),
            });
            self.snd_max = end;
            self.snd_nxt = self.snd_nxt.max(end);
        }
    }

    /// The send window update (RFC 9293 §3.10.7.4, fifth check: SND.WL1
    /// and SND.WL2 keep old segments from shrinking it); a window that
    /// opens stops the persist timer. Returns whether the segment's window
    /// differs from the one in force (such an ACK is no duplicate, RFC
    /// 5681 §2).
    fn update_send_window(&mut self, seg: &Segment) -> bool {
        let ack = seg.ack;
        let window = (seg.window as u64) << self.snd_shift;
        let window_changed = window != self.snd_wnd;
        if self.snd_wl1 < seg.seq || (self.snd_wl1 == seg.seq && self.snd_wl2 <= ack) {
            self.snd_wnd = window;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = ack;
        }
        if self.snd_wnd > 0 {
            self.timers.stop(Timer::Persist);
            self.persist_backoff = 0;
            self.probe_pending = false;
        }
        window_changed
    }

    /// Linux's `cong_control` step of `tcp_ack` for a model-based
    /// algorithm: the rate sample (`tcp_rate_gen`) and the ACK's counts.
    pub(super) fn model_ack(&mut self, now: Instant, prior_in_flight: u64, lost_bytes: u64) {
        let mss = self.snd_mss.max(1);
        let (rtt, acked_sacked, sample) = self.rate_sample(now, lost_bytes.div_ceil(mss as u64));
        let ca_state = match (self.recovery, self.in_loss) {
            (Some(_), _) => CaState::Recovery,
            (None, true) => CaState::Loss,
            (None, false) => CaState::Open,
        };
        let in_flight = self.packets_in_flight();
        let ack = ModelAck {
            rate: sample,
            acked_sacked,
            losses: lost_bytes.div_ceil(mss as u64),
            prior_in_flight,
            in_flight,
            delivered: self.rate.delivered,
            lost: self.rate.lost,
            delivered_time: self.rate.delivered_time.unwrap_or(now),
            rtt,
            srtt: self.rtt.srtt(),
            min_rtt: self.rate.min_rtt,
            maybe_delayed: acked_sacked == 1,
            ca_state,
            pacing_wait: self.pacer.next_departure(now).map_or(Duration::ZERO, |t| t - now),
            mss,
        };
        self.cc.on_model_ack(now, &ack);
        if self.cc.wants_app_limited() {
            self.rate.set_app_limited(in_flight);
        }
    }

    /// Ends the rate sample of the ACK being processed at `now` (`lost`
    /// packets newly marked lost by it): the RTT it measured, the packets
    /// it delivered and the sample (tcp_rate.c `tcp_rate_gen`). The sample
    /// becomes the connection's delivery rate unless it is
    /// application-limited and below the one kept (`tcp_rate_gen`'s last
    /// step, which `tcpi_delivery_rate` reports).
    pub(super) fn rate_sample(
        &mut self,
        now: Instant,
        lost: u64,
    ) -> (Option<Duration>, u64, Option<crate::congestion::DeliveryRateSample>) {
        let rtt = self.rate.ack_rtt.take();
        if let Some(r) = rtt {
            self.rate.on_rtt(r);
        }
        let (acked_sacked, sample) = self.rate.generate(now, lost);
        if let Some(s) = sample {
            let (kept, kept_interval) = self.delivery_rate;
            let at_least_kept = u128::from(s.delivered) * u128::from(kept_interval.as_nanos())
                >= u128::from(kept) * u128::from(s.interval.as_nanos());
            if !s.is_app_limited || at_least_kept {
                self.delivery_rate = (s.delivered, s.interval);
            }
        }
        (rtt, acked_sacked, sample)
    }

    /// Whether the connection takes delivery-rate samples: for model-based
    /// algorithms, and when asked ([`crate::TcpConfig::rate_samples`]); the
    /// others never read them, and the sender's hot path skips them.
    pub(super) fn samples_rate(&self) -> bool {
        self.cc.is_model_based() || self.config.rate_samples
    }

    /// The delivery state a segment sent now carries, when the connection
    /// samples its delivery rate ([`Self::samples_rate`]).
    pub(super) fn tx_state(&mut self, now: Instant, nothing_outstanding: bool) -> TxState {
        if self.samples_rate() { self.rate.on_send(now, nothing_outstanding) } else { TxState::default() }
    }

    /// Packets in flight as Linux counts them (`tcp_packets_in_flight`):
    /// outstanding, less SACKed and lost, plus retransmissions in flight;
    /// after a timeout, what lies beyond the go-back point is lost.
    pub(super) fn packets_in_flight(&self) -> u64 {
        if self.snd_nxt >= self.snd_max {
            return self.sent.packets_in_flight();
        }
        // Going back: the queue's count less the segments from SND.NXT
        // on, or the segments below SND.NXT alone, whichever is shorter
        // to walk.
        let in_flight = |s: &Sent| {
            if s.sacked {
                0
            } else if s.lost {
                s.rack_rtx as u64
            } else {
                1
            }
        };
        let resend_from = self.sent.partition_point(|s| s.start < self.snd_nxt);
        if resend_from < self.sent.len() / 2 {
            self.sent.range(..resend_from).map(in_flight).sum()
        } else {
            self.sent.packets_in_flight() - self.sent.range(resend_from..).map(in_flight).sum::<u64>()
        }
    }

    /// Marks SACKed segments (and tells RACK, RFC 8985 §6.2 step 2).
    pub(super) fn take_sack(&mut self, now: Instant, seg: &Segment) -> Sacked {
        let mut out = Sacked::default();
        let mut oldest_sent: Option<Instant> = None;
        let samples_rate = self.samples_rate();
        let rack = &mut self.rack;
        let mut rate = samples_rate.then_some(&mut self.rate);
        for &(left, right) in seg.sack.as_slice() {
            if right <= self.snd_una || left >= right {
                continue;
            }
            let first = self.sent.partition_point(|s| s.end <= left);
            for i in first..self.sent.len() {
                let s = &self.sent[i];
                if s.start >= right {
                    break;
                }
                if s.sacked || s.start < left || s.end > right {
                    continue;
                }
                self.sent.update(i, |s| {
                    s.sacked = true;
                    out.bytes += s.end - s.start;
                    if out.newest.is_none_or(|(t, _, _)| s.last_sent > t) {
                        out.newest = Some((s.last_sent, s.delivered, s.delivered_time));
                    }
                    if !s.retransmitted && oldest_sent.is_none_or(|t| s.last_sent < t) {
                        oldest_sent = Some(s.last_sent);
                    }
                    rack.on_delivered(now, s.last_sent, s.end, s.retransmitted);
                    if let Some(rate) = rate.as_deref_mut() {
                        rate.on_delivered(&mut s.tx, s.last_sent, s.end, true);
                    }
                });
            }
        }
        out.oldest_rtt = oldest_sent.map(|t| now - t);
        out
    }

    /// Returns the bytes newly delivered by the cumulative ACK (not SACKed
    /// before).
    pub(super) fn on_new_ack(&mut self, now: Instant, ack: u64, sacked: &Sacked, ts: Option<Timestamp>) -> u64 {
        let flight_before = self.snd_max - self.snd_una;
        let acked = ack - self.snd_una;
        let taken = self.take_acked(now, ack, sacked.newest);
        self.stats.bytes_acked += taken.data_acked;
        // RFC 7323 §4: the echoed timestamp times the segment that caused
        // the ACK, retransmitted or not (millisecond clock, at least 1 ms
        // as Linux rounds it).
        let ts_rtt = ts
            .filter(|t| t.echo != 0)
            .map(|t| Duration::from_millis(self.ts_clock(now).wrapping_sub(t.echo).max(1) as u64));
        let estimator_sample = if self.config.rto_variant == RtoVariant::Linux {
            let seq = if taken.any_retransmitted { None } else { taken.oldest_rtt };
            seq.or(sacked.oldest_rtt).or(ts_rtt)
        } else {
            taken.rtt_sample.or(ts_rtt)
        };
        let ack_rtt = taken.rtt_sample.or(ts_rtt);
        self.rate.ack_rtt = ack_rtt;
        let delivered_now = sacked.bytes + taken.newly_delivered;
        self.delivered += delivered_now;
        self.delivered_time = now;
        let rate = taken
            .newest
            .map(|(_, delivered, at)| RateSample { delivered: self.delivered - delivered, interval: now - at });
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        if let Some(r) = estimator_sample {
            self.rtt.sample_at(r, self.snd_una, self.snd_max);
            self.stats.rtt_samples += 1;
        }
        self.dupacks = 0;
        self.limited_sent = 0;
        let sample = AckSample {
            bytes_acked: acked,
            delivered: delivered_now,
            rtt: ack_rtt,
            srtt: self.rtt.srtt(),
            flight_size: flight_before,
            mss: self.snd_mss,
            rate,
            snd_una: self.snd_una,
            snd_nxt: self.snd_max,
        };
        match self.recovery {
            None => self.cc.on_ack(now, &sample),
            Some(rec) => {
                self.recovery_on_new_ack(now, rec, ack, acked);
                if self.recovery.is_none()
                    && rec.kind == LossRecovery::Sack
                    && self.config.window_growth == WindowGrowth::Linux
                {
                    // Linux 6.18 tcp_input.c `tcp_ack`: `tcp_fastretrans_alert`
                    // leaves Recovery on this ACK (`tcp_try_undo_recovery`
                    // sets Open, `tcp_end_cwnd_reduction` cwnd = ssthresh)
                    // before `tcp_cong_control`, which, the state no longer
                    // reducing the window, grows it with the ACK's delivered
                    // segments (`tcp_may_raise_cwnd`, `tcp_cong_avoid`): the
                    // repaired hole counts toward the next increase.
                    self.cc.on_ack(now, &sample);
                }
            }
        }
        if self.sack_ok && !self.rack_on() {
            self.mark_lost();
        }
        // RFC 6298 §5.2–5.3.
        if self.snd_una >= self.snd_max {
            self.timers.stop(Timer::Rto);
        } else if !matches!(self.recovery, Some(r) if r.kind == LossRecovery::NewReno) {
            self.arm_rto(now);
        }
        taken.newly_delivered
    }

    /// Takes the segments the cumulative ACK `ack` covers off the
    /// retransmission queue (Linux's `tcp_clean_rtx_queue`), trimming one
    /// it covers in part; `newest` is the newest segment SACKed by the
    /// same ACK.
    fn take_acked(&mut self, now: Instant, ack: u64, newest: Option<(Instant, u64, Instant)>) -> Acked {
        let mut out = Acked { newest, ..Acked::default() };
        let model_based = self.samples_rate();
        while let Some(front) = self.sent.front() {
            if front.end <= ack {
                let mut s = self.sent.pop_front().expect("front exists");
                if !s.sacked {
                    out.newly_delivered += s.end - s.start;
                    self.rack.on_delivered(now, s.last_sent, s.end, s.retransmitted);
                    if model_based {
                        self.rate.on_delivered(&mut s.tx, s.last_sent, s.end, false);
                    }
                }
                out.data_acked += s.data_len();
                if s.data_len() > 0 {
                    self.stats.acked_segments += 1;
                    self.stats.ack_delay_sum_ns += (now - s.first_sent).as_nanos() as u128;
                }
                // Karn's rule: only segments sent once give a sample; the
                // newest acknowledged one is the least delayed by the ACK.
                out.rtt_sample = if s.retransmitted { None } else { Some(now - s.last_sent) };
                out.any_retransmitted |= s.retransmitted;
                if !s.retransmitted && out.oldest_rtt.is_none() {
                    out.oldest_rtt = Some(now - s.last_sent);
                }
                if out.newest.is_none_or(|(t, _, _)| s.last_sent > t) {
                    out.newest = Some((s.last_sent, s.delivered, s.delivered_time));
                }
            } else {
                if front.start < ack {
                    // Partly acknowledged (the receiver trimmed it).
                    let part = ack - front.start;
                    out.newly_delivered += part;
                    out.data_acked += part;
                    self.sent.update(0, |s| s.start = ack);
                }
                break;
            }
        }
        out
    }

    /// A new cumulative ACK during loss recovery `rec`, `acked` bytes
    /// beyond the old SND.UNA: Reno leaves recovery at once (RFC 5681
    /// §3.2 step 6); NewReno and SACK at the recovery point, NewReno
    /// retransmitting the next hole on a partial ACK (RFC 6582 §3.2 step
    /// 5), SACK moving HighRxt up (RFC 6675 §5).
    fn recovery_on_new_ack(&mut self, now: Instant, rec: Recovery, ack: u64, acked: u64) {
        let flight = self.snd_max - self.snd_una;
        let mss = self.snd_mss;
        match rec.kind {
            LossRecovery::Reno => {
                self.cc.on_recovery_end(now, flight, mss, rec.kind);
                self.recovery = None;
            }
            LossRecovery::NewReno | LossRecovery::Sack if ack >= rec.point => {
                self.cc.on_recovery_end(now, flight, mss, rec.kind);
                self.recovery = None;
                self.prr = None;
            }
            LossRecovery::NewReno => {
                // Partial ACK: the next hole is lost too.
                self.retransmit_now = Some(self.snd_una);
                self.cc.on_partial_ack(now, acked, mss);
                if !rec.partial_seen {
                    self.arm_rto(now);
                }
                if let Some(r) = &mut self.recovery {
                    r.partial_seen = true;
                }
            }
            LossRecovery::Sack => {
                let high_rxt = self.sent.high_rxt().max(self.snd_una);
                self.sent.set_high_rxt(high_rxt);
            }
            LossRecovery::None => self.recovery = None,
        }
    }

    pub(super) fn on_duplicate_ack(&mut self, now: Instant, sacked_more: bool) {
        self.dupacks += 1;
        self.stats.dupacks_received += 1;
        let mss = self.snd_mss;
        let kind = self.cc.recovery(self.sack_ok);
        if let Some(rec) = self.recovery {
            self.cc.on_recovery_dupack(now, mss, rec.kind);
            if rec.kind == LossRecovery::Sack && !self.rack_on() {
                self.mark_lost();
            }
            return;
        }
        if self.rack_on() {
            // RACK alone decides what is lost (RFC 8985 §6; Linux's
            // tcp_time_to_recover with RACK counts no duplicate ACKs).
            return;
        }
        let _ = sacked_more;
        if kind == LossRecovery::Sack {
            self.mark_lost();
        }
        let threshold_reached = self.dupacks == self.config.dupack_threshold
            || (kind == LossRecovery::Sack && self.sent.front().is_some_and(|s| s.lost));
        // Only once per window of data (RFC 6582 §3.2 step 2; RFC 6675
        // §5 uses RecoveryPoint the same way). Reno per RFC 5681 has no
        // such guard.
        let guarded = kind != LossRecovery::Reno && self.snd_una < self.recover;
        if !threshold_reached || guarded {
            return;
        }
        self.enter_loss_recovery(now, kind);
    }

    pub(super) fn enter_loss_recovery(&mut self, now: Instant, kind: LossRecovery) {
        let mss = self.snd_mss;
        let flight = self.snd_max - self.snd_una - self.limited_sent;
        let prior_cwnd = self.cc.window();
        self.stats.fast_retransmits += 1;
        self.cc.on_fast_retransmit(now, flight, mss, self.config.dupack_threshold, kind);
        self.recover = self.snd_max;
        // Recovery replaces the Loss state (one `icsk_ca_state` in Linux).
        self.in_loss = false;
        self.timers.stop(Timer::LossProbe);
        self.tlp_pending = false;
        match kind {
            LossRecovery::None => {
                // Tahoe: go back to the lost segment with a window of one.
                self.snd_nxt = self.snd_una;
            }
            _ => {
                self.recovery = Some(Recovery { kind, point: self.snd_max, partial_seen: false });
                self.sent.set_high_rxt(self.snd_una);
                if !(kind == LossRecovery::Sack && self.rack_on()) {
                    self.retransmit_now = Some(self.snd_una);
                }
                if kind == LossRecovery::Sack && self.config.prr && !self.cc.is_model_based() {
                    self.prr = Some(Prr::new(prior_cwnd, self.cc.ssthresh()));
                }
            }
        }
        self.arm_rto(now);
    }

    /// Some segment is marked lost and not delivered yet (Linux's
    /// `tp->lost_out` is not zero): retransmitted or not.
    pub(super) fn lost_out(&self) -> bool {
        self.sent.lost_out() > 0
    }

    /// Linux's `tcp_timeout_mark_lost` (tcp_input.c, from `tcp_enter_loss`)
    /// at `now`: every segment not SACKed is marked lost, a lost one whose
    /// retransmission is in flight too (that retransmission is lost with
    /// it: `tcp_mark_skb_lost` clears TCPCB_SACKED_RETRANS), but for those
    /// sent within the last RACK.rtt, the first segment excepted. A
    /// retransmission of a segment not marked lost (a loss probe's) keeps
    /// counting in flight, as TCPCB_SACKED_RETRANS stays on a segment that
    /// becomes lost. Returns the segments `tcp_sum_lost` counts: not lost
    /// before, or lost and retransmitted.
    pub(super) fn timeout_mark_lost(&mut self, now: Instant) -> u64 {
        let mut marked = 0;
        for i in 0..self.sent.len() {
            let s = &self.sent[i];
            if s.sacked || (s.lost && !s.rack_rtx) || (i > 0 && self.rack.sent_within_rtt(now, s.last_sent)) {
                continue;
            }
            marked += 1;
            self.sent.update(i, |s| {
                if s.lost {
                    s.rack_rtx = false;
                } else {
                    s.lost = true;
                }
            });
        }
        marked
    }

    /// RFC 6675 §4 IsLost over the whole scoreboard: a segment is lost when
    /// DupThresh segments, or more than (DupThresh − 1)·SMSS bytes, above it
    /// are SACKed.
    pub(super) fn mark_lost(&mut self) {
        let threshold = self.config.dupack_threshold as u64;
        let byte_limit = (threshold - 1) * self.snd_mss as u64;
        let (mut segments, mut bytes) = (0u64, 0u64);
        for i in (0..self.sent.len()).rev() {
            let s = &self.sent[i];
            if s.sacked {
                segments += 1;
                bytes += s.end - s.start;
            } else if !s.lost && (segments >= threshold || bytes > byte_limit) {
                self.sent.update(i, |s| s.lost = true);
            }
        }
    }

    /// RFC 6675 §4 SetPipe: unSACKed bytes not deemed lost, plus bytes
    /// retransmitted (below HighRxt).
    pub(super) fn pipe(&self) -> u64 {
        self.sent.pipe()
    }

    /// Bytes in flight during SACK recovery: RFC 6675's pipe, or with RACK
    /// Linux's count ([`Self::linux_bytes_in_flight`]).
    pub(super) fn in_flight(&self) -> u64 {
        if !self.rack_on() {
            return self.pipe();
        }
        self.linux_bytes_in_flight()
    }

    /// Linux's `tcp_packets_in_flight` (include/net/tcp.h), in bytes:
    /// packets_out − (sacked_out + lost_out) + retrans_out, what is
    /// outstanding less what is SACKed and what is marked lost, plus the
    /// lost segments retransmitted since. Every state counts it, Open and
    /// Disorder as well as Recovery.
    pub(super) fn linux_bytes_in_flight(&self) -> u64 {
        debug_assert_eq!(self.sent.bytes(), self.snd_max - self.snd_una, "the queue holds SND.UNA..SND.MAX");
        self.sent.bytes_in_flight()
    }

    /// The congestion window in force: PRR's during its recovery, the
    /// algorithm's otherwise.
    pub(super) fn cwnd(&self) -> u64 {
        match (&self.prr, self.recovery) {
            (Some(prr), Some(_)) => prr.window(),
            _ => self.cc.window(),
        }
    }

    /// RACK-TLP is on: configured, and both ends permitted SACK.
    pub(super) fn rack_on(&self) -> bool {
        self.config.loss_detection == LossDetection::Rack && self.sack_ok
    }

    /// RFC 8985 §6.2 steps 4–5 after an ACK that delivered data, or when
    /// the reordering timer fires: marks losses and arms the timer for the
    /// segments not due yet (`tcp_rack_mark_lost`: the wait rounded up to
    /// whole milliseconds plus two). Returns the bytes newly marked lost.
    pub(super) fn rack_detect_loss(&mut self, now: Instant) -> u64 {
        // Zero from Recovery on, the Loss state included
        // (`icsk_ca_state >= TCP_CA_Recovery`).
        let reo_wnd = self.rack.reo_wnd(
            self.rtt.srtt(),
            self.recovery.is_some() || self.in_loss,
            self.sent.sacked_out(),
            self.config.dupack_threshold as u64,
        );
        let (lost, wait) = self.rack.detect_loss(now, &mut self.sent, reo_wnd);
        self.timers.set_opt(
            Timer::Reorder,
            wait.map(|w| {
                let ms = w.as_nanos().div_ceil(1_000_000);
                now + Duration::from_millis(ms) + rack::TIMEOUT_MIN
            }),
        );
        lost
    }

    /// The reordering timer (`tcp_rack_reo_timeout`): losses found now
    /// start recovery as if one segment had been delivered.
    pub(super) fn on_reordering_timeout(&mut self, now: Instant) {
        if !self.rack_on() || self.snd_una >= self.snd_max {
            return;
        }
        let lost = self.rack_detect_loss(now);
        if lost == 0 {
            return;
        }
        self.rate.lost += lost.div_ceil(self.snd_mss.max(1) as u64);
        if self.recovery.is_none() && self.snd_una >= self.recover {
            self.enter_loss_recovery(now, LossRecovery::Sack);
            self.prr_on_ack(self.snd_mss as u64, false, false);
        }
    }

    /// RFC 6937 on an ACK during SACK recovery that delivered `delivered`
    /// bytes.
    pub(super) fn prr_on_ack(&mut self, delivered: u64, una_advanced: bool, newly_lost: bool) {
        if self.recovery.is_none() || self.prr.is_none() {
            return;
        }
        let in_flight = self.in_flight();
        let mss = self.snd_mss;
        if let Some(prr) = &mut self.prr {
            prr.on_ack(delivered, in_flight, mss, una_advanced, newly_lost);
        }
    }

    /// Arms the tail loss probe (RFC 8985 §7.2; Linux tcp_output.c
    /// `tcp_schedule_loss_probe`): in Linux's Open state (no recovery,
    /// not the Loss state, nothing SACKed: RACK handles holes) with data
    /// outstanding and no probe out, PTO = 2·SRTT plus 200 ms when one
    /// segment is out (the peer's delayed ACK) or 2 ms otherwise (1 s
    /// without an RTT sample), but never after the RTO would fire.
    /// `advancing_rto` when the RTO is being restarted now (an ACK of new
    /// data).
    pub(super) fn schedule_tlp(&mut self, now: Instant, advancing_rto: bool) {
        self.timers.stop(Timer::LossProbe);
        if !self.rack_on()
            || self.recovery.is_some()
            || self.in_loss
            || self.snd_una >= self.snd_max
            || self.tlp_high_seq.is_some()
            || !self.state.is_synchronized()
            || self.sent.sacked_out() > 0
        {
            return;
        }
        let mut pto = match self.rtt.srtt() {
            Some(srtt) => {
                let one_out = self.snd_max - self.snd_una <= self.snd_mss as u64;
                srtt.saturating_mul(2) + if one_out { TLP_DELAYED_ACK_ALLOWANCE } else { rack::TIMEOUT_MIN }
            }
            None => self.config.initial_rto,
        };
        let rto_left = if advancing_rto {
            Some(self.rtt.rto())
        } else {
            self.timers.get(Timer::Rto).map(|t| t.saturating_since(now))
        };
        if let Some(left) = rto_left.filter(|l| !l.is_zero()) {
            pto = pto.min(left);
        }
        self.timers.set(Timer::LossProbe, now + pto);
    }

    /// The ACK side of a loss probe (RFC 8985 §7.4; Linux
    /// `tcp_process_tlp_ack`): a probe of new data, or an ACK that only
    /// duplicates, ends the episode; an ACK beyond a retransmitted probe
    /// means the probe repaired a loss, and the window is reduced once as
    /// for a fast retransmit.
    pub(super) fn on_tlp_ack(&mut self, now: Instant, ack: u64, una_advanced: bool) {
        let Some(high) = self.tlp_high_seq else { return };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || !una_advanced {
            self.tlp_high_seq = None;
        } else if ack > high {
            let flight = self.snd_max - self.snd_una;
            let mss = self.snd_mss;
            self.cc.on_fast_retransmit(now, flight, mss, self.config.dupack_threshold, LossRecovery::Sack);
            self.cc.on_recovery_end(now, flight, mss, LossRecovery::Sack);
            self.tlp_high_seq = None;
        }
    }
}

/// What a cumulative ACK took off the retransmission queue: bytes newly
/// delivered (not SACKed before) and data bytes acknowledged, the RTT of
/// the last segment taken if it was sent once (Karn's rule), the RTT of
/// the oldest sent once and whether any was retransmitted (Linux's
/// `first_ackt` rule), and the newest segment delivered by the ACK.
#[derive(Clone, Copy, Debug, Default)]
struct Acked {
    newly_delivered: u64,
    data_acked: u64,
    rtt_sample: Option<Duration>,
    oldest_rtt: Option<Duration>,
    any_retransmitted: bool,
    newest: Option<(Instant, u64, Instant)>,
}

/// The walks over the retransmission queue that its counts replaced, kept
/// as their reference: the property test `rtx_counts` checks that each
/// count equals its walk after every step of random transfers.
#[cfg(test)]
impl Connection {
    pub(super) fn packets_in_flight_scan(&self) -> u64 {
        let resend_from = (self.snd_nxt < self.snd_max).then_some(self.snd_nxt);
        self.sent
            .iter()
            .filter(|s| !s.sacked && resend_from.is_none_or(|n| s.start < n))
            .map(|s| if s.lost { s.rack_rtx as u64 } else { 1 })
            .sum()
    }

    pub(super) fn linux_bytes_in_flight_scan(&self) -> u64 {
        self.sent.iter().filter(|s| !s.sacked && (!s.lost || s.rack_rtx)).map(|s| s.end - s.start).sum()
    }

    pub(super) fn pipe_scan(&self, high_rxt: u64) -> u64 {
        self.sent
            .iter()
            .filter(|s| !s.sacked)
            .map(|s| {
                let len = s.end - s.start;
                (if s.lost { 0 } else { len }) + (if s.end <= high_rxt && s.retransmitted { len } else { 0 })
            })
            .sum()
    }

    pub(super) fn sacked_out_scan(&self) -> u64 {
        self.sent.iter().filter(|s| s.sacked).count() as u64
    }

    pub(super) fn lost_out_scan(&self) -> u64 {
        self.sent.iter().filter(|s| s.lost && !s.sacked).count() as u64
    }

    pub(super) fn lost_unrepaired_scan(&self) -> u64 {
        self.sent.iter().filter(|s| s.lost && !s.rack_rtx && !s.sacked).count() as u64
    }

    pub(super) fn unsacked_unlost_scan(&self) -> u64 {
        self.sent.iter().filter(|s| !s.sacked && !s.lost).count() as u64
    }
}
