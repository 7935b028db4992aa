//! The ideal flow completion time of a bulk transfer: its FCT alone on an
//! empty path, the denominator of the slowdown (FCT / ideal FCT) that
//! pFabric (Alizadeh et al., SIGCOMM 2013, §5: "normalized FCT") and Homa
//! (Montazeri et al., SIGCOMM 2018, §5.1: "slowdown") report per flow
//! size. Unlike theirs, which assume a sender at line rate from the first
//! byte, this one keeps what TCP cannot avoid on an empty path: the
//! handshake and slow start from the initial window.
//!
//! The count, with times from the client's SYN (FCT's start, as in
//! flows.csv) and a segment's one-way time through a path its
//! store-and-forward sum Σ (size·8 / rateᵢ + delayᵢ) over the path's
//! stages:
//!
//! 1. handshake: the SYN's one-way time there plus the SYN-ACK's back,
//!    t₀ (the client sends data as the SYN-ACK arrives, its ACK on the
//!    first data segment);
//! 2. slow start, one ACK per segment (quick-ACK mode; RFC 5681 §3.1: the
//!    window grows by one segment per ACK, so it doubles per round): round
//!    r sends wᵣ = IW·2ʳ segments, capped by the receive window and
//!    `max_window`, the last round what is left;
//! 3. a round's segments leave the bottleneck (the slowest stage, τ per
//!    full segment) back to back; round r + 1 reaches it one segment RTT
//!    after round r's first segment did (its ACK released it), or when
//!    round r has left, whichever is later:
//!    S₀ = t₀ + L_pre, S_{r+1} = S_r + max(RTT_seg, wᵣ·τ);
//! 4. the last byte arrives once the last round has crossed the
//!    bottleneck and the stages after it:
//!    FCT = S_last + (w_last − 1)·τ + τ_lastseg + L_post(last segment).
//!
//! Sizes on the wire are squall-tcp's (segment.rs `ip_size`): 40 bytes of
//! headers, 12 more for timestamps (the payload is as much smaller), SYNs
//! with their MSS, window-scale and SACK-permitted options. A stage's
//! jitter, allocation delay, service time, errors and rate overhead are
//! left out: the ideal path is the fixed part of the one given. The count
//! is exact for a path whose rated stages keep their rate and see no other
//! traffic (validation case 27 checks it against the simulator).

use squall_link::Direction;
use squall_link::{Duration, Rate};
use squall_scenario::{Scenario, TcpApp, TcpFlow, Topology};

/// Options of the handshake that are not on data segments: MSS (4),
/// window scale (4) and SACK-permitted (4, or in the timestamp
/// option's padding).
fn syn_size(ts: bool, ws: bool, sack: bool) -> u64 {
    40 + 4
        + if ws { 4 } else { 0 }
        + if ts {
            12
        } else if sack {
            4
        } else {
            0
        }
}

/// One stage's fixed delay and rate.
#[derive(Clone, Copy, Debug)]
struct Hop {
    delay: Duration,
    rate: Option<Rate>,
}

impl Hop {
    fn serialise(&self, bytes: u64) -> Duration {
        self.rate.map_or(Duration::ZERO, |r| r.transmission_time(bytes))
    }
}

/// The stages from host `from` to host `to`, in order.
fn hops(scenario: &Scenario, topology: &Topology, from: &str, to: &str) -> Option<Vec<Hop>> {
    let route = topology.route(topology.host_index(from)?, topology.host_index(to)?)?;
    Some(
        route
            .iter()
            .flat_map(|&p| {
                let path = &topology.paths[p];
                let link = &scenario.links[path.link];
                match path.direction {
                    Direction::Downlink => &link.downlink,
                    Direction::Uplink => &link.uplink,
                }
                .iter()
                .map(|st| Hop { delay: st.delay, rate: st.rate })
            })
            .collect(),
    )
}

/// One-way time of a packet of `bytes` through `hops`.
fn one_way(hops: &[Hop], bytes: u64) -> Duration {
    hops.iter().fold(Duration::ZERO, |t, h| t + h.serialise(bytes) + h.delay)
}

/// The ideal FCT, s, of the bulk flow `flow` (a member of an entry, its
/// size constant) of `scenario`, by the count above; `None` for another
/// application, an empty transfer or hosts without a route.
pub fn ideal_fct(scenario: &Scenario, topology: &Topology, flow: &TcpFlow) -> Option<f64> {
    let TcpApp::Bulk(size) = &flow.app else { return None };
    let bytes = size.as_constant()?.0;
    let config = crate::engine::tcp_config(flow, flow.rwnd().0, 0).ok()?;
    let fwd = hops(scenario, topology, &flow.from, &flow.to)?;
    let back = hops(scenario, topology, &flow.to, &flow.from)?;
    let ts = config.timestamps;
    let header = 40 + if ts { 12 } else { 0 };
    let payload = u64::from(config.mss).saturating_sub(if ts { 12 } else { 0 }).max(1);
    if bytes == 0 {
        return None;
    }
    let syn = syn_size(ts, config.window_scaling, config.sack);
    let t0 = one_way(&fwd, syn) + one_way(&back, syn);
    let full = payload + header;
    // The bottleneck: the stage slowest for a full segment.
    let (bn, _) = fwd.iter().enumerate().max_by_key(|(i, h)| (h.serialise(full), std::cmp::Reverse(*i)))?;
    let (pre, rest) = fwd.split_at(bn);
    let (bottleneck, post) = (rest[0], &rest[1..]);
    let tau = bottleneck.serialise(full);
    let rtt_seg = one_way(&fwd, full) + one_way(&back, header);
    let segments = bytes.div_ceil(payload);
    let last = bytes - (segments - 1) * payload + header;
    let cap = (config.rcv_buf.min(config.max_window) / payload).max(1);
    let mut window = u64::from(config.initial_window).min(cap);
    let mut left = segments;
    let mut start = t0 + one_way(pre, full);
    loop {
        let round = window.min(left);
        left -= round;
        if left == 0 {
            let fct = start
                + Duration::from_nanos(tau.as_nanos() * (round - 1))
                + bottleneck.serialise(last)
                + bottleneck.delay
                + one_way(post, last);
            return Some(fct.as_secs_f64());
        }
        start += rtt_seg.max(Duration::from_nanos(tau.as_nanos() * round));
        window = (window * 2).min(cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 Mbit/s and 10 ms each way, Linux defaults (IW 10, timestamps:
    /// 1448-byte payloads in 1500-byte packets, 60-byte SYNs, 52-byte
    /// ACKs).
    fn scenario(size: &str) -> (Scenario, TcpFlow) {
        let text = format!(
            "name = \"t\"\nduration = \"10 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\n\
             address = \"10.0.0.2\"\n[[links]]\nbetween = [\"a\", \"b\"]\n[[links.downlink]]\nname = \"d\"\n\
             rate = \"10 Mbit/s\"\ndelay = \"10 ms\"\n[[links.uplink]]\nname = \"u\"\nrate = \"10 Mbit/s\"\n\
             delay = \"10 ms\"\n[[workload.tcp]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\napp = {{ bulk = \"{size}\" }}\n"
        );
        let s = squall_scenario::parse("t.toml", &text, std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let f = s.workload.tcp[0].clone();
        (s, f)
    }

    fn ideal(size: &str) -> f64 {
        let (s, f) = scenario(size);
        ideal_fct(&s, &Topology::new(&s).unwrap(), &f).unwrap()
    }

    #[test]
    fn the_count_by_hand() {
        // Handshake: 60 B each way, 0.048 ms + 10 ms: t0 = 20.096 ms.
        // 100 B: one 152-byte segment, 0.1216 ms + 10 ms.
        assert!((ideal("100 B") - 0.0302176).abs() < 1e-9);
        // 14 480 B: ten full segments in the initial window, 10·1.2 ms.
        assert!((ideal("14480 B") - 0.042096).abs() < 1e-9);
        // 50 000 B: 35 segments (34·1448 + 768) in rounds of 10, 20, 5.
        // The segment RTT is 1.2 + 10 + 0.0416 (ACK) + 10 = 21.2416 ms;
        // round 1 (20 segments, 24 ms) outlasts it, so round 2 starts at
        // 20.096 + 21.2416 + 24 = 65.3376 ms and its last (820-byte)
        // segment arrives 4·1.2 + 0.656 + 10 ms later: 80.7936 ms.
        assert!((ideal("50000 B") - 0.0807936).abs() < 1e-9);
    }
}
