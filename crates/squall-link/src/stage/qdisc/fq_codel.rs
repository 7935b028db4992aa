//! FQ-CoDel (RFC 8290). Before working on this file, read RFC 8290 §4
//! (the algorithm: flow queues, DRR over new and old flows, CoDel per
//! flow).
//!
//! Packets are hashed by their 5-tuple into `flows` queues, each a
//! [`Fifo`] with CoDel (RFC 8289). A deficit round robin with a byte
//! quantum serves first the flows that just became active (the new list),
//! so a sparse flow's packets rarely wait behind a bulk flow's (§4.2).
//! When the stage holds `packets` packets, the flow with the most bytes
//! loses its head packet (§4.1).

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use rand::SeedableRng;
use rustc_hash::FxHasher;

use super::{Dequeued, Dropped, Enqueued, Fifo, LinkHint, QueueDisc};
use crate::classes::FqCodelConfig;
use crate::config::QueueConfig;
use crate::event::DropReason;
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::time::Instant;

/// Which list a flow is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Idle,
    New,
    Old,
}

#[derive(Debug)]
struct Flow {
    queue: Fifo,
    deficit: i64,
    list: List,
}

#[derive(Debug)]
pub(crate) struct FqCodel {
    config: FqCodelConfig,
    /// Created when a flow first gets a packet.
    flows: Vec<Option<Flow>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    len: usize,
}

impl FqCodel {
    pub(crate) fn new(config: &FqCodelConfig) -> Self {
        FqCodel {
            config: config.clone(),
            flows: (0..config.flows).map(|_| None).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            len: 0,
        }
    }

    /// Whether it has `flows` flow queues.
    pub(crate) fn has_flows(&self, flows: u32) -> bool {
        self.flows.len() == flows as usize
    }

    fn flow_queue_config(&self) -> QueueConfig {
        QueueConfig { codel: Some(self.config.codel()), ..QueueConfig::default() }
    }

    /// The flow queue of a packet: a hash of its 5-tuple (§4.1.1).
    fn classify(&self, p: &Packet) -> usize {
        let mut h = FxHasher::default();
        p.flow.hash(&mut h);
        // FxHash's low bits depend little on the input's high bits: mix
        // (SplitMix64's finaliser) before taking the remainder.
        let mut z = h.finish();
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z % self.flows.len() as u64) as usize
    }

    /// Drops the head of the flow with the most bytes (§4.1).
    fn drop_from_fattest(&mut self, now: Instant, drops: &mut Vec<Dropped>) {
        let fattest = (0..self.flows.len())
            .filter_map(|i| self.flows[i].as_ref().map(|f| (f.queue.bytes(), i)))
            .max_by_key(|&(b, i)| (b, std::cmp::Reverse(i)));
        if let Some((_, i)) = fattest
            && let Some(f) = self.flows[i].as_mut()
            && let Some(p) = f.queue.drop_head(now)
        {
            self.len -= 1;
            drops.push(Dropped { packet: p, reason: DropReason::QueueOverflow });
        }
    }
}

impl QueueDisc for FqCodel {
    fn enqueue(&mut self, now: Instant, packet: Packet, link: LinkHint, drops: &mut Vec<Dropped>) -> Enqueued {
        let i = self.classify(&packet);
        let quantum = self.config.quantum.0 as i64;
        let config = self.flow_queue_config();
        let flow = self.flows[i].get_or_insert_with(|| Flow {
            // CoDel draws no random numbers: the stream is never used.
            queue: Fifo::new(config, |_| StreamRng::seed_from_u64(0)),
            deficit: 0,
            list: List::Idle,
        });
        let verdict = flow.queue.enqueue(now, packet, link, drops);
        if verdict == Enqueued::Refused {
            return verdict;
        }
        self.len += 1;
        if flow.list == List::Idle {
            flow.list = List::New;
            flow.deficit = quantum;
            self.new_flows.push_back(i);
        }
        if self.len > self.config.packets as usize {
            self.drop_from_fattest(now, drops);
        }
        verdict
    }

    fn dequeue(
        &mut self,
        now: Instant,
        mut fits: impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Dequeued> {
        let quantum = self.config.quantum.0 as i64;
        loop {
            let (i, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let flow = self.flows[i].as_mut().expect("listed flows exist");
            if flow.deficit <= 0 {
                // Its quantum is used: to the end of the old list (§4.2).
                flow.deficit += quantum;
                flow.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(i);
                continue;
            }
            let before = flow.queue.len();
            let d = flow.queue.dequeue(now, &mut fits, drops);
            self.len -= before - flow.queue.len();
            if let Some(d) = d {
                flow.deficit -= d.packet.size as i64;
                return Some(d);
            }
            if !flow.queue.is_empty() {
                // The head does not fit the link.
                return None;
            }
            // Empty: a new flow goes to the old list (so it cannot come
            // back as new at once), an old one leaves the lists (§4.2).
            if from_new {
                self.new_flows.pop_front();
                if self.old_flows.is_empty() {
                    flow.list = List::Idle;
                } else {
                    flow.list = List::Old;
                    self.old_flows.push_back(i);
                }
            } else {
                self.old_flows.pop_front();
                flow.list = List::Idle;
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn drain(&mut self, now: Instant) -> Vec<(Packet, Instant)> {
        let mut all = Vec::with_capacity(self.len);
        for f in self.flows.iter_mut().flatten() {
            all.extend(f.queue.drain(now));
            f.list = List::Idle;
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.len = 0;
        all
    }

    fn set_config(&mut self, config: &QueueConfig) {
        let Some(new) = &config.fq_codel else { return };
        self.config.quantum = new.quantum;
        self.config.packets = new.packets;
        self.config.target = new.target;
        self.config.interval = new.interval;
        self.config.ecn = new.ecn;
        let q = self.flow_queue_config();
        for f in self.flows.iter_mut().flatten() {
            f.queue.set_config(&q);
        }
    }
}
