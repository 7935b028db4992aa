//! One queue: limits in packets and bytes, tail or head drop, RED with ECN
//! marking at enqueue (Floyd & Jacobson 1993; RFC 3168 §7) or CoDel at
//! dequeue (RFC 8289), and a maximum sojourn time checked when a packet
//! leaves the queue (seed 000 §4.3, the input queue). A stage's single
//! queue, and each class's queue in [`super::Classful`].

use std::collections::VecDeque;

use super::codel::Codel;
use super::pie::{Pie, PieVerdict};
use super::red::{Red, RedVerdict};
use super::{Dequeued, Dropped, Enqueued, LinkHint, QueueDisc};
use crate::classes::CodelConfig;
use crate::config::{DropPolicy, QueueConfig};
use crate::event::DropReason;
use crate::packet::{Ecn, Packet};
use crate::rng::StreamRng;
use crate::time::Instant;

/// A packet waiting in the queue, with the time it arrived.
#[derive(Debug)]
struct Queued {
    packet: Packet,
    since: Instant,
}

#[derive(Debug)]
pub(crate) struct Fifo {
    config: QueueConfig,
    packets: VecDeque<Queued>,
    bytes: u64,
    red: Red,
    codel: Codel,
    pie: Pie,
    /// The largest packet queued so far (CoDel's `maxpacket`).
    max_packet: u64,
}

impl Fifo {
    /// `rng(component)` gives the queue's random stream of that name
    /// ("red", "pie").
    pub(crate) fn new(config: QueueConfig, mut rng: impl FnMut(&str) -> StreamRng) -> Self {
        Fifo {
            config,
            packets: VecDeque::new(),
            bytes: 0,
            red: Red::new(rng("red")),
            codel: Codel::default(),
            pie: Pie::new(rng("pie")),
            max_packet: 0,
        }
    }

    /// Bytes waiting.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Removes the head packet (to make room elsewhere).
    pub(crate) fn drop_head(&mut self, now: Instant) -> Option<Packet> {
        self.pop(now).map(|q| q.packet)
    }

    /// The head packet if the link takes it, dropping on the way those
    /// that waited longer than `max_sojourn`. `None`: empty, or the head
    /// does not fit.
    #[inline]
    fn take_head(
        &mut self,
        now: Instant,
        fits: &mut impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Queued> {
        loop {
            if !fits(self.packets.front()?.packet.size) {
                return None;
            }
            let q = self.pop(now).expect("head exists");
            if self.config.max_sojourn.is_some_and(|max| now.saturating_since(q.since) > max) {
                drops.push(Dropped { packet: q.packet, reason: DropReason::SojournLimit });
                continue;
            }
            return Some(q);
        }
    }

    /// RFC 8289 §5.4 `dodequeue`: the head packet and whether CoDel may
    /// drop it.
    fn dodequeue(
        &mut self,
        now: Instant,
        fits: &mut impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
        c: &CodelConfig,
    ) -> Option<(Packet, bool)> {
        let Some(q) = self.take_head(now, fits, drops) else {
            if self.packets.is_empty() {
                self.codel.on_empty();
            }
            return None;
        };
        let ok = self.codel.ok_to_drop(now, now.saturating_since(q.since), self.bytes, self.max_packet, c);
        Some((q.packet, ok))
    }

    /// CoDel's dequeue (RFC 8289 §5.5). A drop of an ECN-capable packet is
    /// a mark instead, and the marked packet leaves (RFC 8289 §5.6, as
    /// Linux does).
    fn codel_dequeue(
        &mut self,
        now: Instant,
        fits: &mut impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
        c: &CodelConfig,
    ) -> Option<Dequeued> {
        let mark = |p: &mut Packet| {
            let capable = c.ecn && p.ecn.is_capable();
            if capable {
                p.set_ecn(Ecn::Ce);
            }
            capable
        };
        let Some((mut p, mut ok)) = self.dodequeue(now, fits, drops, c) else {
            if self.packets.is_empty() {
                self.codel.dropping = false;
            }
            return None;
        };
        if self.codel.dropping {
            if !ok {
                self.codel.dropping = false;
            }
            while self.codel.dropping && now >= self.codel.drop_next {
                self.codel.count += 1;
                if mark(&mut p) {
                    self.codel.drop_next = Codel::control_law(self.codel.drop_next, self.codel.count, c);
                    return Some(Dequeued { packet: p, marked: true });
                }
                drops.push(Dropped { packet: p, reason: DropReason::Codel });
                match self.dodequeue(now, fits, drops, c) {
                    None => {
                        if self.packets.is_empty() {
                            self.codel.dropping = false;
                        }
                        return None;
                    }
                    Some((next, next_ok)) => {
                        (p, ok) = (next, next_ok);
                        if ok {
                            self.codel.drop_next = Codel::control_law(self.codel.drop_next, self.codel.count, c);
                        } else {
                            self.codel.dropping = false;
                        }
                    }
                }
            }
        } else if ok {
            if mark(&mut p) {
                self.codel.enter_dropping(now, c);
                return Some(Dequeued { packet: p, marked: true });
            }
            drops.push(Dropped { packet: p, reason: DropReason::Codel });
            let next = self.dodequeue(now, fits, drops, c);
            self.codel.enter_dropping(now, c);
            p = next?.0;
        }
        Some(Dequeued { packet: p, marked: false })
    }

    fn fits(&self, extra_packets: usize, extra_bytes: u64) -> bool {
        let p_ok = self.config.packets.is_none_or(|n| self.packets.len() + extra_packets <= n as usize);
        let b_ok = self.config.bytes.is_none_or(|b| self.bytes + extra_bytes <= b.0);
        p_ok && b_ok
    }

    fn pop(&mut self, now: Instant) -> Option<Queued> {
        let q = self.packets.pop_front()?;
        self.bytes -= q.packet.size as u64;
        if self.packets.is_empty() {
            self.red.on_empty(now);
        }
        Some(q)
    }
}

impl QueueDisc for Fifo {
    fn enqueue(&mut self, now: Instant, mut packet: Packet, link: LinkHint, drops: &mut Vec<Dropped>) -> Enqueued {
        let mut marked = false;
        if let Some(red) = &self.config.red {
            match self.red.decide(now, self.packets.len(), red, link.typical_tx) {
                RedVerdict::Pass => {}
                RedVerdict::Early if red.ecn && packet.ecn.is_capable() => {
                    packet.set_ecn(Ecn::Ce);
                    marked = true;
                }
                RedVerdict::Early | RedVerdict::Forced => {
                    drops.push(Dropped { packet, reason: DropReason::Red });
                    return Enqueued::Refused;
                }
            }
        }
        let size = packet.size as u64;
        self.max_packet = self.max_packet.max(size);
        if let Some(pie) = &self.config.pie
            && let PieVerdict::Drop { markable } = self.pie.on_enqueue(now, self.bytes, self.max_packet, pie)
        {
            if markable && packet.ecn.is_capable() {
                packet.set_ecn(Ecn::Ce);
                marked = true;
            } else {
                drops.push(Dropped { packet, reason: DropReason::Pie });
                return Enqueued::Refused;
            }
        }
        if !self.fits(1, size) {
            let too_big = self.config.bytes.is_some_and(|b| size > b.0);
            if self.config.drop == DropPolicy::Tail || too_big {
                drops.push(Dropped { packet, reason: DropReason::QueueOverflow });
                return Enqueued::Refused;
            }
            // Head drop: the oldest packets make room.
            while !self.fits(1, size) {
                let Some(old) = self.packets.pop_front() else { break };
                self.bytes -= old.packet.size as u64;
                drops.push(Dropped { packet: old.packet, reason: DropReason::QueueOverflow });
            }
        }
        self.bytes += size;
        self.packets.push_back(Queued { packet, since: now });
        self.red.on_enqueue();
        Enqueued::Queued { marked }
    }

    #[inline]
    fn dequeue(
        &mut self,
        now: Instant,
        mut fits: impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Dequeued> {
        if let Some(c) = &self.config.codel {
            let c = c.clone();
            return self.codel_dequeue(now, &mut fits, drops, &c);
        }
        let q = self.take_head(now, &mut fits, drops)?;
        if let Some(pie) = &self.config.pie {
            self.pie.on_dequeue(now, now.saturating_since(q.since), self.packets.is_empty(), pie);
        }
        Some(Dequeued { packet: q.packet, marked: false })
    }

    fn len(&self) -> usize {
        self.packets.len()
    }

    fn drain(&mut self, now: Instant) -> Vec<(Packet, Instant)> {
        self.bytes = 0;
        self.red.on_empty(now);
        self.packets.drain(..).map(|q| (q.packet, q.since)).collect()
    }

    fn set_config(&mut self, config: &QueueConfig) {
        self.config = config.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RedConfig;
    use crate::packet::{FlowKey, PacketId, Protocol};
    use crate::rng::stream;
    use crate::time::Duration;
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

    fn queue(config: QueueConfig) -> Fifo {
        Fifo::new(config, |c| stream(1, c))
    }

    const HINT: LinkHint = LinkHint { typical_tx: Duration::from_millis(1) };

    fn offer(q: &mut Fifo, p: Packet, drops: &mut Vec<Dropped>) -> Enqueued {
        q.enqueue(Instant::ZERO, p, HINT, drops)
    }

    fn ids(drops: &[Dropped]) -> Vec<u64> {
        drops.iter().map(|d| d.packet.id.0).collect()
    }

    #[test]
    fn tail_drop_refuses_the_arrival() {
        let mut q = queue(QueueConfig { packets: Some(2), ..Default::default() });
        let mut drops = vec![];
        assert_eq!(offer(&mut q, pkt(1, 100), &mut drops), Enqueued::Queued { marked: false });
        assert_eq!(offer(&mut q, pkt(2, 100), &mut drops), Enqueued::Queued { marked: false });
        assert_eq!(offer(&mut q, pkt(3, 100), &mut drops), Enqueued::Refused);
        assert_eq!(ids(&drops), vec![3]);
        assert_eq!(drops[0].reason, DropReason::QueueOverflow);
        assert_eq!(q.dequeue(Instant::ZERO, |_| true, &mut drops).unwrap().packet.id, PacketId(1));
    }

    #[test]
    fn head_drop_evicts_the_oldest_until_the_arrival_fits() {
        let mut q = queue(QueueConfig { bytes: Some(Bytes(300)), drop: DropPolicy::Head, ..Default::default() });
        let mut drops = vec![];
        offer(&mut q, pkt(1, 100), &mut drops);
        offer(&mut q, pkt(2, 100), &mut drops);
        offer(&mut q, pkt(3, 100), &mut drops);
        assert_eq!(offer(&mut q, pkt(4, 200), &mut drops), Enqueued::Queued { marked: false });
        assert_eq!(ids(&drops), vec![1, 2]);
        assert_eq!(q.dequeue(Instant::ZERO, |_| true, &mut drops).unwrap().packet.id, PacketId(3));
    }

    #[test]
    fn dequeue_takes_nothing_the_link_cannot_take_and_drops_stale_packets() {
        let config = QueueConfig { max_sojourn: Some(Duration::from_millis(10)), ..Default::default() };
        let mut q = queue(config);
        let mut drops = vec![];
        q.enqueue(Instant::ZERO, pkt(1, 100), HINT, &mut drops);
        q.enqueue(Instant::from_millis(15), pkt(2, 300), HINT, &mut drops);
        let now = Instant::from_millis(20);
        // The head is stale but the link has no room: nothing happens.
        assert!(q.dequeue(now, |_| false, &mut drops).is_none());
        assert!(drops.is_empty());
        assert_eq!(q.len(), 2);
        // With room, the stale head is dropped and the next one leaves.
        assert_eq!(q.dequeue(now, |size| size <= 300, &mut drops).unwrap().packet.id, PacketId(2));
        assert_eq!(ids(&drops), vec![1]);
        assert_eq!(drops[0].reason, DropReason::SojournLimit);
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
        let mut q = queue(QueueConfig { red: Some(red.clone()), ..Default::default() });
        let mut drops = vec![];
        // Fill to 3 packets (avg reaches 2 at the 3rd arrival: forced).
        offer(&mut q, pkt(1, 100), &mut drops);
        offer(&mut q, pkt(2, 100), &mut drops);
        let mut p = pkt(3, 100);
        p.ecn = Ecn::Ect0;
        // avg = 2 >= max: forced drop even for an ECN-capable packet.
        assert_eq!(offer(&mut q, p, &mut drops), Enqueued::Refused);
        assert_eq!(drops.pop().unwrap().reason, DropReason::Red);
        // Between thresholds the probability is positive: over many offers
        // on a 1-packet queue with avg=1..2, ECT packets get marked, never dropped.
        let mut q = queue(QueueConfig {
            red: Some(RedConfig { min_threshold: 0.5, max_threshold: 10.0, ..red }),
            ..Default::default()
        });
        let mut marks = 0;
        for i in 0..200 {
            let mut p = pkt(i, 100);
            p.ecn = Ecn::Ect0;
            match offer(&mut q, p, &mut drops) {
                Enqueued::Queued { marked } => marks += marked as u32,
                Enqueued::Refused => panic!("ECT packet refused: {drops:?}"),
            }
            if q.len() > 3 {
                q.dequeue(Instant::ZERO, |_| true, &mut drops);
            }
        }
        assert!(marks > 0);
    }
}
