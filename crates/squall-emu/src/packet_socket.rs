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
//! ([`crate::offload`]); [`PacketDevice::recv`] hands them out one by one.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::device::{PacketDevice, VnetIo};
use crate::error::EmuError;
use crate::offload::Framing;

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
        let c_name = CString::new(name).map_err(|_| EmuError::Scenario(what("the name contains a NUL byte")))?;
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(EmuError::Scenario(what(&format!("an interface name has 1 to {} bytes", libc::IFNAMSIZ - 1))));
        }
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(c_name.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(EmuError::Scenario(what("no such interface (see `ip link`)")));
        }
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
        if !is_up(&fd, &c_name).map_err(|e| EmuError::io(what("read its flags"), e))? {
            return Err(EmuError::Scenario(what("the interface is down (`ip link set NAME up`)")));
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
        Ok(PacketSocket {
            fd,
            label: name.to_string(),
            ifindex,
            vnet: VnetIo::new(Framing::Ethernet),
            age: None,
            batch: ReadBatch::new(crate::offload::VNET_HDR_LEN + 65_536),
        })
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

/// Whether interface `name` is administratively up (SIOCGIFFLAGS on
/// `fd`, which answers for the socket's own network namespace).
fn is_up(fd: &OwnedFd, name: &CString) -> io::Result<bool> {
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS fills the ifreq it is given.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS wrote the flags member of the union.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    Ok(flags as i32 & libc::IFF_UP != 0)
}

fn set_opt<T>(fd: &OwnedFd, option: libc::c_int, value: &T) -> io::Result<()> {
    set_sock_opt(fd, libc::SOL_PACKET, option, value)
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

    /// The next frame of the batch, moved into the reader's buffer (a
    /// swap, not a copy): its length and receive timestamp.
    fn next_read(&mut self) -> io::Result<Option<(usize, Option<std::time::SystemTime>)>> {
        if self.batch.next >= self.batch.read.len() && self.read_batch()? == 0 {
            return Ok(None);
        }
        let i = self.batch.next;
        self.batch.next += 1;
        std::mem::swap(&mut self.vnet.rx, &mut self.batch.buffers[i]);
        Ok(Some(self.batch.read[i]))
    }
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
    fn recv(&mut self) -> io::Result<Option<Vec<u8>>> {
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

    fn buffered(&self) -> bool {
        !self.vnet.pending.is_empty() || self.batch.next < self.batch.read.len()
    }

    fn offload_counts(&self) -> crate::device::OffloadCounts {
        self.vnet.counts
    }

    /// Writes one Ethernet frame as it is (after an all-zero
    /// virtio_net_hdr: no offload asked of the kernel).
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        VnetIo::send(self.fd.as_fd(), frame)
    }

    fn send_batch(&mut self, frames: &[&[u8]], written: &mut [bool]) {
        self.vnet.send_batch(self.fd.as_fd(), frames, written, true);
    }
}
