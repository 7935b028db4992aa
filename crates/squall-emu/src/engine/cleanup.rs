//! Leaving nothing behind: stale objects of dead runs are removed at
//! start-up, and SIGINT/SIGTERM/SIGHUP stop the loop so the normal
//! teardown runs. The objects of a run are its namespaces (the TUN
//! devices, addresses and routes live inside them and go with them), the
//! processes in them, and its control socket; with an outside host, also
//! its nft table and its claim on `net.ipv4.ip_forward`
//! ([`crate::engine::uplink`]); in inline mode, its interfaces' lock files
//! ([`crate::engine::inline`]).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::error::{Context, EmuError};
use crate::naming::{PREFIX, RunId, control_dir};
use crate::sys::netns;

/// Removes the namespaces (killing the processes in them) and control
/// sockets of squall runs whose owning process is gone. Returns what it
/// removed.
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for name in netns::list() {
        if let Some(owner) = RunId::owner_of(&name)
            && !owner.is_alive()
        {
            match netns::delete_by_name(&name) {
                Ok(()) => removed.push(format!("netns {name}")),
                Err(e) => tracing::warn!("squall: could not remove stale namespace {name}: {e}"),
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir(control_dir()) {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(PREFIX)
                && RunId::owner_of(&name).is_some_and(|o| !o.is_alive())
                && std::fs::remove_file(entry.path()).is_ok()
            {
                removed.push(format!("socket {}", entry.path().display()));
            }
        }
    }
    removed.extend(crate::engine::uplink::sweep_stale());
    removed.extend(crate::engine::inline::sweep_stale_locks());
    removed
}

/// The namespaces of live or dead squall runs: what `ip netns list` shows
/// with our prefix.
pub fn squall_namespaces() -> Vec<String> {
    netns::list().into_iter().filter(|n| n.starts_with(PREFIX)).collect()
}

/// A flag set by SIGINT, SIGTERM or SIGHUP; the loop polls it and stops.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>, EmuError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context(|| format!("install handler for signal {sig}"))?;
    }
    Ok(stop)
}
