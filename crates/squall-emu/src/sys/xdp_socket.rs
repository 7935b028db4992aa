//! An interface read and written through an AF_XDP socket
//! (Documentation/networking/af_xdp.rst) in copy mode: the interface's XDP
//! hook ([`crate::sys::xdp_redirect`]) hands each arriving frame to the socket,
//! which the kernel copies into a frame of memory shared with squall (the
//! UMEM) and announces on the receive ring; squall writes frames into the
//! UMEM and puts them on the transmit ring, and one sendto(2) sends what
//! is there. No socket buffer is built on the way in, and no system call
//! is made per frame either way.
//!
//! Frames are whole Ethernet frames of at most [`FRAME`] bytes: the XDP
//! hook of a veth without multi-buffer support caps its peer's MTU and
//! turns its GSO off, so no super-frame ever reaches the socket.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use crate::error::EmuError;
use crate::sys::device::PacketDevice;
use crate::sys::xdp_redirect::{META_LEN, XdpRedirect};
use crate::sys::xsk::{Desc, Sizes, Xsk};
use crate::wire::offload::Framing;

/// Bytes of one UMEM frame: a page, the largest the kernel takes in
/// aligned mode.
pub const FRAME: usize = 4096;
/// The longest frame received into one: the kernel keeps
/// XDP_PACKET_HEADROOM (256) bytes of it (net/xdp/xsk.c, xsk_rcv_check).
pub const MAX_FRAME: usize = FRAME - 256;
/// Frames given to the kernel to receive into (the fill ring's size).
const RX_FRAMES: u32 = 2048;
/// Frames for transmitting (queue 0 alone transmits).
const TX_FRAMES: u32 = 2048;
/// Most frames put on the transmit ring by one sendto(2) the kernel takes
/// (net/xdp/xsk.c: TX_BATCH_SIZE).
const KERNEL_TX_BATCH: usize = 32;

/// Anonymous memory mapped for the UMEM, unmapped when dropped.
struct Area {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping belongs to the Area alone and moves with it.
unsafe impl Send for Area {}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping mmap returned.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// One AF_XDP socket per receive queue of one interface (a socket takes
/// the frames of one queue only, and the kernel spreads a veth's frames
/// over its queues by the sending CPU), in copy mode, each with a UMEM of
/// its own; frames are sent through the first.
pub struct XdpSocket {
    label: String,
    // Fields drop in order: the program first (no more frames for the
    // sockets), then the sockets.
    _redirect: XdpRedirect,
    queues: Vec<Queue>,
    /// The queue read next.
    next: usize,
    /// An epoll instance that is readable when a queue's socket is.
    epoll: nix::sys::epoll::Epoll,
    /// A datagram socket of the interface's namespace, to ask it whether
    /// the interface is up (an AF_XDP socket takes no interface ioctls).
    flags: OwnedFd,
    /// What the last send found of the interface: frames are refused
    /// while it is down or gone.
    link: Link,
    /// The first error a send met since the data plane last asked
    /// ([`PacketDevice::write_error`]).
    error: Option<io::Error>,
    /// The last error a send met, said at the end with `stranded`.
    last_error: Option<io::Error>,
    /// Frames a failed send left on the transmit ring, counted as
    /// written: the kernel sends them once the interface is up again.
    stranded: u64,
    /// The transmit ring's index up to which frames were counted in
    /// `stranded` (each counted once, whatever failures follow).
    stranded_to: Option<u32>,
    /// How long ago the frame last read reached the interface's XDP hook.
    age: Option<std::time::Duration>,
    /// The interface's transmit drops: what it dropped of squall's writes
    /// (a frame sent without a carrier, say).
    transmit_drops: Option<crate::sys::device::TransmitDrops>,
}

/// The interface as sending found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Up,
    /// Down, or without its carrier: asked again before each send.
    Down,
    /// Removed: the socket is bound to nothing for good (a new interface
    /// of the same name is another device).
    Gone,
}

/// An AF_XDP socket on one receive queue.
struct Queue {
    // The socket drops before its UMEM's memory.
    xsk: Xsk,
    area: Area,
    /// Frames free for transmitting (their UMEM offsets).
    free_tx: Vec<u64>,
    /// Frames read, to go back to the fill ring.
    refill: Vec<u64>,
}

/// CLOCK_MONOTONIC now, nanoseconds: bpf_ktime_get_ns's clock (None if
/// it cannot be read).
fn monotonic_ns() -> Option<u64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    Some(u64::try_from(t.tv_sec()).ok()? * 1_000_000_000 + u64::try_from(t.tv_nsec()).ok()?)
}

/// Most receive queues a socket is bound to.
const MAX_QUEUES: u32 = 64;

/// The MTU of interface `name` in this thread's namespace (SIOCGIFMTU).
fn interface_mtu(name: &str) -> io::Result<u32> {
    let req = crate::sys::interface::interface_ioctl(name, libc::SIOCGIFMTU, |_| {})?;
    // SAFETY: SIOCGIFMTU wrote the mtu member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
}

impl XdpSocket {
    /// Binds an AF_XDP socket to each receive queue of interface `name`
    /// and attaches the redirecting XDP program to it.
    pub fn open(name: &str) -> Result<XdpSocket, EmuError> {
        let index = crate::sys::interface::index(name)?;
        let mtu = interface_mtu(name).map_err(|e| EmuError::io(format!("interface {name}: read its MTU"), e))?;
        // An Ethernet header and two VLAN tags beside the MTU's bytes.
        if mtu as usize + 22 > MAX_FRAME {
            return Err(EmuError::Interface {
                name: name.into(),
                message: format!(
                    "MTU {mtu} is too large for AF_XDP frames of {MAX_FRAME} bytes; at most {}",
                    MAX_FRAME - 22
                ),
            });
        }
        let failed = |queue: u32, e: io::Error| {
            EmuError::io(
                format!(
                    "interface {name}: AF_XDP socket on queue {queue} (needs Linux 5.9+, CAP_NET_ADMIN, and locked \
                     memory for {} MB a queue: ulimit -l)",
                    (FRAME * (RX_FRAMES + TX_FRAMES) as usize) >> 20
                ),
                e,
            )
        };
        // A socket binds to each queue there is (sysfs shows only the
        // namespace that mounted it, so the kernel is asked instead: the
        // bind to a queue past the last fails with EINVAL).
        let mut queues = vec![Queue::open(index, 0).map_err(|e| failed(0, e))?];
        while (queues.len() as u32) < MAX_QUEUES {
            let q = queues.len() as u32;
            match Queue::open(index, q) {
                Ok(queue) => queues.push(queue),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                Err(e) => return Err(failed(q, e)),
            }
        }
        let redirect = XdpRedirect::attach(index, queues.len() as u32).map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::ERANGE) {
                " (a veth takes an XDP program only with an MTU up to about 3500 bytes)"
            } else {
                ""
            };
            EmuError::io(format!("interface {name}: attach the XDP program{hint}"), e)
        })?;
        let epoll = nix::sys::epoll::Epoll::new(nix::sys::epoll::EpollCreateFlags::EPOLL_CLOEXEC)
            .map_err(|e| EmuError::io(format!("interface {name}: epoll"), e.into()))?;
        for (i, q) in queues.iter().enumerate() {
            redirect
                .insert(i as u32, q.xsk.fd().as_raw_fd())
                .map_err(|e| EmuError::io(format!("interface {name}: put the socket in the XSKMAP"), e))?;
            epoll
                .add(q.xsk.fd(), nix::sys::epoll::EpollEvent::new(nix::sys::epoll::EpollFlags::EPOLLIN, i as u64))
                .map_err(|e| EmuError::io(format!("interface {name}: epoll"), e.into()))?;
        }
        let flags = crate::sys::interface::datagram_socket()
            .map_err(|e| EmuError::io(format!("interface {name}: a socket for its flags"), e))?;
        Ok(XdpSocket {
            label: name.to_string(),
            _redirect: redirect,
            queues,
            next: 0,
            epoll,
            flags,
            link: Link::Up,
            error: None,
            last_error: None,
            stranded: 0,
            stranded_to: None,
            age: None,
            transmit_drops: crate::sys::device::TransmitDrops::open(name),
        })
    }
}

impl Queue {
    /// An AF_XDP socket bound to receive queue `queue` of interface
    /// `index`; queue 0's with a transmit ring and frames for it.
    fn open(index: u32, queue: u32) -> io::Result<Queue> {
        let tx_frames = if queue == 0 { TX_FRAMES } else { 0 };
        let len = FRAME * (RX_FRAMES + tx_frames) as usize;
        // SAFETY: a new private anonymous mapping.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let area = Area { base: NonNull::new(base.cast()).expect("mmap gave a non-null mapping"), len };
        // SAFETY: advice on the mapping just made.
        if unsafe { libc::madvise(area.base.as_ptr().cast(), len, libc::MADV_DONTFORK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let sizes = Sizes { rx: RX_FRAMES, tx: tx_frames, fill: RX_FRAMES, completion: TX_FRAMES };
        // SAFETY: the area is page aligned, `len` long, and dropped after
        // the socket (field order of Queue).
        let mut xsk = unsafe { Xsk::open(area.base, len, FRAME as u32, &sizes, index, queue) }?;
        for i in 0..u64::from(RX_FRAMES) {
            xsk.fill.push(i * FRAME as u64);
        }
        xsk.fill.publish();
        let free_tx = (u64::from(RX_FRAMES)..u64::from(RX_FRAMES + tx_frames)).map(|i| i * FRAME as u64).collect();
        Ok(Queue { xsk, area, free_tx, refill: Vec::with_capacity(RX_FRAMES as usize) })
    }

    /// Gives the frames read back to the kernel to receive into.
    fn give_back(&mut self) {
        if self.refill.is_empty() {
            return;
        }
        let mut n = 0;
        while n < self.refill.len() && self.xsk.fill.push(self.refill[n]) {
            n += 1;
        }
        self.xsk.fill.publish();
        self.refill.drain(..n);
    }

    /// Takes back the frames the kernel has sent.
    fn reclaim(&mut self) {
        while let Some(addr) = self.xsk.completion.pop() {
            self.free_tx.push(addr & !(FRAME as u64 - 1));
        }
        self.xsk.completion.release();
    }

    /// The next frame on the receive ring, copied out from byte `skip` on
    /// (shorter frames are handed out empty), and the CLOCK_MONOTONIC
    /// time the XDP program stamped it with, if it did.
    fn recv(&mut self, skip: usize) -> Option<(Vec<u8>, Option<u64>)> {
        let Some(desc) = self.xsk.rx.pop() else {
            self.give_back();
            return None;
        };
        self.xsk.rx.release();
        let stamp = self.take_stamp(desc.addr);
        let whole = self.bytes(desc.addr, desc.len);
        let mut frame = whole.get(skip..).unwrap_or_default().to_vec();
        // A sender in a namespace of this machine may leave its checksums
        // for the device; no virtio_net_hdr says so here.
        let framing = if skip == 0 { Framing::Ethernet } else { Framing::Ip };
        crate::wire::offload::complete_partial_checksum(&mut frame, framing);
        self.refill.push(desc.addr & !(FRAME as u64 - 1));
        if self.refill.len() >= 64 {
            self.give_back();
        }
        Some((frame, stamp))
    }

    /// The receive time in the metadata before the frame at `addr`,
    /// cleared, so that the frame's next use without one reads none (0:
    /// none; the kernel copies metadata only when the hook made some).
    fn take_stamp(&mut self, addr: u64) -> Option<u64> {
        let at = usize::try_from(addr).ok()?;
        if at % FRAME < META_LEN || at > self.area.len {
            return None;
        }
        // SAFETY: the META_LEN bytes before the frame, inside its UMEM
        // frame (checked above), which the kernel wrote before it put the
        // descriptor on the receive ring and will not write again before
        // the frame is back on the fill ring.
        let stamp = unsafe {
            let p = self.area.base.as_ptr().add(at - META_LEN).cast::<u64>();
            let stamp = p.read_unaligned();
            p.write_unaligned(0);
            stamp
        };
        (stamp != 0).then_some(stamp)
    }

    fn bytes(&self, addr: u64, len: u32) -> &[u8] {
        let end = (addr as usize).saturating_add(len as usize).min(self.area.len);
        let start = (addr as usize).min(end);
        // SAFETY: in bounds (clamped); the kernel wrote the frame before it
        // put its descriptor on the receive ring, and will not write it
        // again before it is back on the fill ring.
        unsafe { std::slice::from_raw_parts(self.area.base.as_ptr().add(start), end - start) }
    }

    /// Puts `frames` on the transmit ring, each after `header` if given
    /// (its EtherType set from the packet's IP version), and has the kernel
    /// send them; `written[i]`: whether frame `i` was put on the ring; how
    /// many times the kernel said EBUSY ([`Xsk::kick`]). An error of the
    /// send leaves what the kernel did not take on the ring.
    fn send_batch(&mut self, frames: &[&[u8]], written: &mut [bool], header: Option<&[u8; 14]>) -> io::Result<u32> {
        written.fill(false);
        self.reclaim();
        let Some(tx) = self.xsk.tx.as_mut() else { return Ok(0) };
        let extra = header.map_or(0, |h| h.len());
        let mut queued = 0;
        for (frame, w) in frames.iter().zip(written.iter_mut()) {
            // An empty descriptor is refused by the kernel without a
            // completion: its frame would never come back.
            if frame.is_empty() || frame.len() + extra > FRAME || tx.free() == 0 {
                continue;
            }
            let Some(addr) = self.free_tx.pop() else { break };
            // SAFETY: a free frame of the UMEM (FRAME bytes, checked above),
            // not the kernel's until its descriptor is published below.
            unsafe {
                let at = self.area.base.as_ptr().add(addr as usize);
                if let Some(h) = header {
                    std::ptr::copy_nonoverlapping(h.as_ptr(), at, 12);
                    let ethertype: u16 = if frame.first().is_some_and(|b| b >> 4 == 6) { 0x86dd } else { 0x0800 };
                    std::ptr::copy_nonoverlapping(ethertype.to_be_bytes().as_ptr(), at.add(12), 2);
                }
                std::ptr::copy_nonoverlapping(frame.as_ptr(), at.add(extra), frame.len());
            }
            *w = tx.push(Desc { addr, len: (frame.len() + extra) as u32, options: 0 });
            queued += 1;
        }
        tx.publish();
        // Copy mode sends in the system call, 32 frames each.
        self.xsk.kick(queued / KERNEL_TX_BATCH + 2)
    }

    /// Frames on the transmit ring that the kernel has not taken.
    fn unsent(&self) -> u32 {
        self.xsk.tx.as_ref().map_or(0, |t| t.pending())
    }
}

impl XdpSocket {
    /// The next frame read, from byte `skip` on.
    pub fn recv_skipping(&mut self, skip: usize) -> Option<Vec<u8>> {
        // Frames a send left on the transmit ring go now, or once the
        // interface is back.
        if self.queues[0].unsent() > 0 && self.sendable() {
            let kicked = self.queues[0].xsk.kick(2);
            self.after_kick(kicked);
        }
        // One frame from each queue in turn, so that none waits behind a
        // busy one.
        for _ in 0..self.queues.len() {
            let q = self.next;
            self.next = (q + 1) % self.queues.len();
            if let Some((frame, stamp)) = self.queues[q].recv(skip) {
                self.age = stamp.and_then(|t| monotonic_ns()?.checked_sub(t)).map(std::time::Duration::from_nanos);
                return Some(frame);
            }
        }
        None
    }

    /// How long ago the frame last read reached the interface (its XDP
    /// hook), where the hook stamped it.
    pub fn last_age(&self) -> Option<std::time::Duration> {
        self.age
    }

    /// Sends each of `packets` after `header` (its EtherType set from the
    /// packet's IP version).
    pub fn send_framed(&mut self, packets: &[&[u8]], written: &mut [bool], header: &[u8; 14]) {
        self.send_frames(packets, written, Some(header));
    }

    /// Sends `frames` (after `header` if given) unless the interface is
    /// down or gone: then none is written, and the error says why.
    fn send_frames(&mut self, frames: &[&[u8]], written: &mut [bool], header: Option<&[u8; 14]>) {
        if !self.sendable() {
            written.fill(false);
            let errno = if self.link == Link::Gone { libc::ENXIO } else { libc::ENETDOWN };
            self.error.get_or_insert_with(|| io::Error::from_raw_os_error(errno));
            return;
        }
        let kicked = self.queues[0].send_batch(frames, written, header);
        self.after_kick(kicked);
    }

    /// What a send's system calls said: an error, or EBUSY, which the
    /// kernel says both when the device is busy and when it dropped a
    /// frame for want of a carrier; only the interface's flags tell
    /// which.
    fn after_kick(&mut self, kicked: io::Result<u32>) {
        match kicked {
            Err(e) => self.send_failed(e),
            Ok(busy) if busy > 0 && crate::sys::interface::is_running(&self.flags, &self.label).is_ok_and(|r| !r) => {
                self.send_failed(io::Error::new(
                    io::ErrorKind::NetworkDown,
                    format!("no carrier; the kernel dropped up to {busy} frame(s) given to it, counted as written"),
                ));
            }
            Ok(_) => {}
        }
    }

    /// Whether frames may be sent: the interface was up at the last send,
    /// or is up again now (with its carrier), which clears what was said
    /// while it was not.
    fn sendable(&mut self) -> bool {
        match self.link {
            Link::Up => true,
            Link::Gone => false,
            Link::Down => {
                let back = crate::sys::interface::is_running(&self.flags, &self.label).unwrap_or(false);
                if back {
                    self.link = Link::Up;
                    self.error = None;
                }
                back
            }
        }
    }

    /// A send failed with `e` (the interface went down, lost its carrier
    /// or was removed): what the kernel did not take stays on the
    /// transmit ring and leaves once the interface is up again (an AF_XDP
    /// socket cannot take back what it put there), and frames are refused
    /// until then.
    fn send_failed(&mut self, e: io::Error) {
        self.link = if e.raw_os_error() == Some(libc::ENXIO) { Link::Gone } else { Link::Down };
        let Some((produced, taken)) = self.queues[0].xsk.tx.as_ref().map(|t| t.indices()) else { return };
        // Count only what an earlier failure has not (the ring is FIFO:
        // frames before `stranded_to` that are still there were counted).
        let from = match self.stranded_to {
            Some(to) if to.wrapping_sub(taken) <= produced.wrapping_sub(taken) => to,
            _ => taken,
        };
        let new = produced.wrapping_sub(from);
        self.stranded += u64::from(new);
        self.stranded_to = Some(produced);
        let (when, until) = match self.link {
            Link::Gone => ("never leave", "from now on"),
            _ => ("leave when it is up again, late", "until then"),
        };
        tracing::warn!(
            "squall emu: {}: sending failed ({e}); {new} frame(s) already on the transmit ring {when} (counted as \
             written), and frames for it are refused {until}",
            self.label
        );
        self.error.get_or_insert(
            e.raw_os_error().map_or_else(|| io::Error::new(e.kind(), e.to_string()), io::Error::from_raw_os_error),
        );
        self.last_error = Some(e);
    }

    /// Frames the kernel dropped before squall read them: a receive ring
    /// was full, or no frame was free to receive into (XDP_STATISTICS).
    pub fn dropped(&self) -> u64 {
        self.queues.iter().filter_map(|q| q.xsk.statistics().ok()).map(|s| s.rx_dropped + s.rx_ring_full).sum()
    }
}

impl Drop for XdpSocket {
    fn drop(&mut self) {
        if let Some(e) = self.last_error.as_ref().filter(|_| self.stranded > 0) {
            let left = self.queues[0].unsent();
            tracing::warn!(
                "squall emu: {}: sending failed ({e}) and left {} frame(s) on the transmit ring, counted as \
                 written; {left} of them were still there at the end",
                self.label,
                self.stranded
            );
        }
    }
}

impl PacketDevice for XdpSocket {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.epoll.0.as_fd()
    }

    fn recv(&mut self) -> io::Result<Option<squall_link::Payload>> {
        Ok(self.recv_skipping(0).map(squall_link::Payload::Owned))
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        let mut written = [false];
        self.send_frames(&[frame], &mut written, None);
        match written[0] {
            true => Ok(()),
            // The interface is down or gone, or no frame was free.
            false => Err(self.error.take().unwrap_or_else(|| io::Error::from_raw_os_error(libc::ENOBUFS))),
        }
    }

    /// Frames go one by one on the transmit ring: a super-packet's
    /// segments never come here (an AF_XDP socket reads none).
    fn send_batch(&mut self, frames: &[&squall_link::Payload], written: &mut [bool]) {
        crate::sys::device::with_slices(frames, |frames| self.send_frames(frames, written, None));
    }

    fn kernel_dropped(&mut self) -> u64 {
        self.dropped()
    }

    fn last_age(&self) -> Option<std::time::Duration> {
        XdpSocket::last_age(self)
    }

    fn dropped_after_write(&mut self) -> u64 {
        self.transmit_drops.as_mut().map_or(0, |d| d.since_open())
    }

    /// Why frames were not written since the last call: the interface is
    /// down or gone (the first such error).
    fn write_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}
