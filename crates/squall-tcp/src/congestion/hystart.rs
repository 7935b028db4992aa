//! HyStart, the hybrid slow start of Ha and Rhee (2011) as Linux's CUBIC
//! runs it (net/ipv4/tcp_cubic.c `hystart_update`, `cubictcp_acked`,
//! `bictcp_hystart_reset`). Not RFC 9406's HyStart++: Linux's CUBIC keeps
//! the original's two detectors and leaves slow start for good.
//!
//! A round starts when an ACK passes the highest sequence sent at the
//! previous round's start. From a window of 16 segments on, slow start
//! ends (ssthresh = cwnd) when
//!
//! - **ACK train**: ACKs keep arriving at most 2 ms apart for longer than
//!   half of (the minimum RTT + an ACK-delay allowance of at most 1 ms)
//!   since the round started: the window is about to fill the path;
//! - **delay increase**: the smallest RTT of the round's first 8 samples
//!   or more exceeds the minimum RTT by 1/8 of it, clamped to 4..16 ms: a
//!   queue is building.

use squall_link::{Duration, Instant};

/// Window, segments, below which HyStart does nothing (`hystart_low_window`).
pub const LOW_WINDOW: u64 = 16;
/// ACKs at most this far apart form a train (`hystart_ack_delta_us`).
const ACK_DELTA: Duration = Duration::from_millis(2);
/// Samples per round before the delay test (`HYSTART_MIN_SAMPLES`).
const MIN_SAMPLES: u32 = 8;
/// Bounds of the delay threshold (`HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`).
const DELAY_MIN: Duration = Duration::from_millis(4);
const DELAY_MAX: Duration = Duration::from_millis(16);
/// Upper bound of the ACK-delay allowance (`hystart_ack_delay`).
const ACK_DELAY_MAX: Duration = Duration::from_millis(1);
/// What `hystart_ack_delay` divides by the pacing rate: four 64 KiB GSO
/// packets.
const GSO_BURST_BYTES: u64 = 4 * 65_536;

/// Why slow start ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HyStartExit {
    AckTrain,
    DelayIncrease,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HyStart {
    /// Slow start was ended; nothing more until a timeout resets it.
    found: Option<HyStartExit>,
    round_start: Instant,
    last_ack: Instant,
    /// The round ends when an ACK passes this sequence number.
    end_seq: u64,
    /// The smallest RTT of this round, and how many samples it took.
    curr_rtt: Option<Duration>,
    samples: u32,
    /// The smallest RTT seen (`delay_min`).
    delay_min: Option<Duration>,
}

impl Default for HyStart {
    fn default() -> Self {
        HyStart {
            found: None,
            round_start: Instant::ZERO,
            last_ack: Instant::ZERO,
            end_seq: 0,
            curr_rtt: None,
            samples: 0,
            delay_min: None,
        }
    }
}

impl HyStart {
    /// How slow start was ended, if HyStart ended it.
    pub fn found(&self) -> Option<HyStartExit> {
        self.found
    }

    /// A retransmission timeout (`cubictcp_state` entering TCP_CA_Loss):
    /// the next slow start is watched again.
    pub fn reset(&mut self) {
        self.found = None;
        self.delay_min = None;
        self.samples = 0;
        self.curr_rtt = None;
    }

    /// An ACK in slow start with an RTT sample of `rtt`, the window being
    /// `cwnd_segments`, `snd_una` the new cumulative ACK point and
    /// `snd_nxt` the next sequence number to send; `pacing_rate` in bytes
    /// per second (Linux's default 200 % of cwnd/SRTT in slow start).
    /// Returns how slow start ends, if it ends now.
    pub fn on_ack(
        &mut self,
        now: Instant,
        rtt: Duration,
        cwnd_segments: u64,
        snd_una: u64,
        snd_nxt: u64,
        pacing_rate: Option<f64>,
    ) -> Option<HyStartExit> {
        let delay = rtt.max(Duration::from_micros(1));
        let min = *self.delay_min.get_or_insert(delay);
        let min = if delay < min {
            self.delay_min = Some(delay);
            delay
        } else {
            min
        };
        if self.found.is_some() {
            return None;
        }
        if snd_una > self.end_seq {
            // `bictcp_hystart_reset`: a new round.
            self.round_start = now;
            self.last_ack = now;
            self.end_seq = snd_nxt;
            self.curr_rtt = None;
            self.samples = 0;
        }
        if cwnd_segments < LOW_WINDOW {
            return None;
        }
        if now - self.last_ack <= ACK_DELTA {
            self.last_ack = now;
            let ack_delay = pacing_rate
                .filter(|&r| r > 0.0)
                .map_or(Duration::ZERO, |r| Duration::from_secs_f64(GSO_BURST_BYTES as f64 / r).min(ACK_DELAY_MAX));
            // Without pacing (the model sends at once) the train need only
            // last half the threshold.
            let threshold = Duration::from_nanos((min + ack_delay).as_nanos() / 2);
            if now - self.round_start > threshold {
                self.found = Some(HyStartExit::AckTrain);
                return self.found;
            }
        }
        let curr = self.curr_rtt.map_or(delay, |c| c.min(delay));
        self.curr_rtt = Some(curr);
        if self.samples < MIN_SAMPLES {
            self.samples += 1;
        } else {
            let eta = Duration::from_nanos(min.as_nanos() / 8).clamp(DELAY_MIN, DELAY_MAX);
            if curr > min + eta {
                self.found = Some(HyStartExit::DelayIncrease);
                return self.found;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn delay_increase_ends_slow_start() {
        // Minimum RTT 40 ms: the threshold is 40 + clamp(5, 4, 16) = 45 ms.
        // ACKs 5 ms apart (no train).
        let mut h = HyStart::default();
        let mut now = Instant::ZERO + ms(100);
        assert_eq!(h.on_ack(now, ms(40), 20, 1, 100, None), None);
        // A new round whose RTTs are 45 ms: not above 45, no exit.
        for i in 0..12 {
            now += ms(5);
            assert_eq!(h.on_ack(now, ms(45), 20, 101 + i, 200, None), None, "sample {i}");
        }
        // Next round at 46 ms: the first 8 samples are gathered (the 9th
        // tests), then 46 > 45 ends slow start.
        let mut exit = None;
        for i in 0..9 {
            now += ms(5);
            exit = exit.or(h.on_ack(now, ms(46), 20, 201 + i, 300, None));
        }
        assert_eq!(exit, Some(HyStartExit::DelayIncrease));
    }

    #[test]
    fn ack_train_longer_than_half_the_min_rtt_ends_slow_start() {
        // Minimum RTT 40 ms; ACKs 1 ms apart: the train exceeds 20 ms at
        // the 21st ACK of the round.
        let mut h = HyStart::default();
        let t0 = Instant::ZERO + ms(100);
        let mut exit_at = None;
        for i in 0..30u64 {
            let now = t0 + ms(i);
            if h.on_ack(now, ms(40), 20, 1 + i, 1000, None).is_some() {
                exit_at = Some(i);
                break;
            }
        }
        assert_eq!(exit_at, Some(21));
        // Below 16 segments nothing happens.
        let mut h = HyStart::default();
        assert!((0..30u64).all(|i| h.on_ack(t0 + ms(i), ms(40), 15, 1 + i, 1000, None).is_none()));
    }
}
