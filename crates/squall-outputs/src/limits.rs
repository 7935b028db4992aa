//! What caps a TCP flow's throughput before the path does: its window
//! (the receive buffer `rwnd`, or `max_window`), the ACKs the reverse
//! path can carry, or its receiving application (`drain`), computed from the scenario alone, so that a
//! run that is window-limited says so instead of looking like a slow link
//! (issue 28).
//!
//! A sender with at most `W` bytes in flight sends `W` per round trip, so
//! it cannot go faster than `W / RTT` (the bandwidth-delay product,
//! RFC 1323 §1.1 "long fat pipes"; RFC 7323 §1.1). The round trip here is
//! the smallest the path allows: every stage's fixed `delay` both ways,
//! plus the serialisation of one full segment on every rated stage of the
//! forward path and of one ACK on every rated stage of the reverse path.
//! The bottleneck is the smallest `rate` on the forward path.

use serde::Serialize;
use squall_link::{Duration, StageConfig};
use squall_scenario::{Scenario, TcpFlow, Topology};

/// IPv4 and TCP headers without options (RFC 791, RFC 9293), bytes.
const HEADERS: u64 = 40;
/// The timestamp option with its padding (RFC 7323 §3), bytes.
const TIMESTAMPS: u64 = 12;

/// A flow's limit other than the path, as summary.json writes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Limit {
    /// `window`, `ack_path` or `application`.
    pub kind: &'static str,
    /// One line for people: the limit, how it is computed, the bottleneck.
    pub text: String,
    /// The limit, bits per second.
    pub rate_bps: f64,
    /// The path's bottleneck, bits per second.
    pub bottleneck_bps: f64,
}

/// A flow's name with its limit, for summary.json's `tcp_limits`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowLimit {
    pub flow: String,
    pub limited_by: Limit,
}

/// Every flow of `scenario` that its window or application caps below
/// its path's bottleneck.
pub fn tcp_limits(scenario: &Scenario) -> Vec<FlowLimit> {
    let Ok(topology) = Topology::new(scenario) else { return Vec::new() };
    scenario
        .workload
        .tcp
        .iter()
        .filter_map(|f| Some(FlowLimit { flow: f.name.clone(), limited_by: limit(scenario, &topology, f, None)? }))
        .collect()
}

/// The largest send and receive buffers (bytes) the Linux kernel gives a
/// TCP socket in one host's namespace: the third field of
/// `net.ipv4.tcp_wmem` and `net.ipv4.tcp_rmem`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelBuffers {
    pub wmem_max: u64,
    pub rmem_max: u64,
}

/// [`tcp_limits`] for the emulator, where real Linux runs the flows. A
/// flow whose window squall sets (`rwnd`, or the rfc profile: the bulk
/// tool's TCP_WINDOW_CLAMP) is limited as in the simulator; one left to
/// Linux's buffer autotuning (the linux profile without `rwnd`) can have
/// no more in flight than its sender's send buffer or its receiver's
/// receive buffer, at most `tcp_wmem` and `tcp_rmem`'s maximum
/// (Documentation/networking/ip-sysctl.rst); `buffers` gives them per
/// host name. Linux keeps part of each buffer for its own overhead, so
/// the rate said is an upper bound.
pub fn emu_tcp_limits(scenario: &Scenario, buffers: impl Fn(&str) -> Option<KernelBuffers>) -> Vec<FlowLimit> {
    let Ok(topology) = Topology::new(scenario) else { return Vec::new() };
    scenario
        .workload
        .tcp
        .iter()
        .filter_map(|f| {
            let autotuned = f.profile == squall_scenario::TcpProfile::Linux && f.rwnd.is_none();
            let kernel = autotuned
                .then(|| {
                    let send = buffers(&f.from)
                        .map(|b| (b.wmem_max, format!("net.ipv4.tcp_wmem max on `{}`, at most", f.from)));
                    let receive =
                        buffers(&f.to).map(|b| (b.rmem_max, format!("net.ipv4.tcp_rmem max on `{}`, at most", f.to)));
                    match (send, receive) {
                        (Some(s), Some(r)) => Some(if s.0 <= r.0 { s } else { r }),
                        (s, r) => s.or(r),
                    }
                })
                .flatten();
            if autotuned && kernel.is_none() {
                return None;
            }
            Some(FlowLimit { flow: f.name.clone(), limited_by: limit(scenario, &topology, f, kernel)? })
        })
        .collect()
}

/// The kernel's buffers for `host` in emulation: the scenario's own
/// `sysctl` for the host where it sets them, else this machine's (a new
/// network namespace starts with the initial namespace's values:
/// net/ipv4/tcp_ipv4.c `tcp_sk_init`).
pub fn kernel_buffers(scenario: &Scenario, host: &str) -> Option<KernelBuffers> {
    let max = |key: &str| -> Option<u64> {
        let set = scenario.hosts.iter().find(|h| h.name == host)?.sysctl.get(key).map(|v| v.0.clone());
        let text = match set {
            Some(v) => v,
            None => std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/"))).ok()?,
        };
        text.split_whitespace().nth(2)?.parse().ok()
    };
    Some(KernelBuffers { wmem_max: max("net.ipv4.tcp_wmem")?, rmem_max: max("net.ipv4.tcp_rmem")? })
}

/// The stages a packet from `from` to `to` crosses, in order.
fn stages<'a>(scenario: &'a Scenario, topology: &Topology, from: &str, to: &str) -> Option<Vec<&'a StageConfig>> {
    let route = topology.route(topology.host_index(from)?, topology.host_index(to)?)?;
    Some(
        route
            .into_iter()
            .flat_map(|p| {
                let link = &scenario.links[p / 2];
                if p % 2 == 0 { link.downlink.iter() } else { link.uplink.iter() }
            })
            .collect(),
    )
}

/// A stage whose sending time the scenario alone does not give (a radio,
/// a drawn service time, vacations, background load, an allocation
/// delay, link frames): with one on the path, no limit is claimed.
fn unpredictable(s: &StageConfig) -> bool {
    s.radio.is_some()
        || s.service_time.is_some()
        || !s.background.is_empty()
        || s.vacation.is_some()
        || s.allocation_delay.is_some()
        || s.fragmentation.is_some()
}

/// `window`: the bytes the flow can have in flight and what sets them,
/// when not its `rwnd` or `max_window` (the kernel's, in emulation).
fn limit(scenario: &Scenario, topology: &Topology, f: &TcpFlow, window: Option<(u64, String)>) -> Option<Limit> {
    // A split connection has two windows; timed states change the path.
    if f.proxy.is_some() || !scenario.states.is_empty() {
        return None;
    }
    let forward = stages(scenario, topology, &f.from, &f.to)?;
    let reverse = stages(scenario, topology, &f.to, &f.from)?;
    if forward.iter().chain(&reverse).any(|s| unpredictable(s)) {
        return None;
    }
    let bottleneck = forward.iter().filter_map(|s| s.rate).min()?;
    let timestamps = f.timestamps.unwrap_or(f.profile == squall_scenario::TcpProfile::Linux);
    // IP and TCP headers: 20 more over IPv6 (RFC 8200 §3).
    let (a, b) = (topology.host_index(&f.from)?, topology.host_index(&f.to)?);
    let v6 = topology.flow_addresses(a, b, f.ip_version).is_some_and(|(a, _)| a.is_ipv6());
    let headers = HEADERS + if v6 { 20 } else { 0 };
    let segment = f.mss().0 + headers;
    let ack = headers + if timestamps { TIMESTAMPS } else { 0 };
    let crossing = |stages: &[&StageConfig], bytes: u64| -> Duration {
        stages
            .iter()
            .fold(Duration::ZERO, |t, s| t + s.delay + s.rate.map_or(Duration::ZERO, |r| r.transmission_time(bytes)))
    };
    let rtt = (crossing(&forward, segment) + crossing(&reverse, ack)).as_secs_f64();
    let bottleneck_bps = bottleneck.bits_per_sec() as f64;
    let mut found: Option<Limit> = None;
    if rtt > 0.0 {
        let rwnd = window.as_ref().map_or(f.rwnd().0, |w| w.0);
        let rwnd_from = window.map_or_else(|| "rwnd".to_string(), |w| w.1);
        let (window, what) = match f.max_window.map(|w| w.bytes(f.mss().0)) {
            Some(m) if m < rwnd => (m, "max_window".to_string()),
            _ => (rwnd, rwnd_from),
        };
        let rate = window as f64 * 8.0 / rtt;
        if rate < bottleneck_bps {
            found = Some(Limit {
                kind: "window",
                text: format!(
                    "window-limited: {} ({what}) per {} RTT = {}, below the {} bottleneck",
                    bytes(window),
                    millis(rtt),
                    bits(rate),
                    bits(bottleneck_bps)
                ),
                rate_bps: rate,
                bottleneck_bps,
            });
        }
    }
    // ACK clocking (seed 004 §5.2, the asymmetric link): the reverse
    // path's slowest stage carries at most rate / (ACK bits) ACKs a
    // second, each acknowledging one segment, or two with delayed ACKs
    // (RFC 1122 §4.2.3.2).
    if let Some(up) = reverse.iter().filter_map(|s| s.rate).min() {
        let per_ack = match f.delayed_ack {
            Some(squall_scenario::DelayedAckSpec::Enabled(false)) => 1,
            _ => 2,
        };
        let acks = up.bits_per_sec() as f64 / (ack as f64 * 8.0);
        let rate = acks * per_ack as f64 * f.mss().0 as f64 * 8.0;
        if rate < bottleneck_bps && found.as_ref().is_none_or(|l| rate < l.rate_bps) {
            found = Some(Limit {
                kind: "ack_path",
                text: format!(
                    "ACK-limited: the reverse path carries at most {acks:.0} ACKs/s ({ack} B at {}), \
                     {per_ack} segment(s) of {} B each = {}, below the {} bottleneck",
                    bits(up.bits_per_sec() as f64),
                    f.mss().0,
                    bits(rate),
                    bits(bottleneck_bps)
                ),
                rate_bps: rate,
                bottleneck_bps,
            });
        }
    }
    if let Some(drain) = f.drain {
        let rate = drain.bits_per_sec() as f64;
        if rate < bottleneck_bps && found.as_ref().is_none_or(|l| rate < l.rate_bps) {
            found = Some(Limit {
                kind: "application",
                text: format!(
                    "application-limited: the receiver reads at {} (drain), below the {} bottleneck",
                    bits(rate),
                    bits(bottleneck_bps)
                ),
                rate_bps: rate,
                bottleneck_bps,
            });
        }
    }
    found
}

/// `65535 B` as `64 KiB`, `3145728 B` as `3 MiB`, else bytes.
fn bytes(b: u64) -> String {
    for (unit, scale) in [("MiB", 1u64 << 20), ("KiB", 1 << 10)] {
        if b >= scale {
            let v = b as f64 / scale as f64;
            return if (v - v.round()).abs() < 0.01 {
                format!("{:.0} {unit}", v.round())
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{b} B")
}

fn millis(s: f64) -> String {
    format!("{:.1} ms", s * 1e3)
}

fn bits(bps: f64) -> String {
    let (v, unit) = match bps {
        b if b >= 1e9 => (b / 1e9, "Gbit/s"),
        b if b >= 1e6 => (b / 1e6, "Mbit/s"),
        b if b >= 1e3 => (b / 1e3, "kbit/s"),
        b => (b, "bit/s"),
    };
    let v = format!("{v:.2}");
    format!("{} {unit}", v.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linux-profile bulk flow over 1 Gbit/s with 50 ms each way.
    fn scenario(flow_keys: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nduration = \"10 s\"\n\
             [[hosts]]\nname = \"fixed\"\naddress = \"10.0.0.1\"\n\
             [[hosts]]\nname = \"mobile\"\naddress = \"10.0.1.1\"\n\
             [[links]]\nbetween = [\"fixed\", \"mobile\"]\n\
             downlink = [{{ name = \"down\", rate = \"1 Gbit/s\", delay = \"50 ms\" }}]\n\
             uplink = [{{ name = \"up\", delay = \"50 ms\" }}]\n\
             [[workload.tcp]]\nname = \"bulk\"\nfrom = \"fixed\"\nto = \"mobile\"\n\
             app = {{ bulk = \"100 MB\" }}\n{flow_keys}"
        );
        squall_scenario::parse("t.toml", &text, std::path::Path::new(".")).unwrap()
    }

    /// Linux's autotuned buffers bound the flow: 4 MiB of send buffer per
    /// RTT (50 ms + 50 ms + 1500 B at 1 Gbit/s (12 µs) + the ACK's
    /// nothing on the unrated uplink = 100.012 ms) is 335.5 Mbit/s, by hand.
    #[test]
    fn emulated_linux_flow_is_bounded_by_the_kernels_buffers() {
        let s = scenario("");
        let buffers = |_: &str| Some(KernelBuffers { wmem_max: 4 << 20, rmem_max: 32 << 20 });
        let limits = emu_tcp_limits(&s, buffers);
        assert_eq!(limits.len(), 1, "{limits:?}");
        let l = &limits[0].limited_by;
        let hand = 4.0 * 1048576.0 * 8.0 / 0.100012;
        assert!((l.rate_bps - hand).abs() < 1.0, "{} against {hand}", l.rate_bps);
        assert_eq!(
            l.text,
            "window-limited: 4 MiB (net.ipv4.tcp_wmem max on `fixed`, at most) per 100.0 ms RTT = 335.5 Mbit/s, \
             below the 1 Gbit/s bottleneck"
        );
        // The simulator's linux profile has 3 MiB: a different bound.
        assert!((tcp_limits(&s)[0].limited_by.rate_bps - 3.0 * 1048576.0 * 8.0 / 0.100012).abs() < 1.0);
        // Large buffers: nothing to say.
        let big = |_: &str| Some(KernelBuffers { wmem_max: 64 << 20, rmem_max: 64 << 20 });
        assert!(emu_tcp_limits(&s, big).is_empty());
        // A flow with its own rwnd: the tool clamps the window to it, as
        // in the simulator, whatever the kernel's buffers.
        let s = scenario("rwnd = \"64 KiB\"");
        assert_eq!(emu_tcp_limits(&s, buffers), tcp_limits(&s));
    }

    /// A host's `sysctl` for the buffers is the namespace's value.
    #[test]
    fn a_hosts_sysctl_sets_its_buffers() {
        let mut s = scenario("");
        let host = s.hosts.iter_mut().find(|h| h.name == "fixed").unwrap();
        for (k, v) in [("net.ipv4.tcp_wmem", "4096 16384 1048576"), ("net.ipv4.tcp_rmem", "4096 131072 2097152")] {
            host.sysctl.insert(k.into(), squall_scenario::SysctlValue(v.into()));
        }
        assert_eq!(kernel_buffers(&s, "fixed"), Some(KernelBuffers { wmem_max: 1 << 20, rmem_max: 2 << 20 }));
    }
}
