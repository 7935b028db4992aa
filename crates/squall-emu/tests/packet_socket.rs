//! An existing interface as a packet device (AF_PACKET): frames written on
//! one end of a veth pair arrive whole at the other, a socket does not read
//! its own frames back, and bad interfaces give errors naming them. Needs
//! root (network namespaces); under CI=true a missing namespace is a
//! failure, not a skip.

use std::time::{Duration, Instant};

use squall_emu::device::PacketDevice;
use squall_emu::netns::NetNs;
use squall_emu::packet_socket::PacketSocket;

fn namespace(name: &str) -> Option<NetNs> {
    match NetNs::create(&format!("squall-{}-{name}", std::process::id())) {
        Ok(ns) => Some(ns),
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no namespace: {e}");
            eprintln!("no network namespace ({e}): skipped");
            None
        }
    }
}

/// Waits up to half a second for a frame of EtherType 0x88b5 on `dev`
/// (the kernel's own IPv6 neighbour traffic may come first).
fn receive(dev: &mut PacketSocket) -> Option<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        match dev.recv().unwrap() {
            Some(frame) if frame.len() >= 14 && frame[12..14] == [0x88, 0xb5] => return Some(frame),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    None
}

#[test]
fn frames_cross_a_veth_pair_whole_and_bad_interfaces_are_named() {
    let Some(ns) = namespace("pktsock") else { return };
    let setup = || -> Result<(), squall_emu::EmuError> {
        ns.ip(&["link", "add", "sq-a", "type", "veth", "peer", "name", "sq-b"])?;
        ns.ip(&["link", "set", "sq-a", "up"])?;
        ns.ip(&["link", "set", "sq-b", "up"])?;
        // A second pair left down.
        ns.ip(&["link", "add", "sq-down", "type", "veth", "peer", "name", "sq-down-peer"])
    };
    let result = setup().and_then(|()| {
        ns.run_in(|| {
            let mut a = PacketSocket::open("sq-a")?;
            let mut b = PacketSocket::open("sq-b")?;
            // An Ethernet frame: broadcast destination, a local source, the
            // IEEE 802 local experimental EtherType 0x88b5, 100 bytes.
            let mut frame = vec![0xff; 6];
            frame.extend([0x02, 0, 0, 0, 0, 1, 0x88, 0xb5]);
            frame.extend(0..100u8);
            a.send(&frame).map_err(|e| squall_emu::EmuError::io("send", e))?;
            let got = receive(&mut b);
            let echo = receive(&mut a);
            let missing = PacketSocket::open("sq-none").err().map(|e| e.to_string());
            let down = PacketSocket::open("sq-down").err().map(|e| e.to_string());
            Ok((frame, got, echo, missing, down))
        })
    });
    let _ = ns.delete();
    let (frame, got, echo, missing, down) = result.unwrap();
    assert_eq!(got.as_deref(), Some(&frame[..]), "the frame did not arrive whole");
    assert_eq!(echo, None, "the sending socket read its own frame");
    let missing = missing.expect("a missing interface is refused");
    assert!(missing.contains("interface `sq-none`: no such interface"), "{missing}");
    let down = down.expect("a down interface is refused");
    assert!(down.contains("interface `sq-down`: the interface is down"), "{down}");
}
