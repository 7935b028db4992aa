//! The devices through which hosts' packets enter and leave squall.
//!
//! [`PacketDevice`] is what the data plane needs from one: a pollable fd,
//! read one wire-sized IP packet, write packets. [`TunDevice`] is a TUN
//! device inside a host's namespace (seed 000 §4.1: the NPA's "virtual
//! network interface"); [`crate::sys::packet_socket::PacketSocket`] an existing
//! interface for inline mode.
//!
//! Both read and write with a `virtio_net_hdr` before each packet where
//! the kernel allows (IFF_VNET_HDR, PACKET_VNET_HDR): a host may then hand
//! squall a TCP flight of up to 64 KB in one read, which is cut into the
//! segments a wire would carry before the model sees them
//! ([`crate::wire::offload::split`]), and segments due for one host by the same
//! wake-up are joined again into one write
//! ([`crate::wire::offload::coalesce`], what GRO does in the kernel): none
//! leaves later than it would alone, and the host's stack runs once for
//! the flight.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::error::{Context, EmuError};
use crate::naming::TUN_NAME;
use crate::sys::netns::NetNs;
use crate::wire::offload::{self, FramePool, Framing, SuperFrame, VNET_HDR_LEN, VnetHdr};
use squall_link::{Addresses, Payload, Segment, Segmented};
use std::borrow::Cow;
use std::sync::Arc;

/// A device carrying raw IP packets (or Ethernet frames) between one host
/// and squall.
pub trait PacketDevice: Send {
    /// A name for logs: the host and device.
    fn label(&self) -> &str;
    /// The fd to poll for readability.
    fn fd(&self) -> BorrowedFd<'_>;
    /// The next wire-sized packet the host sent; `Ok(None)` when none is
    /// waiting. A segment of a super-packet comes as a
    /// [`Payload::Segment`], cut only when its bytes are asked for.
    fn recv(&mut self) -> io::Result<Option<Payload>>;
    /// Hands one packet to the host.
    fn send(&mut self, packet: &[u8]) -> io::Result<()>;
    /// Hands `packets`, all due already, to the host in order, joined
    /// where the device can (GRO); `written[i]` says whether packet `i`
    /// was written.
    fn send_batch(&mut self, packets: &[&Payload], written: &mut [bool]) {
        send_each(self, packets, written);
    }
    /// How long before [`Self::recv`] returned it the last packet reached
    /// the device, if the device knows (a kernel receive timestamp).
    fn last_age(&self) -> Option<std::time::Duration> {
        None
    }
    /// Whether the packet the last [`Self::recv`] returned was cut from
    /// the same read as the one before it: it reached squall at the same
    /// instant.
    fn same_read(&self) -> bool {
        false
    }
    /// Whether segments of the super-packet the last [`Self::recv`] came
    /// from are still to be handed out: the data plane takes them in the
    /// same turn, so that all of them can leave in one write.
    fn mid_read(&self) -> bool {
        false
    }
    /// Whether packets already read from the kernel wait in the device
    /// (segments of a super-packet, the rest of a batch read): polling
    /// its fd would not say so, so the data plane must not sleep.
    fn buffered(&self) -> bool {
        false
    }
    /// What the device's offloads did so far.
    fn offload_counts(&self) -> OffloadCounts {
        OffloadCounts::default()
    }
    /// Frames (kernel buffers: a GSO super-frame counts once) the kernel
    /// dropped on their way to squall, where the device can tell.
    fn kernel_dropped(&mut self) -> u64 {
        0
    }
    /// Frames the kernel dropped after squall wrote them, where the device
    /// can tell: an interface whose far side is down or has lost its
    /// carrier takes a write and drops it (its transmit drops since it
    /// was opened).
    fn dropped_after_write(&mut self) -> u64 {
        0
    }
    /// Why a write of [`Self::send_batch`] failed since the last call
    /// (the first such error), where the device keeps it.
    fn write_error(&mut self) -> Option<io::Error> {
        None
    }
    /// The error the kernel holds for the device's fd, taken (poll says
    /// POLLERR until it is): a packet socket's interface went down or was
    /// removed. `None`: no error, or a device that keeps none.
    fn take_error(&mut self) -> Option<io::Error> {
        None
    }
}

/// Runs `f` on `payloads`' bytes as slices, for the devices that write
/// byte slices (a segment of a super-frame is cut here).
pub(crate) fn with_slices<R>(payloads: &[&Payload], f: impl FnOnce(&[&[u8]]) -> R) -> R {
    let bytes: Vec<_> = payloads.iter().map(|p| p.bytes()).collect();
    let slices: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
    f(&slices)
}

/// Packets the TUN device `device` (in namespace `ns`, or this thread's)
/// dropped on their way to squall (its queue was full: the host sent
/// faster than squall read), as /proc/net/dev counts them there.
pub(crate) fn tun_dropped(ns: Option<&NetNs>, device: &str) -> Result<u64, EmuError> {
    let read = || {
        let path = "/proc/thread-self/net/dev";
        let table = std::fs::read_to_string(path).context(|| format!("read {path}"))?;
        transmit_dropped(&table, device)
            .ok_or_else(|| EmuError::Counters { table: path.to_string(), device: device.to_string() })
    };
    match ns {
        Some(ns) => ns.run_in(read),
        None => read(),
    }
}

/// An interface's transmit drops (/proc/net/dev) since it was opened,
/// read through a file opened in the interface's namespace (a /proc net
/// file keeps the namespace it was opened in), so any thread can ask.
pub(crate) struct TransmitDrops {
    file: std::fs::File,
    name: String,
    base: u64,
}

impl TransmitDrops {
    /// Starts counting interface `name` of this thread's namespace; None
    /// when /proc/net/dev cannot be read or has no line for it.
    pub(crate) fn open(name: &str) -> Option<TransmitDrops> {
        let file = std::fs::File::open("/proc/thread-self/net/dev").ok()?;
        let mut drops = TransmitDrops { file, name: name.to_string(), base: 0 };
        drops.base = drops.now()?;
        Some(drops)
    }

    fn now(&mut self) -> Option<u64> {
        use std::io::{Read, Seek};
        self.file.rewind().ok()?;
        let mut table = String::new();
        self.file.read_to_string(&mut table).ok()?;
        transmit_dropped(&table, &self.name)
    }

    /// Drops since it was opened (0 once the interface is gone).
    pub(crate) fn since_open(&mut self) -> u64 {
        self.now().map_or(0, |n| n.saturating_sub(self.base))
    }
}

/// The transmit "drop" column of interface `name` in a /proc/net/dev
/// table (per interface: eight receive counters, then bytes, packets,
/// errs, drop, ... of transmit). A TUN device transmits towards squall.
fn transmit_dropped(table: &str, name: &str) -> Option<u64> {
    table.lines().find_map(|line| {
        let (iface, counters) = line.split_once(':')?;
        if iface.trim() != name {
            return None;
        }
        counters.split_whitespace().nth(11)?.parse().ok()
    })
}

/// Writes `packets` one by one with [`PacketDevice::send`]: the batch for a
/// device that cannot join them, and [`PacketDevice::send_batch`]'s
/// default.
fn send_each<D: PacketDevice + ?Sized>(device: &mut D, packets: &[&Payload], written: &mut [bool]) {
    for (p, ok) in packets.iter().zip(written.iter_mut()) {
        *ok = device.send(&p.bytes()).is_ok();
    }
}

/// What a device's offloads did: super-packets read and cut, segments
/// joined into super-packets on the way out, super-packets written whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OffloadCounts {
    /// Reads that held more than one wire-sized packet.
    pub super_packets_read: u64,
    /// The wire-sized packets those reads stand for, each a packet in
    /// the model (its bytes cut only when needed).
    pub segments_cut: u64,
    /// Writes that joined more than one delivery (GRO).
    pub joined_writes: u64,
    /// The deliveries those writes carried.
    pub segments_joined: u64,
    /// Super-packets written as they were read: all their segments were
    /// due for the host together, in order.
    pub whole_writes: u64,
}

/// The longest frame a device reads after its virtio_net_hdr: an
/// Ethernet header with a VLAN tag (packet sockets) and the largest IP
/// packet.
pub(crate) const MAX_FRAME: usize = 18 + 65_535;

/// Bytes from which a super-frame keeps the buffer it was read into
/// (half of it) rather than a copy of its own size.
const KEEP_READ_BUFFER: usize = (VNET_HDR_LEN + MAX_FRAME) / 2;

/// The reading and writing both devices share when the kernel puts a
/// `virtio_net_hdr` before each packet.
pub(crate) struct VnetIo {
    pub framing: Framing,
    /// A read: the header, then the packet.
    pub rx: Vec<u8>,
    /// Segments of a super-packet not yet handed out.
    pub pending: VecDeque<Payload>,
    /// The last packet handed out came from `pending`, filled by an
    /// earlier call's read.
    pub same_read: bool,
    pub counts: OffloadCounts,
    /// The first error a batch's writes met since it was last taken.
    pub write_error: Option<io::Error>,
    /// Buffers for the super-frames read.
    pool: Arc<FramePool>,
}

impl VnetIo {
    pub fn new(framing: Framing) -> VnetIo {
        VnetIo {
            framing,
            rx: vec![0; VNET_HDR_LEN + MAX_FRAME],
            pending: VecDeque::new(),
            same_read: false,
            counts: OffloadCounts::default(),
            write_error: None,
            pool: Arc::default(),
        }
    }

    /// Cuts the `n` bytes read into `rx` into wire-sized packets, queued
    /// in `pending`. A super-packet that cannot be cut is queued as it
    /// came, for the data plane to refuse with a reason.
    pub fn cut(&mut self, n: usize, label: &str) -> io::Result<()> {
        if n > self.rx.len() || n < VNET_HDR_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{label}: a {n}-byte read does not fit the {}-byte buffer", self.rx.len()),
            ));
        }
        let hdr = VnetHdr::parse(&self.rx).expect("VNET_HDR_LEN bytes");
        if hdr.is_gso() {
            // A large super-frame keeps the buffer it was read into, and the
            // next read goes to one from the pool; a small one takes a copy
            // of its own size, so that a queue of small flights holds no
            // more than twice their bytes.
            let (buffer, span, pool) = if n - VNET_HDR_LEN >= KEEP_READ_BUFFER && self.pool.lending() {
                let buffer = std::mem::replace(&mut self.rx, self.pool.buffer(VNET_HDR_LEN + MAX_FRAME));
                (buffer, VNET_HDR_LEN..n, Some(&self.pool))
            } else {
                (self.rx[VNET_HDR_LEN..n].to_vec(), 0..n - VNET_HDR_LEN, None)
            };
            match SuperFrame::within(hdr, buffer, span.clone(), self.framing) {
                Ok(frame) => {
                    let frame = match pool {
                        Some(pool) => frame.recycled_by(pool),
                        None => frame,
                    };
                    let frame: Arc<dyn Segmented> = Arc::new(frame);
                    let count = frame.count();
                    if count > 1 {
                        self.counts.super_packets_read += 1;
                        self.counts.segments_cut += count as u64;
                    }
                    let segments = (0..count).map(|index| Payload::Segment(Segment { of: Arc::clone(&frame), index }));
                    self.pending.extend(segments);
                }
                // Not to be cut: handed out as it came, for the data plane
                // to refuse with a reason.
                Err((_, buffer)) => {
                    self.pending.push_back(Payload::Owned(buffer[span].to_vec()));
                    if pool.is_some() {
                        self.rx = buffer;
                    }
                }
            }
            return Ok(());
        }
        let packet = &self.rx[VNET_HDR_LEN..n];
        match offload::split(&hdr, packet, self.framing) {
            Ok(frames) => self.pending.extend(frames.into_iter().map(Payload::Owned)),
            Err(_) => self.pending.push_back(Payload::Owned(packet.to_vec())),
        }
        Ok(())
    }

    /// Writes `packet` after an all-zero header (no offload asked).
    pub fn send(fd: BorrowedFd<'_>, packet: &[u8]) -> io::Result<()> {
        write_with_header(fd, &[0; VNET_HDR_LEN], packet)
    }

    /// Writes `payloads` in order: all the segments of a super-packet,
    /// in order, as it was read (no cutting, no joining); each other run
    /// that GRO may join as one GSO super-packet (its payloads gathered by
    /// the write, not copied). A socket (`socket`: AF_PACKET) takes them
    /// all in sendmmsg(2) calls; a TUN device, a file, one writev(2) each.
    pub fn send_batch(&mut self, fd: BorrowedFd<'_>, payloads: &[&Payload], written: &mut [bool], socket: bool) {
        // Writes of super-frames' segments, whole or in part, by the index
        // of their first segment; the other packets' bytes (cut where
        // they are segments).
        let mut frames: Vec<(usize, offload::FrameWrite)> = Vec::new();
        let mut bytes: Vec<Cow<'_, [u8]>> = Vec::with_capacity(payloads.len());
        while bytes.len() < payloads.len() {
            let i = bytes.len();
            match SuperFrame::write_at(payloads, i) {
                Some(w) => {
                    bytes.extend((0..w.segments).map(|_| Cow::Borrowed(&[][..])));
                    frames.push((i, w));
                }
                None => bytes.push(payloads[i].bytes()),
            }
        }
        let packets: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
        let mut writes: Vec<Write> = Vec::new();
        let mut loose = 0;
        let ends = frames.into_iter().map(|(i, w)| (i, Some(w))).chain([(packets.len(), None)]);
        for (start, frame) in ends {
            for run in offload::runs(&packets[loose..start], self.framing) {
                self.plan_run(&packets, run.start + loose..run.end + loose, &mut writes);
            }
            if let Some(frame) = frame {
                let carried = start..start + frame.segments;
                loose = carried.end;
                writes.push(Write {
                    hdr: frame.hdr.to_bytes(),
                    head: frame.head,
                    payloads: Vec::new(),
                    carried,
                    body: Some(frame.body),
                });
            }
        }
        // Each write's iovecs: the header, the head, then the payloads,
        // which lie in the packets of the deliveries it carries, or the
        // body.
        let mut iovs: Vec<libc::iovec> = Vec::new();
        let mut spans = Vec::with_capacity(writes.len());
        for w in &writes {
            let from = iovs.len();
            iovs.push(iovec(&w.hdr));
            if !w.head.is_empty() {
                iovs.push(iovec(&w.head));
            }
            if let Some(body) = w.body {
                iovs.push(iovec(body));
            } else if w.head.is_empty() {
                iovs.push(iovec(packets[w.carried.start]));
            } else {
                for (i, payload) in w.carried.clone().zip(&w.payloads) {
                    iovs.push(iovec(&packets[i][payload.clone()]));
                }
            }
            spans.push(from..iovs.len());
        }
        if socket {
            if let Err(e) = send_messages(fd, &iovs, &spans, &writes, written) {
                self.write_error.get_or_insert(e);
            }
        } else {
            for (w, span) in writes.iter().zip(&spans) {
                let result = writev(fd, &iovs[span.clone()]);
                written[w.carried.clone()].fill(result.is_ok());
                if let Err(e) = result {
                    self.write_error.get_or_insert(e);
                }
            }
        }
        // What the device's offloads did, of what was written.
        for w in writes.iter().filter(|w| written[w.carried.start]) {
            if w.body.is_some() && w.head.is_empty() {
                self.counts.whole_writes += 1;
            } else if !w.head.is_empty() {
                self.counts.joined_writes += 1;
                self.counts.segments_joined += w.carried.len() as u64;
            }
        }
    }
}

/// Sends `writes` (their iovecs at `spans` of `iovs`) on socket `fd` in
/// sendmmsg(2) calls; `written` says which packets went. The error is
/// the first a message met.
fn send_messages(
    fd: BorrowedFd<'_>,
    iovs: &[libc::iovec],
    spans: &[std::ops::Range<usize>],
    writes: &[Write<'_>],
    written: &mut [bool],
) -> io::Result<()> {
    let mut first_error = None;
    let mut msgs: Vec<libc::mmsghdr> = spans
        .iter()
        .map(|span| {
            // SAFETY: mmsghdr is plain data; zeroed is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iovs[span.clone()].as_ptr() as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = span.len();
            m
        })
        .collect();
    let mut next = 0;
    while next < msgs.len() {
        let left = &mut msgs[next..];
        // SAFETY: every message points to iovecs over buffers in
        // `writes`, `packets` and `payloads`, alive and unmoved for the
        // call.
        let n = unsafe { libc::sendmmsg(fd.as_raw_fd(), left.as_mut_ptr(), left.len() as libc::c_uint, 0) };
        // Sent: n messages; an error on the first: that one failed,
        // and the rest are tried again after it.
        let (sent, failed) = if n > 0 { (n as usize, 0) } else { (0, 1) };
        if n < 0 {
            first_error.get_or_insert_with(io::Error::last_os_error);
        }
        for w in &writes[next..next + sent] {
            written[w.carried.clone()].fill(true);
        }
        for w in &writes[next + sent..next + sent + failed] {
            written[w.carried.clone()].fill(false);
        }
        next += sent + failed;
    }
    first_error.map_or(Ok(()), Err)
}

impl VnetIo {
    /// The writes for `run`, packets that GRO may join: one joined write,
    /// or one write each.
    fn plan_run(&self, packets: &[&[u8]], run: std::ops::Range<usize>, writes: &mut Vec<Write<'_>>) {
        let joined = if run.len() > 1 { offload::join(&packets[run.clone()], self.framing) } else { None };
        match joined {
            Some(j) => {
                writes.push(Write {
                    hdr: j.hdr.to_bytes(),
                    head: j.head,
                    payloads: j.payloads,
                    carried: run,
                    body: None,
                });
            }
            None => writes.extend(run.map(|i| Write {
                hdr: [0; VNET_HDR_LEN],
                head: Vec::new(),
                payloads: Vec::new(),
                carried: i..i + 1,
                body: None,
            })),
        }
    }
}

/// One write of a batch: the virtio_net_hdr, the rewritten headers of a
/// joined run and where each carried delivery's payload lies in its
/// packet (both empty for one packet written whole), and which deliveries
/// it carries.
struct Write<'a> {
    hdr: [u8; VNET_HDR_LEN],
    head: Vec<u8>,
    payloads: Vec<std::ops::Range<usize>>,
    carried: std::ops::Range<usize>,
    /// Segments of a super-frame, after `head`: the super-frame as it
    /// was read (`head` empty), or the data of some of its segments.
    body: Option<&'a [u8]>,
}

fn iovec(bytes: &[u8]) -> libc::iovec {
    libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() }
}

fn writev(fd: BorrowedFd<'_>, iovs: &[libc::iovec]) -> io::Result<()> {
    // SAFETY: every iovec points to a buffer readable for its length
    // during the call.
    let n = unsafe { libc::writev(fd.as_raw_fd(), iovs.as_ptr(), iovs.len() as libc::c_int) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn write_with_header(fd: BorrowedFd<'_>, hdr: &[u8; VNET_HDR_LEN], packet: &[u8]) -> io::Result<()> {
    writev(fd, &[iovec(hdr), iovec(packet)])
}

nix::ioctl_write_ptr_bad!(tun_set_iff, 0x4004_54ca, libc::ifreq);

// TUNSETOFFLOAD: which offloads the kernel may use in packets it hands
// to squall (include/uapi/linux/if_tun.h).
nix::ioctl_write_int_bad!(tun_set_offload, 0x4004_54d0);

/// Offload flags of TUNSETOFFLOAD (if_tun.h).
const TUN_F_CSUM: u32 = 0x01;
const TUN_F_TSO4: u32 = 0x02;
const TUN_F_TSO6: u32 = 0x04;
/// UDP segmentation (UDP_SEGMENT senders), Linux 6.2.
const TUN_F_USO4: u32 = 0x20;
const TUN_F_USO6: u32 = 0x40;

/// What a TUN device was opened with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TunOffloads {
    /// A virtio_net_hdr before each packet (IFF_VNET_HDR).
    pub vnet_hdr: bool,
    /// Checksums left to squall, and TCP segmentation (TSO4/TSO6).
    pub tso: bool,
    /// UDP segmentation (USO4/USO6).
    pub uso: bool,
}

/// A TUN device (IFF_TUN | IFF_NO_PI: bare IP packets) in a host's
/// namespace, opened non-blocking; with IFF_VNET_HDR and offloads when
/// asked and the kernel has them.
pub struct TunDevice {
    file: File,
    label: String,
    /// `None`: plain reads and writes, one packet each.
    vnet: Option<VnetIo>,
    offloads: TunOffloads,
    rx: Vec<u8>,
    /// The device's name, and the namespace it is in (`None`: squall's
    /// own), to read its counters.
    name: String,
    netns: Option<NetNs>,
}

impl TunDevice {
    /// Creates the TUN device [`TUN_NAME`] inside `ns`, gives it the
    /// host's `addresses`, brings it up and routes each of `peers` of a
    /// family the host has through it ([`address_device`]). A host without
    /// an IPv6 address gets IPv6 switched off in its namespace, so the
    /// device carries only its IPv4 traffic. With `offloads`, the host's
    /// stack may hand squall TCP (and UDP_SEGMENT) flights of up to 64 KB
    /// and leave checksums to it; squall cuts them into wire-sized packets
    /// before the model sees them.
    pub fn create(
        ns: &NetNs,
        addresses: Addresses,
        peers: &[IpAddr],
        mtu: u32,
        offloads: bool,
    ) -> Result<Self, EmuError> {
        let joined = ns.is_joined();
        let (file, offloads) = ns.run_in(|| {
            // A namespace squall did not make keeps its IPv6: only the
            // device's is switched off, before it is up (it goes with it).
            let keys: &[&str] = if joined || addresses.v6.is_some() { &[] } else { &["all", "default"] };
            for key in keys {
                let path = format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6");
                // A kernel without IPv6 has no such file: nothing to switch off.
                let _ = std::fs::write(path, "1");
            }
            let opened = open_tun(TUN_NAME, offloads)?;
            if joined && addresses.v6.is_none() {
                let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{TUN_NAME}/disable_ipv6"), "1");
            }
            Ok(opened)
        })?;
        address_device(ns, TUN_NAME, addresses, peers, &["mtu", &mtu.to_string()])?;
        Ok(TunDevice {
            file,
            label: format!("{}/{TUN_NAME}", ns.name()),
            vnet: offloads.vnet_hdr.then(|| VnetIo::new(Framing::Ip)),
            offloads,
            rx: vec![0; 65_536],
            name: TUN_NAME.to_string(),
            netns: Some(ns.clone()),
        })
    }

    /// Creates the TUN device `name` in squall's own (the root) namespace,
    /// for the outside host ([`crate::engine::uplink`]): no address, up
    /// with `mtu`. Without `ipv6` IPv6 is off on it (the kernel would send
    /// it router solicitations); with it, IPv6 is on but, as on a host's
    /// device ([`address_device`]), it makes no link-local address, sends
    /// no router solicitation and takes no router advertisement. The
    /// kernel removes it, with its routes, when squall closes it or dies.
    pub fn create_root(name: &str, mtu: u32, offloads: bool, ipv6: bool) -> Result<Self, EmuError> {
        let (file, offloads) = open_tun(name, offloads)?;
        if ipv6 {
            for (key, value) in [
                ("addr_gen_mode", "1"),
                ("accept_dad", "0"),
                ("router_solicitations", "0"),
                ("accept_ra", "0"),
                ("disable_ipv6", "0"),
            ] {
                let path = format!("/proc/sys/net/ipv6/conf/{name}/{key}");
                std::fs::write(&path, value).context(|| format!("write {value} to {path}"))?;
            }
        } else {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
        }
        crate::sys::netns::ip(&["link", "set", name, "mtu", &mtu.to_string(), "up"])?;
        Ok(TunDevice {
            file,
            label: format!("root/{name}"),
            vnet: offloads.vnet_hdr.then(|| VnetIo::new(Framing::Ip)),
            offloads,
            rx: vec![0; 65_536],
            name: name.to_string(),
            netns: None,
        })
    }

    pub fn offloads(&self) -> TunOffloads {
        self.offloads
    }
}

/// Gives device `dev` in `ns` the host's `addresses`, brings it up with
/// `link` (extra `ip link set` words: `mtu 1500`) and routes each of
/// `peers` of a family the host has through it, from the host's address
/// of that family (/32 and /128 routes).
///
/// An IPv6 address is added without duplicate address detection
/// (`nodad`: the device's link has no other node, RFC 4862 §5.4), and the
/// device is set, before it is up, to make no link-local address
/// (`addr_gen_mode` 1), send no router solicitations and accept no router
/// advertisements (ip-sysctl.rst): the host's own link-local traffic
/// would have nowhere to go. The device is point-to-point to squall
/// (TUN: no link-layer header; a veth: NOARP), so the kernel resolves no
/// neighbour (ndisc.c `ndisc_constructor`: NUD_NOARP): no neighbour
/// discovery crosses the path, as no ARP does for IPv4.
pub(crate) fn address_device(
    ns: &NetNs,
    dev: &str,
    addresses: Addresses,
    peers: &[IpAddr],
    link: &[&str],
) -> Result<(), EmuError> {
    if addresses.v6.is_some() {
        ns.run_in(|| {
            for (key, value) in [
                ("disable_ipv6", "0"),
                ("addr_gen_mode", "1"),
                ("accept_dad", "0"),
                ("router_solicitations", "0"),
                ("accept_ra", "0"),
            ] {
                let path = format!("/proc/sys/net/ipv6/conf/{dev}/{key}");
                std::fs::write(&path, value).context(|| format!("{}: write {value} to {path}", ns.name()))?;
            }
            Ok(())
        })?;
    }
    if let Some(v4) = addresses.v4 {
        ns.ip(&["addr", "add", &format!("{v4}/32"), "dev", dev])?;
    }
    if let Some(v6) = addresses.v6 {
        ns.ip(&["-6", "addr", "add", &format!("{v6}/128"), "dev", dev, "nodad"])?;
    }
    let mut up = vec!["link", "set", dev];
    up.extend_from_slice(link);
    up.push("up");
    ns.ip(&up)?;
    for peer in peers {
        let Some(src) = addresses.like(*peer) else { continue };
        let (family, dst) = match peer {
            IpAddr::V4(p) => ("-4", format!("{p}/32")),
            IpAddr::V6(p) => ("-6", format!("{p}/128")),
        };
        ns.ip(&[family, "route", "add", &dst, "dev", dev, "src", &src.to_string()])?;
    }
    Ok(())
}

/// Opens TUN device `name`; with `offloads`, asks for IFF_VNET_HDR and
/// then for as many offloads as the kernel grants (all, then all but UDP
/// segmentation, then none).
fn open_tun(name: &str, offloads: bool) -> Result<(File, TunOffloads), EmuError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .context(|| "open /dev/net/tun".to_string())?;
    let mut req = crate::sys::interface::ifreq_named(name.as_bytes());
    let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
    if offloads {
        flags |= libc::IFF_VNET_HDR;
    }
    req.ifr_ifru.ifru_flags = flags as libc::c_short;
    // SAFETY: the fd is a TUN control fd and `req` a valid ifreq.
    unsafe { tun_set_iff(file.as_raw_fd(), &req) }.context(|| format!("TUNSETIFF {name}"))?;
    let mut got = TunOffloads { vnet_hdr: offloads, ..TunOffloads::default() };
    if offloads {
        let tso = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
        for (mask, uso) in [(tso | TUN_F_USO4 | TUN_F_USO6, true), (tso, false)] {
            // SAFETY: TUNSETOFFLOAD takes the flags by value.
            if unsafe { tun_set_offload(file.as_raw_fd(), mask as libc::c_int) }.is_ok() {
                got.tso = true;
                got.uso = uso;
                break;
            }
        }
    }
    Ok((file, got))
}

impl PacketDevice for TunDevice {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    fn recv(&mut self) -> io::Result<Option<Payload>> {
        let Some(vnet) = self.vnet.as_mut() else {
            return match self.file.read(&mut self.rx) {
                Ok(n) => Ok(Some(self.rx[..n].to_vec().into())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e) => Err(e),
            };
        };
        vnet.same_read = !vnet.pending.is_empty();
        if !vnet.same_read {
            match self.file.read(&mut vnet.rx) {
                Ok(n) => vnet.cut(n, &self.label)?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(vnet.pending.pop_front())
    }

    fn send(&mut self, packet: &[u8]) -> io::Result<()> {
        if self.vnet.is_some() {
            VnetIo::send(self.file.as_fd(), packet)
        } else {
            // SAFETY: `packet` is readable for its length during the call.
            let n = unsafe { libc::write(self.file.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
            if n < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
        }
    }

    fn same_read(&self) -> bool {
        self.vnet.as_ref().is_some_and(|v| v.same_read)
    }

    fn buffered(&self) -> bool {
        self.vnet.as_ref().is_some_and(|v| !v.pending.is_empty())
    }

    fn mid_read(&self) -> bool {
        self.buffered()
    }

    fn offload_counts(&self) -> OffloadCounts {
        self.vnet.as_ref().map_or_else(OffloadCounts::default, |v| v.counts)
    }

    /// The device's transmit drops (towards squall); 0, with a warning, if
    /// they cannot be read.
    fn kernel_dropped(&mut self) -> u64 {
        tun_dropped(self.netns.as_ref(), &self.name).unwrap_or_else(|e| {
            tracing::warn!("squall emu: {}: packets dropped before squall unknown: {e}", self.label);
            0
        })
    }

    fn send_batch(&mut self, packets: &[&Payload], written: &mut [bool]) {
        match &mut self.vnet {
            Some(vnet) => vnet.send_batch(self.file.as_fd(), packets, written, false),
            None => send_each(self, packets, written),
        }
    }

    fn write_error(&mut self) -> Option<io::Error> {
        self.vnet.as_mut().and_then(|v| v.write_error.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

    #[test]
    fn the_transmit_drops_of_the_named_interface_are_read_from_proc_net_dev() {
        // /proc/net/dev as Linux 6.18 writes it, with made-up counters.
        let table = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
squall0: 9120000   6080    0    0    0     0          0         0 45600000   30400    0 17421    0     0       0          0
";
        assert_eq!(transmit_dropped(table, "squall0"), Some(17421));
        assert_eq!(transmit_dropped(table, "lo"), Some(0));
        assert_eq!(transmit_dropped(table, "eth0"), None);
    }

    /// A connected pair of datagram sockets: what squall writes on the
    /// first arrives on the second, one datagram per message.
    fn socket_pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: socketpair fills the two descriptors it is given.
        assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors are new and owned by nobody else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// Every datagram waiting on `rx`.
    fn datagrams(rx: &OwnedFd) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 70_000];
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if n < 0 {
                return got;
            }
            got.push(buf[..n as usize].to_vec());
        }
    }

    /// A TCP super-frame of `data` bytes with a 1000-byte MSS, as a packet
    /// socket reads it: the virtio_net_hdr, then the Ethernet frame
    /// (sequence number 1000, IPv4 identifier 7, PSH on).
    fn tcp_super_frame(data: usize) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 0, 0, 7, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f[16..18].copy_from_slice(&((40 + data) as u16).to_be_bytes());
        f.extend_from_slice(&[0x13, 0x88, 0, 0x50, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend((0..data).map(|i| (i % 251) as u8));
        let hdr = VnetHdr { flags: 1, gso_type: 1, hdr_len: 54, gso_size: 1000, csum_start: 34, csum_offset: 16 };
        let mut read = hdr.to_bytes().to_vec();
        read.extend(f);
        read
    }

    /// `read` (a virtio_net_hdr and a frame) as a packet socket's device
    /// reads it, and the packets it hands out.
    fn read_by_socket(read: &[u8]) -> (VnetIo, Vec<Payload>) {
        let mut io = VnetIo::new(Framing::Ethernet);
        io.rx[..read.len()].copy_from_slice(read);
        io.cut(read.len(), "test").unwrap();
        let segments = io.pending.drain(..).collect();
        (io, segments)
    }

    /// A small super-frame (a copy of its own) and a large one (the
    /// buffer it was read into, given back to the pool when its last
    /// segment is gone).
    #[test]
    fn a_super_frame_whose_segments_leave_together_is_written_as_it_was_read() {
        for data in [3500, 40_000] {
            let read = tcp_super_frame(data);
            let (mut io, segments) = read_by_socket(&read);
            // 1000 bytes a segment, as split cuts them; the third starts at
            // sequence number 1000 + 2000 and its IP packet has 20 + 20 +
            // 1000 bytes, the last 20 + 20 + what is left.
            let cut =
                offload::split(&VnetHdr::parse(&read).unwrap(), &read[VNET_HDR_LEN..], Framing::Ethernet).unwrap();
            let count = data.div_ceil(1000);
            assert_eq!(segments.len(), count);
            assert!(segments.iter().all(|p| matches!(p, Payload::Segment(_))), "segments stay uncut");
            for (p, c) in segments.iter().zip(&cut) {
                assert_eq!(&p.bytes()[..], &c[..]);
            }
            let third = segments[2].bytes();
            assert_eq!(u32::from_be_bytes(third[38..42].try_into().unwrap()), 3000);
            assert_eq!(u16::from_be_bytes([third[16], third[17]]), 1040);
            assert_eq!(segments[count - 1].len(), 14 + 40 + data - (count - 1) * 1000);
            assert_eq!((io.counts.super_packets_read, io.counts.segments_cut), (1, count as u64));

            // All of them in order: one write, the header and frame as read.
            let (tx, rx) = socket_pair();
            let mut written = vec![false; count];
            io.send_batch(tx.as_fd(), &segments.iter().collect::<Vec<_>>(), &mut written, true);
            assert!(written.iter().all(|w| *w));
            assert_eq!(datagrams(&rx), vec![read.clone()]);
            assert_eq!(io.counts.whole_writes, 1);

            // The second lost: the first alone (the third does not follow
            // it), the rest joined as GRO would, which cut again gives back
            // the segments.
            let mut rest: Vec<&Payload> = vec![&segments[0]];
            rest.extend(&segments[2..]);
            let mut written = vec![false; rest.len()];
            io.send_batch(tx.as_fd(), &rest, &mut written, true);
            assert!(written.iter().all(|w| *w));
            let got = datagrams(&rx);
            assert_eq!(got.len(), 2);
            assert_eq!(got[0][..VNET_HDR_LEN], [0; VNET_HDR_LEN], "a lone segment asks no offload");
            assert_eq!(&got[0][VNET_HDR_LEN..], &cut[0][..]);
            let joined = VnetHdr::parse(&got[1]).unwrap();
            let again = offload::split(&joined, &got[1][VNET_HDR_LEN..], Framing::Ethernet).unwrap();
            assert_eq!(again, cut[2..].to_vec());
            assert_eq!((io.counts.whole_writes, io.counts.joined_writes), (1, 1));

            // Only a large one kept its read buffer, which comes back.
            drop((third, rest));
            drop(segments);
            let kept = io.pool.free.lock().unwrap().len();
            assert_eq!(kept, usize::from(data >= KEEP_READ_BUFFER), "{data} bytes: {kept} buffer(s) back");
        }
    }

    /// Some of a super-frame's segments due together (a stage with a rate
    /// limit lets a flight out a few at a time) go in the writes that
    /// cutting them and joining them as GRO does gives ([`offload::runs`],
    /// [`offload::coalesce`]), byte for byte, without cutting them: every
    /// run of consecutive segments, with flags that GRO joins (PSH, FIN
    /// on the last), that end runs (ECE) or that only the first segment
    /// carries (CWR).
    #[test]
    fn some_segments_of_a_super_frame_go_as_gro_joins_them_once_cut() {
        for flags in [0x18, 0x19, 0x50, 0x90] {
            let mut read = tcp_super_frame(10_500);
            read[VNET_HDR_LEN + 47] = flags;
            let hdr = VnetHdr::parse(&read).unwrap();
            let cut = offload::split(&hdr, &read[VNET_HDR_LEN..], Framing::Ethernet).unwrap();
            let (mut io, segments) = read_by_socket(&read);
            assert_eq!(segments.len(), 11);
            let (tx, rx) = socket_pair();
            for start in 0..11 {
                for end in start + 1..=11 {
                    let mut written = vec![false; end - start];
                    io.send_batch(tx.as_fd(), &segments[start..end].iter().collect::<Vec<_>>(), &mut written, true);
                    assert!(written.iter().all(|w| *w));
                    let cut: Vec<&[u8]> = cut[start..end].iter().map(|c| &c[..]).collect();
                    let expected: Vec<Vec<u8>> = if end - start == 11 {
                        vec![read.clone()]
                    } else {
                        offload::runs(&cut, Framing::Ethernet)
                            .into_iter()
                            .map(|run| match offload::coalesce(&cut[run.clone()], Framing::Ethernet) {
                                Some((hdr, frame)) => [&hdr.to_bytes()[..], &frame].concat(),
                                None => [&[0; VNET_HDR_LEN][..], cut[run.start]].concat(),
                            })
                            .collect()
                    };
                    assert_eq!(datagrams(&rx), expected, "flags {flags:#x}, segments {start}..{end}");
                }
            }
        }
    }

    /// Bytes after the IP packet (which the model never saw, and which a
    /// kernel would carry as data) keep a super-frame from being written
    /// as it was read: its segments are joined instead, without them.
    #[test]
    fn a_super_frame_with_bytes_beyond_its_ip_packet_is_not_written_whole() {
        let mut read = tcp_super_frame(3500);
        read.extend([0xee; 100]);
        let (mut io, segments) = read_by_socket(&read);
        assert_eq!(segments.len(), 4);
        let (tx, rx) = socket_pair();
        let mut written = [false; 4];
        io.send_batch(tx.as_fd(), &segments.iter().collect::<Vec<_>>(), &mut written, true);
        assert_eq!(written, [true; 4]);
        let got = datagrams(&rx);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), read.len() - 100, "the bytes beyond the IP packet are not sent");
        let cut = offload::split(&VnetHdr::parse(&read).unwrap(), &read[VNET_HDR_LEN..], Framing::Ethernet).unwrap();
        let again = offload::split(&VnetHdr::parse(&got[0]).unwrap(), &got[0][VNET_HDR_LEN..], Framing::Ethernet);
        assert_eq!(again.unwrap(), cut);
        assert_eq!((io.counts.whole_writes, io.counts.joined_writes), (0, 1));
    }

    #[test]
    fn a_socket_takes_a_batch_in_order_each_write_after_its_header() {
        let (tx, rx) = socket_pair();
        let mut io = VnetIo::new(Framing::Ip);
        // Three packets no GRO rule joins (not TCP): three datagrams.
        let packets: Vec<Vec<u8>> = (0..3u8).map(|i| vec![0x45, i, 1, 2, 3, 4 + i]).collect();
        let payloads: Vec<Payload> = packets.iter().map(|p| p.clone().into()).collect();
        let refs: Vec<&Payload> = payloads.iter().collect();
        let mut written = [false; 3];
        io.send_batch(tx.as_fd(), &refs, &mut written, true);
        assert_eq!(written, [true; 3]);
        for p in &packets {
            let mut buf = [0u8; 64];
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            assert_eq!(n as usize, VNET_HDR_LEN + p.len());
            assert_eq!(&buf[..VNET_HDR_LEN], &[0; VNET_HDR_LEN], "an all-zero header first");
            assert_eq!(&buf[VNET_HDR_LEN..n as usize], &p[..]);
        }
    }

    #[test]
    fn a_message_the_socket_refuses_fails_alone_and_the_rest_are_sent() {
        let (tx, rx) = socket_pair();
        // The receiver takes datagrams of at most its buffer: one of 300 KB
        // is refused (EMSGSIZE beyond the socket's limit), the others not.
        let big = vec![0x45; 300_000];
        let small = [vec![0x45, 1], vec![0x45, 2]];
        let payloads: Vec<Payload> = vec![small[0].clone().into(), big.into(), small[1].clone().into()];
        let refs: Vec<&Payload> = payloads.iter().collect();
        let mut written = [false; 3];
        VnetIo::new(Framing::Ip).send_batch(tx.as_fd(), &refs, &mut written, true);
        assert_eq!(written, [true, false, true]);
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if n <= 0 {
                break;
            }
            got.push(buf[VNET_HDR_LEN + 1]);
        }
        assert_eq!(got, [1, 2]);
    }
}
