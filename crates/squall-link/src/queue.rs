//! A stage's queue (seed 000 §4.3, the input queue; seed 003 §2.2,
//! classes): as the scenario file writes it ([`QueueConfig`], flat keys
//! whose combination says the kind) and as the model runs it
//! ([`QueueKind`], exactly one kind). [`QueueConfig::kind`] turns the first
//! into the second and is the one place that checks the combination; its
//! errors name the key.
//!
//! A queue is one of: a FIFO (limits in packets and bytes, a drop policy,
//! at most one AQM, a maximum sojourn), FQ-CoDel (RFC 8290), or classes,
//! each holding a queue of its own, with a classifier and a scheduler
//! (ns-3's `QueueDisc`, whose classes hold child queue discs).

use serde::{Deserialize, Serialize};

use crate::classes::{MAX_CLASSES, Rule, Scheduler};
use crate::error::ConfigError;
use crate::stage::qdisc::aqm::one_of;
pub use crate::stage::qdisc::aqm::{AqmConfig, CodelConfig, PieConfig, RedConfig};
pub use crate::stage::qdisc::fifo::{DropPolicy, FifoConfig};
pub use crate::stage::qdisc::fq_codel::FqCodelConfig;
use crate::time::Duration;
use crate::units::Bytes;

/// Declares [`QueueConfig`] and [`ClassConfig`], the file's syntax, with a
/// key per AQM of the registry (`stage::qdisc::aqm::with_aqms!`) after
/// `drop`, where `red`, `codel` and `pie` have always been.
macro_rules! queue_configs {
    ($(#[doc = $doc:literal] $key:ident : $variant:ident($config:ident, $($rest:tt)*)),+ $(,)?) => {
        /// The input queue as the scenario file writes it (seed 000 §4.3): the
        /// keys set say its kind ([`QueueConfig::kind`]).
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct QueueConfig {
            /// Limit in packets (waiting packets; the one in transmission is in the
            /// send buffer). Unlimited when absent. In a stage with netem's `slot`
            /// it counts every packet inside the stage, as netem's `limit` does
            /// ([`crate::Slot`]).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub packets: Option<u32>,
            /// Limit in bytes. Unlimited when absent.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub bytes: Option<Bytes>,
            #[serde(default)]
            pub drop: DropPolicy,
            $(
                #[doc = concat!($doc, "; one AQM per queue.")]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $key: Option<$crate::stage::qdisc::aqm::$config>,
            )+
            /// FQ-CoDel (RFC 8290) as the whole queue, instead of one queue or
            /// classes.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub fq_codel: Option<FqCodelConfig>,
            /// Packets that waited longer than this are dropped when they reach the
            /// head of the queue.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub max_sojourn: Option<Duration>,
            /// Classes, each with its own queue (seed 003 §2.2). None: one queue
            /// with the limits above.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub classes: Vec<ClassConfig>,
            /// How the classes share the link.
            #[serde(default, skip_serializing_if = "is_default")]
            pub scheduler: Scheduler,
            /// The classifier: the first rule that matches picks the class.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub rules: Vec<Rule>,
            /// The class of packets no rule matches (default: the last class).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub default_class: Option<String>,
        }

        impl QueueConfig {
            /// The AQMs given, in the registry's order.
            fn aqms(&self) -> impl Iterator<Item = AqmConfig> {
                [$(self.$key.clone().map(AqmConfig::$variant)),+].into_iter().flatten()
            }
        }

        /// One class as the scenario file writes it: its queue's keys (those of
        /// [`QueueConfig`] without classes, flat in the class's table) and its
        /// share. [`ClassConfig::queue`] gathers the queue's keys; the model's
        /// class ([`crate::queue::Class`]) holds the queue it describes.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct ClassConfig {
            /// Unique within the stage; rules and `default_class` name it.
            pub name: String,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub packets: Option<u32>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub bytes: Option<Bytes>,
            #[serde(default)]
            pub drop: DropPolicy,
            $(
                #[doc = concat!($doc, "; one AQM per class.")]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $key: Option<$crate::stage::qdisc::aqm::$config>,
            )+
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub max_sojourn: Option<Duration>,
            /// Packets per round under `wrr` (default 1).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub weight: Option<u32>,
            /// Bytes per round under `drr` (default 1500 B).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub quantum: Option<Bytes>,
            /// FQ-CoDel (RFC 8290) as the class's queue: its flows share the
            /// class's turn under the stage's scheduler (an FQ-CoDel best-effort
            /// class below a strict-priority one, say). Instead of the limits and
            /// AQM above.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub fq_codel: Option<FqCodelConfig>,
        }

        impl ClassConfig {
            /// The class's own queue.
            pub fn queue(&self) -> QueueConfig {
                QueueConfig {
                    packets: self.packets,
                    bytes: self.bytes,
                    drop: self.drop,
                    $($key: self.$key.clone(),)+
                    max_sojourn: self.max_sojourn,
                    fq_codel: self.fq_codel.clone(),
                    ..QueueConfig::default()
                }
            }
        }
    };
}

crate::stage::qdisc::aqm::with_aqms!(queue_configs);

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

impl QueueConfig {
    /// The class unmatched packets go to, as an index into `classes`.
    pub fn default_class_index(&self) -> usize {
        self.default_class
            .as_ref()
            .and_then(|d| self.classes.iter().position(|c| &c.name == d))
            .unwrap_or(self.classes.len().saturating_sub(1))
    }

    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        self.kind(key).map(|_| ())
    }

    /// The queue this configuration describes, or the first key that does
    /// not fit: two AQMs, FQ-CoDel beside limits or an AQM, limits shared
    /// by classes, rules without classes, a bad parameter. `key` is the
    /// queue's (`stage.queue`); errors name the key under it.
    pub fn kind(&self, key: &str) -> Result<QueueKind, ConfigError> {
        let aqm = self.aqm(key)?;
        if let Some(fq) = &self.fq_codel {
            let limits = [
                ("classes", !self.classes.is_empty()),
                ("packets", self.packets.is_some()),
                ("bytes", self.bytes.is_some()),
            ];
            let aqm = aqm.as_ref().map(|a| (a.key(), true));
            let other = limits.into_iter().chain(aqm).chain([("max_sojourn", self.max_sojourn.is_some())]);
            if let Some((k, _)) = other.into_iter().find(|(_, set)| *set) {
                return Err(ConfigError::new(
                    &format!("{key}.{k}"),
                    "fq_codel is the whole queue: set its limit and CoDel inside fq_codel = { packets = ..., target = ... }",
                ));
            }
            fq.validate(&format!("{key}.fq_codel"))?;
        }
        if self.classes.is_empty() {
            if !self.rules.is_empty() || self.default_class.is_some() {
                return Err(ConfigError::new(
                    &format!("{key}.rules"),
                    "rules and default_class need classes: add classes = [{ name = \"...\" }, ...]",
                ));
            }
            return Ok(match &self.fq_codel {
                Some(fq) => QueueKind::FqCodel(fq.clone()),
                None => QueueKind::Fifo(FifoConfig {
                    packets: self.packets,
                    bytes: self.bytes,
                    drop: self.drop,
                    aqm,
                    max_sojourn: self.max_sojourn,
                }),
            });
        }
        classful(self, key).map(QueueKind::Classful)
    }

    /// The one AQM given, checked.
    fn aqm(&self, key: &str) -> Result<Option<AqmConfig>, ConfigError> {
        let mut given = self.aqms();
        let aqm = given.next();
        if let Some(second) = given.next() {
            return Err(ConfigError::new(
                &format!("{key}.{}", second.key()),
                &format!("give one AQM: either {}", one_of(AqmConfig::KEYS)),
            ));
        }
        if let Some(a) = &aqm {
            a.validate(key)?;
        }
        Ok(aqm)
    }
}

/// A stage's queue as the model runs it: exactly one kind (Linux's and
/// ns-3's queue discs).
#[derive(Clone, Debug, PartialEq)]
pub enum QueueKind {
    /// One queue: limits, drop policy, at most one AQM, maximum sojourn.
    Fifo(FifoConfig),
    /// Flow queues with CoDel and deficit round robin (RFC 8290).
    FqCodel(FqCodelConfig),
    /// A classifier, a queue per class and a scheduler between them.
    Classful(ClassfulConfig),
}

impl Default for QueueKind {
    /// An unlimited tail-drop FIFO.
    fn default() -> Self {
        QueueKind::Fifo(FifoConfig::default())
    }
}

/// Classes, each with its own queue, a classifier and a scheduler (seed 003
/// §2.2; ns-3's classful `QueueDisc`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassfulConfig {
    /// At least one, names unique.
    pub classes: Vec<Class>,
    pub scheduler: Scheduler,
    /// The classifier: the first rule that matches picks the class; every
    /// rule names a class.
    pub rules: Vec<Rule>,
    /// The class of packets no rule matches, an index into `classes`.
    pub default_class: usize,
}

/// One class: its name, its share of the link and its own queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub name: String,
    /// Packets per round under weighted round robin.
    pub weight: u32,
    /// Bytes per round under deficit round robin.
    pub quantum: u64,
    pub queue: QueueKind,
}

impl ClassConfig {
    pub fn weight(&self) -> u32 {
        self.weight.unwrap_or(1)
    }

    pub fn quantum(&self) -> u64 {
        self.quantum.map_or(1500, |q| q.0)
    }
}

/// The classes of a queue that has some, checked: their names, shares and
/// queues, the rules, the default class, and no limit or AQM shared by
/// the classes. `key` is the queue's key (`stage.queue`).
fn classful(q: &QueueConfig, key: &str) -> Result<ClassfulConfig, ConfigError> {
    if q.classes.len() > MAX_CLASSES {
        return Err(ConfigError::new(&format!("{key}.classes"), &format!("at most {MAX_CLASSES} classes")));
    }
    let limits = [("packets", q.packets.is_some()), ("bytes", q.bytes.is_some())];
    let aqm = q.aqms().next().map(|a| (a.key(), true));
    let rest = [("max_sojourn", q.max_sojourn.is_some()), ("drop", q.drop != DropPolicy::Tail)];
    if let Some((k, _)) = limits.into_iter().chain(aqm).chain(rest).find(|(_, set)| *set) {
        return Err(ConfigError::new(
            &format!("{key}.{k}"),
            "with classes, give limits, drop policy and AQM per class (classes = [{ name = \"a\", packets = 50 }])",
        ));
    }
    let mut classes = Vec::with_capacity(q.classes.len());
    for (i, c) in q.classes.iter().enumerate() {
        let ck = format!("{key}.classes[{i}]");
        if c.name.is_empty() {
            return Err(ConfigError::new(&format!("{ck}.name"), "a class needs a non-empty name"));
        }
        if q.classes[..i].iter().any(|o| o.name == c.name) {
            return Err(ConfigError::new(&format!("{ck}.name"), "another class of this stage has this name"));
        }
        if c.weight == Some(0) {
            return Err(ConfigError::new(&format!("{ck}.weight"), "must be at least 1 (packets per round)"));
        }
        if c.quantum.is_some_and(|b| b.0 == 0) {
            return Err(ConfigError::new(&format!("{ck}.quantum"), "must be at least 1 B (like \"1500 B\")"));
        }
        if c.weight.is_some() && q.scheduler != Scheduler::Wrr {
            return Err(ConfigError::new(&format!("{ck}.weight"), "is used by scheduler = \"wrr\" only"));
        }
        if c.quantum.is_some() && q.scheduler != Scheduler::Drr {
            return Err(ConfigError::new(&format!("{ck}.quantum"), "is used by scheduler = \"drr\" only"));
        }
        let queue = c.queue().kind(&ck)?;
        classes.push(Class { name: c.name.clone(), weight: c.weight(), quantum: c.quantum(), queue });
    }
    let names: Vec<&str> = q.classes.iter().map(|c| c.name.as_str()).collect();
    for (i, r) in q.rules.iter().enumerate() {
        r.validate(&format!("{key}.rules[{i}]"), &names)?;
    }
    if let Some(d) = &q.default_class
        && !q.classes.iter().any(|c| &c.name == d)
    {
        return Err(ConfigError::new(&format!("{key}.default_class"), "names no class of this stage"));
    }
    Ok(ClassfulConfig {
        classes,
        scheduler: q.scheduler,
        rules: q.rules.clone(),
        default_class: q.default_class_index(),
    })
}

impl crate::keys::Distributions for QueueConfig {}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str) -> ClassConfig {
        ClassConfig { name: name.into(), ..ClassConfig::default() }
    }

    /// The file's keys say the kind: limits with one AQM are a FIFO,
    /// `fq_codel` alone is FQ-CoDel, `classes` are classes each holding
    /// the queue its own keys describe, unmatched packets going to the last
    /// class (seed 003 §2.2's default).
    #[test]
    fn the_keys_given_make_exactly_one_kind() {
        let codel = CodelConfig::default();
        let fifo = QueueConfig { packets: Some(7), codel: Some(codel.clone()), ..QueueConfig::default() };
        assert_eq!(
            fifo.kind("q"),
            Ok(QueueKind::Fifo(FifoConfig {
                packets: Some(7),
                aqm: Some(AqmConfig::Codel(codel.clone())),
                ..FifoConfig::default()
            }))
        );
        let fq = QueueConfig { fq_codel: Some(FqCodelConfig::default()), ..QueueConfig::default() };
        assert_eq!(fq.kind("q"), Ok(QueueKind::FqCodel(FqCodelConfig::default())));
        let classes = QueueConfig {
            classes: vec![
                ClassConfig { packets: Some(20), ..class("voice") },
                ClassConfig { fq_codel: Some(FqCodelConfig::default()), ..class("rest") },
            ],
            ..QueueConfig::default()
        };
        let Ok(QueueKind::Classful(c)) = classes.kind("q") else { panic!("{:?}", classes.kind("q")) };
        assert_eq!(c.default_class, 1);
        assert_eq!((c.classes[0].weight, c.classes[0].quantum), (1, 1500));
        assert_eq!(c.classes[0].queue, QueueKind::Fifo(FifoConfig { packets: Some(20), ..FifoConfig::default() }));
        assert_eq!(c.classes[1].queue, QueueKind::FqCodel(FqCodelConfig::default()));
    }

    /// Combinations no kind holds are refused at the key that does not fit.
    #[test]
    fn combinations_of_kinds_are_refused_at_their_key() {
        let key = |q: QueueConfig| q.kind("s.queue").unwrap_err().key;
        let codel = Some(CodelConfig::default());
        let pie = Some(PieConfig::default());
        assert_eq!(key(QueueConfig { codel: codel.clone(), pie, ..QueueConfig::default() }), "s.queue.pie");
        let fq = Some(FqCodelConfig::default());
        assert_eq!(key(QueueConfig { fq_codel: fq.clone(), codel, ..QueueConfig::default() }), "s.queue.codel");
        assert_eq!(
            key(QueueConfig { fq_codel: fq, max_sojourn: Some(Duration::from_millis(9)), ..QueueConfig::default() }),
            "s.queue.max_sojourn"
        );
        let classes =
            vec![class("a"), ClassConfig { packets: Some(1), fq_codel: Some(FqCodelConfig::default()), ..class("b") }];
        assert_eq!(
            key(QueueConfig { classes: classes.clone(), packets: Some(3), ..QueueConfig::default() }),
            "s.queue.packets"
        );
        assert_eq!(key(QueueConfig { classes, ..QueueConfig::default() }), "s.queue.classes[1].packets");
    }
}
