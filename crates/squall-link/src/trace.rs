//! A trace-driven link's configuration: Mahimahi's delivery opportunities
//! (Netravali et al., "Mahimahi: Accurate Record-and-Replay for HTTP",
//! USENIX ATC 2015; `mm-link`, `src/frontend/link_queue.cc`).
//!
//! The link itself is [`crate::stage`]'s `TraceLink`; the file format is
//! read by squall-scenario (`mahimahi.rs`): this crate only sees the
//! numbers.

use serde::{Deserialize, Serialize};

/// The bytes one delivery opportunity carries: a 1 500-byte IP packet plus
/// the 4-byte packet-information header that mm-link's TUN device puts in
/// front of each packet (`link_queue.hh` `PACKET_SIZE`; the device is
/// opened without `IFF_NO_PI`, `src/util/netdevice.cc`).
pub const OPPORTUNITY_BYTES: u64 = 1504;

/// The bytes a packet costs on a trace link beyond its IP length: mm-link
/// counts the 4-byte TUN header it reads with each packet, and so does
/// squall, so that a 1 500-byte IP packet takes exactly one opportunity and
/// a trace gives the same IP throughput in both.
pub const PACKET_OVERHEAD_BYTES: u64 = 4;

/// A link whose service follows a Mahimahi trace: at each listed
/// millisecond, one opportunity to send [`OPPORTUNITY_BYTES`]; the list
/// loops with a period of its last value (mm-link
/// `use_a_delivery_opportunity`).
///
/// In a scenario: `trace = "cell.down"` (a file, relative to the scenario
/// file, read by the scenario loader), or in a run's resolved scenario
/// `trace = { file = "cell.down", opportunities_ms = [...] }` (the values
/// are used and the file is not read again). `once = true` in the table
/// form is mm-link's `--once`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryTrace {
    /// The file the opportunities were read from, as the scenario gave it.
    pub file: Option<String>,
    /// The opportunities' times within one loop, ms from the loop's start,
    /// not decreasing; the last is the loop's period and is above 0.
    pub opportunities_ms: Vec<u64>,
    /// mm-link's `--once`: the trace is played once, not looped. After its
    /// last opportunity the link sends nothing more, and the run ends at
    /// that instant, as mm-link's does (`link_queue.cc`
    /// `use_a_delivery_opportunity`: without `repeat_`, using the last
    /// opportunity throws "reached end of link recording" and the shell
    /// exits; later versions set `finished_` and stop there).
    pub once: bool,
}

impl DeliveryTrace {
    /// A trace of the given opportunities (ms), with no file, looped.
    pub fn from_millis(opportunities_ms: Vec<u64>) -> Self {
        DeliveryTrace { file: None, opportunities_ms, once: false }
    }

    /// The instant a trace played once ends the run (its last
    /// opportunity); `None` for a looped trace.
    pub fn end(&self) -> Option<crate::time::Instant> {
        let last = self.opportunities_ms.last().filter(|_| self.once)?;
        Some(crate::time::Instant::from_nanos(last * 1_000_000))
    }

    /// The loop's period in ms (the last opportunity), `None` when empty.
    pub fn period_ms(&self) -> Option<u64> {
        self.opportunities_ms.last().copied()
    }

    /// The link's capacity, bytes per second as mm-link counts them
    /// ([`OPPORTUNITY_BYTES`] per opportunity, 4 of them the TUN header).
    pub fn capacity_bytes_per_second(&self) -> f64 {
        match self.period_ms() {
            Some(p) if p > 0 => self.opportunities_ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 1000.0 / p as f64,
            _ => 0.0,
        }
    }

    /// The IP bytes per second a stream of `ip_size`-byte packets gets
    /// through the link when it is saturated: each packet costs
    /// `ip_size + 4` bytes of the opportunities' budget.
    pub fn ip_goodput_bytes_per_second(&self, ip_size: u32) -> f64 {
        let cost = ip_size as f64 + PACKET_OVERHEAD_BYTES as f64;
        self.capacity_bytes_per_second() * ip_size as f64 / cost
    }

    /// Checks what a trace must hold (the scenario loader has located
    /// errors for a file; these are for values given inline). `key` names
    /// the key in errors.
    pub fn validate(&self, key: &str) -> Result<(), crate::error::ConfigError> {
        use crate::error::ConfigError;
        let Some(&last) = self.opportunities_ms.last() else {
            return Err(ConfigError::new(
                key,
                "the trace has no opportunities; give a Mahimahi trace file, e.g. trace = \"cell.down\"",
            ));
        };
        if let Some(i) = self.opportunities_ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(ConfigError::new(
                &format!("{key}.opportunities_ms[{}]", i + 1),
                &format!(
                    "{} ms comes after {} ms; expected times that do not decrease",
                    self.opportunities_ms[i + 1],
                    self.opportunities_ms[i]
                ),
            ));
        }
        if last == 0 {
            return Err(ConfigError::new(
                key,
                "the last opportunity is at 0 ms, so the trace lasts no time; expected a last value above 0 (the loop's period)",
            ));
        }
        if last > MAX_PERIOD_MS {
            return Err(ConfigError::new(
                key,
                &format!("the trace lasts {last} ms; expected at most {MAX_PERIOD_MS} ms (about 116 days)"),
            ));
        }
        Ok(())
    }
}

/// The longest loop period, ms (squall-scenario's Mahimahi reader has the
/// same bound): squall's `u64` nanosecond clock holds 1 800 loops of it.
pub const MAX_PERIOD_MS: u64 = 10_000_000_000;

/// Records a stage's departures as a Mahimahi trace, as Saturator's
/// receiver recorded the packets it got (Winstein et al., "Stochastic
/// Forecasts Achieve High Throughput and Low Delay over Cellular
/// Networks", NSDI 2013, §3: one line per MTU-sized packet received, at
/// its millisecond). `departures` are (instant, IP size in bytes) in time
/// order. Each departure costs its IP size plus the 4-byte TUN header
/// ([`PACKET_OVERHEAD_BYTES`]), as on a trace link; every
/// [`OPPORTUNITY_BYTES`] of cost make one opportunity at the millisecond
/// of the departure that completes it, rounded up (an opportunity at ms
/// *m* serves what departed in (*m* − 1, *m*]); bytes left over at the
/// end make one more opportunity at the last departure's millisecond, so
/// the trace carries every byte that departed.
///
/// A run of 1 500-byte packets departing at whole milliseconds becomes
/// one line per departure at its exact instant: replayed (with `once`,
/// from the run's start) through the same queue with the same arrivals,
/// every packet departs when it did (`squall validate` case 29).
pub fn record_departures(departures: impl IntoIterator<Item = (crate::time::Instant, u32)>) -> Vec<u64> {
    let mut out = Vec::new();
    let mut credit = 0u64;
    let mut last_ms = None;
    for (at, size) in departures {
        let ms = at.as_nanos().div_ceil(1_000_000);
        credit += u64::from(size) + PACKET_OVERHEAD_BYTES;
        while credit >= OPPORTUNITY_BYTES {
            credit -= OPPORTUNITY_BYTES;
            out.push(ms);
        }
        last_ms = Some(ms);
    }
    if let (true, Some(ms)) = (credit > 0, last_ms) {
        out.push(ms);
    }
    out
}

/// The table form of [`DeliveryTrace`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveryTraceTable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default)]
    opportunities_ms: Vec<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    once: bool,
}

impl Serialize for DeliveryTrace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DeliveryTraceTable { file: self.file.clone(), opportunities_ms: self.opportunities_ms.clone(), once: self.once }
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for DeliveryTrace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Trace;
        impl<'de> serde::de::Visitor<'de> for Trace {
            type Value = DeliveryTrace;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a Mahimahi trace file like \"cell.down\", or { file = \"cell.down\", opportunities_ms = [1, 1, 2], once = true }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DeliveryTrace, E> {
                Ok(DeliveryTrace { file: Some(v.to_string()), opportunities_ms: Vec::new(), once: false })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<DeliveryTrace, A::Error> {
                let t = DeliveryTraceTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(DeliveryTrace { file: t.file, opportunities_ms: t.opportunities_ms, once: t.once })
            }
        }
        d.deserialize_any(Trace)
    }
}

impl crate::keys::Distributions for DeliveryTrace {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_counts_1504_bytes_per_opportunity_over_the_last_value() {
        // `1`: one opportunity per ms, 1 504 000 B/s = 12.032 Mbit/s.
        let one = DeliveryTrace::from_millis(vec![1]);
        assert_eq!(one.capacity_bytes_per_second() * 8.0, 12_032_000.0);
        // 1 500-byte IP packets: 1 500 B per ms = 12 Mbit/s of IP.
        assert_eq!(one.ip_goodput_bytes_per_second(1500) * 8.0, 12_000_000.0);
        // rattan's `1 1 2`: 3 opportunities every 2 ms = 18.048 Mbit/s.
        let rattan = DeliveryTrace::from_millis(vec![1, 1, 2]);
        assert_eq!(rattan.capacity_bytes_per_second(), 3.0 * 1504.0 * 500.0);
    }

    #[test]
    fn departures_become_one_opportunity_per_1504_bytes_at_their_ms_rounded_up() {
        let ms = |m: u64| crate::time::Instant::from_nanos(m * 1_000_000);
        // 1 500-byte packets: one line each, at their ms; 2.5 ms is in (2, 3].
        let mtu = [(ms(1), 1500), (ms(2), 1500), (crate::time::Instant::from_micros(2500), 1500)];
        assert_eq!(record_departures(mtu), [1, 2, 3]);
        // 100-byte packets cost 104 B: the 15th completes the first 1 504
        // (15 × 104 = 1 560, 56 carried over); 14 more (56 + 14 × 104 =
        // 1 512) complete the second; the 8 B left make a last one.
        let small: Vec<_> = (1..=29).map(|m| (ms(m), 100)).collect();
        assert_eq!(record_departures(small), [15, 29, 29]);
        // A 3 000-byte packet (3 004 B): one full opportunity and 1 500 B
        // left, a second at the end; followed by a 1 500-byte packet, the
        // 1 500 + 1 504 B complete one at 9 ms and leave 1 500 B for a last.
        assert_eq!(record_departures([(ms(7), 3000)]), [7, 7]);
        assert_eq!(record_departures([(ms(7), 3000), (ms(9), 1500)]), [7, 9, 9]);
        assert!(record_departures([]).is_empty());
    }

    #[test]
    fn a_trace_played_once_ends_at_its_last_opportunity() {
        let mut t = DeliveryTrace::from_millis(vec![1, 5]);
        assert_eq!(t.end(), None);
        t.once = true;
        assert_eq!(t.end(), Some(crate::time::Instant::from_nanos(5_000_000)));
    }

    #[test]
    fn refuses_bad_inline_values_naming_the_key() {
        assert!(DeliveryTrace::from_millis(vec![1, 1, 2]).validate("up.trace").is_ok());
        let e = DeliveryTrace::from_millis(vec![2, 1]).validate("up.trace").unwrap_err();
        assert_eq!(e.key, "up.trace.opportunities_ms[1]");
        assert!(DeliveryTrace::from_millis(vec![0]).validate("k").unwrap_err().message.contains("lasts no time"));
        assert!(DeliveryTrace::default().validate("k").unwrap_err().message.contains("no opportunities"));
    }
}
