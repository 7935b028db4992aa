//! squall-link: the pure network model.
//!
//! Packets, stages (Seawind's channel, seed 000 §4.3), paths, the state
//! schedule, error models and distributions. No I/O, no clock, no threads:
//! time comes in as a parameter and the model says when it next wants to be
//! called (the sans-IO shape of quinn-proto and smoltcp). Both engines,
//! simulate and emulate, drive this same code.

/// Serde through the string form: serialize with `Display`, deserialize a
/// string with `FromStr` (its error's message becomes serde's). For types
/// written as words in scenario files ("4 packets", "16qam", "1900 MHz").
macro_rules! serde_via_string {
    ($($ty:ty),+ $(,)?) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    )+};
}

pub mod arrival;
pub mod background;
pub mod classes;
pub mod config;
pub mod dist;
pub mod error;
pub mod event;
pub mod fabric;
pub mod inside;
pub mod keys;
pub mod loss_sequence;
pub mod netem;
pub mod packet;
pub mod patch;
pub mod path;
pub mod queue;
pub mod radio;
pub mod rng;
pub mod series;
mod stage;
pub mod state;
pub mod time;
pub mod trace;
pub mod units;
pub mod vacation;

pub use background::{Arrivals, BackgroundConfig, Phase};
pub use classes::{EcnMatch, IpPrefix, PortRange, ProtocolMatch, Rule, Scheduler};
pub use config::{
    ArqConfig, BlackoutMode, BufferLimit, ConfigError, DropPolicy, ErrorMode, ErrorModel, FlowControl, Fragmentation,
    GilbertElliott, PathConfig, QueueConfig, RedConfig, StageConfig, check_stage_in_path,
};
pub use dist::correlated::{Correlation, CorrelationGenerator};
pub use dist::{Distribution, NetemTable, Sampler};
pub use event::{Direction, DropReason, Event, EventKind, Recording};
pub use fabric::{Addresses, Fabric, FabricPath, Hooks, PathId, PathRole};
pub use inside::Inside;
pub use loss_sequence::LossSequence;
pub use netem::{Duplicate, FourState, RateOverhead, SendEarly, Slot};
pub use packet::{Ecn, FlowKey, Packet, PacketId, Payload, Protocol, Segment, Segmented};
pub use patch::{Change, StagePatch};
pub use path::{Delivery, Path, PathStats};
pub use queue::{
    AqmConfig, Class, ClassConfig, ClassfulConfig, CodelConfig, FifoConfig, FqCodelConfig, PieConfig, QueueKind,
};
pub use stage::{BackgroundStats, ClassCounts, ClassSample, ClassStats, DropCounts, StageStats};
pub use state::{Entry, ScheduledState, State, StateSchedule};
pub use time::{Duration, Instant};
pub use trace::DeliveryTrace;
pub use units::{Bytes, Probability, Rate};
pub use vacation::VacationConfig;
