//! Bulk transfers over real Linux TCP: the link's rate and RTT, loss,
//! a blackout and a state change, seed 000's GSM case.

use super::*;

#[test]
fn tcp_fills_a_10_mbit_link_with_the_right_rtt() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    // 1500-byte packets carry 1448 bytes of data (20 IP + 20 TCP + 12
    // timestamp option).
    let expected = 10e6 * 1448.0 / 1500.0;
    // RTT floor: 2 × 25 ms plus serialisation at 10 Mbit/s. TCP_INFO's
    // min RTT comes from the smallest exchange, the 60-byte first segment
    // and its 52-byte ACK (0.09 ms); a full segment would add 1.2 ms.
    let rtt_floor_ms = 50.0 + (60.0 + 52.0) * 8.0 / 10e6 * 1e3;
    for cc in ["reno", "cubic"] {
        let (run, late) = common::timer_latency_during(|| bulk("tcp-10mbit.toml", cc, "6 MB", &[]));
        assert_steady_goodput(cc, &run, expected, 6e6, late);
        // Never below the floor (less a millisecond), and above it by at
        // most a millisecond plus one of the machine's late wake-ups
        // (sleep overshoot p99, measured meanwhile): on a loaded machine
        // the first exchange can be delivered late, and then the smallest
        // sample is a full segment's (seen: 51.6 ms against 50.09 with an
        // overshoot p99 of 6.3 ms and the first 0.2 s flagged late).
        let min_rtt_ms = f(&run.client["final_info"]["min_rtt_us"]) / 1e3;
        assert!(
            min_rtt_ms > rtt_floor_ms - 1.0 && min_rtt_ms < rtt_floor_ms + 1.0 + late.p99 * 1e3,
            "{cc}: min RTT {min_rtt_ms} ms vs {rtt_floor_ms} ms (overshoot p99 {} ms)",
            late.p99 * 1e3
        );
        assert_eq!(run.summary["engine"], "emu");
        // Timing is reported, not asserted tightly: a loaded 2-core CI
        // machine delays some deliveries (`squall bench emu` measures it).
        let timing = &run.summary["timing"];
        // The median departure is late by at most 1 ms plus one of the
        // machine's late wake-ups (sleep overshoot p99, measured meanwhile).
        assert!(f(&timing["error_p50"]) < 1e-3 + late.p99, "{cc}: departure error p50 {}", timing["error_p50"]);
        assert!(f(&timing["deliveries"]) > 4000.0);
        for host in ["fixed", "mobile"] {
            let pcap = std::fs::metadata(run.rep().join(format!("{host}.pcap"))).unwrap();
            assert!(pcap.len() > 1_000_000, "{host}.pcap is {} bytes", pcap.len());
        }
        assert!(std::fs::read_to_string(run.rep().join("events.csv")).unwrap().contains(",deliver,"));
        assert!(std::fs::read_to_string(run.dir.path().join("info.csv")).unwrap().lines().count() > 100);
    }
}

/// The steady goodput of a bulk transfer of `bytes` over a link whose
/// payload rate is `expected` bit/s: never above it (physics), and no
/// more than 3% below it (behaviour: the scenario's queue holds more than
/// the path's bandwidth-delay product, so the sender keeps the link
/// busy). Both bounds are widened by what the measurement cannot see:
/// the client's window (the last 80% of `bytes`, see `steady_goodput` in
/// squall-emu's bulk.rs) starts and ends at a sample each of which may
/// be late by the machine's sleep overshoot p99 (`late`, measured while
/// the run ran); the emulator's own worst departure error (summary.json
/// `timing.error_max`): packets due before the window opened but
/// delivered late fall inside it; and one segment's time at `expected`:
/// when the window opens the receiver may hold one full segment not yet
/// acknowledged (a delayed ACK, sent once more than one full segment is
/// unacknowledged: net/ipv4/tcp_input.c `__tcp_ack_snd_check`), counted
/// inside the window though it crossed the link before. How close squall
/// comes is `squall bench timing`'s figure.
pub(crate) fn assert_steady_goodput(
    what: &str,
    run: &Run,
    expected: f64,
    bytes: f64,
    late: squall_emu::timing::SleepOvershoot,
) {
    let goodput = f(&run.client["steady_goodput_bps"]);
    let window = 0.8 * bytes * 8.0 / expected;
    let segment = 1448.0 * 8.0 / expected;
    let widen = (2.0 * late.p99 + f(&run.summary["timing"]["error_max"]) + segment) / window;
    assert!(
        goodput <= expected * (1.0 + widen) && goodput >= expected * (1.0 - 0.03 - widen),
        "{what}: steady goodput {goodput} vs {expected} (-3% - {widen:.5}, +{widen:.5})"
    );
}

#[test]
fn tcp_recovers_from_one_percent_loss() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    for cc in ["reno", "cubic"] {
        let run = bulk("tcp-10mbit-loss.toml", cc, "2 MB", &[]);
        let retrans = f(&run.client["final_info"]["total_retrans"]);
        let stage = &run.summary["runs"][0]["stages"][0];
        assert_eq!(stage["name"], "down");
        let dropped = f(&stage["dropped"]["error"]);
        let entered = f(&stage["entered"]);
        // 1% of the segments, within the binomial 99.9% interval
        // p ± 3.29·√(p(1−p)/n) (about ±0.009 at the ~1 400 segments of
        // 2 MB): a loss model off by 3× falls outside it.
        let half = 3.29 * (0.01f64 * 0.99 / entered).sqrt();
        assert!(
            entered >= 1000.0 && (dropped / entered - 0.01).abs() <= half,
            "{cc}: {dropped} of {entered} dropped, outside 0.01 ± {half}"
        );
        assert!(retrans >= dropped * 0.8, "{cc}: {retrans} retransmissions for {dropped} drops");
        // Loss keeps the window below the 10 Mbit/s link's capacity.
        let goodput = f(&run.client["goodput_bps"]);
        assert!(goodput < 9.7e6 && goodput > 0.5e6, "{cc}: goodput {goodput}");
    }
}

#[test]
fn blackout_holds_packets_and_state_change_slows_the_link() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let run = bulk("blackout.toml", "cubic", "2 MB", &[]);
    // 2 MB at 4 Mbit/s is 4 s; the 2 s blackout and the slower link after
    // 4 s make it longer.
    let elapsed = f(&run.client["elapsed"]);
    assert!(elapsed > 6.0 && elapsed < 20.0, "elapsed {elapsed}");
    let events = std::fs::read_to_string(run.rep().join("events.csv")).unwrap();
    for needle in ["blackout-0-start", "blackout-0-end", "handover", ",hold,"] {
        assert!(events.contains(needle), "events.csv has no {needle}");
    }
    // Nothing was delivered downlink during the blackout (1 s to 3 s, after
    // the packets already on the wire at 1 s arrived).
    let delivered_in_blackout = events
        .lines()
        .filter(|l| l.contains(",down,downlink,deliver,"))
        .filter_map(|l| l.split(',').next()?.parse::<f64>().ok())
        .filter(|t| (1.1..2.99).contains(t))
        .count();
    assert_eq!(delivered_in_blackout, 0);
    let stage = &run.summary["runs"][0]["stages"][0];
    assert!(stage["dropped"].get("blackout").is_none(), "hold mode drops nothing: {stage}");
}

#[test]
fn gsm_case_transfers_20_kb() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    for cc in ["reno", "cubic"] {
        let run = bulk("gsm-tcp.toml", cc, "20 KB", &[]);
        // 20 KB of data in 1500-byte packets at 9600 bit/s is at least
        // 17.2 s of transmission; losses and timeouts add to it, by how
        // much no hand computation bounds: the transfer must end before
        // the scenario's 120 s (ended_by "workloads", below).
        let elapsed = f(&run.client["elapsed"]);
        assert!(elapsed > 17.0, "{cc}: elapsed {elapsed}");
        let min_rtt_ms = f(&run.client["final_info"]["min_rtt_us"]) / 1e3;
        assert!(min_rtt_ms > 400.0, "{cc}: min RTT {min_rtt_ms} ms");
        assert_eq!(run.summary["emu"]["ended_by"], "workloads");
    }
}
