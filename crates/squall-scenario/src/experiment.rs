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
//!
//! Network and workload configurations set up independently (seed 000
//! §4.1: "a replication set configuration consists of a network
//! configuration and a workload configuration which are set up
//! independently. Any combination … can be selected"): an experiment may
//! name networks and workloads, each a file or a table written inline, and
//! a set crosses the ones it lists, every combination with its sweep and
//! replications:
//!
//! ```toml
//! [networks]
//! gsm = "builtin:gsm-udp"               # a scenario file; its own workload is replaced
//! wlan = "../scenarios/wlan.toml"
//! [workloads]
//! bulk = "workloads/bulk.toml"          # a file holding a [workload] table
//! [workloads.voice]                     # or the [workload] table's keys inline
//! udp = [{ name = "voice", from = "fixed", to = "mobile", size = "160 B", interval = "20 ms" }]
//!
//! [[sets]]
//! name = "cross"
//! networks = ["gsm", "wlan"]            # instead of `scenario`
//! workloads = ["bulk", "voice"]         # with `scenario` too: its network, these workloads
//! replications = 5                      # 2 × 2 × 5 = 20 runs
//! ```
//!
//! Each combination is a point of the set (before its sweep's points),
//! with `network` and `workload` among its parameters, so that results.csv
//! and the report group by each.

use std::collections::{BTreeMap, BTreeSet};
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
    /// The scenario (network and workload together): a path relative to
    /// the experiment file or `builtin:NAME`. Give it or `networks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Names of the experiment's `[networks]` to cross with `workloads`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<String>,
    /// Names of the experiment's `[workloads]`: each replaces the
    /// workload of the scenario or of every network of the set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
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
    /// Network configurations by name: a scenario file (its workload is
    /// replaced by the set's) or a scenario table written inline.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub networks: BTreeMap<String, toml::Value>,
    /// Workload configurations by name: a file holding a `[workload]`
    /// table, or that table's keys written inline.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workloads: BTreeMap<String, toml::Value>,
    pub sets: Vec<ReplicationSet>,
}

/// One network × workload combination of a set: `None` where the set
/// takes the scenario's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combination {
    pub network: Option<String>,
    pub workload: Option<String>,
}

impl Combination {
    /// The combination's parameters as a sweep point shows them:
    /// `network` and `workload` where the set names them.
    pub fn params(&self) -> Vec<(String, String)> {
        let network = self.network.iter().map(|n| ("network".to_string(), n.clone()));
        network.chain(self.workload.iter().map(|w| ("workload".to_string(), w.clone()))).collect()
    }
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
    /// The set's network × workload combinations, networks varying
    /// slowest: one combination of `None`s for a set with a `scenario` and
    /// no `workloads`.
    pub fn combinations(&self) -> Vec<Combination> {
        let networks: Vec<Option<String>> =
            if self.networks.is_empty() { vec![None] } else { self.networks.iter().cloned().map(Some).collect() };
        let workloads: Vec<Option<String>> =
            if self.workloads.is_empty() { vec![None] } else { self.workloads.iter().cloned().map(Some).collect() };
        networks
            .iter()
            .flat_map(|n| workloads.iter().map(move |w| Combination { network: n.clone(), workload: w.clone() }))
            .collect()
    }

    /// How many points the set's sweep has (1 without a sweep); `None` if
    /// the number does not fit in a u64.
    pub fn point_count(&self) -> Option<u64> {
        let Some(sweep) = &self.sweep else { return Some(1) };
        match sweep.mode {
            SweepMode::Zip => Some(sweep.params.values().next().map_or(0, |l| l.len() as u64)),
            SweepMode::Cartesian => sweep.params.values().try_fold(1u64, |n, l| n.checked_mul(l.len() as u64)),
        }
    }

    /// How many runs the set makes (sweep points × replications), where
    /// the scenario, without the set's own `replications`, makes
    /// `scenario_replications`; `None` if the number does not fit in a u64.
    pub fn run_count(&self, scenario_replications: u32) -> Option<u64> {
        self.point_count()?.checked_mul(self.replications.unwrap_or(scenario_replications).into())
    }

    /// What the set runs, in words: its scenario, or its networks ×
    /// workloads.
    pub fn describe(&self) -> String {
        let list = |l: &[String]| l.join(", ");
        match (&self.scenario, self.workloads.is_empty()) {
            (Some(s), true) => s.clone(),
            (Some(s), false) => format!("{s} × workloads {}", list(&self.workloads)),
            (None, true) => format!("networks {}", list(&self.networks)),
            (None, false) => format!("networks {} × workloads {}", list(&self.networks), list(&self.workloads)),
        }
    }

    /// The set's sweep points, made one at a time as they are asked for
    /// (one point with no parameters if it has no sweep): memory does not
    /// grow with the size of the sweep.
    pub fn points(&self) -> SweepPoints<'_> {
        let lists: Vec<(&String, &Vec<toml::Value>)> =
            self.sweep.as_ref().map_or(Vec::new(), |s| s.params.iter().collect());
        let zip = self.sweep.as_ref().is_some_and(|s| s.mode == SweepMode::Zip);
        let digits = vec![0; lists.len()];
        let finished = lists.iter().any(|(_, l)| l.is_empty());
        SweepPoints { lists, zip, digits, index: 0, finished }
    }

    /// The scenario the set runs at sweep point `point`, from scenario text
    /// `text` (read from `source`; paths in it resolved against `dir`):
    /// the set's and the point's overrides applied to the text, then the
    /// set's `seed` and `replications`. A simulated set refuses a scenario
    /// with an outside host. `squall run` builds each point with it, and
    /// the control tool checks a set's points with it before queuing.
    pub fn scenario_at(
        &self,
        source: &str,
        text: &str,
        dir: &Path,
        point: &SweepPoint,
    ) -> Result<crate::Scenario, ScenarioError> {
        let text = crate::apply_overrides(source, text, &self.overrides(point))?;
        let mut scenario = crate::parse(source, &text, dir)?;
        if self.engine == Engine::Sim
            && let Some(why) = scenario.refuse_outside_host("the simulator")
        {
            return Err(ScenarioError::new(ErrorKind::Check, source, None, None).message(why));
        }
        if let Some(seed) = self.seed {
            scenario.seed = seed;
        }
        if let Some(r) = self.replications {
            scenario.replications = r;
        }
        Ok(scenario)
    }

    /// Fixed overrides followed by the point's, as `--set` pairs.
    pub fn overrides(&self, point: &SweepPoint) -> Vec<(String, String)> {
        self.set.iter().map(|(k, v)| (k.clone(), override_text(v))).chain(point.params.iter().cloned()).collect()
    }
}

/// The points of a sweep in order: for a cartesian sweep the last key
/// (in key order) varies fastest.
pub struct SweepPoints<'a> {
    lists: Vec<(&'a String, &'a Vec<toml::Value>)>,
    zip: bool,
    /// The value index of every list at the next point.
    digits: Vec<usize>,
    index: usize,
    finished: bool,
}

impl Iterator for SweepPoints<'_> {
    type Item = SweepPoint;

    fn next(&mut self) -> Option<SweepPoint> {
        if self.finished {
            return None;
        }
        let params =
            self.lists.iter().zip(&self.digits).map(|((k, l), &i)| (k.to_string(), override_text(&l[i]))).collect();
        let point = SweepPoint { index: self.index, params };
        self.index += 1;
        self.finished = if self.zip {
            self.digits.iter_mut().for_each(|d| *d += 1);
            self.lists.first().is_none_or(|(_, l)| self.digits[0] >= l.len())
        } else {
            // The next combination, like an odometer; done when it rolls over.
            let mut rolled_over = true;
            for (d, (_, l)) in self.digits.iter_mut().zip(&self.lists).rev() {
                *d += 1;
                if *d < l.len() {
                    rolled_over = false;
                    break;
                }
                *d = 0;
            }
            rolled_over
        };
        Some(point)
    }
}

impl Experiment {
    fn check(&self, file: &str) -> Result<(), ScenarioError> {
        let fail = |msg: String| Err(ScenarioError::new(ErrorKind::Check, file, None, None).message(msg));
        if self.sets.is_empty() {
            return fail("an experiment needs at least one [[sets]] entry".into());
        }
        for (table, entries) in [("networks", &self.networks), ("workloads", &self.workloads)] {
            for (name, v) in entries {
                if !matches!(v, toml::Value::String(_) | toml::Value::Table(_)) {
                    return fail(format!(
                        "{table}.{name}: expected a file name (a string, like \"{}\") or a table written inline; \
                         found {} `{v}`",
                        if table == "networks" { "../scenarios/gsm.toml" } else { "workloads/bulk.toml" },
                        v.type_str()
                    ));
                }
            }
        }
        let mut names = BTreeSet::new();
        for s in &self.sets {
            if !names.insert(&s.name) {
                return fail(format!("two replication sets are named `{}`; names must be unique", s.name));
            }
            match (&s.scenario, s.networks.is_empty()) {
                (None, true) => {
                    return fail(format!(
                        "set `{}`: give `scenario` (a file or builtin:NAME) or `networks` (names of the \
                         experiment's [networks])",
                        s.name
                    ));
                }
                (Some(_), false) => {
                    return fail(format!(
                        "set `{}`: give `scenario` or `networks`, not both (a network's own file is its scenario)",
                        s.name
                    ));
                }
                _ => {}
            }
            for (key, listed, defined) in
                [("networks", &s.networks, &self.networks), ("workloads", &s.workloads, &self.workloads)]
            {
                let mut seen = BTreeSet::new();
                for n in listed {
                    if !defined.contains_key(n) {
                        let known: Vec<&String> = defined.keys().collect();
                        return fail(format!(
                            "set `{}`: {key} names `{n}`, which the experiment's [{key}] does not define{}",
                            s.name,
                            if known.is_empty() {
                                format!(" (it has no [{key}] table)")
                            } else {
                                format!(
                                    " (it defines {})",
                                    known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                                )
                            }
                        ));
                    }
                    if !seen.insert(n) {
                        return fail(format!("set `{}`: {key} lists `{n}` twice", s.name));
                    }
                }
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
    let text = crate::source::read_text(path).map_err(|e| {
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
        let a: Vec<SweepPoint> = e.sets[0].points().collect();
        assert_eq!(e.sets[0].point_count(), Some(6));
        assert_eq!(a.len(), 6);
        assert_eq!(
            a[1].params,
            vec![
                ("stage.gsm-down.error.packet".into(), "1%".into()),
                ("stage.gsm-down.rate".into(), "14.4 kbit/s".into())
            ]
        );
        assert_eq!(a[5].params[0].1, "10%");
        assert_eq!(a.iter().map(|p| p.index).collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());
        // Every combination once, the last key fastest.
        let combos: Vec<(String, String)> = a.iter().map(|p| (p.params[0].1.clone(), p.params[1].1.clone())).collect();
        let mut expected = Vec::new();
        for e in ["1%", "5%", "10%"] {
            for r in ["9600 bit/s", "14.4 kbit/s"] {
                expected.push((e.to_string(), r.to_string()));
            }
        }
        assert_eq!(combos, expected);
        let o = e.sets[0].overrides(&a[0]);
        assert_eq!(o[0], ("stage.gsm-down.delay".to_string(), "250 ms".to_string()));
        let b: Vec<SweepPoint> = e.sets[1].points().collect();
        assert_eq!(e.sets[1].point_count(), Some(2));
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].params, vec![("seed".into(), "2".into()), ("stage.x.delay".into(), "2 ms".into())]);
        assert_eq!(e.sets[1].engine, Engine::Emu);
        assert_eq!(e.sets[0].sweep.as_ref().unwrap().mode, SweepMode::Cartesian);
    }

    #[test]
    fn huge_sweeps_are_counted_without_being_built() {
        let mut text =
            String::from("name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\nreplications = 3\n[sets.sweep]\n");
        for k in 0..12 {
            text.push_str(&format!("k{k:02} = [1, 2, 3, 4, 5, 6, 7, 8]\n"));
        }
        let e = parse_experiment("e.toml", &text).unwrap();
        assert_eq!(e.sets[0].point_count(), Some(8u64.pow(12)));
        assert_eq!(e.sets[0].run_count(20), Some(3 * 8u64.pow(12)));
        let second = e.sets[0].points().nth(1).unwrap();
        assert_eq!(second.params.last().unwrap(), &("k11".to_string(), "2".to_string()));
        // 40 keys of 8 values: 8^40 does not fit in a u64.
        let mut text = String::from("name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\n[sets.sweep]\n");
        for k in 0..40 {
            text.push_str(&format!("k{k:02} = [1, 2, 3, 4, 5, 6, 7, 8]\n"));
        }
        assert_eq!(parse_experiment("e.toml", &text).unwrap().sets[0].point_count(), None);
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
        bad("name = \"e\"\n[[sets]]\nname = \"a\"", "give `scenario`");
        bad(
            "name = \"e\"\nnetworks = { n = \"n.toml\" }\n[[sets]]\nname = \"a\"\nscenario = \"s\"\nnetworks = [\"n\"]",
            "not both",
        );
        bad(
            "name = \"e\"\nnetworks = { n = \"n.toml\" }\n[[sets]]\nname = \"a\"\nnetworks = [\"m\"]",
            "does not define (it defines `n`)",
        );
        bad(
            "name = \"e\"\n[[sets]]\nname = \"a\"\nscenario = \"s\"\nworkloads = [\"w\"]",
            "(it has no [workloads] table)",
        );
        bad(
            "name = \"e\"\nnetworks = { n = \"n.toml\" }\n[[sets]]\nname = \"a\"\nnetworks = [\"n\", \"n\"]",
            "lists `n` twice",
        );
        bad(
            "name = \"e\"\nworkloads = { w = 5 }\n[[sets]]\nname = \"a\"\nscenario = \"s\"",
            "workloads.w: expected a file name",
        );
    }

    #[test]
    fn networks_cross_workloads_networks_slowest() {
        let e = parse_experiment(
            "e.toml",
            "name = \"e\"\nnetworks = { gsm = \"g.toml\", wlan = \"w.toml\" }\n\
             workloads = { bulk = \"b.toml\", web = \"web.toml\", voice = { udp = [] } }\n\
             [[sets]]\nname = \"x\"\nnetworks = [\"wlan\", \"gsm\"]\nworkloads = [\"voice\", \"bulk\", \"web\"]\nreplications = 5\n\
             [[sets]]\nname = \"y\"\nscenario = \"s.toml\"\nworkloads = [\"web\"]\n\
             [[sets]]\nname = \"z\"\nscenario = \"s.toml\"",
        )
        .unwrap();
        let c = e.sets[0].combinations();
        let pairs: Vec<(String, String)> =
            c.iter().map(|c| (c.network.clone().unwrap(), c.workload.clone().unwrap())).collect();
        let expected: Vec<(String, String)> = ["wlan", "gsm"]
            .iter()
            .flat_map(|n| ["voice", "bulk", "web"].iter().map(move |w| (n.to_string(), w.to_string())))
            .collect();
        assert_eq!(pairs, expected);
        assert_eq!(c[4].params(), vec![("network".into(), "gsm".into()), ("workload".into(), "bulk".into())]);
        assert_eq!(e.sets[1].combinations(), vec![Combination { network: None, workload: Some("web".into()) }]);
        assert_eq!(e.sets[1].combinations()[0].params(), vec![("workload".into(), "web".into())]);
        assert_eq!(e.sets[2].combinations(), vec![Combination { network: None, workload: None }]);
        assert!(e.sets[2].combinations()[0].params().is_empty());
        assert_eq!(e.sets[0].describe(), "networks wlan, gsm × workloads voice, bulk, web");
    }
}
