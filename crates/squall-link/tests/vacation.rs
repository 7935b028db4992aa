//! A server with vacations (seed 003, the FPGA network "quality degrader",
//! §2.2)
//! against hand computations: a saturated link away a fraction f of the
//! time carries (1 - f) C; a packet that arrives during a vacation waits
//! exactly what is left of it; a transmission in progress finishes.

mod common;

use common::*;
use squall_link::*;

fn vacation(serving: Distribution<Duration>, length: Distribution<Duration>) -> Option<VacationConfig> {
    Some(VacationConfig { serving, length })
}

fn constant(d: Duration) -> Distribution<Duration> {
    Distribution::constant(d)
}

/// Runs the path up to `horizon`, returning the deliveries.
fn run_until(path: &mut Path, horizon: Instant) -> Vec<Delivery> {
    let mut out = Vec::new();
    while let Some(t) = path.next_wakeup().filter(|&t| t <= horizon) {
        while let Some(d) = path.poll(t) {
            out.push(d);
        }
    }
    out
}

fn bits_per_sec(out: &[Delivery], horizon: Instant) -> f64 {
    out.iter().map(|d| d.packet.size as f64 * 8.0).sum::<f64>() / horizon.as_secs_f64()
}

/// 8 Mbit/s, 1000 B packets (1 ms each), 9 ms serving and 1 ms away: in
/// each 10 ms cycle exactly 9 packets start (at 0, 1, ..., 8 ms; the one
/// ending at 9 ms, as the vacation starts, has no successor until 10 ms),
/// so 10 s carry 9000 packets, 0.9 C.
#[test]
fn saturated_link_with_deterministic_vacations_carries_one_minus_f() {
    let c = 8e6;
    let s = stage(|s| {
        s.rate = Some(Rate::from_bits_per_sec(c as u64));
        s.vacation = vacation(constant(ms(9)), constant(ms(1)));
    });
    let mut p = path(vec![s]);
    for i in 0..12_000 {
        p.push(Instant::ZERO, packet(i, 1000));
    }
    let horizon = Instant::from_secs(10);
    let out = run_until(&mut p, horizon);
    assert_eq!(out.len(), 9000, "hand count: 9 packets per 10 ms cycle");
    let got = bits_per_sec(&out, horizon);
    let expect = (1.0 - 0.1) * c;
    assert!((got - expect).abs() <= 0.01 * expect, "{got} bit/s, (1-f)C = {expect}");
    assert!(p.stats().conserved());
}

/// Exponential serving (mean 9 ms) and vacations (mean 1 ms) on a
/// 100 Mbit/s link with 1000 B packets (T = 80 us). A vacation starts
/// during a transmission that still has R ~ U(0, T) to go, so the link
/// idles max(0, L - R) per cycle: E = E[L] - T/2 + O(T^2 / E[L]) (L is
/// exponential). Carried: C (1 - (E[L] - T/2) / (E[S] + E[L])) = 0.904 C.
/// 20 s are 2000 cycles: the standard error of the away fraction is
/// about 0.3 %; tolerance 1 %.
#[test]
fn saturated_link_with_exponential_vacations_carries_one_minus_f() {
    let c = 100e6;
    let s = stage(|s| {
        s.rate = Some(Rate::from_bits_per_sec(c as u64));
        s.vacation = vacation(Distribution::Exponential { mean: ms(9) }, Distribution::Exponential { mean: ms(1) });
    });
    let mut p = path(vec![s]);
    let horizon = Instant::from_secs(20);
    // More than 20 s at 100 Mbit/s can carry.
    for i in 0..260_000 {
        p.push(Instant::ZERO, packet(i, 1000));
    }
    let out = run_until(&mut p, horizon);
    let got = bits_per_sec(&out, horizon);
    let t = 80e-6;
    let expect = c * (1.0 - (1e-3 - t / 2.0) / 10e-3);
    println!("exponential vacations: {got} bit/s, expected {expect}");
    assert!((got - expect).abs() <= 0.01 * expect, "{got} bit/s, expected {expect}");
    assert!(p.stats().conserved());
}

/// 8 Mbit/s (1000 B in 1 ms), 5 ms propagation; serving 4 ms, away 2 ms:
/// the first vacation is [4, 6) ms. A lone packet arriving at its start
/// (4 ms) or in its middle (5 ms) waits until 6 ms and is delivered at
/// 6 + 1 + 5 = 12 ms; one arriving at 3.5 ms is in transmission when the
/// vacation starts, finishes, and is delivered at 3.5 + 1 + 5 = 9.5 ms;
/// one arriving at 6 ms waits for nothing.
#[test]
fn a_packet_waits_for_what_is_left_of_the_vacation() {
    for (arrival_us, delivered_us) in [(4000, 12_000), (5000, 12_000), (5999, 12_000), (3500, 9500), (6000, 12_000)] {
        let s = stage(|s| {
            s.rate = Some(Rate::from_bits_per_sec(8_000_000));
            s.delay = ms(5);
            s.vacation = vacation(constant(ms(4)), constant(ms(2)));
        });
        let mut p = path(vec![s]);
        // Bring the path to the arrival time first (the vacation timers run).
        let at = Instant::from_micros(arrival_us);
        assert!(p.poll(at).is_none());
        p.push(at, packet(1, 1000));
        // An empty stage's vacations do not keep its path awake: it goes idle.
        let out = drain(&mut p);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].at, Instant::from_micros(delivered_us), "arrival at {arrival_us} us");
    }
}

/// A full queue during vacations drops arrivals with its usual reason, and
/// every packet is delivered, dropped or inside.
#[test]
fn queue_overflows_during_vacations_and_packets_are_conserved() {
    let s = stage(|s| {
        s.rate = Some(Rate::from_bits_per_sec(8_000_000));
        s.queue.packets = Some(5);
        s.vacation = vacation(constant(ms(2)), constant(ms(8)));
    });
    let mut p = path(vec![s]);
    // One packet every 0.5 ms for 1 s: 2000 packets, 8 per vacation.
    let mut out = Vec::new();
    for i in 0..2000u64 {
        let at = Instant::from_micros(i * 500);
        while let Some(d) = p.poll(at) {
            out.push(d);
        }
        p.push(at, packet(i, 1000));
        let st = p.stats();
        assert!(st.conserved(), "{st:?}");
    }
    out.extend(drain(&mut p));
    let overflow = p.drops_by_reason().into_iter().find(|(r, _)| *r == DropReason::QueueOverflow).unwrap().1;
    let st = p.stats();
    assert_eq!(st.in_flight, 0);
    assert_eq!(st.entered, 2000);
    assert_eq!(st.delivered, out.len() as u64);
    assert_eq!(st.dropped, overflow, "every drop is an overflow");
    // Each 10 ms cycle serves 2 packets (2 ms of 1 ms packets) of the 20
    // arriving: 100 cycles in 1 s, so about 200 are delivered (plus what
    // the queue and link hold at the end).
    assert!((200..=208).contains(&out.len()), "delivered {}", out.len());
    // Order within the flow is kept.
    assert!(out.windows(2).all(|w| w[0].packet.id < w[1].packet.id));
}

/// A state change sets vacations at 100 ms on a saturated 8 Mbit/s link
/// (1 ms packets): 100 packets by 100 ms, then 9 per 10 ms cycle starting at
/// the change: 900 more by 1100 ms.
#[test]
fn a_state_change_starts_vacations_at_the_change() {
    let s = stage(|s| s.rate = Some(Rate::from_bits_per_sec(8_000_000)));
    let mut p = path(vec![s]);
    for i in 0..2000 {
        p.push(Instant::ZERO, packet(i, 1000));
    }
    let change = Instant::from_millis(100);
    let mut out = run_until(&mut p, change);
    assert_eq!(out.len(), 100);
    let patch = StagePatch::default().with("vacation", |c| c.vacation = vacation(constant(ms(9)), constant(ms(1))));
    assert!(p.apply(change, &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    out.extend(run_until(&mut p, Instant::from_millis(1100)));
    assert_eq!(out.len(), 1000);
    // A constant zero length stops them again: 100 more in the next 100 ms.
    let off =
        StagePatch::default().with("vacation", |c| c.vacation = vacation(constant(ms(9)), constant(Duration::ZERO)));
    assert!(p.apply(Instant::from_millis(1100), &Change::Set { stage: "s".into(), patch: Box::new(off) }));
    out.extend(run_until(&mut p, Instant::from_millis(1200)));
    assert_eq!(out.len(), 1100);
}

#[test]
fn vacation_settings_that_cannot_run_are_refused_by_key() {
    let zero = stage(|s| s.vacation = vacation(constant(Duration::ZERO), constant(ms(1))));
    let e = zero.validate().unwrap_err();
    assert_eq!(e.key, "s.vacation.serving");
    assert!(e.message.contains("never serves"));
    let mut radio = StageConfig::named("r");
    radio.vacation = vacation(constant(ms(9)), constant(ms(1)));
    radio.radio = Some(squall_link::radio::RadioConfig::default());
    assert_eq!(radio.validate().map_err(|e| e.key).unwrap_err(), "r.vacation");
}
