//! The regression corpus: every file under `fuzz/regressions/SURFACE/` goes
//! through the same entry point as its fuzz target, on stable Rust. Each
//! must give a clean result or a clean error: never a panic, never an
//! abort (an abort ends this test binary, which fails the suite).

use std::path::{Path, PathBuf};

use squall_inputs::Surface;

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions")
}

fn corpus(surface: Surface) -> Vec<PathBuf> {
    let dir = corpus_root().join(surface.name());
    // git keeps no empty directory: a surface with no regression yet has none.
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn every_regression_input_gives_a_clean_result() {
    let mut replayed = 0;
    for surface in Surface::ALL {
        for file in corpus(surface) {
            let data = std::fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| surface.feed(&data));
            assert!(outcome.is_ok(), "{} panicked on {}", surface.name(), file.display());
            replayed += 1;
        }
    }
    // The five inputs of issue 15 at least.
    assert!(replayed >= 5, "only {replayed} regression inputs found");
}

#[test]
fn every_corpus_directory_is_a_surface() {
    for entry in std::fs::read_dir(corpus_root()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(Surface::from_name(&name).is_some(), "fuzz/regressions/{name} names no surface");
    }
}

fn regression_scenario(name: &str) -> squall_scenario::Scenario {
    let path = corpus_root().join("scenario_sim").join(name);
    squall_scenario::load(&path).unwrap_or_else(|e| panic!("{e:?}"))
}

fn full_run(s: &squall_scenario::Scenario) -> squall_sim::RunResult {
    squall_sim::run(s, s.seed, squall_sim::RunOptions::default()).unwrap()
}

/// Issue 15, input 1: 2^32 - 1 exchanges are made one at a time. Over a
/// 20 ms round trip (10 ms each way, 1-byte messages), a 2 s run fits one
/// exchange per round trip after the handshake: ~98, not 2^32.
#[test]
fn a_huge_request_response_count_runs_until_the_end() {
    let s = regression_scenario("request-response-count-u32-max.toml");
    let r = full_run(&s);
    let flow = &r.tcp_flows[0];
    assert!(!flow.completed);
    // Each exchange: a 1-byte response; one per 20 ms (+ transmission).
    let exchanges = flow.delivered_bytes;
    assert!((90..=99).contains(&exchanges), "{exchanges} exchanges in 2 s at 20 ms each");
}

/// Issue 15, input 2: objects of a web page are drawn as they are fetched.
#[test]
fn a_web_page_of_huge_object_count_runs_until_the_end() {
    let s = regression_scenario("web-objects-u32-max.toml");
    let flow = &full_run(&s).tcp_flows[0];
    assert!(!flow.completed);
    // One 1-byte object per round trip over one keep-alive connection.
    assert_eq!(flow.connections, 1);
    assert!((90..=99).contains(&flow.delivered_bytes), "{} objects in 2 s", flow.delivered_bytes);
}

/// Issue 15, input 3: a flow starting after 10^6 hours keeps memory for
/// the buckets it delivers in, not for every 100 ms before it.
#[test]
fn a_flow_starting_after_a_million_hours_delivers_its_bytes() {
    let s = regression_scenario("late-start-1000000h.toml");
    let flow = &full_run(&s).tcp_flows[0];
    assert!(flow.completed);
    assert_eq!(flow.delivered_bytes, 100_000);
    // 100 KB at 10 Mbit/s over a 20 ms round trip: well under a second.
    assert!(flow.transfer_time < 1.0, "{}", flow.transfer_time);
    let start_bucket = 1_000_000 * 3600 * 10;
    assert_eq!(flow.delivered.bytes_in_buckets(start_bucket, start_bucket + 10), 100_000);
    assert_eq!(flow.delivered.bytes_in_buckets(0, start_bucket), 0);
}
