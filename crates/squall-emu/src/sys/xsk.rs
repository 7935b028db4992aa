//! The AF_XDP socket interface (linux/if_xdp.h,
//! Documentation/networking/af_xdp.rst): a socket, its UMEM (the frames
//! shared with the kernel) and its four rings — fill and completion for
//! the UMEM, receive and transmit for the socket — each a single-producer
//! single-consumer ring of a power-of-two size whose producer and consumer
//! indices the two sides publish with release stores and read with
//! acquire loads.
//!
//! Written here rather than taken from a crate: the one pure-Rust crate
//! for it is EUPL-licensed, the others build libxdp and libbpf from C.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_RX_RING: libc::c_int = 2;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_STATISTICS: libc::c_int = 7;
const XDP_PGOFF_RX_RING: libc::off_t = 0;
const XDP_PGOFF_TX_RING: libc::off_t = 0x8000_0000;
const XDP_UMEM_PGOFF_FILL_RING: libc::off_t = 0x1_0000_0000;
const XDP_UMEM_PGOFF_COMPLETION_RING: libc::off_t = 0x1_8000_0000;
/// sockaddr_xdp flags: copy mode, and rings that say when they need a
/// system call.
const XDP_COPY: u16 = 1 << 1;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;

/// struct xdp_desc: a frame on the receive or transmit ring.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Desc {
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// struct xdp_umem_reg (with tx_metadata_len, Linux 6.8; older kernels
/// take the shorter forms, which are its prefix).
#[repr(C)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RingOffset {
    producer: u64,
    consumer: u64,
    desc: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct MmapOffsets {
    rx: RingOffset,
    tx: RingOffset,
    fr: RingOffset,
    cr: RingOffset,
}

#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

/// struct xdp_statistics.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Statistics {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// One mapped ring of `T` entries.
pub struct Ring<T> {
    map: NonNull<u8>,
    map_len: usize,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    entries: NonNull<T>,
    mask: u32,
    /// This side's own index (the producer's or the consumer's), ahead of
    /// what it has published while a batch is open.
    local: u32,
}

// SAFETY: the mapping belongs to the ring alone and moves with it; the
// other side is the kernel, synchronised through the atomics.
unsafe impl<T> Send for Ring<T> {}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping mmap returned for this ring.
        unsafe { libc::munmap(self.map.as_ptr().cast(), self.map_len) };
    }
}

impl<T: Copy> Ring<T> {
    /// Maps the ring of `size` entries at `pgoff` of socket `fd`.
    fn map(fd: &OwnedFd, off: &RingOffset, size: u32, pgoff: libc::off_t, producer_side: bool) -> io::Result<Self> {
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: maps the ring the kernel made for this socket.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = NonNull::new(base.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        // SAFETY: the offsets the kernel gave lie inside the mapping.
        let at = |o: u64| unsafe { NonNull::new_unchecked(map.as_ptr().add(o as usize)) };
        let mut ring = Ring {
            map,
            map_len,
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            entries: at(off.desc).cast(),
            mask: size - 1,
            local: 0,
        };
        ring.local = if producer_side { ring.load_producer() } else { ring.load_consumer() };
        Ok(ring)
    }

    fn load_producer(&self) -> u32 {
        // SAFETY: the index lives in the mapping for the ring's life.
        unsafe { self.producer.as_ref() }.load(Ordering::Acquire)
    }

    fn load_consumer(&self) -> u32 {
        // SAFETY: as above.
        unsafe { self.consumer.as_ref() }.load(Ordering::Acquire)
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: masked into the ring's entries.
        unsafe { self.entries.as_ptr().add((index & self.mask) as usize) }
    }

    // The producer side (fill, transmit).

    /// Free entries a producer may write now.
    pub fn free(&self) -> u32 {
        (self.mask + 1).saturating_sub(self.local.wrapping_sub(self.load_consumer()))
    }

    /// Writes `entry` at the next free place; false if the ring is full.
    /// Nothing is published before [`Ring::publish`].
    pub fn push(&mut self, entry: T) -> bool {
        if self.free() == 0 {
            return false;
        }
        // SAFETY: a free slot, not the kernel's until published.
        unsafe { self.slot(self.local).write(entry) };
        self.local = self.local.wrapping_add(1);
        true
    }

    /// Hands what was pushed to the kernel.
    pub fn publish(&self) {
        // SAFETY: the producer index lives in the mapping.
        unsafe { self.producer.as_ref() }.store(self.local, Ordering::Release);
    }

    /// This side's index and the kernel's, each counting the entries
    /// pushed or taken since the ring was made (wrapping).
    pub fn indices(&self) -> (u32, u32) {
        (self.local, self.load_consumer())
    }

    /// Entries published and not yet taken by the kernel.
    pub fn pending(&self) -> u32 {
        self.local.wrapping_sub(self.load_consumer())
    }

    // The consumer side (receive, completion).

    /// The next entry the kernel produced, if any; it stays the
    /// consumer's until [`Ring::release`].
    pub fn pop(&mut self) -> Option<T> {
        if self.local == self.load_producer() {
            return None;
        }
        // SAFETY: an entry the kernel published (acquire above).
        let entry = unsafe { self.slot(self.local).read() };
        self.local = self.local.wrapping_add(1);
        Some(entry)
    }

    /// Gives the entries popped back to the kernel.
    pub fn release(&self) {
        // SAFETY: the consumer index lives in the mapping.
        unsafe { self.consumer.as_ref() }.store(self.local, Ordering::Release);
    }
}

/// An AF_XDP socket with its own UMEM and four rings, bound to one queue
/// of one interface in copy mode.
pub struct Xsk {
    pub rx: Ring<Desc>,
    /// None when made without one (`Sizes::tx` 0).
    pub tx: Option<Ring<Desc>>,
    pub fill: Ring<u64>,
    pub completion: Ring<u64>,
    // Dropped after the rings, before the UMEM's memory is unmapped by
    // its owner.
    fd: OwnedFd,
}

/// Sizes of an [`Xsk`]'s rings (powers of two; a transmit ring of 0: none).
pub struct Sizes {
    pub rx: u32,
    pub tx: u32,
    pub fill: u32,
    pub completion: u32,
}

fn set<T>(fd: &OwnedFd, option: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a T of the size given, alive for the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            option,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

fn get<T>(fd: &OwnedFd, option: libc::c_int, value: &mut T) -> io::Result<()> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a T of the size given, alive for the call.
    let r = unsafe { libc::getsockopt(fd.as_raw_fd(), SOL_XDP, option, (value as *mut T).cast(), &mut len) };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

impl Xsk {
    /// Registers `umem` (`len` bytes, page aligned, of `frame`-byte
    /// frames) on a new socket, makes and maps its rings and binds it to
    /// queue `queue` of interface `ifindex` in copy mode. The memory must
    /// outlive the socket.
    ///
    /// # Safety
    ///
    /// `umem` points to `len` bytes that stay mapped while the socket is.
    pub unsafe fn open(
        umem: NonNull<u8>,
        len: usize,
        frame: u32,
        sizes: &Sizes,
        ifindex: u32,
        queue: u32,
    ) -> io::Result<Xsk> {
        // SAFETY: a new socket, owned from here.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is the socket just made.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let reg = UmemReg {
            addr: umem.as_ptr() as u64,
            len: len as u64,
            chunk_size: frame,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set(&fd, XDP_UMEM_REG, &reg)?;
        set(&fd, XDP_UMEM_FILL_RING, &sizes.fill)?;
        set(&fd, XDP_UMEM_COMPLETION_RING, &sizes.completion)?;
        set(&fd, XDP_RX_RING, &sizes.rx)?;
        if sizes.tx > 0 {
            set(&fd, XDP_TX_RING, &sizes.tx)?;
        }
        let mut off = MmapOffsets::default();
        get(&fd, XDP_MMAP_OFFSETS, &mut off)?;
        let rx = Ring::map(&fd, &off.rx, sizes.rx, XDP_PGOFF_RX_RING, false)?;
        let tx = if sizes.tx > 0 { Some(Ring::map(&fd, &off.tx, sizes.tx, XDP_PGOFF_TX_RING, true)?) } else { None };
        let fill = Ring::map(&fd, &off.fr, sizes.fill, XDP_UMEM_PGOFF_FILL_RING, true)?;
        let completion = Ring::map(&fd, &off.cr, sizes.completion, XDP_UMEM_PGOFF_COMPLETION_RING, false)?;
        let addr = SockaddrXdp {
            family: libc::AF_XDP as u16,
            flags: XDP_COPY | XDP_USE_NEED_WAKEUP,
            ifindex,
            queue_id: queue,
            shared_umem_fd: 0,
        };
        // SAFETY: a sockaddr_xdp of its size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const SockaddrXdp).cast(),
                std::mem::size_of::<SockaddrXdp>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Xsk { rx, tx, fill, completion, fd })
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Has the kernel send what is on the transmit ring (copy mode sends
    /// in this call, up to 32 frames each time): calls again while the
    /// kernel says EAGAIN or EBUSY with frames left, at most `calls`
    /// times, and returns how many times it said EBUSY (the device was
    /// busy, or it dropped a frame: an interface without its carrier
    /// drops one a call, net/core/dev.c `__dev_direct_xmit`). Another
    /// error (the interface went down, no memory) is returned; the frames
    /// stay on the ring for the next call.
    pub fn kick(&self, calls: usize) -> io::Result<u32> {
        let mut busy = 0;
        for _ in 0..calls {
            if self.tx.as_ref().is_none_or(|t| t.pending() == 0) {
                break;
            }
            // SAFETY: sendto with no data on a socket this owns.
            let r = unsafe {
                libc::sendto(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0)
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EBUSY) => busy += 1,
                    Some(libc::EAGAIN) => {}
                    _ => return Err(e),
                }
            }
        }
        Ok(busy)
    }

    pub fn statistics(&self) -> io::Result<Statistics> {
        let mut s = Statistics::default();
        get(&self.fd, XDP_STATISTICS, &mut s)?;
        Ok(s)
    }
}
