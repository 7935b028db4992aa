//! Ephemeral ports: the local port a host hands a TCP connection that
//! names none, as an operating system does at `connect()`.
//!
//! Linux picks from `net.ipv4.ip_local_port_range` (32768–60999 by
//! default; Documentation/networking/ip-sysctl.rst) and keeps a port taken
//! while its connection is open or in TIME-WAIT (`TCP_TIMEWAIT_LEN`, 60 s,
//! include/net/tcp.h; squall-tcp's `TcpConfig::time_wait`). Linux starts
//! its search at a hashed offset per destination and may share a port
//! between connections to different destinations (`__inet_hash_connect`,
//! net/ipv4/inet_hashtables.c); the simulator, which delivers by host and
//! port alone, searches in order from where the last search stopped and
//! gives each port to one connection of the host at a time. A connect
//! fails only when every port of the range is taken.

use squall_scenario::EphemeralPorts;

/// One host's ephemeral ports: which are taken, and where the next search
/// starts. The bitmap is made at the first allocation, so hosts that never
/// connect cost nothing.
#[derive(Debug)]
pub(crate) struct PortAllocator {
    range: EphemeralPorts,
    /// Ports given out or reserved, one bit per port of the range, as far
    /// as the last one taken: a host with a few connections holds a few
    /// words, not the 3.5 KB of Linux's whole range (a dumbbell of 1 000
    /// pairs has 1 000 such hosts).
    taken: Vec<u64>,
    /// Ports reserved before the run (flows that name their ports).
    reserved: Vec<u16>,
    /// Ports given out and not yet released.
    held: usize,
    /// Offset in the range where the next search starts.
    next: usize,
}

/// No port of a host's range was free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exhausted {
    /// Connections of the host holding an ephemeral port (open or in
    /// TIME-WAIT).
    pub held: usize,
    /// Ports of the range taken otherwise: by flows that name their ports,
    /// or by servers.
    pub other: usize,
}

impl PortAllocator {
    pub fn new(range: EphemeralPorts) -> Self {
        PortAllocator { range, taken: Vec::new(), reserved: Vec::new(), held: 0, next: 0 }
    }

    pub fn range(&self) -> EphemeralPorts {
        self.range
    }

    /// Keeps `port` out of the allocator's hands (a flow that names its
    /// port binds it when it connects, later).
    pub fn reserve(&mut self, port: u16) {
        if self.range.contains(port) {
            self.reserved.push(port);
        }
    }

    fn offset(&self, port: u16) -> usize {
        usize::from(port - self.range.low)
    }

    fn is_taken(&self, offset: usize) -> bool {
        self.taken.get(offset / 64).is_some_and(|w| w & (1 << (offset % 64)) != 0)
    }

    fn take(&mut self, offset: usize) {
        if self.taken.len() <= offset / 64 {
            self.taken.resize(offset / 64 + 1, 0);
        }
        self.taken[offset / 64] |= 1 << (offset % 64);
    }

    /// The next free port in the range at or after where the last search
    /// stopped, skipping those for which `busy` is true (bound on the
    /// host by a server); taken until [`Self::release`].
    pub fn allocate(&mut self, busy: impl Fn(u16) -> bool) -> Result<u16, Exhausted> {
        let len = self.range.len();
        for p in std::mem::take(&mut self.reserved) {
            self.take(self.offset(p));
        }
        for i in 0..len {
            let o = (self.next + i) % len;
            if self.is_taken(o) {
                continue;
            }
            let port = self.range.low + o as u16;
            if busy(port) {
                continue;
            }
            self.take(o);
            self.held += 1;
            self.next = (o + 1) % len;
            return Ok(port);
        }
        // Every port of the range is held, reserved or bound.
        Err(Exhausted { held: self.held, other: len - self.held })
    }

    /// `port`, given by [`Self::allocate`], is free again (its connection
    /// closed, after TIME-WAIT).
    pub fn release(&mut self, port: u16) {
        if !self.range.contains(port) {
            return;
        }
        let o = self.offset(port);
        if self.is_taken(o) {
            self.taken[o / 64] &= !(1 << (o % 64));
            self.held -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(low: u16, high: u16) -> PortAllocator {
        PortAllocator::new(EphemeralPorts { low, high })
    }

    #[test]
    fn ports_come_in_order_skipping_reserved_and_bound_ones() {
        let mut a = range(100, 105);
        a.reserve(101);
        a.reserve(7); // outside the range: nothing to keep
        let got: Vec<u16> = (0..4).map(|_| a.allocate(|p| p == 103).unwrap()).collect();
        assert_eq!(got, [100, 102, 104, 105]);
        assert_eq!(a.allocate(|p| p == 103), Err(Exhausted { held: 4, other: 2 }));
    }

    #[test]
    fn a_released_port_is_given_again_after_the_others() {
        let mut a = range(1, 3);
        assert_eq!((a.allocate(|_| false), a.allocate(|_| false)), (Ok(1), Ok(2)));
        a.release(1);
        // The search goes on from where it stopped (3), then wraps to 1.
        assert_eq!(a.allocate(|_| false), Ok(3));
        assert_eq!(a.allocate(|_| false), Ok(1));
        assert_eq!(a.allocate(|_| false), Err(Exhausted { held: 3, other: 0 }));
        a.release(2);
        a.release(2); // twice: still one port back
        assert_eq!(a.allocate(|_| false), Ok(2));
        assert_eq!(a.allocate(|_| false), Err(Exhausted { held: 3, other: 0 }));
    }

    #[test]
    fn the_bitmap_reaches_only_the_last_port_taken() {
        // Linux's range, 28 232 ports: 442 words (28 232 / 64 rounded up) when whole.
        let mut a = range(32_768, 60_999);
        a.release(40_000); // never given: nothing to free, nothing grown
        assert!(a.taken.is_empty());
        for k in 0..200 {
            assert_eq!(a.allocate(|_| false), Ok(32_768 + k));
        }
        assert_eq!(a.taken.len(), 4, "200 ports: offsets 0-199, words 0-3");
        a.reserve(60_999);
        assert_eq!(a.allocate(|_| false), Ok(32_968));
        assert_eq!(a.taken.len(), 442, "the range's last port reserved: offset 28 231, word 441");
        assert!(a.is_taken(28_231));
    }

    #[test]
    fn the_whole_u16_range_works() {
        let mut a = range(65_534, 65_535);
        assert_eq!((a.allocate(|_| false), a.allocate(|_| false)), (Ok(65_534), Ok(65_535)));
        assert!(a.allocate(|_| false).is_err());
    }
}
