//! netem distribution tables in iproute2's `.dist` format, given to a
//! scenario's jitter (`{ kind = "netem_table", file = ... }`) and to a
//! netem one-liner (`delay D J distribution FILE`).

use squall_link::{Distribution, Duration};
use squall_scenario::{ErrorKind, parse_netem};

const SCENARIO: &str = r#"
name = "table"
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
delay = "10 ms"
jitter = { kind = "netem_table", file = "my.dist", mu = "100 ms", sigma = "20 ms" }
[[links.uplink]]
name = "up"
"#;

fn table_distribution(file: &str, entries: Vec<i16>, mu: Duration, sigma: Duration) -> Distribution<Duration> {
    Distribution::NetemTable { table: None, file: Some(file.into()), entries, mu, sigma }
}

#[test]
fn a_scenario_jitter_reads_its_table_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("my.dist"), "# made by hand\n-8192 0\n8192 16384\n").unwrap();
    std::fs::write(dir.path().join("s.toml"), SCENARIO).unwrap();
    let s = squall_scenario::load(&dir.path().join("s.toml")).unwrap_or_else(|e| panic!("{e}"));
    let expect = table_distribution(
        "my.dist",
        vec![-8192, 0, 8192, 16384],
        Duration::from_millis(100),
        Duration::from_millis(20),
    );
    assert_eq!(s.links[0].downlink[0].jitter, Some(expect.clone()));
    // By hand: 100 + 20 · (−1 + 0 + 1 + 2) / 4 = 110 ms.
    assert_eq!(expect.mean(), Some(110e6));
    // The resolved form carries the entries and reads back without the file.
    let text = toml::to_string(&s).unwrap();
    let again = squall_scenario::parse("resolved.toml", &text, std::path::Path::new("/nonexistent")).unwrap();
    assert_eq!(again, s);
}

#[test]
fn a_bad_table_file_is_located_in_the_scenario_and_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("my.dist"), "0 1\n2 40000\n").unwrap();
    std::fs::write(dir.path().join("s.toml"), SCENARIO).unwrap();
    let err = squall_scenario::load(&dir.path().join("s.toml")).unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.kind(), ErrorKind::DistributionFile, "{msg}");
    assert_eq!(err.key_path(), "links[0].downlink[0].jitter.file", "{msg}");
    assert!(msg.contains("my.dist:2:3: 40000 is out of range; expected an entry between -32768 and 32767"), "{msg}");

    std::fs::remove_file(dir.path().join("my.dist")).unwrap();
    let err = squall_scenario::load(&dir.path().join("s.toml")).unwrap_err();
    assert!(err.to_string().contains("cannot read the distribution table"), "{err}");

    // Both a named table and a file: one source only.
    let both = SCENARIO.replace("file = \"my.dist\"", "table = \"normal\", entries = [1, 2]");
    let err = squall_scenario::parse("s.toml", &both, dir.path()).unwrap_err();
    assert_eq!(err.key_path(), "links[0].downlink[0].jitter.table", "{err}");
    assert!(err.to_string().contains("a netem table needs one source"), "{err}");
}

/// `delay 100ms 20ms distribution FILE`: as netem's own tables, the fixed
/// part is the least delay the table gives (100 − 20 · 8192/8192 = 80 ms
/// for a smallest entry of −8192), the table's draw the rest (mu 20 ms).
#[test]
fn a_netem_line_takes_a_table_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my.dist");
    std::fs::write(&path, "0 -8192 8192 4096\n").unwrap();
    let line = format!("delay 100ms 20ms distribution {}", path.display());
    let s = parse_netem(&line).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.delay, Duration::from_millis(80));
    let jitter = s.jitter.clone().unwrap();
    assert_eq!(
        jitter,
        table_distribution(
            &path.display().to_string(),
            vec![0, -8192, 8192, 4096],
            Duration::from_millis(20),
            Duration::from_millis(20)
        )
    );
    // Mean by hand: 100 + 20 · (0 − 1 + 1 + 0.5)/4 = 102.5 ms.
    assert_eq!(s.delay.as_nanos() as f64 + jitter.mean().unwrap(), 102.5e6);
    s.validate().unwrap();
    // The built-in names keep working.
    assert!(parse_netem("delay 100ms 20ms distribution pareto").is_ok());
}

#[test]
fn a_bad_table_file_on_a_netem_line_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.dist");
    std::fs::write(&path, "# comment\n1 2\nthree\n").unwrap();
    let line = format!("delay 100ms 20ms distribution {}", path.display());
    let err = parse_netem(&line).unwrap_err();
    let msg = format!("{err:?}");
    assert!(msg.contains("bad.dist:3:1: `three` is not a whole number"), "{msg}");
    let err = parse_netem("delay 100ms 20ms distribution ./absent.dist").unwrap_err();
    assert!(format!("{err:?}").contains("./absent.dist: cannot read the distribution table"), "{err:?}");
    let err = parse_netem("delay 100ms 20ms distribution experimental").unwrap_err();
    assert!(format!("{err:?}").contains("like `distribution ./my.dist`"), "{err:?}");
}
