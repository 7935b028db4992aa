//! Link mechanics against hand-computed timings (VALIDATION cases 4 and 6)
//! and the behaviour of each part of a stage.

mod common;

use common::*;
use squall_link::*;

#[test]
fn serialisation_and_propagation_are_exact() {
    // Case 4: 1500 B at 1 Mbit/s = 12 ms, plus 50 ms propagation.
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.delay = ms(50);
    })]);
    p.push(Instant::from_millis(5), packet(1, 1500));
    let d = drain(&mut p);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].at, Instant::from_millis(5 + 12 + 50));
}

#[test]
fn allocation_delay_applies_only_to_an_empty_stage() {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.allocation_delay = Some(Distribution::constant(ms(100)));
    })]);
    p.push(Instant::ZERO, packet(1, 1500));
    p.push(Instant::ZERO, packet(2, 1500));
    let d = drain(&mut p);
    // First waits for allocation (100 ms) then 12 ms; second follows at 124 ms.
    assert_eq!(d.iter().map(|d| d.at).collect::<Vec<_>>(), vec![Instant::from_millis(112), Instant::from_millis(124)]);
    // The stage emptied, so a later packet waits for allocation again.
    p.push(Instant::from_secs(1), packet(3, 1500));
    assert_eq!(drain(&mut p)[0].at, Instant::from_millis(1000 + 100 + 12));
}

#[test]
fn fragmentation_adds_frame_headers() {
    // Case 6: S = 1000 B, F = 300 B, H = 20 B: ceil(1000/300) = 4 frames,
    // (1000 + 4·20)·8 / 64 kbit/s = 135 ms.
    let mut p = path(vec![stage(|s| {
        s.rate = Some("64 kbit/s".parse().unwrap());
        s.fragmentation = Some(Fragmentation { frame_payload: Bytes(300), frame_header: Bytes(20), compression: 1.0 });
    })]);
    p.push(Instant::ZERO, packet(1, 1000));
    let d = drain(&mut p);
    assert_eq!(d[0].at, Instant::from_millis(135));
    let frames = p.drain_events().iter().filter(|e| matches!(e.kind, EventKind::TransmitStart { .. })).count();
    assert_eq!(frames, 4);
}

#[test]
fn compression_shrinks_what_goes_on_the_wire() {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("8 kbit/s".parse().unwrap());
        s.fragmentation = Some(Fragmentation { frame_payload: Bytes(1000), frame_header: Bytes(0), compression: 0.5 });
    })]);
    p.push(Instant::ZERO, packet(1, 1000));
    // 500 B at 1000 B/s.
    assert_eq!(drain(&mut p)[0].at, Instant::from_millis(500));
}

#[test]
fn queue_limit_counts_waiting_packets_and_send_buffer_adds_capacity() {
    // Seawind's case study: a 7-packet queue plus a 4-packet link send
    // buffer hold 11 packets (seed 000 §7).
    let mut p = path(vec![stage(|s| {
        s.rate = Some("9600 bit/s".parse().unwrap());
        s.queue.packets = Some(7);
        s.send_buffer = BufferLimit::Packets(4);
    })]);
    for i in 0..20 {
        p.push(Instant::ZERO, packet(i, 300));
    }
    let delivered = drain(&mut p).len();
    assert_eq!(delivered, 11);
    assert_eq!(p.drops_by_reason()[DropReason::QueueOverflow.index()].1, 9);
    assert!(p.stats().conserved());
}

#[test]
fn arq_retransmits_until_success_or_the_retry_limit() {
    // Every frame fails: with 3 retries each packet is sent 4 times and then
    // dropped with reason arq_limit, after 4·12 ms + 3·5 ms of ARQ delay.
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.error = ErrorModel::Packet(Probability::ONE);
        s.error_mode = ErrorMode::Arq(ArqConfig { delay: ms(5), retries: 3 });
    })]);
    p.push(Instant::ZERO, packet(1, 1500));
    assert!(drain(&mut p).is_empty());
    let ev = p.drain_events();
    let starts = ev.iter().filter(|e| matches!(e.kind, EventKind::TransmitStart { .. })).count();
    assert_eq!(starts, 4);
    let drop = ev.iter().find(|e| matches!(e.kind, EventKind::Drop(_))).unwrap();
    assert_eq!(drop.kind, EventKind::Drop(DropReason::ArqLimit));
    assert_eq!(drop.time, Instant::from_millis(4 * 12 + 3 * 5));
}

#[test]
fn corrupt_mode_delivers_with_one_flipped_bit() {
    let mut p = path(vec![stage(|s| {
        s.error = ErrorModel::Packet(Probability::ONE);
        s.error_mode = ErrorMode::Corrupt;
    })]);
    let mut pkt = packet(1, 100);
    pkt.payload = Some(vec![0u8; 100].into());
    p.push(Instant::ZERO, pkt);
    let d = drain(&mut p);
    assert!(d[0].packet.corrupted);
    let ones: u32 = d[0].packet.payload.as_ref().unwrap().bytes().iter().map(|b| b.count_ones()).sum();
    assert_eq!(ones, 1);
}

#[test]
fn hold_blackout_delays_and_drop_blackout_drops() {
    let rate = |s: &mut StageConfig| s.rate = Some("1 Mbit/s".parse().unwrap());
    // Hold: a packet sent during [1 s, 3 s) leaves at 3 s + 12 ms.
    let mut p = path(vec![stage(rate)]);
    let on = Change::BlackoutStart { stage: "s".into(), mode: BlackoutMode::Hold };
    let off = Change::BlackoutEnd { stage: "s".into() };
    assert!(p.apply(Instant::from_secs(1), &on));
    p.push(Instant::from_secs(2), packet(1, 1500));
    assert!(p.poll(Instant::from_millis(2999)).is_none());
    p.apply(Instant::from_secs(3), &off);
    assert_eq!(drain(&mut p)[0].at, Instant::from_millis(3012));

    // Drop: the queue is flushed and arrivals are dropped.
    let mut p = path(vec![stage(rate)]);
    for i in 0..3 {
        p.push(Instant::ZERO, packet(i, 1500));
    }
    p.apply(Instant::from_millis(1), &Change::BlackoutStart { stage: "s".into(), mode: BlackoutMode::Drop });
    p.push(Instant::from_millis(2), packet(9, 1500));
    p.apply(Instant::from_millis(3), &off);
    assert!(drain(&mut p).is_empty());
    assert_eq!(p.drops_by_reason()[DropReason::Blackout.index()].1, 4);
    assert!(p.stats().conserved());
}

#[test]
fn sojourn_limit_drops_packets_that_waited_too_long() {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.queue.max_sojourn = Some(ms(30));
    })]);
    for i in 0..5 {
        p.push(Instant::ZERO, packet(i, 1500));
    }
    // Packets leave the queue at 0, 12, 24, 36, 48 ms: the last two waited
    // more than 30 ms.
    assert_eq!(drain(&mut p).len(), 3);
    assert_eq!(p.drops_by_reason()[DropReason::SojournLimit.index()].1, 2);
}

#[test]
fn random_delay_never_reorders_a_flow_unless_allowed() {
    let jitter = Distribution::Uniform { low: ms(0), high: ms(100) };
    for reorder in [false, true] {
        let mut p = path(vec![stage(|s| {
            s.rate = Some("10 Mbit/s".parse().unwrap());
            s.jitter = Some(jitter.clone());
            s.reorder = reorder;
        })]);
        for i in 0..200 {
            p.push(Instant::from_millis(i), packet(i, 1000));
        }
        let ids: Vec<u64> = drain(&mut p).iter().map(|d| d.packet.id.0).collect();
        let in_order = ids.windows(2).all(|w| w[0] < w[1]);
        assert_eq!(in_order, !reorder, "reorder = {reorder}");
        assert_eq!(ids.len(), 200);
    }
}

#[test]
fn many_flows_each_keep_their_order_while_overtaking_each_other() {
    // 3000 flows (beyond the 1024 at which the channel gives up the
    // order queues of flows with nothing on the link), 4 packets each,
    // sent round robin 20 us apart: a flow's packets 60 ms apart, which a
    // random delay of up to 100 ms would reorder.
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Gbit/s".parse().unwrap());
        s.jitter = Some(Distribution::Uniform { low: ms(0), high: ms(100) });
    })]);
    let flows = 3000u64;
    for i in 0..4 * flows {
        let port = (i % flows) as u16;
        p.push(Instant::from_micros(20 * i), Packet::new(PacketId(i), 1000, flow(port)));
    }
    let out = drain(&mut p);
    assert_eq!(out.len() as u64, 4 * flows);
    assert!(p.stats().conserved());
    let mut last = std::collections::HashMap::new();
    for d in &out {
        if let Some(prev) = last.insert(d.packet.flow.src_port, d.packet.id.0) {
            assert!(prev < d.packet.id.0, "flow {} reordered: {} after {prev}", d.packet.flow.src_port, d.packet.id.0);
        }
    }
    // Across flows the delay does reorder: a later-sent packet often leaves first.
    let overtaken = out.windows(2).filter(|w| w[1].packet.id < w[0].packet.id).count();
    assert!(overtaken > 100, "{overtaken}");
}

/// A link that kept its flows' order as a FIFO (no flow order looked up)
/// until a state shortened its delay from 100 ms to 10 ms: the packets
/// sent after the change would arrive before those sent before it, and
/// are held until those left (seed 000 §4.3). Every packet is 1 000
/// bytes, 0.8 ms at 10 Mbit/s; the change comes at 5 ms, after the first
/// 7 packets started (0, 0.8, ..., 4.8 ms), so the 8th arrives at
/// 6.4 + 10 = 16.4 ms by the new delay and leaves only with the 7th, at
/// 5.6 + 100 = 105.6 ms.
#[test]
fn packets_sent_after_a_shorter_delay_wait_for_their_flow() {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("10 Mbit/s".parse().unwrap());
        s.delay = ms(100);
    })]);
    for i in 0..20 {
        p.push(Instant::ZERO, packet(i, 1000));
    }
    let patch = StagePatch::default().with("delay", |c| c.delay = ms(10));
    p.apply(Instant::from_millis(5), &Change::Set { stage: "s".into(), patch: Box::new(patch) });
    let out = drain(&mut p);
    let ids: Vec<u64> = out.iter().map(|d| d.packet.id.0).collect();
    assert_eq!(ids, (0..20).collect::<Vec<u64>>());
    assert_eq!(out[6].at, Instant::from_micros(105_600));
    assert_eq!(out[7].at, Instant::from_micros(105_600), "held for packet 6, not at 16.4 ms");
    // The last (16 + 10 = 26 ms) is held too.
    assert_eq!(out[19].at, Instant::from_micros(105_600));
}

/// Link ARQ sends a frame again 5 ms after its error, after frames sent
/// later: every flow still leaves in order, and the flows overtake each
/// other.
#[test]
fn link_arq_keeps_every_flow_in_order() {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("10 Mbit/s".parse().unwrap());
        s.delay = ms(10);
        s.error = ErrorModel::Packet(Probability::new(0.2).unwrap());
        s.error_mode = ErrorMode::Arq(ArqConfig { delay: ms(5), retries: 20 });
        s.send_buffer = BufferLimit::Packets(100);
    })]);
    for i in 0..400u64 {
        p.push(Instant::from_micros(900 * i), Packet::new(PacketId(i), 1000, flow((i % 4) as u16)));
    }
    let out = drain(&mut p);
    assert_eq!(out.len(), 400);
    assert!(p.stats().conserved());
    let mut last = std::collections::HashMap::new();
    for d in &out {
        if let Some(prev) = last.insert(d.packet.flow.src_port, d.packet.id.0) {
            assert!(prev < d.packet.id.0, "flow {} reordered: {} after {prev}", d.packet.flow.src_port, d.packet.id.0);
        }
    }
    let overtaken = out.windows(2).filter(|w| w[1].packet.id < w[0].packet.id).count();
    assert!(overtaken > 10, "{overtaken}");
}

#[test]
fn state_change_sets_parameters_at_one_instant() {
    let mut p = path(vec![stage(|s| s.rate = Some("1 Mbit/s".parse().unwrap()))]);
    let patch = StagePatch::default()
        .with("rate", |c| c.rate = Some("2 Mbit/s".parse().unwrap()))
        .with("delay", |c| c.delay = ms(10));
    p.apply(Instant::from_secs(1), &Change::Set { stage: "s".into(), patch: Box::new(patch) });
    p.push(Instant::from_secs(1), packet(1, 1500));
    assert_eq!(drain(&mut p)[0].at, Instant::from_millis(1000 + 6 + 10));
    // A change for a stage elsewhere is not applied here.
    assert!(!p.apply(Instant::from_secs(2), &Change::BlackoutEnd { stage: "other".into() }));
}

#[test]
fn stages_pipeline_in_order() {
    let hop = |name: &str, rate: &str, delay| {
        let mut s = StageConfig::named(name);
        s.rate = Some(rate.parse().unwrap());
        s.delay = ms(delay);
        s
    };
    let mut p = path(vec![hop("wired", "10 Mbit/s", 10), hop("radio", "1 Mbit/s", 100)]);
    p.push(Instant::ZERO, packet(1, 1250));
    // 1 ms + 10 ms, then 10 ms + 100 ms.
    assert_eq!(drain(&mut p)[0].at, Instant::from_millis(121));
}

#[test]
fn receive_buffer_window_limits_packets_in_flight() {
    // A 1-packet receive buffer on a long link is stop-and-wait: one packet
    // per (transmission + propagation).
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.delay = ms(100);
        s.receive_buffer = Some(BufferLimit::Packets(1));
    })]);
    p.push(Instant::ZERO, packet(1, 1500));
    p.push(Instant::ZERO, packet(2, 1500));
    let at: Vec<_> = drain(&mut p).iter().map(|d| d.at).collect();
    assert_eq!(at, vec![Instant::from_millis(112), Instant::from_millis(224)]);
}

#[test]
fn events_name_every_step_of_a_packet() {
    let mut p = path(vec![stage(|s| s.rate = Some("1 Mbit/s".parse().unwrap()))]);
    p.push(Instant::ZERO, packet(7, 1500));
    drain(&mut p);
    let names: Vec<_> = p.drain_events().iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, vec!["enqueue", "tx_start", "tx_end", "deliver"]);
}

#[test]
fn radio_stage_delivers_table_ii_capacity_less_truncation() {
    use squall_link::radio::{ChannelConfig, MeasuredSnr, Modulation, ModulationChoice, RadioConfig};
    // Error-free channel (300 dB), fixed modulation: frames of 108·log2(M)
    // bits at 1500 per second. 1500-byte packets fill ceil(12000/F) frames,
    // so the IP rate is 1500·12000/ceil(12000/F) bit/s (VALIDATION case 13).
    for (m, bits) in [(Modulation::Bpsk, 1u64), (Modulation::Qam16, 4), (Modulation::Qam256, 8)] {
        let radio = RadioConfig {
            channel: ChannelConfig::Measured(MeasuredSnr {
                file: None,
                snr_db: vec![vec![300.0]],
                predicted_snr_db: None,
            }),
            modulation: ModulationChoice::Fixed(m),
            ..Default::default()
        };
        let mut p = path(vec![stage(|s| {
            s.radio = Some(radio);
            s.queue.packets = Some(50);
        })]);
        let frame_bits = 108 * bits;
        let frames_per_packet = 12_000u64.div_ceil(frame_bits);
        // Keep the queue full for 10 s, then count what left in [2 s, 10 s).
        let mut delivered = Vec::new();
        let mut sent = 0;
        for ms in 0..10_000u64 {
            let now = Instant::from_millis(ms);
            while let Some(t) = p.next_wakeup().filter(|&t| t <= now) {
                while let Some(d) = p.poll(t) {
                    delivered.push(d.at);
                }
            }
            while p.stats().in_flight < 20 {
                p.push(now, packet(sent, 1500));
                sent += 1;
            }
        }
        let n = delivered.iter().filter(|&&t| t >= Instant::from_secs(2) && t < Instant::from_secs(10)).count() as f64;
        let rate = n * 12_000.0 / 8.0;
        let expected = 1500.0 * 12_000.0 / frames_per_packet as f64;
        assert!((rate - expected).abs() / expected < 0.005, "{m:?}: {rate} bit/s, expected {expected}");
        assert!(p.stats().conserved());
    }
}

#[test]
fn radio_stage_refuses_channel_link_keys() {
    use squall_link::radio::RadioConfig;
    let mut s = StageConfig::named("radio");
    s.radio = Some(RadioConfig::default());
    s.rate = Some("1 Mbit/s".parse().unwrap());
    let e = s.validate().unwrap_err();
    assert_eq!(e.key, "radio.rate");
}

/// The Internet checksum's ones' complement sum (RFC 1071 §4.1), folded.
fn ones_complement_sum(words: impl IntoIterator<Item = u16>) -> u16 {
    let mut sum: u32 = words.into_iter().map(u32::from).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn words(bytes: &[u8]) -> impl Iterator<Item = u16> + '_ {
    bytes.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
}

/// Whether an IPv4/UDP packet's two checksums verify (RFC 791 §3.1: the
/// header sums to 0xffff; RFC 768: pseudo header, UDP header and data sum
/// to 0xffff).
fn checksums_verify(ip: &[u8]) -> bool {
    let header_ok = ones_complement_sum(words(&ip[..20])) == 0xffff;
    let udp = &ip[20..];
    let pseudo = [&ip[12..20], &[0, 17], &(udp.len() as u16).to_be_bytes()[..]].concat();
    let udp_ok = ones_complement_sum(words(&pseudo).chain(words(udp))) == 0xffff;
    header_ok && udp_ok
}

/// A 1 000-byte IPv4/UDP packet with both checksums right.
fn udp_bytes(id: u16) -> Vec<u8> {
    let mut ip = vec![0u8; 1000];
    ip[..20].copy_from_slice(&[
        0x45,
        0,
        0x03,
        0xe8,
        (id >> 8) as u8,
        id as u8,
        0,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        1,
        1,
    ]);
    let check = !ones_complement_sum(words(&ip[..20]));
    ip[10..12].copy_from_slice(&check.to_be_bytes());
    ip[20..28].copy_from_slice(&[0x13, 0x88, 0x13, 0x89, 0x03, 0xd4, 0, 0]);
    for (i, b) in ip[28..].iter_mut().enumerate() {
        *b = (i as u16 ^ id) as u8;
    }
    let pseudo = [&ip[12..20], &[0, 17, 0x03, 0xd4][..]].concat();
    let check = !ones_complement_sum(words(&pseudo).chain(words(&ip[20..])));
    ip[26..28].copy_from_slice(&check.to_be_bytes());
    ip
}

/// Corrupt mode with a per-bit error probability flips every bit in error,
/// not one per frame: on 1 000-byte packets with b = 10⁻³, 1 − 0.999^8000
/// = 99.97% of the packets are corrupted, each with binomial(8000, 10⁻³)
/// flipped bits given at least one (mean 8.0027). The flipped bits are
/// found by comparing each delivered packet's bytes with what was sent,
/// and equal the bits its corrupt events report; every corrupted packet
/// fails its IPv4 or UDP checksum (RFC 1071), computed here by hand. 2 000
/// packets: σ of the mean count ≈ √(8/2000) = 0.063, tolerance ±0.25.
#[test]
fn corrupt_mode_flips_each_bit_in_error_and_the_checksums_see_them() {
    let mut p = path(vec![stage(|s| {
        s.error = ErrorModel::Bit(Probability::new(1e-3).unwrap());
        s.error_mode = ErrorMode::Corrupt;
    })]);
    let sent: Vec<Vec<u8>> = (0..2000u16).map(udp_bytes).collect();
    assert!(sent.iter().all(|b| checksums_verify(b)));
    for (i, bytes) in sent.iter().enumerate() {
        let mut pkt = packet(i as u64, 1000);
        pkt.payload = Some(bytes.clone().into());
        p.push(Instant::from_millis(i as u64), pkt);
    }
    let delivered = drain(&mut p);
    assert_eq!(delivered.len(), 2000);
    let mut reported = std::collections::HashMap::new();
    for e in p.drain_events() {
        if let EventKind::Corrupt { bits } = e.kind {
            *reported.entry(e.packet.unwrap().0).or_insert(0u32) += bits;
        }
    }
    let (mut corrupted, mut flipped_total) = (0u32, 0u32);
    for d in &delivered {
        let now = d.packet.payload.as_ref().unwrap().bytes();
        let before = &sent[d.packet.id.0 as usize];
        let flipped: u32 = now.iter().zip(before).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert_eq!(reported.get(&d.packet.id.0).copied().unwrap_or(0), flipped, "packet {}", d.packet.id.0);
        assert_eq!(d.packet.corrupted, flipped > 0);
        assert_eq!(checksums_verify(&now), flipped == 0, "packet {} with {flipped} flipped bits", d.packet.id.0);
        corrupted += u32::from(flipped > 0);
        flipped_total += flipped;
    }
    let mean = f64::from(flipped_total) / f64::from(corrupted);
    assert!(corrupted >= 1990, "{corrupted} corrupted");
    assert!((mean - 8.0027).abs() < 0.25, "mean flipped bits per corrupted packet {mean}");
}
