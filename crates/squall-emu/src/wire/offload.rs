//! Frames as the kernel hands them to a packet socket with
//! PACKET_VNET_HDR (packet(7)): each read starts with a `virtio_net_hdr`
//! (the virtio 1.x specification, §5.1.6 "Device Operation"; Linux
//! include/uapi/linux/virtio_net.h) saying whether the frame is a GSO
//! super-frame of many segments (veth, and any interface with GRO, passes
//! TCP flights of up to 64 KB as one frame) and whether its transport
//! checksum is still to be filled in. The model must see the segments that
//! would cross a wire, each with a correct checksum, so [`split`] cuts a
//! super-frame into MTU-sized frames (what the kernel's software GSO does,
//! net/ipv4/tcp_offload.c and udp_offload.c: per-segment sequence numbers,
//! IPv4 identifiers and lengths, FIN and PSH on the last segment only, CWR
//! on the first) and completes every checksum (RFC 1071 one's-complement
//! sums with the RFC 793 / RFC 8200 §8.1 pseudo-headers).

/// Bytes of a `virtio_net_hdr` without the mergeable-buffers field.
pub const VNET_HDR_LEN: usize = 10;

const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
/// UDP fragmentation offload (UFO), gone from Linux since 4.14: refused.
#[cfg(test)]
const GSO_UDP: u8 = 3;
const GSO_TCPV6: u8 = 4;
const GSO_UDP_L4: u8 = 5;
const GSO_ECN: u8 = 0x80;

/// The header before each frame (native byte order: the legacy layout the
/// kernel uses for packet sockets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        (b.len() >= VNET_HDR_LEN).then(|| VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    /// Whether it says the frame is a GSO super-frame (of one or more
    /// segments).
    pub fn is_gso(self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }

    /// The header of the same frame with `by` bytes inserted before its
    /// network header (a VLAN tag put back): the offsets it gives from the
    /// frame's start move with them.
    pub fn shifted(self, by: u16) -> VnetHdr {
        VnetHdr {
            csum_start: if self.flags & F_NEEDS_CSUM != 0 { self.csum_start + by } else { self.csum_start },
            hdr_len: if self.gso_type != GSO_NONE && self.hdr_len != 0 { self.hdr_len + by } else { self.hdr_len },
            ..self
        }
    }
}

/// Why a frame could not be cut or completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// Headers that do not fit the bytes, or a GSO type this code does
    /// not know (UFO, SCTP).
    Malformed,
}

/// Where the headers of an IP frame are.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Start of the IP header.
    l3: usize,
    v6: bool,
    /// Start of the transport header.
    l4: usize,
    /// End of the IP packet (frames may carry padding after it).
    end: usize,
    protocol: u8,
    /// A fragment of an IPv4 datagram, or an IPv6 packet with a routing
    /// header (its pseudo-header has the final destination, RFC 8200
    /// §8.1): no checksum of its own to complete here.
    partial_datagram: bool,
}

/// Bytes of the Ethernet header, with up to two VLAN tags (IEEE 802.1Q),
/// and the EtherType after them.
pub fn ethernet_header(frame: &[u8]) -> Option<(usize, u16)> {
    let mut at = 12;
    loop {
        let t = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
        if (t == 0x8100 || t == 0x88a8) && at < 20 {
            at += 4;
            continue;
        }
        return Some((at + 2, t));
    }
}

/// How the bytes of a device start: with an Ethernet header (a packet
/// socket on an interface) or with the IP header (a TUN device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Ethernet,
    Ip,
}

fn layout(frame: &[u8], framing: Framing) -> Option<Layout> {
    let (l3, ethertype) = match framing {
        Framing::Ethernet => ethernet_header(frame)?,
        Framing::Ip => match frame.first()? >> 4 {
            4 => (0, 0x0800),
            6 => (0, 0x86dd),
            _ => return None,
        },
    };
    let ip = frame.get(l3..)?;
    match ethertype {
        0x0800 => {
            let ihl = usize::from(*ip.first()? & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
            (ihl >= 20 && total >= ihl && total <= ip.len()).then(|| Layout {
                l3,
                v6: false,
                l4: l3 + ihl,
                end: l3 + total,
                protocol: ip[9],
                // More fragments, or a fragment offset (RFC 791 §3.1).
                partial_datagram: u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0,
            })
        }
        0x86dd => {
            let total = 40 + usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
            if total > ip.len() {
                return None;
            }
            // Extension headers (RFC 8200 §4) before the transport header.
            let (mut next, mut at, mut routed) = (ip[6], 40, false);
            while matches!(next, 0 | 43 | 60) {
                routed |= next == 43;
                next = *ip.get(at)?;
                at += 8 + usize::from(*ip.get(at + 1)?) * 8;
            }
            (at <= total).then_some(Layout {
                l3,
                v6: true,
                l4: l3 + at,
                end: l3 + total,
                protocol: next,
                partial_datagram: routed,
            })
        }
        _ => None,
    }
}

/// The RFC 1071 one's-complement sum of `bytes` added to `sum`, unfolded.
/// Eight bytes at a time, as two 32-bit words: a 32-bit word folds to the
/// sum of its 16-bit halves (RFC 1071 §2(C), "parallel summation"), so
/// [`fold`] gives what a sum of 16-bit words would.
fn sum(mut acc: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        acc += (w >> 32) + (w & 0xffff_ffff);
    }
    let mut chunks = words.remainder().chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The transport checksum of the segment at `l4..end` of `frame`, with
/// the pseudo-header of its IP header.
fn transport_checksum(frame: &[u8], at: &Layout) -> u16 {
    let ip = &frame[at.l3..];
    let len = (at.end - at.l4) as u64;
    let pseudo = if at.v6 {
        sum(0, &ip[8..40]) + len + u64::from(at.protocol)
    } else {
        sum(0, &ip[12..20]) + len + u64::from(at.protocol)
    };
    !fold(sum(pseudo, &frame[at.l4..at.end]))
}

/// Rewrites the transport checksum of `frame` (TCP or UDP) from scratch.
fn fill_transport_checksum(frame: &mut [u8], at: &Layout) {
    let field = match at.protocol {
        6 => at.l4 + 16,
        17 => at.l4 + 6,
        _ => return,
    };
    if field + 2 > at.end {
        return;
    }
    frame[field..field + 2].fill(0);
    let mut c = transport_checksum(frame, at);
    if at.protocol == 17 && c == 0 {
        c = 0xffff; // RFC 768: a computed zero is sent as all ones.
    }
    frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
}

fn fill_ipv4_checksum(frame: &mut [u8], at: &Layout) {
    let h = at.l3..at.l4;
    frame[at.l3 + 10..at.l3 + 12].fill(0);
    let c = !fold(sum(0, &frame[h]));
    frame[at.l3 + 10..at.l3 + 12].copy_from_slice(&c.to_be_bytes());
}

/// Completes the transport checksum of a TCP or UDP frame that a sender on
/// this machine left partial for its device to finish (CHECKSUM_PARTIAL),
/// where no virtio_net_hdr says so: a frame read from an AF_XDP socket.
/// Linux leaves in the field the folded sum of the pseudo-header, not
/// complemented (`~tcp_v4_check(len, saddr, daddr, 0)`, and so for UDP and
/// IPv6), so a field holding exactly that is completed; any other value is
/// left as it came, and a frame corrupted on a wire stays corrupted (unless
/// its field happens to hold that sum: one in 65 536). IPv4 fragments and
/// IPv6 packets with a routing header are left alone (no sender leaves
/// those partial). Returns whether it completed one.
pub fn complete_partial_checksum(frame: &mut [u8], framing: Framing) -> bool {
    let Some(at) = layout(frame, framing) else { return false };
    if at.partial_datagram {
        return false;
    }
    let field = match at.protocol {
        6 => at.l4 + 16,
        17 => at.l4 + 6,
        _ => return false,
    };
    if field + 2 > at.end {
        return false;
    }
    let ip = &frame[at.l3..];
    let addresses = if at.v6 { &ip[8..40] } else { &ip[12..20] };
    let pseudo = fold(sum(0, addresses) + (at.end - at.l4) as u64 + u64::from(at.protocol));
    if u16::from_be_bytes([frame[field], frame[field + 1]]) != pseudo {
        return false;
    }
    fill_transport_checksum(frame, &at);
    true
}

/// The frames that `frame` (read after `hdr`) stands for: itself with its
/// checksum completed, or the segments of a GSO super-frame.
pub fn split(hdr: &VnetHdr, frame: &[u8], framing: Framing) -> Result<Vec<Vec<u8>>, SplitError> {
    if hdr.gso_type & !GSO_ECN == GSO_NONE {
        let mut f = frame.to_vec();
        if hdr.flags & F_NEEDS_CSUM != 0 {
            let at = layout(&f, framing).ok_or(SplitError::Malformed)?;
            fill_transport_checksum(&mut f, &at);
        }
        return Ok(vec![f]);
    }
    let plan = Cut::plan(hdr, frame, framing)?;
    Ok((0..plan.count).map(|i| plan.segment(frame, i)).collect())
}

/// How a GSO super-frame is cut into wire segments.
#[derive(Clone, Copy, Debug)]
struct Cut {
    at: Layout,
    /// Where the data starts: every segment has the bytes before it.
    payload_start: usize,
    /// Data bytes per segment (the last may have fewer).
    mss: usize,
    count: usize,
    tcp: bool,
}

impl Cut {
    fn plan(hdr: &VnetHdr, frame: &[u8], framing: Framing) -> Result<Cut, SplitError> {
        let gso = hdr.gso_type & !GSO_ECN;
        let at = layout(frame, framing).ok_or(SplitError::Malformed)?;
        let mss = usize::from(hdr.gso_size);
        let (header_len, tcp) = match (gso, at.protocol) {
            (GSO_TCPV4 | GSO_TCPV6, 6) => {
                let doff = usize::from(*frame.get(at.l4 + 12).ok_or(SplitError::Malformed)? >> 4) * 4;
                // A TCP header has at least 20 bytes (RFC 9293 §3.1).
                if doff < 20 {
                    return Err(SplitError::Malformed);
                }
                (at.l4 - at.l3 + doff, true)
            }
            (GSO_UDP_L4, 17) => (at.l4 - at.l3 + 8, false),
            _ => return Err(SplitError::Malformed),
        };
        let payload_start = at.l3 + header_len;
        if mss == 0 || payload_start > at.end {
            return Err(SplitError::Malformed);
        }
        let count = (at.end - payload_start).div_ceil(mss).max(1);
        Ok(Cut { at, payload_start, mss, count, tcp })
    }

    /// The data bytes of segment `i` in the super-frame.
    fn data(&self, i: usize) -> std::ops::Range<usize> {
        let start = self.payload_start + i * self.mss;
        start..(start + self.mss).min(self.at.end)
    }

    /// The headers of segment `i` (< `count`) of `frame`, standing before
    /// `data` bytes: its IP length, IPv4 identifier, sequence number and
    /// flags as the kernel's GSO sets them, the checksums left as read.
    fn headers(&self, frame: &[u8], i: usize, data: usize) -> Vec<u8> {
        let at = self.at;
        let mut f = Vec::with_capacity(self.payload_start + data);
        f.extend_from_slice(&frame[..self.payload_start]);
        let ip_len = (self.payload_start + data - at.l3) as u16;
        if at.v6 {
            f[at.l3 + 4..at.l3 + 6].copy_from_slice(&(ip_len - 40).to_be_bytes());
        } else {
            f[at.l3 + 2..at.l3 + 4].copy_from_slice(&ip_len.to_be_bytes());
            let id = u16::from_be_bytes([f[at.l3 + 4], f[at.l3 + 5]]).wrapping_add(i as u16);
            f[at.l3 + 4..at.l3 + 6].copy_from_slice(&id.to_be_bytes());
        }
        if self.tcp {
            let seq = u32::from_be_bytes(f[at.l4 + 4..at.l4 + 8].try_into().expect("4 bytes"))
                .wrapping_add((i * self.mss) as u32);
            f[at.l4 + 4..at.l4 + 8].copy_from_slice(&seq.to_be_bytes());
            let last = i + 1 == self.count;
            let flags = &mut f[at.l4 + 13];
            if !last {
                *flags &= !LAST_ONLY;
            }
            if i > 0 {
                *flags &= !0x80; // CWR
            }
        } else {
            let udp_len = (self.payload_start + data - at.l4) as u16;
            f[at.l4 + 4..at.l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
        }
        f
    }

    /// Segment `i` (< `count`) of `frame`.
    fn segment(&self, frame: &[u8], i: usize) -> Vec<u8> {
        let chunk = &frame[self.data(i)];
        let mut f = self.headers(frame, i, chunk.len());
        f.extend_from_slice(chunk);
        let seg = Layout { end: f.len(), ..self.at };
        if !seg.v6 {
            fill_ipv4_checksum(&mut f, &seg);
        }
        fill_transport_checksum(&mut f, &seg);
        f
    }

    /// Whether GRO would join segments `run` (two or more) once cut
    /// ([`runs`], [`follows`]): TCP without IPv4 options or IPv6
    /// extension headers, not a fragment, no flag that ends a run (CWR
    /// only on the first segment), at most [`MAX_RUN`] segments and 64 KB.
    fn joinable(&self, frame: &[u8], run: &std::ops::Range<usize>) -> bool {
        let at = self.at;
        let plain_ip = at.l4 - at.l3 == if at.v6 { 40 } else { 20 };
        let fragment = !at.v6 && u16::from_be_bytes([frame[at.l3 + 6], frame[at.l3 + 7]]) & 0x3fff != 0;
        let flags = frame[at.l4 + 13];
        let ends_run = if run.start == 0 { NEVER_JOINED } else { NEVER_JOINED & !0x80 };
        let fits = || self.payload_start - at.l3 + self.data(run.end - 1).end - self.data(run.start).start <= 65_535;
        self.tcp
            && plain_ip
            && !fragment
            && flags & ends_run == 0
            && (2..=MAX_RUN).contains(&run.len())
            && run.end <= self.count
            && fits()
    }
}

/// A GSO super-frame as a device read it, standing for the wire segments
/// [`split`] would cut from it. The model sees each segment as a packet
/// of its own (`squall_link::Payload::Segment`), but a segment's bytes are
/// cut only when something needs them (a capture, a stage that changes
/// bytes, a segment written alone): when every segment reaches the same
/// host in one write, in order, the super-frame is written as it was read,
/// with no cutting and no joining; when a run of them does, they go as one
/// GSO write of their data as it lies in the super-frame
/// ([`SuperFrame::write_at`]).
#[derive(Debug)]
pub struct SuperFrame {
    /// The header it was read with: written again with it.
    pub hdr: VnetHdr,
    /// The buffer it was read into; the frame is at `span`.
    buffer: Vec<u8>,
    span: std::ops::Range<usize>,
    cut: Cut,
    /// Where its buffer goes when the last segment is gone.
    pool: Option<std::sync::Arc<FramePool>>,
}

impl Drop for SuperFrame {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.live.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            pool.give(std::mem::take(&mut self.buffer));
        }
    }
}

/// Buffers of super-frames gone, to read the next ones into. A 64 KB
/// buffer freed and allocated anew for each read cost the page faults of
/// fresh memory (glibc hands blocks that large back to the kernel):
/// measured, 11.5 Gbit/s of TCP through an inline run without reuse, 14.9
/// with it. A super-frame keeps the buffer it was read into, and the
/// device reads the next frame into one from here: no copy.
///
/// A buffer lives as long as any segment of its super-frame (one segment
/// left in a queue holds the whole 64 KB), so at most [`FramePool::LIVE`]
/// super-frames keep theirs; beyond that they take copies of their own
/// size ([`FramePool::lending`]).
#[derive(Debug, Default)]
pub struct FramePool {
    pub(crate) free: std::sync::Mutex<Vec<Vec<u8>>>,
    /// Super-frames holding a buffer of this pool.
    live: std::sync::atomic::AtomicUsize,
}

impl FramePool {
    /// Idle buffers kept at most (16 MB of 64 KB ones); more are freed.
    const KEEP: usize = 256;
    /// Super-frames that may hold a read buffer at once (64 MB of them).
    pub const LIVE: usize = 1024;

    /// Whether another super-frame may keep its read buffer.
    pub fn lending(&self) -> bool {
        self.live.load(std::sync::atomic::Ordering::Relaxed) < Self::LIVE
    }

    /// A buffer of `len` bytes (of any content) to read into.
    pub fn buffer(&self, len: usize) -> Vec<u8> {
        let reused = self.free.lock().ok().and_then(|mut f| f.pop());
        let mut buffer = reused.unwrap_or_default();
        buffer.resize(len, 0);
        buffer
    }

    fn give(&self, buffer: Vec<u8>) {
        if let Ok(mut free) = self.free.lock()
            && free.len() < Self::KEEP
        {
            free.push(buffer);
        }
    }
}

impl SuperFrame {
    /// `frame`, read after `hdr`, if `hdr` says it is a GSO super-frame
    /// that can be cut; `Ok(None)` for a frame of one segment.
    pub fn new(hdr: VnetHdr, frame: Vec<u8>, framing: Framing) -> Result<Option<SuperFrame>, SplitError> {
        if !hdr.is_gso() {
            return Ok(None);
        }
        let span = 0..frame.len();
        SuperFrame::within(hdr, frame, span, framing).map(Some).map_err(|(e, _)| e)
    }

    /// The super-frame at `span` of `buffer`, read after `hdr`, which says
    /// it is one ([`VnetHdr::is_gso`]); on an error the buffer comes back.
    pub fn within(
        hdr: VnetHdr,
        buffer: Vec<u8>,
        span: std::ops::Range<usize>,
        framing: Framing,
    ) -> Result<SuperFrame, (SplitError, Vec<u8>)> {
        match buffer.get(span.clone()).ok_or(SplitError::Malformed).and_then(|f| Cut::plan(&hdr, f, framing)) {
            Ok(cut) => Ok(SuperFrame { hdr, buffer, span, cut, pool: None }),
            Err(e) => Err((e, buffer)),
        }
    }

    /// The frame as read.
    pub fn frame(&self) -> &[u8] {
        &self.buffer[self.span.clone()]
    }

    /// Gives its buffer to `pool` when it is gone.
    pub fn recycled_by(mut self, pool: &std::sync::Arc<FramePool>) -> SuperFrame {
        pool.live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.pool = Some(std::sync::Arc::clone(pool));
        self
    }

    /// Whether it may be written as it was read: its frame ends where its
    /// IP packet does (no bytes beyond it, which the kernel would carry as
    /// data, and the model never saw) and its header's TCP segmentation
    /// type is its IP version's (the kernel refuses another).
    fn writable_whole(&self) -> bool {
        let gso = self.hdr.gso_type & !GSO_ECN;
        let tcp_type_fits = match gso {
            GSO_TCPV4 => !self.cut.at.v6,
            GSO_TCPV6 => self.cut.at.v6,
            _ => true,
        };
        self.cut.at.end == self.span.len() && tcp_type_fits
    }

    /// If `payloads[at..]` starts with two or more segments of one
    /// super-frame, in order: how to write them without cutting them. All
    /// of its segments: the super-frame as it was read, with the header it
    /// was read with. Some of them (a stage with a rate limit lets a
    /// flight out a few segments at a time): one GSO write of what GRO
    /// makes of those segments once cut ([`join`]), its headers rewritten
    /// and its data as it lies in the super-frame; the kernel cuts it into
    /// the same segments. No payload is copied and no checksum summed.
    pub fn write_at<'a>(payloads: &[&'a squall_link::Payload], at: usize) -> Option<FrameWrite<'a>> {
        let segment = |i: usize| match payloads.get(i) {
            Some(squall_link::Payload::Segment(s)) => Some(s),
            _ => None,
        };
        let first = segment(at)?;
        let any: &dyn std::any::Any = first.of.as_ref();
        let frame = any.downcast_ref::<SuperFrame>()?;
        let after = (1..frame.cut.count - first.index.min(frame.cut.count))
            .take_while(|&k| {
                segment(at + k).is_some_and(|s| s.index == first.index + k && std::sync::Arc::ptr_eq(&s.of, &first.of))
            })
            .count();
        let run = first.index..first.index + 1 + after;
        if run.len() == frame.cut.count && frame.writable_whole() {
            return Some(FrameWrite { hdr: frame.hdr, head: Vec::new(), body: frame.frame(), segments: run.len() });
        }
        let run = run.start..run.end.min(run.start + MAX_RUN);
        let bytes = frame.frame();
        if !frame.cut.joinable(bytes, &run) {
            return None;
        }
        let body = frame.cut.data(run.start).start..frame.cut.data(run.end - 1).end;
        let mut head = frame.cut.headers(bytes, run.start, body.len());
        if run.end == frame.cut.count {
            head[frame.cut.at.l4 + 13] |= bytes[frame.cut.at.l4 + 13] & LAST_ONLY;
        }
        let hdr = finish_join(&mut head, &frame.cut.at, body.len(), frame.cut.mss);
        Some(FrameWrite { hdr, head, body: &bytes[body], segments: run.len() })
    }
}

/// One write of segments of a super-frame ([`SuperFrame::write_at`]): the
/// virtio_net_hdr, the headers to write (empty when the super-frame goes
/// as it was read) and the bytes after them.
pub struct FrameWrite<'a> {
    pub hdr: VnetHdr,
    pub head: Vec<u8>,
    pub body: &'a [u8],
    /// The segments it carries.
    pub segments: usize,
}

impl squall_link::Segmented for SuperFrame {
    fn count(&self) -> usize {
        self.cut.count
    }

    fn segment(&self, index: usize) -> Vec<u8> {
        self.cut.segment(SuperFrame::frame(self), index)
    }

    fn frame(&self) -> &[u8] {
        SuperFrame::frame(self)
    }

    fn segment_len(&self, index: usize) -> usize {
        self.cut.payload_start + self.cut.data(index).len()
    }
}

impl VnetHdr {
    /// The header as the kernel reads it before a frame.
    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        for (i, v) in [self.hdr_len, self.gso_size, self.csum_start, self.csum_offset].into_iter().enumerate() {
            b[2 + 2 * i..4 + 2 * i].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }
}

/// TCP flags GRO lets differ between the segments it joins, on the last
/// one only (tcp_offload.c, tcp_gro_receive): FIN and PSH.
const LAST_ONLY: u8 = 0x01 | 0x08;
/// Flags that end a run at once: SYN, RST, URG, CWR, ECE.
const NEVER_JOINED: u8 = 0x02 | 0x04 | 0x20 | 0x80 | 0x40;

/// A TCP segment's fields that decide whether GRO may join it to the one
/// before.
struct Segment {
    at: Layout,
    /// Bytes of the TCP header.
    doff: usize,
    seq: u32,
    flags: u8,
}

impl Segment {
    fn payload(&self) -> usize {
        self.at.end - self.at.l4 - self.doff
    }
}

fn segment(frame: &[u8], framing: Framing) -> Option<Segment> {
    let at = layout(frame, framing)?;
    if at.protocol != 6 {
        return None;
    }
    // IPv4 options or IPv6 extension headers: not joined.
    if at.l4 - at.l3 != if at.v6 { 40 } else { 20 } {
        return None;
    }
    let tcp = frame.get(at.l4..at.end)?;
    let doff = usize::from(*tcp.get(12)? >> 4) * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    let seq = u32::from_be_bytes(tcp[4..8].try_into().ok()?);
    Some(Segment { doff, seq, flags: tcp[13], at })
}

/// Whether GRO may put segment `next` after `prev` (the last of a run
/// whose segments carry `mss` payload bytes), the rules of Linux's
/// inet_gro_receive and tcp_gro_receive (net/ipv4/af_inet.c,
/// tcp_offload.c; read, not copied): the same link header, addresses, IP
/// fields and TCP header but for lengths, checksums, the sequence number
/// and the last segment's FIN/PSH; IPv4 identifiers counting up by one; no
/// fragment; payloads of exactly `mss` bytes but the last, which may be
/// shorter; data in sequence.
fn follows(prev: (&[u8], &Segment), next: (&[u8], &Segment), mss: usize) -> bool {
    let ((p, ps), (n, ns)) = (prev, next);
    let (pa, na) = (&ps.at, &ns.at);
    let (p_payload, n_payload) = (ps.payload(), ns.payload());
    if pa.l3 != na.l3 || pa.v6 != na.v6 || ps.doff != ns.doff || p[..pa.l3] != n[..na.l3] {
        return false;
    }
    if p_payload != mss || n_payload == 0 || n_payload > mss {
        return false;
    }
    if ps.flags & (LAST_ONLY | NEVER_JOINED) != 0 || ns.flags & NEVER_JOINED != 0 {
        return false;
    }
    if (ps.flags ^ ns.flags) & !LAST_ONLY != 0 || ns.seq != ps.seq.wrapping_add(p_payload as u32) {
        return false;
    }
    let (pi, ni) = (&p[pa.l3..pa.l4], &n[na.l3..na.l4]);
    let ip_same = if pa.v6 {
        // Version, class, flow label; next header, hop limit, addresses.
        pi[..4] == ni[..4] && pi[6..] == ni[6..]
    } else {
        let id = |h: &[u8]| u16::from_be_bytes([h[4], h[5]]);
        let fragment = |h: &[u8]| u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0;
        pi[..2] == ni[..2]
            && pi[6..10] == ni[6..10]
            && pi[12..20] == ni[12..20]
            && id(ni) == id(pi).wrapping_add(1)
            && !fragment(pi)
    };
    // Ports, acknowledgement, window and options; not the sequence
    // number, flags byte or checksum.
    let (pt, nt) = (&p[pa.l4..pa.l4 + ps.doff], &n[na.l4..na.l4 + ns.doff]);
    ip_same && pt[..4] == nt[..4] && pt[8..13] == nt[8..13] && pt[14..16] == nt[14..16] && pt[18..] == nt[18..]
}

/// Splits `frames` (packets due for one host, in order)
/// into the runs that GRO may join: consecutive ranges of indexes. A run
/// stays within the 64 KB an IP length can say, and within
/// [`MAX_RUN`] segments.
/// The most segments one joined write carries: each is an iovec of the
/// write, and a write takes at most IOV_MAX (1024) of them; 64 is more
/// than the 45 full-sized segments 64 KB holds.
pub const MAX_RUN: usize = 64;

pub fn runs(frames: &[&[u8]], framing: Framing) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut mss, mut ip_len) = (0, 0, 0);
    let mut prev: Option<Segment> = None;
    for (i, f) in frames.iter().enumerate() {
        let seg = segment(f, framing);
        let joined = match (&prev, &seg) {
            (Some(p), Some(s)) => {
                if i == start + 1 {
                    mss = p.payload();
                }
                follows((frames[i - 1], p), (f, s), mss) && ip_len + s.payload() <= 65_535 && i - start < MAX_RUN
            }
            _ => false,
        };
        if joined {
            ip_len += seg.as_ref().map_or(0, Segment::payload);
        } else {
            if i > start {
                out.push(start..i);
            }
            start = i;
            ip_len = seg.as_ref().map_or(0, |s| s.at.end - s.at.l3);
        }
        prev = seg;
    }
    if start < frames.len() {
        out.push(start..frames.len());
    }
    out
}

/// One GSO super-frame standing for `frames`, a run that [`runs`] found
/// joinable (two or more TCP segments), and the virtio_net_hdr to write
/// before it: the first segment's headers with the run's length, the
/// last one's FIN and PSH, and the TCP checksum left for the kernel to
/// complete (NEEDS_CSUM: the field holds the pseudo-header sum, as
/// CHECKSUM_PARTIAL expects). `None` if they are not such a run.
pub fn coalesce(frames: &[&[u8]], framing: Framing) -> Option<(VnetHdr, Vec<u8>)> {
    let joined = join(frames, framing)?;
    let mut f = joined.head;
    for (g, payload) in frames.iter().zip(joined.payloads) {
        f.extend_from_slice(&g[payload]);
    }
    Some((joined.hdr, f))
}

/// [`coalesce`]'s super-frame in parts, for one vectored write that
/// copies no payload: the rewritten headers, then each frame's payload.
pub struct Joined {
    pub hdr: VnetHdr,
    /// The first segment's link, IP and TCP headers, rewritten.
    pub head: Vec<u8>,
    /// Where each frame's payload lies in it, in order.
    pub payloads: Vec<std::ops::Range<usize>>,
}

/// [`coalesce`] without joining the payloads.
pub fn join(frames: &[&[u8]], framing: Framing) -> Option<Joined> {
    if frames.len() < 2 || runs(frames, framing).len() != 1 {
        return None;
    }
    let first = segment(frames[0], framing)?;
    let at = &first.at;
    let head = at.l4 + first.doff;
    let mut payloads = Vec::with_capacity(frames.len());
    let mut last = None;
    for g in frames {
        let s = segment(g, framing)?;
        payloads.push(s.at.l4 + s.doff..s.at.end);
        last = Some(s.flags);
    }
    let data = payloads.iter().map(|p| p.len()).sum::<usize>();
    let mut f = frames[0][..head].to_vec();
    f[at.l4 + 13] |= last? & LAST_ONLY;
    let hdr = finish_join(&mut f, at, data, first.at.end - head);
    Some(Joined { hdr, head: f, payloads })
}

/// Makes `head`, the headers of the first segment of a run that GRO
/// joins (its flags already the run's), stand before the run's `data`
/// bytes of TCP payload: the run's IP length, a new IPv4 header checksum,
/// and the TCP checksum left for the kernel to complete (NEEDS_CSUM: the
/// field holds the pseudo-header sum, not complemented, as
/// CHECKSUM_PARTIAL expects; RFC 793 / RFC 8200 §8.1). Returns the
/// virtio_net_hdr for a GSO write of `mss`-byte segments.
fn finish_join(head: &mut [u8], at: &Layout, data: usize, mss: usize) -> VnetHdr {
    let header_end = head.len();
    let end = header_end + data;
    let ip_len = (end - at.l3) as u16;
    if at.v6 {
        head[at.l3 + 4..at.l3 + 6].copy_from_slice(&(ip_len - 40).to_be_bytes());
    } else {
        head[at.l3 + 2..at.l3 + 4].copy_from_slice(&ip_len.to_be_bytes());
        fill_ipv4_checksum(head, &Layout { end: header_end, protocol: 6, ..*at });
    }
    let ip = &head[at.l3..];
    let pseudo = if at.v6 { sum(0, &ip[8..40]) } else { sum(0, &ip[12..20]) } + (end - at.l4) as u64 + 6;
    let partial = fold(pseudo);
    head[at.l4 + 16..at.l4 + 18].copy_from_slice(&partial.to_be_bytes());
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if at.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: header_end as u16,
        gso_size: mss as u16,
        csum_start: at.l4 as u16,
        csum_offset: 16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP frame with `payload` bytes, seq 1000,
    /// flags PSH|ACK|FIN, IP id 7.
    fn tcp4(payload: usize) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = (20 + 20 + payload) as u16;
        f.extend_from_slice(&[0x45, 0, 0, 0, 0, 7, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[
            0x13, 0x88, 0x00, 0x50, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0x50, 0x19, 0xff, 0xff, 0, 0, 0, 0,
        ]);
        f.extend((0..payload).map(|i| i as u8));
        f
    }

    /// The sum by 16-bit words, as RFC 1071 §1 defines it.
    fn sum_by_halfwords(bytes: &[u8]) -> u16 {
        let mut acc = 0u64;
        for c in bytes.chunks(2) {
            acc += u64::from(c[0]) << 8 | u64::from(*c.get(1).unwrap_or(&0));
        }
        fold(acc)
    }

    #[test]
    fn the_word_wise_sum_folds_to_the_halfword_sum() {
        // Every length from 0 to 70 (odd tails, tails of 2, 4 and 6 bytes
        // after the 8-byte words), over bytes that carry often, and over
        // the all-zero and all-ones inputs where 0 and 0xffff differ.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noisy: Vec<u8> = (0..70)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for input in [noisy, vec![0; 70], vec![0xff; 70]] {
            for len in 0..=input.len() {
                let b = &input[..len];
                assert_eq!(fold(sum(0, b)), sum_by_halfwords(b), "{len} bytes of {:02x?}", &input[..4]);
            }
        }
        // An example worked in RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        assert_eq!(fold(sum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])), 0xddf2);
    }

    /// The RFC 1071 check: a header or segment whose checksum is right
    /// sums (with its pseudo-header) to 0xffff.
    fn verifies(f: &[u8]) -> bool {
        let at = layout(f, Framing::Ethernet).unwrap();
        let ip_ok = at.v6 || fold(sum(0, &f[at.l3..at.l4])) == 0xffff;
        let ip = &f[at.l3..];
        let len = (at.end - at.l4) as u64;
        let pseudo = if at.v6 { sum(0, &ip[8..40]) } else { sum(0, &ip[12..20]) } + len + u64::from(at.protocol);
        ip_ok && fold(sum(pseudo, &f[at.l4..at.end])) == 0xffff
    }

    #[test]
    fn a_partial_checksum_is_completed_and_a_wrong_one_left_wrong() {
        let mut whole = tcp4(1000);
        let at = layout(&whole, Framing::Ethernet).unwrap();
        fill_ipv4_checksum(&mut whole, &at);
        fill_transport_checksum(&mut whole, &at);
        assert!(verifies(&whole));
        // As Linux leaves it: the folded pseudo-header sum of 10.0.0.1,
        // 10.0.0.2, protocol 6 and length 1020, by hand: 0x0a00 + 0x0001 +
        // 0x0a00 + 0x0002 + 6 + 0x03fc = 0x1805.
        let mut partial = whole.clone();
        partial[50..52].copy_from_slice(&0x1805u16.to_be_bytes());
        assert!(complete_partial_checksum(&mut partial, Framing::Ethernet));
        assert_eq!(partial, whole);
        // A complete checksum is left alone, and so is a wrong one.
        let mut same = whole.clone();
        assert!(!complete_partial_checksum(&mut same, Framing::Ethernet));
        assert_eq!(same, whole);
        let mut wrong = whole.clone();
        wrong[50] ^= 0x40;
        assert!(!complete_partial_checksum(&mut wrong, Framing::Ethernet));
        assert!(!verifies(&wrong));
        // A first fragment (more fragments set) holding that sum is left
        // alone: its checksum covers the whole datagram.
        let mut fragment = partial.clone();
        fragment[50..52].copy_from_slice(&0x1805u16.to_be_bytes());
        fragment[20] |= 0x20;
        let before = fragment.clone();
        assert!(!complete_partial_checksum(&mut fragment, Framing::Ethernet));
        assert_eq!(fragment, before);
    }

    #[test]
    fn a_tcp_super_frame_becomes_segments_like_the_kernels_gso() {
        let f = tcp4(3000);
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 54,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let segs = split(&hdr, &f, Framing::Ethernet).unwrap();
        // 3000 bytes of 1448: 1448, 1448, 104.
        let lens: Vec<usize> = segs.iter().map(|s| s.len() - 54).collect();
        assert_eq!(lens, vec![1448, 1448, 104]);
        for (i, s) in segs.iter().enumerate() {
            assert!(verifies(s), "segment {i} checksums");
            assert_eq!(u16::from_be_bytes([s[16], s[17]]) as usize, s.len() - 14, "IP total length");
            assert_eq!(u16::from_be_bytes([s[18], s[19]]), 7 + i as u16, "IP id");
            let seq = u32::from_be_bytes(s[38..42].try_into().unwrap());
            assert_eq!(seq, 1000 + (i * 1448) as u32);
            let flags = s[47];
            assert_eq!(flags & 0x01 != 0, i == 2, "FIN on the last only");
            assert_eq!(flags & 0x08 != 0, i == 2, "PSH on the last only");
            // The payload continues where the previous segment stopped.
            assert_eq!(s[54], ((i * 1448) % 256) as u8);
        }
    }

    #[test]
    fn a_partial_checksum_is_completed() {
        let mut f = tcp4(100);
        // The IP header checksum as a sender computes it.
        let at = layout(&f, Framing::Ethernet).unwrap();
        fill_ipv4_checksum(&mut f, &at);
        assert!(!verifies(&f));
        let hdr = VnetHdr { flags: F_NEEDS_CSUM, csum_start: 34, csum_offset: 16, ..VnetHdr::default() };
        let out = split(&hdr, &f, Framing::Ethernet).unwrap();
        assert_eq!(out.len(), 1);
        assert!(verifies(&out[0]));
        assert_eq!(out[0][..50], f[..50], "only the checksum changed");
    }

    #[test]
    fn a_udp_l4_super_frame_gets_a_header_per_datagram() {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        let payload = 2500usize;
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
        f.extend_from_slice(&[17, 64]);
        f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(&[0x13, 0x88, 0x13, 0x89, 0, 0, 0, 0]);
        f.extend((0..payload).map(|i| (i * 7) as u8));
        let hdr = VnetHdr { gso_type: GSO_UDP_L4, gso_size: 1200, ..VnetHdr::default() };
        let segs = split(&hdr, &f, Framing::Ethernet).unwrap();
        assert_eq!(segs.iter().map(|s| s.len() - 62).collect::<Vec<_>>(), vec![1200, 1200, 100]);
        for s in &segs {
            assert!(verifies(s));
            assert_eq!(u16::from_be_bytes([s[58], s[59]]) as usize, s.len() - 54, "UDP length");
            assert_eq!(u16::from_be_bytes([s[18], s[19]]) as usize, s.len() - 54, "IPv6 payload length");
        }
    }

    #[test]
    fn bad_frames_are_refused_without_panicking() {
        let hdr = VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_TCPV4, gso_size: 100, ..VnetHdr::default() };
        let f = tcp4(500);
        for n in 0..f.len() {
            let _ = split(&hdr, &f[..n], Framing::Ethernet);
            let _ = split(&VnetHdr { gso_type: GSO_NONE, ..hdr }, &f[..n], Framing::Ethernet);
        }
        assert_eq!(split(&VnetHdr { gso_size: 0, ..hdr }, &f, Framing::Ethernet), Err(SplitError::Malformed));
        // A TCP data offset below 5 words (found by the host_packet fuzzer).
        let mut short = f.clone();
        short[46] = 0x00;
        assert_eq!(split(&hdr, &short, Framing::Ethernet), Err(SplitError::Malformed));
        assert_eq!(split(&VnetHdr { gso_type: GSO_UDP, ..hdr }, &f, Framing::Ethernet), Err(SplitError::Malformed));
    }

    /// The segments of a TCP super-frame of `payload` bytes cut at `mss`.
    fn segments(payload: usize, mss: u16, framing: Framing) -> Vec<Vec<u8>> {
        let f = tcp4(payload);
        let f = if framing == Framing::Ip { f[14..].to_vec() } else { f };
        let l4 = if framing == Framing::Ip { 20 } else { 34 };
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: (l4 + 20) as u16,
            gso_size: mss,
            csum_start: l4 as u16,
            csum_offset: 16,
        };
        split(&hdr, &f, framing).unwrap()
    }

    fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn a_vlan_tag_put_back_moves_the_headers_offsets() {
        let gso = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let moved = gso.shifted(4);
        assert_eq!((moved.csum_start, moved.hdr_len, moved.gso_size, moved.csum_offset), (38, 70, 1448, 16));
        // Nothing to move in a header that asks for nothing.
        assert_eq!(VnetHdr::default().shifted(4), VnetHdr::default());
    }

    #[test]
    fn a_run_holds_at_most_max_run_segments() {
        // 100 segments of 100 bytes in sequence: 10 KB, far below 64 KB,
        // but more iovecs than one write should take.
        let segs = segments(10_000, 100, Framing::Ip);
        assert_eq!(segs.len(), 100);
        assert_eq!(runs(&refs(&segs), Framing::Ip), vec![0..MAX_RUN, MAX_RUN..100]);
        let (_, joined) = coalesce(&refs(&segs[..MAX_RUN]), Framing::Ip).unwrap();
        assert_eq!(joined.len(), 40 + MAX_RUN * 100);
    }

    #[test]
    fn joined_segments_cut_again_are_the_same_segments() {
        for framing in [Framing::Ethernet, Framing::Ip] {
            let segs = segments(5000, 1448, framing);
            assert_eq!(segs.len(), 4);
            assert_eq!(runs(&refs(&segs), framing), vec![0..4]);
            let (hdr, frame) = coalesce(&refs(&segs), framing).unwrap();
            assert_eq!((hdr.gso_type, hdr.gso_size, hdr.flags), (GSO_TCPV4, 1448, F_NEEDS_CSUM));
            // The kernel would read the header it is given back as written.
            assert_eq!(VnetHdr::parse(&hdr.to_bytes()), Some(hdr));
            assert_eq!(split(&hdr, &frame, framing).unwrap(), segs, "{framing:?}");
        }
    }

    #[test]
    fn runs_end_where_linux_gro_would_flush() {
        let f = Framing::Ethernet;
        let segs = segments(4 * 1000, 1000, f);
        // A lost segment: the sequence numbers jump.
        let gap = [&segs[0][..], &segs[2][..], &segs[3][..]];
        assert_eq!(runs(&gap, f), vec![0..1, 1..3]);
        // PSH in the middle ends the run after it.
        let mut push = segs.clone();
        push[1][47] |= 0x08;
        // (its checksum is now wrong, but GRO looks at the headers only)
        assert_eq!(runs(&refs(&push), f), vec![0..2, 2..4]);
        // The acknowledgement number moves on from the third segment.
        let mut ack = segs.clone();
        ack[2][45] ^= 1;
        ack[3][45] ^= 1;
        assert_eq!(runs(&refs(&ack), f), vec![0..2, 2..4]);
        // A short segment can only be a run's last.
        let short = segments(1000 + 500, 1000, f);
        let mut middle = short[1].clone();
        middle[47] &= !LAST_ONLY;
        let mut after = segs[1].clone();
        after[38..42].copy_from_slice(&2500u32.to_be_bytes());
        assert_eq!(runs(&[&short[0], &middle, &after], f), vec![0..2, 2..3]);
        // Not TCP: alone.
        let mut udp = segs[1].clone();
        udp[23] = 17;
        assert_eq!(runs(&[&segs[0], &udp, &segs[2]], f), vec![0..1, 1..2, 2..3]);
        assert!(coalesce(&[&segs[0]], f).is_none(), "one segment is written as it is");
        assert!(coalesce(&gap, f).is_none());
    }

    #[test]
    fn every_run_of_a_lossy_flight_rejoins_into_its_segments() {
        // Super-frames of many sizes and segment sizes, with segments
        // dropped by a fixed pattern: each run GRO may join, joined and
        // cut again, gives back exactly its segments, checksums verified.
        for framing in [Framing::Ethernet, Framing::Ip] {
            for (payload, mss) in [(1, 1448), (2896, 1448), (9000, 1448), (60_000, 1448), (7777, 536), (64_000, 8960)] {
                let segs = segments(payload, mss, framing);
                for drop_every in [0, 2, 3, 7] {
                    let kept: Vec<&[u8]> = segs
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| drop_every == 0 || i % drop_every != 1)
                        .map(|(_, s)| s.as_slice())
                        .collect();
                    let rs = runs(&kept, framing);
                    assert_eq!(rs.iter().map(|r| r.len()).sum::<usize>(), kept.len());
                    for r in rs {
                        let run = &kept[r.clone()];
                        if run.len() == 1 {
                            continue;
                        }
                        let (hdr, frame) = coalesce(run, framing).unwrap();
                        assert!(frame.len() - if framing == Framing::Ip { 0 } else { 14 } <= 65_535);
                        let again = split(&hdr, &frame, framing).unwrap();
                        assert_eq!(again, run, "{payload} B, mss {mss}, run {r:?}");
                        if framing == Framing::Ethernet {
                            assert!(again.iter().all(|s| verifies(s)));
                        }
                    }
                }
            }
        }
    }

    /// A segment as a host without TSO would send it: IPv4 + TCP, the
    /// stream's bytes `from..from + len` (the same pattern as [`tcp4`]'s,
    /// continued), sequence number `seq`, IP id `id`, `flags`, checksums
    /// computed here (RFC 791, RFC 793).
    fn wire_segment(from: usize, len: usize, seq: u32, id: u16, flags: u8) -> Vec<u8> {
        let mut f = tcp4(0)[14..].to_vec();
        f.extend((from..from + len).map(|i| (i % 65_536) as u8));
        f[2..4].copy_from_slice(&((40 + len) as u16).to_be_bytes());
        f[4..6].copy_from_slice(&id.to_be_bytes());
        f[24..28].copy_from_slice(&seq.to_be_bytes());
        f[33] = flags;
        let at = layout(&f, Framing::Ip).unwrap();
        fill_ipv4_checksum(&mut f, &at);
        let pseudo = sum(0, &f[12..20]) + (f.len() - 20) as u64 + 6;
        let check = !fold(sum(pseudo, &f[20..]));
        f[36..38].copy_from_slice(&check.to_be_bytes());
        f
    }

    /// Issue 10: the model sees the same packets whether a host offloads
    /// or not. A TCP stream of 10 032 segments handed to squall as 228
    /// TSO super-packets and cut is, byte for byte, the stream a host
    /// without TSO would send one segment at a time; on a path losing 1%
    /// (same seed) both meet the same fates, and the loss over the
    /// segments is 1% within the binomial interval, not 1% of
    /// super-packets.
    #[test]
    fn a_cut_stream_meets_the_model_as_the_wire_stream_does() {
        use squall_link::{Direction, Instant, PacketId, Path, PathConfig, StageConfig};
        let (per_super, mss, supers) = (44usize, 1448usize, 228usize);
        let mut cut = Vec::new();
        let mut wire = Vec::new();
        for i in 0..supers {
            let payload = per_super * mss;
            let seq = 1000 + (i * payload) as u32;
            let id = 7 + (i * per_super) as u16;
            // The super-packet: headers of its first segment, the whole
            // flight's payload (tcp4's pattern restarts at 0 per flight).
            let mut f = tcp4(payload)[14..].to_vec();
            f[4..6].copy_from_slice(&id.to_be_bytes());
            f[24..28].copy_from_slice(&seq.to_be_bytes());
            let hdr = VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: GSO_TCPV4,
                hdr_len: 40,
                gso_size: mss as u16,
                csum_start: 20,
                csum_offset: 16,
            };
            cut.extend(split(&hdr, &f, Framing::Ip).unwrap());
            for k in 0..per_super {
                let last = k + 1 == per_super;
                let flags = if last { 0x19 } else { 0x10 };
                wire.push(wire_segment(k * mss, mss, seq + (k * mss) as u32, id + k as u16, flags));
            }
        }
        assert_eq!(cut.len(), 10_032);
        assert!(cut == wire, "the cut stream differs from the wire's");

        let stage: StageConfig =
            serde_json::from_str(r#"{ "name": "down", "error": { "packet": "1%" }, "error_mode": "drop" }"#).unwrap();
        let fates = |stream: &[Vec<u8>]| {
            let config = PathConfig { direction: Direction::Downlink, stages: vec![stage.clone()] };
            let mut path = Path::new(&config, 7).unwrap();
            let mut delivered = Vec::new();
            for (n, bytes) in stream.iter().enumerate() {
                // A flight's segments enter at its read's instant.
                let at = Instant::from_nanos((n / per_super) as u64 * 1_000_000);
                path.push(at, crate::wire::ip::parse(PacketId(n as u64), bytes.clone()).unwrap());
                while let Some(d) = path.poll(at) {
                    delivered.push(d.packet.id.0);
                }
            }
            while let Some(d) = path.poll(Instant::from_nanos(u64::MAX / 2)) {
                delivered.push(d.packet.id.0);
            }
            delivered
        };
        let (a, b) = (fates(&cut), fates(&wire));
        assert_eq!(a, b, "the same packets met different fates");
        let n = cut.len() as f64;
        let lost = n - a.len() as f64;
        let half = 3.29 * (n * 0.01 * 0.99).sqrt();
        assert!((lost - 0.01 * n).abs() <= half, "{lost} of {n} lost, expected {} ± {half:.0}", 0.01 * n);
    }
}
