//! The new user's path of issue 28, replayed in order: a researcher who
//! knows ns-3, netem and Mahimahi, the release binary on the PATH, the
//! README open. Each step is one of the eight friction points and
//! checks what the user now sees against an independent figure (the
//! link's rate, a hand-computed window limit, tc's reading of a unit,
//! the file system). The detailed checks of each point live in
//! defaults.rs, outputs.rs, report.rs and guide.rs; this file is the
//! journey, so that a change that breaks the first hour fails here once.

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{SQUALL, summary};

fn squall(dir: &Path, args: &[&str]) -> Output {
    Command::new(SQUALL).current_dir(dir).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_first_hour_of_a_new_user() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();

    // 1. The first one-liner gets the link, not half of it: 10 Mbit/s of
    // 1500-byte packets carry at most 10·1460/1500 = 9.73 Mbit/s of TCP
    // payload; Linux's defaults fill it (slow start and the initial
    // queue fill cost a little).
    let o = squall(d, &["sim", "--link", "rate 10mbit delay 50ms", "--tcp", "cubic", "--out", "first"]);
    assert!(o.status.success(), "{}", text(&o));
    let goodput = summary(&d.join("first"))["runs"][0]["tcp_flows"][0]["goodput_bps"].as_f64();
    let goodput = goodput.unwrap_or_else(|| panic!("no goodput_bps in {}", summary(&d.join("first"))["runs"][0]));
    assert!(goodput > 9.3e6 && goodput <= 10e6 * 1460.0 / 1500.0, "goodput {goodput}");
    assert!(!text(&o).contains("limited"), "{}", text(&o));
    // ... and the RFC profile, set from the one-liner, is said to be
    // window-limited: 65 535 B per RTT, the RTT 2·50 ms plus one
    // 1500-byte packet at 10 Mbit/s (1.2 ms) = 101.2 ms: 5.18 Mbit/s.
    let o = squall(
        d,
        &[
            "sim",
            "--link",
            "rate 10mbit delay 50ms",
            "--tcp",
            "cubic",
            "--set",
            "workload.tcp.0.profile=\"rfc\"",
            "--out",
            "rfc",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let hand = 65_535.0 * 8.0 / 0.1012 / 1e6;
    assert!(
        text(&o).contains(&format!("window-limited: 64 KiB (rwnd) per 101.2 ms RTT = {hand:.2} Mbit/s")),
        "{}",
        text(&o)
    );

    // 2. netem's words mean what they mean in netem: jitter reorders and
    // keeps the mean; both directions are said; tc's `mbps` (bytes) is
    // refused with both readings rather than read one way silently.
    let o = squall(d, &["sim", "--link", "delay 100ms 50ms", "--udp", "1 Mbit/s", "--out", "jitter"]);
    assert!(o.status.success(), "{}", text(&o));
    let first = String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("--link: downlink delay uniform 50 ms..150 ms (reordering)")
            && first.contains("; uplink delay uniform 50 ms..150 ms (reordering)"),
        "{first}"
    );
    let flow = &summary(&d.join("jitter"))["runs"][0]["flows"][0];
    let mean = flow["delay_mean"].as_f64().unwrap();
    // Uniform over [50, 150) ms: sd 28.9 ms; 6 000 packets: se 0.37 ms.
    assert!((mean - 0.100).abs() < 0.002, "mean one-way delay {mean}");
    let events = std::fs::read_to_string(d.join("jitter/rep-0/events.csv")).unwrap();
    let delivered: Vec<u64> = events
        .lines()
        .filter(|l| l.contains(",deliver,") && l.contains("netem-down"))
        .filter_map(|l| l.split(',').nth(4)?.parse().ok())
        .collect();
    let overtaken = delivered.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(overtaken > 100, "{overtaken} of {} deliveries out of order", delivered.len());
    let o = squall(d, &["sim", "--link", "rate 10mbps", "--udp", "1 Mbit/s"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("10 megabytes/s (80 Mbit/s)"), "{}", text(&o));

    // 3. Outputs are safe: a second run into the same directory is
    // refused; --force replaces it without leaving old replications;
    // absurd counts need a flag; a closed pipe ends quietly.
    let three = ["sim", "--link", "rate 10mbit delay 50ms", "--udp", "1 Mbit/s", "--replications", "3"];
    let o = squall(d, &[&three[..], &["--out", "safe"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let o = squall(d, &["sim", "--link", "rate 10mbit delay 50ms", "--udp", "1 Mbit/s", "--out", "safe"]);
    assert!(!o.status.success() && text(&o).contains("already holds a run"), "{}", text(&o));
    let o = squall(d, &["sim", "--link", "rate 10mbit delay 50ms", "--udp", "1 Mbit/s", "--out", "safe", "--force"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(d.join("safe/rep-0").is_dir() && !d.join("safe/rep-1").exists());
    let o = squall(d, &["sim", "--link", "rate 10mbit", "--udp", "1 Mbit/s", "--replications", "100000000"]);
    assert!(!o.status.success() && text(&o).contains("--allow-many-runs"), "{}", text(&o));
    assert!(!d.join("out").exists(), "a refused run wrote out/");
    let mut child = Command::new(SQUALL)
        .current_dir(d)
        .args(["sim", "builtin:gsm-udp", "--out", "pipe", "--no-pcap", "--no-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // `| head -0`: the reader is gone before anything is printed
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success() && !text(&o).contains("panicked"), "{}: {}", o.status, text(&o));

    // 4. Honest numbers: three replications of a link with no randomness
    // are identical, and the table says so instead of "± 0.0"; the
    // RFC 3550 jitter of a constant delay is 0; CSV columns carry units.
    let o = squall(d, &[&three[..], &["--out", "same"]].concat());
    assert!(text(&o).contains("(all 3 identical)") && !text(&o).contains("± 0.0"), "{}", text(&o));
    let o = squall(d, &[&three[..], &["--out", "csv", "--format", "csv"]].concat());
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    let (header, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let col = |name: &str| row.split(',').nth(header.split(',').position(|h| h == name).unwrap()).unwrap();
    assert_eq!(col("jitter_rfc3550_s").parse::<f64>().unwrap(), 0.0, "{csv}");
    // A 1 Mbit/s source through an idle 10 Mbit/s link: 1 Mbit/s, less
    // what is still in flight at the end (under 1%).
    let thr: f64 = col("throughput_bit_per_s").parse().unwrap();
    assert!((thr - 1e6).abs() < 1e4, "{csv}");

    // 5. A report for a plain run, not only for experiments.
    let o = squall(d, &["report", "same"]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(d.join("same/report.html")).unwrap();
    assert!(html.contains("<svg") && html.to_lowercase().contains("throughput"));

    // 6. The README is a front door: at most 12 KB, the guide beside it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.len() <= 12 * 1024, "README is {} bytes", readme.len());
    assert!(root.join("docs/guide/src/SUMMARY.md").is_file());

    // 7. What every project has.
    for f in ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md", "CITATION.cff", "CONTRIBUTING.md"] {
        assert!(root.join(f).is_file(), "{f} missing");
    }
    let o = squall(d, &["completions", "bash"]);
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("complete -F"), "{}", text(&o));
    let o = squall(d, &["man", "--out", "man"]);
    assert!(o.status.success() && d.join("man/squall.1").is_file(), "{}", text(&o));
    let o = squall(d, &["--version"]);
    let head = Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(&root).output().unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    if !head.is_empty() {
        assert!(text(&o).contains(&head), "--version {} without commit {head}", text(&o));
    }

    // 8. The small gaps: a blackout after the end said, --jobs 0, a limit too
    // large for tc's 32 bits, a --set typo named as the --set it is, and
    // what each builtin demonstrates.
    let o = squall(d, &["sim", "builtin:gsm-udp", "--set", "duration=\"30 s\"", "--out", "short", "--no-pcap"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("warning: blackouts[0] at 60 s is not before the run ends at 30 s"), "{}", text(&o));
    let o = squall(d, &["sim", "builtin:gsm-udp", "--jobs", "0"]);
    assert!(!o.status.success(), "{}", text(&o));
    let o = squall(d, &["sim", "--link", "rate 10mbit limit 100000000000", "--udp", "1 Mbit/s"]);
    assert!(!o.status.success() && text(&o).contains("too large: at most 4294967295"), "{}", text(&o));
    let o = squall(d, &["sim", "builtin:gsm-udp", "--set", "stage.gsm-down.ratee=\"1 Mbit/s\""]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("--set stage.gsm-down.ratee") && text(&o).contains("did you mean `rate`"));
    let o = squall(d, &["scenarios"]);
    assert!(String::from_utf8_lossy(&o.stdout).matches("demonstrates:").count() >= 10, "{}", text(&o));
}
