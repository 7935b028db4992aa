//! Empirical distributions (seed 000 §5.1): a `{ kind = "empirical", file =
//! "delays.txt" }` anywhere in the scenario is filled from that file, read
//! relative to the scenario file's directory. One value per line with the
//! quantity's unit (`12 ms`, `1500 B`; plain numbers for ratios); blank
//! lines and `#` comments are allowed. When `values` are given as well (a
//! run's resolved scenario), they are used and the file is not read.

use std::path::Path;

use squall_link::dist::Quantity;
use squall_link::keys::{DistributionMut, KeyPart};
use squall_link::{Bytes, Distribution, Duration};

use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;

/// A quantity that can be read from one line of a distribution file.
pub trait LineQuantity: Quantity + Sized {
    fn parse_line(s: &str) -> Result<Self, String>;
    /// An example value with its unit, for messages.
    fn example(n: u32) -> String;
    /// Whether a flow-size CDF file (`SIZE CDF` lines, sizes in bytes)
    /// may give this quantity.
    const FROM_CDF: bool = false;
}

impl LineQuantity for Duration {
    fn parse_line(s: &str) -> Result<Self, String> {
        s.parse().map_err(|e: squall_link::units::UnitError| e.to_string())
    }
    fn example(n: u32) -> String {
        format!("\"{n} ms\"")
    }
}

impl LineQuantity for Bytes {
    const FROM_CDF: bool = true;
    fn parse_line(s: &str) -> Result<Self, String> {
        s.parse().map_err(|e: squall_link::units::UnitError| e.to_string())
    }
    fn example(n: u32) -> String {
        format!("\"{n}00 B\"")
    }
}

impl LineQuantity for f64 {
    fn parse_line(s: &str) -> Result<Self, String> {
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("{s:?} is not a plain number, like 0.5 or 12")),
        }
    }
    fn example(n: u32) -> String {
        format!("{n}")
    }
}

/// Reads every empirical distribution's file into its `values`.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let root = KeyPath::root();
    for (i, link) in s.links.iter_mut().enumerate() {
        for (dir, stages) in [("downlink", &mut link.downlink), ("uplink", &mut link.uplink)] {
            for (j, st) in stages.iter_mut().enumerate() {
                let p = root.key("links").index(i).key(dir).index(j);
                fill_all(st.distributions_in_mut(&|_| true), &p, base_dir, src)?;
            }
        }
    }
    for (i, state) in s.states.iter_mut().enumerate() {
        let p = root.key("states").index(i);
        fill(&mut state.hold, &p.key("hold"), base_dir, src)?;
        for (stage, patch) in state.set.iter_mut() {
            let p = p.key("set").key(stage);
            fill_all(patch.distributions_mut(), &p, base_dir, src)?;
        }
    }
    for (i, b) in s.blackouts.iter_mut().enumerate() {
        let p = root.key("blackouts").index(i);
        fill_one(&mut b.at, &p.key("at"), base_dir, src)?;
        fill_one(&mut b.duration, &p.key("duration"), base_dir, src)?;
        fill(&mut b.every, &p.key("every"), base_dir, src)?;
    }
    for (i, flow) in s.workload.udp.iter_mut().enumerate() {
        let p = root.key("workload").key("udp").index(i);
        fill_one(&mut flow.size, &p.key("size"), base_dir, src)?;
        fill(&mut flow.interval, &p.key("interval"), base_dir, src)?;
        fill(&mut flow.on, &p.key("on"), base_dir, src)?;
        fill(&mut flow.off, &p.key("off"), base_dir, src)?;
    }
    for (i, flow) in s.workload.tcp.iter_mut().enumerate() {
        let p = root.key("workload").key("tcp").index(i);
        fill_one(&mut flow.start, &p.key("start"), base_dir, src)?;
        if let Some(a) = &mut flow.arrivals {
            fill(&mut a.gap, &p.key("arrivals").key("gap"), base_dir, src)?;
        }
        match &mut flow.app {
            crate::schema::TcpApp::Web(web) => {
                fill(&mut web.size, &p.key("app").key("web").key("size"), base_dir, src)?;
            }
            crate::schema::TcpApp::Bulk(size) => fill_one(size, &p.key("app").key("bulk"), base_dir, src)?,
            _ => {}
        }
    }
    Ok(())
}

/// The key path of a part of a stage at `base`.
pub(crate) fn key_path(base: &KeyPath, at: &[KeyPart]) -> KeyPath {
    at.iter().fold(base.clone(), |p, part| match part {
        KeyPart::Key(k) => p.key(k),
        KeyPart::Index(i) => p.index(*i),
    })
}

/// Fills every distribution found in a stage (recognised by its type),
/// at its key path from `base`.
fn fill_all(
    found: Vec<(Vec<KeyPart>, DistributionMut<'_>)>,
    base: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    for (at, d) in found {
        let path = key_path(base, &at);
        match d {
            DistributionMut::Duration(d) => fill_one(d, &path, base_dir, src)?,
            DistributionMut::Bytes(d) => fill_one(d, &path, base_dir, src)?,
            DistributionMut::Ratio(d) => fill_one(d, &path, base_dir, src)?,
        }
    }
    Ok(())
}

fn fill<Q: LineQuantity>(
    d: &mut Option<Distribution<Q>>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    match d {
        Some(d) => fill_one(d, path, base_dir, src),
        None => Ok(()),
    }
}

fn fill_one<Q: LineQuantity>(
    d: &mut Distribution<Q>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    if let Distribution::NetemTable { file: Some(file), entries, .. } = d {
        return fill_table(file, entries, path, base_dir, src);
    }
    if let Distribution::Cdf { file, points } = d {
        return fill_cdf::<Q>(file.as_deref(), points, path, base_dir, src);
    }
    let Distribution::Empirical { file: Some(file), values, .. } = d else { return Ok(()) };
    if !values.is_empty() {
        // A run's resolved scenario keeps the file's name and its values;
        // the values are what ran, so they win.
        return Ok(());
    }
    let file_key = path.key("file");
    let full = base_dir.join(file.as_str());
    let shown = full.display().to_string();
    let text = crate::source::read_text(&full).map_err(|e| {
        let err = src.error(
            ErrorKind::DistributionFile,
            &file_key,
            format!(
                "cannot read the empirical distribution file {shown}: {e}; expected a text file with one value per line, like {}",
                Q::example(12)
            ),
        );
        err.label("cannot read this file")
    })?;
    *values = read_values(&text).map_err(|(span, line, why)| {
        let detail = ScenarioError::new(ErrorKind::DistributionFile, &shown, Some(&text), Some(span))
            .message(why.clone())
            .label("this line");
        src.error(ErrorKind::DistributionFile, &file_key, format!("{shown}:{line}: {why}"))
            .label(format!("bad value on line {line} of this file"))
            .related(detail)
    })?;
    if values.is_empty() {
        return Err(src.error(
            ErrorKind::DistributionFile,
            &file_key,
            format!("{shown} has no values; expected one value per line, like {}", Q::example(12)),
        ));
    }
    Ok(())
}

/// Reads a netem table distribution's `.dist` file into its `entries`
/// ([`crate::dist_table`]), unless they are there already (a run's
/// resolved scenario).
fn fill_table(
    file: &str,
    entries: &mut Vec<i16>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    if !entries.is_empty() {
        return Ok(());
    }
    let full = base_dir.join(file);
    *entries = crate::dist_table::read(&full).map_err(|e| {
        let label = match e.line() {
            Some(line) => format!("bad line {line} in this file"),
            None => "cannot use this file".to_string(),
        };
        src.error(ErrorKind::DistributionFile, &path.key("file"), e.to_string()).label(label)
    })?;
    Ok(())
}

/// Reads a cdf distribution's file ([`crate::flow_cdf`]) into its
/// `points`, unless they are there already (a run's resolved scenario);
/// only sizes come from such a file.
fn fill_cdf<Q: LineQuantity>(
    file: Option<&str>,
    points: &mut Vec<[f64; 2]>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    if !Q::FROM_CDF {
        return Err(src.error(
            ErrorKind::DistributionFile,
            &path.key("kind"),
            format!(
                "a cdf gives sizes in bytes (a flow-size CDF); this key takes values like {}: use another kind",
                Q::example(12)
            ),
        ));
    }
    let Some(file) = file else { return Ok(()) };
    if !points.is_empty() {
        return Ok(());
    }
    let full = base_dir.join(file);
    let read = crate::flow_cdf::read(&full).map_err(|e| {
        let label = match e.line() {
            Some(line) => format!("bad line {line} in this file"),
            None => "cannot use this file".to_string(),
        };
        src.error(ErrorKind::DistributionFile, &path.key("file"), e.to_string()).label(label)
    })?;
    *points = read.into_iter().map(|p| [p.bytes, p.cdf]).collect();
    Ok(())
}

/// The values of a distribution file, or the span, 1-based line number and
/// reason of the first bad line.
pub fn read_values<Q: LineQuantity>(text: &str) -> Result<Vec<Q>, (std::ops::Range<usize>, usize, String)> {
    let mut values = Vec::new();
    let mut offset = 0;
    for (n, raw) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += raw.len();
        let content = raw.split('#').next().unwrap_or("");
        let value = content.trim();
        if value.is_empty() {
            continue;
        }
        let lead = content.len() - content.trim_start().len();
        let span = start + lead..start + lead + value.len();
        let v = Q::parse_line(value).map_err(|e| (span, n + 1, e))?;
        values.push(v);
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_with_comments_and_blank_lines() {
        let v: Vec<Duration> = read_values("# delays\n12 ms\n\n  13 ms # measured\n1 s\n").unwrap();
        assert_eq!(v, vec![Duration::from_millis(12), Duration::from_millis(13), Duration::from_secs(1)]);
        let v: Vec<f64> = read_values("0.5\n2\n").unwrap();
        assert_eq!(v, vec![0.5, 2.0]);
    }

    #[test]
    fn names_the_bad_line() {
        let err = read_values::<Bytes>("1500 B\n\n  40 X\n").unwrap_err();
        assert_eq!(err.1, 3);
        assert_eq!(err.0, 10..14);
        assert!(read_values::<f64>("inf\n").is_err());
    }
}
