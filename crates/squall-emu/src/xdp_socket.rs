//! An interface read and written through an AF_XDP socket
//! (Documentation/networking/af_xdp.rst) in copy mode: the interface's XDP
//! hook ([`crate::xdp_redirect`]) hands each arriving frame to the socket,
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
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr::NonNull;

use crate::device::PacketDevice;
use crate::error::EmuError;
use crate::offload::Framing;
use crate::xdp_redirect::XdpRedirect;
use crate::xsk::{Desc, Sizes, Xsk};

/// Bytes of one UMEM frame: the smallest the kernel takes, room for a
/// 1514-byte frame.
pub const FRAME: usize = 2048;
/// Frames given to the kernel to receive into (the fill ring's size).
const RX_FRAMES: u32 = 4096;
/// Frames for transmitting.
const TX_FRAMES: u32 = 4096;
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

/// Most receive queues a socket is bound to.
const MAX_QUEUES: u32 = 64;

fn ifindex(name: &str) -> Result<u32, EmuError> {
    let cname = std::ffi::CString::new(name).map_err(|_| EmuError::Scenario(format!("interface {name:?}")))?;
    // SAFETY: a NUL-terminated name.
    match unsafe { libc::if_nametoindex(cname.as_ptr()) } {
        0 => Err(EmuError::Scenario(format!("interface `{name}`: no such interface"))),
        i => Ok(i),
    }
}

impl XdpSocket {
    /// Binds an AF_XDP socket to each receive queue of interface `name`
    /// and attaches the redirecting XDP program to it.
    pub fn open(name: &str) -> Result<XdpSocket, EmuError> {
        let index = ifindex(name)?;
        // A socket binds to each queue there is (sysfs shows only the
        // namespace that mounted it, so the kernel is asked instead: the
        // bind to a queue past the last fails).
        let mut queues = vec![Queue::open(name, index, 0)?];
        while (queues.len() as u32) < MAX_QUEUES {
            match Queue::open(name, index, queues.len() as u32) {
                Ok(q) => queues.push(q),
                Err(_) => break,
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
        Ok(XdpSocket { label: name.to_string(), _redirect: redirect, queues, next: 0, epoll })
    }
}

impl Queue {
    /// An AF_XDP socket bound to receive queue `queue` of interface `name`
    /// (index `index`).
    fn open(name: &str, index: u32, queue: u32) -> Result<Queue, EmuError> {
        let len = FRAME * (RX_FRAMES + TX_FRAMES) as usize;
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
            return Err(EmuError::io(format!("interface {name}: map the AF_XDP frames"), io::Error::last_os_error()));
        }
        let area = Area { base: NonNull::new(base.cast()).expect("mmap gave a non-null mapping"), len };
        let sizes = Sizes { rx: RX_FRAMES, tx: TX_FRAMES, fill: RX_FRAMES, completion: TX_FRAMES };
        // SAFETY: the area is page aligned, `len` long, and dropped after
        // the socket (field order of Queue).
        let mut xsk = unsafe { Xsk::open(area.base, len, FRAME as u32, &sizes, index, queue) }.map_err(|e| {
            EmuError::io(
                format!("interface {name}: AF_XDP socket on queue {queue} (needs Linux 5.9+ and CAP_NET_ADMIN)"),
                e,
            )
        })?;
        for i in 0..u64::from(RX_FRAMES) {
            xsk.fill.push(i * FRAME as u64);
        }
        xsk.fill.publish();
        let free_tx = (u64::from(RX_FRAMES)..u64::from(RX_FRAMES + TX_FRAMES)).map(|i| i * FRAME as u64).collect();
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
    /// (shorter frames are handed out empty).
    fn recv(&mut self, skip: usize) -> Option<Vec<u8>> {
        let Some(desc) = self.xsk.rx.pop() else {
            self.give_back();
            return None;
        };
        self.xsk.rx.release();
        let whole = self.bytes(desc.addr, desc.len);
        let mut frame = whole.get(skip..).unwrap_or_default().to_vec();
        // A sender in a namespace of this machine may leave its checksums
        // for the device; no virtio_net_hdr says so here.
        let framing = if skip == 0 { Framing::Ethernet } else { Framing::Ip };
        crate::offload::complete_partial_checksum(&mut frame, framing);
        self.refill.push(desc.addr & !(FRAME as u64 - 1));
        if self.refill.len() >= 64 {
            self.give_back();
        }
        Some(frame)
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
    /// send them; `written[i]`: whether frame `i` went.
    fn send_batch(&mut self, frames: &[&[u8]], written: &mut [bool], header: Option<&[u8; 14]>) {
        self.reclaim();
        let extra = header.map_or(0, |h| h.len());
        let mut queued = 0;
        for (frame, w) in frames.iter().zip(written.iter_mut()) {
            *w = false;
            if frame.len() + extra > FRAME || self.xsk.tx.free() == 0 {
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
            *w = self.xsk.tx.push(Desc { addr, len: (frame.len() + extra) as u32, options: 0 });
            queued += 1;
        }
        self.xsk.tx.publish();
        // Copy mode sends in the system call, a batch of 32 each.
        for _ in 0..queued / KERNEL_TX_BATCH + 2 {
            if self.xsk.tx.pending() == 0 {
                break;
            }
            self.xsk.kick();
        }
    }
}

impl XdpSocket {
    /// The next frame read, from byte `skip` on.
    pub fn recv_skipping(&mut self, skip: usize) -> Option<Vec<u8>> {
        for _ in 0..self.queues.len() {
            let q = self.next;
            if let Some(frame) = self.queues[q].recv(skip) {
                return Some(frame);
            }
            self.next = (q + 1) % self.queues.len();
        }
        None
    }

    /// Sends each of `packets` after `header` (its EtherType set from the
    /// packet's IP version).
    pub fn send_framed(&mut self, packets: &[&[u8]], written: &mut [bool], header: &[u8; 14]) {
        self.queues[0].send_batch(packets, written, Some(header));
    }

    /// Frames the kernel dropped before squall read them: a receive ring
    /// was full, or no frame was free to receive into (XDP_STATISTICS).
    pub fn dropped(&self) -> u64 {
        self.queues.iter().filter_map(|q| q.xsk.statistics().ok()).map(|s| s.rx_dropped + s.rx_ring_full).sum()
    }
}

impl PacketDevice for XdpSocket {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.epoll.0.as_fd()
    }

    fn recv(&mut self) -> io::Result<Option<Vec<u8>>> {
        Ok(self.recv_skipping(0))
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        let mut written = [false];
        self.send_batch(&[frame], &mut written);
        if written[0] { Ok(()) } else { Err(io::Error::from_raw_os_error(libc::ENOBUFS)) }
    }

    fn send_batch(&mut self, frames: &[&[u8]], written: &mut [bool]) {
        self.queues[0].send_batch(frames, written, None);
    }

    fn kernel_dropped(&mut self) -> u64 {
        self.dropped()
    }
}
