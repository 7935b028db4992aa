//! What the packet-device tests share: a namespace of their own and
//! numbered test frames.

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
