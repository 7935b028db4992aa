//! The scenario file's schema (DESIGN.md, "Scenario files").
//!
//! ```toml
//! name = "gsm-case-study"
//! duration = "300 s"
//! seed = 1
//!
//! [[hosts]]
//! name = "fixed"
//! address = "10.0.0.1"
//! [[hosts]]
//! name = "mobile"
//! address = "10.0.1.1"
//!
//! [[links]]
//! between = ["fixed", "mobile"]   # downlink: first -> second (towards the mobile end)
//! [[links.downlink]]              # stages in order
//! name = "gsm-down"
//! rate = "9600 bit/s"
//! delay = "200 ms"
//! queue = { packets = 7 }
//! send_buffer = "4 packets"
//! error = { packet = "1%" }
//! [[links.uplink]]
//! name = "gsm-up"
//! rate = "9600 bit/s"
//! delay = "200 ms"
//!
//! [[states]]
//! name = "weak-signal"
//! at = "40 s"
//! set.gsm-down = { error = { packet = "10%" } }
//!
//! [[blackouts]]
//! at = "60 s"
//! duration = "5 s"
//! direction = "downlink"
//! mode = "hold"
//!
//! [[workload.udp]]
//! name = "cbr"
//! from = "fixed"
//! to = "mobile"
//! size = "1000 B"
//! rate = "4800 bit/s"
//! ```

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use squall_link::dist::constant_or_table;
use squall_link::{BlackoutMode, Bytes, Distribution, Duration, Rate, StageConfig, StagePatch};

/// A whole scenario: network, states and workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Seed of the first replication; replication i uses `seed + i`.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// How long a run lasts (simulated time; the emulator's time limit).
    pub duration: Duration,
    #[serde(default = "default_replications")]
    pub replications: u32,
    pub hosts: Vec<Host>,
    pub links: Vec<Link>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<StateSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blackouts: Vec<BlackoutSpec>,
    #[serde(default)]
    pub workload: Workload,
}

fn default_seed() -> u64 {
    1
}
fn default_replications() -> u32 {
    1
}

/// A host: an end point, or a router/base station that forwards packets
/// not addressed to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    pub address: Ipv4Addr,
}

/// The two paths between two hosts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The two hosts; the downlink carries packets from the first to the
    /// second (towards the mobile end), the uplink the other way.
    #[serde(deserialize_with = "two_hosts")]
    pub between: [String; 2],
    /// Stages from `between[0]` to `between[1]`, in order.
    pub downlink: Vec<StageConfig>,
    /// Stages from `between[1]` to `between[0]`, in order.
    pub uplink: Vec<StageConfig>,
}

/// Exactly two host names (serde's fixed-size arrays ignore extra
/// elements in TOML).
fn two_hosts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[String; 2], D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    let n = v.len();
    <[String; 2]>::try_from(v).map_err(|_| {
        serde::de::Error::custom(format!(
            "a link joins exactly two hosts, found {n}; like between = [\"fixed\", \"mobile\"]"
        ))
    })
}

/// A named state: parameter changes applied to named stages at one
/// instant (seed 000 §5.1). With `at`, entered at that time; with `hold`,
/// part of a cycle in file order, each held for a time drawn from its
/// `hold`; with neither, entered only from outside (`squall ctl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Duration>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub hold: Option<Distribution<Duration>>,
    /// Stage name → the parameters to set on it.
    pub set: BTreeMap<String, StagePatch>,
}

/// Which paths a blackout stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlackoutDirection {
    Downlink,
    Uplink,
    Both,
}

/// A link blackout (seed 000 §3): from `at` for `duration`, the named
/// stages (default: every stage of the direction) send nothing; packets
/// are held or dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackoutSpec {
    pub at: Duration,
    pub duration: Duration,
    pub direction: BlackoutDirection,
    pub mode: BlackoutMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<String>>,
}

/// What runs over the network. In simulation, the built-in applications.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp: Vec<UdpFlow>,
}

/// How a UDP source spaces its packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponentially distributed gaps with the same mean.
    Poisson,
}

/// A UDP source on `from` sending to a sink on `to`.
///
/// The pace is set by exactly one of `rate` (bits per second of IP
/// packets; each gap is size·8/rate) or `interval` (a gap distribution).
/// `arrivals = "poisson"` makes the gaps exponential with the same mean.
/// With `on` and `off`, the source alternates between sending and silence
/// for times drawn from those distributions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpFlow {
    pub name: String,
    pub from: String,
    pub to: String,
    /// IP packet size, headers included (a constant or a distribution).
    #[serde(deserialize_with = "constant_or_table::deserialize")]
    pub size: Distribution<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub interval: Option<Distribution<Duration>>,
    #[serde(default)]
    pub arrivals: Arrivals,
    #[serde(default)]
    pub start: Duration,
    /// When the source stops (default: the end of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    /// Stop after this many packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub on: Option<Distribution<Duration>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub off: Option<Distribution<Duration>>,
    /// UDP ports (default: source 10000 + flow index, destination 5001).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// Send ECN-capable (ECT(0)) packets.
    #[serde(default)]
    pub ecn: bool,
}
