//! Reading a scenario file: TOML syntax, the schema (serde with the key
//! path of every error), empirical distribution files and measured SNR
//! files, then the checks serde cannot make.

use std::path::Path;

use crate::error::{ErrorKind, ScenarioError};
use crate::schema::Scenario;
use crate::source::{Source, read_text};
use crate::{check, empirical, loss_sequence, mahimahi, overrides, pattern, series_file, site, snr_file, state_series};

/// Reads, checks and resolves the scenario file at `path`. Empirical
/// distribution files and measured SNR files are read relative to the
/// scenario file's directory.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_with_overrides::<&str, &str>(path, &[])
}

/// [`load`] with `--set key=value` overrides applied to the text first
/// (see [`apply_overrides`](crate::apply_overrides)).
pub fn load_with_overrides<K: AsRef<str>, V: AsRef<str>>(
    path: &Path,
    overrides: &[(K, V)],
) -> Result<Scenario, ScenarioError> {
    let name = path.display().to_string();
    let text = read_text(path).map_err(|e| {
        ScenarioError::new(ErrorKind::Read, &name, None, None).message(format!("cannot read the scenario file: {e}"))
    })?;
    let base_dir = path.parent().unwrap_or(Path::new("."));
    parse_with_overrides(&name, &text, overrides, base_dir)
}

/// Parses scenario text with `--set` overrides applied. An error the
/// overrides cause is reported against the `--set` argument that caused
/// it (its key and value), not against a line of the edited text that is
/// not in the file; an error of the file itself keeps its file:line:col.
pub fn parse_with_overrides<K: AsRef<str>, V: AsRef<str>>(
    source_name: &str,
    text: &str,
    overrides: &[(K, V)],
    base_dir: &Path,
) -> Result<Scenario, ScenarioError> {
    if overrides.is_empty() {
        return parse(source_name, text, base_dir);
    }
    let edited = overrides::apply_overrides(source_name, text, overrides)?;
    let edited_error = match parse(source_name, &edited, base_dir) {
        Ok(scenario) => return Ok(scenario),
        Err(e) => e,
    };
    let same = |a: &ScenarioError, b: &ScenarioError| a.reason() == b.reason() && a.key_path() == b.key_path();
    // The file's own error, unchanged by the overrides: its own place.
    let original = match parse(source_name, text, base_dir).err() {
        Some(e) if same(&e, &edited_error) => return Err(e),
        other => other,
    };
    // The first override after which the text fails differently.
    for n in 1..=overrides.len() {
        let partial = overrides::apply_overrides(source_name, text, &overrides[..n])?;
        let Err(e) = parse(source_name, &partial, base_dir) else { continue };
        if original.as_ref().is_some_and(|o| same(o, &e)) {
            continue;
        }
        let (key, value) = (overrides[n - 1].0.as_ref(), overrides[n - 1].1.as_ref());
        let reason = if e.key_path().is_empty() {
            e.reason().to_string()
        } else {
            format!("`{}`: {}", e.key_path(), e.reason())
        };
        return Err(ScenarioError::new(ErrorKind::Override, &format!("--set {key}={value}"), None, None)
            .message(format!("{reason} (in {source_name} with this --set)")));
    }
    Err(edited_error)
}

/// Parses and checks scenario text. `source_name` names it in errors (the
/// file name); `base_dir` is where empirical distribution files and
/// measured SNR files are looked up.
pub fn parse(source_name: &str, text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    let mut source = Source::new(source_name, text);
    let de = toml::Deserializer::parse(text).map_err(|e| source.syntax_error(&e))?;
    let mut scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| source.schema_error(&e))?;
    source.origins = pattern::expand(&mut scenario, &source)?;
    empirical::resolve(&mut scenario, base_dir, &source)?;
    snr_file::resolve(&mut scenario, base_dir, &source)?;
    mahimahi::resolve(&mut scenario, base_dir, &source)?;
    loss_sequence::resolve(&mut scenario, base_dir, &source)?;
    series_file::resolve(&mut scenario, base_dir, &source)?;
    state_series::resolve(&mut scenario, base_dir, &source)?;
    site::resolve(&mut scenario, base_dir, &source)?;
    default_mss(&mut scenario);
    check::check(&scenario, &source)?;
    Ok(scenario)
}

/// Gives each TCP flow that names no `mss` the one of a 1500-byte MTU
/// for its IP version: 1460 B over IPv4, 1440 B over IPv6 (RFC 9293
/// §3.7.1, RFC 8200 §3). A flow whose ends are unknown or have no family
/// in common is left for the check to refuse.
fn default_mss(scenario: &mut Scenario) {
    let addresses: std::collections::HashMap<&str, squall_link::Addresses> =
        scenario.hosts.iter().map(|h| (h.name.as_str(), h.addresses())).collect();
    for f in &mut scenario.workload.tcp {
        if f.mss.is_some() {
            continue;
        }
        let (Some(&from), Some(&to)) = (addresses.get(f.from.as_str()), addresses.get(f.to.as_str())) else {
            continue;
        };
        f.mss = match crate::topology::flow_addresses(from, to, f.ip_version) {
            Some((a, _)) if a.is_ipv6() => Some(squall_link::Bytes(crate::schema::DEFAULT_MSS_IPV6)),
            _ => Some(squall_link::Bytes(crate::schema::DEFAULT_MSS_IPV4)),
        };
    }
}

impl Scenario {
    /// The seed of replication `r`: `seed + r`, wrapping past u64::MAX so
    /// that every seed can start a replication set.
    pub fn replication_seed(&self, r: u32) -> u64 {
        self.seed.wrapping_add(r.into())
    }

    /// The checks [`parse`] makes after deserializing, for a scenario built
    /// in code (from a netem one-liner, or edited for a sweep). Errors name
    /// the key but no line. Empirical distributions must hold their values.
    pub fn check(&self) -> Result<(), ScenarioError> {
        let source = Source::new("<scenario>", "");
        check::check(self, &source)
    }
}
