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
/// are used and the file is not read again).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryTrace {
    /// The file the opportunities were read from, as the scenario gave it.
    pub file: Option<String>,
    /// The opportunities' times within one loop, ms from the loop's start,
    /// not decreasing; the last is the loop's period and is above 0.
    pub opportunities_ms: Vec<u64>,
}

impl DeliveryTrace {
    /// A trace of the given opportunities (ms), with no file.
    pub fn from_millis(opportunities_ms: Vec<u64>) -> Self {
        DeliveryTrace { file: None, opportunities_ms }
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

/// The table form of [`DeliveryTrace`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveryTraceTable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default)]
    opportunities_ms: Vec<u64>,
}

impl Serialize for DeliveryTrace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DeliveryTraceTable { file: self.file.clone(), opportunities_ms: self.opportunities_ms.clone() }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for DeliveryTrace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Trace;
        impl<'de> serde::de::Visitor<'de> for Trace {
            type Value = DeliveryTrace;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a Mahimahi trace file like \"cell.down\", or { file = \"cell.down\", opportunities_ms = [1, 1, 2] }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DeliveryTrace, E> {
                Ok(DeliveryTrace { file: Some(v.to_string()), opportunities_ms: Vec::new() })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<DeliveryTrace, A::Error> {
                let t = DeliveryTraceTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(DeliveryTrace { file: t.file, opportunities_ms: t.opportunities_ms })
            }
        }
        d.deserialize_any(Trace)
    }
}

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
    fn refuses_bad_inline_values_naming_the_key() {
        assert!(DeliveryTrace::from_millis(vec![1, 1, 2]).validate("up.trace").is_ok());
        let e = DeliveryTrace::from_millis(vec![2, 1]).validate("up.trace").unwrap_err();
        assert_eq!(e.key, "up.trace.opportunities_ms[1]");
        assert!(DeliveryTrace::from_millis(vec![0]).validate("k").unwrap_err().message.contains("lasts no time"));
        assert!(DeliveryTrace::default().validate("k").unwrap_err().message.contains("no opportunities"));
    }
}
