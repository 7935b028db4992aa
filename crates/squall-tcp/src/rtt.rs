//! Round-trip time estimation and the retransmission timeout.
//!
//! Read RFC 6298 ("Computing TCP's Retransmission Timer") first; Karn and
//! Partridge 1991 for why retransmitted segments give no sample and why the
//! backed-off RTO is kept until a valid sample arrives; seed 001 §3.2.1 for
//! the variant with "+1" tick and the order of the updates; Linux's
//! net/ipv4/tcp_input.c (`tcp_rtt_estimator`, `tcp_set_rto`) for
//! [`RtoVariant::Linux`].

use squall_link::Duration;

use crate::config::RtoVariant;

/// SRTT, RTTVAR and the backoff of one connection. Times are nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    variant: RtoVariant,
    srtt: Option<Duration>,
    rttvar: Duration,
    /// Current backoff factor, 1..=max_backoff (doubles per timeout).
    backoff: u32,
    max_backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
    initial_rto: Duration,
    granularity: Duration,
    /// The latest sample, for traces.
    latest: Option<Duration>,
    /// Linux's extra state (RtoVariant::Linux only).
    linux: LinuxVar,
}

/// Linux's estimator in its units, microseconds: `srtt8` is eight times
/// SRTT (kernel `srtt_us`), `mdev` four
/// times the mean deviation (kernel `mdev_us`), `rttvar` the term added to
/// SRTT (`rttvar_us`), `mdev_max` the largest `mdev` of the current window
/// (`mdev_max_us`), `rtt_seq` where that window ends (`rtt_seq`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct LinuxVar {
    srtt8: i64,
    mdev: i64,
    mdev_max: i64,
    rttvar: i64,
    rtt_seq: u64,
}

impl RttEstimator {
    pub fn new(
        variant: RtoVariant,
        min_rto: Duration,
        max_rto: Duration,
        initial_rto: Duration,
        granularity: Duration,
        max_backoff: u32,
    ) -> Self {
        RttEstimator {
            variant,
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 1,
            max_backoff: max_backoff.max(1),
            min_rto,
            max_rto,
            initial_rto,
            granularity,
            latest: None,
            linux: LinuxVar::default(),
        }
    }

    /// Takes a valid sample at a moment when the first unacknowledged
    /// sequence number is `snd_una` and the next to send `snd_nxt` (Linux's
    /// estimator decays its variance once per window of data; the other
    /// variants ignore both).
    pub fn sample_at(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        if self.variant != RtoVariant::Linux {
            return self.sample(r);
        }
        self.latest = Some(r);
        self.backoff = 1;
        // The kernel's arithmetic, in its units: microseconds, SRTT kept
        // eight times over (`srtt_us`), shifts rounding down.
        let mut m = (r.as_nanos() / 1000) as i64;
        let rto_min = (self.min_rto.as_nanos() / 1000) as i64;
        let v = &mut self.linux;
        if v.srtt8 == 0 {
            // "make sure rto = 3*rtt": mdev = 2R, rttvar = max(mdev, rto_min).
            v.srtt8 = (m << 3).max(1);
            v.mdev = m << 1;
            v.rttvar = v.mdev.max(rto_min);
            v.mdev_max = v.rttvar;
            v.rtt_seq = snd_nxt;
        } else {
            // SRTT = 7/8 SRTT + 1/8 R.
            m -= v.srtt8 >> 3;
            v.srtt8 = (v.srtt8 + m).max(1);
            if m < 0 {
                m = -m - (v.mdev >> 2);
                // A sample below SRTT moves mdev with gain 1/32, not 1/4
                // (the kernel's Eifel-like rule).
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= v.mdev >> 2;
            }
            v.mdev += m;
            if v.mdev > v.mdev_max {
                v.mdev_max = v.mdev;
                v.rttvar = v.rttvar.max(v.mdev_max);
            }
            if snd_una > v.rtt_seq {
                // Once per window: rttvar decays a quarter of the way to
                // the window's largest mdev, and the next window starts
                // at rto_min.
                if v.mdev_max < v.rttvar {
                    v.rttvar -= (v.rttvar - v.mdev_max) >> 2;
                }
                v.rtt_seq = snd_nxt;
                v.mdev_max = rto_min;
            }
        }
        self.srtt = Some(Duration::from_micros((v.srtt8 >> 3).max(1) as u64));
        self.rttvar = Duration::from_micros((v.mdev.max(0) >> 2) as u64);
    }

    /// Takes a valid sample (from a segment that was never retransmitted,
    /// Karn's rule) and resets the backoff (RFC 6298 §5, note after 5.7).
    pub fn sample(&mut self, r: Duration) {
        if self.variant == RtoVariant::Linux {
            return self.sample_at(r, 0, 0);
        }
        self.latest = Some(r);
        self.backoff = 1;
        let Some(srtt) = self.srtt else {
            // RFC 6298 §2.2 (and seed 001: "half the first sample").
            self.srtt = Some(r);
            self.rttvar = Duration::from_nanos(r.as_nanos() / 2);
            return;
        };
        let (s, v, r) = (srtt.as_nanos() as i128, self.rttvar.as_nanos() as i128, r.as_nanos() as i128);
        let (new_s, new_v) = match self.variant {
            // §2.3: RTTVAR first, from the old SRTT; beta 1/4, alpha 1/8.
            RtoVariant::Rfc6298 => ((7 * s + r) / 8, (3 * v + (s - r).abs()) / 4),
            // Seed 001: SRTT first, then RTTVAR from the new SRTT.
            RtoVariant::Seed001 | RtoVariant::Linux => {
                let ns = (7 * s + r) / 8;
                (ns, (3 * v + (r - ns).abs()) / 4)
            }
        };
        self.srtt = Some(Duration::from_nanos(new_s as u64));
        self.rttvar = Duration::from_nanos(new_v as u64);
    }

    /// A retransmission timeout: the RTO doubles, up to the largest backoff
    /// (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff * 2).min(self.max_backoff);
    }

    /// The current RTO, backoff included, within [min_rto, max_rto].
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => self.initial_rto,
            Some(srtt) => match self.variant {
                RtoVariant::Rfc6298 => srtt + self.granularity.max(self.rttvar.saturating_mul(4)),
                RtoVariant::Seed001 => srtt + self.rttvar.saturating_mul(4) + self.granularity,
                RtoVariant::Linux => {
                    // `__tcp_set_rto`: usecs_to_jiffies(srtt + rttvar),
                    // a jiffy being 1 ms.
                    let us = srtt.as_nanos() / 1000 + self.linux.rttvar.max(0) as u64;
                    Duration::from_millis(us.div_ceil(1000))
                }
            },
        };
        base.max(self.min_rto).saturating_mul(self.backoff as u64).min(self.max_rto)
    }

    /// The RTO without backoff (for the persist timer's base).
    pub fn base_rto(&self) -> Duration {
        let mut unbacked = self.clone();
        unbacked.backoff = 1;
        unbacked.rto()
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn rfc(min_rto: Duration) -> RttEstimator {
        RttEstimator::new(RtoVariant::Rfc6298, min_rto, Duration::from_secs(120), ms(1000), ms(1), 64)
    }

    #[test]
    fn rfc6298_by_hand() {
        let mut e = rfc(ms(200));
        assert_eq!(e.rto(), ms(1000), "initial RTO");
        e.sample(ms(100));
        // SRTT 100, RTTVAR 50, RTO = 100 + 4·50 = 300.
        assert_eq!((e.srtt(), e.rttvar(), e.rto()), (Some(ms(100)), ms(50), ms(300)));
        e.sample(ms(200));
        // RTTVAR = 3/4·50 + 1/4·|100-200| = 62.5; SRTT = 7/8·100 + 1/8·200 = 112.5.
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(112_500 + 250_000));
        // With the RFC's 1 s floor the same estimate gives 1 s.
        let mut e1 = rfc(ms(1000));
        e1.sample(ms(100));
        assert_eq!(e1.rto(), ms(1000));
    }

    #[test]
    fn seed001_variant_updates_srtt_first_and_adds_a_tick() {
        let mut e =
            RttEstimator::new(RtoVariant::Seed001, Duration::ZERO, Duration::from_secs(120), ms(1000), ms(10), 64);
        e.sample(ms(100));
        e.sample(ms(200));
        // SRTT = 112.5; RTTVAR = 3/4·50 + 1/4·|200-112.5| = 37.5 + 21.875 = 59.375.
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rttvar(), Duration::from_micros(59_375));
        // RTO = 112.5 + 4·59.375 + 10 = 360.
        assert_eq!(e.rto(), ms(360));
    }

    #[test]
    fn backoff_doubles_up_to_64_and_a_sample_resets_it() {
        let mut e = rfc(ms(200));
        e.sample(ms(100)); // RTO 300 ms
        let mut seen = vec![];
        for _ in 0..8 {
            e.back_off();
            seen.push(e.rto().as_nanos() / 1_000_000);
        }
        assert_eq!(seen, vec![600, 1200, 2400, 4800, 9600, 19200, 19200, 19200]);
        assert_eq!(e.backoff(), 64);
        e.sample(ms(100));
        assert_eq!(e.backoff(), 1);
    }

    #[test]
    fn linux_estimator_by_hand() {
        let mut e = RttEstimator::new(RtoVariant::Linux, ms(200), Duration::from_secs(120), ms(1000), ms(1), 1 << 15);
        // First sample 100 ms: SRTT 100, mdev 200, rttvar max(200, 200):
        // RTO 300 ms.
        e.sample_at(ms(100), 1, 10);
        assert_eq!(e.rto(), ms(300));
        // 60 ms, same window (snd_una 5 ≤ rtt_seq 10): err −40, SRTT 95;
        // |err| − mdev/4 = 40 − 50 < 0 so mdev = 200 − 10 = 190 (the 1/32
        // gain applies to positive corrections only); rttvar stays 200.
        e.sample_at(ms(60), 5, 20);
        assert_eq!(e.srtt(), Some(ms(95)));
        assert_eq!(e.rto(), ms(295));
        // 200 ms, next window (snd_una 11 > 10): err +105, SRTT 95 +
        // 13.125 = 108.125; mdev = 190 + 105 − 47.5 = 247.5 > mdev_max 200,
        // so rttvar 247.5; then the window ends: rttvar ≥ mdev_max, no
        // decay; RTO = ⌈108.125 + 247.5⌉ = 356 ms.
        e.sample_at(ms(200), 11, 30);
        assert_eq!(e.srtt(), Some(Duration::from_micros(108_125)));
        assert_eq!(e.rto(), ms(356));
        // Many 100 ms samples, one per window: SRTT returns to exactly 100
        // ms (kept ×8), mdev shrinks toward 0, and rttvar decays toward
        // rto_min by ⌊excess/4⌋ µs a window, which stalls 1 to 3 µs above
        // it (an excess of 3 loses ⌊3/4⌋ = 0): ⌈300.00x ms⌉ = 301 ms, the
        // "rto:201"-like figure `ss -i` shows on short paths.
        for i in 0..200 {
            e.sample_at(ms(100), 31 + 10 * i, 40 + 10 * i);
        }
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rto(), ms(301));
    }

    fn linux() -> RttEstimator {
        RttEstimator::new(RtoVariant::Linux, ms(200), Duration::from_secs(120), ms(1000), ms(1), 1 << 15)
    }

    /// Linux `tcp_rtt_estimator` (net/ipv4/tcp_input.c), first sample:
    /// `rttvar_us = max(mdev_us, tcp_rto_min_us(sk))`. With R = 60 ms,
    /// mdev = 2R = 120 ms is below rto_min = 200 ms, so rttvar is 200 ms
    /// and `tcp_set_rto` gives RTO = ⌈60 + 200⌉ = 260 ms (without the
    /// floor: 60 + 120 = 180, raised to rto_min 200).
    #[test]
    fn linux_first_rto_floors_rttvar_at_rto_min() {
        let mut e = linux();
        e.sample_at(ms(60), 1, 10);
        assert_eq!(e.srtt(), Some(ms(60)));
        assert_eq!(e.rttvar(), ms(30), "mdev/4 = 120/4");
        assert_eq!(e.rto(), ms(260));
    }

    /// Linux `tcp_rtt_estimator`, a sample well below SRTT: `if (m < 0) {
    /// m = -m; m -= (mdev_us >> 2); if (m > 0) m >>= 3; }`. After 100 ms
    /// (SRTT 100, mdev 200), a 20 ms sample: err = −80, SRTT = 100 − 10 =
    /// 90; |err| − mdev/4 = 80 − 50 = 30 > 0, shrunk to 30/8 = 3.75, so
    /// mdev = 203.75 ms (233.75 without the reduced gain: the full 1/4 gain
    /// would be 30). mdev passes mdev_max (200), so rttvar = 203.75 and
    /// RTO = ⌈90 + 203.75⌉ = 294 ms (320 without the reduced gain).
    #[test]
    fn linux_falling_rtt_moves_mdev_with_the_reduced_gain() {
        let mut e = linux();
        e.sample_at(ms(100), 1, 10);
        e.sample_at(ms(20), 5, 20);
        assert_eq!(e.srtt(), Some(ms(90)));
        assert_eq!(e.rttvar(), Duration::from_micros(50_937), "mdev/4 = 203.75/4, in whole µs");
        assert_eq!(e.rto(), ms(294));
    }

    /// RFC 6298 §2.3: RTO = SRTT + max(G, 4·RTTVAR). With a coarse 1 s
    /// clock and a first sample of 100 ms, 4·RTTVAR = 200 ms < G: RTO =
    /// 100 + 1000 = 1100 ms (300 ms if G were left out).
    #[test]
    fn rfc6298_clock_granularity_bounds_the_variance_term() {
        let mut e = RttEstimator::new(RtoVariant::Rfc6298, ms(200), Duration::from_secs(120), ms(1000), ms(1000), 64);
        e.sample(ms(100));
        assert_eq!(e.rto(), ms(1100));
        // Where 4·RTTVAR exceeds G the variance term wins: RTTVAR 500,
        // RTO = 1000 + 2000 = 3000 ms.
        e.sample(ms(100)); // SRTT 100, RTTVAR 37.5: still 100 + 1000
        assert_eq!(e.rto(), ms(1100));
        let mut w = RttEstimator::new(RtoVariant::Rfc6298, ms(200), Duration::from_secs(120), ms(1000), ms(1000), 64);
        w.sample(ms(1000));
        assert_eq!(w.rto(), ms(3000));
    }

    #[test]
    fn rto_is_capped() {
        let mut e = RttEstimator::new(RtoVariant::Rfc6298, ms(1000), ms(60_000), ms(1000), ms(1), 64);
        for _ in 0..7 {
            e.back_off();
        }
        assert_eq!(e.rto(), ms(60_000));
    }
}
