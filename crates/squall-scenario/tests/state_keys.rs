//! A state's `set.<stage>` table takes every key of a stage (issue 29),
//! read by the stage's own schema: the same units, the same checks and
//! errors placed at the state's key.

use std::path::Path;

use squall_link::{BufferLimit, Bytes, Distribution, Fragmentation, StageConfig};
use squall_scenario::{ErrorKind, Scenario, ScenarioError, parse};

fn scenario(set: &str) -> String {
    format!(
        r#"name = "state-keys"
duration = "10 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.0.2"
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "down"
rate = "1 Mbit/s"
delay = "20 ms"
[[links.uplink]]
name = "up"
[[states]]
name = "change"
at = "5 s"
set.down = {set}
"#
    )
}

fn load(set: &str) -> Result<Scenario, ScenarioError> {
    parse("s.toml", &scenario(set), Path::new("."))
}

fn down(s: &Scenario) -> &StageConfig {
    &s.links[0].downlink[0]
}

#[test]
fn a_state_sets_buffers_fragmentation_and_reorder() {
    let s = load(
        r#"{ receive_buffer = "2 packets", send_buffer = "16 frames", fragmentation = { frame_payload = "30 B", frame_header = "2 B" }, reorder = true }"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let patch = &s.states[0].set["down"];
    assert_eq!(patch.keys().collect::<Vec<_>>(), vec!["fragmentation", "send_buffer", "receive_buffer", "reorder"]);
    let c = patch.applied_to(down(&s));
    let mut expected = down(&s).clone();
    expected.receive_buffer = Some(BufferLimit::Packets(2));
    expected.send_buffer = BufferLimit::Frames(16);
    expected.fragmentation = Some(Fragmentation { frame_payload: Bytes(30), frame_header: Bytes(2), compression: 1.0 });
    expected.reorder = true;
    assert_eq!(c, expected);
    // The run's resolved scenario reads back to the same patch.
    let text = toml::to_string(&s).unwrap();
    let again: Scenario = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.states[0].set["down"], *patch);
}

#[test]
fn an_unknown_key_lists_the_stage_keys_at_its_line() {
    let e = load(r#"{ recive_buffer = "2 packets" }"#).unwrap_err();
    let msg = e.to_string();
    assert_eq!(e.kind(), ErrorKind::Schema, "{msg}");
    assert_eq!(e.line(), Some(20), "{msg}");
    assert_eq!(e.key_path(), "states[0].set.down.recive_buffer", "{msg}");
    assert!(msg.contains("did you mean `receive_buffer`?"), "{msg}");
    // The stage's keys but its name, which a state cannot change.
    assert!(msg.contains("expected one of `queue`, `allocation_delay`, `fragmentation`"), "{msg}");
}

#[test]
fn a_bad_value_is_the_stage_keys_error_at_the_state() {
    let e = load(r#"{ send_buffer = "4 parcels" }"#).unwrap_err();
    assert_eq!(e.key_path(), "states[0].set.down.send_buffer", "{e}");
    assert_eq!(e.line(), Some(20), "{e}");
    assert!(e.to_string().contains("like \"4 packets\" or \"16 frames\""), "{e}");
    // What StageConfig::validate refuses, placed at the state's key.
    let e = load(r#"{ fragmentation = { frame_payload = "0 B" } }"#).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Check, "{e}");
    assert_eq!(e.key_path(), "states[0].set.down.fragmentation.frame_payload", "{e}");
    assert!(e.to_string().contains("must be at least 1 B"), "{e}");
    let e = load(r#"{ receive_buffer = "0 frames" }"#).unwrap_err();
    assert_eq!(e.key_path(), "states[0].set.down.receive_buffer", "{e}");
}

#[test]
fn a_state_cannot_rename_a_stage() {
    let e = load(r#"{ name = "other" }"#).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Check, "{e}");
    assert_eq!(e.key_path(), "states[0].set.down.name", "{e}");
    assert_eq!(e.line(), Some(20), "{e}");
    assert!(e.to_string().contains("cannot rename a stage"), "{e}");
}

#[test]
fn distributions_in_any_key_are_found_by_type() {
    // A uniform with low > high in a background source's size, a key no
    // list names: checked as every distribution is.
    let e = load(r#"{ background = [{ name = "bg", rate = "10 kbit/s", size = { kind = "uniform", low = "900 B", high = "100 B" } }] }"#)
        .unwrap_err();
    assert_eq!(e.key_path(), "states[0].set.down.background[0].size.low", "{e}");
    assert!(e.to_string().contains("uniform needs low <= high"), "{e}");
    // An empirical file in a vacation, read relative to the scenario.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("serving.txt"), "9 ms\n11 ms\n").unwrap();
    let text =
        scenario(r#"{ vacation = { serving = { kind = "empirical", file = "serving.txt" }, length = "1 ms" } }"#);
    let s = parse("s.toml", &text, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let v = s.states[0].set["down"].values().vacation.clone().unwrap();
    assert_eq!(
        v.serving,
        Distribution::Empirical {
            file: Some("serving.txt".into()),
            values: vec![squall_link::Duration::from_millis(9), squall_link::Duration::from_millis(11)],
            order: squall_link::dist::Order::Random,
        }
    );
}
