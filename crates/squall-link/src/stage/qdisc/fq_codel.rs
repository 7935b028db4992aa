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

use serde::{Deserialize, Serialize};

use super::aqm::{AqmConfig, CodelConfig};
use super::fifo::FifoConfig;
use super::{Dequeued, Dropped, Enqueued, Fifo, LinkHint, QueueDisc};
use crate::error::ConfigError;
use crate::event::DropReason;
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

fn yes() -> bool {
    true
}

/// FQ-CoDel (RFC 8290): the queue is `flows` flow queues chosen by a hash
/// of the 5-tuple, each with CoDel, served by deficit round robin with a
/// byte `quantum`, newly active flows first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Number of flow queues (RFC 8290 §4.1.1: 1024).
    #[serde(default = "FqCodelConfig::default_flows")]
    pub flows: u32,
    /// Bytes a flow may send per round (§4.2: 1514 B, one MTU frame).
    #[serde(default = "FqCodelConfig::default_quantum")]
    pub quantum: Bytes,
    /// Packets the whole queue holds; beyond it the longest flow (in
    /// bytes) loses its head packet (§4.1: 10240).
    #[serde(default = "FqCodelConfig::default_packets")]
    pub packets: u32,
    /// CoDel's target and interval in every flow queue (§4.3: 5 ms, 100 ms).
    #[serde(default = "CodelConfig::default_target")]
    pub target: Duration,
    #[serde(default = "CodelConfig::default_interval")]
    pub interval: Duration,
    #[serde(default = "yes")]
    pub ecn: bool,
}

impl FqCodelConfig {
    fn default_flows() -> u32 {
        1024
    }
    fn default_quantum() -> Bytes {
        Bytes(1514)
    }
    fn default_packets() -> u32 {
        10240
    }
    /// The CoDel of each flow queue.
    pub fn codel(&self) -> CodelConfig {
        CodelConfig { target: self.target, interval: self.interval, ecn: self.ecn }
    }
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if !(1..=65_536).contains(&self.flows) {
            return Err(ConfigError::new(&format!("{key}.flows"), "must be 1..=65536 (RFC 8290: 1024)"));
        }
        if self.quantum.0 == 0 {
            return Err(ConfigError::new(&format!("{key}.quantum"), "must be at least 1 B (RFC 8290: 1514 B)"));
        }
        if self.packets == 0 {
            return Err(ConfigError::new(&format!("{key}.packets"), "must be at least 1 (RFC 8290: 10240)"));
        }
        self.codel().validate(key)
    }
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            flows: Self::default_flows(),
            quantum: Self::default_quantum(),
            packets: Self::default_packets(),
            target: CodelConfig::default_target(),
            interval: CodelConfig::default_interval(),
            ecn: true,
        }
    }
}

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
    /// Bytes waiting in all flow queues.
    pub(crate) fn bytes(&self) -> u64 {
        self.flows.iter().flatten().map(|f| f.queue.bytes()).sum()
    }

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

    /// Each flow queue: unlimited (the whole queue's limit is
    /// `packets`), with CoDel.
    fn flow_queue_config(&self) -> FifoConfig {
        FifoConfig { aqm: Some(AqmConfig::Codel(self.config.codel())), ..FifoConfig::default() }
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
            queue: Fifo::new(&config, &mut |_| StreamRng::seed_from_u64(0)),
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
}

impl FqCodel {
    /// Takes new parameters; the number of flow queues stays (a state
    /// change with another number builds a new FqCodel).
    pub(crate) fn set_config(&mut self, new: &FqCodelConfig) {
        self.config.quantum = new.quantum;
        self.config.packets = new.packets;
        self.config.target = new.target;
        self.config.interval = new.interval;
        self.config.ecn = new.ecn;
        let q = self.flow_queue_config();
        for f in self.flows.iter_mut().flatten() {
            f.queue.set_config(&q, &mut |_| StreamRng::seed_from_u64(0));
        }
    }
}
