//! Linux's transmit units ([`TcpConfig::transmit_units`]): how much data
//! one send lets out at once, where PSH goes, and when a unit the window
//! would cut waits for the next ACK (Linux 6.18 net/ipv4/tcp_output.c
//! `tcp_write_xmit`, `tcp_tso_segs`/`tcp_tso_autosize`, `tcp_cwnd_test`,
//! `tcp_mss_split_point`, `tso_fragment`, `tcp_tso_should_defer`,
//! `__tcp_transmit_skb`; net/ipv4/tcp_input.c `tcp_update_pacing_rate`).
//!
//! Linux queues a bulk writer's data in buffers (skbs) of up to 64 KiB.
//! Each pass of `tcp_write_xmit` takes from the head of that queue at most
//! min(`tcp_cwnd_test`, `tcp_tso_segs`) segments: the room the congestion
//! window leaves (at most half of it) and the unit `tcp_tso_autosize`
//! gives, about 1 ms at the pacing rate; `tso_fragment` cuts that much
//! off, and it goes to the device as one GSO packet. `__tcp_transmit_skb`
//! forces PSH on every such packet of more than one segment ("tcp: force
//! a PSH flag on TSO packets", Linux 5.4: "to expedite GRO flush at
//! receiver"); GSO puts it on the packet's last segment. A one-segment
//! packet cut from a larger buffer carries none (`tso_fragment` leaves
//! PSH to the tail). So a capture shows PSH at the end of every burst the
//! sender let out at once, whatever the window left for it: with 4-segment
//! units at 50 Mbit/s, an ACK that frees two segments when the deferral
//! below does not hold sends a 2-segment unit ending with PSH. A capture
//! of that point (cubic, 20 ms, 42-packet queue; 3–20 s) has 17 835 GSO
//! packets of two to five segments, each ending with PSH, and PSH gaps of
//! 2 (1 041) and 3 segments (543) where the model, which topped a cut unit
//! up to a whole one, had gaps of 6–8 (docs/validation.md, issue 31).
//!
//! `tcp_tso_should_defer` holds a unit the window would cut (less room
//! than the unit, and than the data queued) for the next ACK when data
//! left less than 1 ms ago, the room is below a third of
//! min(cwnd, peer's window) (`tcp_tso_win_divisor`) and the ACK of the
//! oldest segment outstanding is due within min(SRTT/2, 1 ms) (Linux 6.18
//! with "tcp: fix tcp_tso_should_defer() vs large RTT"); never in recovery
//! or after a timeout.
//!
//! It sends at once, though, when the rest of the writer's buffer at the
//! head of the write queue fits the room (`tcp_tso_should_defer`:
//! "Middle in queue won't get any more data, full sendable already?"; a
//! one-segment rest is not even asked, `tcp_write_xmit` sends it under
//! Nagle's test alone). A bulk writer fills buffers of
//! `tcp_xmit_size_goal` bytes one after the other (`tcp_sendmsg_locked`):
//! `sk_gso_max_size` (64 KiB less `MAX_TCP_HEADER` + 1, 65 215 bytes) at
//! most half the peer's largest window (`tcp_bound_to_half_wnd`), in
//! whole segments: 45 of 1 448 bytes. A rest shorter than the unit is
//! first grown from the next buffer (`tcp_write_xmit`'s `tcp_grow_skb`,
//! Linux 6.10), so what goes is min(room, half the window, the unit), as
//! for any unit. So a segment the ACK-soon rule holds behind the window
//! (a window increase that leaves room for one segment of a 4-segment
//! unit) waits at most until the next buffer boundary, 45 segments on,
//! not until the unit grows. In a capture of the 50 Mbit/s point (cubic,
//! 20 ms, 42 packets; 3–20 s), of 2 105 bursts of one to three segments
//! 650 left while the ACK was due within 1 ms: 426 across a buffer
//! boundary, 210 ending one, 14 otherwise.
//!
//! A buffer the writer pushed carries PSH on its last segment (net/ipv4/
//! tcp.c `tcp_sendmsg_locked`: `tcp_mark_push` when `forced_push`, and
//! `tcp_push` when the writer waits for memory or a write ends, the next
//! write clearing a mark on a buffer it appends to; `tso_fragment` leaves
//! the mark to the tail), so a one-segment unit that ends such a buffer
//! leaves with PSH, and the receiver ACKs it alone once read
//! (tcp_input.c `tcp_measure_rcv_mss`: ICSK_ACK_PUSHED), which shifts its
//! every-second-segment ACKs by one: 1-segment ACKs answered by 1-segment
//! units follow, a round trip apart. The model marks every buffer; which
//! ones Linux marks depends on when the writer blocks, which it does not
//! model: at reno 10 Mbit/s 20 ms 34 packets, 156 of the 344 one-segment
//! units that ended a buffer carried PSH in ten captures (issue 31, r34).
//!
//! Left out: the deferral of an application-limited tail (Linux holds the last
//! buffer even when it all fits, waiting for more data; here what the
//! application gave goes); the minimum-RTT term of `tcp_tso_autosize`
//! (64 KiB >> (min RTT in µs >> 9): less than a segment from a minimum
//! RTT of 3 ms up).

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
/// `sk_gso_max_size` (`sk_setup_caps`: the device's 64 KiB less
/// `MAX_TCP_HEADER` + 1, 320 + 1 on x86-64): the writer's buffer size
/// before `tcp_bound_to_half_wnd`.
const SK_GSO_MAX_SIZE: u64 = 65_536 - 321;
/// `TCP_MSS_DEFAULT`: `tcp_bound_to_half_wnd` halves only windows above it.
const DEFAULT_MSS: u64 = 536;
/// `tcp_tso_should_defer` defers only if data left within this time.
const DEFER_AFTER_SEND: Duration = Duration::from_millis(1);

/// One transmit unit: bytes `start..end` of the stream, let out at `at`
/// as one GSO packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Unit {
    start: u64,
    end: u64,
    at: Instant,
}

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

    /// Bytes in a whole transmit unit (`tcp_tso_segs`, `tcp_tso_autosize`):
    /// the pacing rate >> 10 in whole segments, at least 2, at most 64 KiB.
    pub(super) fn unit_bytes(&self) -> u64 {
        let mss = self.snd_mss.max(1) as u64;
        let bytes = self.linux_pacing_rate().map_or(GSO_MAX_SIZE, |r| r >> PACING_SHIFT).min(GSO_MAX_SIZE);
        (bytes / mss).max(MIN_TSO_SEGS) * mss
    }

    /// The transmit unit a new segment of `len` bytes at `start` belongs
    /// to, `room` bytes being what the windows let out now (`cwnd`, the
    /// congestion window without RFC 3042's allowance): the unit being
    /// sent at this instant, or a new one (`tcp_write_xmit` taking the
    /// next piece of the write queue); `None` if the new one waits for
    /// the next ACK (`tcp_tso_should_defer`).
    pub(super) fn transmit_unit(&mut self, now: Instant, start: u64, len: u64, room: u64, cwnd: u64) -> Option<Unit> {
        if let Some(unit) = self.unit.filter(|u| u.at == now && (u.start..u.end).contains(&start)) {
            return Some(unit);
        }
        let mss = self.snd_mss.max(1) as u64;
        // In recovery the caller's room ignores what is in flight:
        // `tcp_cwnd_test` counts it (PRR's window, the pipe).
        let room = match self.recovery {
            Some(_) => room.min(self.cwnd().saturating_sub(self.in_flight())),
            None => room,
        };
        let whole = self.unit_bytes();
        let queued = self.app_end - start;
        let buffer_rest = self.buffer_end(start).min(self.app_end) - start;
        if room < whole && room < buffer_rest && self.defers_unit(now, room, cwnd) {
            return None;
        }
        // `tcp_cwnd_test`: at most half the window in one unit, "to ensure
        // we have at least 2 GSO packets in flight".
        let half = (cwnd / mss / 2).max(1) * mss;
        // `tcp_mss_split_point`: whole segments of the room.
        let size = (room.min(half).min(whole) / mss * mss).min(queued).max(len);
        let unit = Unit { start, end: start + size, at: now };
        self.unit = Some(unit);
        Some(unit)
    }

    /// Where the writer's buffer holding `start` ends: buffers of
    /// `tcp_xmit_size_goal` bytes, one after another (a bulk writer fills
    /// each before starting the next, `tcp_sendmsg_locked`):
    /// `sk_gso_max_size` bounded by half the peer's largest window
    /// (`tcp_bound_to_half_wnd`), in whole segments, at least one.
    pub(super) fn buffer_end(&mut self, start: u64) -> u64 {
        let mss = self.snd_mss.max(1) as u64;
        let half_window = if self.max_snd_wnd > DEFAULT_MSS { self.max_snd_wnd / 2 } else { self.max_snd_wnd };
        let goal = if half_window > 0 { SK_GSO_MAX_SIZE.min(half_window) } else { SK_GSO_MAX_SIZE };
        let goal = (goal / mss).max(1) * mss;
        if self.buffer_end <= start {
            // The next buffer; a unit grown across the last boundary
            // (`tcp_grow_skb`) leaves `start` inside it.
            let next = self.buffer_end + goal;
            self.buffer_end = if self.buffer_end > 0 && next > start { next } else { start + goal };
        }
        self.buffer_end
    }

    /// Whether the segment `start..start + len` of `unit` gets PSH: it
    /// ends a unit of more than one segment (`__tcp_transmit_skb`).
    pub(super) fn ends_unit(&self, unit: Unit, start: u64, len: u64) -> bool {
        start + len >= unit.end && unit.end - unit.start > self.snd_mss as u64
    }

    /// Whether the segment `start..start + len` ends both `unit` and the
    /// writer's buffer that holds it: the buffer's PSH mark
    /// (`tcp_mark_push`) stays on its tail when `tso_fragment` cuts units
    /// off its head, so a one-segment unit that ends it carries PSH too (a
    /// unit grown across the boundary, `tcp_grow_skb`, shows PSH on its
    /// own last segment only). Every buffer counts as marked (see the
    /// module's notes).
    pub(super) fn ends_buffer(&mut self, unit: Unit, start: u64, len: u64) -> bool {
        len > 0 && start + len >= unit.end && start + len == self.buffer_end(start)
    }

    /// `tcp_tso_should_defer` for a unit of which only `room` bytes fit
    /// the windows now: hold it for the next ACK if data left within
    /// 1 ms, the room is below a third of min(cwnd, peer's window), and
    /// the ACK of the oldest segment outstanding is due (its send time
    /// plus SRTT) within min(SRTT/2, 1 ms). Never in recovery or the Loss
    /// state.
    pub(super) fn defers_unit(&self, now: Instant, room: u64, cwnd: u64) -> bool {
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
