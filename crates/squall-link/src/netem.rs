//! Stage keys for netem's impairments that Seawind's channel has no word
//! for (tc-netem(8); Linux `net/sched/sch_netem.c`): duplication, sending
//! chosen packets early (netem's `reorder … gap`), overheads added to the
//! length a rate charges, and the four-state loss model. Each defaults to
//! off.

use serde::{Deserialize, Serialize};

use crate::dist::Distribution;
use crate::dist::correlated::Correlation;
use crate::error::ConfigError;
use crate::time::Duration;
use crate::units::{Bytes, Probability};

/// Duplicate packets as they enter the stage (tc-netem `duplicate P [C]`;
/// sch_netem.c `netem_enqueue`): with probability `probability` a copy
/// enters the stage too, just before the packet, and goes its own way
/// (its own queueing, errors and delay). A copy is never copied again.
///
/// ```toml
/// duplicate = { probability = "1%" }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Duplicate {
    pub probability: Probability,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Correlation>,
}

/// Send chosen packets without the stage's propagation delay and jitter
/// (tc-netem `reorder P [C] [gap N]`; sch_netem.c `netem_enqueue`): the
/// first `gap − 1` packets after each early one are always delayed; each
/// packet after them is sent early with probability `probability`, which
/// restarts the count. `gap = 1` (tc's default) makes every packet
/// eligible. Packets sent early overtake the delayed ones, so the stage
/// must let packets overtake (`reorder = true`).
///
/// ```toml
/// send_early = { probability = "25%", gap = 5 }
/// reorder = true
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendEarly {
    pub probability: Probability,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Correlation>,
    #[serde(default = "one")]
    pub gap: u32,
}

fn one() -> u32 {
    1
}

impl SendEarly {
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.gap == 0 {
            return Err(ConfigError::new(
                &format!("{key}.gap"),
                "must be at least 1 (1: every packet may go early; 5: at most every 5th), like gap = 5",
            ));
        }
        Ok(())
    }
}

/// Packets leave only at slot starts (tc-netem `slot MIN [MAX] [packets
/// N] [bytes B]` and `slot distribution DIST DELAY JITTER [packets N]
/// [bytes B]`; Linux net/sched/sch_netem.c `get_slot_next` and
/// `netem_dequeue`), as on a link that sends in bursts (Wi-Fi aggregation,
/// DOCSIS, LTE scheduling):
///
/// - a packet due (its delay spent) waits for the slot in force to start;
/// - a slot sends due packets, in order, until it has sent `packets`
///   packets or `bytes` bytes or more (the packet that passes the byte
///   budget still goes, as in the kernel); then the next slot starts
///   `interval` (one draw) later;
/// - a packet that becomes due after the slot in force started makes the
///   next slot start one draw after it (netem: `slot_next < time_to_send`
///   draws a new slot), so packets never leave between slot starts.
///
/// `slot MIN MAX` is `interval = { kind = "uniform", low = MIN, high = MAX }`
/// (netem draws in [MIN, MAX)); `slot MIN` is a constant; `slot distribution
/// normal D J` is `interval = { kind = "netem_table", table = "normal", mu =
/// D, sigma = J }`. Without `packets` and `bytes` a slot carries every
/// packet due at its start (netem's INT_MAX).
///
/// The stage's queue limit (`queue = { packets = N }`, netem's `limit N`)
/// counts every packet in the stage while it has slots: those queued,
/// those being delayed and those waiting for a slot, as netem's `limit`
/// counts every packet in its tfifo (sch_netem.c `netem_enqueue`:
/// `sch->q.qlen >= sch->limit` drops the arrival). A full stage drops the
/// arriving packet as a queue overflow, so slots that carry less than
/// arrives hold at most N packets.
///
/// squall draws a new slot at the instant a packet becomes due; netem, on
/// the dequeue that notices (at the packet's enqueue when the queue was
/// empty, then at its due time): with a delay in front of the slots, a
/// netem slot drawn at enqueue can end after the packet is due, and the
/// packet then leaves at that earlier-drawn slot instead.
///
/// ```toml
/// slot = { interval = { kind = "uniform", low = "800 us", high = "1 ms" }, packets = 32, bytes = "64 KB" }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Time from the start of one slot to the start of the next.
    #[serde(deserialize_with = "crate::dist::constant_or_table::deserialize")]
    pub interval: Distribution<Duration>,
    /// Packets a slot carries at most; absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u32>,
    /// Bytes after which a slot ends (the packet that reaches them goes);
    /// absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Bytes>,
}

impl Slot {
    /// The packets a new slot may carry (netem's `packets_left`).
    pub(crate) fn packet_budget(&self) -> i64 {
        self.packets.map_or(i64::from(i32::MAX), i64::from)
    }

    /// The bytes a new slot may carry (netem's `bytes_left`).
    pub(crate) fn byte_budget(&self) -> i64 {
        self.bytes.map_or(i64::from(i32::MAX), |b| i64::try_from(b.0).unwrap_or(i64::MAX))
    }

    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.packets == Some(0) {
            return Err(ConfigError::new(
                &format!("{key}.packets"),
                "must be at least 1 packet per slot (leave it out for no limit), like packets = 32",
            ));
        }
        if self.bytes.is_some_and(|b| b.0 == 0) {
            return Err(ConfigError::new(
                &format!("{key}.bytes"),
                "must be at least 1 B per slot (leave it out for no limit), like bytes = \"64 KB\"",
            ));
        }
        Ok(())
    }
}

/// Bytes added to the length a `rate` charges for a frame (tc-netem `rate
/// R [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]`; sch_netem.c
/// `packet_time_ns`): `len′ = len + packet`; with a `cell_size`, `len′ =
/// ⌈len′ / cell_size⌉ · (cell_size + cell)`. A negative `packet` takes
/// bytes off (−14 counts IP bytes where netem sees Ethernet frames); the
/// length never goes below 0. ATM: `{ packet = 0, cell_size = 48, cell = 5 }`.
///
/// ```toml
/// rate = "5 kbit/s"
/// rate_overhead = { packet = 20, cell_size = 100, cell = 5 }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateOverhead {
    /// Bytes added to every frame (may be negative).
    #[serde(default)]
    pub packet: i32,
    /// Cell payload in bytes; 0: no cells.
    #[serde(default)]
    pub cell_size: u32,
    /// Bytes added to every cell (may be negative).
    #[serde(default)]
    pub cell: i32,
}

impl RateOverhead {
    /// The length the rate charges for a frame of `bytes` bytes.
    pub fn charged(&self, bytes: u64) -> u64 {
        let len = (bytes as i64 + i64::from(self.packet)).max(0);
        if self.cell_size == 0 {
            return len as u64;
        }
        let cells = (len as u64).div_ceil(u64::from(self.cell_size)) as i64;
        (cells * (i64::from(self.cell_size) + i64::from(self.cell))).max(0) as u64
    }
}

/// The four-state Markov loss model of Salsano et al., "Definition of a
/// general and intuitive loss model for packet networks and its
/// implementation in the Netem module in the Linux kernel" (2012), as
/// sch_netem.c `loss_4state()` runs it (tc-netem `loss state p13 p31 p32
/// p23 p14`). States: 1 good reception within a gap, 2 good reception
/// within a burst, 3 loss within a burst, 4 isolated loss. A packet's fate
/// is that of the state the chain enters for it. Stationary loss
/// `(p13/p31 + p14) / (1 + p14 + (p13/p31)(1 + p32/p23))`; mean burst of
/// consecutive losses in state 3, `1/(p31 + p32)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FourState {
    /// 1 → 3: a burst starts.
    pub p13: Probability,
    /// 3 → 1: the burst ends and a gap begins.
    pub p31: Probability,
    /// 3 → 2: a good packet within the burst.
    #[serde(default)]
    pub p32: Probability,
    /// 2 → 3: back to losing within the burst.
    #[serde(default = "certain")]
    pub p23: Probability,
    /// 1 → 4: an isolated loss.
    #[serde(default)]
    pub p14: Probability,
}

fn certain() -> Probability {
    Probability::ONE
}

impl FourState {
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.p13.get() + self.p14.get() > 1.0 {
            return Err(ConfigError::new(key, "p13 + p14 must be at most 100% (both leave state 1)"));
        }
        if self.p31.get() + self.p32.get() > 1.0 {
            return Err(ConfigError::new(key, "p31 + p32 must be at most 100% (both leave state 3)"));
        }
        Ok(())
    }

    /// The stationary loss probability (Salsano et al. §3; worked from the
    /// chain's balance equations).
    pub fn stationary_loss(&self) -> f64 {
        let (p13, p31, p32, p23, p14) =
            (self.p13.get(), self.p31.get(), self.p32.get(), self.p23.get(), self.p14.get());
        let r = p13 / p31;
        (r + p14) / (1.0 + p14 + r * (1.0 + p32 / p23))
    }
}

impl crate::keys::Distributions for Duplicate {}
impl crate::keys::Distributions for SendEarly {}
impl crate::keys::Distributions for RateOverhead {}
crate::keys::struct_distributions!(Slot { interval });

#[cfg(test)]
mod tests {
    use super::*;

    /// tc-netem(8)'s example `rate 5kbit 20 100 5`: a 1000-byte frame
    /// charges 1000 + 20 = 1020 bytes, in ⌈1020/100⌉ = 11 cells of 100 + 5,
    /// so 1155 bytes; at 5 kbit/s that is 1.848 s. −14 on a 60-byte frame
    /// charges 46; −100 on 60 charges 0.
    #[test]
    fn overheads_round_up_to_cells_as_worked_by_hand() {
        let o = RateOverhead { packet: 20, cell_size: 100, cell: 5 };
        assert_eq!(o.charged(1000), 1155);
        assert_eq!(o.charged(80), 105);
        assert_eq!(o.charged(81), 210);
        assert_eq!(RateOverhead { packet: -14, cell_size: 0, cell: 0 }.charged(60), 46);
        assert_eq!(RateOverhead { packet: -100, cell_size: 0, cell: 0 }.charged(60), 0);
    }

    /// With tc's defaults (p31 = 1 − p13, p32 = 0, p23 = 1, p14 = 0) the
    /// chain is Bernoulli: the loss is p13. p13 = 1%, p31 = 50%, p32 = 0,
    /// p23 = 1, p14 = 0.1%: r = 0.02, (0.02 + 0.001)/(1.001 + 0.02) = 0.020568.
    #[test]
    fn stationary_loss_worked_by_hand() {
        let p = |v| Probability::new(v).unwrap();
        let bern = FourState { p13: p(0.05), p31: p(0.95), p32: p(0.0), p23: p(1.0), p14: p(0.0) };
        assert!((bern.stationary_loss() - 0.05).abs() < 1e-12);
        let s = FourState { p13: p(0.01), p31: p(0.5), p32: p(0.0), p23: p(1.0), p14: p(0.001) };
        assert!((s.stationary_loss() - 0.021 / 1.021).abs() < 1e-12);
    }
}
