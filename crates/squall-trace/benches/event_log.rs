//! Writing speed of events.csv: rows per second into a sink, for the
//! events a bulk TCP flow makes through one stage (enqueue, transmit
//! start and end, deliver; a drop now and then). The emulator's recording
//! thread writes these beside the data plane, and what it cannot keep up
//! with is dropped and counted; the simulator writes them in its own time.
//!
//! Run: `cargo bench -p squall-trace --bench event_log`

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use squall_link::{Direction, DropReason, Event, EventKind, FlowKey, Instant, PacketId, Protocol};
use squall_trace::EventLogWriter;

const EVENTS: u64 = 100_000;

fn events() -> Vec<Event> {
    let stage: Arc<str> = Arc::from("down");
    let flow = FlowKey {
        protocol: Protocol::Tcp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 45_678,
        dst_port: 5201,
    };
    (0..EVENTS)
        .map(|i| {
            let kind = match i % 4 {
                _ if i % 997 == 0 => EventKind::Drop(DropReason::QueueOverflow),
                0 => EventKind::Enqueue,
                1 => EventKind::TransmitStart { frame: 0 },
                2 => EventKind::TransmitEnd { frame: 0 },
                _ => EventKind::Deliver,
            };
            Event {
                time: Instant::from_nanos(1_000_000_000 + i * 1_234),
                stage: stage.clone(),
                direction: Direction::Downlink,
                kind,
                packet: Some(PacketId(i / 4)),
                flow: Some(flow),
                size: 1500,
            }
        })
        .collect()
}

fn write(c: &mut Criterion) {
    let events = events();
    let mut group = c.benchmark_group("event_log");
    group.throughput(Throughput::Elements(EVENTS));
    group.bench_function("tcp_flow_rows", |b| {
        b.iter(|| {
            let mut log = EventLogWriter::new(std::io::sink()).unwrap();
            for e in &events {
                log.write_event(black_box(e)).unwrap();
            }
            log.flush().unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, write);
criterion_main!(benches);
