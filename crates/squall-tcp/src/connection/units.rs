//! Linux's transmit units ([`TcpConfig::transmit_units`]): how much data
//! one send lets out, where PSH goes, and when a unit the window would cut
//! waits for the next ACK (net/ipv4/tcp_output.c `tcp_tso_autosize`,
//! `tcp_write_xmit`, `tcp_tso_should_defer`; net/ipv4/tcp_input.c
//! `tcp_update_pacing_rate`; net/ipv4/tcp.c `tcp_sendmsg_locked`,
//! `tcp_push`).
//!
//! Linux sends from a write queue of buffers (skbs), at most
//! `tcp_tso_autosize` segments at a time (`tcp_write_xmit`). Captures of
//! a Linux 6.18 bulk sender at 10 Mbit/s show PSH on every second segment
//! (gaps of 2 segments between PSH: 7 864 of 9 180), at 50 Mbit/s on
//! every fourth or fifth: the autosize at those rates. Our reading, not
//! traced further in the kernel: the writer, blocked on a full send
//! buffer, queues about what each ACK freed and `tcp_push` (from
//! `tcp_sendmsg_locked`'s wait for space) marks the end of it with PSH.
//! The model cuts the byte stream into units of the autosize, each ending
//! with PSH, and follows `tcp_tso_should_defer` (Linux 6.18, with the fix
//! "tcp: fix tcp_tso_should_defer() vs large RTT") for a unit the window
//! cuts.

use super::*;

/// `tcp_min_tso_segs`: the fewest segments in a unit.
const MIN_TSO_SEGS: u64 = 2;
/// `sk_pacing_shift`: a unit is about 1 ms (2^-10 s) at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE`: the largest unit, bytes.
const GSO_MAX_SIZE: u64 = 65_536;
/// `tcp_pacing_ss_ratio` and `tcp_pacing_ca_ratio`, percent.
const PACING_SS_RATIO: u64 = 200;
const PACING_CA_RATIO: u64 = 120;
/// `tcp_tso_win_divisor`: a third of the window is worth sending at once.
const TSO_WIN_DIVISOR: u64 = 3;
/// `tcp_tso_should_defer` defers only if data left within this time.
const DEFER_AFTER_SEND: Duration = Duration::from_millis(1);

impl Connection {
    /// Whether this connection sends in transmit units: configured, and a
    /// window-based algorithm (the model-based ones pace their own).
    pub(super) fn sends_units(&self) -> bool {
        self.config.transmit_units && !self.cc.is_model_based()
    }

    /// Linux's pacing rate without pacing (`tcp_update_pacing_rate`),
    /// bytes per second: max(cwnd, segments out)·MSS/SRTT at 200 % while
    /// cwnd is below half ssthresh, 120 % after. `None` before an RTT
    /// sample (the kernel then divides by nothing: no limit).
    pub(super) fn linux_pacing_rate(&self) -> Option<u64> {
        let srtt = self.rtt.srtt().filter(|s| !s.is_zero())?;
        let mss = self.snd_mss.max(1) as u64;
        let cwnd = self.cc.window() / mss;
        let ratio = if cwnd < self.cc.ssthresh() / mss / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
        let out = (self.snd_max - self.snd_una).div_ceil(mss);
        let bytes = u128::from(mss) * u128::from(ratio) * u128::from(cwnd.max(out)) * 1_000_000_000;
        Some((bytes / (100 * u128::from(srtt.as_nanos()))).min(u128::from(u64::MAX)) as u64)
    }

    /// Bytes in one transmit unit (`tcp_tso_autosize`): the pacing rate
    /// >> 10 in whole segments, at least 2, at most 64 KiB.
    pub(super) fn unit_bytes(&self) -> u64 {
        let mss = self.snd_mss.max(1) as u64;
        let bytes = self.linux_pacing_rate().map_or(GSO_MAX_SIZE, |r| r >> PACING_SHIFT).min(GSO_MAX_SIZE);
        (bytes / mss).max(MIN_TSO_SEGS) * mss
    }

    /// Where the unit that holds `start` ends: a new unit begins at
    /// `start` when the last one is used up.
    pub(super) fn unit_end(&mut self, start: u64) -> u64 {
        if self.unit_end <= start {
            self.unit_end = start + self.unit_bytes();
        }
        self.unit_end.min(self.app_end)
    }

    /// The window stopped new data inside a unit that was partly sent:
    /// the writer fills the tail it left up to a whole unit again.
    pub(super) fn top_up_cut_unit(&mut self) {
        if self.unit_cut {
            self.unit_cut = false;
            self.unit_end = self.snd_max + self.unit_bytes();
        }
    }

    /// `tcp_tso_should_defer` for the unit from `snd_max`, of which only
    /// `room` bytes fit the windows now: hold it for the next ACK if data
    /// left within 1 ms, the room is below a third of min(cwnd, peer's
    /// window), and the ACK of the oldest segment outstanding is due
    /// (its send time plus SRTT) within min(SRTT/2, 1 ms). Never in
    /// recovery or the Loss state.
    pub(super) fn defers_cut_unit(&self, now: Instant, room: u64, cwnd: u64) -> bool {
        if self.recovery.is_some() || self.in_loss {
            return false;
        }
        let Some(last) = self.last_data_sent else { return false };
        if now - last > DEFER_AFTER_SEND {
            return false;
        }
        if room >= self.snd_wnd.min(cwnd) / TSO_WIN_DIVISOR {
            return false;
        }
        let (Some(srtt), Some(head)) = (self.rtt.srtt(), self.sent.front()) else { return false };
        let expected_ack = head.last_sent + srtt;
        let threshold = Duration::from_nanos(srtt.as_nanos() / 2).min(DEFER_AFTER_SEND);
        // `how_far_is_the_ack` > threshold: the ACK is not coming soon.
        expected_ack <= now + threshold
    }
}
