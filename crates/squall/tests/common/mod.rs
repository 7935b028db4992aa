//! Helpers the emulation test binaries share.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

/// Whether network namespaces and TUN devices can be made here; panics
/// under CI=true if not (CI runs as root: a skip there would hide a
/// broken set-up).
pub fn namespaces_available() -> bool {
    // Tests run as threads of one process: each probe needs its own name.
    static PROBE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("squall-{}-probe{n}", std::process::id());
    let made =
        Command::new("ip").args(["netns", "add", &name]).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
            && Path::new("/dev/net/tun").exists();
    let _ = Command::new("ip").args(["netns", "delete", &name]).stderr(Stdio::null()).status();
    if !made {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but network namespaces cannot be made (need root, iproute2 and /dev/net/tun)");
        }
        eprintln!("skipping: network namespaces cannot be made here (need root, iproute2 and /dev/net/tun)");
    }
    made
}

/// Runs `squall ENGINE SCENARIO --out DIR/ENGINE EXTRA…`, checks that it
/// succeeded and returns its summary.json.
#[allow(dead_code, reason = "compare.rs runs `squall compare`, not one engine")]
pub fn run_engine(dir: &Path, engine: &str, scenario: impl AsRef<OsStr>, extra: &[&str]) -> serde_json::Value {
    let out = dir.join(engine);
    let o = Command::new(env!("CARGO_BIN_EXE_squall"))
        .arg(engine)
        .arg(scenario)
        .args(["--out", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{engine}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}
