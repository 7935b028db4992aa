//! `squall emu` end to end: real Linux TCP (reno, cubic) in network
//! namespaces through squall's user-space paths. These tests need root and
//! network namespaces; without them they are skipped with a message, except
//! under CI=true, where they fail.
//!
//! They run one at a time (one lock): the data plane spins, and two at
//! once on two cores would disturb each other's timing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

#[path = "../common/mod.rs"]
mod common;
use common::{SQUALL, namespaces_available, namespaces_of, run_engine};

mod engines;
mod hosts;
mod ipv6;

// Helpers the modules share, defined beside the tests that came first.
use recording::{
    assert_downlink_conserved, edited_scenario, pcap_lengths, scenario_with_sysctl, tshark_count, tshark_fields, u,
    udp_run,
};
use tcp::assert_steady_goodput;
mod recording;
mod runs;
mod tcp;
mod wakeup;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/emu").join(name)
}

struct Run {
    dir: tempfile::TempDir,
    summary: serde_json::Value,
    /// The bulk client's JSON line.
    client: serde_json::Value,
}

impl Run {
    fn rep(&self) -> PathBuf {
        self.dir.path().join("rep-0")
    }
}

/// Runs `emulate` until a run keeps its timing, up to three runs in all,
/// and returns the last. A run the emulator flags (a delivery left more
/// than its late threshold after its scheduled time: the machine did not
/// give it the CPU) says nothing about the model; the last run is
/// returned whatever its timing, and the assertions widen their bounds by
/// its measured departure error. `summary` is a run's summary.json.
fn until_on_time<T>(what: &str, mut emulate: impl FnMut() -> T, summary: impl Fn(&T) -> serde_json::Value) -> T {
    let mut run = emulate();
    for _ in 1..3 {
        if summary(&run)["timing"]["on_time"] != false {
            break;
        }
        eprintln!("{what}: the emulation was flagged (timing not kept): running it again");
        run = emulate();
    }
    run
}

/// Runs a bulk transfer of `bytes` with `cc` from fixed to mobile over
/// `scenario_file`, repeated while the emulator flags it
/// ([`until_on_time`]).
fn bulk(scenario_file: &str, cc: &str, bytes: &str, extra: &[&str]) -> Run {
    until_on_time(scenario_file, || bulk_once(scenario_file, cc, bytes, extra), |run| run.summary.clone())
}

fn bulk_once(scenario_file: &str, cc: &str, bytes: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let info = dir.path().join("info.csv");
    let client = format!(
        "{SQUALL} tool bulk --client 10.0.1.1 --bytes '{bytes}' --cc {cc} --info-csv {} --interval-ms 5",
        info.display()
    );
    let out = Command::new(SQUALL)
        .arg("emu")
        .arg(scenario(scenario_file))
        .args(["--out", dir.path().to_str().unwrap()])
        .arg("--serve")
        .arg(format!("mobile@0s={SQUALL} tool bulk --server"))
        .arg("--run")
        .arg(format!("fixed@0.1s={client}"))
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "squall emu failed: {stderr}");
    eprintln!("{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let stdout = std::fs::read_to_string(dir.path().join("rep-0/workloads/0-fixed.stdout")).unwrap();
    let client: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout:?}"));
    Run { dir, summary, client }
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}
