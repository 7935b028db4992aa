//! A trace stage (`trace = "cell.down"`, a Mahimahi trace): the file is read
//! relative to the scenario, its bad lines and the keys a trace stage
//! cannot take are located errors, and a state cannot change the trace.

use std::path::Path;

use squall_scenario::{ErrorKind, ScenarioError, parse};

/// A scenario whose downlink's first stage is `stage` (TOML lines).
fn scenario(stage: &str) -> String {
    format!(
        r#"name = "trace"
duration = "1 s"

[[hosts]]
name = "server"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.2.1"

[[links]]
between = ["server", "mobile"]

[[links.downlink]]
name = "cell"
{stage}

[[links.uplink]]
name = "up"
"#
    )
}

/// Writes `trace` as `cell.down` in a new directory and parses the
/// scenario with `stage` from there.
fn load(stage: &str, trace: &str) -> Result<squall_scenario::Scenario, ScenarioError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cell.down"), trace).unwrap();
    parse("trace.toml", &scenario(stage), dir.path())
}

/// The line (1-based) of the scenario text where `needle` is.
fn line_of(stage: &str, needle: &str) -> usize {
    let text = scenario(stage);
    1 + text[..text.find(needle).unwrap()].matches('\n').count()
}

#[track_caller]
fn expect(err: ScenarioError, kind: ErrorKind, line: usize, key: &str, expected: &[&str]) {
    let msg = err.to_string();
    println!("{msg}");
    assert_eq!(err.kind(), kind, "{msg}");
    assert_eq!(err.line(), Some(line), "{msg}");
    assert!(msg.contains(&format!("trace.toml:{line}:")), "{msg}");
    assert_eq!(err.key_path(), key, "{msg}");
    for e in expected {
        assert!(msg.contains(e), "{e:?} missing from: {msg}");
    }
}

#[test]
fn the_file_is_read_relative_to_the_scenario() {
    let s = load(r#"trace = "cell.down""#, "1\n1\n2\n").unwrap();
    let t = s.links[0].downlink[0].trace.as_ref().unwrap();
    assert_eq!(t.file.as_deref(), Some("cell.down"));
    assert_eq!(t.opportunities_ms, [1, 1, 2]);
    // The resolved scenario keeps the values: read back, they are used and
    // the file is not needed.
    let resolved = toml::to_string(&s).unwrap();
    let again = parse("resolved.toml", &resolved, Path::new("/nonexistent")).unwrap();
    assert_eq!(again.links[0].downlink[0].trace, s.links[0].downlink[0].trace);
}

#[test]
fn a_bad_line_names_the_trace_file_and_line() {
    let stage = r#"trace = "cell.down""#;
    let err = load(stage, "1\n3\n2\n").unwrap_err();
    expect(
        err,
        ErrorKind::TraceFile,
        line_of(stage, "trace ="),
        "links[0].downlink[0].trace",
        &["cell.down:3: 2 ms comes after 3 ms on line 2", "expected times that do not decrease"],
    );
    let err = load(stage, "1\n2 \n").unwrap_err();
    expect(
        err,
        ErrorKind::TraceFile,
        line_of(stage, "trace ="),
        "links[0].downlink[0].trace",
        &["cell.down:2: `2 ` is not a whole number of milliseconds"],
    );
    let err = load(stage, "").unwrap_err();
    expect(err, ErrorKind::TraceFile, line_of(stage, "trace ="), "links[0].downlink[0].trace", &["the trace is empty"]);
}

#[test]
fn a_missing_file_is_named() {
    let stage = r#"trace = "no-such.down""#;
    let err = load(stage, "1\n").unwrap_err();
    expect(
        err,
        ErrorKind::TraceFile,
        line_of(stage, "trace ="),
        "links[0].downlink[0].trace",
        &["no-such.down: cannot read the trace"],
    );
}

#[test]
fn keys_a_trace_stage_cannot_take_are_refused() {
    for (key, line) in [("rate", r#"rate = "1 Mbit/s""#), ("delay", r#"delay = "10 ms""#)] {
        let stage = format!("trace = \"cell.down\"\n{line}");
        let err = load(&stage, "1\n").unwrap_err();
        expect(
            err,
            ErrorKind::Check,
            line_of(&stage, line),
            &format!("links[0].downlink[0].{key}"),
            &["a trace stage sends as its trace's delivery opportunities allow", "remove this key"],
        );
    }
    // Its queue is its own.
    let s = load("trace = \"cell.down\"\nqueue = { packets = 20 }", "1\n").unwrap();
    assert_eq!(s.links[0].downlink[0].trace.as_ref().unwrap().opportunities_ms, [1]);
}

#[test]
fn a_state_cannot_change_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cell.down"), "1\n").unwrap();
    let text = format!(
        "{}\n[[states]]\nname = \"other\"\nat = \"0.5 s\"\nset.cell = {{ trace = \"cell.down\" }}\n",
        scenario(r#"trace = "cell.down""#)
    );
    let err = parse("trace.toml", &text, dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("a state cannot change a stage's trace"), "{msg}");
}
