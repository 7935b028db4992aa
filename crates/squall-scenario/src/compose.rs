//! A scenario made of a network configuration and a workload
//! configuration set up independently (seed 000 §4.1: "Any combination
//! of network and workload configurations can be selected"): the
//! network's scenario text with its `[workload]` replaced by the workload
//! configuration's, as TOML edits made before the scenario is read, so the
//! result is checked like a scenario written whole.
//!
//! A workload configuration is a file holding a `[workload]` table (and
//! optionally a `description`), or that table's keys written inline in an
//! experiment. Paths inside it (a web site's `site`, an empirical
//! distribution's `file`) are read relative to where the workload was
//! written, whichever network it joins.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml_edit::{DocumentMut, Item, Value};

use crate::error::{ErrorKind, ScenarioError};
use crate::schema::Workload;

/// A configuration's text: `source` names it in errors, `dir` is where
/// the relative paths in it are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigText {
    pub source: String,
    pub text: String,
    pub dir: PathBuf,
}

/// What a workload file may hold.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read for its checks only
struct WorkloadFile {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    workload: Workload,
}

fn syntax(source: &str, text: &str, e: &toml_edit::TomlError) -> ScenarioError {
    ScenarioError::new(ErrorKind::Syntax, source, Some(text), e.span())
        .message(format!("invalid TOML: {}", e.message().trim_end()))
}

/// Checks a workload configuration on its own, with its errors located in
/// its own text: a `[workload]` table of the scenario schema (and an
/// optional `description`), nothing else.
pub fn check_workload(workload: &ConfigText) -> Result<(), ScenarioError> {
    let (source, text) = (workload.source.as_str(), workload.text.as_str());
    let de = toml::Deserializer::parse(text).map_err(|e| {
        ScenarioError::new(ErrorKind::Syntax, source, Some(text), e.span()).message(e.message().to_string())
    })?;
    let _: WorkloadFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let mut message = e.inner().message().to_string();
        if !key.starts_with("workload") && message.contains("unknown field") {
            message.push_str(
                "; a workload file holds a [workload] table ([[workload.tcp]], [[workload.udp]], \
                 [[workload.commands]]) and optionally a description: hosts, links and stages belong to the network",
            );
        }
        ScenarioError::new(ErrorKind::Schema, source, Some(text), e.inner().span()).key(key).message(message)
    })?;
    Ok(())
}

/// An inline workload table of an experiment (`[workloads.NAME]`) as the
/// text of a workload file.
pub fn inline_workload(experiment: &str, name: &str, table: &toml::Table, dir: &Path) -> ConfigText {
    let mut file = toml::Table::new();
    file.insert("workload".into(), toml::Value::Table(table.clone()));
    ConfigText {
        source: format!("{experiment} [workloads.{name}]"),
        text: toml::to_string(&file).unwrap_or_default(),
        dir: dir.to_path_buf(),
    }
}

/// An inline network table of an experiment (`[networks.NAME]`) as
/// scenario text; its `name` defaults to NAME.
pub fn inline_network(experiment: &str, name: &str, table: &toml::Table, dir: &Path) -> ConfigText {
    let mut table = table.clone();
    table.entry("name").or_insert_with(|| toml::Value::String(name.to_string()));
    ConfigText {
        source: format!("{experiment} [networks.{name}]"),
        text: toml::to_string(&table).unwrap_or_default(),
        dir: dir.to_path_buf(),
    }
}

/// The scenario text of `network` with its `[workload]` replaced by
/// `workload`'s (checked first with [`check_workload`]); the result's
/// paths are the network's, the workload's own made absolute when it lies
/// elsewhere.
pub fn compose(network: &ConfigText, workload: &ConfigText) -> Result<ConfigText, ScenarioError> {
    check_workload(workload)?;
    let mut doc: DocumentMut = network.text.parse().map_err(|e| syntax(&network.source, &network.text, &e))?;
    let wdoc: DocumentMut = workload.text.parse().map_err(|e| syntax(&workload.source, &workload.text, &e))?;
    doc.remove("workload");
    if let Some(item) = wdoc.get("workload") {
        let mut item = item.clone();
        if workload.dir != network.dir {
            rebase(&mut item, &workload.dir);
        }
        doc.insert("workload", item);
    }
    Ok(ConfigText {
        source: format!("[{} + {}]", network.source, workload.source),
        text: doc.to_string(),
        dir: network.dir.clone(),
    })
}

/// Keys whose string values are paths read relative to the file.
const PATH_KEYS: [&str; 2] = ["file", "site"];

fn rebase(item: &mut Item, dir: &Path) {
    match item {
        Item::Table(t) => t.iter_mut().for_each(|(k, v)| rebase_entry(k.get(), v, dir)),
        Item::ArrayOfTables(a) => {
            a.iter_mut().for_each(|t| t.iter_mut().for_each(|(k, v)| rebase_entry(k.get(), v, dir)))
        }
        Item::Value(v) => rebase_value(None, v, dir),
        Item::None => {}
    }
}

fn rebase_entry(key: &str, item: &mut Item, dir: &Path) {
    match item {
        Item::Value(v) => rebase_value(Some(key), v, dir),
        other => rebase(other, dir),
    }
}

fn rebase_value(key: Option<&str>, v: &mut Value, dir: &Path) {
    match v {
        Value::String(s) if key.is_some_and(|k| PATH_KEYS.contains(&k)) => {
            let path = Path::new(s.value());
            if path.is_relative() {
                let decor = s.decor().clone();
                let mut new = toml_edit::Formatted::new(dir.join(path).display().to_string());
                *new.decor_mut() = decor;
                *s = new;
            }
        }
        Value::InlineTable(t) => t.iter_mut().for_each(|(k, v)| rebase_value(Some(k.get()), v, dir)),
        Value::Array(a) => a.iter_mut().for_each(|v| rebase_value(None, v, dir)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(source: &str, text: &str, dir: &str) -> ConfigText {
        ConfigText { source: source.into(), text: text.into(), dir: PathBuf::from(dir) }
    }

    const NETWORK: &str = r#"name = "net"
duration = "10 s"
hosts = [{ name = "a", address = "10.0.0.1" }, { name = "b", address = "10.0.1.1" }]
[[links]]
between = ["a", "b"]
downlink = [{ name = "down", rate = "1 Mbit/s" }]
uplink = [{ name = "up", rate = "1 Mbit/s" }]
[[workload.udp]]
name = "old"
from = "a"
to = "b"
size = "100 B"
interval = "1 s"
"#;

    #[test]
    fn the_workload_replaces_the_networks_own() {
        let w = text(
            "bulk.toml",
            "description = \"one bulk flow\"\n[[workload.tcp]]\nname = \"bulk\"\nfrom = \"a\"\nto = \"b\"\napp = { bulk = \"1 MB\" }\n",
            "s",
        );
        let c = compose(&text("net.toml", NETWORK, "s"), &w).unwrap();
        assert_eq!(c.source, "[net.toml + bulk.toml]");
        let s = crate::parse(&c.source, &c.text, &c.dir).unwrap();
        assert_eq!(s.name, "net");
        assert!(s.workload.udp.is_empty(), "the network's own workload is gone");
        assert_eq!(s.workload.tcp.len(), 1);
        assert_eq!(s.workload.tcp[0].name, "bulk");
        // An empty workload configuration leaves the network without one.
        let c = compose(&text("net.toml", NETWORK, "s"), &text("none.toml", "", "s")).unwrap();
        let s = crate::parse(&c.source, &c.text, &c.dir).unwrap();
        assert_eq!(s.workload, Workload::default());
    }

    #[test]
    fn paths_in_a_workload_elsewhere_are_read_from_its_own_directory() {
        let w = text(
            "w/web.toml",
            "[[workload.tcp]]\nname = \"web\"\nfrom = \"a\"\nto = \"b\"\napp = { web = { site = \"site.csv\" } }\n\
             [[workload.udp]]\nname = \"u\"\nfrom = \"a\"\nto = \"b\"\nsize = { kind = \"empirical\", file = \"/abs/sizes.txt\" }\ninterval = \"1 s\"\n",
            "w",
        );
        let c = compose(&text("net.toml", NETWORK, "s"), &w).unwrap();
        let v: toml::Table = c.text.parse().unwrap();
        let tcp = &v["workload"]["tcp"][0];
        assert_eq!(tcp["app"]["web"]["site"].as_str(), Some("w/site.csv"));
        // Absolute paths stay as written.
        assert_eq!(v["workload"]["udp"][0]["size"]["file"].as_str(), Some("/abs/sizes.txt"));
        // In the same directory, nothing changes.
        let w = ConfigText { dir: PathBuf::from("s"), ..w };
        let c = compose(&text("net.toml", NETWORK, "s"), &w).unwrap();
        let v: toml::Table = c.text.parse().unwrap();
        assert_eq!(v["workload"]["tcp"][0]["app"]["web"]["site"].as_str(), Some("site.csv"));
    }

    #[test]
    fn a_bad_workload_is_located_in_its_own_file() {
        let net = text("net.toml", NETWORK, "s");
        let e = compose(&net, &text("w.toml", "hosts = []\n", "s")).unwrap_err();
        let msg = format!("{e:?}");
        assert!(msg.contains("w.toml:1:1") && msg.contains("hosts") && msg.contains("belong to the network"), "{msg}");
        let e = compose(
            &net,
            &text(
                "w.toml",
                "[[workload.tcp]]\nname = \"x\"\nfrom = \"a\"\nto = \"b\"\napp = { bulk = \"1 MB\" }\nbogus = 1\n",
                "s",
            ),
        )
        .unwrap_err();
        let msg = format!("{e:?}");
        assert!(msg.contains("w.toml:6:1") && msg.contains("bogus"), "{msg}");
        let e = compose(&net, &text("w.toml", "[workload\n", "s")).unwrap_err();
        assert!(format!("{e:?}").contains("w.toml:1:"), "{e:?}");
    }

    #[test]
    fn inline_tables_become_files() {
        let t: toml::Table = toml::from_str(
            "udp = [{ name = \"v\", from = \"a\", to = \"b\", size = \"160 B\", interval = \"20 ms\" }]",
        )
        .unwrap();
        let w = inline_workload("e.toml", "voice", &t, Path::new("x"));
        assert_eq!(w.source, "e.toml [workloads.voice]");
        check_workload(&w).unwrap();
        let n: toml::Table = toml::from_str(NETWORK).unwrap();
        let mut n = n;
        n.remove("name");
        let n = inline_network("e.toml", "lab", &n, Path::new("x"));
        let c = compose(&n, &w).unwrap();
        let s = crate::parse(&c.source, &c.text, &c.dir).unwrap();
        assert_eq!(s.name, "lab");
        assert_eq!(s.workload.udp[0].name, "v");
    }
}
