//! A state or blackout timed at or after the end of the run never
//! happens; the scenario is accepted (a run shortened with `--set
//! duration` leaves it out) and `after_the_end` names it with both times,
//! for the engines to say (issue 28: it was accepted silently).

use std::path::Path;

use squall_scenario::{apply_overrides, parse};

const EXAMPLE: &str = include_str!("example.toml");

fn with_duration(d: &str) -> squall_scenario::Scenario {
    let text = apply_overrides("example.toml", EXAMPLE, &[("duration", d)]).unwrap();
    parse("example.toml", &text, Path::new(".")).unwrap()
}

#[test]
fn states_and_blackouts_after_the_end_are_named() {
    // example.toml: a state at 40 s, a 5 s blackout at 60 s.
    assert!(with_duration("61 s").after_the_end().is_empty());
    assert_eq!(
        with_duration("60 s").after_the_end(),
        ["blackouts[0] at 60 s is not before the run ends at 60 s: it never happens"]
    );
    let never = with_duration("30 s").after_the_end();
    assert_eq!(never.len(), 2, "{never:?}");
    assert!(never[0].starts_with("state `") && never[0].contains("at 40 s is not before the run ends at 30 s"));
}
