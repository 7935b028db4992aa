//! A stage's keys, declared once: [`stage_keys!`] wraps the declaration of
//! [`crate::StageConfig`] and derives from its field list each key's name,
//! copying, comparing and serializing one key, and the walk over the
//! distributions the keys hold. A key that takes a distribution is
//! recognised from its type: each key's type implements [`Distributions`]
//! beside its declaration (an empty `impl` for a type without any;
//! [`struct_distributions!`] for a struct whose fields hold some).
//!
//! The state patch ([`crate::patch::StagePatch`]) and the scenario's checks
//! and loaders use these; nothing here depends on the stage's own types.

use crate::dist::Distribution;
use crate::time::Duration;
use crate::units::{Bytes, Rate};

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
            ) -> Vec<(Vec<$crate::keys::KeyPart>, $crate::keys::DistributionRef<'a>)> {
                let mut out = Vec::new();
                let StageConfig { $($field),* } = self;
                $(
                    if keep(stringify!($field)) {
                        let mut at = vec![$crate::keys::KeyPart::Key(stringify!($field))];
                        $crate::keys::Distributions::each($field, &mut at, &mut out);
                    }
                )*
                out
            }

            /// [`StageConfig::distributions_in`], to change them.
            pub fn distributions_in_mut<'a>(
                &'a mut self,
                keep: &dyn Fn(&str) -> bool,
            ) -> Vec<(Vec<$crate::keys::KeyPart>, $crate::keys::DistributionMut<'a>)> {
                let mut out = Vec::new();
                let StageConfig { $($field),* } = self;
                $(
                    if keep(stringify!($field)) {
                        let mut at = vec![$crate::keys::KeyPart::Key(stringify!($field))];
                        $crate::keys::Distributions::each_mut($field, &mut at, &mut out);
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
        impl $crate::keys::Distributions for $ty {
            fn each<'a>(
                &'a self,
                at: &mut Vec<$crate::keys::KeyPart>,
                out: &mut Vec<(Vec<$crate::keys::KeyPart>, $crate::keys::DistributionRef<'a>)>,
            ) {
                $(
                    at.push($crate::keys::KeyPart::Key(stringify!($field)));
                    $crate::keys::Distributions::each(&self.$field, at, out);
                    at.pop();
                )*
            }
            fn each_mut<'a>(
                &'a mut self,
                at: &mut Vec<$crate::keys::KeyPart>,
                out: &mut Vec<(Vec<$crate::keys::KeyPart>, $crate::keys::DistributionMut<'a>)>,
            ) {
                let Self { $($field,)* .. } = self;
                $(
                    at.push($crate::keys::KeyPart::Key(stringify!($field)));
                    $crate::keys::Distributions::each_mut($field, at, out);
                    at.pop();
                )*
            }
        }
    };
}
pub(crate) use struct_distributions;

/// A key path as squall-link's [`crate::ConfigError`] writes it: `vacation.length`,
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

// Types of keys from the crate's foundations.
impl Distributions for String {}
impl Distributions for bool {}
impl Distributions for Duration {}
impl Distributions for Rate {}
impl Distributions for crate::dist::correlated::Correlation {}
