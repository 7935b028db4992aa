//! An interface as an AF_XDP socket: frames written on one end of a veth
//! pair arrive whole at the other, in order, both ways. Needs root
//! (network namespaces, bpf(2)); under CI=true a missing namespace is a
//! failure, not a skip.

use std::time::{Duration, Instant};

use squall_emu::device::PacketDevice;
mod common;
use common::{in_veth_pair, numbered};
use squall_emu::xdp_socket::XdpSocket;

/// Frames of EtherType 0x88b5 read from `dev` until `want` came or half a
/// second passed without one.
fn receive(dev: &mut dyn PacketDevice, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut deadline = Instant::now() + Duration::from_millis(500);
    while got.len() < want && Instant::now() < deadline {
        match dev.recv().unwrap().map(squall_link::Payload::into_vec) {
            Some(frame) if frame.len() >= 14 && frame[12..14] == [0x88, 0xb5] => {
                got.push(frame);
                deadline = Instant::now() + Duration::from_millis(500);
            }
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    got
}

#[test]
fn frames_cross_a_veth_pair_whole_and_in_order_both_ways() {
    let Some((sent, got, back)) = in_veth_pair("xdp", &[], || {
        let mut a = XdpSocket::open("sq-a")?;
        let mut b = XdpSocket::open("sq-b")?;
        let sent: Vec<Vec<u8>> = (0..3000u16).map(|n| numbered(n, 60 + usize::from(n) % 1455)).collect();
        let mut got = Vec::new();
        for chunk in sent.chunks(100) {
            let payloads: Vec<squall_link::Payload> = chunk.iter().map(|f| f.clone().into()).collect();
            let refs: Vec<&squall_link::Payload> = payloads.iter().collect();
            let mut written = vec![false; refs.len()];
            a.send_batch(&refs, &mut written);
            assert!(written.iter().all(|w| *w), "a batch was refused");
            got.extend(receive(&mut b, chunk.len()));
        }
        b.send(&sent[7]).map_err(|e| squall_emu::EmuError::io("send", e))?;
        let back = receive(&mut a, 1);
        // An empty frame is refused alone (the kernel would keep its
        // UMEM frame for good), the rest of its batch goes.
        let mut written = [true, false];
        b.send_batch(&[&Vec::new().into(), &sent[9].clone().into()], &mut written);
        let after_empty = receive(&mut a, 1);
        assert_eq!(written, [false, true]);
        assert_eq!(after_empty, vec![sent[9].clone()]);
        Ok((sent, got, back))
    }) else {
        return;
    };
    assert_eq!(got.len(), sent.len(), "frames lost");
    assert!(got == sent, "frames changed or out of order");
    assert_eq!(back, vec![sent[7].clone()], "the other way");
}

/// An 802.1Q-tagged frame (IEEE 802.1Q) arrives with its tag, as the
/// packet socket's does.
#[test]
fn a_vlan_tagged_frame_keeps_its_tag() {
    let Some((frame, got)) = in_veth_pair("xdpvlan", &[], || {
        let mut a = squall_emu::packet_socket::PacketSocket::open("sq-a")?;
        let mut b = XdpSocket::open("sq-b")?;
        common::send_tagged(&mut a, &mut b)
    }) else {
        return;
    };
    assert_eq!(got.as_deref(), Some(&frame[..]), "the tagged frame did not arrive as sent");
}

/// A frame's age is counted from when it reached the interface's XDP
/// hook (the program's stamp), not from when squall read it: read 60 ms
/// after it was sent, it is about 60 ms old, and never older than the
/// time since it was sent.
#[test]
fn a_frame_read_late_is_as_old_as_it_waited() {
    let Some(ages) = in_veth_pair("xdpage", &[], || {
        let mut a = XdpSocket::open("sq-a")?;
        let mut b = XdpSocket::open("sq-b")?;
        let mut ages = Vec::new();
        for wait in [Duration::ZERO, Duration::from_millis(60)] {
            let sent = Instant::now();
            a.send(&numbered(1, 100)).map_err(|e| squall_emu::EmuError::io("send", e))?;
            std::thread::sleep(wait);
            assert_eq!(receive(&mut b, 1).len(), 1, "the frame did not arrive");
            ages.push((wait, sent.elapsed(), b.last_age()));
        }
        Ok(ages)
    }) else {
        return;
    };
    for (wait, elapsed, age) in ages {
        let age = age.expect("the frame carries its receive time");
        // Stamped between the send and the read: no older than the whole
        // wait, and at least the sleep old when read after it.
        assert!(age <= elapsed, "{age:?} old, but sent {elapsed:?} before it was read");
        if wait > Duration::ZERO {
            assert!(age >= wait - Duration::from_millis(1), "read after sleeping {wait:?}, only {age:?} old");
        }
    }
}
