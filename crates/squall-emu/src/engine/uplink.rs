//! The outside host (issue 11): a scenario host marked
//! `outside_interface = "IFACE"` stands for everything beyond the
//! scenario. Its device is a TUN device in squall's own (the root)
//! namespace named `squall-<pid>`: a packet the model delivers to the
//! outside host is written to it, and the kernel forwards it out of IFACE
//! (source-NATed to IFACE's address); replies come back in through IFACE,
//! are un-NATed, and are routed into the TUN device by a /32 route per
//! scenario host, so squall reads them and carries them across the path.
//!
//! What squall changes in the root namespace, and how each is undone:
//!
//! - the TUN device and its /32 routes: removed by the kernel when squall
//!   closes the device, whatever ends the process;
//! - the nft table `ip squall-<pid>` (masquerade out of IFACE for the
//!   scenario's addresses; other forwarded egress from the device dropped
//!   and counted; only replies let in): deleted at the end of the run, or
//!   by the next run's [`sweep_stale`] when its owner died;
//! - `net.ipv4.ip_forward`: switched on while any run with an outside host
//!   lives. The value found before the first such run is saved in
//!   [`SYSCTL_STATE`] with the pids of the runs that need it, under
//!   flock(2); the last run to leave (or the sweep of the next start, when
//!   the runs were SIGKILLed) writes it back.
//!
//! IPv6 (issue 34), when a scenario host with an `address6` reaches the
//! outside host: the same with a /128 route per such host, the nft table
//! `ip6 squall-<pid>` (NAT66 by masquerade, RFC 6296 §1 names the
//! stateful kind; IFACE needs a global IPv6 address) and IPv6 forwarding,
//! which Linux decides apart from IPv4 (ip6_output.c `ip6_forward`):
//!
//! - from Linux 6.17, `net.ipv6.conf.IFACE.force_forwarding` on IFACE and
//!   on the device (ip-sysctl.rst: "Enable forwarding on this interface
//!   only"); nothing else changes, router advertisements included;
//! - before it, `net.ipv6.conf.all.forwarding`, which also switches every
//!   interface to router behaviour, where an interface with `accept_ra =
//!   1` stops taking router advertisements (ip-sysctl.rst `accept_ra`):
//!   such an interface (forwarding off, accept_ra 1) is set to 2 first,
//!   and every interface's `forwarding` is saved, so that writing `all`
//!   back (which sets them all) is followed by each one's own value.
//!
//! Every IPv6 key changed in the machine's settings is saved in
//! [`SYSCTL_STATE`] beside `ip_forward` before it is written and restored
//! in reverse order with it, by the last run to leave or the next sweep;
//! the device's own keys go with the device.
//!
//! The main routing table decides where a packet leaves (no policy
//! routing), so an address not routed via IFACE is dropped and counted
//! rather than sent elsewhere; two runs at once with the same scenario
//! addresses clash on the /32 or /128 routes (the second is refused).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use squall_scenario::Scenario;

use crate::engine::routing::Routing;
use crate::error::{Context, EmuError};
use crate::naming::{PREFIX, RunId};
use crate::sys::device::TunDevice;

/// The saved `net.ipv4.ip_forward` and the runs that need forwarding on:
/// one file for the machine, whatever a run's control directory (the
/// setting is the machine's).
pub const SYSCTL_STATE: &str = "/run/squall/uplink-sysctl.json";

/// Held with flock(2) while [`SYSCTL_STATE`] is read and written.
const SYSCTL_LOCK: &str = "/run/squall/uplink-sysctl.lock";

const IP_FORWARD: &str = "/proc/sys/net/ipv4/ip_forward";

/// Where the IPv6 keys are (`ipv6/conf/IFACE/KEY` under it).
const PROC_NET: &str = "/proc/sys/net";

/// Name of a run's root TUN device and nft table: `squall-<pid>` (14
/// characters at most, under IFNAMSIZ).
pub fn object_name(id: RunId) -> String {
    format!("{PREFIX}{}", id.0)
}

/// What the outside host did, for summary.json.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OutsideReport {
    /// The outside host's name in the scenario.
    pub host: String,
    /// The interface its packets left through.
    pub interface: String,
    /// Its TUN device (and nft table) in the root namespace.
    pub device: String,
    /// Packets dropped because this machine routes their destination out
    /// of another interface (`None`: the counter could not be read).
    pub leaked: Option<u64>,
}

/// The outside host's set-up; dropping it undoes the table and the
/// sysctl (the device goes with its [`TunDevice`]).
pub struct Uplink {
    table: String,
    interface: String,
    forwarding: Option<ForwardingLease>,
    table_made: bool,
    /// The `ip6` table was made (some host with an address6 reaches the
    /// outside host).
    table6_made: bool,
}

impl Uplink {
    /// Checks the outside host's interface and sets everything up: the
    /// root TUN device (returned for the data plane, as the outside host's
    /// device), the routes back to the scenario's hosts, the nft table and
    /// forwarding. `None` when the scenario has no outside host.
    pub fn open(
        id: RunId,
        scenario: &Scenario,
        routing: &Routing,
        mtu: u32,
        offloads: bool,
    ) -> Result<Option<(Uplink, TunDevice)>, EmuError> {
        let Some((outside, host)) = scenario.outside_host() else { return Ok(None) };
        let interface = host.outside_interface.clone().unwrap_or_default();
        check_interface(&interface, &host.name)?;
        let name = object_name(id);
        let mut uplink = Uplink {
            table: name.clone(),
            interface: interface.clone(),
            forwarding: None,
            table_made: false,
            table6_made: false,
        };
        // Replies (un-NATed to a scenario address) into the device. Only
        // hosts that can reach the outside host get a route.
        let hosts: Vec<_> =
            (0..routing.names.len()).filter(|&h| h != outside && routing.next_path(h, outside).is_some()).collect();
        let inside: Vec<_> = hosts.iter().filter_map(|&h| routing.addresses[h]).collect();
        let inside6: Vec<_> = hosts.iter().filter_map(|&h| routing.addresses6[h]).collect();
        let tun = TunDevice::create_root(&name, mtu, offloads, !inside6.is_empty())?;
        let addresses = inside.iter().map(|&a| IpAddr::V4(a)).chain(inside6.iter().map(|&a| IpAddr::V6(a)));
        for address in addresses {
            let (family, dst) = match address {
                IpAddr::V4(a) => ("-4", format!("{a}/32")),
                IpAddr::V6(a) => ("-6", format!("{a}/128")),
            };
            crate::sys::netns::ip(&[family, "route", "add", &dst, "dev", &name]).map_err(|e| EmuError::Uplink {
                interface: interface.clone(),
                message: format!(
                    "cannot route {address} to {name} in the root namespace ({e}); does another run or this machine \
                     use that address?"
                ),
            })?;
        }
        nft(&ruleset(&name, &interface, &inside), &interface)?;
        uplink.table_made = true;
        let ipv6 = if inside6.is_empty() {
            Ipv6Forwarding::default()
        } else {
            nft(&ruleset6(&name, &interface, &inside6), &interface)?;
            uplink.table6_made = true;
            if !has_global_ipv6(&interface) {
                tracing::warn!(
                    "squall emu: outside interface `{interface}` has no global IPv6 address: IPv6 packets from the \
                     scenario cannot be masqueraded out of it (`ip -6 addr show dev {interface}`)"
                );
            }
            Ipv6Forwarding::plan(Path::new(PROC_NET), &interface)
        };
        uplink.forwarding = Some(ForwardingLease::take(id, &ipv6)?);
        if ipv6.per_interface {
            // The device's key goes with the device: not saved.
            let path = format!("{PROC_NET}/ipv6/conf/{name}/force_forwarding");
            std::fs::write(&path, "1").context(|| format!("write 1 to {path}"))?;
        }
        Ok(Some((uplink, tun)))
    }

    /// Packets from the scenario the kernel would have sent out of another
    /// interface than the outside one (dropped): read from the table's
    /// counter.
    pub fn leaked(&self) -> Option<u64> {
        let read = |family: &str| -> Option<u64> {
            let out =
                Command::new("nft").args(["-j", "list", "counter", family, &self.table, "leaked"]).output().ok()?;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            v["nftables"].as_array()?.iter().find_map(|o| o["counter"]["packets"].as_u64())
        };
        let v6 = if self.table6_made { read("ip6")? } else { 0 };
        Some(read("ip")? + v6)
    }

    pub fn interface(&self) -> &str {
        &self.interface
    }
}

impl Drop for Uplink {
    fn drop(&mut self) {
        for (family, made) in [("ip", self.table_made), ("ip6", self.table6_made)] {
            if made && let Err(e) = delete_table(family, &self.table) {
                tracing::warn!("squall emu: could not delete nft table {family} {}: {e}", self.table);
            }
        }
        if let Some(lease) = self.forwarding.take() {
            lease.release();
        }
    }
}

/// The nft table of a run: scenario addresses leaving IFACE are
/// masqueraded; anything else the device would forward elsewhere is
/// dropped and counted; from IFACE into the device only replies pass.
fn ruleset(name: &str, interface: &str, inside: &[std::net::Ipv4Addr]) -> String {
    family_ruleset(("ip", "ipv4_addr", "ip"), name, interface, inside)
}

/// The `ip6` table of a run: [`ruleset`]'s rules for the scenario's IPv6
/// addresses (masquerade is NAT66 here).
fn ruleset6(name: &str, interface: &str, inside: &[std::net::Ipv6Addr]) -> String {
    family_ruleset(("ip6", "ipv6_addr", "ip6"), name, interface, inside)
}

/// [`ruleset`] for one nft family: its table family, the set's element
/// type and the header whose `saddr` is matched.
fn family_ruleset(
    (family, addr_type, header): (&str, &str, &str),
    name: &str,
    interface: &str,
    inside: &[impl std::fmt::Display],
) -> String {
    let elements: Vec<String> = inside.iter().map(|a| a.to_string()).collect();
    let set =
        if elements.is_empty() { String::new() } else { format!("        elements = {{ {} }}\n", elements.join(", ")) };
    format!(
        r#"table {family} {name} {{
    set scenario {{
        type {addr_type}
{set}    }}
    counter leaked {{ }}
    counter refused {{ }}
    chain forward {{
        type filter hook forward priority filter; policy accept;
        iifname "{name}" oifname != "{interface}" counter name leaked drop
        iifname "{interface}" oifname "{name}" ct state != {{ established, related }} counter name refused drop
    }}
    chain postrouting {{
        type nat hook postrouting priority srcnat; policy accept;
        oifname "{interface}" {header} saddr @scenario masquerade
    }}
}}
"#
    )
}

/// Whether `interface` has an IPv6 address of global scope (masquerade
/// takes its source address from it).
fn has_global_ipv6(interface: &str) -> bool {
    Command::new("ip")
        .args(["-6", "-o", "addr", "show", "dev", interface, "scope", "global"])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// Loads `rules` with `nft -f -`.
fn nft(rules: &str, interface: &str) -> Result<(), EmuError> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| EmuError::Uplink {
            interface: interface.to_string(),
            message: format!("cannot run nft (is nftables installed?): {e}"),
        })?;
    child.stdin.take().expect("piped").write_all(rules.as_bytes()).context(|| "write to nft".to_string())?;
    let out = child.wait_with_output().context(|| "wait for nft".to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::Uplink {
            interface: interface.to_string(),
            message: format!("nft refused the run's table: {}", String::from_utf8_lossy(&out.stderr).trim()),
        })
    }
}

fn delete_table(family: &str, table: &str) -> Result<(), String> {
    let out = Command::new("nft").args(["delete", "table", family, table]).output().map_err(|e| e.to_string())?;
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_string()) }
}

/// Refuses an interface that does not exist or is not up, naming it.
pub fn check_interface(interface: &str, host: &str) -> Result<(), EmuError> {
    let fail = |message: String| EmuError::Uplink { interface: interface.to_string(), message };
    let dir = Path::new("/sys/class/net").join(interface);
    if interface.contains('/') || !dir.exists() {
        return Err(fail(format!(
            "no such interface in squall's network namespace (host `{host}`'s outside_interface; `ip link` lists them)"
        )));
    }
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).map(|s| s.trim().to_string()).unwrap_or_default();
    let flags = u32::from_str_radix(read("flags").trim_start_matches("0x"), 16).unwrap_or(0);
    if flags & libc::IFF_UP as u32 == 0 {
        return Err(fail(format!(
            "it is down (host `{host}`'s outside_interface); bring it up: ip link set {interface} up"
        )));
    }
    let oper = read("operstate");
    if oper == "down" || oper == "lowerlayerdown" {
        return Err(fail(format!(
            "it is up but has no carrier (operstate {oper}; host `{host}`'s outside_interface): plug it in or bring \
             its far side up"
        )));
    }
    Ok(())
}

/// The saved `net.ipv4.ip_forward` and the pids of the runs that need it on.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct SysctlState {
    /// The value found before the first run switched it on.
    ip_forward: String,
    pids: Vec<u32>,
    /// IPv6 keys (paths under /proc/sys/net) with the value each had
    /// before a run changed it, in the order they were saved: restored in
    /// reverse. Absent in a file written before IPv6.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    saved: Vec<(String, String)>,
}

/// What a run with IPv6 towards the outside host changes in the
/// machine's IPv6 settings (keys are paths under /proc/sys/net): see the
/// module's documentation.
#[derive(Debug, Default, PartialEq, Eq)]
struct Ipv6Forwarding {
    /// Keys whose values are saved before `write` (some are not written
    /// but changed by another write: each interface's `forwarding` by
    /// `all/forwarding`).
    save: Vec<String>,
    /// Keys written, in order.
    write: Vec<(String, &'static str)>,
    /// `force_forwarding` is used: the run's device needs it too.
    per_interface: bool,
}

impl Ipv6Forwarding {
    /// The keys to change under `net` (/proc/sys/net) for forwarding
    /// between the run's device and `interface`.
    fn plan(net: &Path, interface: &str) -> Self {
        let conf = net.join("ipv6/conf");
        let key = |dev: &str, name: &str| format!("ipv6/conf/{dev}/{name}");
        let read = |k: &str| std::fs::read_to_string(net.join(k)).map(|v| v.trim().to_string()).unwrap_or_default();
        if conf.join(interface).join("force_forwarding").exists() {
            let k = key(interface, "force_forwarding");
            return Ipv6Forwarding { save: vec![k.clone()], write: vec![(k, "1")], per_interface: true };
        }
        let mut devices: Vec<String> = std::fs::read_dir(&conf)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|d| d != "all" && d != "default")
            .collect();
        devices.sort();
        let mut plan = Ipv6Forwarding::default();
        plan.save.extend(devices.iter().map(|d| key(d, "forwarding")));
        for d in &devices {
            if read(&key(d, "accept_ra")) == "1" && read(&key(d, "forwarding")) == "0" {
                plan.save.push(key(d, "accept_ra"));
                plan.write.push((key(d, "accept_ra"), "2"));
            }
        }
        plan.save.push(key("default", "forwarding"));
        plan.save.push(key("all", "forwarding"));
        plan.write.push((key("all", "forwarding"), "1"));
        plan
    }
}

/// Where the shared forwarding state lives: the machine's files, or a
/// test's.
#[derive(Clone, Debug)]
struct SysctlFiles {
    /// The saved value and the pids ([`SYSCTL_STATE`]).
    state: PathBuf,
    /// Held with flock(2) while `state` is read and written.
    lock: PathBuf,
    /// The setting itself ([`IP_FORWARD`]).
    sysctl: PathBuf,
    /// Where the IPv6 keys are ([`PROC_NET`]).
    net: PathBuf,
}

impl SysctlFiles {
    fn machine() -> Self {
        SysctlFiles {
            state: SYSCTL_STATE.into(),
            lock: SYSCTL_LOCK.into(),
            sysctl: IP_FORWARD.into(),
            net: PROC_NET.into(),
        }
    }

    fn write_key(&self, key: &str, value: &str) -> Result<(), EmuError> {
        let path = self.net.join(key);
        std::fs::write(&path, value).context(|| format!("write {value} to {}", path.display()))
    }

    fn write_sysctl(&self, value: &str) -> Result<(), EmuError> {
        std::fs::write(&self.sysctl, value).context(|| format!("write {value} to {}", self.sysctl.display()))
    }

    /// Claims forwarding for run `id`: saves the value found if no run
    /// holds it yet, adds `id` to the holders, then switches it on (the
    /// claim is on disk first, so a run killed in between is undone by
    /// the next sweep).
    /// With `ipv6`, its keys are saved (those not saved yet) and written
    /// the same way.
    fn take(&self, id: RunId, ipv6: &Ipv6Forwarding) -> Result<(), EmuError> {
        self.with_state(|state| {
            let state = state.get_or_insert_with(|| SysctlState {
                ip_forward: std::fs::read_to_string(&self.sysctl).unwrap_or_default().trim().to_string(),
                pids: Vec::new(),
                saved: Vec::new(),
            });
            state.pids.retain(|&p| RunId(p).is_alive());
            if !state.pids.contains(&id.0) {
                state.pids.push(id.0);
            }
            for key in &ipv6.save {
                if !state.saved.iter().any(|(k, _)| k == key)
                    && let Ok(value) = std::fs::read_to_string(self.net.join(key))
                {
                    state.saved.push((key.clone(), value.trim().to_string()));
                }
            }
            Ok(())
        })?;
        // Outside the lock is safe: no holder restores while `id` holds.
        let written = self
            .write_sysctl("1")
            .and_then(|()| ipv6.write.iter().try_for_each(|(key, value)| self.write_key(key, value)));
        if let Err(e) = written {
            let _ = self.release(id);
            return Err(e);
        }
        Ok(())
    }

    /// Drops run `id`'s claim; the last live holder restores the value.
    fn release(&self, id: RunId) -> Result<(), EmuError> {
        self.with_state(|state| {
            if let Some(s) = state.as_mut() {
                s.pids.retain(|&p| p != id.0);
            }
            self.restore_if_unused(state)
        })
    }

    /// Writes the saved value back and forgets it when no live run needs
    /// forwarding any more (all holders gone or dead). Returns the value
    /// restored.
    fn sweep(&self) -> Result<Option<String>, EmuError> {
        let mut restored = None;
        self.with_state(|state| {
            let before = state.as_ref().map(|s| s.ip_forward.clone());
            self.restore_if_unused(state)?;
            if state.is_none() {
                restored = before;
            }
            Ok(())
        })?;
        Ok(restored)
    }

    fn restore_if_unused(&self, state: &mut Option<SysctlState>) -> Result<(), EmuError> {
        if let Some(s) = state.as_mut() {
            s.pids.retain(|&p| RunId(p).is_alive());
            if s.pids.is_empty() {
                if !s.ip_forward.is_empty() {
                    self.write_sysctl(&s.ip_forward)?;
                }
                // In reverse: `all/forwarding` (which sets every
                // interface's) before each interface's own. A key whose
                // interface is gone has nothing to restore.
                // A failure keeps the state for the next sweep to retry.
                let mut failed = None;
                for (key, value) in s.saved.iter().rev() {
                    match self.write_key(key, value) {
                        Err(EmuError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => failed = failed.or(Some(e)),
                        Ok(()) => {}
                    }
                }
                if let Some(e) = failed {
                    return Err(e);
                }
                *state = None;
            }
        }
        Ok(())
    }

    /// Runs `f` on the saved state (`None`: no file) under the lock, then
    /// writes it back (or removes the file when `f` leaves `None`).
    fn with_state(&self, f: impl FnOnce(&mut Option<SysctlState>) -> Result<(), EmuError>) -> Result<(), EmuError> {
        if let Some(dir) = self.state.parent() {
            std::fs::create_dir_all(dir).context(|| format!("create {}", dir.display()))?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .context(|| format!("open {}", self.lock.display()))?;
        // Released when `lock` is closed.
        crate::sys::lock::lock_exclusive(&lock).context(|| format!("lock {}", self.lock.display()))?;
        let path = &self.state;
        let mut state: Option<SysctlState> =
            std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok());
        let result = f(&mut state);
        match &state {
            Some(s) => {
                let tmp = path.with_extension("json.tmp");
                std::fs::write(&tmp, serde_json::to_string_pretty(s).expect("plain data"))
                    .and_then(|()| std::fs::rename(&tmp, path))
                    .context(|| format!("write {}", path.display()))?;
            }
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
        drop::<File>(lock);
        result
    }
}

/// This run's claim on `net.ipv4.ip_forward = 1` (and IPv6 forwarding).
struct ForwardingLease {
    id: RunId,
}

impl ForwardingLease {
    fn take(id: RunId, ipv6: &Ipv6Forwarding) -> Result<Self, EmuError> {
        SysctlFiles::machine().take(id, ipv6)?;
        Ok(ForwardingLease { id })
    }

    fn release(self) {
        if let Err(e) = SysctlFiles::machine().release(self.id) {
            tracing::warn!("squall emu: could not restore net.ipv4.ip_forward: {e}");
        }
    }
}

/// Removes what dead runs' outside hosts left: their nft tables and root
/// TUN devices (the kernel removes a device when its owner dies; this is
/// for one held open elsewhere), and restores `net.ipv4.ip_forward` when
/// no live run needs it. Returns what it removed.
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for family in ["ip", "ip6"] {
        let Ok(out) = Command::new("nft").args(["-j", "list", "tables", family]).output() else { continue };
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        for t in v["nftables"].as_array().into_iter().flatten() {
            let Some(name) = t["table"]["name"].as_str() else { continue };
            if name.strip_prefix(PREFIX).is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
                && RunId::owner_of(name).is_some_and(|o| !o.is_alive())
            {
                match delete_table(family, name) {
                    Ok(()) => removed.push(format!("nft table {family} {name}")),
                    Err(e) => tracing::warn!("squall: could not delete stale nft table {family} {name}: {e}"),
                }
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.strip_prefix(PREFIX).is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
                && RunId::owner_of(&name).is_some_and(|o| !o.is_alive())
                && crate::sys::netns::ip(&["link", "delete", &name]).is_ok()
            {
                removed.push(format!("link {name}"));
            }
        }
    }
    if Path::new(SYSCTL_STATE).exists() {
        match SysctlFiles::machine().sweep() {
            Err(e) => tracing::warn!("squall: could not restore net.ipv4.ip_forward: {e}"),
            Ok(Some(v)) => removed.push(format!("sysctl net.ipv4.ip_forward (restored to {v})")),
            Ok(None) => {}
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_an_interface() {
        assert_eq!(object_name(RunId(4_194_304)), "squall-4194304");
        assert!(object_name(RunId(4_194_304)).len() < libc::IFNAMSIZ);
        assert_eq!(RunId::owner_of(&object_name(RunId(77))), Some(RunId(77)));
    }

    #[test]
    fn ruleset_names_the_interface_and_addresses() {
        let r = ruleset("squall-7", "eth0", &["10.0.1.1".parse().unwrap(), "10.0.2.1".parse().unwrap()]);
        assert!(r.contains("table ip squall-7 {"), "{r}");
        assert!(r.contains("elements = { 10.0.1.1, 10.0.2.1 }"), "{r}");
        assert!(r.contains(r#"oifname "eth0" ip saddr @scenario masquerade"#), "{r}");
        assert!(r.contains(r#"iifname "squall-7" oifname != "eth0" counter name leaked drop"#), "{r}");
        assert!(!ruleset("squall-7", "eth0", &[]).contains("elements"));
    }

    /// The forwarding claim's files in a temporary directory, the setting
    /// at `value`.
    fn files(dir: &Path, value: &str) -> SysctlFiles {
        let files = SysctlFiles {
            state: dir.join("state.json"),
            lock: dir.join("state.lock"),
            sysctl: dir.join("ip_forward"),
            net: dir.join("net"),
        };
        std::fs::write(&files.sysctl, value).unwrap();
        files
    }

    /// A run without IPv6 towards the outside.
    const V4: Ipv6Forwarding = Ipv6Forwarding { save: Vec::new(), write: Vec::new(), per_interface: false };

    fn sysctl(files: &SysctlFiles) -> String {
        std::fs::read_to_string(&files.sysctl).unwrap()
    }

    /// A pid no process has: a child's, after it was reaped.
    fn dead_pid() -> RunId {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        RunId(pid)
    }

    #[test]
    fn the_last_of_two_runs_restores_forwarding() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), "0\n");
        let (me, other) = (RunId::current(), RunId(1)); // pid 1 lives
        f.take(me, &V4).unwrap();
        f.take(other, &V4).unwrap();
        assert_eq!(sysctl(&f), "1");
        f.release(me).unwrap();
        assert_eq!(sysctl(&f), "1", "the other run still needs it");
        f.release(other).unwrap();
        assert_eq!(sysctl(&f), "0");
        assert!(!f.state.exists());
    }

    #[test]
    fn a_value_found_on_is_left_on() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), "1\n");
        f.take(RunId::current(), &V4).unwrap();
        f.release(RunId::current()).unwrap();
        assert_eq!(sysctl(&f), "1");
    }

    #[test]
    fn a_killed_run_is_restored_by_the_next_sweep_or_forgotten_by_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), "0");
        let dead = dead_pid();
        f.take(dead, &V4).unwrap(); // then SIGKILLed: no release
        assert_eq!(sysctl(&f), "1");
        assert_eq!(f.sweep().unwrap().as_deref(), Some("0"));
        assert_eq!(sysctl(&f), "0");
        assert!(!f.state.exists());
        assert_eq!(f.sweep().unwrap(), None, "nothing left to restore");

        // A run that starts without a sweep keeps the first value saved.
        f.take(dead, &V4).unwrap();
        f.take(RunId::current(), &V4).unwrap();
        let state: SysctlState = serde_json::from_str(&std::fs::read_to_string(&f.state).unwrap()).unwrap();
        assert_eq!(state, SysctlState { ip_forward: "0".into(), pids: vec![RunId::current().0], saved: vec![] });
        f.release(RunId::current()).unwrap();
        assert_eq!(sysctl(&f), "0");
    }

    #[test]
    fn a_missing_interface_is_named() {
        let e = check_interface("nosuchif0", "internet").unwrap_err().to_string();
        assert!(e.contains("`nosuchif0`") && e.contains("no such interface") && e.contains("`internet`"), "{e}");
    }

    /// `ipv6/conf` under `net` with `(device, key, value)` files.
    fn conf(net: &Path, keys: &[(&str, &str, &str)]) {
        for (dev, key, value) in keys {
            let dir = net.join("ipv6/conf").join(dev);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(key), value).unwrap();
        }
    }

    fn key(net: &Path, dev: &str, key: &str) -> String {
        std::fs::read_to_string(net.join("ipv6/conf").join(dev).join(key)).unwrap()
    }

    /// Linux 6.17 and later: only the outside interface's force_forwarding
    /// is saved and switched on; it comes back to what it was.
    #[test]
    fn force_forwarding_is_used_where_the_kernel_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), "0");
        let keys = [
            ("all", "forwarding", "0"),
            ("eth0", "forwarding", "0"),
            ("eth0", "accept_ra", "1"),
            ("eth0", "force_forwarding", "0"),
        ];
        conf(&f.net, &keys);
        let plan = Ipv6Forwarding::plan(&f.net, "eth0");
        assert_eq!(
            plan,
            Ipv6Forwarding {
                save: vec!["ipv6/conf/eth0/force_forwarding".into()],
                write: vec![("ipv6/conf/eth0/force_forwarding".into(), "1")],
                per_interface: true,
            }
        );
        f.take(RunId::current(), &plan).unwrap();
        assert_eq!((sysctl(&f).as_str(), key(&f.net, "eth0", "force_forwarding").as_str()), ("1", "1"));
        assert_eq!(key(&f.net, "all", "forwarding"), "0", "all.forwarding untouched");
        f.release(RunId::current()).unwrap();
        for (dev, k, v) in keys {
            assert_eq!(key(&f.net, dev, k).trim(), v, "{dev}/{k}");
        }
        assert_eq!(sysctl(&f), "0");
    }

    /// Before 6.17: all.forwarding on, an interface that takes router
    /// advertisements (accept_ra 1, forwarding 0) moved to accept_ra 2
    /// first, and everything written back in reverse after the last run,
    /// each interface's own forwarding after all's (which the kernel
    /// copies to every interface: here written by hand as it would).
    #[test]
    fn all_forwarding_keeps_router_advertisements_and_is_restored_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), "0");
        let keys = [
            ("all", "forwarding", "0"),
            ("default", "forwarding", "0"),
            ("eth0", "forwarding", "0"),
            ("eth0", "accept_ra", "1"),
            ("wan1", "forwarding", "1"),
            ("wan1", "accept_ra", "1"),
            ("lo", "forwarding", "0"),
            ("lo", "accept_ra", "0"),
        ];
        conf(&f.net, &keys);
        let plan = Ipv6Forwarding::plan(&f.net, "eth0");
        assert!(!plan.per_interface);
        assert_eq!(
            plan.write,
            [("ipv6/conf/eth0/accept_ra".to_string(), "2"), ("ipv6/conf/all/forwarding".to_string(), "1")]
        );
        f.take(RunId::current(), &plan).unwrap();
        // A second run with the same plan saves nothing again.
        f.take(RunId(1), &plan).unwrap();
        assert_eq!(key(&f.net, "all", "forwarding"), "1");
        assert_eq!(key(&f.net, "eth0", "accept_ra"), "2");
        assert_eq!(key(&f.net, "wan1", "accept_ra"), "1", "a router's accept_ra is left alone");
        // What the kernel does on all.forwarding = 1.
        for dev in ["default", "eth0", "wan1", "lo"] {
            std::fs::write(f.net.join("ipv6/conf").join(dev).join("forwarding"), "1").unwrap();
        }
        let state: SysctlState = serde_json::from_str(&std::fs::read_to_string(&f.state).unwrap()).unwrap();
        let saved: Vec<&str> = state.saved.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            saved,
            [
                "ipv6/conf/eth0/forwarding",
                "ipv6/conf/lo/forwarding",
                "ipv6/conf/wan1/forwarding",
                "ipv6/conf/eth0/accept_ra",
                "ipv6/conf/default/forwarding",
                "ipv6/conf/all/forwarding",
            ]
        );
        f.release(RunId::current()).unwrap();
        assert_eq!(key(&f.net, "eth0", "accept_ra"), "2", "the other run still needs it");
        f.release(RunId(1)).unwrap();
        for (dev, k, v) in keys {
            assert_eq!(key(&f.net, dev, k).trim(), v, "{dev}/{k}");
        }
        assert!(!f.state.exists());
    }

    /// A saved interface that went away meanwhile (a run's own device) is
    /// skipped; the others are restored.
    #[test]
    fn a_saved_interface_that_is_gone_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), "0");
        conf(&f.net, &[("all", "forwarding", "0"), ("gone0", "forwarding", "0")]);
        let plan = Ipv6Forwarding::plan(&f.net, "eth9");
        f.take(dead_pid(), &plan).unwrap();
        std::fs::remove_dir_all(f.net.join("ipv6/conf/gone0")).unwrap();
        assert_eq!(f.sweep().unwrap().as_deref(), Some("0"));
        assert_eq!(key(&f.net, "all", "forwarding"), "0");
        assert!(!f.state.exists());
    }

    #[test]
    fn ruleset6_masquerades_the_scenario_ipv6_addresses() {
        let r = ruleset6("squall-7", "eth0", &["fd00::1".parse().unwrap(), "fd00:1::1".parse().unwrap()]);
        assert!(r.contains("table ip6 squall-7 {") && r.contains("type ipv6_addr"), "{r}");
        assert!(r.contains("elements = { fd00::1, fd00:1::1 }"), "{r}");
        assert!(r.contains(r#"oifname "eth0" ip6 saddr @scenario masquerade"#), "{r}");
    }

    /// A state file written before IPv6 (no `saved`) still reads.
    #[test]
    fn an_older_state_file_reads() {
        let s: SysctlState = serde_json::from_str(r#"{"ip_forward":"0","pids":[5]}"#).unwrap();
        assert_eq!(s, SysctlState { ip_forward: "0".into(), pids: vec![5], saved: vec![] });
        assert!(!serde_json::to_string(&s).unwrap().contains("saved"));
    }
}
