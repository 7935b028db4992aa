//! The retransmission queue's counts ([`RtxQueue`]) against the walks
//! they replaced: a sender and a receiver exchange segments over a wire
//! that loses, reorders and holds them as random steps decide, with ACKs
//! forged at random (cumulative ACKs inside a segment, SACK blocks on any
//! byte), windows closing and timers firing; after every step each count
//! must equal its walk.

use proptest::prelude::*;

use super::*;
use crate::config::{CcKind, Profile};

#[derive(Clone, Debug)]
enum Step {
    /// The application writes this many bytes.
    Write(u32),
    /// The sender sends what it may; it all goes on the wire.
    Transmit,
    /// The segment at this index (modulo the queue) of the forward wire
    /// reaches the receiver, or is lost.
    Deliver { pick: usize, lose: bool },
    /// The same for an ACK on the reverse wire.
    Ack { pick: usize, lose: bool },
    /// An ACK the receiver did not send: the cumulative ACK at this
    /// fraction (of 2^16) of the way from SND.UNA to SND.MAX (or to the
    /// end of a zero-window probe), with SACK blocks at such fractions.
    Forged { ack: u16, blocks: Vec<(u16, u16)> },
    /// The receiving application reads everything (else the window closes).
    Read,
    /// Time passes (ms), and the timers due run.
    Wait(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (1u32..20_000).prop_map(Step::Write),
        4 => Just(Step::Transmit),
        8 => (any::<usize>(), prop::bool::weighted(0.15)).prop_map(|(pick, lose)| Step::Deliver { pick, lose }),
        6 => (any::<usize>(), prop::bool::weighted(0.1)).prop_map(|(pick, lose)| Step::Ack { pick, lose }),
        1 => (any::<u16>(), prop::collection::vec((any::<u16>(), any::<u16>()), 0..4))
            .prop_map(|(ack, blocks)| Step::Forged { ack, blocks }),
        1 => Just(Step::Read),
        3 => prop_oneof![1u32..5, 5u32..60, 60u32..400, 400u32..3_000, 3_000u32..8_000].prop_map(Step::Wait),
    ]
}

/// Every configuration whose queue counts are read: the Linux profile
/// (RACK, Linux's in-flight count, BBR's packets in flight) and the RFC
/// one (RFC 6675 pipe, NewReno, Tahoe's go-back), with and without SACK.
fn config() -> impl Strategy<Value = TcpConfig> {
    let cc = prop_oneof![
        Just(CcKind::Cubic),
        Just(CcKind::Bbr),
        Just(CcKind::Sack),
        Just(CcKind::NewReno),
        Just(CcKind::Tahoe),
        Just(CcKind::Reno),
    ];
    let rcv_buf = prop_oneof![Just(6_000u64), Just(30_000)];
    (prop::bool::ANY, cc, prop::bool::weighted(0.8), prop::bool::ANY, rcv_buf).prop_map(
        |(linux, cc, sack, units, rcv_buf)| {
            let mut cfg = TcpConfig::profile(if linux { Profile::Linux } else { Profile::Rfc });
            cfg.cc = cc;
            cfg.sack = sack;
            cfg.mss = MSS;
            cfg.rcv_buf = rcv_buf;
            cfg.window_scaling = false;
            cfg.transmit_units &= units;
            cfg.rate_samples = !linux;
            cfg
        },
    )
}

/// The point of the step: every count the queue keeps equals the walk it
/// replaced, and RACK's walk that stops early marks what the whole walk
/// marks (on copies, at `now` and with each reordering window).
fn check(c: &Connection, now: Instant) -> Result<(), TestCaseError> {
    for reo_wnd in [Duration::ZERO, c.rack.reo_wnd(c.rtt.srtt(), false, 0, 3)] {
        let (mut early, mut whole) = (c.sent.clone(), c.sent.clone());
        let marked = |q: &RtxQueue| q.iter().map(|s| (s.lost, s.rack_rtx)).collect::<Vec<_>>();
        prop_assert_eq!(
            c.rack.detect_loss(now, &mut early, reo_wnd),
            c.rack.detect_loss_scan(now, &mut whole, reo_wnd)
        );
        prop_assert_eq!(marked(&early), marked(&whole));
    }
    prop_assert_eq!(c.sent.counts(), c.sent.recount());
    prop_assert_eq!(c.packets_in_flight(), c.packets_in_flight_scan());
    prop_assert_eq!(c.sent.bytes_in_flight(), c.linux_bytes_in_flight_scan());
    prop_assert_eq!(c.pipe(), c.pipe_scan(c.sent.high_rxt()));
    prop_assert_eq!(c.sent.sacked_out(), c.sacked_out_scan());
    prop_assert_eq!(c.sent.lost_out(), c.lost_out_scan());
    prop_assert_eq!(c.sent.lost_unrepaired(), c.lost_unrepaired_scan());
    prop_assert_eq!(c.sent.unsacked_unlost(), c.unsacked_unlost_scan());
    if c.state.is_synchronized() {
        prop_assert_eq!(c.sent.bytes(), c.snd_max - c.snd_una);
    }
    Ok(())
}

/// Everything `c` sends now, onto `wire`.
fn transmit(c: &mut Connection, now: Instant, wire: &mut Vec<Segment>) {
    for _ in 0..10_000 {
        match c.poll_transmit(now) {
            Some(seg) => wire.push(seg),
            None => return,
        }
    }
    panic!("poll_transmit does not stop");
}

/// Runs `steps` between a sender and a receiver of `cfg`, checking the
/// sender's counts (and the receiver's, whose queue holds its SYN) after
/// each.
fn run(cfg: TcpConfig, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut now = Instant::ZERO;
    let mut sender = Connection::connect(cfg.clone(), now);
    let mut receiver = Connection::listen(cfg);
    let (mut forward, mut reverse) = (Vec::new(), Vec::new());
    // The handshake, without loss.
    for _ in 0..4 {
        transmit(&mut sender, now, &mut forward);
        for seg in forward.drain(..) {
            receiver.handle_segment(now, &seg);
        }
        transmit(&mut receiver, now, &mut reverse);
        for seg in reverse.drain(..) {
            sender.handle_segment(now, &seg);
        }
    }
    prop_assert_eq!(sender.state(), State::Established);
    for step in steps {
        match *step {
            Step::Write(n) => {
                let _ = sender.send(n as u64);
            }
            Step::Transmit => transmit(&mut sender, now, &mut forward),
            Step::Deliver { pick, lose } if !forward.is_empty() => {
                let seg = forward.remove(pick % forward.len());
                if !lose {
                    receiver.handle_segment(now, &seg);
                    transmit(&mut receiver, now, &mut reverse);
                }
            }
            Step::Ack { pick, lose } if !reverse.is_empty() => {
                let seg = reverse.remove(pick % reverse.len());
                if !lose {
                    sender.handle_segment(now, &seg);
                }
            }
            Step::Forged { ack, ref blocks } => {
                let (una, max) = (sender.snd_una, sender.probe_end.unwrap_or(sender.snd_max));
                let at = |f: u16| una + (max - una) * f as u64 / u16::MAX as u64;
                let mut seg = Segment {
                    seq: sender.rcv_nxt,
                    ack: at(ack),
                    flags: Flags::ACK,
                    window: u16::MAX,
                    ..Default::default()
                };
                for &(a, b) in blocks {
                    seg.sack.push((at(a.min(b)), at(a.max(b))));
                }
                sender.handle_segment(now, &seg);
            }
            Step::Read => {
                receiver.read(u64::MAX);
                transmit(&mut receiver, now, &mut reverse);
            }
            Step::Wait(ms) => {
                now += Duration::from_millis(ms as u64);
                for c in [&mut sender, &mut receiver] {
                    if c.poll_timeout().is_some_and(|t| t <= now) {
                        c.handle_timeout(now);
                    }
                }
                transmit(&mut receiver, now, &mut reverse);
            }
            Step::Deliver { .. } | Step::Ack { .. } => {}
        }
        check(&sender, now)?;
        check(&receiver, now)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    /// Whatever the sequence of sends, losses, ACKs, SACK blocks and
    /// timeouts, every count of the retransmission queue equals the walk
    /// over the queue it stands for.
    #[test]
    fn queue_counts_equal_the_walks_they_replaced(cfg in config(), steps in prop::collection::vec(step(), 1..300)) {
        run(cfg, &steps)?;
    }
}
