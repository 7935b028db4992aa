//! What a queue asks an AQM ([`Aqm`], [`QueueState`], [`Verdict`]) and the
//! static dispatch over every AQM of the registry ([`AqmConfig`],
//! [`AnyAqm`], declared from `with_aqms!`'s list in the parent module).

use super::*;
use crate::error::ConfigError;
use crate::event::DropReason;
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::stage::qdisc::LinkHint;
use crate::time::{Duration, Instant};

/// What the queue looks like when an AQM decides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueState {
    /// Packets waiting: before the arrival at enqueue, after the departure
    /// at dequeue.
    pub packets: usize,
    /// Bytes waiting, counted as `packets`.
    pub bytes: u64,
    /// The largest packet queued so far, the arrival included (CoDel's
    /// `maxpacket`, RFC 8289 §5.4; PIE's packet size, RFC 8033 §4.1).
    pub max_packet: u64,
    /// When the queue became empty, if it is (RED's idle time, Floyd &
    /// Jacobson §4).
    pub idle_since: Option<Instant>,
}

/// An AQM's decision on one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The packet goes on.
    Pass,
    /// The packet goes on with Congestion Experienced set (RFC 3168 §5);
    /// returned only for an ECN-capable packet.
    Mark,
    /// The packet is dropped, for this reason.
    Drop(DropReason),
}

/// An active queue management algorithm. Every call gets `now`; a queue
/// calls [`Aqm::on_enqueue`] for each arrival before its limits, and
/// [`Aqm::on_dequeue`] for each packet it takes from its head: after a
/// [`Verdict::Drop`] there it calls again, in the same dequeue, with the
/// next head, or with `None` when it has none the link can take.
pub(crate) trait Aqm {
    /// A packet arrives at `now`; `link` says how fast the link sends.
    fn on_enqueue(&mut self, now: Instant, packet: &Packet, queue: &QueueState, link: LinkHint) -> Verdict {
        let _ = (now, packet, queue, link);
        Verdict::Pass
    }
    /// `head` left the queue after waiting its sojourn time (the queue's
    /// state is after its departure); `None`: the queue has nothing the
    /// link can take (`queue.packets == 0`: it is empty). The verdict on
    /// `None` is not used.
    fn on_dequeue(&mut self, now: Instant, head: Option<(&Packet, Duration)>, queue: &QueueState) -> Verdict {
        let _ = (now, head, queue);
        Verdict::Pass
    }
}

/// Declares [`AqmConfig`] and [`AnyAqm`] from [`with_aqms!`]'s list: their
/// variants, the key each is written under and the static dispatch.
macro_rules! aqms {
    ($(#[doc = $doc:literal] $key:ident : $variant:ident($config:ty, $state:ty, |$c:ident, $rng:ident| $make:expr)),+ $(,)?) => {
        /// The one AQM of a queue, configured.
        #[derive(Clone, Debug, PartialEq)]
        pub enum AqmConfig {
            $(#[doc = $doc] $variant($config)),+
        }

        impl AqmConfig {
            /// Every AQM's scenario key, in [`with_aqms!`]'s order.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($key)),+];

            /// The scenario key it is written under (`red`, `codel`, `pie`).
            pub fn key(&self) -> &'static str {
                match self {
                    $(AqmConfig::$variant(_) => stringify!($key)),+
                }
            }

            /// Checks the parameters; `key` is the queue's (`stage.queue`).
            pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
                let key = format!("{key}.{}", self.key());
                match self {
                    $(AqmConfig::$variant(c) => c.validate(&key)),+
                }
            }
        }

        /// Every AQM, for static dispatch.
        #[derive(Debug)]
        pub(crate) enum AnyAqm {
            $(#[doc = $doc] $variant($state)),+
        }

        impl AnyAqm {
            /// A fresh AQM; `rng(component)` gives the queue's random
            /// stream of that name (its scenario key).
            pub(crate) fn new(config: &AqmConfig, rng: &mut dyn FnMut(&str) -> StreamRng) -> Self {
                match config {
                    $(AqmConfig::$variant($c) => { let $rng = rng; AnyAqm::$variant($make) }),+
                }
            }

            /// Takes new parameters of the same algorithm, keeping its
            /// state (as `tc qdisc change` does); `false` if `config` is
            /// another algorithm.
            pub(crate) fn set_config(&mut self, config: &AqmConfig) -> bool {
                match (self, config) {
                    $((AnyAqm::$variant(a), AqmConfig::$variant(c)) => { a.config = c.clone(); true })+
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
        }

        impl Aqm for AnyAqm {
            #[inline]
            fn on_enqueue(&mut self, now: Instant, packet: &Packet, queue: &QueueState, link: LinkHint) -> Verdict {
                match self {
                    $(AnyAqm::$variant(a) => a.on_enqueue(now, packet, queue, link)),+
                }
            }
            #[inline]
            fn on_dequeue(&mut self, now: Instant, head: Option<(&Packet, Duration)>, queue: &QueueState) -> Verdict {
                match self {
                    $(AnyAqm::$variant(a) => a.on_dequeue(now, head, queue)),+
                }
            }
        }
    };
}

with_aqms!(aqms);
