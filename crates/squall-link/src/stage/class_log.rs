//! Per-class samples of a classful queue, taken at every change for the
//! engines' output vectors (`[[record]]` with a `class`; seed 004 §5: any
//! quantity a module keeps, over time). Events carry no class and
//! background (virtual) packets have no events, so a class's queue cannot
//! be rebuilt from events.csv: the stage samples its own per-class
//! counters ([`ClassStats`](super::ClassStats)) after every operation on
//! its queue discipline, and keeps a sample for each class whose counters
//! changed. Off unless an engine asks for it ([`crate::Path::record_classes`]).

use std::sync::Arc;

use super::DropCounts;
use super::qdisc::AnyQueueDisc;
use crate::time::Instant;

/// One class's counters at one instant (real and background packets
/// together: both take the class's share).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts {
    /// Packets waiting in the class.
    pub queued_packets: u64,
    /// Their bytes.
    pub queued_bytes: u64,
    /// Packets the class handed to the link so far, and their bytes.
    pub sent: u64,
    pub sent_bytes: u64,
    /// Packets dropped in the class so far (tail or head drop, AQM,
    /// sojourn limit), by reason.
    pub drops: DropCounts,
}

/// A class's counters from `time` on.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassSample {
    pub time: Instant,
    /// The stage and the class, by name.
    pub stage: Arc<str>,
    pub class: Arc<str>,
    pub counts: ClassCounts,
}

/// A stage's class sampling: the counters last sampled, and the samples
/// not taken by the path yet.
#[derive(Debug, Default)]
pub(crate) struct ClassLog {
    names: Vec<Arc<str>>,
    last: Vec<ClassCounts>,
    now: Vec<ClassCounts>,
    pub(crate) samples: Vec<ClassSample>,
}

impl ClassLog {
    /// The queue discipline may have new classes (a state changed the
    /// stage's queue): the next sample reads their names again.
    pub(crate) fn queue_changed(&mut self) {
        self.names.clear();
    }

    /// Samples `qdisc`'s classes at `time`: one sample per class whose
    /// counters differ from the last ones (every class at the first call,
    /// and after the queue discipline changed its classes).
    pub(crate) fn sample(&mut self, stage: &Arc<str>, time: Instant, qdisc: &AnyQueueDisc) {
        qdisc.class_counts(&mut self.now);
        if self.names.len() != self.now.len() || self.last.len() != self.now.len() {
            // New classes (a state gave the stage a queue of another
            // shape): their counters start anew, and every class is
            // sampled.
            self.names = qdisc.class_names().into_iter().map(Arc::from).collect();
            self.last = vec![ClassCounts { queued_packets: u64::MAX, ..ClassCounts::default() }; self.now.len()];
        }
        for (i, (now, last)) in self.now.iter().zip(&mut self.last).enumerate() {
            if now != last {
                *last = *now;
                self.samples.push(ClassSample {
                    time,
                    stage: stage.clone(),
                    class: self.names[i].clone(),
                    counts: *now,
                });
            }
        }
    }
}
