//! An existing interface as a packet device (AF_PACKET): frames written on
//! one end of a veth pair arrive whole at the other, a socket does not read
//! its own frames back, and bad interfaces give errors naming them. Needs
//! root (network namespaces); under CI=true a missing namespace is a
//! failure, not a skip.

use std::time::{Duration, Instant};

use squall_emu::device::PacketDevice;
mod common;
use common::{in_veth_pair, namespace, numbered, veth_pair};
use squall_emu::packet_socket::PacketSocket;

/// Waits up to half a second for a frame of EtherType 0x88b5 on `dev`
/// (the kernel's own IPv6 neighbour traffic may come first).
fn receive(dev: &mut PacketSocket) -> Option<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        match dev.recv().unwrap().map(squall_link::Payload::into_vec) {
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
        veth_pair(&ns, &[])?;
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

#[test]
fn frames_longer_than_a_ring_slot_keep_their_place_and_ring_overflow_is_counted() {
    let Some((mixed, got, flood, read, dropped)) = in_veth_pair("pktring", &["mtu", "9000"], || {
        // No IPv6 neighbour traffic of the kernel's own to count.
        for key in ["all", "default", "sq-a", "sq-b"] {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6"), "1");
        }
        let mut a = PacketSocket::open("sq-a")?;
        let mut b = PacketSocket::open("sq-b")?;
        let send = |a: &mut PacketSocket, f: &[u8]| a.send(f).map_err(|e| squall_emu::EmuError::io("send", e));
        // Small, large (beyond a 2048-byte slot), small, large.
        let mixed: Vec<Vec<u8>> = [(0, 100), (1, 4000), (2, 60), (3, 8000)].map(|(n, l)| numbered(n, l)).into();
        for f in &mixed {
            send(&mut a, f)?;
        }
        let got: Vec<Option<Vec<u8>>> = (0..mixed.len()).map(|_| receive(&mut b)).collect();
        // 6000 frames sent before b reads any: more than the ring holds.
        let flood = 6000u16;
        for n in 0..flood {
            send(&mut a, &numbered(n, 100))?;
        }
        let mut read = 0u64;
        while receive(&mut b).is_some() {
            read += 1;
        }
        Ok((mixed, got, u64::from(flood), read, b.kernel_dropped()))
    }) else {
        return;
    };
    for (i, (sent, got)) in mixed.iter().zip(&got).enumerate() {
        assert_eq!(got.as_deref(), Some(&sent[..]), "frame {i} ({} bytes) not whole or out of place", sent.len());
    }
    assert!(read < flood, "the ring held all {flood} frames: nothing overflowed");
    assert_eq!(read + dropped, flood, "read {read} + dropped {dropped} should be the {flood} sent");
}

#[test]
fn a_vlan_tagged_frame_keeps_its_tag() {
    let Some((frame, got)) = in_veth_pair("pktvlan", &[], || {
        let mut a = PacketSocket::open("sq-a")?;
        let mut b = PacketSocket::open("sq-b")?;
        common::send_tagged(&mut a, &mut b)
    }) else {
        return;
    };
    assert_eq!(got.as_deref(), Some(&frame[..]), "the tagged frame did not arrive as sent");
}
