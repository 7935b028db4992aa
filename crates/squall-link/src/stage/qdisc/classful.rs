//! A classful queue discipline (ns-3's `QueueDisc` with filters and
//! classes): a classifier puts each packet in one of several classes, each
//! class holds a child queue discipline of its own ([`AnyQueueDisc`]: one
//! queue with its limits, drop policy and AQM, or FQ-CoDel), and a
//! scheduler decides which class sends next (seed 003 §2.2: the degrader's
//! 8 queues with strict priority or weighted round robin).

use std::collections::VecDeque;

use super::{AnyQueueDisc, Dequeued, Dropped, Enqueued, LinkHint, QueueDisc};
use crate::classes::{Matcher, Scheduler};
use crate::packet::Packet;
use crate::queue::ClassfulConfig;
use crate::rng::StreamRng;
use crate::stage::{ClassCounts, ClassStats};
use crate::time::Instant;

/// A classifier rule and the class it picks.
#[derive(Debug)]
struct Filter {
    matcher: Matcher,
    class: usize,
}

#[derive(Debug)]
struct Class {
    name: String,
    /// The child queue discipline (boxed: a class may hold classes).
    queue: Box<AnyQueueDisc>,
    weight: u32,
    quantum: i64,
    stats: ClassStats,
}

/// The scheduler's running state.
#[derive(Debug)]
enum SchedulerState {
    StrictPriority,
    /// The class whose turn it is and the packets it may still send.
    Wrr {
        current: usize,
        credit: u32,
    },
    /// Classes with packets, in service order, and each class's deficit
    /// in bytes (may go negative: the overshoot is paid back next round).
    Drr {
        active: VecDeque<usize>,
        is_active: Vec<bool>,
        deficit: Vec<i64>,
    },
}

impl SchedulerState {
    fn new(kind: Scheduler, classes: &[Class]) -> Self {
        match kind {
            Scheduler::StrictPriority => SchedulerState::StrictPriority,
            Scheduler::Wrr => SchedulerState::Wrr { current: 0, credit: classes[0].weight },
            Scheduler::Drr => {
                let mut s = SchedulerState::Drr {
                    active: VecDeque::new(),
                    is_active: vec![false; classes.len()],
                    deficit: vec![0; classes.len()],
                };
                for (i, c) in classes.iter().enumerate() {
                    if !c.queue.is_empty() {
                        s.on_enqueue(i, classes);
                    }
                }
                s
            }
        }
    }

    /// Class `i` received a packet.
    fn on_enqueue(&mut self, i: usize, classes: &[Class]) {
        if let SchedulerState::Drr { active, is_active, deficit } = self
            && !is_active[i]
        {
            is_active[i] = true;
            deficit[i] = classes[i].quantum;
            active.push_back(i);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Classful {
    classes: Vec<Class>,
    filters: Vec<Filter>,
    default: usize,
    kind: Scheduler,
    scheduler: SchedulerState,
    /// Packets waiting in all classes.
    len: usize,
}

impl Classful {
    /// `config.classes` is not empty (checked by `QueueConfig::kind`). A
    /// class's random streams are named `class/NAME/COMPONENT`.
    pub(crate) fn new(config: &ClassfulConfig, rng: &mut dyn FnMut(&str) -> StreamRng) -> Self {
        let classes: Vec<Class> = config
            .classes
            .iter()
            .map(|c| Class {
                name: c.name.clone(),
                queue: Box::new(AnyQueueDisc::new(&c.queue, &mut |aqm| rng(&format!("class/{}/{aqm}", c.name)))),
                weight: c.weight,
                quantum: c.quantum as i64,
                stats: ClassStats { name: c.name.clone(), ..ClassStats::default() },
            })
            .collect();
        let scheduler = SchedulerState::new(config.scheduler, &classes);
        let mut q = Classful { classes, filters: Vec::new(), default: 0, kind: config.scheduler, scheduler, len: 0 };
        q.set_rules(config);
        q
    }

    fn set_rules(&mut self, config: &ClassfulConfig) {
        let index = |name: &str| self.classes.iter().position(|c| c.name == name);
        self.filters = config
            .rules
            .iter()
            .filter_map(|r| index(&r.class).map(|class| Filter { matcher: r.matcher(), class }))
            .collect();
        self.default = config.default_class;
    }

    /// Each class's counters, in class order.
    pub(crate) fn class_stats(&self) -> Vec<ClassStats> {
        self.classes
            .iter()
            .map(|c| ClassStats { queued: c.queue.len(), queued_bytes: c.queue.bytes(), ..c.stats.clone() })
            .collect()
    }

    /// Each class's counters now, in class order, appended to `out`.
    pub(crate) fn class_counts(&self, out: &mut Vec<ClassCounts>) {
        out.extend(self.classes.iter().map(|c| ClassCounts {
            queued_packets: c.queue.len() as u64,
            queued_bytes: c.queue.bytes(),
            sent: c.stats.sent,
            sent_bytes: c.stats.sent_bytes,
            drops: c.stats.drops,
        }));
    }

    /// The classes' names, in class order.
    pub(crate) fn class_names(&self) -> Vec<String> {
        self.classes.iter().map(|c| c.name.clone()).collect()
    }

    /// Bytes waiting in all classes.
    pub(crate) fn bytes(&self) -> u64 {
        self.classes.iter().map(|c| c.queue.bytes()).sum()
    }

    /// Whether `config` has the same classes, by name and order, each with
    /// a queue of the same shape.
    pub(crate) fn has_classes_of(&self, config: &ClassfulConfig) -> bool {
        self.classes.len() == config.classes.len()
            && self.classes.iter().zip(&config.classes).all(|(a, b)| a.name == b.name && a.queue.same_shape(&b.queue))
    }

    /// The same classes ([`Self::has_classes_of`]): new queue parameters,
    /// shares, rules and scheduler.
    pub(crate) fn set_config(&mut self, config: &ClassfulConfig, rng: &mut dyn FnMut(&str) -> StreamRng) {
        for (c, new) in self.classes.iter_mut().zip(&config.classes) {
            c.queue.set_config(&new.queue, &mut |aqm| rng(&format!("class/{}/{aqm}", c.name)));
            c.weight = new.weight;
            c.quantum = new.quantum as i64;
        }
        self.set_rules(config);
        if config.scheduler != self.kind {
            self.kind = config.scheduler;
            self.scheduler = SchedulerState::new(self.kind, &self.classes);
        }
    }

    /// The class a packet belongs to: the first rule that matches, else
    /// the default class.
    fn classify(&self, p: &Packet) -> usize {
        self.filters.iter().find(|f| f.matcher.matches(p)).map_or(self.default, |f| f.class)
    }

    /// Takes a packet from class `i`, keeping the count of waiting packets.
    fn take(
        &mut self,
        i: usize,
        now: Instant,
        fits: &mut impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Dequeued> {
        let c = &mut self.classes[i];
        let (before, dropped) = (c.queue.len(), drops.len());
        // Through `dyn`: a child may itself be classful, and a generic
        // `fits` would nest without end.
        let fits: &mut dyn FnMut(u32) -> bool = fits;
        let d = c.queue.dequeue(now, fits, drops);
        self.len -= before - c.queue.len();
        c.stats.count_drops(&drops[dropped..]);
        if let Some(d) = &d {
            c.stats.sent += 1;
            c.stats.sent_bytes += d.packet.size as u64;
        }
        d
    }

    fn strict_priority(
        &mut self,
        now: Instant,
        fits: &mut impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Dequeued> {
        for i in 0..self.classes.len() {
            if self.classes[i].queue.is_empty() {
                continue;
            }
            if let Some(d) = self.take(i, now, fits, drops) {
                return Some(d);
            }
            if !self.classes[i].queue.is_empty() {
                // Its head does not fit the link: lower classes wait too.
                return None;
            }
        }
        None
    }

    fn wrr(&mut self, now: Instant, fits: &mut impl FnMut(u32) -> bool, drops: &mut Vec<Dropped>) -> Option<Dequeued> {
        let n = self.classes.len();
        for _ in 0..=n {
            let SchedulerState::Wrr { current, credit } = self.scheduler else { return None };
            if credit > 0 && !self.classes[current].queue.is_empty() {
                match self.take(current, now, fits, drops) {
                    Some(d) => {
                        let left = credit - 1;
                        self.scheduler = if left == 0 {
                            let next = (current + 1) % n;
                            SchedulerState::Wrr { current: next, credit: self.classes[next].weight }
                        } else {
                            SchedulerState::Wrr { current, credit: left }
                        };
                        return Some(d);
                    }
                    None if !self.classes[current].queue.is_empty() => return None,
                    None => {}
                }
            }
            let next = (current + 1) % n;
            self.scheduler = SchedulerState::Wrr { current: next, credit: self.classes[next].weight };
        }
        None
    }

    fn drr(&mut self, now: Instant, fits: &mut impl FnMut(u32) -> bool, drops: &mut Vec<Dropped>) -> Option<Dequeued> {
        loop {
            let SchedulerState::Drr { active, deficit, .. } = &mut self.scheduler else { return None };
            let &i = active.front()?;
            if deficit[i] <= 0 {
                // The class used its share of this round.
                deficit[i] += self.classes[i].quantum;
                active.rotate_left(1);
                continue;
            }
            let d = self.take(i, now, fits, drops);
            let empty = self.classes[i].queue.is_empty();
            let SchedulerState::Drr { active, is_active, deficit } = &mut self.scheduler else { return None };
            if let Some(d) = &d {
                deficit[i] -= d.packet.size as i64;
            }
            if empty {
                active.pop_front();
                is_active[i] = false;
                deficit[i] = 0;
            }
            match d {
                Some(d) => return Some(d),
                None if !empty => return None,
                None => {}
            }
        }
    }
}

impl QueueDisc for Classful {
    fn enqueue(&mut self, now: Instant, packet: Packet, link: LinkHint, drops: &mut Vec<Dropped>) -> Enqueued {
        let i = self.classify(&packet);
        self.enqueue_into(now, packet, Some(i), link, drops)
    }

    fn enqueue_into(
        &mut self,
        now: Instant,
        packet: Packet,
        class: Option<usize>,
        link: LinkHint,
        drops: &mut Vec<Dropped>,
    ) -> Enqueued {
        let i = class.filter(|&i| i < self.classes.len()).unwrap_or_else(|| self.classify(&packet));
        let c = &mut self.classes[i];
        let (before, dropped) = (c.queue.len(), drops.len());
        let verdict = c.queue.enqueue(now, packet, link, drops);
        let after = c.queue.len();
        self.len = self.len + after - before;
        c.stats.count_drops(&drops[dropped..]);
        if verdict != Enqueued::Refused {
            c.stats.enqueued += 1;
            self.scheduler.on_enqueue(i, &self.classes);
        }
        verdict
    }

    fn dequeue(
        &mut self,
        now: Instant,
        mut fits: impl FnMut(u32) -> bool,
        drops: &mut Vec<Dropped>,
    ) -> Option<Dequeued> {
        if self.len == 0 {
            return None;
        }
        match self.kind {
            Scheduler::StrictPriority => self.strict_priority(now, &mut fits, drops),
            Scheduler::Wrr => self.wrr(now, &mut fits, drops),
            Scheduler::Drr => self.drr(now, &mut fits, drops),
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn drain(&mut self, now: Instant) -> Vec<(Packet, Instant)> {
        let mut all = Vec::with_capacity(self.len);
        for c in &mut self.classes {
            all.extend(c.queue.drain(now));
        }
        self.len = 0;
        self.scheduler = SchedulerState::new(self.kind, &self.classes);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{PortRange, ProtocolMatch, Rule};
    use crate::config::QueueConfig;
    use crate::packet::{FlowKey, PacketId, Protocol};
    use crate::queue::ClassConfig;
    use crate::queue::QueueKind;
    use crate::rng::stream;
    use crate::time::Duration;

    fn class(n: &str) -> ClassConfig {
        ClassConfig { name: n.into(), ..ClassConfig::default() }
    }

    fn rule(class: &str) -> Rule {
        Rule {
            class: class.into(),
            ip_version: None,
            protocol: None,
            dscp: None,
            tos: None,
            ecn: None,
            src: None,
            dst: None,
            src_port: None,
            dst_port: None,
            min_size: None,
            max_size: None,
        }
    }

    fn packet(protocol: Protocol, dst_port: u16) -> Packet {
        let flow = FlowKey { protocol, src: [1, 1, 1, 1].into(), dst: [2, 2, 2, 2].into(), src_port: 1, dst_port };
        Packet::new(PacketId(1), 100, flow)
    }

    /// How many packets each class holds after offering `packets`.
    fn placed(config: &QueueConfig, packets: &[Packet]) -> Vec<usize> {
        let Ok(QueueKind::Classful(config)) = config.kind("queue") else { panic!("not classful: {config:?}") };
        let mut q = Classful::new(&config, &mut |c| stream(1, c));
        let hint = LinkHint { typical_tx: Duration::from_millis(1) };
        for p in packets {
            q.enqueue(Instant::ZERO, p.clone(), hint, &mut Vec::new());
        }
        q.classes.iter().map(|c| c.queue.len()).collect()
    }

    #[test]
    fn the_first_matching_rule_picks_the_class_and_others_go_to_the_default() {
        let config = QueueConfig {
            classes: vec![class("voice"), class("web"), class("rest")],
            rules: vec![
                Rule { protocol: Some(ProtocolMatch::Name("udp".into())), ..rule("voice") },
                Rule { dst_port: Some(PortRange::One(443)), ..rule("web") },
            ],
            ..QueueConfig::default()
        };
        // UDP to 443 matches both rules: the first wins.
        assert_eq!(placed(&config, &[packet(Protocol::Udp, 443)]), vec![1, 0, 0]);
        assert_eq!(placed(&config, &[packet(Protocol::Tcp, 443)]), vec![0, 1, 0]);
        // Nothing matches: the default class, the last one unless named.
        assert_eq!(placed(&config, &[packet(Protocol::Tcp, 80)]), vec![0, 0, 1]);
        let named = QueueConfig { default_class: Some("web".into()), ..config };
        assert_eq!(placed(&named, &[packet(Protocol::Tcp, 80)]), vec![0, 1, 0]);
    }
}
