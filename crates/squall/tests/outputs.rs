//! What a run leaves behind and prints, through the binary (issue 28,
//! points 3, 4 and 7): an existing run is never overwritten without
//! --force, --force leaves no file of the old run, huge replication counts
//! need a flag, a closed stdout ends quietly, RFC 3550 jitter of a
//! constant delay is zero, and the completions, man pages and --version.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{SQUALL, squall};

/// A short constant-rate UDP run over a one-line link into `out`.
fn sim(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sim",
        "--link",
        "rate 10mbit delay 50ms",
        "--udp",
        "5 Mbit/s",
        "--set",
        "duration=\"2 s\"",
        "--no-pcap",
        "--no-events",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    squall(&args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_rerun_into_a_directory_that_holds_a_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let first = sim(&out, &[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let before = std::fs::read(out.join("summary.json")).unwrap();
    // Written through a temporary file, yet readable by all as fs::write's.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(out.join("summary.json")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
    let again = sim(&out, &["--seed", "9"]);
    let err = text(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("already holds a run (summary.json); --force to replace it, or --out elsewhere"), "{err}");
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), before, "the first run's summary is untouched");
}

#[test]
fn force_replaces_the_run_and_leaves_no_stale_replication() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    assert!(sim(&out, &["--replications", "3"]).status.success());
    assert!(out.join("rep-2").is_dir());
    let forced = sim(&out, &["--replications", "1", "--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    let mut names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["rep-0", "scenario.toml", "summary.json"]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["replications"], 1);
}

#[test]
fn force_does_not_remove_a_directory_that_is_not_a_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("thesis.tex"), "mine").unwrap();
    let o = sim(dir.path(), &["--force"]);
    let err = text(&o.stderr);
    assert!(!o.status.success() && err.contains("is not empty and holds no squall run"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("thesis.tex")).unwrap(), "mine");
}

#[test]
fn replications_above_the_limit_need_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("many");
    let o = sim(&out, &["--replications", "100001"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("100001 replications, more than the 100000") && err.contains("--allow-many-runs"), "{err}");
    assert!(!out.exists(), "nothing is written for a refused run");
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("piped");
    // As `squall sim … | head -0`: the reader has gone before the table
    // is printed, so the first write meets a closed pipe.
    let mut child = Command::new(SQUALL)
        .args(["sim", "--link", "rate 10mbit delay 50ms", "--udp", "5 Mbit/s", "--no-pcap", "--no-events"])
        .args(["--set", "duration=\"2 s\"", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(out.join("summary.json").is_file(), "the run's files are written before printing");
}

#[test]
fn rfc3550_jitter_of_a_constant_delay_is_zero() {
    // A 5 Mbit/s constant-rate flow on a 10 Mbit/s link never queues: every
    // packet's transit is the same, so RFC 3550 §6.4.1's J stays 0; the
    // old "jitter" key is gone (it was the inter-arrival std dev).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("constant");
    assert!(sim(&out, &[]).status.success());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flow = &summary["runs"][0]["flows"][0];
    assert_eq!(flow["delay_p50"], flow["delay_p99"], "constant delay: {flow}");
    assert_eq!(flow["jitter_rfc3550"], 0.0, "{flow}");
    assert!(flow.get("jitter").is_none() && flow.get("interarrival_sd").is_some(), "{flow}");
    // The case: a TCP flow's ACKs cross an uplink with a constant
    // 50 ms delay and no queue; they arrive in bursts, so the inter-arrival
    // standard deviation is tens of ms, but RFC 3550's J is 0.
    let tcp = dir.path().join("tcp");
    let o = squall(&[
        "sim",
        "--link",
        "rate 10mbit delay 50ms",
        "--tcp",
        "cubic",
        "--set",
        "duration=\"5 s\"",
        "--no-pcap",
        "--no-events",
        "--out",
        tcp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tcp.join("summary.json")).unwrap()).unwrap();
    let flows = summary["runs"][0]["flows"].as_array().unwrap();
    let acks = flows.iter().find(|f| f["name"] == "tcp:s2c").expect("the ACK flow");
    assert_eq!((acks["delay_p50"].as_f64(), acks["delay_p99"].as_f64()), (Some(0.05), Some(0.05)), "{acks}");
    assert_eq!(acks["jitter_rfc3550"], 0.0, "{acks}");
    assert!(acks["interarrival_sd"].as_f64().unwrap() > 0.001, "{acks}");
}

#[test]
fn table_shows_no_confidence_interval_where_nothing_varied() {
    let dir = tempfile::tempdir().unwrap();
    let one = sim(&dir.path().join("one"), &[]);
    let stdout = text(&one.stdout);
    assert!(stdout.contains("(1 run)") && !stdout.contains('±'), "{stdout}");
    // Constant-rate UDP without loss: every replication delivers the same.
    let three = sim(&dir.path().join("three"), &["--replications", "3"]);
    let stdout = text(&three.stdout);
    assert!(stdout.contains("(all 3 identical)") && !stdout.contains("± 0.0"), "{stdout}");
    assert!(stdout.contains("throughput (Mbit/s)") && !stdout.contains("kb/s"), "{stdout}");
}

#[test]
fn bash_completions_parse() {
    let o = squall(&["completions", "bash"]);
    assert!(o.status.success());
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("squall.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&script).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", text(&check.stderr));
    let script = text(&o.stdout);
    assert!(script.contains("complete") && script.contains("completions") && script.contains("--replications"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = squall(&["completions", shell]);
        assert!(o.status.success() && text(&o.stdout).contains("squall"), "{shell}");
    }
}

#[test]
fn man_pages_render_with_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let o = squall(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for page in ["squall.1", "squall-sim.1", "squall-run.1", "squall-completions.1", "squall-man.1"] {
        assert!(dir.path().join(page).is_file(), "{page}");
    }
    let rendered = Command::new("man")
        .arg("-l")
        .arg(dir.path().join("squall.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let page = text(&rendered.stdout);
    assert!(rendered.status.success(), "man -l: {}", text(&rendered.stderr));
    for sub in ["sim", "emu", "run", "report", "validate", "compare", "completions", "man"] {
        let entry = format!("squall-{sub}(1)");
        assert!(page.lines().any(|l| l.trim() == entry), "no `{entry}` in the page:\n{page}");
    }
    let sim = Command::new("man").arg("-l").arg(dir.path().join("squall-sim.1")).env("MANPAGER", "cat").output();
    assert!(text(&sim.unwrap().stdout).contains("--replications"));
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let head =
        Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    let head = text(&head.unwrap().stdout).trim().to_string();
    assert!(!head.is_empty(), "the test runs in a git checkout");
    let v = text(&squall(&["--version"]).stdout);
    assert!(v.starts_with("squall 0.1.0 (") && v.contains(&head), "{v} against HEAD {head}");
}

#[test]
fn json_and_csv_give_plain_numbers_with_units_in_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let json = sim(&dir.path().join("json"), &["--format", "json"]);
    assert!(json.status.success(), "{}", text(&json.stderr));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("stdout is JSON alone");
    let udp = &v["flows"][0];
    assert_eq!(udp["flow"], "udp");
    // 1200-byte packets every 1.92 ms (5 Mbit/s) for 2 s over a 10 Mbit/s
    // link with 50 ms delay: each takes 50.96 ms, so the 1016 sent before
    // 1.94904 s arrive, the last at 1015 × 1.92 ms + 50.96 ms; throughput
    // is delivered bits over first send to last delivery (docs/metrics.md).
    assert_eq!(udp["delivered_packets"], 1016.0, "{udp}");
    let expected = 1016.0 * 9600.0 / (1015.0 * 0.00192 + 0.05096);
    let rate = udp["throughput_bit_per_s"].as_f64().unwrap();
    assert!((rate / expected - 1.0).abs() < 1e-9, "{rate} against {expected}");
    assert_eq!(udp["delay_mean_s"].as_f64().map(|d| (d * 1e3).round()), Some(51.0), "50 ms + 0.96 ms on the wire");
    assert!(udp["throughput_ci95_low_bit_per_s"].is_null(), "one replication has no interval: {udp}");
    let csv = sim(&dir.path().join("csv"), &["--format", "csv"]);
    let csv = text(&csv.stdout);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "throughput_bit_per_s").expect("unit in the column name");
    assert_eq!(row[0], "udp");
    assert_eq!(row[col].parse::<f64>().unwrap(), rate, "the same run gives the same number");
    assert!(!csv.contains('%') && !csv.contains("kb/s"), "{csv}");
}

#[test]
fn run_refuses_an_earlier_experiment_unless_resume_or_force() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("tiny.toml");
    std::fs::write(
        &exp,
        "name = \"tiny\"\n[[sets]]\nname = \"one\"\nscenario = \"builtin:gsm-udp\"\nreplications = 2\n\
         set = { duration = \"5 s\" }\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        squall(&args)
    };
    assert!(run(&["--max-runs", "1"]).status.success());
    let refused = run(&[]);
    let err = text(&refused.stderr);
    assert!(!refused.status.success() && err.contains("--resume") && err.contains("--force"), "{err}");
    // --force starts again: the replication run before is gone from the
    // log, both are run anew.
    let forced = run(&["--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    let log = std::fs::read_to_string(out.join("runs.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    assert!(out.join("report.html").is_file());
    assert!(!run(&["--force", "--resume"]).status.success(), "the two flags conflict");
}

/// `squall emu` refuses an --out that holds a run before it starts
/// anything (issue 28): the error is the directory's, it never announces
/// a run (the "while it runs" line), and the earlier run's files stay.
/// `--force` gets past the refusal and clears the directory: the sim
/// run's replication is gone whether or not this machine can emulate.
/// In shell mode stdout is the command's (scripts parse it, as the emu
/// tests parse `iperf3 -J`), so `--format json|csv`, which prints the
/// per-flow results there, is refused before anything starts.
#[test]
fn emu_shell_mode_keeps_stdout_for_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    for format in ["json", "csv"] {
        let o =
            squall(&["emu", "--link", "rate 10mbit", "--format", format, "--out", out.to_str().unwrap(), "--", "true"]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "--format {format} in shell mode ran: {err}");
        assert!(err.contains("shell mode") && err.contains("summary.json"), "{err}");
        assert!(o.stdout.is_empty() && !out.exists(), "nothing printed, nothing written");
    }
}

#[test]
fn emu_refuses_an_earlier_run_unless_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    assert!(sim(&out, &[]).status.success());
    let before = std::fs::read(out.join("summary.json")).unwrap();
    let emu = |extra: &[&str]| {
        let mut args = vec!["emu", "--link", "rate 10mbit delay 5ms", "--duration", "0.2 s", "--no-pcap"];
        args.extend_from_slice(&["--no-events", "--out", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        squall(&args)
    };
    let refused = emu(&[]);
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("already holds a run (summary.json); --force to replace it"), "{err}");
    assert!(!err.contains("while it runs"), "nothing was started: {err}");
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), before);
    // --force-interface is inline mode's: refused here, even with
    // --force, before the directory is touched.
    let refused = emu(&["--force", "--force-interface"]);
    let err = text(&refused.stderr);
    assert!(!refused.status.success() && err.contains("--force-interface is for inline mode"), "{err}");
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), before);
    // --force: cleared first (without root the emulation then fails on
    // its own; as root it runs and writes an emu summary).
    let forced = emu(&["--force"]);
    let err = text(&forced.stderr);
    assert!(!err.contains("already holds a run"), "{err}");
    assert_ne!(std::fs::read(out.join("summary.json")).ok(), Some(before), "the sim run's summary is gone");
    if forced.status.success() {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(v["engine"], "emu");
    }
}

/// Every command that prints ends quietly when its reader has gone
/// (issue 28): stdout is a pipe whose read end is closed before the
/// command starts, so its first write fails with EPIPE; the command
/// exits 0 with no panic and no "Broken pipe".
#[test]
fn printing_commands_end_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let out_s = out.to_str().unwrap();
    // A run with its pcaps, for `squall report`.
    let run = squall(&["sim", "--link", "rate 10mbit delay 50ms", "--udp", "5 Mbit/s", "--out", out_s]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let commands: [&[&str]; 7] = [
        &["scenarios"],
        &["show", "builtin:gsm-udp"],
        &["report", out_s],
        &["ctl", "list"],
        &["validate", "--case", "1"],
        &["completions", "bash"],
        &["man"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_squall")).args(args).stdout(writer).output().unwrap();
        let err = text(&o.stderr);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    }
    // And as a shell pipeline: `squall scenarios | head -1` prints one
    // line, nothing on stderr, and squall's own status is 0.
    let o = Command::new("bash")
        .args(["-c", &format!("set -o pipefail; {} scenarios | head -1", env!("CARGO_BIN_EXE_squall"))])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 1);
    assert_eq!(text(&o.stderr), "");
}

/// `squall validate --format json|csv`: one row per check with plain
/// numbers, the same checks and numbers as `--json FILE` writes.
#[test]
fn validate_prints_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.json");
    let o = squall(&["validate", "--case", "1", "--format", "json", "--json", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON alone");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let checks = written[0]["checks"].as_array().unwrap();
    let rows = printed.as_array().unwrap();
    assert_eq!(rows.len(), checks.len());
    for (row, check) in rows.iter().zip(checks) {
        assert_eq!(row["case"], 1.0);
        assert_eq!(row["check"], check["name"]);
        assert_eq!(row["expected"], check["expected"]);
        assert_eq!(row["measured"], check["measured"]);
    }
    let o = squall(&["validate", "--case", "1", "--format", "csv"]);
    let csv = text(&o.stdout);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("case,case_name,check,expected,measured,ci95_low,ci95_high,tolerance,result"));
    assert_eq!(lines.count(), checks.len());
}
