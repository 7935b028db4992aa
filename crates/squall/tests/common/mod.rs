//! Helpers the emulation test binaries share.

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
