//! Leaving nothing behind: stale objects of dead runs are removed at
//! start-up (a run is dead when its process is gone, a zombie, or its pid
//! now belongs to a process that started later than the run's record
//! says: [`crate::naming::RunId::is_alive`]), and SIGINT/SIGTERM/SIGHUP stop the loop so the normal
//! teardown runs. The objects of a run are its namespaces (the TUN
//! devices, addresses and routes live inside them and go with them), the
//! processes in them, and its control socket; with an outside host, also
//! its nft table and its claim on `net.ipv4.ip_forward`
//! ([`crate::engine::uplink`]); in inline mode, its interfaces' lock files
//! ([`crate::engine::inline`]); in namespaces it joined, the changes its
//! record lists ([`crate::engine::joined`]).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::error::{Context, EmuError};
use crate::naming::{PREFIX, RunId, control_dir};
use crate::sys::netns;

/// Removes the namespaces (killing the processes in them), control
/// sockets and records of squall runs whose owning process is gone. Returns what it
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
    removed.extend(crate::engine::uplink::sweep_stale());
    removed.extend(crate::engine::inline::sweep_stale_locks());
    removed.extend(crate::engine::joined::sweep_stale());
    // Last: the runs' records, which tell a dead run from a live one, go
    // with their sockets once nothing else of theirs is left. Whether each
    // owner lives is decided before anything here is removed.
    if let Ok(dir) = std::fs::read_dir(control_dir()) {
        let stale: Vec<_> = dir
            .flatten()
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.starts_with(PREFIX) && RunId::owner_of(&name).is_some_and(|o| !o.is_alive())
            })
            .collect();
        for entry in stale {
            let path = entry.path();
            if std::fs::remove_file(&path).is_ok() {
                let what = if path.extension().is_some_and(|e| e == "sock") { "socket" } else { "record" };
                removed.push(format!("{what} {}", path.display()));
            }
        }
    }
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
