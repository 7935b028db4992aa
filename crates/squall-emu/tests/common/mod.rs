//! What the packet-device tests share: a namespace of their own,
//! numbered test frames, and the 802.1Q case.

use std::time::{Duration, Instant};

use squall_emu::device::PacketDevice;
use squall_emu::netns::NetNs;

/// A namespace for this test process, or `None` (skipped) where none can
/// be made; under CI=true that is a failure.
pub fn namespace(name: &str) -> Option<NetNs> {
    match NetNs::create(&format!("squall-{}-{name}", std::process::id())) {
        Ok(ns) => Some(ns),
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no namespace: {e}");
            eprintln!("no network namespace ({e}): skipped");
            None
        }
    }
}

/// A broadcast frame of the IEEE 802 local experimental EtherType 0x88b5,
/// `len` bytes, numbered `n` in its first two payload bytes, the rest
/// counting up (so a changed byte shows).
pub fn numbered(n: u16, len: usize) -> Vec<u8> {
    let mut frame = vec![0xff; 6];
    frame.extend([0x02, 0, 0, 0, 0, 1, 0x88, 0xb5]);
    frame.extend(n.to_be_bytes());
    frame.extend((0..len.saturating_sub(16)).map(|i| i as u8));
    frame
}

/// The veth pair sq-a / sq-b in `ns`, both up, with `link_args` (say
/// `["mtu", "9000"]`) given to each end.
pub fn veth_pair(ns: &NetNs, link_args: &[&str]) -> Result<(), squall_emu::EmuError> {
    let mut add = vec!["link", "add", "sq-a"];
    add.extend(link_args);
    add.extend(["type", "veth", "peer", "name", "sq-b"]);
    add.extend(link_args);
    ns.ip(&add)?;
    ns.ip(&["link", "set", "sq-a", "up"])?;
    ns.ip(&["link", "set", "sq-b", "up"])
}

/// `f` run inside a namespace of its own that holds the veth pair sq-a /
/// sq-b ([`veth_pair`] with `link_args`), the namespace removed after;
/// `None` (skipped) where no namespace can be made, as [`namespace`].
/// Panics with the error if the pair or `f` fails.
pub fn in_veth_pair<T: Send>(
    name: &str,
    link_args: &[&str],
    f: impl FnOnce() -> Result<T, squall_emu::EmuError> + Send,
) -> Option<T> {
    let ns = namespace(name)?;
    let result = veth_pair(&ns, link_args).and_then(|()| ns.run_in(f));
    let _ = ns.delete();
    Some(result.unwrap())
}

/// Sends an 802.1Q-tagged frame (VLAN 5, priority 3: TCI 0x6005, then
/// EtherType 0x88b5 and 100 bytes) from `a` and reads `b` for half a
/// second: the frame sent, and the first frame `b` read that is not the
/// kernel's own IPv6 traffic (neighbour discovery).
#[allow(dead_code)] // not every test binary sends one
pub fn send_tagged(
    a: &mut dyn PacketDevice,
    b: &mut dyn PacketDevice,
) -> Result<(Vec<u8>, Option<Vec<u8>>), squall_emu::EmuError> {
    let mut frame = vec![0xff; 6];
    frame.extend([0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0x60, 0x05, 0x88, 0xb5]);
    frame.extend(0..100u8);
    a.send(&frame).map_err(|e| squall_emu::EmuError::io("send", e))?;
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        match b.recv().map_err(|e| squall_emu::EmuError::io("recv", e))?.map(squall_link::Payload::into_vec) {
            Some(f) if f.len() > 14 && f[12..14] != [0x86, 0xdd] => return Ok((frame, Some(f))),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    Ok((frame, None))
}
