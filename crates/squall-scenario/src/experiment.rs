//! Experiment files (seed 000 §4.1): an experiment is a sequence of
//! replication sets; a set is a scenario (network configuration and
//! workload) × a number of replications, optionally swept over parameters.
//!
//! ```toml
//! name = "gsm-study"
//!
//! [[sets]]
//! name = "gsm"
//! scenario = "builtin:gsm-udp"   # or a path, relative to the experiment file
//! engine = "sim"                 # or "emu"
//! replications = 20              # default: the scenario's
//! seed = 1                       # default: the scenario's
//! set = { "stage.gsm-down.delay" = "250 ms" }
//! [sets.sweep]
//! mode = "cartesian"             # or "zip": the i-th value of every list together
//! "stage.gsm-down.error.packet" = ["1%", "5%", "10%"]
//! ```
//!
//! Every sweep key is any `--set` key of the scenario.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, ScenarioError};

/// Which engine runs a replication set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    Sim,
    Emu,
}

/// How sweep lists combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepMode {
    /// Every combination of the lists' values.
    #[default]
    Cartesian,
    /// The i-th values of all lists together; the lists must be equally long.
    Zip,
}

/// A sweep: `mode` and, for every other key, the list of values it takes
/// (so a misspelt `mode` is refused as a key without a list).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    #[serde(default)]
    pub mode: SweepMode,
    /// Scenario key → the values it takes.
    #[serde(flatten)]
    pub params: BTreeMap<String, Vec<toml::Value>>,
}

/// A replication set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicationSet {
    pub name: String,
    pub scenario: String,
    #[serde(default)]
    pub engine: Engine,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replications: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Scenario keys set for every run of the set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, toml::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub sets: Vec<ReplicationSet>,
}

/// One point of a set's sweep: the values of the swept keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SweepPoint {
    /// Position in the set's sweep, from 0.
    pub index: usize,
    /// (key, value as written in a `--set`) for every swept key, in key order.
    pub params: Vec<(String, String)>,
}

/// A value as a `--set` would write it: strings bare, the rest as TOML.
pub fn override_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl ReplicationSet {
    /// The set's sweep points (one point with no parameters if it has no
    /// sweep).
    pub fn points(&self) -> Vec<SweepPoint> {
        let Some(sweep) = &self.sweep else { return vec![SweepPoint { index: 0, params: Vec::new() }] };
        let keys: Vec<&String> = sweep.params.keys().collect();
        let lists: Vec<&Vec<toml::Value>> = sweep.params.values().collect();
        let combos: Vec<Vec<usize>> = match sweep.mode {
            SweepMode::Zip => (0..lists.first().map_or(0, |l| l.len())).map(|i| vec![i; lists.len()]).collect(),
            SweepMode::Cartesian => lists.iter().fold(vec![Vec::new()], |acc, list| {
                acc.into_iter()
                    .flat_map(|prefix| {
                        (0..list.len()).map(move |i| {
                            let mut p = prefix.clone();
                            p.push(i);
                            p
                        })
                    })
                    .collect()
            }),
        };
        combos
            .into_iter()
            .enumerate()
            .map(|(index, combo)| SweepPoint {
                index,
                params: keys
                    .iter()
                    .zip(&combo)
                    .map(|(k, &i)| (k.to_string(), override_text(&lists_value(&lists, k, &keys, i))))
                    .collect(),
            })
            .collect()
    }

    /// Fixed overrides followed by the point's, as `--set` pairs.
    pub fn overrides(&self, point: &SweepPoint) -> Vec<(String, String)> {
        self.set.iter().map(|(k, v)| (k.clone(), override_text(v))).chain(point.params.iter().cloned()).collect()
    }
}

fn lists_value(lists: &[&Vec<toml::Value>], key: &str, keys: &[&String], i: usize) -> toml::Value {
    let k = keys.iter().position(|k| k.as_str() == key).expect("key from the same map");
    lists[k][i].clone()
}

impl Experiment {
    fn check(&self, file: &str) -> Result<(), ScenarioError> {
        let fail = |msg: String| Err(ScenarioError::new(ErrorKind::Check, file, None, None).message(msg));
        if self.sets.is_empty() {
            return fail("an experiment needs at least one [[sets]] entry".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for s in &self.sets {
            if !names.insert(&s.name) {
                return fail(format!("two replication sets are named `{}`; names must be unique", s.name));
            }
            if s.replications == Some(0) {
                return fail(format!("set `{}`: replications must be at least 1", s.name));
            }
            if let Some(sweep) = &s.sweep {
                if sweep.params.is_empty() {
                    return fail(format!("set `{}`: a sweep needs at least one key with a list of values", s.name));
                }
                if let Some((k, _)) = sweep.params.iter().find(|(_, v)| v.is_empty()) {
                    return fail(format!("set `{}`: sweep key `{k}` has no values", s.name));
                }
                let lens: std::collections::BTreeSet<usize> = sweep.params.values().map(Vec::len).collect();
                if sweep.mode == SweepMode::Zip && lens.len() > 1 {
                    return fail(format!(
                        "set `{}`: a zip sweep needs lists of equal length, found lengths {lens:?}",
                        s.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Reads an experiment file's text; `file` names it in errors.
pub fn parse_experiment(file: &str, text: &str) -> Result<Experiment, ScenarioError> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        ScenarioError::new(ErrorKind::Syntax, file, Some(text), e.span()).message(e.message().to_string())
    })?;
    let exp: Experiment = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        ScenarioError::new(ErrorKind::Schema, file, Some(text), e.inner().span())
            .key(key)
            .message(e.inner().message().to_string())
    })?;
    exp.check(file)?;
    Ok(exp)
}

/// Reads an experiment file.
pub fn load_experiment(path: &Path) -> Result<Experiment, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioError::new(ErrorKind::Read, &file, None, None).message(format!("cannot read the experiment file: {e}"))
    })?;
    parse_experiment(&file, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
name = "e"
[[sets]]
name = "a"
scenario = "builtin:gsm-udp"
set = { "stage.gsm-down.delay" = "250 ms" }
[sets.sweep]
"stage.gsm-down.error.packet" = ["1%", "5%", "10%"]
"stage.gsm-down.rate" = ["9600 bit/s", "14.4 kbit/s"]
[[sets]]
name = "b"
scenario = "x.toml"
engine = "emu"
[sets.sweep]
mode = "zip"
seed = [1, 2]
"stage.x.delay" = ["1 ms", "2 ms"]
"#;

    #[test]
    fn cartesian_and_zip_sweeps_expand_in_order() {
        let e = parse_experiment("e.toml", TEXT).unwrap();
        let a = e.sets[0].points();
        assert_eq!(a.len(), 6);
        assert_eq!(
            a[1].params,
            vec![
                ("stage.gsm-down.error.packet".into(), "1%".into()),
                ("stage.gsm-down.rate".into(), "14.4 kbit/s".into())
            ]
        );
        assert_eq!(a[5].params[0].1, "10%");
        let o = e.sets[0].overrides(&a[0]);
        assert_eq!(o[0], ("stage.gsm-down.delay".to_string(), "250 ms".to_string()));
        let b = e.sets[1].points();
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].params, vec![("seed".into(), "2".into()), ("stage.x.delay".into(), "2 ms".into())]);
        assert_eq!(e.sets[1].engine, Engine::Emu);
        assert_eq!(e.sets[0].sweep.as_ref().unwrap().mode, SweepMode::Cartesian);
    }

    #[test]
    fn bad_experiments_are_refused_with_reasons() {
        let bad = |t: &str, want: &str| {
            let e = parse_experiment("e.toml", t).unwrap_err();
            let msg = format!("{e}");
            assert!(msg.contains(want) && msg.contains("e.toml"), "{msg}");
        };
        bad("name = \"e\"\nsets = []", "at least one");
        bad("name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\nreplications = 0", "at least 1");
        bad("name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\nengine = \"ns3\"", "engine");
        bad(
            "name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\n[sets.sweep]\nmode = \"zip\"\nx = [1]\ny = [1, 2]",
            "equal length",
        );
        bad(
            "name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"",
            "unique",
        );
        bad("name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\nbogus = 1", "bogus");
    }
}
