//! Proportional rate reduction (RFC 6937) as Linux runs it
//! (net/ipv4/tcp_input.c `tcp_init_cwnd_reduction`, `tcp_cwnd_reduction`,
//! `tcp_end_cwnd_reduction`).
//!
//! During loss recovery the window is recomputed on every ACK as what is
//! in flight plus what may be sent now (`sndcnt`):
//!
//! - while pipe > ssthresh, the sending rate is the delivery rate scaled by
//!   ssthresh/prior_cwnd: sndcnt = ⌈prr_delivered·ssthresh/prior_cwnd⌉ −
//!   prr_out (RFC 6937 §3's proportional part, with Linux's cwnd at the
//!   start of recovery in place of RecoverFS);
//! - otherwise slow start back toward ssthresh: what was delivered and not
//!   yet sent again, or at least this ACK's delivery, one segment more when
//!   the cumulative ACK advanced without a new loss (RFC 6937's slow-start
//!   reduction bound; Linux 6.18's `tcp_cwnd_reduction`):
//!   sndcnt = min(ssthresh − pipe, max(prr_delivered − prr_out, delivered)
//!   [+ 1 SMSS]);
//! - on the first ACK of recovery at least one segment (the fast
//!   retransmit).
//!
//! Units are bytes, the proportional share rounded up to whole segments as
//! the kernel's packet counts are.

/// One PRR episode, from the start of loss recovery to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prr {
    /// The congestion window when recovery began (`prior_cwnd`).
    prior_cwnd: u64,
    /// The target window (`snd_ssthresh`).
    ssthresh: u64,
    /// Bytes delivered (ACKed or SACKed) since recovery began
    /// (`prr_delivered`).
    delivered: u64,
    /// Bytes sent since recovery began (`prr_out`).
    out: u64,
    /// The window PRR allows now.
    cwnd: u64,
}

impl Prr {
    /// Recovery begins with a congestion window of `prior_cwnd` and the
    /// algorithm's new `ssthresh`, both bytes.
    pub fn new(prior_cwnd: u64, ssthresh: u64) -> Self {
        Prr { prior_cwnd: prior_cwnd.max(1), ssthresh, delivered: 0, out: 0, cwnd: prior_cwnd }
    }

    /// An ACK during recovery that delivered `delivered` bytes, after which
    /// `pipe` bytes are in flight; `una_advanced` when the cumulative ACK
    /// moved, `newly_lost` when the ACK marked segments lost. An ACK that
    /// delivers nothing leaves the window alone.
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, mss: u32, una_advanced: bool, newly_lost: bool) {
        if delivered == 0 {
            return;
        }
        let mss = mss as u64;
        self.delivered += delivered;
        let sndcnt = if pipe > self.ssthresh {
            // Rounded up to whole segments, as the kernel's packet counts.
            let share = (self.delivered as u128 * self.ssthresh as u128).div_ceil(self.prior_cwnd as u128) as u64;
            (share.div_ceil(mss) * mss).saturating_sub(self.out)
        } else {
            let mut n = self.delivered.saturating_sub(self.out).max(delivered);
            if una_advanced && !newly_lost {
                n += mss;
            }
            n.min(self.ssthresh - pipe)
        };
        // Force the fast retransmit on the first ACK of recovery.
        let sndcnt = if self.out == 0 { sndcnt.max(mss) } else { sndcnt };
        self.cwnd = pipe + sndcnt;
    }

    /// `bytes` were sent (retransmitted or new) during recovery.
    pub fn on_send(&mut self, bytes: u64) {
        self.out += bytes;
    }

    /// The congestion window PRR allows, bytes.
    pub fn window(&self) -> u64 {
        self.cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    #[test]
    fn halving_sends_one_segment_per_two_delivered() {
        // RFC 6937 §3's example: cwnd 20 segments, one loss, ssthresh 10.
        // Each ACK SACKs one segment. While pipe > ssthresh PRR allows
        // ⌈delivered·10/20⌉ segments in all: 1, 1, 2, 2, 3, ... (one per
        // two ACKs), the first being the fast retransmit.
        let mut prr = Prr::new(20_000, 10_000);
        let mut pipe = 18_000; // 20 − 1 lost − 1 SACKed
        let mut sent = vec![];
        for k in 1..=16u64 {
            prr.on_ack(1000, pipe, MSS, false, false);
            let allowed = prr.window().saturating_sub(pipe) / 1000;
            for _ in 0..allowed {
                prr.on_send(1000);
                pipe += 1000;
            }
            sent.push(prr.out / 1000);
            assert_eq!(prr.out / 1000, (k * 10).div_ceil(20), "after {k} ACKs");
            pipe -= 1000; // the next ACK's SACKed segment leaves the pipe
        }
        assert_eq!(sent[..6], [1, 1, 2, 2, 3, 3]);
    }

    #[test]
    fn below_ssthresh_it_catches_up_on_what_was_delivered() {
        // Pipe 6 segments below ssthresh 10 after heavy losses: an ACK that
        // advances snd_una and delivers 2 segments (1 sent so far) allows
        // max(2 − 1, 2) + 1 = 3.
        let mut prr = Prr::new(20_000, 10_000);
        prr.on_send(1000);
        prr.on_ack(2000, 6000, MSS, true, false);
        assert_eq!(prr.window(), 9000);
        // Without the cumulative ACK moving: prr_delivered − prr_out =
        // 4 − 1 = 3 (more than the 2 delivered), no extra segment.
        prr.on_ack(2000, 6000, MSS, false, false);
        assert_eq!(prr.window(), 9000);
        // Capped by ssthresh − pipe.
        prr.on_ack(2000, 9500, MSS, true, false);
        assert_eq!(prr.window(), 10_000);
    }
}
