//! An existing network interface as a packet device: an AF_PACKET socket
//! (packet(7)) bound to it, reading and writing whole Ethernet frames, for
//! squall to sit inline between real interfaces as the seeds' emulators do
//! (Seawind, seed 000 §4.1; WIPEMU, seed 002 §II.A; the degrader, seed 003
//! §2). The interface is put in promiscuous mode through a packet-socket
//! membership (PACKET_MR_PROMISC), which the kernel drops when the socket
//! closes, however the process ends: nothing to restore after a SIGKILL.
//!
//! The socket reads with PACKET_VNET_HDR, so a GSO super-frame (a TCP
//! flight that a veth or GRO passes as one frame of up to 64 KB) is cut
//! into the frames a wire would carry and partial checksums are completed
//! ([`crate::wire::offload`]); [`PacketDevice::recv`] hands them out one by one.
//!
//! Frames are read from a receive ring shared with the kernel
//! (PACKET_RX_RING, TPACKET_V2; Documentation/networking/packet_mmap.rst):
//! the kernel copies each frame into the next free slot as it arrives, in
//! the softirq of the CPU that sent it, and squall takes it from there
//! without a system call. A frame longer than a slot (a GSO super-frame)
//! is also queued whole on the socket (PACKET_COPY_THRESH) and read with
//! recv(2) at its turn in the ring. Where the ring cannot be made, the
//! socket is read with recvmmsg(2), up to 16 frames a call.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::error::EmuError;
use crate::sys::device::{PacketDevice, VnetIo};
use crate::wire::offload::Framing;

/// ETH_P_ALL in network byte order: every protocol.
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();

/// An AF_PACKET socket on one interface, non-blocking.
pub struct PacketSocket {
    fd: OwnedFd,
    label: String,
    ifindex: i32,
    /// Reads cut into frames, writes joined where GRO would.
    vnet: VnetIo,
    /// How long before its read the last frame reached the interface
    /// (from its kernel receive timestamp).
    age: Option<std::time::Duration>,
    /// Frames read together by one recvmmsg(2), not yet handed out.
    batch: ReadBatch,
    /// The receive ring, when the kernel gave one.
    ring: Option<RxRing>,
    /// Frames the kernel dropped before squall could read them: the ring
    /// was full, or a super-frame could not be queued whole beside it.
    kernel_dropped: u64,
    /// The interface's transmit drops: what it dropped of squall's writes.
    transmit_drops: Option<crate::sys::device::TransmitDrops>,
}

/// Bytes of one ring slot: the TPACKET_V2 header, the virtio_net_hdr and a
/// 1514-byte frame fit with room to spare.
const RING_FRAME: usize = 2048;
/// Bytes of one ring block (a power of two pages, of whole slots).
const RING_BLOCK: usize = 1 << 20;
/// Blocks of the ring: 4096 slots, 8 MB.
const RING_BLOCKS: usize = 8;

/// A PACKET_RX_RING mapped into this process.
struct RxRing {
    base: std::ptr::NonNull<u8>,
    len: usize,
    slots: usize,
    /// The slot to read next.
    next: usize,
}

// SAFETY: the mapping belongs to the RxRing alone and moves with it.
unsafe impl Send for RxRing {}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping mmap returned.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl RxRing {
    /// Asks the kernel for a TPACKET_V2 receive ring on `fd` and maps it.
    fn open(fd: &OwnedFd) -> io::Result<RxRing> {
        set_opt(fd, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V2 as libc::c_int))?;
        // Frames longer than a slot are queued whole on the socket too.
        set_opt(fd, libc::PACKET_COPY_THRESH, &1 as &libc::c_int)?;
        // Room on the socket for those (root: beyond rmem_max).
        let rcvbuf: libc::c_int = 64 << 20;
        let _ = set_sock_opt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &rcvbuf);
        let req = libc::tpacket_req {
            tp_block_size: RING_BLOCK as u32,
            tp_block_nr: RING_BLOCKS as u32,
            tp_frame_size: RING_FRAME as u32,
            tp_frame_nr: (RING_BLOCK / RING_FRAME * RING_BLOCKS) as u32,
        };
        set_opt(fd, libc::PACKET_RX_RING, &req)?;
        let len = RING_BLOCK * RING_BLOCKS;
        // Without the mapping the ring would swallow every frame: take it
        // back from the kernel, so the socket is read as if it never was.
        let unmake = |e: io::Error| {
            // SAFETY: tpacket_req is plain data; all zero asks for no ring.
            let none: libc::tpacket_req = unsafe { std::mem::zeroed() };
            let _ = set_opt(fd, libc::PACKET_RX_RING, &none);
            let _ = set_opt(fd, libc::PACKET_COPY_THRESH, &0 as &libc::c_int);
            e
        };
        // SAFETY: maps the ring the kernel just made for this socket.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(unmake(io::Error::last_os_error()));
        }
        let base = std::ptr::NonNull::new(base.cast()).ok_or_else(|| unmake(io::Error::last_os_error()))?;
        Ok(RxRing { base, len, slots: len / RING_FRAME, next: 0 })
    }

    /// The header of the next slot, if the kernel has filled it.
    fn ready(&self) -> Option<*mut libc::tpacket2_hdr> {
        // SAFETY: slot `next` lies inside the mapping (slots fill the
        // blocks exactly: RING_BLOCK is a multiple of RING_FRAME).
        let hdr = unsafe { self.base.as_ptr().add(self.next * RING_FRAME) }.cast::<libc::tpacket2_hdr>();
        // The kernel hands the slot over by setting TP_STATUS_USER last
        // (smp_wmb before it); this acquire pairs with it.
        // SAFETY: tp_status is an aligned u32 the kernel writes atomically.
        let status = unsafe {
            (*(std::ptr::addr_of!((*hdr).tp_status) as *const std::sync::atomic::AtomicU32))
                .load(std::sync::atomic::Ordering::Acquire)
        };
        (status & libc::TP_STATUS_USER != 0).then_some(hdr)
    }

    /// Gives the slot back to the kernel and moves to the next.
    fn release(&mut self, hdr: *mut libc::tpacket2_hdr) {
        // SAFETY: as in `ready`; the release orders our reads of the slot
        // before the kernel may write it again.
        unsafe {
            (*(std::ptr::addr_of_mut!((*hdr).tp_status) as *const std::sync::atomic::AtomicU32))
                .store(libc::TP_STATUS_KERNEL, std::sync::atomic::Ordering::Release)
        };
        self.next = (self.next + 1) % self.slots;
    }
}

/// How many frames one recvmmsg(2) may read.
const READ_BATCH: usize = 16;

/// The buffers of one recvmmsg(2): each a header and a frame of up to
/// 64 KB, with its length and kernel receive timestamp.
struct ReadBatch {
    buffers: Vec<Vec<u8>>,
    read: Vec<(usize, Option<std::time::SystemTime>)>,
    /// The next of `read` to hand out.
    next: usize,
}

impl ReadBatch {
    fn new(buffer_len: usize) -> ReadBatch {
        ReadBatch { buffers: vec![vec![0; buffer_len]; READ_BATCH], read: Vec::new(), next: 0 }
    }
}

impl PacketSocket {
    /// Opens interface `name` in the current network namespace. Errors
    /// name the interface and say what is wrong (no such interface, down,
    /// not permitted).
    pub fn open(name: &str) -> Result<Self, EmuError> {
        let what = |m: &str| format!("interface `{name}`: {m}");
        let ifindex = crate::sys::interface::index(name)? as i32;
        // SAFETY: socket() returns a new descriptor or -1.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                ETH_P_ALL_BE as i32,
            )
        };
        if raw < 0 {
            return Err(EmuError::io(what("open an AF_PACKET socket (needs CAP_NET_RAW)"), io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if !crate::sys::interface::is_up(&fd, name).map_err(|e| EmuError::io(what("read its flags"), e))? {
            return Err(EmuError::Interface {
                name: name.into(),
                message: "the interface is down (`ip link set NAME up`)".into(),
            });
        }
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL_BE;
        addr.sll_ifindex = ifindex;
        // SAFETY: `addr` is a sockaddr_ll of the size given.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(EmuError::io(what("bind the packet socket"), io::Error::last_os_error()));
        }
        // SAFETY: packet_mreq is plain data; zeroed is a valid value.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        set_opt(&fd, libc::PACKET_ADD_MEMBERSHIP, &mreq).map_err(|e| EmuError::io(what("promiscuous mode"), e))?;
        // Frames this socket sends are not read back by it (Linux 4.20).
        set_opt(&fd, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int)
            .map_err(|e| EmuError::io(what("PACKET_IGNORE_OUTGOING"), e))?;
        set_opt(&fd, libc::PACKET_VNET_HDR, &1 as &libc::c_int)
            .map_err(|e| EmuError::io(what("PACKET_VNET_HDR"), e))?;
        // Receive timestamps for the recvmmsg reader (the ring has its own).
        set_sock_opt(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1 as &libc::c_int)
            .map_err(|e| EmuError::io(what("SO_TIMESTAMPNS"), e))?;
        let ring = match RxRing::open(&fd) {
            Ok(ring) => Some(ring),
            Err(e) => {
                tracing::warn!("squall emu: interface `{name}`: no receive ring ({e}); reading it with recvmmsg");
                None
            }
        };
        Ok(PacketSocket {
            fd,
            label: name.to_string(),
            ifindex,
            vnet: VnetIo::new(Framing::Ethernet),
            age: None,
            batch: ReadBatch::new(crate::wire::offload::VNET_HDR_LEN + crate::sys::device::MAX_FRAME),
            ring,
            kernel_dropped: 0,
            transmit_drops: crate::sys::device::TransmitDrops::open(name),
        })
    }

    /// Frames the kernel dropped before squall read them (ring full, or a
    /// super-frame not queued whole).
    fn dropped_by_kernel(&mut self) -> u64 {
        if self.ring.is_some() {
            // SAFETY: PACKET_STATISTICS fills a tpacket_stats, plain data
            // (and resets the kernel's counts).
            let stats =
                unsafe { get_sock_opt::<libc::tpacket_stats>(&self.fd, libc::SOL_PACKET, libc::PACKET_STATISTICS) };
            if let Ok(stats) = stats {
                self.kernel_dropped += u64::from(stats.tp_drops);
            }
        }
        self.kernel_dropped
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

fn set_opt<T>(fd: &OwnedFd, option: libc::c_int, value: &T) -> io::Result<()> {
    set_sock_opt(fd, libc::SOL_PACKET, option, value)
}

/// getsockopt(2) of `option` at `level` into a T.
///
/// # Safety
///
/// T must be plain data (all-zero bytes a valid value) and the type the
/// kernel writes for `option`.
unsafe fn get_sock_opt<T>(fd: &OwnedFd, level: libc::c_int, option: libc::c_int) -> io::Result<T> {
    // SAFETY: T is plain data (the caller's promise).
    let mut value: T = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a writable T of `len` bytes, alive for the call.
    let r = unsafe { libc::getsockopt(fd.as_raw_fd(), level, option, (&mut value as *mut T).cast(), &mut len) };
    if r == 0 { Ok(value) } else { Err(io::Error::last_os_error()) }
}

fn set_sock_opt<T>(fd: &OwnedFd, level: libc::c_int, option: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a T of the size given, alive for the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            option,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

impl PacketSocket {
    /// Reads what is waiting, up to [`READ_BATCH`] frames, in one
    /// recvmmsg(2) into the batch's buffers; returns how many.
    fn read_batch(&mut self) -> io::Result<usize> {
        let batch = &mut self.batch;
        let mut iovs: Vec<libc::iovec> = batch
            .buffers
            .iter_mut()
            .map(|b| libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() })
            .collect();
        // Room for one cmsghdr and a timespec per frame, 8-byte aligned.
        let mut control = [[0u64; 8]; READ_BATCH];
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .zip(control.iter_mut())
            .map(|(iov, c)| {
                // SAFETY: mmsghdr is plain data; zeroed is a valid value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = c.as_mut_ptr().cast();
                m.msg_hdr.msg_controllen = std::mem::size_of_val(c);
                m
            })
            .collect();
        // SAFETY: every message points to a live buffer and control area
        // of the lengths it gives.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        batch.read.clear();
        batch.next = 0;
        for m in &msgs[..n as usize] {
            let mut stamp = None;
            // SAFETY: the CMSG_* macros walk the control area recvmmsg
            // filled, within msg_controllen.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        stamp =
                            Some(std::time::UNIX_EPOCH + std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                    }
                    c = libc::CMSG_NXTHDR(&m.msg_hdr, c);
                }
            }
            batch.read.push((m.msg_len as usize, stamp));
        }
        Ok(n as usize)
    }

    /// The next frame of the ring, copied into the reader's buffer after
    /// its virtio_net_hdr (or, for a frame longer than a slot, read whole
    /// from the socket): its length and receive timestamp.
    fn next_from_ring(&mut self) -> io::Result<Option<(usize, Option<std::time::SystemTime>)>> {
        loop {
            let Some(ring) = self.ring.as_mut() else { return Ok(None) };
            let Some(hdr) = ring.ready() else { return Ok(None) };
            // SAFETY: the kernel filled the slot and handed it to us.
            let (status, len, snaplen, mac, sec, nsec) = unsafe {
                ((*hdr).tp_status, (*hdr).tp_len, (*hdr).tp_snaplen, (*hdr).tp_mac, (*hdr).tp_sec, (*hdr).tp_nsec)
            };
            // SAFETY: as above.
            let (tci, tpid) = unsafe { ((*hdr).tp_vlan_tci, (*hdr).tp_vlan_tpid) };
            let stamp = Some(std::time::UNIX_EPOCH + std::time::Duration::new(u64::from(sec), nsec));
            let vnet = crate::wire::offload::VNET_HDR_LEN;
            let read = if status & libc::TP_STATUS_COPY != 0 {
                // The whole frame waits on the socket; one longer than the
                // buffer (MSG_TRUNC gives its length) is lost, counted.
                // SAFETY: rx is a writable buffer of its length.
                let n = unsafe {
                    libc::recv(
                        self.fd.as_raw_fd(),
                        self.vnet.rx.as_mut_ptr().cast(),
                        self.vnet.rx.len(),
                        libc::MSG_TRUNC,
                    )
                };
                (n >= 0 && n as usize <= self.vnet.rx.len()).then_some(n as usize)
            } else if snaplen < len || usize::from(mac) < vnet || usize::from(mac) + snaplen as usize > RING_FRAME {
                // Cut short and not queued whole: lost.
                None
            } else {
                let at = usize::from(mac) - vnet;
                let n = vnet + snaplen as usize;
                // SAFETY: the header and frame lie inside the slot (checked
                // above), which the kernel will not touch until released.
                let slot = unsafe { std::slice::from_raw_parts(hdr.cast::<u8>().add(at), n) };
                self.vnet.rx[..n].copy_from_slice(slot);
                Some(n)
            };
            ring.release(hdr);
            // The kernel takes an 802.1Q tag out of the frame before packet
            // sockets see it and gives it beside it: put it back, so the
            // frame leaves as it came.
            let read = match read {
                Some(n) if status & libc::TP_STATUS_VLAN_VALID != 0 => {
                    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && tpid != 0 { tpid } else { 0x8100 };
                    put_back_vlan_tag(&mut self.vnet.rx, n, tpid, tci)
                }
                other => other,
            };
            match read {
                Some(n) => return Ok(Some((n, stamp))),
                None => self.kernel_dropped += 1,
            }
        }
    }

    /// The next frame of the batch, moved into the reader's buffer (a
    /// swap, not a copy): its length and receive timestamp.
    fn next_read(&mut self) -> io::Result<Option<(usize, Option<std::time::SystemTime>)>> {
        if self.ring.is_some() {
            return self.next_from_ring();
        }
        if self.batch.next >= self.batch.read.len() && self.read_batch()? == 0 {
            return Ok(None);
        }
        let i = self.batch.next;
        self.batch.next += 1;
        std::mem::swap(&mut self.vnet.rx, &mut self.batch.buffers[i]);
        Ok(Some(self.batch.read[i]))
    }
}

/// Inserts the VLAN tag `tpid`, `tci` after the MAC addresses of the frame
/// read into `buf` (a virtio_net_hdr, then `n` - VNET_HDR_LEN bytes of
/// frame), and moves the header's offsets with it; the new length, or
/// `None` if the tagged frame does not fit.
fn put_back_vlan_tag(buf: &mut [u8], n: usize, tpid: u16, tci: u16) -> Option<usize> {
    let vnet = crate::wire::offload::VNET_HDR_LEN;
    if n < vnet + 14 || n + 4 > buf.len() {
        return None;
    }
    buf.copy_within(vnet + 12..n, vnet + 16);
    buf[vnet + 12..vnet + 14].copy_from_slice(&tpid.to_be_bytes());
    buf[vnet + 14..vnet + 16].copy_from_slice(&tci.to_be_bytes());
    let hdr = crate::wire::offload::VnetHdr::parse(buf)?.shifted(4);
    buf[..vnet].copy_from_slice(&hdr.to_bytes());
    Some(n + 4)
}

impl PacketDevice for PacketSocket {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Reads one Ethernet frame: a whole frame, or the next segment of a
    /// super-frame, every checksum complete. A super-frame that cannot be
    /// cut is handed out as it came, for the data plane to refuse.
    fn recv(&mut self) -> io::Result<Option<squall_link::Payload>> {
        self.vnet.same_read = !self.vnet.pending.is_empty();
        if !self.vnet.same_read {
            let Some((n, stamp)) = self.next_read()? else { return Ok(None) };
            self.age = stamp.and_then(|t| std::time::SystemTime::now().duration_since(t).ok());
            self.vnet.cut(n, &self.label)?;
        }
        // The other segments of a super-frame arrived with the first.
        Ok(self.vnet.pending.pop_front())
    }

    fn last_age(&self) -> Option<std::time::Duration> {
        self.age
    }

    fn same_read(&self) -> bool {
        self.vnet.same_read
    }

    fn mid_read(&self) -> bool {
        !self.vnet.pending.is_empty()
    }

    fn buffered(&self) -> bool {
        !self.vnet.pending.is_empty()
            || self.batch.next < self.batch.read.len()
            || self.ring.as_ref().is_some_and(|r| r.ready().is_some())
    }

    fn offload_counts(&self) -> crate::sys::device::OffloadCounts {
        self.vnet.counts
    }

    fn kernel_dropped(&mut self) -> u64 {
        self.dropped_by_kernel()
    }

    /// Writes one Ethernet frame as it is (after an all-zero
    /// virtio_net_hdr: no offload asked of the kernel).
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        VnetIo::send(self.fd.as_fd(), frame)
    }

    fn send_batch(&mut self, frames: &[&squall_link::Payload], written: &mut [bool]) {
        self.vnet.send_batch(self.fd.as_fd(), frames, written, true);
    }

    fn write_error(&mut self) -> Option<io::Error> {
        self.vnet.write_error.take()
    }

    fn dropped_after_write(&mut self) -> u64 {
        self.transmit_drops.as_mut().map_or(0, |d| d.since_open())
    }

    /// SO_ERROR, which the kernel sets (ENETDOWN) when the interface goes
    /// down, as it does first when the interface is removed, and which
    /// reading clears.
    fn take_error(&mut self) -> Option<io::Error> {
        // SAFETY: SO_ERROR writes one c_int.
        match unsafe { get_sock_opt::<libc::c_int>(&self.fd, libc::SOL_SOCKET, libc::SO_ERROR) } {
            Ok(0) => None,
            Ok(e) => Some(io::Error::from_raw_os_error(e)),
            Err(e) => Some(e),
        }
    }
}
