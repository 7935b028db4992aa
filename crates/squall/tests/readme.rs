//! The README's scenario examples are what squall accepts: every TOML block
//! that is a whole scenario loads and passes the checks, and every block of
//! downlink stages does inside a two-host scenario.

use std::path::Path;

/// The ```toml blocks of the README, with the line each starts on.
fn toml_blocks() -> Vec<(usize, String)> {
    let readme = include_str!("../../../README.md");
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in readme.lines().enumerate() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some((i + 2, String::new())),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// `stages` as the downlink of a link between two hosts.
fn with_hosts(stages: &str) -> String {
    format!(
        r#"name = "readme"
duration = "1 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.1.1"
[[links]]
between = ["a", "b"]
{stages}
[[links.uplink]]
name = "readme-up"
"#
    )
}

#[test]
fn readme_scenario_examples_load_and_check() {
    let mut checked = 0;
    for (line, block) in toml_blocks() {
        let text = if block.contains("[[hosts]]") && block.contains("[[links]]") {
            block
        } else if block.trim_start().starts_with("[[links.downlink]]") {
            with_hosts(&block)
        } else {
            continue;
        };
        let file = format!("README.md:{line}");
        let scenario = squall_scenario::parse(&file, &text, Path::new("scenarios"))
            .unwrap_or_else(|e| panic!("the README's block at line {line} does not load: {e}\n{text}"));
        scenario.check().unwrap_or_else(|e| panic!("the README's block at line {line} fails the checks: {e}"));
        checked += 1;
    }
    // The minimal scenario, the radio stages and the multi-class stages.
    assert!(checked >= 4, "only {checked} README blocks checked");
}
