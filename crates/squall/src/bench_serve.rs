//! `squall bench serve`: what the control tool costs a running emulation
//! (issue 32). The same emulation — one Linux TCP bulk transfer through a
//! 100 Mbit/s, 5 ms link each way — runs alternately without `squall
//! serve` and with it, its live view open in N clients (each an HTTP
//! connection to `GET /api/emulations/{id}/watch`, the stream the page
//! reads); the departure-time error of each run (summary.json's
//! `timing`) is compared side by side, in one invocation, pair by pair
//! (the order alternates so that neither side always runs first).
//!
//! `--soak D` instead runs one emulation of D with the server and its
//! clients and samples the server's resident set (VmRSS, proc(5)) every
//! 10 s: memory that stays flat is the target.
//!
//! Needs root (namespaces). Nothing is asserted: it prints the figures.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration as StdDuration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use squall_emu::control::{self, Request};
use squall_emu::naming::RunId;
use squall_link::Duration;

use crate::output::outln;

#[derive(Args)]
pub struct ServeBenchArgs {
    /// Clients watching the run's live stream (as many open pages).
    #[arg(long, default_value_t = 20)]
    clients: u32,
    /// Seconds each emulation runs.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Pairs of emulations, one without the server and one with it.
    #[arg(long, default_value_t = 3)]
    pairs: u32,
    /// The link's rate, each way.
    #[arg(long, default_value = "100 Mbit/s")]
    rate: String,
    /// Instead: one emulation this long ("10m", "600 s") with the server
    /// and its clients; the server's memory every 10 s.
    #[arg(long, value_parser = crate::soak::parse_soak_duration)]
    soak: Option<Duration>,
    /// Write the results as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// One emulation's figures.
#[derive(Clone, Debug, Serialize)]
struct RunFigures {
    /// Whether `squall serve` and its clients watched it.
    served: bool,
    deliveries: u64,
    error_p50_us: f64,
    error_p99_us: f64,
    error_p999_us: f64,
    /// The downlink's delivered packets per second of the run.
    delivered_per_s: f64,
    /// Lines each client read from the live stream (mean, least).
    lines_mean: Option<f64>,
    lines_min: Option<u64>,
    /// The server's largest resident set while the run went on, kB.
    server_rss_max_kb: Option<u64>,
}

#[derive(Serialize)]
struct Report {
    clients: u32,
    seconds: f64,
    rate: String,
    runs: Vec<RunFigures>,
    median_p99_without_us: f64,
    median_p99_with_us: f64,
    /// Median p99 with the server over median p99 without (target ≤ 1.1).
    ratio: f64,
}

#[derive(Serialize)]
struct SoakReport {
    clients: u32,
    seconds: f64,
    rate: String,
    run: RunFigures,
    /// (seconds since the run began, the server's VmRSS in kB), every 10 s.
    rss_kb: Vec<(f64, u64)>,
    /// Least-squares slope of the samples after the first minute, kB a minute.
    slope_kb_per_min: f64,
}

pub fn run(args: ServeBenchArgs) -> Result<ExitCode> {
    if !(args.seconds.is_finite() && args.seconds >= 3.0) {
        bail!("--seconds {}: expected at least 3 seconds", args.seconds);
    }
    if args.clients == 0 {
        bail!("--clients 0: expected at least one client");
    }
    let exe = std::env::current_exe().context("where is squall?")?;
    let dir = tempfile::Builder::new().prefix("squall-bench-serve-").tempdir().context("a temporary directory")?;
    if let Some(soak) = args.soak {
        return soak_run(&exe, dir.path(), &args, soak.as_secs_f64());
    }
    let scenario = write_scenario(dir.path(), &args.rate, args.seconds)?;
    outln!(
        "squall bench serve: {} pair(s) of {} s emulations at {} (Linux TCP bulk), without and with `squall serve` \
         and {} live-view clients",
        args.pairs,
        args.seconds,
        args.rate,
        args.clients
    );
    outln!(
        "{:>4}  {:<7} {:>10} {:>10} {:>10} {:>11} {:>15} {:>14}",
        "run",
        "server",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "packets/s",
        "lines mean/min",
        "server RSS kB"
    );
    let mut runs = Vec::new();
    for pair in 0..args.pairs {
        // without, with; then with, without; ...
        let order = if pair % 2 == 0 { [false, true] } else { [true, false] };
        for served in order {
            let out = dir.path().join(format!("run-{}", runs.len()));
            let figures = one_run(&exe, dir.path(), &scenario, &out, served, args.clients, 1.0)?.0;
            outln!(
                "{:>4}  {:<7} {:>10.1} {:>10.1} {:>10.1} {:>11.0} {:>15} {:>14}",
                runs.len(),
                if served { "with" } else { "without" },
                figures.error_p50_us,
                figures.error_p99_us,
                figures.error_p999_us,
                figures.delivered_per_s,
                match (figures.lines_mean, figures.lines_min) {
                    (Some(m), Some(n)) => format!("{m:.1}/{n}"),
                    _ => "-".into(),
                },
                figures.server_rss_max_kb.map_or("-".into(), |k| k.to_string()),
            );
            runs.push(figures);
        }
    }
    let median = |served: bool| {
        let mut v: Vec<f64> = runs.iter().filter(|r| r.served == served).map(|r| r.error_p99_us).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (without, with) = (median(false), median(true));
    let ratio = with / without;
    outln!(
        "median departure error p99: without the server {without:.1} us, with it and {} clients {with:.1} us: \
         ratio {ratio:.3} (target at most 1.10)",
        args.clients
    );
    let report = Report {
        clients: args.clients,
        seconds: args.seconds,
        rate: args.rate.clone(),
        runs,
        median_p99_without_us: without,
        median_p99_with_us: with,
        ratio,
    };
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn soak_run(exe: &Path, dir: &Path, args: &ServeBenchArgs, seconds: f64) -> Result<ExitCode> {
    let scenario = write_scenario(dir, &args.rate, seconds)?;
    outln!(
        "squall bench serve --soak: one {seconds} s emulation at {} with `squall serve` and {} live-view clients; \
         the server's VmRSS every 10 s",
        args.rate,
        args.clients
    );
    let (run, rss) = one_run(exe, dir, &scenario, &dir.join("soak"), true, args.clients, 10.0)?;
    for (t, kb) in &rss {
        outln!("{t:>8.0} s  {kb:>8} kB");
    }
    // Least squares over the samples after the first minute (start-up
    // allocations are not growth).
    let later: Vec<(f64, f64)> = rss.iter().filter(|(t, _)| *t >= 60.0).map(|&(t, k)| (t, k as f64)).collect();
    let slope_kb_per_min = if later.len() >= 2 {
        let n = later.len() as f64;
        let (mt, mk) = (later.iter().map(|p| p.0).sum::<f64>() / n, later.iter().map(|p| p.1).sum::<f64>() / n);
        let cov: f64 = later.iter().map(|(t, k)| (t - mt) * (k - mk)).sum();
        let var: f64 = later.iter().map(|(t, _)| (t - mt) * (t - mt)).sum();
        cov / var * 60.0
    } else {
        f64::NAN
    };
    outln!(
        "departure error p50 {:.1} us, p99 {:.1} us; clients read {} lines each (mean); server RSS max {} kB, \
         slope after the first minute {slope_kb_per_min:+.1} kB/min",
        run.error_p50_us,
        run.error_p99_us,
        run.lines_mean.map_or("-".into(), |m| format!("{m:.0}")),
        run.server_rss_max_kb.unwrap_or(0)
    );
    let report =
        SoakReport { clients: args.clients, seconds, rate: args.rate.clone(), run, rss_kb: rss, slope_kb_per_min };
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The benchmark's scenario: one bulk transfer for the whole run.
fn write_scenario(dir: &Path, rate: &str, seconds: f64) -> Result<PathBuf> {
    let text = format!(
        r#"name = "bench-serve"
duration = "{seconds} s"
seed = 1

[[hosts]]
name = "fixed"
address = "10.0.0.1"

[[hosts]]
name = "mobile"
address = "10.0.1.1"

[[links]]
between = ["fixed", "mobile"]

[[links.downlink]]
name = "down"
rate = "{rate}"
delay = "5 ms"
queue = {{ packets = 1000, drop = "tail" }}

[[links.uplink]]
name = "up"
rate = "{rate}"
delay = "5 ms"
queue = {{ packets = 1000, drop = "tail" }}

[[workload.tcp]]
name = "bulk"
from = "fixed"
to = "mobile"
start = "0.2 s"
app = {{ bulk_for = "{} s" }}
"#,
        seconds - 1.0
    );
    let path = dir.join("bench-serve.toml");
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}

/// A `squall serve` child and where it listens.
struct Server {
    child: Child,
    /// 127.0.0.1:PORT
    address: String,
    token: String,
}

impl Server {
    fn start(exe: &Path, workspace: &Path) -> Result<Server> {
        std::fs::create_dir_all(workspace)?;
        let mut child = Command::new(exe)
            .args(["serve", "--port", "0", "--workspace"])
            .arg(workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("start squall serve")?;
        let mut lines = BufReader::new(child.stdout.take().context("its output")?).lines();
        let url = loop {
            let Some(line) = lines.next() else { bail!("squall serve ended before printing its address") };
            if let Some(url) = line?.trim().strip_prefix("http://") {
                break url.to_string();
            }
        };
        // Whatever it prints later must not fill the pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let (address, token) = url.split_once("/?token=").context("an address with ?token=")?;
        Ok(Server { child, address: address.to_string(), token: token.to_string() })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client of the live stream: HTTP/1.0 (so the body is the stream
/// itself, up to the close), counting its `data:` lines.
fn watch(address: &str, token: &str, id: u32) -> Result<u64> {
    let mut s = TcpStream::connect(address)?;
    write!(
        s,
        "GET /api/emulations/{id}/watch HTTP/1.0\r\nHost: {address}\r\nX-Squall-Token: {token}\r\n\
         Accept: text/event-stream\r\n\r\n"
    )?;
    let mut reader = BufReader::new(s);
    let mut status = String::new();
    reader.read_line(&mut status)?;
    if !status.contains(" 200 ") {
        let mut rest = String::new();
        let _ = reader.take(4096).read_to_string(&mut rest);
        bail!("the watch answered {}: {rest}", status.trim());
    }
    let mut lines = 0;
    for line in reader.lines() {
        if line?.starts_with("data:") {
            lines += 1;
        }
    }
    Ok(lines)
}

/// One emulation of `scenario` into `out`, watched by `clients` through a
/// server when `served`; the server's VmRSS every `every_s` seconds.
fn one_run(
    exe: &Path,
    dir: &Path,
    scenario: &Path,
    out: &Path,
    served: bool,
    clients: u32,
    every_s: f64,
) -> Result<(RunFigures, Vec<(f64, u64)>)> {
    let server = if served { Some(Server::start(exe, &dir.join("workspace"))?) } else { None };
    let log = std::fs::File::create(out.with_extension("log"))?;
    let started = Instant::now();
    let mut emu = Command::new(exe)
        .arg("emu")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(["--no-pcap", "--no-events", "--no-timing"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("start squall emu")?;
    let id = emu.id();
    let mut watchers = Vec::new();
    let mut rss = Vec::new();
    let done = Arc::new(AtomicBool::new(false));
    let mut sampler = None;
    if let Some(server) = &server {
        // Until its control socket answers (30 s at most).
        while control::request(RunId(id), &Request::Info).is_err() {
            if started.elapsed() > StdDuration::from_secs(30) || emu.try_wait()?.is_some() {
                bail!(
                    "squall emu (run {id}) never answered on its control socket; see {}",
                    out.with_extension("log").display()
                );
            }
            std::thread::sleep(StdDuration::from_millis(20));
        }
        for _ in 0..clients {
            let (address, token) = (server.address.clone(), server.token.clone());
            watchers.push(std::thread::spawn(move || watch(&address, &token, id)));
        }
        let (pid, done) = (server.child.id(), done.clone());
        sampler = Some(std::thread::spawn(move || {
            let mut samples = Vec::new();
            let begun = Instant::now();
            let mut next = 0.0;
            while !done.load(Ordering::Relaxed) {
                let t = begun.elapsed().as_secs_f64();
                if t >= next {
                    if let Some(kb) = crate::soak::proc_status_kb(&pid.to_string(), "VmRSS") {
                        samples.push((t, kb));
                    }
                    next += every_s;
                }
                std::thread::sleep(StdDuration::from_millis(100));
            }
            samples
        }));
    }
    let status = emu.wait()?;
    done.store(true, Ordering::Relaxed);
    if let Some(s) = sampler {
        rss = s.join().map_err(|_| anyhow::anyhow!("the memory sampler panicked"))?;
    }
    let mut lines = Vec::new();
    for w in watchers {
        lines.push(w.join().map_err(|_| anyhow::anyhow!("a client panicked"))??);
    }
    drop(server);
    if !status.success() {
        bail!("squall emu failed ({status}); see {}", out.with_extension("log").display());
    }
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json"))
            .with_context(|| format!("read {}/summary.json", out.display()))?,
    )?;
    let run = &summary["runs"][0];
    let t = &run["timing"];
    let us = |k: &str| t[k].as_f64().unwrap_or(f64::NAN) * 1e6;
    let down = run["stages"].as_array().and_then(|s| s.iter().find(|s| s["name"] == "down"));
    let delivered = down.and_then(|d| d["delivered"].as_f64()).unwrap_or(0.0);
    let end = run["end"].as_f64().unwrap_or(f64::NAN);
    let figures = RunFigures {
        served,
        deliveries: t["deliveries"].as_u64().unwrap_or(0),
        error_p50_us: us("error_p50"),
        error_p99_us: us("error_p99"),
        error_p999_us: us("error_p999"),
        delivered_per_s: delivered / end,
        lines_mean: (!lines.is_empty()).then(|| lines.iter().sum::<u64>() as f64 / lines.len() as f64),
        lines_min: lines.iter().copied().min(),
        server_rss_max_kb: rss.iter().map(|s| s.1).max(),
    };
    Ok((figures, rss))
}
