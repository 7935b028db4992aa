//! The scenario file's schema (docs/design.md, "Scenario files").
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
//!
//! ## Radio stages (seed 002, WIPEMU)
//!
//! A stage with `radio = { ... }` sends with a slotted OFDM downlink
//! (`squall_link::radio::RadioConfig`): frames of `symbols_per_frame`
//! symbols, 1500 slots per second, fixed or adaptive modulation, link ARQ.
//! Its channel is generated (`kind = "fading"`) or measured:
//!
//! ```toml
//! [[links.downlink]]
//! name = "radio"
//! queue = { packets = 50 }
//! radio = { modulation = "adaptive", scheduling = "best", arq = { retries = 10, delay = "2 ms" },
//!           channel = { kind = "measured", file = "traces/snr.csv" } }
//! # with a predicted channel of the same shape (else it is made from the
//! # true SNR with the radio's prediction_nmse):
//! #   channel = { kind = "measured", file = { snr = "traces/snr.csv", predicted = "traces/snr-predicted.csv" } }
//! # or the values inline:
//! #   channel = { kind = "measured", snr_db = [[16.5, 12.0], [15.9, 13.1]] }
//! ```
//!
//! **Measured SNR files** are read relative to the scenario file
//! ([`crate::snr_file`]):
//!
//! - one line per slot, in time order, with one value per sub-channel: the
//!   SNR per symbol (Es/N0) in dB, a finite decimal number like `16.5`,
//!   `-3` or `1.2e1` (no NaN or infinity);
//! - values separated by commas (CSV), or, on a line without commas, by
//!   spaces or tabs (MATLAB's `save -ascii`);
//! - every line with the same number of values (sub-channels);
//! - `#` starts a comment to the end of the line; blank lines are skipped;
//! - optionally a header: the first line that is not blank or a comment may
//!   name the columns (none of its fields a number), one name per
//!   sub-channel, like `ch0,ch1,ch2`;
//! - at least one slot; the trace repeats when the run outlasts it;
//! - a predicted-SNR file has the same format, slots and sub-channels.
//!
//! ```text
//! # 3 slots of 2 sub-channels, dB
//! ch0,ch1
//! 16.5,12.0
//! 15.9,13.1
//! -2.4,14.0
//! ```
//!
//! A run's resolved scenario keeps the file names and the values read; the
//! values are used and the files not read again. Errors name the SNR
//! file, its line and column, and what was expected.
//!
//! **State changes** on a radio stage set radio parameters from the slot
//! that starts at the state's time (`squall_link::radio::RadioPatch`); the
//! channel's mean SNR shifts a measured trace, or scales a generated one:
//!
//! ```toml
//! [[states]]
//! name = "faster-modulation"
//! at = "10 s"
//! set.radio = { radio = { modulation = "16qam", channel = { mean_snr_db = 20 },
//!               prediction_nmse = 0.1, arq = { retries = 3 }, scheduling = { static = 2 } } }
//! ```

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
    /// Seed of the first replication; replication i uses `seed + i`
    /// (modulo 2^64: [`Scenario::replication_seed`]).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// How long a run lasts (simulated time; the emulator's time limit).
    pub duration: Duration,
    /// The simulator ends a run as soon as every `[[workload.tcp]]`
    /// application is done, instead of at `duration` (which stays the
    /// limit: a transfer not done by then is not `completed`). For
    /// experiments that measure how long a download takes under
    /// background load that never stops.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop_when_done: bool,
    #[serde(default = "default_replications")]
    pub replications: u32,
    pub hosts: Vec<Host>,
    /// Groups of hosts (crate::pattern), expanded into `hosts` by the
    /// loader: a loaded scenario has none left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_groups: Vec<HostGroup>,
    pub links: Vec<Link>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<StateSpec>,
    /// The states entered at the times of a file
    /// ([`crate::state_series`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_series: Option<crate::state_series_spec::StateSeriesSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blackouts: Vec<BlackoutSpec>,
    #[serde(default)]
    pub workload: Workload,
    /// Inline mode of `squall emu`: the two interfaces to sit between and
    /// which of their traffic crosses the link. The simulator ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<Inline>,
    /// Output vectors (`[[record]]`, crate::record): quantities sampled
    /// over time into vectors.csv.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record: Vec<crate::record::Record>,
}

/// `[inline]`: squall between two existing interfaces (seed 002 §II.A:
/// a gateway between two Ethernet interfaces; seed 003 §2: a box between
/// two ports), with the classifier of the multi-class stage choosing the
/// traffic that takes the link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inline {
    /// The interface on the side of `links[0].between[0]` (its frames take
    /// the downlink), then the other side's.
    pub interfaces: [String; 2],
    /// Rules as a classful queue's (`{ class = "pass", protocol = "udp",
    /// dst_port = 53 }`), first match wins, into two classes: `link`,
    /// carried through the scenario's link, and `pass`, handed straight to
    /// the other side (counted, not recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<squall_link::Rule>,
    /// The class of IP traffic no rule matches.
    #[serde(default)]
    pub default: InlineClass,
    /// Several clients on the first interface's side, each behind its own
    /// link to the one host on the other side (a gateway that gives every
    /// phone of a test bench its own profile). A frame read on the first
    /// interface takes the link of the first client whose `mac` is its
    /// source MAC or whose `prefix` holds its source address; a frame read
    /// on the second, that of the client it is for (destination MAC or
    /// address). Link traffic of no client is refused and counted
    /// (`refused.no_route` of the side it was read on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<InlineClient>,
}

/// `[[inline.clients]]`: one client of a multi-client inline box.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineClient {
    /// The scenario host that stands for it (one end of its link).
    pub host: String,
    /// Its Ethernet address, `"02:00:00:00:00:01"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<MacAddress>,
    /// Its addresses, a prefix of either family (`"10.9.0.1"`,
    /// `"10.9.1.0/24"`, `"fd09::/64"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<squall_link::IpPrefix>,
}

/// An Ethernet (EUI-48) address, written as six pairs of hex digits
/// separated by colons (IEEE 802 canonical form), `"02:00:00:00:00:01"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MacAddress(pub [u8; 6]);

impl std::str::FromStr for MacAddress {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("`{s}` is not an Ethernet address: six pairs of hex digits with colons, like \"02:00:00:00:00:01\"")
        };
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let part = parts.next().filter(|p| p.len() == 2).ok_or_else(bad)?;
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(MacAddress(out))
    }
}

impl std::fmt::Display for MacAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl Serialize for MacAddress {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddress {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Where inline traffic goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InlineClass {
    /// Through the scenario's link.
    #[default]
    Link,
    /// Straight to the other side, outside the model.
    Pass,
}

fn default_seed() -> u64 {
    1
}
fn default_replications() -> u32 {
    1
}

/// A host: an end point, or a router/base station that forwards packets
/// not addressed to it. It has an IPv4 address, an IPv6 address or both
/// (dual stack):
///
/// ```toml
/// [[hosts]]
/// name = "mobile"
/// address = "10.0.1.1"      # IPv4
/// address6 = "fd00::1:1"    # IPv6 (RFC 8200)
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    /// The host's IPv4 address.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "ipv4_address")]
    pub address: Option<Ipv4Addr>,
    /// The host's IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "ipv6_address")]
    pub address6: Option<Ipv6Addr>,
    /// Kernel settings for the host's network namespace in emulation,
    /// like `sysctl = { "net.ipv4.tcp_rmem" = "4096 131072 67108864" }`.
    /// Only `net.*` keys (the ones Linux keeps per namespace). The
    /// simulator ignores them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctl: BTreeMap<String, SysctlValue>,
    /// Emulation only: this host stands for everything beyond the
    /// scenario. Packets the model delivers to it leave the machine
    /// through this interface of the root namespace (like
    /// `outside_interface = "eth0"`), and their replies come back through
    /// it; addresses of no other host are routed to it. At most one host
    /// is outside; the simulator refuses such a scenario (it has no
    /// outside world).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_interface: Option<String>,
    /// Emulation only: the host is this existing network namespace, as
    /// `ip netns list` names it (`netns = "lab"`), instead of one squall
    /// makes. squall adds its device there with the host's address and
    /// routes, and undoes exactly that when the run ends. The simulator
    /// treats the host like any other (the key means nothing in virtual
    /// time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    /// Emulation only: the host is the network namespace of the process
    /// with this pid (`/proc/PID/ns/net`; how a Docker, Podman or
    /// systemd-nspawn container is reached: `docker inspect -f
    /// '{{.State.Pid}}' NAME`), as with `netns`. The simulator ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_pid: Option<u32>,
    /// A processing delay per packet at this host (seed 004's router and
    /// host processing delay), without a stage of its own:
    /// `processing = { delay = "50 us", at = "input" }`. Both engines apply
    /// it (`squall emu` in its data plane, as the packet reaches or leaves
    /// the host's device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processing: Option<Processing>,
    /// Simulator only: how long the host's own network stack takes with
    /// each packet it receives before its TCP, UDP or forwarding sees it
    /// (a real host's driver, softirq and socket path, which makes a Linux
    /// receiver's ACK leave 6–330 µs after the segment: docs/validation.md,
    /// "BBR at 200 ms: the hosts' turnaround"), a time or a distribution
    /// drawn per packet, in order within a flow as `processing`. The
    /// emulator's hosts are real stacks with a turnaround of their own:
    /// `squall emu` does not apply it, and says so. Absent: none, the
    /// host answers at the instant a packet arrives.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize",
        serialize_with = "constant_or_table::option::serialize"
    )]
    pub stack_delay: Option<Distribution<Duration>>,
    /// The local ports the simulator hands a TCP connection that names no
    /// port of its own (`ephemeral_ports = "40000-40009"`); absent: Linux's
    /// default, [`EphemeralPorts::LINUX`]. In emulation, the host's
    /// `net.ipv4.ip_local_port_range`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_ports: Option<EphemeralPorts>,
    /// Where the host's millisecond TCP timestamp clock ticks, in the
    /// simulator (squall-tcp's `TcpConfig::clock_phase`): the clock reads
    /// ⌊(t + `clock_phase`) / 1 ms⌋, so `clock_phase = "0.4 ms"` ticks
    /// 0.6 ms past every whole millisecond of the run. Below 1 ms. Absent:
    /// drawn from the replication's seed, uniform below 1 ms, since a real
    /// host's clock ticks at no particular moment of the network's events.
    /// In emulation the kernel's clock ticks where it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_phase: Option<Duration>,
    /// The `[[host_groups]]` entry the host belongs to (crate::pattern):
    /// a `count` or `arrivals` flow may name the group as its `from` or
    /// `to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// `address`: an IPv4 address, with a hint when it is an IPv6 one.
fn ipv4_address<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Ipv4Addr>, D::Error> {
    let text = String::deserialize(d)?;
    match text.trim().parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => Ok(Some(a)),
        Ok(IpAddr::V6(_)) => Err(serde::de::Error::custom(format!(
            "`{text}` is an IPv6 address: give it as address6 = \"{text}\" (address is the IPv4 one)"
        ))),
        Err(_) => Err(serde::de::Error::custom(format!(
            "`{text}` is not an IPv4 address; expected one like address = \"10.0.0.1\""
        ))),
    }
}

/// `address6`: an IPv6 address, with a hint when it is an IPv4 one.
fn ipv6_address<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Ipv6Addr>, D::Error> {
    let text = String::deserialize(d)?;
    match text.trim().parse::<IpAddr>() {
        Ok(IpAddr::V6(a)) => Ok(Some(a)),
        Ok(IpAddr::V4(_)) => Err(serde::de::Error::custom(format!(
            "`{text}` is an IPv4 address: give it as address = \"{text}\" (address6 is the IPv6 one)"
        ))),
        Err(_) => Err(serde::de::Error::custom(format!(
            "`{text}` is not an IPv6 address; expected one like address6 = \"fd00::1\""
        ))),
    }
}

impl Host {
    /// The host's addresses, as the model keeps them.
    pub fn addresses(&self) -> squall_link::Addresses {
        squall_link::Addresses { v4: self.address, v6: self.address6 }
    }

    /// Host `k` of group `group`: named `GROUP-k`, with `address` and
    /// `address6`.
    pub fn member(
        group: &str,
        k: u32,
        address: Ipv4Addr,
        address6: Option<Ipv6Addr>,
        ephemeral_ports: Option<EphemeralPorts>,
    ) -> Host {
        Host {
            name: format!("{group}-{k}"),
            address: Some(address),
            address6,
            sysctl: BTreeMap::new(),
            outside_interface: None,
            netns: None,
            netns_pid: None,
            processing: None,
            stack_delay: None,
            ephemeral_ports,
            clock_phase: None,
            group: Some(group.to_string()),
        }
    }
}

/// An inclusive range of local ports an operating system picks from when a
/// program connects without binding a port: Linux's
/// `net.ipv4.ip_local_port_range` (Documentation/networking/ip-sysctl.rst),
/// written `"LOW-HIGH"` with `1 <= LOW <= HIGH <= 65535`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EphemeralPorts {
    pub low: u16,
    pub high: u16,
}

impl EphemeralPorts {
    /// Linux's default range, 32768–60999 (`inet_init_net` in
    /// net/ipv4/af_inet.c; ip-sysctl.rst, `ip_local_port_range`).
    pub const LINUX: EphemeralPorts = EphemeralPorts { low: 32_768, high: 60_999 };

    /// How many ports the range holds.
    pub fn len(self) -> usize {
        usize::from(self.high) - usize::from(self.low) + 1
    }

    /// Never true: a range holds at least one port.
    pub fn is_empty(self) -> bool {
        false
    }

    /// Whether `port` is in the range.
    pub fn contains(self, port: u16) -> bool {
        (self.low..=self.high).contains(&port)
    }
}

impl std::fmt::Display for EphemeralPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

impl std::str::FromStr for EphemeralPorts {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected a range of ports \"LOW-HIGH\" with 1 <= LOW <= HIGH <= 65535, like \"32768-60999\"";
        let port = |t: &str| t.trim().parse::<u16>().ok().filter(|p| *p > 0);
        let Some((low, high)) = s.split_once('-').and_then(|(l, h)| Some((port(l)?, port(h)?))) else {
            return Err(format!("\"{s}\" is not a range of ports: {expected}"));
        };
        if low > high {
            return Err(format!("\"{s}\" starts above its end ({low} > {high}): {expected}"));
        }
        Ok(EphemeralPorts { low, high })
    }
}

impl Serialize for EphemeralPorts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EphemeralPorts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A host's processing delay: each packet the host receives (`at =
/// "input"`, the default: before it is delivered to an agent or
/// forwarded) or sends (`"output"`: its own packets and those it
/// forwards, before they enter the link) is held for a draw of `delay`.
/// A packet never overtakes an earlier packet of its flow at the host: it
/// leaves no earlier than the one before it (the rule of a stage with
/// `reorder = false`), so a random delay stretches the draws of packets
/// that would overtake, and a constant one leaves the order alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Processing {
    #[serde(deserialize_with = "constant_or_table::deserialize", serialize_with = "constant_or_table::serialize")]
    pub delay: Distribution<Duration>,
    #[serde(default)]
    pub at: ProcessingAt,
}

/// Where a host's processing delay applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessingAt {
    /// Packets the host receives.
    #[default]
    Input,
    /// Packets the host sends or forwards.
    Output,
}

/// A sysctl value as written to `/proc/sys`: a string (`"4096 131072
/// 67108864"`) or a whole number (`67108864`), kept as its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct SysctlValue(pub String);

impl<'de> Deserialize<'de> for SysctlValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SysctlValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a whole number, like \"4096 131072 67108864\" or 67108864")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SysctlValue, E> {
                Ok(SysctlValue(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SysctlValue, E> {
                Ok(SysctlValue(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SysctlValue, E> {
                Ok(SysctlValue(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
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

/// A link blackout (seed 000 §3, "temporal interruptions of service"):
/// from `at` for `duration`, the named stages (default: every stage of the
/// direction) send nothing; packets are held or dropped. `at` and
/// `duration` may be distributions (drawn from the run's seed), and with
/// `every` the blackout repeats, `every` after each start (start to
/// start); a start that falls inside the previous blackout extends it
/// (squall_link::state::Entry::Recurring). With `gap` instead, the next
/// blackout starts a drawn time after the previous one ends (end to
/// start): the link alternates on and off, as Mahimahi's `mm-onoff` (on
/// `at`, then off `duration`, on `gap`, ...).
///
/// ```toml
/// [[blackouts]]                       # tunnels: about one a minute, 2 to 6 s each
/// at = { kind = "exponential", mean = "60 s" }
/// every = { kind = "exponential", mean = "60 s" }
/// duration = { kind = "uniform", low = "2 s", high = "6 s" }
/// direction = "both"
/// mode = "hold"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackoutSpec {
    #[serde(deserialize_with = "constant_or_table::deserialize", serialize_with = "constant_or_table::serialize")]
    pub at: Distribution<Duration>,
    #[serde(deserialize_with = "constant_or_table::deserialize", serialize_with = "constant_or_table::serialize")]
    pub duration: Distribution<Duration>,
    /// Repeat: the time from one start to the next.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize",
        serialize_with = "constant_or_table::option::serialize"
    )]
    pub every: Option<Distribution<Duration>>,
    /// Repeat: the time from one blackout's end to the next's start.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize",
        serialize_with = "constant_or_table::option::serialize"
    )]
    pub gap: Option<Distribution<Duration>>,
    pub direction: BlackoutDirection,
    pub mode: BlackoutMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<String>>,
}

/// What runs over the network: in simulation the built-in applications
/// (`udp`, `tcp`), in emulation real programs (`commands`, seed 000 §5.1's
/// parallel workload generators).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp: Vec<UdpFlow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp: Vec<TcpFlow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<Command>,
}

/// A program the emulator runs in a host's network namespace:
///
/// ```toml
/// [[workload.commands]]
/// host = "mobile"
/// run = "squall tool bulk --server"
/// background = true                 # a server: stopped when the run ends
/// [[workload.commands]]
/// host = "fixed"
/// at = "0.2 s"
/// run = "squall tool bulk --client $SQUALL_MOBILE --bytes '2 MB' --cc cubic"
/// ```
///
/// The simulator refuses a scenario with commands (it cannot run real
/// programs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    pub host: String,
    /// When it starts, from the start of the run.
    #[serde(default)]
    pub at: Duration,
    /// A shell command line (`sh -c`).
    pub run: String,
    /// A server or helper: the run does not wait for it to exit.
    #[serde(default)]
    pub background: bool,
}

/// A TCP connection (or a series of them) opened by `from` (the client)
/// to `to` (the server), running the application `app`:
///
/// ```toml
/// [[workload.tcp]]
/// name = "download"
/// from = "fixed"
/// to = "mobile"
/// app = { bulk = "100 KB" }         # client → server; or { bulk_for = "60 s" },
///                                   # { request_response = { ... } }, { web = { ... } }
/// profile = "rfc"                  # the defaults below; "linux" when left out
/// cc = "reno"                       # tahoe, reno, newreno, sack, cubic, vegas
/// mss = "1460 B"
/// rwnd = "64 KiB"                   # receive buffer of each end
/// delayed_ack = "200 ms"            # or false
/// min_rto = "1 s"
/// limited_transmit = true           # RFC 3042
/// dupack_threshold = 3              # duplicate ACKs before fast retransmit
/// initial_window = 1                # segments
/// initial_ssthresh = 32             # segments, or bytes like "64 KB"
/// max_window = 50
/// ```
///
/// `profile` picks the defaults of the keys left out: Linux 6.x's
/// (`linux`, the default: `rwnd` 3 MiB, `delayed_ack` 40 ms
/// with quick-ACK mode, `min_rto` 200 ms and Linux's RTO estimator,
/// `initial_window` 10, SACK, timestamps, RACK-TLP loss detection, PRR,
/// Linux's window growth and HyStart for `cubic`; squall-tcp's
/// `TcpConfig::linux`) or RFC values (`rfc`: RFC 5681, 6298, 1122, as
/// documented per key below). A key given explicitly wins over either
/// profile. The scenarios that reproduce a paper name `rfc` explicitly.
///
/// With `proxy`, the named host between them splits the connection in two
/// (split TCP, seed 001 §3.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpFlow {
    pub name: String,
    pub from: String,
    pub to: String,
    /// The IP version the flow uses, 4 or 6; left out, IPv6 when both
    /// ends have an IPv6 address (a happy-eyeballs client's preference,
    /// RFC 8305 §4), else IPv4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<u8>,
    pub app: TcpApp,
    /// When the client opens its (first) connection: a time, or a
    /// distribution each flow of a `count` entry draws its start from
    /// (`{ kind = "uniform", low = "0 s", high = "10 s" }`).
    #[serde(
        default = "zero_start",
        deserialize_with = "constant_or_table::deserialize",
        serialize_with = "constant_or_table::serialize"
    )]
    pub start: Distribution<Duration>,
    /// The entry stands for this many flows, each drawing its `start` and
    /// its bulk size (`app = { bulk = DISTRIBUTION }`) on its own
    /// (crate::count has the expansion rule). Their results go to
    /// flows.csv, one row per flow, and to an aggregate in summary.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// The entry stands for an open-loop arrival process of flows
    /// (crate::count): new flows start at random gaps within a window,
    /// whatever the earlier ones are doing, each with a bulk size drawn
    /// from `app = { bulk = DISTRIBUTION }`. Their results go where a
    /// `count` entry's go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<FlowArrivals>,
    /// Whose defaults the keys left out take (default `linux`).
    #[serde(default, skip_serializing_if = "TcpProfile::is_linux")]
    pub profile: TcpProfile,
    #[serde(default)]
    pub cc: TcpCc,
    /// Largest payload of a segment (both ends announce it); with
    /// timestamps a segment carries 12 bytes less (1448 for 1460). Left
    /// out: a 1500-byte MTU's, 1460 over IPv4 and 1440 over IPv6 (RFC
    /// 9293 §3.7.1: the MTU less the IP and TCP headers; RFC 8200 §3: a
    /// 40-byte IPv6 header). Loading fills it in ([`TcpFlow::mss`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<Bytes>,
    /// Receive buffer of each end: the largest window it offers (`linux`, the
    /// default: 3 MiB; `rfc`: 64 KiB − 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd: Option<Bytes>,
    /// Offer window scaling (RFC 7323); without it windows stop at 65535 B
    /// (default on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_scaling: Option<bool>,
    /// Offer SACK (RFC 2018); on for every `cc` with `linux` (the
    /// default), for `sack` and `cubic` only with `rfc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sack: Option<bool>,
    /// Offer the timestamp option (RFC 7323 §3; `linux`, the default: on;
    /// `rfc`: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<bool>,
    /// The delayed-ACK timer, or `false` for an ACK per segment (`linux`,
    /// the default: 40 ms; `rfc`: 200 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<DelayedAckSpec>,
    /// Lower bound of the retransmission timeout (`linux`, the
    /// default: 200 ms; `rfc`: RFC 6298's 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rto: Option<Duration>,
    /// The RTO computation (`linux`, the default: `linux`; `rfc`:
    /// `rfc6298`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto: Option<RtoSpec>,
    /// Limited transmit (RFC 3042): a new segment on each of the first two
    /// duplicate ACKs (default on, as in Linux and ns-3).
    #[serde(default = "yes")]
    pub limited_transmit: bool,
    /// Duplicate ACKs that trigger fast retransmit, DupThresh (RFC 5681
    /// §3.2; RFC 6675 §4 IsLost counts as many SACKed segments; ns-3's
    /// `ReTxThreshold`; default 3). With RACK-TLP (the `linux` profile) it
    /// is Linux's initial reordering degree, `net.ipv4.tcp_reordering`
    /// (net/ipv4/tcp_recovery.c `tcp_rack_reo_wnd`): RACK's reordering
    /// window (RFC 8985 §6.2 step 4) is zero once this many segments are
    /// SACKed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dupack_threshold: Option<u32>,
    /// HyStart for `cubic` (`linux`, the default: on; `rfc`: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    /// Initial congestion window, segments (`linux`, the default: 10;
    /// `rfc`: 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_window: Option<u32>,
    /// Initial slow-start threshold (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_ssthresh: Option<WindowSize>,
    /// Largest congestion window (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_window: Option<WindowSize>,
    /// Rate at which each receiving application reads (default: at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<Rate>,
    /// A host on the route that splits the connection (split TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// The split-TCP proxy's buffer (default: `rwnd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_buffer: Option<WindowSize>,
    /// Client port of the first connection (default 20000 + 1000·flow
    /// index; each further connection takes the next) and server port
    /// (default 5000 + flow index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// Where the flows of a `count` or `arrivals` entry connect
    /// (crate::count): each to a server port of its own, `dst_port + k`
    /// (`"per_flow"`, the default), or all to one listening port,
    /// `dst_port` (`"shared"`), told apart by their client addresses and
    /// ports as an operating system's TCP tells connections apart.
    #[serde(default, skip_serializing_if = "ServerPorts::is_per_flow")]
    pub server_ports: ServerPorts,
    /// How the flows of a `count` or `arrivals` entry whose `from` or
    /// `to` names a host group (crate::pattern) pick their two hosts
    /// (crate::count has the rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<Pairing>,
}

/// The rule by which flow k of a `count` or `arrivals` entry picks its
/// client among the `from` hosts and its server among the `to` hosts (a
/// group, or one host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairing {
    /// Every flow to the one `to` host, from the `from` hosts in turn
    /// (flow k from host k mod n): incast.
    AllToOne,
    /// Flow k from `from` host k mod n to `to` host k mod n (both groups
    /// of n hosts): a dumbbell's pairs.
    Pairs,
    /// Flow k from a `from` host and to a `to` host drawn uniformly at
    /// random (streams `tcp/NAME/from` and `tcp/NAME/to`), never the same
    /// host at both ends.
    Random,
}

/// How the flows of a `count` or `arrivals` entry meet their servers
/// (`[[workload.tcp]]` `server_ports`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerPorts {
    /// Flow k's server listens on `dst_port + k`: at most 65536 −
    /// `dst_port` flows.
    #[default]
    PerFlow,
    /// Every flow connects to `dst_port`, one listening port on the
    /// server host; a connection is told apart by its 4-tuple (RFC 9293
    /// §3.3.2, "a connection is fully specified by the pair of sockets"),
    /// so the number of flows is bounded by the client hosts' ephemeral
    /// ranges, not by the port space.
    Shared,
}

impl ServerPorts {
    pub fn is_per_flow(&self) -> bool {
        *self == ServerPorts::PerFlow
    }
}

/// An open-loop arrival process of flows (`[[workload.tcp]]`
/// `arrivals`): exactly one of `poisson` and `gap`, and a window.
///
/// ```toml
/// arrivals = { poisson = { load = "60%", of = "bottleneck" }, from = "1 s", until = "9 s" }
/// arrivals = { gap = { kind = "uniform", low = "1 ms", high = "3 ms" } }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowArrivals {
    /// Poisson arrivals (exponential gaps) whose mean gives the stage
    /// `of` the offered load `load`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poisson: Option<PoissonLoad>,
    /// The gap between one flow's start and the next one's, drawn from a
    /// distribution (an empirical file of measured gaps too).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize",
        serialize_with = "constant_or_table::option::serialize"
    )]
    pub gap: Option<Distribution<Duration>>,
    /// The window flows start in: the first starts one gap after `from`
    /// (default 0 s), none at or after `until` (default: the run's end).
    #[serde(default)]
    pub from: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Duration>,
}

/// Poisson arrivals at an offered load: flows of mean size E[S] (the
/// entry's bulk size distribution) arriving at rate λ offer
/// λ·E[S]·8 bit/s, `load` of the stage `of`'s `rate` R, so the gaps are
/// exponential with mean E[S]·8 / (load · R) — the load definition of
/// pFabric (Alizadeh et al., SIGCOMM 2013, §5) and Homa (Montazeri et
/// al., SIGCOMM 2018, §5.1), counting application bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoissonLoad {
    /// Offered load, a share of the rate: `"60%"` or 0.6 (0 excluded).
    pub load: squall_link::Probability,
    /// The stage whose `rate` the load is a share of (a link's
    /// bottleneck, by its stage name).
    pub of: String,
}

fn zero_start() -> Distribution<Duration> {
    Distribution::constant(Duration::ZERO)
}

/// The MSS of a 1500-byte MTU over IPv4: 1500 − 20 − 20 (RFC 9293
/// §3.7.1).
pub const DEFAULT_MSS_IPV4: u64 = 1460;
/// The MSS of a 1500-byte MTU over IPv6: 1500 − 40 − 20 (RFC 8200 §3,
/// RFC 9293 §3.7.1).
pub const DEFAULT_MSS_IPV6: u64 = 1440;

impl TcpFlow {
    /// The flow's MSS: the one given, else [`DEFAULT_MSS_IPV4`] (a loaded
    /// scenario's IPv6 flows have theirs filled in).
    pub fn mss(&self) -> Bytes {
        self.mss.unwrap_or(Bytes(DEFAULT_MSS_IPV4))
    }
}
fn yes() -> bool {
    true
}

/// Whose defaults a `[[workload.tcp]]` flow takes for the keys it leaves
/// out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpProfile {
    /// RFC values (RFC 5681, 6298, 1122).
    Rfc,
    /// Linux 6.x with default sysctls (squall-tcp's `TcpConfig::linux`):
    /// the default, what a user of today's Linux expects.
    #[default]
    Linux,
}

impl TcpProfile {
    pub fn is_linux(&self) -> bool {
        *self == TcpProfile::Linux
    }
}

impl TcpFlow {
    /// The receive buffer: `rwnd`, or the profile's.
    pub fn rwnd(&self) -> Bytes {
        self.rwnd.unwrap_or(match self.profile {
            TcpProfile::Rfc => Bytes(65_535),
            TcpProfile::Linux => Bytes(3 << 20),
        })
    }
}

/// What the application on a TCP connection does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TcpApp {
    /// The client sends this many bytes, then closes: a size, or a
    /// distribution (an empirical file of measured sizes) each flow draws
    /// its size from.
    #[serde(deserialize_with = "constant_or_table::deserialize", serialize_with = "constant_or_table::serialize")]
    Bulk(Distribution<Bytes>),
    /// The client sends as fast as it can for this long, then closes.
    BulkFor(Duration),
    /// Requests and responses over one connection.
    RequestResponse(RequestResponse),
    /// A web page: objects fetched one after another, over one keep-alive
    /// connection or one connection per object.
    Web(WebPage),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestResponse {
    pub request: Bytes,
    pub response: Bytes,
    /// Exchanges (default 1).
    #[serde(default = "one")]
    pub count: u32,
    /// Pause between a response and the next request.
    #[serde(default)]
    pub think: Duration,
}

fn one() -> u32 {
    1
}

/// A web page or site, fetched the way wget 1.8 does (seed 003 §3): one
/// object at a time, each request sent when the previous response is
/// complete.
///
/// ```toml
/// app = { web = { objects = 20, size = { kind = "exponential", mean = "3 KB" } } }
/// # or a site manifest (CSV `path,bytes`, relative to the scenario file),
/// # its objects fetched in the file's order, with Apache's keep-alive limits:
/// app = { web = { site = "seed003-site.csv", keep_alive = true, max_requests = 100,
///                 keep_alive_timeout = "15 s", server_timeout = "300 s" } }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebPage {
    /// Objects to fetch (default: every file of `site`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<u32>,
    /// Size of each object (a constant or a distribution); give `size` or
    /// `site`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "constant_or_table::option::deserialize"
    )]
    pub size: Option<Distribution<Bytes>>,
    /// A site manifest: a CSV file of `path,bytes` lines (a header line
    /// `path,bytes` and `#` comments allowed), relative to the scenario
    /// file. The loader fills `site_files`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// The manifest's files in order, as the loader read them (a run's
    /// resolved scenario keeps them, so it repeats without the file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub site_files: Vec<SiteFile>,
    /// Size of each request.
    #[serde(default = "default_request")]
    pub request: Bytes,
    /// Persistent connections (HTTP keep-alive, Apache `KeepAlive`), or a
    /// new connection per object.
    #[serde(default = "yes")]
    pub keep_alive: bool,
    /// Requests on one connection before the server closes it (Apache
    /// `MaxKeepAliveRequests`; 0: no limit, the default).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_requests: u32,
    /// How long the server keeps an idle persistent connection open after
    /// a response before it closes it (Apache `KeepAliveTimeout`; default:
    /// forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive_timeout: Option<Duration>,
    /// How long the server waits for progress (a request's bytes, or an
    /// acknowledgement of what it sent) before it abandons a connection
    /// (Apache `Timeout`; default: forever). A site whose download cannot
    /// finish then fails: its flow is not `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timeout: Option<Duration>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One file of a site manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteFile {
    /// Path of the file under the site's root, like `img/0007.gif`.
    pub path: String,
    pub bytes: u64,
}

impl WebPage {
    /// How many objects a fetch takes: `objects`, or every site file.
    pub fn object_count(&self) -> u32 {
        self.objects.unwrap_or(self.site_files.len().min(u32::MAX as usize) as u32)
    }
}

fn default_request() -> Bytes {
    Bytes(300)
}

/// Congestion control of a TCP flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpCc {
    Tahoe,
    Reno,
    #[default]
    NewReno,
    Sack,
    Cubic,
    /// TCP Vegas (Brakmo and Peterson 1995), as Linux's tcp_vegas.c.
    Vegas,
    /// BBR v1 (Cardwell et al. 2016), as Linux's tcp_bbr.c.
    Bbr,
}

/// How the retransmission timeout is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoSpec {
    /// RFC 6298.
    #[default]
    Rfc6298,
    /// Seed 001 §3.2.1: backoff·(srtt + 4·rttvar + 1 tick).
    Seed001,
    /// Linux's estimator (net/ipv4/tcp_input.c `tcp_rtt_estimator`):
    /// RTO = SRTT + rttvar, rttvar at least `min_rto`.
    Linux,
}

/// `delayed_ack = "200 ms"` or `delayed_ack = false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DelayedAckSpec {
    /// `false`: an ACK for every segment; `true`: the 200 ms timer.
    Enabled(bool),
    Timer(Duration),
}

/// A window in segments (`32`) or bytes (`"64 KB"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WindowSize {
    Segments(u64),
    Bytes(Bytes),
}

impl WindowSize {
    /// Bytes, with segments of `mss` bytes.
    pub fn bytes(self, mss: u64) -> u64 {
        match self {
            WindowSize::Segments(n) => n.saturating_mul(mss),
            WindowSize::Bytes(b) => b.0,
        }
    }
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
    /// The IP version the flow uses, 4 or 6; left out, IPv6 when both
    /// ends have an IPv6 address, else IPv4 (as for TCP flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<u8>,
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

/// `[[host_groups]]`: `count` hosts named `NAME-k` (0 ≤ k < count) with
/// consecutive addresses in `prefix` (and in `prefix6`, if given).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostGroup {
    pub name: String,
    pub count: u32,
    /// The network the hosts' addresses come from: host k has the
    /// network's address + 1 + k, so the network and broadcast addresses
    /// stay unused (RFC 919, RFC 922).
    pub prefix: crate::prefix::Ipv4Prefix,
    /// The IPv6 network of the hosts' `address6`, if they get one: host k
    /// has the network's address + 1 + k (the network's own address is
    /// the subnet-router anycast address, RFC 4291 §2.6.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix6: Option<crate::prefix::Ipv6Prefix>,
    /// Each host's `ephemeral_ports` (see [`Host`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_ports: Option<EphemeralPorts>,
}
