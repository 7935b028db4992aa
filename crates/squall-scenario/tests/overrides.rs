//! `--set key=value` overrides, checked on the example scenario.

use std::path::Path;

use squall_link::{Distribution, Duration, ErrorModel, Probability, Rate};
use squall_scenario::{ErrorKind, Scenario, apply_overrides, parse, parse_set};

const EXAMPLE: &str = include_str!("example.toml");

fn with(sets: &[(&str, &str)]) -> Scenario {
    let text = apply_overrides("example.toml", EXAMPLE, sets).unwrap_or_else(|e| panic!("{e}"));
    parse("example.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn by_index_path() {
    let s = with(&[("links.0.downlink.0.rate", "10 Mbit/s")]);
    assert_eq!(s.links[0].downlink[0].rate, Some(Rate::from_bits_per_sec(10_000_000)));
    // Nothing else moved.
    assert_eq!(s.links[0].uplink[0].rate, Some(Rate::from_bits_per_sec(9600)));
}

#[test]
fn by_stage_name_and_top_level_keys() {
    let s = with(&[("stage.gsm-up.delay", "50 ms"), ("seed", "5"), ("duration", "100 s"), ("replications", "3")]);
    assert_eq!(s.links[0].uplink[0].delay, Duration::from_millis(50));
    assert_eq!(s.links[0].downlink[0].delay, Duration::from_millis(200));
    assert_eq!((s.seed, s.duration, s.replications), (5, Duration::from_secs(100), 3));
}

#[test]
fn toml_values_and_new_keys() {
    let s = with(&[
        // An inline table replaces the old one.
        ("stage.gsm-down.error", "{ bit = 1e-5 }"),
        // A key inside an inline table.
        ("stage.gsm-down.queue.packets", "3"),
        // A distribution from a plain quantity.
        ("stage.gsm-down.jitter", "3 ms"),
        // A key the stage did not have.
        ("stage.gsm-up.reorder", "true"),
        // Inside a state's patch (a dotted key).
        ("states.0.set.gsm-down.error", "{ packet = \"5%\" }"),
    ]);
    let down = &s.links[0].downlink[0];
    assert_eq!(down.error, ErrorModel::Bit(Probability::new(1e-5).unwrap()));
    assert_eq!(down.queue.packets, Some(3));
    assert_eq!(down.jitter, Some(Distribution::Constant { value: Duration::from_millis(3) }));
    assert!(s.links[0].uplink[0].reorder);
    assert_eq!(s.states[0].set["gsm-down"].values().error, ErrorModel::Packet(Probability::new(0.05).unwrap()));
}

#[test]
fn replacing_a_value_keeps_lines_and_comments() {
    let text = "name = \"x\" # the name\nseed = 1 # first seed\nduration = \"1 s\"\n";
    let out = apply_overrides("x.toml", text, &[("seed", "7")]).unwrap();
    assert_eq!(out, "name = \"x\" # the name\nseed = 7 # first seed\nduration = \"1 s\"\n");
}

#[test]
fn overridden_values_are_checked_like_written_ones() {
    let text = apply_overrides("example.toml", EXAMPLE, &[("stage.gsm-down.rate", "10 parsecs")]).unwrap();
    let err = parse("example.toml", &text, Path::new(".")).unwrap_err();
    assert_eq!(err.key_path(), "links[0].downlink[0].rate");
    // Replacing a value keeps the line numbers of the file.
    assert_eq!(err.line(), Some(16));
    assert!(err.to_string().contains("like \"9600 bit/s\""), "{err}");
}

#[test]
fn unknown_paths_are_errors_naming_the_key() {
    for (key, expected) in [
        ("stage.gsm-sideways.rate", "no stage named `gsm-sideways`; the stages are `gsm-down`, `gsm-up`"),
        ("links.3.downlink.0.rate", "no key `links.3`"),
        ("links.0.between.2", "no element `links.0.between.2`: the array has 2 element(s)"),
        ("stage.gsm-up.queue.packets", "no key `links.0.uplink.0.queue`"),
        ("seed.low", "`seed` is not a table or an array"),
        ("topology.hosts", "no key `topology`"),
        ("stage.gsm-up", "name a parameter of stage `gsm-up`"),
        ("links..rate", "a key is dotted names and indexes"),
    ] {
        let err = apply_overrides("example.toml", EXAMPLE, &[(key, "1")]).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), ErrorKind::Override, "{msg}");
        assert!(msg.starts_with("example.toml: "), "{msg}");
        assert_eq!(err.key_path(), key);
        assert!(msg.contains(&format!("`{key}`")), "{msg}");
        assert!(msg.contains(expected), "{expected:?} missing from {msg}");
    }
}

#[test]
fn load_with_overrides_names_the_file() {
    let dir = std::env::temp_dir().join(format!("squall-scenario-overrides-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("gsm.toml");
    std::fs::write(&file, EXAMPLE).unwrap();
    let s = squall_scenario::load_with_overrides(&file, &[("stage.gsm-down.rate", "19200 bit/s")]).unwrap();
    assert_eq!(s.links[0].downlink[0].rate, Some(Rate::from_bits_per_sec(19200)));
    // A typo in a --set is the --set's, not a line of the file (issue 28:
    // it was reported at a line the edited text had and the file had not).
    let err = squall_scenario::load_with_overrides(&file, &[("seed", "3"), ("stage.gsm-down.ratee", "1 Mbit/s")])
        .unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.kind(), ErrorKind::Override);
    assert_eq!((err.line(), err.column()), (None, None));
    assert!(msg.starts_with("--set stage.gsm-down.ratee=1 Mbit/s: "), "{msg}");
    assert!(msg.contains("`links[0].downlink[0].ratee`: unknown field `ratee`"), "{msg}");
    assert!(msg.contains("gsm.toml with this --set)"), "{msg}");
    // An error of the file itself keeps its place in the file, --set or not.
    let broken = EXAMPLE.replacen("name = \"gsm-down\"", "name = \"gsm-down\"\nspeed = 3", 1);
    let line = broken.lines().position(|l| l == "speed = 3").unwrap() + 1;
    std::fs::write(&file, &broken).unwrap();
    let err = squall_scenario::load_with_overrides(&file, &[("seed", "3")]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Schema);
    assert_eq!(err.line(), Some(line), "{err}");
    assert!(err.to_string().contains("gsm.toml:"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn owned_pairs_from_the_command_line() {
    let sets: Vec<(String, String)> =
        ["stage.gsm-down.rate=10 Mbit/s", "seed=9"].iter().map(|a| parse_set(a).unwrap()).collect();
    let text = apply_overrides("example.toml", EXAMPLE, &sets).unwrap();
    let s = parse("example.toml", &text, Path::new(".")).unwrap();
    assert_eq!((s.links[0].downlink[0].rate, s.seed), (Some(Rate::from_bits_per_sec(10_000_000)), 9));
}

#[test]
fn command_line_pairs() {
    assert_eq!(parse_set("stage.gsm-down.rate=10 Mbit/s").unwrap(), ("stage.gsm-down.rate".into(), "10 Mbit/s".into()));
    assert_eq!(parse_set("x={ a = 1 }").unwrap().1, "{ a = 1 }");
    assert!(parse_set("rate").is_err());
    assert!(parse_set("=5").is_err());
}
