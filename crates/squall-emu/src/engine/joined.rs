//! Existing namespaces as hosts: a scenario host with `netns = "NAME"` (an
//! `ip netns` name) or `netns_pid = PID` (the namespace of a process, how
//! Docker, Podman and systemd-nspawn containers are reached) is joined
//! rather than made. squall adds its device ([`crate::naming::TUN_NAME`])
//! there with the host's addresses (IPv4, and IPv6 when it has an
//! `address6`) and /32 and /128 routes to its peers (and default routes
//! towards the outside host, if any), and sets the host's sysctls;
//! nothing else in the namespace changes. The IPv6 keys squall sets for
//! an address6 are the device's own (`net.ipv6.conf.squall0.*`,
//! [`crate::sys::device::address_device`]): they go with it.
//!
//! Undone on every way out: the TUN device (with its address and routes)
//! goes when its descriptor closes, which the kernel does even after
//! SIGKILL (drivers/net/tun.c, `tun_chr_close`); the sysctls' former
//! values and a leftover device (a veth pair outlives the process) are put
//! back by [`JoinedNs::restore`] when the run ends, and after a SIGKILL by
//! the next start ([`sweep_stale`]) from the run's record
//! ([`crate::record`]), where each change is written before it is made.
//!
//! A namespace one run joins is locked (flock(2) on a file named by the
//! namespace's device and inode, released by the kernel however the run
//! ends): a second run is refused, and so is a namespace that a live run
//! made. So is one where squall's device name, one of the host's
//! addresses, a /32 or /128 route to a peer or a default route it needs
//! is already there.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::net::IpAddr;
use std::path::PathBuf;

use squall_link::Addresses;

use crate::error::{Context, EmuError};
use crate::naming::{PREFIX, RunId, TUN_NAME, control_dir};
use crate::record::{JoinedRecord, RecordFile, WorkloadGroup};
use crate::sys::lock::try_lock_exclusive;
use crate::sys::netns::{self, NetNs};

impl WorkloadGroup {
    /// The group of workload process `pid`, just started on `host` in
    /// the joined namespace `ns`.
    pub fn of(host: &str, pid: u32, ns: &NetNs) -> Result<Self, EmuError> {
        let (dev, ino) = ns.identity()?;
        let start_time = RunId(pid).start_time().ok_or_else(|| {
            EmuError::io(
                format!("read /proc/{pid}/stat (the start time of a workload on {host})"),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        Ok(WorkloadGroup { host: host.to_string(), pgid: pid, start_time, dev, ino })
    }

    /// The processes left of this group: those in process group `pgid`
    /// inside the recorded namespace that started no earlier than its
    /// first process. While any process is in a group, Linux does not
    /// give its id to a new process (kernel/pid.c: a `struct pid` lives
    /// while a task uses it as its pgid), so such a process is one of
    /// the workload's; if the group's first process is there with
    /// another start time, the id was reused and nothing is the run's.
    fn members(&self) -> Vec<u32> {
        use std::os::unix::fs::MetadataExt;
        let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
        let mut group = Vec::new();
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            match crate::naming::ProcStat::parse(&text) {
                Some(stat) if stat.pgrp == self.pgid && !stat.is_dead() => group.push((pid, stat.start_time)),
                _ => {}
            }
        }
        if group.iter().any(|&(pid, start)| pid == self.pgid && start != self.start_time) {
            return Vec::new();
        }
        let in_ns = |pid: u32| {
            std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| (m.dev(), m.ino()) == (self.dev, self.ino))
        };
        group.into_iter().filter(|&(pid, start)| start >= self.start_time && in_ns(pid)).map(|(pid, _)| pid).collect()
    }

    /// SIGKILLs what is left of the group, waiting (up to 2 s) until
    /// none is; returns how many processes there were.
    fn kill(&self) -> usize {
        let first = self.members();
        let mut left = first.clone();
        for _ in 0..200 {
            if left.is_empty() {
                break;
            }
            for pid in &left {
                let _ =
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid as i32), nix::sys::signal::Signal::SIGKILL);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            left = self.members();
        }
        if !left.is_empty() {
            tracing::warn!("squall: workload processes {left:?} on host `{}` survived SIGKILL for 2 s", self.host);
        }
        first.len()
    }
}

/// A namespace this run joined, its lock and what it changed there.
pub struct JoinedNs {
    ns: NetNs,
    record: JoinedRecord,
    /// Held for the run (see the module's doc).
    _lock: File,
}

/// Where the host's namespace is, from the scenario's keys; `None`: one
/// squall makes.
pub fn existing(host: &squall_scenario::Host) -> Option<NetNs> {
    match (&host.netns, host.netns_pid) {
        (Some(name), _) => Some(NetNs::join_named(name)),
        (None, Some(pid)) => Some(NetNs::join_pid(pid)),
        (None, None) => None,
    }
}

fn refuse(host: &str, ns: &NetNs, message: impl Into<String>) -> EmuError {
    EmuError::Netns { host: host.to_string(), netns: ns.name().to_string(), message: message.into() }
}

/// The lock file of the namespace with `identity`.
fn lock_path((dev, ino): (u64, u64)) -> PathBuf {
    control_dir().join(format!("netns-{dev}-{ino}.lock"))
}

/// Joins `ns` as host `host` with `addresses` and routes to `peers` (and
/// a default route of each family the host has if `default_route`):
/// checks it is free and that nothing would clash, locks it and records
/// it in `record`. The device itself is made by the caller.
pub fn join(
    host: &str,
    ns: NetNs,
    addresses: Addresses,
    peers: &[IpAddr],
    default_route: bool,
    record: &mut RecordFile,
) -> Result<(NetNs, JoinedNs), EmuError> {
    if !ns.path().exists() {
        let message = if ns.name().starts_with("pid ") {
            format!("no such process ({} does not exist)", ns.path().display())
        } else {
            format!("no such namespace ({} does not exist; `ip netns list` shows the names)", ns.path().display())
        };
        return Err(refuse(host, &ns, message));
    }
    let identity = ns.identity()?;
    // A namespace a live squall run made.
    for name in netns::list() {
        if let Some(owner) = RunId::owner_of(&name)
            && name.starts_with(PREFIX)
            && NetNs::named(&name).identity().ok() == Some(identity)
            && owner.is_alive()
        {
            return Err(refuse(host, &ns, format!("it is namespace {name} of squall run {}", owner.0)));
        }
    }
    let lock = take_lock(identity).context(|| format!("lock {}", lock_path(identity).display()))?;
    let Some(lock) = lock.held else {
        let holder = lock.holder.map_or_else(|| "another squall run".to_string(), |p| format!("squall run {p}"));
        return Err(refuse(host, &ns, format!("{holder} holds it (one run per namespace)")));
    };
    check_clashes(host, &ns, addresses, peers, default_route)?;
    let entry = JoinedRecord {
        host: host.to_string(),
        netns: ns.name().to_string(),
        path: ns.path(),
        dev: identity.0,
        ino: identity.1,
        sysctls: Vec::new(),
    };
    record.update(|r| r.joined.push(entry.clone()))?;
    Ok((ns.clone(), JoinedNs { ns, record: entry, _lock: lock }))
}

/// A namespace's lock: held, or who holds it.
struct Lock {
    held: Option<File>,
    holder: Option<u32>,
}

/// Takes the lock of the namespace with `identity` without waiting; on
/// success writes this process's pid into the file.
fn take_lock(identity: (u64, u64)) -> std::io::Result<Lock> {
    let path = lock_path(identity);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
    if try_lock_exclusive(&file) {
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        return Ok(Lock { held: Some(file), holder: None });
    }
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    Ok(Lock { held: None, holder: text.trim().parse().ok() })
}

/// Refuses a namespace where squall's device name, one of `addresses`, a
/// /32 or /128 route to one of `peers` or (with `default_route`) a
/// default route of a family the host has is there already: adding them
/// would fail or take the namespace's own traffic.
fn check_clashes(
    host: &str,
    ns: &NetNs,
    addresses: Addresses,
    peers: &[IpAddr],
    default_route: bool,
) -> Result<(), EmuError> {
    let json = |args: &[&str]| -> Result<Vec<serde_json::Value>, EmuError> {
        let mut all = vec!["-j"];
        all.extend_from_slice(args);
        let text = ns.ip_output(&all)?;
        Ok(serde_json::from_str(&text).unwrap_or_default())
    };
    let links = json(&["addr", "show"])?;
    for link in &links {
        let ifname = link["ifname"].as_str().unwrap_or_default();
        if ifname == TUN_NAME {
            return Err(refuse(
                host,
                ns,
                format!("it has an interface named {TUN_NAME} already (squall's device name)"),
            ));
        }
        let on_link = link["addr_info"].as_array().map(Vec::as_slice).unwrap_or_default();
        for address in addresses.iter() {
            if on_link.iter().any(|a| a["local"].as_str() == Some(address.to_string().as_str())) {
                return Err(refuse(
                    host,
                    ns,
                    format!(
                        "address {address} (the host's) is on its interface {ifname} already; give the host another"
                    ),
                ));
            }
        }
    }
    let families = [("-4", "/32", addresses.v4.is_some(), ""), ("-6", "/128", addresses.v6.is_some(), "IPv6 ")];
    for (family, host_prefix, has, name) in families {
        if !has {
            continue;
        }
        for route in json(&[family, "route", "show"])? {
            let dst = route["dst"].as_str().unwrap_or_default();
            let dev = route["dev"].as_str().unwrap_or("?");
            let clash = if dst == "default" {
                default_route
                    .then(|| format!("the {name}default route (squall routes the host's traffic to the outside host)"))
            } else {
                let bare = dst.strip_suffix(host_prefix).unwrap_or(dst);
                peers
                    .iter()
                    .find(|p| p.to_string() == bare)
                    .map(|p| format!("a route to {p}{host_prefix} (a peer's address)"))
            };
            if let Some(what) = clash {
                return Err(refuse(host, ns, format!("it has {what} already, through {dev}")));
            }
        }
    }
    Ok(())
}

impl JoinedNs {
    /// Sets sysctl `key` to `value`, its former value recorded first.
    pub fn set_sysctl(&mut self, key: &str, value: &str, record: &mut RecordFile) -> Result<(), EmuError> {
        let before = read_sysctl(&self.ns, key).map_err(|message| EmuError::Sysctl {
            host: self.record.host.clone(),
            key: key.to_string(),
            value: value.to_string(),
            message,
        })?;
        self.record.sysctls.push((key.to_string(), before));
        let entry = self.record.clone();
        record.update(|r| {
            if let Some(j) = r.joined.iter_mut().find(|j| j.host == entry.host) {
                *j = entry;
            }
        })?;
        self.ns.set_sysctl(&self.record.host, key, value)
    }

    /// Puts back what the run changed (see [`restore`]); the lock is
    /// released when `self` is dropped.
    pub fn restore(&self) -> Vec<String> {
        restore(&self.ns, &self.record)
    }
}

/// Reads sysctl `key` inside `ns`.
fn read_sysctl(ns: &NetNs, key: &str) -> Result<String, String> {
    let path = std::path::Path::new("/proc/sys").join(key.replace('.', "/"));
    let read = ns.run_in(|| Ok(std::fs::read_to_string(&path))).map_err(|e| e.to_string())?;
    read.map(|v| v.trim_end().to_string()).map_err(|e| format!("cannot read {} ({e})", path.display()))
}

/// Puts the sysctls of `record` back (last set first) and removes
/// squall's device if it is still there; returns what could not be undone.
fn restore(ns: &NetNs, record: &JoinedRecord) -> Vec<String> {
    let mut failed = Vec::new();
    for (key, before) in record.sysctls.iter().rev() {
        if let Err(e) = ns.set_sysctl(&record.host, key, before) {
            failed.push(e.to_string());
        }
    }
    if ns.ip(&["link", "show", TUN_NAME]).is_ok()
        && let Err(e) = ns.ip(&["link", "delete", TUN_NAME])
    {
        failed.push(e.to_string());
    }
    failed
}

/// Undoes what dead runs changed in namespaces they joined, from their
/// records: only where the namespace is still the one recorded (same
/// device and inode) and no live run holds it. Returns what it undid.
pub fn sweep_stale() -> Vec<String> {
    let mut undone = Vec::new();
    let Ok(dir) = std::fs::read_dir(control_dir()) else { return undone };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".run") {
            continue;
        }
        let Some(owner) = RunId::owner_of(&name).filter(|o| !o.is_alive()) else { continue };
        let Some(record) = crate::record::read(owner) else { continue };
        for w in &record.workloads {
            let killed = w.kill();
            if killed > 0 {
                undone.push(format!(
                    "workload processes ({killed}) on host `{}` of run {} (group {})",
                    w.host, owner.0, w.pgid
                ));
            }
        }
        for j in &record.joined {
            let ns = NetNs::join_path(&j.netns, &j.path);
            if ns.identity().ok() != Some((j.dev, j.ino)) {
                tracing::info!(
                    "squall: namespace {} of dead run {} is gone or another: nothing to undo",
                    j.netns,
                    owner.0
                );
                continue;
            }
            let Ok(Lock { held: Some(_lock), .. }) = take_lock((j.dev, j.ino)) else {
                tracing::warn!(
                    "squall: namespace {} is held by a live run: run {}'s changes there left",
                    j.netns,
                    owner.0
                );
                continue;
            };
            for e in restore(&ns, j) {
                tracing::warn!("squall: namespace {}: could not undo: {e}", j.netns);
            }
            undone.push(format!("changes in namespace {} (host `{}` of run {})", j.netns, j.host, owner.0));
        }
    }
    undone
}
