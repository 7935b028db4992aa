//! The XDP program that hands every frame arriving on an interface to an
//! AF_XDP socket (Documentation/networking/af_xdp.rst: "XSKMAP"), loaded
//! and attached with the bpf(2) system call alone.
//!
//! The program is the one xdpsock uses, with a receive time put before
//! the frame: it makes room for 8 bytes of metadata
//! (bpf_xdp_adjust_meta) and writes the time there (bpf_ktime_get_ns,
//! CLOCK_MONOTONIC), which the socket's copy takes along in front of the
//! frame; then it looks up the frame's receive queue in an XSKMAP and
//! redirects the frame to the socket found there, or lets it pass to the
//! kernel's stack when there is none (the low bits of bpf_redirect_map's
//! flags are the action on a miss, Linux 5.6+). A hook that keeps no
//! metadata (the generic one may not) leaves the time out. It is attached with a BPF link (BPF_LINK_CREATE,
//! Linux 5.9+), which the kernel takes away when the link's descriptor
//! closes, however the process ends: nothing to restore after a SIGKILL.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// enum bpf_attach_type's BPF_XDP.
const BPF_XDP: u32 = 37;
/// XDP_FLAGS_DRV_MODE: the driver's own XDP hook (veth has one), before
/// a socket buffer is built.
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
/// XDP_FLAGS_SKB_MODE: the generic hook every interface has, after.
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_PASS: i32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_FUNC_KTIME_GET_NS: i32 = 5;
const BPF_FUNC_XDP_ADJUST_META: i32 = 54;
/// Bytes of metadata before each frame: its receive time, nanoseconds of
/// CLOCK_MONOTONIC, in the machine's byte order.
pub const META_LEN: usize = 8;

/// One eBPF instruction (struct bpf_insn).
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    /// dst_reg in the low four bits, src_reg in the high four.
    regs: u8,
    off: i16,
    imm: i32,
}

/// Calls bpf(2) with `attr`, a bpf_attr prefix; the descriptor it returns.
fn bpf(cmd: libc::c_long, attr: &mut [u64]) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a zero-padded bpf_attr of the size passed.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), std::mem::size_of_val(attr)) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

fn fd_of(r: libc::c_long) -> OwnedFd {
    // SAFETY: bpf(2) returned a new descriptor this process owns.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

/// The program, its map and its link to one interface; detached and freed
/// when dropped.
pub struct XdpRedirect {
    map: OwnedFd,
    _prog: OwnedFd,
    _link: OwnedFd,
}

impl XdpRedirect {
    /// Loads the program and attaches it to the interface `ifindex`, at
    /// the driver's hook where there is one; `queues` entries in its map.
    pub fn attach(ifindex: u32, queues: u32) -> io::Result<XdpRedirect> {
        // struct { map_type, key_size, value_size, max_entries, map_flags }
        let mut attr = [0u64; 8];
        attr[0] = u64::from(BPF_MAP_TYPE_XSKMAP) | 4 << 32;
        attr[1] = 4 | u64::from(queues) << 32;
        let map = fd_of(bpf(BPF_MAP_CREATE, &mut attr)?);
        let map_fd = map.as_raw_fd();
        let program = [
            // r6 = ctx
            Insn { code: 0xbf, regs: 0x16, off: 0, imm: 0 },
            // bpf_xdp_adjust_meta(ctx, -8); if it fails, no time (to 11)
            Insn { code: 0xb7, regs: 0x02, off: 0, imm: -(META_LEN as i32) },
            Insn { code: 0x85, regs: 0, off: 0, imm: BPF_FUNC_XDP_ADJUST_META },
            Insn { code: 0x55, regs: 0x00, off: 7, imm: 0 },
            // r7 = ctx->data_meta, r8 = ctx->data
            Insn { code: 0x61, regs: 0x67, off: 8, imm: 0 },
            Insn { code: 0x61, regs: 0x68, off: 0, imm: 0 },
            // if r7 + 8 > r8: no room (to 11), which the verifier needs said
            Insn { code: 0xbf, regs: 0x71, off: 0, imm: 0 },
            Insn { code: 0x07, regs: 0x01, off: 0, imm: META_LEN as i32 },
            Insn { code: 0x2d, regs: 0x81, off: 2, imm: 0 },
            // *(u64 *)r7 = bpf_ktime_get_ns()
            Insn { code: 0x85, regs: 0, off: 0, imm: BPF_FUNC_KTIME_GET_NS },
            Insn { code: 0x7b, regs: 0x07, off: 0, imm: 0 },
            // r2 = ctx->rx_queue_index
            Insn { code: 0x61, regs: 0x62, off: 16, imm: 0 },
            // r1 = the map (a 64-bit load of a map descriptor)
            Insn { code: 0x18, regs: 0x11, off: 0, imm: map_fd },
            Insn { code: 0, regs: 0, off: 0, imm: 0 },
            // r3 = XDP_PASS: the action when the queue has no socket
            Insn { code: 0xb7, regs: 0x03, off: 0, imm: XDP_PASS },
            Insn { code: 0x85, regs: 0, off: 0, imm: BPF_FUNC_REDIRECT_MAP },
            Insn { code: 0x95, regs: 0, off: 0, imm: 0 },
        ];
        let license = c"Dual MIT/GPL";
        let mut log = vec![0u8; 4096];
        // prog_type, insn_cnt, insns, license, log_level, log_size,
        // log_buf, kern_version, prog_flags, prog_name[16], prog_ifindex,
        // expected_attach_type
        let mut attr = [0u64; 16];
        attr[0] = u64::from(BPF_PROG_TYPE_XDP) | (program.len() as u64) << 32;
        attr[1] = program.as_ptr() as u64;
        attr[2] = license.as_ptr() as u64;
        attr[3] = 1 | (log.len() as u64) << 32;
        attr[4] = log.as_mut_ptr() as u64;
        let name = b"squall_xsk\0\0\0\0\0\0";
        attr[6] = u64::from_ne_bytes(name[..8].try_into().expect("8 bytes"));
        attr[7] = u64::from_ne_bytes(name[8..].try_into().expect("8 bytes"));
        attr[8] = u64::from(BPF_XDP) << 32;
        let prog = bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
            let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            io::Error::new(e.kind(), format!("load the XDP program: {e}; verifier: {}", text.trim()))
        })?;
        let prog = fd_of(prog);
        // prog_fd, target_ifindex, attach_type, flags: the driver's hook,
        // or the generic one where the driver has none.
        let link = |mode: u32| {
            let mut attr = [0u64; 8];
            attr[0] = prog.as_raw_fd() as u64 | u64::from(ifindex) << 32;
            attr[1] = u64::from(BPF_XDP) | u64::from(mode) << 32;
            bpf(BPF_LINK_CREATE, &mut attr)
        };
        let link = match link(XDP_FLAGS_DRV_MODE) {
            Ok(fd) => fd,
            // Too large an MTU for the driver's hook: said as it is.
            Err(e) if e.raw_os_error() == Some(libc::ERANGE) => return Err(e),
            Err(e) => link(XDP_FLAGS_SKB_MODE).map_err(|_| e)?,
        };
        let link = fd_of(link);
        Ok(XdpRedirect { map, _prog: prog, _link: link })
    }

    /// Sends the frames of receive queue `queue` to the AF_XDP socket `xsk`.
    pub fn insert(&self, queue: u32, xsk: i32) -> io::Result<()> {
        let key = queue;
        let value = xsk as u32;
        // map_fd, key, value, flags
        let mut attr = [0u64; 4];
        attr[0] = self.map.as_raw_fd() as u64;
        attr[1] = &key as *const u32 as u64;
        attr[2] = &value as *const u32 as u64;
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr)?;
        Ok(())
    }
}
