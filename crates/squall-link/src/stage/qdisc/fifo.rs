//! One queue: limits in packets and bytes, tail or head drop, at most one
//! AQM ([`super::aqm`]: RED at enqueue, Floyd & Jacobson 1993; CoDel at
//! dequeue, RFC 8289; PIE, RFC 8033), and a maximum sojourn time checked
//! when a packet leaves the queue (seed 000 §4.3, the input queue). A
//! stage's single queue, a class's queue in [`super::Classful`], and each
//! flow queue of [`super::FqCodel`].

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::aqm::{AnyAqm, Aqm, AqmConfig, QueueState, Verdict};
use super::{Dequeued, Dropped, Enqueued, LinkHint, QueueDisc};
use crate::event::DropReason;
use crate::packet::{Ecn, Packet};
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// One queue (seed 000 §4.3): limits, the packet a full queue drops, at
/// most one AQM, and the longest a packet may wait.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FifoConfig {
    /// Limit in waiting packets; unlimited when absent.
    pub packets: Option<u32>,
    /// Limit in waiting bytes; unlimited when absent.
    pub bytes: Option<Bytes>,
    pub drop: DropPolicy,
    pub aqm: Option<AqmConfig>,
    /// Packets that waited longer are dropped when they reach the head.
    pub max_sojourn: Option<Duration>,
}

/// Which packet a full queue drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropPolicy {
    /// The arriving packet.
    #[default]
    Tail,
    /// The oldest queued packets, until the arriving one fits.
    Head,
}

/// A packet waiting in the queue, with the time it arrived.
#[derive(Debug)]
struct Queued {
    packet: Packet,
    since: Instant,
}

#[derive(Debug)]
pub(crate) struct Fifo {
    /// Limits, drop policy and maximum sojourn (`aqm` is `None`: the AQM's
    /// own state holds its configuration).
    config: FifoConfig,
    aqm: Option<AnyAqm>,
    packets: VecDeque<Queued>,
    bytes: u64,
    /// The largest packet that reached the AQM and limits so far (CoDel's
    /// `maxpacket`; PIE's packet size).
    max_packet: u64,
    /// When the queue last became empty (RED's idle time).
    empty_since: Instant,
}

impl Fifo {
    /// `rng(component)` gives the queue's random stream of that name
    /// (the AQM's key: "red", "pie").
    pub(crate) fn new(config: &FifoConfig, rng: &mut dyn FnMut(&str) -> StreamRng) -> Self {
        Fifo {
            config: FifoConfig { aqm: None, ..config.clone() },
            aqm: config.aqm.as_ref().map(|a| AnyAqm::new(a, rng)),
            packets: VecDeque::new(),
            bytes: 0,
            max_packet: 0,
            empty_since: Instant::ZERO,
        }
    }

    /// Takes new limits and AQM parameters; waiting packets stay. The AQM
    /// keeps its state when it is the same algorithm and starts afresh
    /// when it is another.
    pub(crate) fn set_config(&mut self, config: &FifoConfig, rng: &mut dyn FnMut(&str) -> StreamRng) {
        let same = match (&mut self.aqm, &config.aqm) {
            (Some(a), Some(c)) => a.set_config(c),
            (None, None) => true,
            _ => false,
        };
        if !same {
            self.aqm = config.aqm.as_ref().map(|a| AnyAqm::new(a, rng));
        }
        self.config = FifoConfig { aqm: None, ..config.clone() };
    }

    /// Bytes waiting.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Removes the head packet (to make room elsewhere).
    pub(crate) fn drop_head(&mut self, now: Instant) -> Option<Packet> {
        self.pop(now).map(|q| q.packet)
    }

    fn state(&self) -> QueueState {
        QueueState {
            packets: self.packets.len(),
            bytes: self.bytes,
            max_packet: self.max_packet,
            idle_since: self.packets.is_empty().then_some(self.empty_since),
        }
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

    fn fits(&self, extra_packets: usize, extra_bytes: u64) -> bool {
        let p_ok = self.config.packets.is_none_or(|n| self.packets.len() + extra_packets <= n as usize);
        let b_ok = self.config.bytes.is_none_or(|b| self.bytes + extra_bytes <= b.0);
        p_ok && b_ok
    }

    fn pop(&mut self, now: Instant) -> Option<Queued> {
        let q = self.packets.pop_front()?;
        self.bytes -= q.packet.size as u64;
        if self.packets.is_empty() {
            self.empty_since = now;
        }
        Some(q)
    }
}

impl QueueDisc for Fifo {
    fn enqueue(&mut self, now: Instant, mut packet: Packet, link: LinkHint, drops: &mut Vec<Dropped>) -> Enqueued {
        let size = packet.size as u64;
        self.max_packet = self.max_packet.max(size);
        let mut marked = false;
        if let Some(aqm) = &mut self.aqm {
            let state = QueueState {
                packets: self.packets.len(),
                bytes: self.bytes,
                max_packet: self.max_packet,
                idle_since: self.packets.is_empty().then_some(self.empty_since),
            };
            match aqm.on_enqueue(now, &packet, &state, link) {
                Verdict::Pass => {}
                Verdict::Mark => {
                    packet.set_ecn(Ecn::Ce);
                    marked = true;
                }
                Verdict::Drop(reason) => {
                    drops.push(Dropped { packet, reason });
                    return Enqueued::Refused;
                }
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
        Enqueued::Queued { marked }
    }

    /// The head packet, offered to the AQM; a packet it drops is followed
    /// by the next head in the same call ([`Aqm`]'s contract).
    #[inline]
    fn dequeue(
        &mut self,
        now: Instant,
        mut fits: impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Dequeued> {
        loop {
            let head = self.take_head(now, &mut fits, drops);
            if self.aqm.is_none() {
                return head.map(|q| Dequeued { packet: q.packet, marked: false });
            }
            let state = self.state();
            let aqm = self.aqm.as_mut().expect("checked above");
            let Some(mut q) = head else {
                aqm.on_dequeue(now, None, &state);
                return None;
            };
            let sojourn: Duration = now.saturating_since(q.since);
            match aqm.on_dequeue(now, Some((&q.packet, sojourn)), &state) {
                Verdict::Pass => return Some(Dequeued { packet: q.packet, marked: false }),
                Verdict::Mark => {
                    q.packet.set_ecn(Ecn::Ce);
                    return Some(Dequeued { packet: q.packet, marked: true });
                }
                Verdict::Drop(reason) => drops.push(Dropped { packet: q.packet, reason }),
            }
        }
    }

    fn len(&self) -> usize {
        self.packets.len()
    }

    fn drain(&mut self, now: Instant) -> Vec<(Packet, Instant)> {
        self.bytes = 0;
        self.empty_since = now;
        self.packets.drain(..).map(|q| (q.packet, q.since)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowKey, PacketId, Protocol};
    use crate::rng::stream;
    use crate::stage::qdisc::aqm::{CodelConfig, RedConfig};
    use crate::time::Duration;
    use crate::units::{Bytes, Probability};
    use std::net::Ipv4Addr;

    fn pkt(id: u64, size: u32) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: Ipv4Addr::new(10, 0, 0, 1).into(),
            dst: Ipv4Addr::new(10, 0, 0, 2).into(),
            src_port: 1,
            dst_port: 2,
        };
        Packet::new(PacketId(id), size, flow)
    }

    fn queue(config: FifoConfig) -> Fifo {
        Fifo::new(&config, &mut |c| stream(1, c))
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
        let mut q = queue(FifoConfig { packets: Some(2), ..Default::default() });
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
        let mut q = queue(FifoConfig { bytes: Some(Bytes(300)), drop: DropPolicy::Head, ..Default::default() });
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
        let config = FifoConfig { max_sojourn: Some(Duration::from_millis(10)), ..Default::default() };
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
        let mut q = queue(FifoConfig { aqm: Some(AqmConfig::Red(red.clone())), ..Default::default() });
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
        let mut q = queue(FifoConfig {
            aqm: Some(AqmConfig::Red(RedConfig { min_threshold: 0.5, max_threshold: 10.0, ..red })),
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

    /// RFC 8289 §5.5 through the queue: 100 packets of 1000 B arrive at 0
    /// and one leaves every 10 ms, so each waits its departure time. The
    /// sojourn passes the 5 ms target at 10 ms, so the first drop comes
    /// one interval (100 ms) later, at 110 ms, and the dropping state
    /// starts with count 1 and its next drop at 210 ms. Each drop then
    /// raises count and moves the next one interval/√count on from the
    /// last due time (§5.3): 210 + 100/√2 = 280.7, so 290 ms; then
    /// 338.4 (√3), so 340; 388.4 (√4), so 390; 433.2 (√5), so 440; and
    /// 474.0 (√6), so 480 ms, drops falling on the 10 ms steps. A dropped
    /// packet's successor leaves in its place.
    #[test]
    fn codel_drops_at_the_control_law_times() {
        let codel = CodelConfig { ecn: false, ..CodelConfig::default() };
        let mut q = queue(FifoConfig { aqm: Some(AqmConfig::Codel(codel)), ..Default::default() });
        let mut drops = vec![];
        for i in 0..100 {
            offer(&mut q, pkt(i, 1000), &mut drops);
        }
        let mut drop_times = vec![];
        let mut sent = 0;
        for step in 0..=50 {
            let now = Instant::from_millis(10 * step);
            let before = drops.len();
            let d = q.dequeue(now, |_| true, &mut drops).expect("packets wait");
            assert!(!d.marked);
            sent += 1;
            for dropped in &drops[before..] {
                assert_eq!(dropped.reason, DropReason::Codel);
                drop_times.push(10 * step);
            }
        }
        assert_eq!(drop_times, vec![110, 210, 290, 340, 390, 440, 480]);
        assert_eq!(sent + drops.len() + q.len(), 100);
    }

    /// A state change to another AQM keeps the waiting packets and starts
    /// the new AQM afresh: CoDel taking over a standing queue first drops
    /// one interval after it first sees the sojourn above target.
    #[test]
    fn a_new_aqm_takes_over_the_waiting_packets() {
        let red = RedConfig {
            min_threshold: 50.0,
            max_threshold: 100.0,
            max_p: Probability::new(0.1).unwrap(),
            weight: 0.002,
            gentle: false,
            ecn: true,
        };
        let mut q = queue(FifoConfig { aqm: Some(AqmConfig::Red(red)), ..Default::default() });
        let mut drops = vec![];
        for i in 0..20 {
            offer(&mut q, pkt(i, 1000), &mut drops);
        }
        assert!(drops.is_empty(), "RED's average stays below its minimum threshold");
        let codel = CodelConfig { ecn: false, ..CodelConfig::default() };
        q.set_config(&FifoConfig { aqm: Some(AqmConfig::Codel(codel)), ..Default::default() }, &mut |c| stream(1, c));
        assert_eq!(q.len(), 20);
        // Above target from 200 ms on: the first drop at 300 ms.
        for ms in [200, 250, 299] {
            q.dequeue(Instant::from_millis(ms), |_| true, &mut drops).unwrap();
            assert!(drops.is_empty(), "no drop at {ms} ms");
        }
        q.dequeue(Instant::from_millis(300), |_| true, &mut drops).unwrap();
        assert_eq!(ids(&drops), vec![3]);
    }
}
