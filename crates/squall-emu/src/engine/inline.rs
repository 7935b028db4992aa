//! Inline mode: squall between two existing interfaces, as the seeds'
//! emulators sit between real networks (Seawind, seed 000 §4.1; WIPEMU,
//! seed 002 §II.A, a gateway between two Ethernet interfaces; the
//! degrader, seed 003 §2, a box between two ports). Every frame read on
//! one interface crosses the scenario's link to the other: frames from
//! the first interface take the downlink (the side of
//! `links[0].between[0]`), frames from the second the uplink.
//!
//! What squall changes on an interface is a promiscuous-mode membership
//! of its packet socket, which the kernel drops with the socket, however
//! the process ends; offloads stay as they are (super-frames are cut in
//! software, [`crate::wire::offload`]). With `--inline-socket xdp` it is an XDP
//! program attached with a BPF link, which the kernel detaches when the
//! link closes, however the process ends ([`crate::sys::xdp_redirect`]). A
//! lock file per interface, held with flock(2) for the run and released
//! by the kernel even after SIGKILL, keeps two runs off one interface; a
//! dead run's file is removed by the next start ([`sweep_stale_locks`]).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use squall_scenario::Scenario;

use crate::engine::routing::{HostIndex, Routing};
use crate::error::{Context, EmuError};
use crate::naming::control_dir;
use crate::sys::device::PacketDevice;
use crate::sys::packet_socket::PacketSocket;

/// Which interfaces, and whether to attach to one the machine itself uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineOptions {
    /// The side of `links[0].between[0]` (its frames take the downlink),
    /// then the other side.
    pub interfaces: [String; 2],
    /// Attach even to an interface with the machine's default route or one
    /// of its own global addresses (its own traffic would cross the model
    /// too, or stop).
    pub force: bool,
    /// What reads and writes the two interfaces.
    pub socket: InlineSocket,
}

/// What reads and writes the two interfaces (docs/guide: "Inline and outside hosts"; the
/// figures of both are in its Benchmarks chapter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InlineSocket {
    /// AF_PACKET with a receive ring: GSO super-frames pass whole (cut in
    /// software), so bulk TCP keeps its offloads; the faster for TCP.
    #[default]
    Packet,
    /// AF_XDP in copy mode ([`crate::sys::xdp_socket`]): no socket buffer per
    /// frame on the way in; an XDP program on a veth turns its peer's
    /// segmentation offload off, so TCP comes wire-sized.
    Xdp,
}

/// Which IP traffic of the two interfaces takes the link: the scenario's
/// `[inline]` rules (the multi-class stage's classifier, first match
/// wins) into `link` or `pass`.
#[derive(Clone, Debug)]
pub struct InlineFilter {
    rules: Vec<(squall_link::classes::Matcher, bool)>,
    /// Whether traffic no rule matches takes the link.
    default_carried: bool,
}

impl Default for InlineFilter {
    /// Every IP frame takes the link.
    fn default() -> Self {
        InlineFilter { rules: Vec::new(), default_carried: true }
    }
}

impl InlineFilter {
    /// The filter of a scenario's `[inline]` table; without one, every IP
    /// frame takes the link.
    pub fn of(scenario: &Scenario) -> InlineFilter {
        match &scenario.inline {
            None => InlineFilter::default(),
            Some(inline) => InlineFilter {
                rules: inline.rules.iter().map(|r| (r.matcher(), r.class == "link")).collect(),
                default_carried: inline.default == squall_scenario::InlineClass::Link,
            },
        }
    }

    /// Whether `packet` (IPv4 or IPv6) crosses the link.
    pub fn carries(&self, packet: &squall_link::Packet) -> bool {
        self.rules.iter().find(|(m, _)| m.matches(packet)).map_or(self.default_carried, |(_, link)| *link)
    }
}

/// Which hosts a frame read on an inline interface goes between. Device
/// 0 is the first interface (the side of `links[0].between[0]`, or of the
/// clients), device 1 the second. Without `[[inline.clients]]`, each
/// interface is one host and a frame crosses to the other; with them, a
/// frame read on the first takes the link of the client it comes from,
/// one read on the second that of the client it is for.
#[derive(Clone, Debug)]
pub struct InlineSides {
    /// Each host's device.
    device_of: Vec<usize>,
    /// The first host of each device (whose counters hold the device's).
    host_of: [HostIndex; 2],
    clients: Vec<Client>,
}

#[derive(Clone, Debug)]
struct Client {
    host: HostIndex,
    mac: Option<[u8; 6]>,
    prefix: Option<squall_link::IpPrefix>,
}

impl InlineSides {
    /// The sides of `scenario` (checked: its clients and links agree).
    pub fn of(scenario: &Scenario, routing: &Routing) -> Result<InlineSides, EmuError> {
        let index = |name: &str| routing.names.iter().position(|n| n == name);
        let clients: Vec<Client> = match &scenario.inline {
            Some(inline) => inline
                .clients
                .iter()
                .map(|c| Client {
                    host: index(&c.host).expect("a checked client is a host"),
                    mac: c.mac.map(|m| m.0),
                    prefix: c.prefix,
                })
                .collect(),
            None => Vec::new(),
        };
        if clients.is_empty() {
            if routing.names.len() != 2 || routing.paths.len() != 2 {
                return Err(EmuError::Inline(format!(
                    "inline mode needs a scenario of two hosts and one link (the two sides), or [[inline.clients]]; \
                     `{}` has {} hosts and {} links",
                    scenario.name,
                    routing.names.len(),
                    routing.paths.len() / 2
                )));
            }
            let (first, second) = (routing.paths[0].from, routing.paths[0].to);
            let mut device_of = vec![0; 2];
            device_of[second] = 1;
            return Ok(InlineSides { device_of, host_of: [first, second], clients });
        }
        let far = (0..routing.names.len())
            .find(|h| !clients.iter().any(|c| c.host == *h))
            .ok_or_else(|| EmuError::Inline("inline clients need the host on the other side".into()))?;
        let mut device_of = vec![0; routing.names.len()];
        device_of[far] = 1;
        Ok(InlineSides { device_of, host_of: [clients[0].host, far], clients })
    }

    /// The device of `host`.
    pub fn device_of(&self, host: HostIndex) -> usize {
        self.device_of[host]
    }

    /// The host whose counters hold `device`'s own (the interface's
    /// offloads and kernel drops; with clients, the first client's).
    pub fn host_of(&self, device: usize) -> HostIndex {
        self.host_of[device]
    }

    /// The hosts a frame read on `device` goes from and to: `packet` the
    /// IP packet in it, its payload the whole frame. `None`: no client's.
    pub fn ends(&self, device: usize, packet: &squall_link::Packet) -> Option<(HostIndex, HostIndex)> {
        if self.clients.is_empty() {
            return Some((self.host_of[device], self.host_of[1 - device.min(1)]));
        }
        let far = self.host_of[1];
        // The Ethernet header, read in place: a segment of a super-frame
        // shares its headers with the frame as read, so no segment's bytes
        // are made for it.
        let header = match packet.payload.as_deref() {
            Some(squall_link::Payload::Owned(bytes)) => bytes.as_slice(),
            Some(squall_link::Payload::Segment(s)) => s.of.frame(),
            None => &[],
        };
        // Ethernet: destination MAC, then source MAC (IEEE 802.3 §3.1.1).
        let (mac, addr) =
            if device == 0 { (header.get(6..12), packet.flow.src) } else { (header.get(0..6), packet.flow.dst) };
        let client = self
            .clients
            .iter()
            .find(|c| c.mac.is_some_and(|m| mac == Some(&m[..])) || c.prefix.is_some_and(|p| p.contains(addr)))?;
        Some(if device == 0 { (client.host, far) } else { (far, client.host) })
    }
}

/// The interfaces' lock files, held for the run and removed at its end.
pub struct InlineLock {
    files: Vec<(PathBuf, File)>,
}

impl Drop for InlineLock {
    fn drop(&mut self) {
        for (path, file) in self.files.drain(..) {
            let _ = std::fs::remove_file(&path);
            drop(file);
        }
    }
}

/// The two interfaces, opened and locked.
pub struct Attached {
    pub lock: InlineLock,
    /// The devices in the order of the interfaces.
    pub devices: Vec<Box<dyn PacketDevice>>,
    /// Which hosts each stands for.
    pub sides: InlineSides,
}

/// Checks the scenario and the interfaces and opens them.
pub fn attach(scenario: &Scenario, routing: &Routing, options: &InlineOptions) -> Result<Attached, EmuError> {
    let sides = InlineSides::of(scenario, routing)?;
    let [a, b] = &options.interfaces;
    if a == b {
        return Err(EmuError::Inline(format!("inline mode needs two different interfaces, not `{a}` twice")));
    }
    for name in [a, b] {
        if !options.force {
            refuse_if_in_use_by_the_machine(name)?;
        }
    }
    let mut lock = InlineLock { files: Vec::new() };
    for name in [a, b] {
        lock.files.push(lock_interface(name)?);
    }
    let open = |name: &str| -> Result<Box<dyn PacketDevice>, EmuError> {
        Ok(match options.socket {
            InlineSocket::Packet => Box::new(PacketSocket::open(name)?),
            InlineSocket::Xdp => Box::new(crate::sys::xdp_socket::XdpSocket::open(name)?),
        })
    };
    let devices = vec![open(a)?, open(b)?];
    Ok(Attached { lock, devices, sides })
}

/// Whether `path` still names the file open as `file`.
fn same_file(file: &File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Removes the lock files that SIGKILLed inline runs left: those no run
/// holds and whose recorded process is gone (each removed while this
/// process holds its lock, so a run taking it meanwhile notices). Returns
/// what it removed.
pub fn sweep_stale_locks() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir(control_dir()) else { return removed };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(LOCK_PREFIX) && name.ends_with(LOCK_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else { continue };
        if !crate::sys::lock::try_lock_exclusive(&file) {
            continue;
        }
        let owner = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse::<u32>().ok());
        let dead = owner.is_some_and(|pid| !crate::naming::RunId(pid).is_alive());
        if dead && same_file(&file, &path) && std::fs::remove_file(&path).is_ok() {
            removed.push(format!("lock {}", path.display()));
        }
    }
    removed
}

/// Refuses an interface that carries a default route of the machine or
/// has one of its global addresses: attaching would put the machine's
/// own traffic through the model (or cut it off).
fn refuse_if_in_use_by_the_machine(name: &str) -> Result<(), EmuError> {
    let what = |m: String| EmuError::Interface {
        name: name.into(),
        message: format!("{m}; give --force-interface to attach anyway"),
    };
    for family in ["-4", "-6"] {
        let routes = ip_json(&[family, "route", "show", "default"])?;
        if routes.iter().any(|r| r["dev"].as_str() == Some(name)) {
            return Err(what(format!("it carries this machine's default route (ip {family} route show default)")));
        }
    }
    let links = ip_json(&["addr", "show", "dev", name])?;
    for link in &links {
        for a in link["addr_info"].as_array().into_iter().flatten() {
            if a["scope"].as_str() == Some("global") {
                let addr = a["local"].as_str().unwrap_or("?");
                return Err(what(format!("it has this machine's address {addr}")));
            }
        }
    }
    Ok(())
}

/// `ip -j ARGS` as JSON rows; an interface `ip` does not know gives no
/// rows here (opening it names the problem).
fn ip_json(args: &[&str]) -> Result<Vec<serde_json::Value>, EmuError> {
    let out = Command::new("ip").arg("-j").args(args).output().context(|| format!("ip -j {}", args.join(" ")))?;
    if !out.status.success() {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap_or_default())
}

/// The lock files of inline runs: control_dir()/inline-NAME.lock.
const LOCK_PREFIX: &str = "inline-";
const LOCK_SUFFIX: &str = ".lock";

/// Takes the lock of interface `name` (control_dir()/inline-NAME.lock)
/// without waiting; held until the file is closed.
fn lock_interface(name: &str) -> Result<(PathBuf, File), EmuError> {
    let dir = control_dir();
    std::fs::create_dir_all(&dir).context(|| format!("create {}", dir.display()))?;
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let path = dir.join(format!("{LOCK_PREFIX}{safe}{LOCK_SUFFIX}"));
    let mut file = loop {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .context(|| format!("open {}", path.display()))?;
        if !crate::sys::lock::try_lock_exclusive(&file) {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(EmuError::Interface {
                name: name.into(),
                message: format!("in use by another squall run (process {}; lock {})", holder.trim(), path.display()),
            });
        }
        // A sweep may have removed the file between the open and the lock
        // (it removes only files it holds locked): then the lock is on a
        // file no other run will find, and the path is opened again.
        if same_file(&file, &path) {
            break file;
        }
    };
    file.set_len(0).context(|| format!("truncate {}", path.display()))?;
    write!(file, "{}", std::process::id()).context(|| format!("write {}", path.display()))?;
    Ok((path, file))
}
