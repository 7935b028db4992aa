//! The input queue: limits in packets and bytes, tail or head drop, RED with
//! ECN marking (Floyd & Jacobson 1993; RFC 3168 §7), and a maximum sojourn
//! time checked when a packet leaves the queue.

use std::collections::VecDeque;

use crate::config::{DropPolicy, QueueConfig, RedConfig};
use crate::dist::unit;
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// A packet waiting in the queue, with the time it arrived.
#[derive(Debug)]
pub struct Queued {
    pub packet: Packet,
    pub since: Instant,
}

/// What the queue did with an arriving packet.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    Enqueued {
        marked: bool,
    },
    /// The arriving packet was refused by RED.
    RedDrop,
    /// The arriving packet does not fit (tail drop, or larger than the byte
    /// limit under head drop).
    Overflow,
}

/// RED's running state.
#[derive(Debug, Default)]
struct RedState {
    avg: f64,
    /// Packets since the last mark or drop (Floyd & Jacobson's `count`).
    count: i64,
    /// When the queue last became empty, for the idle-time decay of `avg`.
    idle_since: Option<Instant>,
}

#[derive(Debug)]
pub struct InputQueue {
    config: QueueConfig,
    packets: VecDeque<Queued>,
    bytes: u64,
    red: RedState,
    rng: StreamRng,
    /// Time-weighted integral of the queue length (packet·ns), for the mean.
    area: u128,
    last_change: Instant,
}

impl InputQueue {
    pub fn new(config: QueueConfig, rng: StreamRng) -> Self {
        InputQueue {
            config,
            packets: VecDeque::new(),
            bytes: 0,
            red: RedState { idle_since: Some(Instant::ZERO), ..RedState::default() },
            rng,
            area: 0,
            last_change: Instant::ZERO,
        }
    }

    pub fn set_config(&mut self, config: QueueConfig) {
        self.config = config;
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    fn account(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last_change).as_nanos() as u128;
        self.area += dt * self.packets.len() as u128;
        self.last_change = self.last_change.max(now);
    }

    /// Mean number of waiting packets over [0, now].
    pub fn mean_len(&self, now: Instant) -> f64 {
        let dt = now.saturating_since(self.last_change).as_nanos() as u128;
        let area = self.area + dt * self.packets.len() as u128;
        if now.as_nanos() == 0 { 0.0 } else { area as f64 / now.as_nanos() as f64 }
    }

    fn fits(&self, extra_packets: usize, extra_bytes: u64) -> bool {
        let p_ok = self.config.packets.is_none_or(|n| self.packets.len() + extra_packets <= n as usize);
        let b_ok = self.config.bytes.is_none_or(|b| self.bytes + extra_bytes <= b.0);
        p_ok && b_ok
    }

    /// Offers an arriving packet. On head drop, `evicted` receives the
    /// packets pushed out to make room. `typical_tx` is the time the link
    /// takes to send a typical packet (RED's idle-time decay).
    pub fn offer(
        &mut self,
        now: Instant,
        mut packet: Packet,
        typical_tx: Duration,
        evicted: &mut Vec<Packet>,
    ) -> (Admission, Option<Packet>) {
        let mut marked = false;
        if let Some(red) = self.config.red.clone() {
            match self.red_decision(now, &red, typical_tx) {
                RedVerdict::Pass => {}
                RedVerdict::Early if red.ecn && packet.ecn.is_capable() => {
                    packet.set_ecn(crate::packet::Ecn::Ce);
                    marked = true;
                }
                RedVerdict::Early | RedVerdict::Forced => return (Admission::RedDrop, Some(packet)),
            }
        }
        let size = packet.size as u64;
        if !self.fits(1, size) {
            match self.config.drop {
                DropPolicy::Tail => return (Admission::Overflow, Some(packet)),
                DropPolicy::Head => {
                    if self.config.bytes.is_some_and(|b| size > b.0) {
                        return (Admission::Overflow, Some(packet));
                    }
                    self.account(now);
                    while !self.fits(1, size) {
                        let Some(old) = self.packets.pop_front() else { break };
                        self.bytes -= old.packet.size as u64;
                        evicted.push(old.packet);
                    }
                }
            }
        }
        self.account(now);
        self.bytes += size;
        self.packets.push_back(Queued { packet, since: now });
        self.red.idle_since = None;
        (Admission::Enqueued { marked }, None)
    }

    /// Takes the packet at the head.
    pub fn pop(&mut self, now: Instant) -> Option<Queued> {
        self.account(now);
        let q = self.packets.pop_front()?;
        self.bytes -= q.packet.size as u64;
        if self.packets.is_empty() {
            self.red.idle_since = Some(now);
        }
        Some(q)
    }

    /// The packet that arrived last.
    pub fn last(&self) -> Option<&Packet> {
        self.packets.back().map(|q| &q.packet)
    }

    pub fn head_size(&self) -> Option<u32> {
        self.packets.front().map(|q| q.packet.size)
    }

    /// Maximum sojourn time, if one is set.
    pub fn max_sojourn(&self) -> Option<Duration> {
        self.config.max_sojourn
    }

    /// Removes every waiting packet (a blackout in drop mode).
    pub fn drain(&mut self, now: Instant) -> Vec<Packet> {
        self.account(now);
        self.bytes = 0;
        self.red.idle_since = Some(now);
        self.packets.drain(..).map(|q| q.packet).collect()
    }

    fn red_decision(&mut self, now: Instant, red: &RedConfig, typical_tx: Duration) -> RedVerdict {
        let w = red.weight;
        let q = self.packets.len() as f64;
        match self.red.idle_since {
            None => self.red.avg = (1.0 - w) * self.red.avg + w * q,
            Some(since) => {
                // The queue was empty: decay avg as if m small packets had
                // been sent in the idle time (Floyd & Jacobson §4).
                let m = now.saturating_since(since).as_nanos() as f64 / typical_tx.as_nanos().max(1) as f64;
                self.red.avg *= (1.0 - w).powf(m);
            }
        }
        let (avg, min, max, max_p) = (self.red.avg, red.min_threshold, red.max_threshold, red.max_p.get());
        let pb = if avg < min {
            self.red.count = -1;
            return RedVerdict::Pass;
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if red.gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            self.red.count = 0;
            return RedVerdict::Forced;
        };
        self.red.count += 1;
        let pa = if self.red.count as f64 * pb >= 1.0 { 1.0 } else { pb / (1.0 - self.red.count as f64 * pb) };
        if unit(&mut self.rng) < pa {
            self.red.count = 0;
            RedVerdict::Early
        } else {
            RedVerdict::Pass
        }
    }
}

enum RedVerdict {
    Pass,
    /// Probabilistic early drop: may be an ECN mark instead.
    Early,
    /// Average above the maximum threshold: always a drop.
    Forced,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowKey, PacketId, Protocol};
    use crate::rng::stream;
    use crate::units::{Bytes, Probability};
    use std::net::Ipv4Addr;

    fn pkt(id: u64, size: u32) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            src_port: 1,
            dst_port: 2,
        };
        Packet::new(PacketId(id), size, flow)
    }

    fn queue(config: QueueConfig) -> InputQueue {
        InputQueue::new(config, stream(1, "q"))
    }

    #[test]
    fn tail_drop_refuses_the_arrival() {
        let mut q = queue(QueueConfig { packets: Some(2), ..Default::default() });
        let mut ev = vec![];
        let t = Instant::ZERO;
        let tx = Duration::from_millis(1);
        assert_eq!(q.offer(t, pkt(1, 100), tx, &mut ev).0, Admission::Enqueued { marked: false });
        assert_eq!(q.offer(t, pkt(2, 100), tx, &mut ev).0, Admission::Enqueued { marked: false });
        let (adm, back) = q.offer(t, pkt(3, 100), tx, &mut ev);
        assert_eq!(adm, Admission::Overflow);
        assert_eq!(back.unwrap().id, PacketId(3));
        assert_eq!(q.pop(t).unwrap().packet.id, PacketId(1));
    }

    #[test]
    fn head_drop_evicts_the_oldest_until_the_arrival_fits() {
        let mut q = queue(QueueConfig { bytes: Some(Bytes(300)), drop: DropPolicy::Head, ..Default::default() });
        let mut ev = vec![];
        let (t, tx) = (Instant::ZERO, Duration::from_millis(1));
        q.offer(t, pkt(1, 100), tx, &mut ev);
        q.offer(t, pkt(2, 100), tx, &mut ev);
        q.offer(t, pkt(3, 100), tx, &mut ev);
        let (adm, _) = q.offer(t, pkt(4, 200), tx, &mut ev);
        assert_eq!(adm, Admission::Enqueued { marked: false });
        assert_eq!(ev.iter().map(|p| p.id.0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(q.pop(t).unwrap().packet.id, PacketId(3));
    }

    #[test]
    fn red_marks_ecn_capable_packets_and_drops_others_above_max() {
        let red = RedConfig {
            min_threshold: 1.0,
            max_threshold: 2.0,
            max_p: Probability::new(0.5).unwrap(),
            weight: 1.0, // avg = instantaneous length
            gentle: false,
            ecn: true,
        };
        let mut q = queue(QueueConfig { red: Some(red), ..Default::default() });
        let mut ev = vec![];
        let (t, tx) = (Instant::ZERO, Duration::from_millis(1));
        // Fill to 3 packets (avg reaches 2 at the 3rd arrival: forced).
        q.offer(t, pkt(1, 100), tx, &mut ev);
        q.offer(t, pkt(2, 100), tx, &mut ev);
        let mut p = pkt(3, 100);
        p.ecn = crate::packet::Ecn::Ect0;
        // avg = 2 >= max: forced drop even for an ECN-capable packet.
        assert_eq!(q.offer(t, p.clone(), tx, &mut ev).0, Admission::RedDrop);
        // Between thresholds the probability is positive: over many offers
        // on a 1-packet queue with avg=1..2, ECT packets get marked, never dropped.
        let mut q = queue(QueueConfig {
            red: Some(RedConfig { min_threshold: 0.5, max_threshold: 10.0, ..q.config.red.clone().unwrap() }),
            ..Default::default()
        });
        let mut marks = 0;
        for i in 0..200 {
            let mut p = pkt(i, 100);
            p.ecn = crate::packet::Ecn::Ect0;
            match q.offer(t, p, tx, &mut ev).0 {
                Admission::Enqueued { marked } => marks += marked as u32,
                other => panic!("ECT packet refused: {other:?}"),
            }
            if q.len() > 3 {
                q.pop(t);
            }
        }
        assert!(marks > 0);
    }

    #[test]
    fn mean_length_is_time_weighted() {
        let mut q = queue(QueueConfig::default());
        let mut ev = vec![];
        let tx = Duration::from_millis(1);
        q.offer(Instant::from_secs(0), pkt(1, 100), tx, &mut ev);
        q.offer(Instant::from_secs(1), pkt(2, 100), tx, &mut ev);
        q.pop(Instant::from_secs(2));
        q.pop(Instant::from_secs(3));
        // 1 packet for 1 s, 2 for 1 s, 1 for 1 s, 0 for 1 s: mean 1 over 4 s.
        assert!((q.mean_len(Instant::from_secs(4)) - 1.0).abs() < 1e-12);
    }
}
