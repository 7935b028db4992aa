//! netem's options that only the simulator's tests ran before (issue 30),
//! now in `squall emu`, each seen by a real tool against its definition in
//! sch_netem.c: the correlated loss generator, the four-state and
//! Gilbert–Elliott losses (their stationary
//! loss and burst lengths), `ecn` (marks instead of drops, counted the
//! same by squall and by tshark in the receiver's pcap), the rate's packet
//! and cell overheads, netem's Pareto table and a distribution table of the
//! user's own (`.dist`), and mm-link's drop-tail queue.
//! Needs root and network namespaces: without them the tests are skipped
//! with a message, except under CI=true, where they fail (as tests/emu/).

use std::process::Command;

mod common;
use common::ping::{echoes, ping_link, ping_over_with, within_binomial};
use common::{SQUALL, namespaces_available, summary};

/// The lengths of the runs of consecutive unanswered echoes among the
/// first `count` that ping sent (its replies cross the `--link` downlink
/// one each), and how many were unanswered in all.
fn loss_runs(ping: &str, count: u64) -> (Vec<u64>, u64) {
    let answered: std::collections::BTreeSet<u64> = echoes(ping).iter().map(|e| e.seq).collect();
    let (mut runs, mut run, mut lost) = (Vec::new(), 0, 0);
    for seq in 1..=count {
        if answered.contains(&seq) {
            if run > 0 {
                runs.push(run);
            }
            run = 0;
        } else {
            run += 1;
            lost += 1;
        }
    }
    if run > 0 {
        runs.push(run);
    }
    (runs, lost)
}

/// Checks `count` echoes' replies crossing a two-state loss chain: from
/// the good state a packet moves to the bad one with probability `p`, from
/// the bad one back with `r` (so a bad spell lasts 1/r packets on
/// average), and a packet in the bad state is lost with probability
/// `loss_bad` (none in the good one). The stationary loss is
/// `loss_bad · p/(p + r)` (a Markov chain's stationary distribution); its
/// standard error over n packets is that of a chain's indicator,
/// √(π(1 − π)/n · (1 + λ)/(1 − λ)) with λ = 1 − p − r, taken at
/// `loss_bad` = 1 (the larger). With `loss_bad` = 1 a run of losses is a
/// bad spell, geometric of mean 1/r (standard deviation √(1 − r)/r); the
/// mean run over the runs seen is within 3.5 standard errors of it, where
/// independent losses at the same rate would give runs of about 1.1.
fn check_two_state(ping: &str, count: u64, p: f64, r: f64, loss_bad: f64) {
    let (runs, lost) = loss_runs(ping, count);
    let pi = p / (p + r);
    let lambda = 1.0 - p - r;
    let se = (pi * (1.0 - pi) / count as f64 * (1.0 + lambda) / (1.0 - lambda)).sqrt();
    let share = lost as f64 / count as f64;
    let mean_run = lost as f64 / runs.len() as f64;
    println!(
        "{lost} of {count} lost ({share:.4}, expected {:.4} ± {:.4}), {} runs of mean {mean_run:.3}",
        loss_bad * pi,
        3.5 * se,
        runs.len()
    );
    assert!((share - loss_bad * pi).abs() <= 3.5 * se, "lost {share:.4}, expected {:.4}", loss_bad * pi);
    if loss_bad == 1.0 {
        let run_se = (1.0 - r).sqrt() / r / (runs.len() as f64).sqrt();
        assert!(
            (mean_run - 1.0 / r).abs() <= 3.5 * run_se,
            "losses in runs of mean {mean_run:.3}, expected {} ± {:.3}: {runs:?}",
            1.0 / r,
            3.5 * run_se
        );
    }
}

/// `loss state 5% 50%` (tc's defaults for the rest: p32 = 0, p23 = 100 %,
/// p14 = 0): sch_netem.c `loss_4state()` moves from state 1 (good) to 3
/// (burst losses) with p13 = 5 % and back with p31 = 50 %, losing every
/// packet in state 3: 9.1 % lost, in runs of mean 2.
#[test]
fn ping_sees_the_four_state_losses_stationary_share_and_bursts() {
    if !namespaces_available() {
        return;
    }
    let count = 1500;
    let ping = ping_link("delay 5ms loss state 5% 50%", &[], &format!("-c {count} -i 0.005 -W 1"));
    check_two_state(&ping, count, 0.05, 0.5, 1.0);
}

/// `loss gemodel 5% 40% 80%`: Gilbert–Elliott as sch_netem.c
/// `loss_gilb_ell()` runs it: good → bad with p = 5 %, bad → good with
/// r = 40 %, a packet lost with 1 − h = 80 % in the bad state and 1 − k =
/// 0 (tc's default) in the good one: 0.8 · 5/45 = 8.9 % lost.
#[test]
fn ping_sees_the_gilbert_elliott_losses_stationary_share() {
    if !namespaces_available() {
        return;
    }
    let count = 1500;
    let ping = ping_link("delay 5ms loss gemodel 5% 40% 80%", &[], &format!("-c {count} -i 0.005 -W 1"));
    check_two_state(&ping, count, 0.05, 0.4, 0.8);
}

/// tshark's `ip.dsfield.ecn` of the echo requests in a pcap, one per
/// packet (0 Not-ECT, 2 ECT(0), 3 CE).
fn request_ecn(pcap: &std::path::Path) -> Vec<u8> {
    let o = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", "icmp.type == 8", "-T", "fields", "-e", "ip.dsfield.ecn"])
        .output()
        .expect("tshark");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.trim().parse().unwrap()).collect()
}

/// `--uplink "delay 5ms loss 20% ecn"` (sch_netem.c `netem_enqueue`: a
/// packet chosen for loss that is ECN-capable is marked CE by
/// `INET_ECN_set_ce` instead of dropped). ping's echo requests cross the
/// uplink: sent ECT(0) (`ping -Q 2`) none is lost, and the fixed host's
/// pcap shows a Binomial(n, 0.2) count of them CE, the same count as the
/// stage's `ecn_marked` in summary.json; sent Not-ECT, as many go
/// unanswered instead.
#[test]
fn ecn_capable_requests_are_marked_not_dropped_and_tshark_counts_the_marks() {
    if !namespaces_available() {
        return;
    }
    let count = 400;
    for ect in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let q = if ect { "-Q 2 " } else { "" };
        let o = Command::new(SQUALL)
            .args(["emu", "--link", "delay 5ms", "--uplink", "delay 5ms loss 20% ecn", "--out"])
            .arg(&out)
            .args(["--", "sh", "-c", &format!("ping {q}-c {count} -i 0.005 -W 1 $SQUALL_PEER")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let answered = echoes(&String::from_utf8_lossy(&o.stdout)).len();
        let marks = request_ecn(&out.join("rep-0/fixed.pcap"));
        let ce = marks.iter().filter(|&&e| e == 3).count();
        let summary = summary(&out);
        let marked: u64 = summary["runs"][0]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["ecn_marked"].as_u64().unwrap_or(0))
            .sum();
        println!(
            "ECT {ect}: {answered} of {count} answered; {ce} CE of {} requests at the fixed host; ecn_marked {marked}",
            marks.len()
        );
        if ect {
            assert_eq!(answered, count, "an ECN-capable request was dropped");
            assert_eq!(marks.len(), count, "requests in the receiver's pcap");
            assert!(within_binomial(ce, count, 0.2), "{ce} of {count} marked CE, expected 20 %");
            assert_eq!(ce as u64, marked, "CE in the pcap against the stage's ecn_marked");
        } else {
            assert_eq!(ce, 0, "a Not-ECT packet marked CE");
            assert_eq!(marked, 0);
            assert!(
                within_binomial(count - answered, count, 0.2),
                "{} of {count} lost, expected 20 %",
                count - answered
            );
        }
    }
}

/// The median RTT of `count` pings of `size` payload bytes, 50 ms apart.
fn median_rtt(link: &str, size: u32, count: u32) -> f64 {
    let ping = ping_link(link, &["--uplink", "delay 5ms"], &format!("-c {count} -i 0.05 -s {size}"));
    let mut rtts: Vec<f64> = echoes(&ping).iter().map(|e| e.rtt_ms).collect();
    assert_eq!(rtts.len(), count as usize, "{ping}");
    rtts.sort_by(f64::total_cmp);
    rtts[rtts.len() / 2]
}

/// `rate 1mbit 20 100 5` (packetoverhead 20, cellsize 100, celloverhead
/// 5): sch_netem.c `packet_time_ns` charges a packet of L bytes
/// ⌈(L + 20)/100⌉ · 105 bytes at 1 Mbit/s. ping's replies cross it, one
/// at a time (50 ms apart): `-s 972` makes a 1 000-byte IP packet, 11
/// cells, 9.24 ms; `-s 1072` 1 100 bytes, 12 cells, 10.08 ms (without the
/// overheads 8 and 8.8 ms). The RTT is 5 + 5 ms of delay plus that, and
/// its median is at most 0.5 ms above.
#[test]
fn ping_sees_the_rates_packet_and_cell_overheads() {
    if !namespaces_available() {
        return;
    }
    for (size, cells) in [(972, 11.0), (1072, 12.0)] {
        let expected = 10.0 + cells * 105.0 * 8.0 / 1e6 * 1e3;
        let median = median_rtt("delay 5ms rate 1mbit 20 100 5", size, 40);
        println!("-s {size}: median RTT {median} ms, expected {expected:.2} ms");
        assert!(
            median >= expected - 0.01 && median <= expected + 0.5,
            "-s {size}: median RTT {median} ms, expected {expected:.2} ms"
        );
    }
}

/// `delay 20ms 10ms distribution ./pm.dist`, a table of the user's own
/// whose entries are −8192 and +8192 (−1 and +1 in netem's fixed point,
/// NETEM_DIST_SCALE): sch_netem.c `tabledist()` gives μ + σ·t/8192, so
/// each reply is delayed exactly 10 or 30 ms, half of them each. With
/// 5 ms on the uplink every RTT is 15 or 35 ms plus the machine's
/// lateness: none is below, each group's median is within 1 ms above, and
/// at most 10 % are more than 2 ms late (on a loaded 2-core VM, 19 of 300
/// once; none on the next run); the share at 15 ms is Binomial(n, ½).
/// A table read as anything else (a uniform or normal spread, the
/// entries' sign lost) fails the medians or the share.
#[test]
fn ping_sees_a_distribution_table_of_the_users_own() {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("pm.dist");
    std::fs::write(&table, "# -1 and +1 sigma\n-8192 8192\n-8192 8192\n").unwrap();
    let link = format!("delay 20ms 10ms distribution {}", table.display());
    let count = 300;
    let ping = ping_link(&link, &["--uplink", "delay 5ms"], &format!("-c {count} -i 0.01"));
    let rtts: Vec<f64> = echoes(&ping).iter().filter(|e| !e.dup).map(|e| e.rtt_ms).collect();
    assert_eq!(rtts.len(), count, "{ping}");
    let (mut short, mut long): (Vec<f64>, Vec<f64>) = rtts.iter().partition(|&&r| r < 25.0);
    let mut late = 0;
    for (group, at) in [(&mut short, 15.0), (&mut long, 35.0)] {
        group.sort_by(f64::total_cmp);
        let median = group[group.len() / 2];
        late += group.iter().filter(|&&r| r > at + 2.0).count();
        println!(
            "{} RTTs near {at} ms: min {}, median {median}, max {}",
            group.len(),
            group[0],
            group[group.len() - 1]
        );
        assert!(group[0] >= at - 0.01, "an RTT of {} ms, below {at} ms", group[0]);
        assert!(median <= at + 1.0, "median {median} ms, expected {at} ms");
    }
    assert!(late <= count / 10, "{late} of {count} RTTs more than 2 ms late: {rtts:?}");
    assert!(within_binomial(short.len(), count, 0.5), "{} of {count} at 15 ms, expected half", short.len());
}

/// mm-link as a Mahimahi user types it, in `squall emu`: the trace `1`
/// both ways (one 1 504-byte opportunity a millisecond: 1 000 packets of
/// 1 500 B a second, 11.776 Mbit/s of UDP payload in 1 472-byte
/// datagrams) behind mm-delay's 10 ms, with a 20-packet drop-tail queue on
/// the downlink (`--downlink-queue=droptail --downlink-queue-args=packets=20`,
/// mm-link's `DroppingPacketQueue`). iperf3 sends 20 Mbit/s from the fixed
/// host for 6 s after 1 s left out: what it receives is the trace's
/// capacity within 0.5 % (the issue's bound), the trace stage's queue
/// reaches and never passes 20 packets, and the rest is dropped there
/// (entered − delivered > 0). Once as the shells' line, once with the
/// flags (`--downlink-trace`, `--downlink-queue`) beside a netem line.
#[test]
fn iperf3_over_mm_link_with_a_droptail_queue_as_typed_and_as_flags() {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.trace"), "1\n").unwrap();
    let queue = ["--downlink-queue=droptail", "--downlink-queue-args=packets=20"];
    let shells = format!("mm-delay 10 mm-link one.trace one.trace {} {}", queue[0], queue[1]);
    let flags = ["--downlink-trace", "one.trace", "--uplink-trace", "one.trace", queue[0], queue[1]];
    for (name, link, extra) in [("shells", shells.as_str(), &[][..]), ("flags", "delay 10ms", &flags[..])] {
        let out = dir.path().join(name);
        let o = Command::new(SQUALL)
            .current_dir(dir.path())
            .args(["emu", "--link", link])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .args(["--serve", "fixed@0s=iperf3 -s -1", "--", "sh", "-c"])
            .arg("sleep 0.5; iperf3 -c $SQUALL_PEER -R -u -b 20M -l 1472 -t 6 -O 1 -J")
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("iperf3 -J output");
        let received = report["end"]["sum_received"]["bits_per_second"].as_f64().unwrap();
        let summary = summary(&out);
        let stages = summary["runs"][0]["stages"].as_array().unwrap();
        let trace = stages
            .iter()
            .filter(|s| s["direction"] == "downlink")
            .max_by_key(|s| s["max_queue_len"].as_u64().unwrap())
            .unwrap();
        let (entered, delivered) = (trace["entered"].as_u64().unwrap(), trace["delivered"].as_u64().unwrap());
        println!(
            "{name}: iperf3 received {received} bit/s; {}: max queue {}, {} dropped of {entered}",
            trace["name"],
            trace["max_queue_len"],
            entered - delivered
        );
        assert!((received - 11_776_000.0).abs() <= 0.005 * 11_776_000.0, "{name}: {received} bit/s");
        assert_eq!(trace["max_queue_len"], 20, "{name}: the drop-tail queue's limit");
        assert!(entered > delivered, "{name}: nothing dropped at the queue of a link run at 1.7 times its capacity");
    }
}

/// `delay 20ms 10ms distribution pareto`, netem's Pareto table as
/// iproute2's pareto.c defines it: 4 096 entries t = (u^(−1/3) − 1.5) · 4/3
/// for u = 1, 1 − 1/4096, …, 1/4096 (capped at 32767/8192), each drawn
/// alike, and a reply delayed 20 + 10 t ms (sch_netem.c `tabledist()`).
/// The test computes the table's mean, deviation and kurtosis from that
/// definition; with 5 ms on the uplink, ping's RTTs over 400 echoes have
/// their minimum at the table's least entry (t = −2/3: 18.33 ms, within
/// 1 ms above), their mean within 3.5 standard errors + 0.5 ms (the
/// machine's lateness) of 25 + 10 · mean(t), their deviation within 3.5
/// standard errors (σ √((κ − 1)/4n)) + 0.3 ms of 10 · sd(t). A normal
/// table of the same μ and σ would go 25 ms lower.
#[test]
fn ping_sees_netems_pareto_table() {
    if !namespaces_available() {
        return;
    }
    let t: Vec<f64> = (0..4096)
        .map(|k| {
            let u = f64::from(65536 - 16 * k) / 65536.0;
            ((u.powf(-1.0 / 3.0) - 1.5) * 4.0 / 3.0).min(32767.0 / 8192.0)
        })
        .collect();
    let n = t.len() as f64;
    let mean = t.iter().sum::<f64>() / n;
    let var = t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let kurtosis = t.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n / var.powi(2);
    let (rtt_mean, rtt_sd) = (25.0 + 10.0 * mean, 10.0 * var.sqrt());
    let count: f64 = 400.0;
    let [min, avg, _, mdev] =
        ping_over_with("delay 20ms 10ms distribution pareto", &["--uplink", "delay 5ms"], count as u32);
    let (se_mean, se_sd) = (rtt_sd / count.sqrt(), rtt_sd * ((kurtosis - 1.0) / 4.0 / count).sqrt());
    println!(
        "expected: min {:.3} ms, mean {rtt_mean:.3} ± {:.3}, deviation {rtt_sd:.3} ± {:.3} (kurtosis {kurtosis:.2})",
        25.0 + 10.0 * t[0],
        3.5 * se_mean,
        3.5 * se_sd
    );
    let least = 25.0 + 10.0 * t[0];
    assert!(min >= least - 0.01 && min <= least + 1.0, "min {min} ms, expected {least:.3} ms");
    assert!((avg - rtt_mean).abs() <= 3.5 * se_mean + 0.5, "avg {avg} ms, expected {rtt_mean:.3} ms");
    assert!((mdev - rtt_sd).abs() <= 3.5 * se_sd + 0.3, "mdev {mdev} ms, expected {rtt_sd:.3} ms");
}

/// `loss 10% 25%`: netem's correlated generator (sch_netem.c
/// `get_crandom`: each draw is (1 − ρ)·U + ρ·the last draw, ρ = 25 %;
/// lost when below 10 %), flaws kept as the guide says, in `squall emu`.
/// The test runs that definition itself (10⁶ draws of a xorshift
/// generator) for the share it loses and the chance of a loss after a
/// loss: about 1.75 % and 11 %, far from the 10 % the line seems to ask.
/// ping's 1 500 replies lose that share within 3.5 standard errors of a
/// two-state chain with that conditional chance.
#[test]
fn ping_sees_netems_correlated_loss_generator() {
    if !namespaces_available() {
        return;
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut uniform = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut last, mut lost, mut after_loss, mut both, mut prev) = (0.0, 0u64, 0u64, 0u64, false);
    let draws = 1_000_000;
    for _ in 0..draws {
        last = 0.75 * uniform() + 0.25 * last;
        let loss = last < 0.1;
        if prev {
            after_loss += 1;
            both += u64::from(loss);
        }
        lost += u64::from(loss);
        prev = loss;
    }
    let share = lost as f64 / draws as f64;
    let lambda = (both as f64 / after_loss as f64 - share) / (1.0 - share);
    let count = 1500;
    let ping = ping_link("delay 5ms loss 10% 25%", &[], &format!("-c {count} -i 0.005 -W 1"));
    let answered = echoes(&ping).len() as f64;
    let measured = 1.0 - answered / count as f64;
    let se = (share * (1.0 - share) / count as f64 * (1.0 + lambda) / (1.0 - lambda)).sqrt();
    println!("lost {measured:.4} of {count}; netem's generator: {share:.4} ± {:.4} (λ {lambda:.3})", 3.5 * se);
    assert!((measured - share).abs() <= 3.5 * se, "lost {measured:.4}, netem's generator loses {share:.4}");
}
