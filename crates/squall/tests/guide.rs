//! The README and the user guide (docs/guide) say what squall does:
//!
//! - the guide builds with mdBook (under `CI=true` a missing `mdbook` fails);
//! - every ```toml block of the README and the guide is a scenario squall
//!   loads and checks (```toml,stages: downlink stages, ```toml,in-scenario:
//!   tables added to a two-host scenario, ```toml,experiment: an experiment
//!   file, ```toml,fragment: a part of a file that must still be TOML);
//! - every command of the README's quick start (a ```sh block after a
//!   `<!-- quick-start -->` comment; `<!-- quick-start root -->` for
//!   emulation, run when root) runs verbatim with `squall` resolved to this
//!   build, after the blocks marked `<!-- save-as: FILE -->` are written;
//! - every relative link in the README, the guide and docs/ points to a file
//!   that exists, and every `#anchor` to a heading that exists;
//! - the scenario keys reference names every key the schema accepts, as
//!   squall's own "expected one of" errors list them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// Files linked from the documentation that another piece of work adds
/// (issue 28: the metrics reference page). A link to one of them is not
/// dead while the file is missing; once it exists it is checked as any other.
const PENDING: &[&str] = &["docs/metrics.md"];

/// The README, the guide's sources and docs/*.md, as (path relative to the
/// repository, text).
fn documents() -> Vec<(PathBuf, String)> {
    let root = repo();
    let mut files = vec![PathBuf::from("README.md")];
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(&dir))
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path.strip_prefix(&root).expect("under the root").to_path_buf();
            if path.is_dir() {
                if rel != Path::new("docs/guide/book") {
                    dirs.push(rel);
                }
            } else if rel.extension().is_some_and(|e| e == "md") {
                files.push(rel);
            }
        }
    }
    files
        .into_iter()
        .map(|rel| {
            let text = std::fs::read_to_string(root.join(&rel))
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", rel.display()));
            (rel, text)
        })
        .collect()
}

/// A fenced code block: its info string, the 1-based line of its first
/// content line, its text, and the HTML comment on the line before the fence
/// (blank lines skipped), if any.
struct Block {
    info: String,
    line: usize,
    text: String,
    marker: Option<String>,
}

fn code_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    let mut last_comment: Option<String> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some(Block {
                        info: info.trim().to_string(),
                        line: i + 2,
                        text: String::new(),
                        marker: last_comment.take(),
                    });
                } else if let Some(c) = trimmed.strip_prefix("<!--").and_then(|c| c.strip_suffix("-->")) {
                    last_comment = Some(c.trim().to_string());
                } else if !trimmed.is_empty() {
                    last_comment = None;
                }
            }
            Some(block) => {
                if trimmed == "```" {
                    blocks.push(open.take().expect("an open block"));
                } else {
                    block.text.push_str(line);
                    block.text.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "a code block is not closed");
    blocks
}

/// A two-host scenario (`fixed` 10.0.0.1, `mobile` 10.0.1.1) with one link
/// whose uplink has one stage; `extra` is appended, so `[[links.downlink]]`
/// tables in it are the link's downlink (without them the downlink has one
/// stage that forwards at once).
fn in_scenario(extra: &str) -> String {
    let down = if extra.contains("[[links.downlink]]") { "" } else { "[[links.downlink]]\nname = \"guide-down\"\n" };
    format!(
        r#"name = "guide"
duration = "1 s"
[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["fixed", "mobile"]
{down}[[links.uplink]]
name = "guide-up"
{extra}"#
    )
}

/// Checks one ```toml block; `Ok(false)` for a fragment (TOML only).
fn check_toml_block(file: &Path, block: &Block) -> Result<bool, String> {
    let kind = block.info.strip_prefix("toml").unwrap_or_default().trim_start_matches(',');
    let name = format!("{}:{}", file.display(), block.line);
    let dir = repo().join(file.parent().unwrap_or(Path::new("")));
    let load = |text: &str| -> Result<(), String> {
        let scenario = squall_scenario::parse(&name, text, &dir).map_err(|e| format!("does not load: {e}"))?;
        scenario.check().map_err(|e| format!("fails the checks: {e}"))?;
        Ok(())
    };
    match kind {
        "" => load(&block.text).map(|()| true),
        "stages" => {
            if !block.text.trim_start().starts_with("[[links.downlink]]") {
                return Err("a ```toml,stages block must start with [[links.downlink]]".into());
            }
            load(&in_scenario(&block.text)).map(|()| true)
        }
        "in-scenario" => load(&in_scenario(&block.text)).map(|()| true),
        "experiment" => squall_scenario::parse_experiment(&name, &block.text)
            .map(|_| true)
            .map_err(|e| format!("is not an experiment squall reads: {e}")),
        "fragment" => block.text.parse::<toml::Table>().map(|_| false).map_err(|e| format!("is not TOML: {e}")),
        other => Err(format!("unknown kind of toml block `{other}` (use stages, in-scenario, experiment or fragment)")),
    }
}

#[test]
fn every_toml_block_loads() {
    let mut loaded = 0;
    let mut fragments = 0;
    let mut errors = Vec::new();
    for (file, text) in documents() {
        for block in code_blocks(&text).iter().filter(|b| b.info.starts_with("toml")) {
            match check_toml_block(&file, block) {
                Ok(true) => loaded += 1,
                Ok(false) => fragments += 1,
                Err(e) => errors.push(format!("{}:{}: {e}\n{}", file.display(), block.line, block.text)),
            }
        }
    }
    assert!(errors.is_empty(), "{} toml block(s) fail:\n\n{}", errors.len(), errors.join("\n"));
    // The README's scenario, the scenario files chapter's, the multi-class,
    // radio, TCP and outside-host blocks, at the least.
    assert!(loaded >= 10, "only {loaded} toml blocks loaded ({fragments} fragments)");
    eprintln!("{loaded} toml blocks loaded and checked, {fragments} fragments parsed as TOML");
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn quick_start_commands_run() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let blocks = code_blocks(&readme);
    let work = tempfile::tempdir().expect("a temporary directory");
    for block in &blocks {
        if let Some(file) = block.marker.as_deref().and_then(|m| m.strip_prefix("save-as:")) {
            std::fs::write(work.path().join(file.trim()), &block.text).expect("write a save-as block");
        }
    }
    // `squall` is this build; `sudo` (root only) runs its arguments as they are.
    let bin = Path::new(env!("CARGO_BIN_EXE_squall")).parent().expect("the binary's directory").to_path_buf();
    let shims = work.path().join(".shims");
    std::fs::create_dir(&shims).expect("a shim directory");
    let sudo = shims.join("sudo");
    std::fs::write(&sudo, "#!/bin/sh\nexec \"$@\"\n").expect("the sudo shim");
    std::fs::set_permissions(&sudo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod the shim");
    let path = format!("{}:{}:{}", bin.display(), shims.display(), std::env::var("PATH").unwrap_or_default());

    let mut ran = 0;
    for block in blocks.iter().filter(|b| b.marker.as_deref().is_some_and(|m| m.starts_with("quick-start"))) {
        assert_eq!(block.info, "sh", "README.md:{}: a quick-start block must be ```sh", block.line);
        if block.marker.as_deref() == Some("quick-start root") && !is_root() {
            eprintln!("README.md:{}: skipped (emulation needs root): {}", block.line, block.text.trim());
            continue;
        }
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &block.text])
            .current_dir(work.path())
            .env("PATH", &path)
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "README.md:{}: the quick start failed ({}):\n{}\nstdout:\n{}\nstderr:\n{}",
            block.line,
            out.status,
            block.text,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 2, "only {ran} quick-start blocks ran");
    // Every run of the quick start wrote its summary.
    let outs: Vec<_> = std::fs::read_dir(work.path().join("out")).expect("the runs' out/").collect();
    for dir in outs {
        let dir = dir.expect("an entry").path();
        assert!(dir.join("summary.json").is_file(), "{} has no summary.json", dir.display());
    }
}

/// GitHub's and mdBook's anchor for a heading: lower case, letters, digits,
/// `-` and `_` kept, spaces to `-`, the rest dropped; a repeated heading
/// gets `-1`, `-2`, ...
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let Some(heading) =
            (!in_code).then(|| line.trim_start_matches('#')).filter(|h| line.starts_with('#') && h.starts_with(' '))
        else {
            continue;
        };
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    out
}

/// The text mdBook renders for a file: `{{#include PATH}}` lines replaced by
/// the file they name.
fn rendered(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut out = String::new();
    for line in text.lines() {
        match line.trim().strip_prefix("{{#include ").and_then(|l| l.strip_suffix("}}")) {
            Some(inc) => out.push_str(&rendered(&file.parent()?.join(inc.trim()))?),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    Some(out)
}

/// The relative link targets of a markdown text outside code, with their lines.
fn relative_links(markdown: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_code = false;
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Inline code spans are not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or("").to_string();
            rest = &rest[end..];
            if !(target.is_empty() || target.contains("://") || target.starts_with("mailto:")) {
                links.push((i + 1, target));
            }
        }
    }
    links
}

/// Dead links in `(file, text)`: a missing file, or an anchor no heading has.
fn dead_links(file: &Path, text: &str) -> Vec<String> {
    let root = repo();
    let mut dead = Vec::new();
    for (line, target) in relative_links(text) {
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            root.join(file)
        } else {
            root.join(file.parent().unwrap_or(Path::new(""))).join(path)
        };
        let where_ = format!("{}:{line}: `{target}`", file.display());
        if !resolved.exists() {
            let pending = PENDING.iter().any(|p| root.join(p) == normalise(&resolved));
            if pending {
                eprintln!("{where_}: the linked file is not in this tree yet (pending)");
            } else {
                dead.push(format!("{where_}: no file {}", resolved.display()));
            }
            continue;
        }
        if let Some(anchor) = anchor {
            let Some(body) = resolved.extension().is_some_and(|e| e == "md").then(|| rendered(&resolved)).flatten()
            else {
                continue;
            };
            if !anchors(&body).contains(anchor) {
                dead.push(format!("{where_}: no heading with the anchor #{anchor}"));
            }
        }
    }
    dead
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn no_dead_links() {
    let mut dead = Vec::new();
    let mut checked = 0;
    for (file, text) in documents() {
        checked += relative_links(&text).len();
        dead.extend(dead_links(&file, &text));
    }
    assert!(dead.is_empty(), "{} dead link(s):\n{}", dead.len(), dead.join("\n"));
    assert!(checked >= 50, "only {checked} relative links found");
}

#[test]
fn dead_link_check_finds_a_missing_file_and_a_missing_anchor() {
    let text = "[a](getting-started.md) [b](no-such-chapter.md) [c](emulation.md#no-such-heading) [d](emulation.md#comparing-the-engines) `[e](not-a-link.md)`";
    let dead = dead_links(Path::new("docs/guide/src/x.md"), text);
    assert_eq!(dead.len(), 2, "{dead:#?}");
    assert!(dead[0].contains("no-such-chapter.md"), "{dead:#?}");
    assert!(dead[1].contains("#no-such-heading"), "{dead:#?}");
}

#[test]
fn toml_check_refuses_a_bad_block() {
    let block = |info: &str, text: &str| Block { info: info.into(), line: 1, text: text.into(), marker: None };
    let file = Path::new("docs/guide/src/x.md");
    // A scenario with a misspelt stage key, and a fragment that is not TOML.
    let typo = in_scenario("[[links.downlink]]\nname = \"d\"\nratee = \"1 Mbit/s\"\n");
    assert!(check_toml_block(file, &block("toml", &typo)).unwrap_err().contains("ratee"));
    assert!(check_toml_block(file, &block("toml,fragment", "rate = \n")).is_err());
    assert!(check_toml_block(file, &block("toml,stages", "[[links.downlink]]\nname = \"d\"\n")).unwrap());
}

/// The keys squall's error names as expected when a table has an unknown
/// key `zzzz` (serde's "expected one of `a`, `b`", "expected `a` or `b`").
fn expected_keys(scenario: &str) -> Vec<String> {
    let err = match squall_scenario::parse("probe.toml", scenario, Path::new(".")) {
        Ok(_) => panic!("the probe loaded:\n{scenario}"),
        Err(e) => e.to_string(),
    };
    let after = err.split_once("expected").unwrap_or_else(|| panic!("no `expected` in: {err}")).1;
    let list = after.split(';').next().unwrap_or_default();
    let keys: Vec<String> = list.split('`').skip(1).step_by(2).map(str::to_string).collect();
    assert!(!keys.is_empty(), "no keys in: {err}");
    keys
}

/// The text of the section of `page` under the heading `title` (any level),
/// to the next heading.
fn section<'a>(page: &'a str, title: &str) -> &'a str {
    let start = page
        .lines()
        .position(|l| l.starts_with('#') && l.trim_start_matches('#').trim() == title)
        .unwrap_or_else(|| panic!("the reference has no heading `{title}`"));
    let lines: Vec<&str> = page.lines().collect();
    let end = lines[start + 1..].iter().position(|l| l.starts_with('#')).map_or(lines.len(), |n| start + 1 + n);
    let from = lines[..start + 1].iter().map(|l| l.len() + 1).sum::<usize>();
    let to = lines[..end].iter().map(|l| l.len() + 1).sum::<usize>();
    &page[from.min(page.len())..to.min(page.len())]
}

#[test]
fn reference_lists_every_schema_key() {
    let page = std::fs::read_to_string(repo().join("docs/guide/src/reference.md")).expect("the reference page");
    let stage = |s: &str| in_scenario(&format!("[[links.downlink]]\nname = \"down\"\nrate = \"1 Mbit/s\"\n{s}\n"));
    let tcp =
        |s: &str| in_scenario(&format!("[[workload.tcp]]\nname = \"t\"\nfrom = \"fixed\"\nto = \"mobile\"\n{s}\n"));
    let mut probes: Vec<(&str, String)> = vec![
        ("Top level", in_scenario("").replacen("duration = \"1 s\"", "duration = \"1 s\"\nzzzz = 1", 1)),
        ("Hosts", in_scenario("").replacen("address = \"10.0.0.1\"", "address = \"10.0.0.1\"\nzzzz = 1", 1)),
        (
            "Links",
            in_scenario("").replacen(
                "between = [\"fixed\", \"mobile\"]",
                "between = [\"fixed\", \"mobile\"]\nzzzz = 1",
                1,
            ),
        ),
        ("Stages", stage("zzzz = 1")),
        ("Stages", stage("fragmentation = { zzzz = 1 }")),
        ("Stages", stage("vacation = { zzzz = 1 }")),
        ("Stages", stage("flow_control = { zzzz = 1 }")),
        ("Queues", stage("queue = { zzzz = 1 }")),
        ("Classes", stage("queue = { classes = [{ name = \"a\", zzzz = 1 }] }")),
        ("Rules", stage("queue = { classes = [{ name = \"a\" }], rules = [{ class = \"a\", zzzz = 1 }] }")),
        ("AQM", stage("queue = { red = { zzzz = 1 } }")),
        ("AQM", stage("queue = { codel = { zzzz = 1 } }")),
        ("AQM", stage("queue = { pie = { zzzz = 1 } }")),
        ("AQM", stage("queue = { fq_codel = { zzzz = 1 } }")),
        ("Errors", stage("error = { zzzz = 1 }")),
        ("Errors", stage("error = { gilbert_elliott = { zzzz = 1 } }")),
        ("Errors", stage("error = { four_state = { zzzz = 1 } }")),
        ("Correlations", stage("error_correlation = { zzzz = 1 }")),
        ("Stages", stage("duplicate = { zzzz = 1 }")),
        ("Stages", stage("send_early = { zzzz = 1 }")),
        ("Stages", stage("rate_overhead = { zzzz = 1 }")),
        ("Errors", stage("error_mode = { zzzz = 1 }")),
        ("Errors", stage("error_mode = { arq = { zzzz = 1 } }")),
        ("Distributions", stage("jitter = { kind = \"zzzz\" }")),
        ("Background generators", stage("background = [{ name = \"b\", zzzz = 1 }]")),
        ("Radio", stage("radio = { zzzz = 1 }")),
        ("Radio", stage("radio = { arq = { zzzz = 1 } }")),
        ("Radio", stage("radio = { channel = { kind = \"zzzz\" } }")),
        ("Radio", stage("radio = { channel = { kind = \"fading\", zzzz = 1 } }")),
        ("Radio", stage("radio = { channel = { kind = \"measured\", zzzz = 1 } }")),
        ("Radio", stage("radio = { channel = { kind = \"measured\", file = { zzzz = 1 } } }")),
        ("Trace links", stage("trace = { zzzz = 1 }")),
        ("Time series", stage("series = { zzzz = 1 }")),
        ("Time series", stage("series = { rate = { zzzz = 1 } }")),
        ("States", in_scenario("[[states]]\nname = \"s\"\nat = \"1 s\"\nzzzz = 1\n")),
        ("States", in_scenario("[[states]]\nname = \"s\"\nat = \"1 s\"\nset.guide-up = { zzzz = 1 }\n")),
        ("Blackouts", in_scenario("[[blackouts]]\nat = \"0 s\"\nduration = \"1 s\"\nzzzz = 1\n")),
        ("Workload", in_scenario("[workload]\nzzzz = 1\n")),
        ("UDP flows", in_scenario("[[workload.udp]]\nname = \"u\"\nfrom = \"fixed\"\nto = \"mobile\"\nzzzz = 1\n")),
        ("TCP flows", tcp("zzzz = 1")),
        ("Applications", tcp("app = { zzzz = 1 }")),
        ("Applications", tcp("app = { request_response = { zzzz = 1 } }")),
        ("Applications", tcp("app = { web = { zzzz = 1 } }")),
        ("Commands", in_scenario("[[workload.commands]]\nhost = \"fixed\"\nrun = \"true\"\nzzzz = 1\n")),
        ("Inline", in_scenario("[inline]\nzzzz = 1\n")),
        ("Output vectors", in_scenario("[[record]]\nstage = \"guide-up\"\nquantity = \"drops\"\nzzzz = 1\n")),
    ];
    for kind in [
        "constant",
        "uniform",
        "exponential",
        "normal",
        "pareto",
        "cauchy",
        "two_state_markov",
        "netem_table",
        "empirical",
        "cdf",
    ] {
        probes.push(("Distributions", stage(&format!("jitter = {{ kind = \"{kind}\", zzzz = 1 }}"))));
    }
    let mut missing = Vec::new();
    let mut keys = 0;
    for (title, scenario) in &probes {
        let text = section(&page, title);
        for key in expected_keys(scenario) {
            keys += 1;
            if !text.contains(&format!("`{key}`")) {
                missing.push(format!("`{key}` (section \"{title}\")"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/guide/src/reference.md does not name: {}", missing.join(", "));
    assert!(keys > 150, "only {keys} keys probed");
}

#[test]
fn guide_builds_with_mdbook() {
    let mdbook = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin")))
        .map(|d| d.join("mdbook"))
        .find(|p| p.is_file());
    let Some(mdbook) = mdbook else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "mdbook is not installed (CI installs it in .ci/run)");
        eprintln!("mdbook is not installed: the guide's build is not checked (cargo install mdbook --locked)");
        return;
    };
    let dest = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(&mdbook)
        .arg("build")
        .arg(repo().join("docs/guide"))
        .arg("--dest-dir")
        .arg(dest.path())
        .output()
        .expect("run mdbook");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mdbook build failed:\n{log}");
    // mdBook logs a failed {{#include}} or a broken summary as an error but
    // may still exit 0.
    assert!(!log.contains("ERROR") && !log.contains("WARN"), "mdbook build complained:\n{log}");
    // Every chapter of the summary became a page, the included documents too.
    let summary = std::fs::read_to_string(repo().join("docs/guide/src/SUMMARY.md")).expect("SUMMARY.md");
    let mut pages = 0;
    for (_, target) in relative_links(&summary) {
        let html = dest.path().join(target.replace(".md", ".html"));
        let body = std::fs::read_to_string(&html).unwrap_or_else(|e| panic!("{}: {e}", html.display()));
        assert!(!body.contains("{{#include"), "{} has an include left", html.display());
        pages += 1;
    }
    assert!(pages >= 20, "only {pages} pages");
    let validation = std::fs::read_to_string(dest.path().join("validation.html")).expect("validation.html");
    assert!(validation.contains("Validation"), "docs/validation.md was not included");
}
