//! Empirical distributions read from files next to the scenario.

use squall_link::{Bytes, Distribution, Duration};

/// A scratch directory with a `data/` folder, removed when dropped.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    dir
}

const SCENARIO: &str = r#"
name = "empirical"
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
jitter = { kind = "empirical", file = "data/jitter.txt" }
[[links.uplink]]
name = "up"
[[states]]
name = "bad"
hold = { kind = "empirical", file = "data/hold.txt" }
set.down = { jitter = { kind = "empirical", file = "data/jitter.txt" } }
[[workload.udp]]
name = "f"
from = "a"
to = "b"
size = { kind = "empirical", file = "data/sizes.txt" }
interval = "20 ms"
"#;

#[test]
fn files_fill_every_empirical_distribution() {
    let dir = scratch();
    std::fs::write(dir.path().join("data/jitter.txt"), "# measured\n12 ms\n\n13.5 ms # slow\n").unwrap();
    std::fs::write(dir.path().join("data/hold.txt"), "1 s\n2 s\n").unwrap();
    std::fs::write(dir.path().join("data/sizes.txt"), "40 B\n1500 B\n1 KiB\n").unwrap();
    std::fs::write(dir.path().join("s.toml"), SCENARIO).unwrap();
    let s = squall_scenario::load(&dir.path().join("s.toml")).unwrap_or_else(|e| panic!("{e}"));
    let jitter = Distribution::Empirical {
        file: Some("data/jitter.txt".into()),
        values: vec![Duration::from_millis(12), Duration::from_micros(13_500)],
        order: squall_link::dist::Order::Random,
    };
    assert_eq!(s.links[0].downlink[0].jitter, Some(jitter.clone()));
    assert_eq!(s.states[0].set["down"].values().jitter, Some(jitter));
    assert_eq!(
        s.states[0].hold,
        Some(Distribution::Empirical {
            file: Some("data/hold.txt".into()),
            values: vec![Duration::from_secs(1), Duration::from_secs(2)],
            order: squall_link::dist::Order::Random,
        })
    );
    assert_eq!(
        s.workload.udp[0].size,
        Distribution::Empirical {
            file: Some("data/sizes.txt".into()),
            values: vec![Bytes(40), Bytes(1500), Bytes(1024)],
            order: squall_link::dist::Order::Random,
        }
    );
    // The resolved form carries the values and reads back without the files.
    let text = toml::to_string(&s).unwrap();
    let again = squall_scenario::parse("resolved.toml", &text, std::path::Path::new("/nonexistent")).unwrap();
    assert_eq!(again, s);
}

#[test]
fn an_empty_file_and_a_bad_size_are_errors() {
    let dir = scratch();
    std::fs::write(dir.path().join("data/jitter.txt"), "# nothing yet\n\n").unwrap();
    std::fs::write(dir.path().join("data/hold.txt"), "1 s\n").unwrap();
    std::fs::write(dir.path().join("data/sizes.txt"), "1500 B\n1.5 B\n").unwrap();
    std::fs::write(dir.path().join("s.toml"), SCENARIO).unwrap();
    let err = squall_scenario::load(&dir.path().join("s.toml")).unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.key_path(), "links[0].downlink[0].jitter.file", "{msg}");
    assert_eq!(err.line(), Some(14), "{msg}");
    assert!(msg.contains("jitter.txt has no values; expected one value per line, like \"12 ms\""), "{msg}");

    std::fs::write(dir.path().join("data/jitter.txt"), "1 ms\n").unwrap();
    let err = squall_scenario::load(&dir.path().join("s.toml")).unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.key_path(), "workload.udp[0].size.file", "{msg}");
    assert_eq!(err.line(), Some(25), "{msg}");
    assert!(msg.contains("sizes.txt:2: \"1.5 B\" is not a size with a unit, like \"1500 B\""), "{msg}");
}

/// A flow-size CDF file next to the scenario fills the distribution's
/// points; a bad file is named at its line from the key that names it; a
/// cdf anywhere but a size is refused at its `kind`.
#[test]
fn a_flow_size_cdf_file_fills_its_points_or_is_refused_where_it_is_named() {
    let dir = scratch();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join("data").join(name), text).unwrap();
    write("web.cdf", "# size cdf\n100 0\n1000 0.5\n10000 1\n");
    write("bad.cdf", "100 0\n1000 0.5\n10000 0.9\n");
    let scenario = |bulk: &str, start: &str| {
        format!(
            "name = \"cdf\"\nduration = \"10 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\n\
             address = \"10.0.0.2\"\n[[links]]\nbetween = [\"a\", \"b\"]\ndownlink = [{{ name = \"down\" }}]\n\
             uplink = [{{ name = \"up\" }}]\n[[workload.tcp]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ncount = 2\n\
             start = {start}\napp = {{ bulk = {bulk} }}\n"
        )
    };
    let path = dir.path().join("s.toml");
    let load = |text: String| {
        std::fs::write(&path, text).unwrap();
        squall_scenario::load(&path)
    };
    let s = load(scenario(r#"{ kind = "cdf", file = "data/web.cdf" }"#, "\"0 s\"")).unwrap();
    let squall_scenario::TcpApp::Bulk(Distribution::Cdf { points, .. }) = &s.workload.tcp[0].app else {
        panic!("not a cdf: {:?}", s.workload.tcp[0].app)
    };
    assert_eq!(points, &vec![[100.0, 0.0], [1000.0, 0.5], [10000.0, 1.0]]);
    // 0.5 x 550 + 0.5 x 5500, by hand.
    assert_eq!(Distribution::<Bytes>::Cdf { file: None, points: points.clone() }.mean(), Some(3025.0));

    let e = load(scenario(r#"{ kind = "cdf", file = "data/bad.cdf" }"#, "\"0 s\"")).unwrap_err();
    let text = format!("{e:?}");
    assert!(text.contains("s.toml:19:"), "{text}");
    assert!(text.contains("workload.tcp[0].app.bulk.file"), "{text}");
    assert!(text.contains("bad.cdf:3: the CDF ends at 0.9; expected its last point at 1"), "{text}");

    let e = load(scenario("\"1 KB\"", r#"{ kind = "cdf", file = "data/web.cdf" }"#)).unwrap_err();
    let text = format!("{e:?}");
    assert!(text.contains("workload.tcp[0].start.kind"), "{text}");
    assert!(text.contains("a cdf gives sizes in bytes"), "{text}");
}

/// A per-packet sequence (`order = "sequence"`: the values replayed in
/// the file's order) is refused like any empirical file, at the key that
/// names it and the file's line: an empty file, a word that is not a
/// value, a value without its unit, a negative delay, NaN, a line longer
/// than the reader's bound (256 bytes), bytes that are not UTF-8. The
/// scenario's key line is 4 (the link with the stage's `jitter`).
#[test]
fn a_bad_sequence_file_is_refused_at_its_line() {
    let dir = scratch();
    let scenario = r#"name = "seq"
duration = "1 s"
hosts = [{ name = "a", address = "10.0.0.1" }, { name = "b", address = "10.0.0.2" }]
links = [{ between = ["a", "b"], downlink = [{ name = "d", jitter = { kind = "empirical", file = "data/seq.txt", order = "sequence" } }], uplink = [{ name = "u" }] }]
"#;
    let load = |content: &[u8]| {
        std::fs::write(dir.path().join("data/seq.txt"), content).unwrap();
        std::fs::write(dir.path().join("s.toml"), scenario).unwrap();
        squall_scenario::load(&dir.path().join("s.toml"))
    };
    // A good one loads, in its order.
    let s = load(b"3 ms\n1 ms\n# a comment\n2 ms\n").unwrap();
    let jitter = s.links[0].downlink[0].jitter.as_ref().unwrap();
    let Distribution::Empirical { values, .. } = jitter else { panic!("{jitter:?}") };
    assert_eq!(values, &[Duration::from_millis(3), Duration::from_millis(1), Duration::from_millis(2)]);
    let long = format!("1 ms\n{} ms\n", "9".repeat(300));
    let cases: [(&[u8], Option<usize>, &str); 8] = [
        (b"", None, "has no values; expected one value per line, like \"12 ms\""),
        (b"# only a comment\n\n", None, "has no values"),
        (b"1 ms\nfast\n", Some(2), "fast"),
        (b"1 ms\n2 ms\n12\n", Some(3), "12"),
        (b"-5 ms\n", Some(1), "-5 ms"),
        (b"1 ms\nNaN ms\n", Some(2), "NaN"),
        (long.as_bytes(), Some(2), "line longer than 256 bytes; expected one value per line, like \"12 ms\""),
        (b"1 ms\n\xff ms\n", Some(2), "the line is not UTF-8 text"),
    ];
    for (content, line, why) in cases {
        let err = load(content).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.key_path(), "links[0].downlink[0].jitter.file", "{content:?}: {msg}");
        assert_eq!(err.line(), Some(4), "{content:?}: {msg}");
        assert!(msg.contains("seq.txt"), "{content:?}: {msg}");
        if let Some(l) = line {
            assert!(msg.contains(&format!("seq.txt:{l}: ")), "{content:?}: {msg}");
        }
        assert!(msg.contains(why), "{content:?}: {msg}");
    }
}
