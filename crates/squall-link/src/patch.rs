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

use crate::config::{BlackoutMode, StageConfig};
use crate::error::ConfigError;
use crate::keys::{DistributionMut, DistributionRef, KeyPart};
use crate::radio::RadioPatch;

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

/// A change applied to a path at one instant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Set parameters of the named stage.
    Set { stage: String, patch: Box<StagePatch> },
    /// Start a blackout on the named stage.
    BlackoutStart { stage: String, mode: BlackoutMode },
    /// End the blackout on the named stage.
    BlackoutEnd { stage: String },
}

impl Change {
    /// Whether this change sets radio parameters (it then decides a radio
    /// slot that starts at its instant).
    pub fn sets_radio(&self) -> bool {
        matches!(self, Change::Set { patch, .. } if patch.sets("radio"))
    }

    pub fn stage(&self) -> &str {
        match self {
            Change::Set { stage, .. } | Change::BlackoutStart { stage, .. } | Change::BlackoutEnd { stage } => stage,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_first_key() {
        // `StageKey`'s "expected one of" list leaves it out as `KEYS[1..]`.
        assert_eq!(StageConfig::KEYS[0], "name");
    }
}
