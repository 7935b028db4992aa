//! The benchmark's baselines: the same two hosts joined by a plain veth
//! pair, no squall in between, to compare forwarding rates with; and a
//! forwarder that only moves packets between two devices (no model, no
//! clock, no recording), which bounds what any user-space emulator using
//! those devices can reach on the machine.

use std::net::Ipv4Addr;

use squall_link::Addresses;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::error::{Context, EmuError};
use crate::naming::{RunId, TUN_NAME};
use crate::sys::device::{PacketDevice, TunDevice};
use crate::sys::netns::NetNs;
use crate::sys::packet_socket::PacketSocket;
use crate::tools::blast::SinkReport;

/// Runs `exe tool udp --sink` in one namespace and `exe tool udp --send`
/// (`ip_size`-byte packets for `seconds`) in the other, over a veth pair;
/// returns what the sink counted. With `placed`, each where it says.
pub fn veth(exe: &Path, ip_size: usize, seconds: f64, placed: Option<Placement>) -> Result<SinkReport, EmuError> {
    with_veth(|a, b| udp_between(exe, a, b, Ipv4Addr::new(10, 0, 1, 1), ip_size, seconds, placed))
}

/// Where a benchmark's sender and receiver run: each on a CPU of its own
/// choosing (`taskset -c`), the receiver with a nice value (`nice -n`;
/// below 0: before other work on its CPU, such as squall's data plane).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Placement {
    pub sender: usize,
    pub receiver: usize,
    pub receiver_nice: i32,
}

impl Placement {
    /// The words before a command that place it: the sender's or the
    /// receiver's.
    pub fn prefix(&self, sender: bool) -> Vec<String> {
        let mut words = Vec::new();
        if !sender && self.receiver_nice != 0 {
            words.extend(["nice".to_string(), "-n".to_string(), self.receiver_nice.to_string()]);
        }
        let cpu = if sender { self.sender } else { self.receiver };
        words.extend(["taskset".to_string(), "-c".to_string(), cpu.to_string()]);
        words
    }

    /// `program`, placed as the sender (`sender`) or the receiver if
    /// `placed` says where; as it is if not.
    pub fn command(placed: Option<Placement>, sender: bool, program: &Path) -> Command {
        match placed {
            Some(p) => {
                let words = p.prefix(sender);
                let mut c = Command::new(&words[0]);
                c.args(&words[1..]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }
}

/// Two namespaces joined by a veth pair, removed when the closure returns.
fn with_veth<T>(f: impl FnOnce(&NetNs, &NetNs) -> Result<T, EmuError>) -> Result<T, EmuError> {
    let id = RunId::current();
    let a = NetNs::create(&id.netns_name("veth-a"))?;
    let b = match NetNs::create(&id.netns_name("veth-b")) {
        Ok(b) => b,
        Err(e) => {
            let _ = a.delete();
            return Err(e);
        }
    };
    let result = join(&a, &b).and_then(|()| f(&a, &b));
    let _ = a.delete();
    let _ = b.delete();
    result
}

/// 10.0.0.1 in `a` and 10.0.1.1 in `b`, each routed to the other.
fn join(a: &NetNs, b: &NetNs) -> Result<(), EmuError> {
    a.ip(&["link", "add", TUN_NAME, "type", "veth", "peer", "name", TUN_NAME, "netns", b.name()])?;
    for (ns, me, peer) in [(a, "10.0.0.1", "10.0.1.1"), (b, "10.0.1.1", "10.0.0.1")] {
        ns.ip(&["addr", "add", &format!("{me}/32"), "dev", TUN_NAME])?;
        ns.ip(&["link", "set", TUN_NAME, "up"])?;
        ns.ip(&["route", "add", &format!("{peer}/32"), "dev", TUN_NAME])?;
    }
    Ok(())
}

/// A `exe tool bulk` transfer of `bytes` (cubic) from one namespace to the
/// other over a veth pair; returns the client's result.
pub fn veth_bulk(exe: &Path, bytes: u64) -> Result<crate::tools::bulk::BulkResult, EmuError> {
    with_veth(|a, b| bulk_between(exe, a, b, Ipv4Addr::new(10, 0, 1, 1), bytes))
}

/// A cubic `exe tool bulk` transfer of `bytes` from `a` to the server in
/// `b` at `to`.
fn bulk_between(
    exe: &Path,
    a: &NetNs,
    b: &NetNs,
    to: Ipv4Addr,
    bytes: u64,
) -> Result<crate::tools::bulk::BulkResult, EmuError> {
    let mut server = Command::new(exe);
    server.args(["tool", "bulk", "--server", "--once"]).stdout(Stdio::null()).stderr(Stdio::inherit());
    b.prepare(&mut server, true)?;
    let mut server = server.spawn().context(|| "start the bulk server".to_string())?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut client = Command::new(exe);
    client.args(["tool", "bulk", "--client", &to.to_string(), "--cc", "cubic", "--bytes", &bytes.to_string()]);
    client.stderr(Stdio::inherit());
    a.prepare(&mut client, true)?;
    let out = client.output().context(|| "run the bulk client".to_string());
    let _ = server.kill();
    let _ = server.wait();
    serde_json::from_slice(&out?.stdout).map_err(|source| EmuError::ToolOutput { tool: "bulk client", source })
}

/// `ping -n -i 0.02 -c count` from one namespace to the other over a veth
/// pair: the RTT of the hosts' own stacks, which any link adds to its
/// delay. Returns ping's output.
pub fn veth_ping(count: u32) -> Result<String, EmuError> {
    with_veth(|a, _| {
        let mut ping = Command::new("ping");
        ping.args(["-n", "-i", "0.02", "-c", &count.to_string(), "10.0.1.1"]).stderr(Stdio::inherit());
        a.prepare(&mut ping, true)?;
        let out = ping.output().context(|| "run ping".to_string())?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    })
}

/// `exe tool udp --sink` in `b` (at `to`), `exe tool udp --send` in `a`,
/// placed as `placed` says if given; what the sink counted.
fn udp_between(
    exe: &Path,
    a: &NetNs,
    b: &NetNs,
    to: Ipv4Addr,
    ip_size: usize,
    seconds: f64,
    placed: Option<Placement>,
) -> Result<SinkReport, EmuError> {
    let mut sink = Placement::command(placed, false, exe);
    sink.args(["tool", "udp", "--sink"]).stdout(Stdio::piped()).stderr(Stdio::inherit());
    b.prepare(&mut sink, true)?;
    let sink = sink.spawn().context(|| "start the sink".to_string())?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut sender = Placement::command(placed, true, exe);
    sender.args([
        "tool",
        "udp",
        "--send",
        &to.to_string(),
        "--size",
        &ip_size.to_string(),
        "--seconds",
        &seconds.to_string(),
    ]);
    sender.stdout(Stdio::null());
    a.prepare(&mut sender, true)?;
    sender.status().context(|| "run the sender".to_string())?;
    let out = sink.wait_with_output().context(|| "wait for the sink".to_string())?;
    serde_json::from_slice(&out.stdout).map_err(|source| EmuError::ToolOutput { tool: "sink", source })
}

/// Moves every packet that one device yields to the other, both ways,
/// until `stop`: reads each device until it is empty (as the data plane
/// does) and writes what it read as one batch (a super-packet whole, other
/// segments joined where GRO would).
/// Nothing else: no model, no clock, no recording. Returns the packets
/// moved.
pub fn forward(mut devices: [Box<dyn PacketDevice>; 2], stop: &AtomicBool) -> Result<u64, EmuError> {
    let mut moved = 0u64;
    let mut batch: Vec<squall_link::Payload> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let mut idle = true;
        for from in 0..2 {
            batch.clear();
            // 64 packets, and the rest of a super-packet begun (written
            // whole with the rest of its segments).
            while batch.len() < 64 || devices[from].mid_read() {
                match devices[from].recv() {
                    Ok(Some(p)) => batch.push(p),
                    Ok(None) => break,
                    Err(e) => return Err(EmuError::io(format!("read {}", devices[from].label()), e)),
                }
            }
            if batch.is_empty() {
                continue;
            }
            idle = false;
            let refs: Vec<&squall_link::Payload> = batch.iter().collect();
            let mut written = vec![false; refs.len()];
            devices[1 - from].send_batch(&refs, &mut written);
            moved += written.iter().filter(|w| **w).count() as u64;
        }
        if idle && !devices.iter().any(|d| d.buffered()) {
            let mut fds =
                [PollFd::new(devices[0].fd(), PollFlags::POLLIN), PollFd::new(devices[1].fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, PollTimeout::from(10u8));
        }
    }
    Ok(moved)
}

/// The devices a [`Forwarder`] moves packets between.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ForwarderDevices {
    /// A TUN device (with offloads) in each host's namespace, as squall
    /// emu makes them.
    Tun,
    /// A veth pair per host, its outer end in this namespace read and
    /// written with an AF_PACKET socket, as squall emu --inline does.
    PacketSocket,
    /// The same veth pairs, their outer ends read and written with AF_XDP
    /// sockets in copy mode.
    Xdp,
}

/// Two hosts in namespaces of their own and [`forward`] between their
/// devices on a thread of this process: the ceiling a device sets for a
/// user-space emulator, with nothing of squall's in the way. Stopped and
/// removed when dropped.
pub struct Forwarder {
    hosts: Vec<NetNs>,
    /// The veths' outer ends, in this namespace.
    outer: Vec<String>,
    /// The receiving host's address.
    to: Ipv4Addr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<u64, EmuError>>>,
}

impl Forwarder {
    pub fn start(devices: ForwarderDevices) -> Result<Forwarder, EmuError> {
        let id = RunId::current();
        let mut bed = Forwarder {
            hosts: Vec::new(),
            outer: Vec::new(),
            to: Ipv4Addr::UNSPECIFIED,
            stop: Arc::default(),
            thread: None,
        };
        for tag in ["fwd-a", "fwd-b"] {
            bed.hosts.push(NetNs::create(&id.netns_name(tag))?);
        }
        let (a, b) = (&bed.hosts[0], &bed.hosts[1]);
        let ends: [Box<dyn PacketDevice>; 2] = match devices {
            ForwarderDevices::Tun => {
                let (fixed, mobile) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1));
                bed.to = mobile;
                [
                    Box::new(TunDevice::create(a, Addresses::v4(fixed), &[mobile.into()], 1500, true)?),
                    Box::new(TunDevice::create(b, Addresses::v4(mobile), &[fixed.into()], 1500, true)?),
                ]
            }
            ForwarderDevices::PacketSocket | ForwarderDevices::Xdp => {
                bed.to = Ipv4Addr::new(10, 0, 0, 2);
                let mut ends = Vec::new();
                for (i, ns) in [a, b].into_iter().enumerate() {
                    let outer = format!("sqf{}{}", ["a", "b"][i], id.0);
                    crate::sys::netns::ip(&[
                        "link",
                        "add",
                        &outer,
                        "type",
                        "veth",
                        "peer",
                        "name",
                        TUN_NAME,
                        "netns",
                        ns.name(),
                    ])?;
                    // No router solicitations from the outer end.
                    let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{outer}/disable_ipv6"), "1");
                    crate::sys::netns::ip(&["link", "set", &outer, "up"])?;
                    ns.ip(&["addr", "add", &format!("10.0.0.{}/24", i + 1), "dev", TUN_NAME])?;
                    ns.ip(&["link", "set", TUN_NAME, "up"])?;
                    ends.push(outer.clone());
                    bed.outer.push(outer);
                }
                let open = |end: &str| -> Result<Box<dyn PacketDevice>, EmuError> {
                    Ok(match devices {
                        ForwarderDevices::Xdp => Box::new(crate::sys::xdp_socket::XdpSocket::open(end)?),
                        _ => Box::new(PacketSocket::open(end)?),
                    })
                };
                [open(&ends[0])?, open(&ends[1])?]
            }
        };
        let flag = Arc::clone(&bed.stop);
        bed.thread = Some(std::thread::spawn(move || forward(ends, &flag)));
        Ok(bed)
    }

    /// `exe tool udp` of `ip_size`-byte packets for `seconds` from the
    /// first host to the second: what the sink counted.
    pub fn udp(&self, exe: &Path, ip_size: usize, seconds: f64) -> Result<SinkReport, EmuError> {
        udp_between(exe, &self.hosts[0], &self.hosts[1], self.to, ip_size, seconds, None)
    }

    /// A cubic `exe tool bulk` transfer of `bytes` from the first host to
    /// the second.
    pub fn bulk(&self, exe: &Path, bytes: u64) -> Result<crate::tools::bulk::BulkResult, EmuError> {
        bulk_between(exe, &self.hosts[0], &self.hosts[1], self.to, bytes)
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // A veth goes with its namespace end, but not at once: the next
        // forwarder of this process would find its name taken.
        for outer in self.outer.drain(..) {
            let _ = crate::sys::netns::ip(&["link", "del", &outer]);
        }
        for ns in self.hosts.drain(..) {
            let _ = ns.delete();
        }
    }
}
