//! A state or blackout timed at or after the end of the run would never
//! happen; it is refused at its `at`, with both times (issue 28).

use std::path::Path;

use squall_scenario::{ErrorKind, apply_overrides, parse};

const EXAMPLE: &str = include_str!("example.toml");

fn with_duration(d: &str) -> Result<squall_scenario::Scenario, squall_scenario::ScenarioError> {
    let text = apply_overrides("example.toml", EXAMPLE, &[("duration", d)]).unwrap();
    parse("example.toml", &text, Path::new("."))
}

#[test]
fn states_and_blackouts_after_the_end_are_refused_at_their_at() {
    // example.toml: a state at 40 s, a 5 s blackout at 60 s.
    let state_at = EXAMPLE.lines().position(|l| l == "at = \"40 s\"").unwrap() + 1;
    let blackout_at = EXAMPLE.lines().position(|l| l == "at = \"60 s\"").unwrap() + 1;
    assert!(with_duration("61 s").is_ok());
    let e = with_duration("60 s").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Check);
    assert_eq!((e.key_path(), e.line()), ("blackouts[0].at", Some(blackout_at)), "{e}");
    assert!(e.reason().starts_with("blackout at 60 s is not before the run ends at 60 s"), "{e}");
    let e = with_duration("30 s").unwrap_err();
    assert_eq!((e.key_path(), e.line()), ("states[0].at", Some(state_at)), "{e}");
    assert!(e.reason().contains("at 40 s is not before the run ends at 30 s"), "{e}");
}
