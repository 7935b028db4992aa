//! Small helpers to drive a path in tests (smoltcp's `send!`/`recv!` style).

#![allow(dead_code)]

use std::net::Ipv4Addr;

use squall_link::*;

pub fn flow(port: u16) -> FlowKey {
    FlowKey {
        protocol: Protocol::Udp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: port,
        dst_port: 5001,
    }
}

pub fn packet(id: u64, size: u32) -> Packet {
    Packet::new(PacketId(id), size, flow(1))
}

pub fn path(stages: Vec<StageConfig>) -> Path {
    Path::new(&PathConfig { direction: Direction::Downlink, stages }, 1).expect("valid path")
}

pub fn stage(f: impl FnOnce(&mut StageConfig)) -> StageConfig {
    let mut s = StageConfig::named("s");
    f(&mut s);
    s
}

/// Runs the path until it is idle (bounded, to catch livelock), returning
/// every delivery.
pub fn drain(path: &mut Path) -> Vec<Delivery> {
    let mut out = Vec::new();
    for _ in 0..10_000_000 {
        let Some(t) = path.next_wakeup() else { return out };
        while let Some(d) = path.poll(t) {
            out.push(d);
        }
    }
    panic!("path did not go idle: livelock?");
}

pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A CBR background source `name` of `rate` in `size`-byte packets, in
/// no particular class, consumed at its stage.
pub fn cbr(name: &str, rate: &str, size: u64) -> BackgroundConfig {
    BackgroundConfig {
        name: name.into(),
        rate: Some(rate.parse().unwrap()),
        load: None,
        arrivals: Arrivals::Cbr,
        gap: None,
        size: Distribution::constant(Bytes(size)),
        burst: None,
        phase: None,
        on: None,
        off: None,
        class: None,
        forward: false,
    }
}
