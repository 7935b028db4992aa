//! A state's change to one stage, derived from [`StageConfig`] instead of
//! mirroring it (seed 000 §5.1, "State changes": "any parameter set").
//!
//! The stage's keys are written once, in the [`stage_keys!`] declaration
//! of `StageConfig`; that declaration also gives each key's name
//! ([`StageConfig::KEYS`]), a copy of one key from another configuration,
//! and the walk over the distributions a key holds. A [`StagePatch`] is
//! then a partial `StageConfig`: the state's table is read by
//! `StageConfig`'s own deserializer (so every key, with its units, its
//! defaults and its errors, is the stage's), and the keys it gave are
//! remembered. Applying it copies those keys over the stage's current
//! configuration, and the result is validated as a whole stage. A key
//! added to `StageConfig` can therefore change in a state with nothing
//! more written.
//!
//! The radio's parameters are the one exception: a state changes them
//! one by one ([`RadioPatch`]: a new mean SNR, a new modulation), not as
//! a whole new radio.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::StageConfig;
use crate::dist::Distribution;
use crate::error::ConfigError;
use crate::radio::RadioPatch;
use crate::time::Duration;
use crate::units::Bytes;

/// Declares `StageConfig` and derives from its field list what a state
/// patch needs: the key names, copying one key, serializing one key and
/// the walk over the distributions in chosen keys. Written once, so a new
/// key is one field.
macro_rules! stage_keys {
    (
        $(#[$meta:meta])*
        pub struct StageConfig {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct StageConfig {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
        }

        impl StageConfig {
            /// Every key of a stage, in the order of its fields.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            /// Sets `key` to its value in `from`; `false` if no key has that name.
            pub(crate) fn copy_key(&mut self, from: &StageConfig, key: &str) -> bool {
                match key {
                    $(stringify!($field) => self.$field = from.$field.clone(),)*
                    _ => return false,
                }
                true
            }

            /// Whether `key` has the same value here and in `other`.
            pub(crate) fn same_key(&self, other: &StageConfig, key: &str) -> bool {
                match key {
                    $(stringify!($field) => self.$field == other.$field,)*
                    _ => true,
                }
            }

            /// Writes `key` and its value as one entry of `map`.
            pub(crate) fn serialize_key<M: serde::ser::SerializeMap>(
                &self,
                key: &str,
                map: &mut M,
            ) -> Result<(), M::Error> {
                match key {
                    $(stringify!($field) => map.serialize_entry(key, &self.$field),)*
                    _ => Ok(()),
                }
            }

            /// The distributions held by the keys `keep` chooses, with
            /// their key paths from the stage.
            pub fn distributions_in<'a>(
                &'a self,
                keep: &dyn Fn(&str) -> bool,
            ) -> Vec<(Vec<$crate::patch::KeyPart>, $crate::patch::DistributionRef<'a>)> {
                let mut out = Vec::new();
                let StageConfig { $($field),* } = self;
                $(
                    if keep(stringify!($field)) {
                        let mut at = vec![$crate::patch::KeyPart::Key(stringify!($field))];
                        $crate::patch::Distributions::each($field, &mut at, &mut out);
                    }
                )*
                out
            }

            /// [`StageConfig::distributions_in`], to change them.
            pub fn distributions_in_mut<'a>(
                &'a mut self,
                keep: &dyn Fn(&str) -> bool,
            ) -> Vec<(Vec<$crate::patch::KeyPart>, $crate::patch::DistributionMut<'a>)> {
                let mut out = Vec::new();
                let StageConfig { $($field),* } = self;
                $(
                    if keep(stringify!($field)) {
                        let mut at = vec![$crate::patch::KeyPart::Key(stringify!($field))];
                        $crate::patch::Distributions::each_mut($field, &mut at, &mut out);
                    }
                )*
                out
            }
        }
    };
}
pub(crate) use stage_keys;

/// One step of a key path from a stage: a key, or an index in a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPart {
    Key(&'static str),
    Index(usize),
}

/// A distribution found in a configuration, by the quantity it draws.
#[derive(Debug)]
pub enum DistributionRef<'a> {
    Duration(&'a Distribution<Duration>),
    Bytes(&'a Distribution<Bytes>),
    Ratio(&'a Distribution<f64>),
}

impl DistributionRef<'_> {
    /// [`Distribution::validate`] of the distribution found.
    pub fn validate(&self) -> Result<(), crate::dist::DistributionError> {
        match self {
            DistributionRef::Duration(d) => d.validate(),
            DistributionRef::Bytes(d) => d.validate(),
            DistributionRef::Ratio(d) => d.validate(),
        }
    }
}

/// [`DistributionRef`], to change it (to fill an empirical one from its file).
#[derive(Debug)]
pub enum DistributionMut<'a> {
    Duration(&'a mut Distribution<Duration>),
    Bytes(&'a mut Distribution<Bytes>),
    Ratio(&'a mut Distribution<f64>),
}

/// A configuration type that may hold distributions: a key that takes a
/// distribution is recognised from its type. Types without any take the
/// default methods (an empty `impl`).
pub trait Distributions {
    /// Appends every distribution in `self`, with its key path (`at` is
    /// the path to `self`).
    fn each<'a>(&'a self, _at: &mut Vec<KeyPart>, _out: &mut Vec<(Vec<KeyPart>, DistributionRef<'a>)>) {}
    /// [`Distributions::each`], to change them.
    fn each_mut<'a>(&'a mut self, _at: &mut Vec<KeyPart>, _out: &mut Vec<(Vec<KeyPart>, DistributionMut<'a>)>) {}
}

macro_rules! distribution_of {
    ($($q:ty => $variant:ident),* $(,)?) => {$(
        impl Distributions for Distribution<$q> {
            fn each<'a>(&'a self, at: &mut Vec<KeyPart>, out: &mut Vec<(Vec<KeyPart>, DistributionRef<'a>)>) {
                out.push((at.clone(), DistributionRef::$variant(self)));
            }
            fn each_mut<'a>(&'a mut self, at: &mut Vec<KeyPart>, out: &mut Vec<(Vec<KeyPart>, DistributionMut<'a>)>) {
                out.push((at.clone(), DistributionMut::$variant(self)));
            }
        }
    )*};
}
distribution_of!(Duration => Duration, Bytes => Bytes, f64 => Ratio);

impl<T: Distributions> Distributions for Option<T> {
    fn each<'a>(&'a self, at: &mut Vec<KeyPart>, out: &mut Vec<(Vec<KeyPart>, DistributionRef<'a>)>) {
        if let Some(t) = self {
            t.each(at, out);
        }
    }
    fn each_mut<'a>(&'a mut self, at: &mut Vec<KeyPart>, out: &mut Vec<(Vec<KeyPart>, DistributionMut<'a>)>) {
        if let Some(t) = self {
            t.each_mut(at, out);
        }
    }
}

impl<T: Distributions> Distributions for Vec<T> {
    fn each<'a>(&'a self, at: &mut Vec<KeyPart>, out: &mut Vec<(Vec<KeyPart>, DistributionRef<'a>)>) {
        for (i, t) in self.iter().enumerate() {
            at.push(KeyPart::Index(i));
            t.each(at, out);
            at.pop();
        }
    }
    fn each_mut<'a>(&'a mut self, at: &mut Vec<KeyPart>, out: &mut Vec<(Vec<KeyPart>, DistributionMut<'a>)>) {
        for (i, t) in self.iter_mut().enumerate() {
            at.push(KeyPart::Index(i));
            t.each_mut(at, out);
            at.pop();
        }
    }
}

/// The distributions in a struct's fields: `struct_distributions!(Type { field, ... })`
/// lists the fields that may hold one.
macro_rules! struct_distributions {
    ($ty:ty { $($field:ident),* }) => {
        impl $crate::patch::Distributions for $ty {
            fn each<'a>(
                &'a self,
                at: &mut Vec<$crate::patch::KeyPart>,
                out: &mut Vec<(Vec<$crate::patch::KeyPart>, $crate::patch::DistributionRef<'a>)>,
            ) {
                $(
                    at.push($crate::patch::KeyPart::Key(stringify!($field)));
                    self.$field.each(at, out);
                    at.pop();
                )*
            }
            fn each_mut<'a>(
                &'a mut self,
                at: &mut Vec<$crate::patch::KeyPart>,
                out: &mut Vec<(Vec<$crate::patch::KeyPart>, $crate::patch::DistributionMut<'a>)>,
            ) {
                let Self { $($field,)* .. } = self;
                $(
                    at.push($crate::patch::KeyPart::Key(stringify!($field)));
                    $field.each_mut(at, out);
                    at.pop();
                )*
            }
        }
    };
}
pub(crate) use struct_distributions;

/// A state's change to one stage: the keys it gives, each replacing the
/// stage's value whole, and the radio parameters it changes one by one.
/// Read from a state's `set.<stage>` table with the stage's own keys and
/// errors (an unknown key lists the stage's keys).
#[derive(Clone, Debug, PartialEq)]
pub struct StagePatch {
    /// The keys given, as indices into [`StageConfig::KEYS`], in that order.
    keys: Vec<usize>,
    /// Their values; the other keys hold their defaults and are not used.
    values: Box<StageConfig>,
    /// Radio parameters of a radio stage (seed 002): channel mean SNR,
    /// prediction NMSE, modulation, scheduling, ARQ, residual errors.
    pub radio: Option<RadioPatch>,
}

impl Default for StagePatch {
    fn default() -> Self {
        StagePatch { keys: Vec::new(), values: Box::new(StageConfig::named("")), radio: None }
    }
}

impl StagePatch {
    /// A patch that sets `key` with `set` (which edits a stage holding the
    /// defaults). For code that builds changes; a name that is not a key
    /// of a stage is a programming error, refused at once.
    pub fn with(mut self, key: &str, set: impl FnOnce(&mut StageConfig)) -> Self {
        let i = StageConfig::KEYS.iter().position(|k| *k == key && key != "radio");
        let i = i.unwrap_or_else(|| panic!("`{key}` is not a stage key a patch sets (radio: RadioPatch)"));
        set(&mut self.values);
        if let Err(at) = self.keys.binary_search(&i) {
            self.keys.insert(at, i);
        }
        self
    }

    /// A patch of radio parameters only.
    pub fn radio(patch: RadioPatch) -> Self {
        StagePatch { radio: Some(patch), ..StagePatch::default() }
    }

    /// Whether the patch gives `key` (for `radio`: whether it changes a
    /// radio parameter).
    pub fn sets(&self, key: &str) -> bool {
        if key == "radio" {
            return self.radio.is_some();
        }
        self.keys.iter().any(|&i| StageConfig::KEYS[i] == key)
    }

    /// The keys the patch gives, in the stage's order (not `radio`).
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.keys.iter().map(|&i| StageConfig::KEYS[i])
    }

    /// The values of the keys given (the others are defaults).
    pub fn values(&self) -> &StageConfig {
        &self.values
    }

    /// The error model the patch gives, to fill from a file
    /// (`error = { sequence = { file } }`); `None` when it gives none.
    pub fn error_mut(&mut self) -> Option<&mut crate::config::ErrorModel> {
        self.sets("error").then_some(&mut self.values.error)
    }

    /// The distributions in the keys given, with their key paths.
    pub fn distributions(&self) -> Vec<(Vec<KeyPart>, DistributionRef<'_>)> {
        self.values.distributions_in(&|k| self.sets(k))
    }

    /// [`StagePatch::distributions`], to change them.
    pub fn distributions_mut(&mut self) -> Vec<(Vec<KeyPart>, DistributionMut<'_>)> {
        let keys: Vec<&str> = self.keys().collect();
        self.values.distributions_in_mut(&|k| keys.contains(&k))
    }

    /// Checks that the patch can be applied to `base`: no new name, radio
    /// parameters only on a radio stage, and a result that passes
    /// [`StageConfig::validate`]. Errors name the key from the stage name.
    pub fn check(&self, base: &StageConfig) -> Result<(), ConfigError> {
        if self.sets("name") {
            return Err(ConfigError::new(
                &format!("{}.name", base.name),
                "a state cannot rename a stage: remove `name` (the stage is the one named in set.<stage>)",
            ));
        }
        if self.sets("trace") {
            return Err(ConfigError::new(
                &format!("{}.trace", base.name),
                "a state cannot change a stage's trace (its link replays one trace for the whole run): remove `trace`, or use another scenario",
            ));
        }
        if self.sets("series") {
            return Err(ConfigError::new(
                &format!("{}.series", base.name),
                "a state cannot change a stage's series (they are replayed for the whole run): remove `series`, or give the values as states",
            ));
        }
        if let Some(radio) = &self.radio {
            let key = format!("{}.radio", base.name);
            if base.radio.is_none() {
                return Err(ConfigError::new(
                    &key,
                    "sets radio parameters, but the stage has no radio link; give radio = { ... } only to a radio stage",
                ));
            }
            radio.validate(&key)?;
        }
        self.applied_to(base).validate()
    }

    /// The stage's configuration with this patch applied: each key given
    /// replaces the stage's value whole. A transmission time is given by
    /// either `rate` or `service_time`, so a patch that gives one of them
    /// removes the other.
    pub fn applied_to(&self, base: &StageConfig) -> StageConfig {
        let mut c = base.clone();
        for key in self.keys().filter(|k| *k != "name") {
            c.copy_key(&self.values, key);
        }
        match (self.sets("rate"), self.sets("service_time")) {
            (true, false) => c.service_time = None,
            (false, true) => c.rate = None,
            _ => {}
        }
        if let (Some(p), Some(r)) = (&self.radio, c.radio.as_mut()) {
            *r = r.patched(p);
        }
        c
    }
}

impl Serialize for StagePatch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.keys.len() + usize::from(self.radio.is_some())))?;
        for key in StageConfig::KEYS {
            if *key == "radio" {
                if let Some(r) = &self.radio {
                    map.serialize_entry("radio", r)?;
                }
            } else if self.sets(key) {
                self.values.serialize_key(key, &mut map)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StagePatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PatchVisitor)
    }
}

struct PatchVisitor;

impl<'de> Visitor<'de> for PatchVisitor {
    type Value = StagePatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table of the stage's keys to change, like { rate = \"4800 bit/s\" }")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<StagePatch, A::Error> {
        let mut keys = RecordKeys { inner: map, phase: Phase::Name, keys: Vec::new(), radio: None };
        let values = StageConfig::deserialize(de::value::MapAccessDeserializer::new(&mut keys))?;
        let mut given = keys.keys;
        given.sort_unstable();
        given.dedup();
        Ok(StagePatch { keys: given, values: Box::new(values), radio: keys.radio })
    }
}

/// Where [`RecordKeys`] is: it first hands `StageConfig` a placeholder
/// name (its one required key), then the state's own keys.
enum Phase {
    Name,
    NameValue,
    Keys,
}

/// The state's table as `StageConfig` reads it, recording each key given
/// and taking `radio` aside as a [`RadioPatch`].
struct RecordKeys<A> {
    inner: A,
    phase: Phase,
    keys: Vec<usize>,
    radio: Option<RadioPatch>,
}

/// A state's key: one of the stage's keys, else "unknown field" with the
/// stage's keys (raised while the key is read, so the error's path names it).
struct StageKey;

impl<'de> DeserializeSeed<'de> for StageKey {
    type Value = (usize, String);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let key = String::deserialize(d)?;
        match StageConfig::KEYS.iter().position(|k| *k == key) {
            Some(i) => Ok((i, key)),
            // Every key but the stage's name, which a state cannot change.
            None => Err(de::Error::unknown_field(&key, &StageConfig::KEYS[1..])),
        }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for RecordKeys<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        if let Phase::Name = self.phase {
            self.phase = Phase::NameValue;
            return seed.deserialize(de::value::StrDeserializer::<A::Error>::new("name")).map(Some);
        }
        loop {
            let Some((i, key)) = self.inner.next_key_seed(StageKey)? else { return Ok(None) };
            if key == "radio" {
                self.radio = Some(self.inner.next_value()?);
                continue;
            }
            self.keys.push(i);
            if key == "name" {
                // Recorded, and refused with its place by `StagePatch::check`.
                self.inner.next_value::<de::IgnoredAny>()?;
                continue;
            }
            let key: de::value::StringDeserializer<A::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        if let Phase::NameValue = self.phase {
            self.phase = Phase::Keys;
            return seed.deserialize(de::value::StrDeserializer::<A::Error>::new(""));
        }
        self.inner.next_value_seed(seed)
    }
}

/// A key path as squall-link's [`ConfigError`] writes it: `vacation.length`,
/// `background[0].size`.
pub fn dotted(at: &[KeyPart]) -> String {
    let mut s = String::new();
    for part in at {
        match part {
            KeyPart::Key(k) if s.is_empty() => s.push_str(k),
            KeyPart::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            KeyPart::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

// The types of the stage's keys. Those that hold no distribution take the
// default (empty) walk; a struct that holds some lists its fields.
mod field_types {
    use super::Distributions;
    use crate::background::BackgroundConfig;
    use crate::config::{BufferLimit, ErrorMode, ErrorModel, FlowControl, Fragmentation, QueueConfig};
    use crate::radio::RadioConfig;
    use crate::time::Duration;
    use crate::units::Rate;
    use crate::vacation::VacationConfig;

    impl Distributions for String {}
    impl Distributions for bool {}
    impl Distributions for Duration {}
    impl Distributions for Rate {}
    impl Distributions for BufferLimit {}
    impl Distributions for Fragmentation {}
    impl Distributions for ErrorModel {}
    impl Distributions for ErrorMode {}
    impl Distributions for FlowControl {}
    impl Distributions for crate::dist::correlated::Correlation {}
    impl Distributions for crate::netem::Duplicate {}
    impl Distributions for crate::netem::SendEarly {}
    impl Distributions for crate::netem::RateOverhead {}
    impl Distributions for QueueConfig {}
    impl Distributions for RadioConfig {}
    impl Distributions for crate::trace::DeliveryTrace {}
    impl Distributions for crate::series::StageSeries {}
    super::struct_distributions!(BackgroundConfig { gap, size, on, off });
    super::struct_distributions!(VacationConfig { serving, length });
    super::struct_distributions!(crate::netem::Slot { interval });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_first_key() {
        // `StageKey`'s "expected one of" list leaves it out as `KEYS[1..]`.
        assert_eq!(StageConfig::KEYS[0], "name");
    }
}
