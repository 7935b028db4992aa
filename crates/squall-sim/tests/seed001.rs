//! Seed 001 §5: split TCP against end-to-end Tahoe over a lossy wireless
//! hop, on the shipped scenario files.

use squall_scenario::Scenario;
use squall_sim::{RunOptions, run_replications};

const E2E: (&str, &str) = ("scenarios/seed001-e2e.toml", include_str!("../../../scenarios/seed001-e2e.toml"));
const SPLIT: (&str, &str) = ("scenarios/seed001-split.toml", include_str!("../../../scenarios/seed001-split.toml"));

fn with_ber((file, text): (&str, &str), ber: f64) -> Scenario {
    let ber = format!("{ber:e}");
    let overrides = [
        ("stage.wireless-down.error.ber_per_byte", ber.as_str()),
        ("stage.wireless-up.error.ber_per_byte", ber.as_str()),
        ("replications", "3"),
    ];
    let text = squall_scenario::apply_overrides(file, text, &overrides).expect("overrides apply");
    squall_scenario::parse(file, &text, std::path::Path::new("scenarios")).expect("scenario parses")
}

/// (mean goodput at the mobile in bit/s, mean wired-side goodput ratio,
/// segments the fixed host resent in all replications, the most bytes the
/// fixed host had sent and not yet seen acknowledged when a run stopped).
fn measure(s: &Scenario) -> (f64, f64, u64, u64) {
    let runs = run_replications(s, RunOptions::default(), 2).expect("runs");
    let n = runs.len() as f64;
    let goodput = runs.iter().map(|r| r.tcp_flows[0].goodput_bps).sum::<f64>() / n;
    let wired = runs.iter().map(|r| r.tcp_flows[0].sender.goodput).sum::<f64>() / n;
    let resent = runs.iter().map(|r| r.tcp_flows[0].sender.retransmitted_segments).sum();
    let unacked = runs
        .iter()
        .map(|r| r.tcp_flows[0].sender.data_bytes_sent - r.tcp_flows[0].sender.bytes_acked)
        .max()
        .unwrap_or(0);
    (goodput, wired, resent, unacked)
}

/// The scenarios' `max_window` (50 segments) of `mss` 960 B: the most a
/// sender can have unacknowledged.
const WINDOW_BYTES: u64 = 50 * 960;

#[test]
fn split_tcp_keeps_the_wired_link_clean_and_beats_end_to_end_at_high_ber() {
    for ber in [2e-5, 5e-5, 1e-4] {
        let (e2e, e2e_wired, _, _) = measure(&with_ber(E2E, ber));
        let (split, split_wired, split_resent, split_unacked) = measure(&with_ber(SPLIT, ber));
        println!(
            "BER {ber:e}: e2e {e2e:.0} bit/s (wired goodput {e2e_wired:.4}), split {split:.0} bit/s (wired {split_wired:.4})"
        );
        // The fixed host never resends: the base station repairs losses.
        // Its bytes-acked / bytes-sent ratio stays under 1 only by the data
        // still unacknowledged when the run stops, which the window bounds.
        assert_eq!(split_resent, 0, "BER {ber}: split TCP's fixed host resent segments");
        assert!(split_unacked <= WINDOW_BYTES, "BER {ber}: {split_unacked} B unacknowledged at the end");
        assert!(split_wired > 0.999, "BER {ber}: split TCP's wired goodput {split_wired}");
        // End to end, every wireless loss is resent over the wired link too.
        assert!(e2e_wired < 1.0, "BER {ber}: end-to-end wired goodput {e2e_wired}");
        assert!(split > e2e, "BER {ber}: split {split} bit/s does not beat end-to-end {e2e} bit/s");
    }
}
