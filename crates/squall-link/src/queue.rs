//! A stage's queue as the scenario file writes it: limits, drop policy,
//! one AQM, maximum sojourn, or classes, or FQ-CoDel (seed 000 §4.3, the
//! input queue; seed 003 §2.2, classes).

use serde::{Deserialize, Serialize};

use crate::classes::{ClassConfig, CodelConfig, FqCodelConfig, PieConfig, Rule, Scheduler};
use crate::config::ConfigError;
use crate::time::Duration;
use crate::units::{Bytes, Probability};

/// The input queue (seed 000 §4.3; RED per Floyd & Jacobson 1993).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Limit in packets (waiting packets; the one in transmission is in the
    /// send buffer). Unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u32>,
    /// Limit in bytes. Unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Bytes>,
    #[serde(default)]
    pub drop: DropPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red: Option<RedConfig>,
    /// CoDel at dequeue (RFC 8289); one AQM per queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel: Option<CodelConfig>,
    /// PIE at enqueue (RFC 8033); one AQM per queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pie: Option<PieConfig>,
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
        let aqms = [("red", self.red.is_some()), ("codel", self.codel.is_some()), ("pie", self.pie.is_some())];
        if aqms.iter().filter(|(_, set)| *set).count() > 1 {
            let second = aqms.iter().filter(|(_, set)| *set).nth(1).map_or("codel", |(k, _)| k);
            return Err(ConfigError::new(&format!("{key}.{second}"), "give one AQM: either `red`, `codel` or `pie`"));
        }
        if let Some(c) = &self.codel {
            c.validate(&format!("{key}.codel"))?;
        }
        if let Some(p) = &self.pie {
            p.validate(&format!("{key}.pie"))?;
        }
        crate::classes::validate(self, key)?;
        if let Some(red) = &self.red {
            if !(red.min_threshold >= 0.0 && red.min_threshold < red.max_threshold) {
                return Err(ConfigError::new(
                    &format!("{key}.red"),
                    "needs 0 <= min_threshold < max_threshold (in packets)",
                ));
            }
            if !(red.weight > 0.0 && red.weight <= 1.0) {
                return Err(ConfigError::new(&format!("{key}.red.weight"), "must be in (0, 1], like 0.002"));
            }
        }
        Ok(())
    }
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

/// Random Early Detection on the average queue length in packets, with ECN
/// marking of ECN-capable packets instead of dropping (RFC 3168 §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Average queue length (packets) where early drops begin.
    pub min_threshold: f64,
    /// Average queue length (packets) where the drop probability reaches
    /// `max_p`; above it every packet is dropped (or, if `gentle`, the
    /// probability rises linearly to 1 at twice this).
    pub max_threshold: f64,
    pub max_p: Probability,
    /// Weight of the exponential moving average, w_q.
    #[serde(default = "RedConfig::default_weight")]
    pub weight: f64,
    #[serde(default)]
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them.
    #[serde(default = "yes")]
    pub ecn: bool,
}

fn yes() -> bool {
    true
}

impl RedConfig {
    fn default_weight() -> f64 {
        0.002
    }
}
