//! `squall ctl`: talk to running emulations through their control sockets.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use squall_emu::control::{self, Request};
use squall_emu::dataplane::BackgroundAction;
use squall_emu::naming::RunId;
use squall_link::{BlackoutMode, Rate};
use squall_scenario::BlackoutDirection;

use crate::output::outln;

#[derive(Args)]
pub struct CtlArgs {
    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Subcommand)]
pub enum CtlCommand {
    /// The running emulations: id, scenario, hosts.
    List,
    /// Counters, path statistics and timing of run ID so far.
    Status { id: u32 },
    /// Enter the scenario state NAME now.
    State { id: u32, name: String },
    /// Start or end a blackout now.
    Blackout {
        id: u32,
        #[arg(value_enum)]
        switch: OnOff,
        #[arg(long, value_enum, default_value = "hold")]
        mode: Mode,
        #[arg(long, value_enum, default_value = "both")]
        direction: Dir,
    },
    /// Follow run ID live: every 200 ms each path's delivered bytes,
    /// throughput, drops and packets inside each stage, each flow's
    /// throughput, the current state and the state switches, until the
    /// run ends.
    Watch(WatchArgs),
    /// Start, stop or re-rate one background generator of a stage now
    /// (the stage's other generators run on as they were).
    Background {
        id: u32,
        /// The stage, as named in the scenario.
        stage: String,
        /// The generator's `name` in the stage's `background` list.
        generator: String,
        #[command(subcommand)]
        action: GeneratorAction,
    },
}

#[derive(Args)]
pub struct WatchArgs {
    id: u32,
    /// Print the raw JSON lines the control socket sends.
    #[arg(long)]
    json: bool,
    /// Stop after this many lines (default: until the run ends).
    #[arg(long, value_name = "N")]
    count: Option<u64>,
}

#[derive(Subcommand)]
pub enum GeneratorAction {
    /// Start a generator stopped before, as it was.
    Start,
    /// Stop it.
    Stop,
    /// Set its mean rate, e.g. "2 Mbit/s" (a generator given by `rate`).
    Rate { rate: Rate },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}
#[derive(Clone, Copy, ValueEnum)]
pub enum Mode {
    Hold,
    Drop,
}
#[derive(Clone, Copy, ValueEnum)]
pub enum Dir {
    Downlink,
    Uplink,
    Both,
}

/// A run's hosts as `ctl list` shows them: name, address (and IPv6
/// address, if it has one) and where the host is (its namespace, or the
/// interface it is behind).
fn hosts(info: &serde_json::Value) -> String {
    let host = |h: &serde_json::Value| {
        let s = |k: &str| h[k].as_str().map(str::to_string);
        let place = s("netns")
            .map(|n| format!("netns {n}"))
            .or_else(|| s("interface").map(|i| format!("interface {i}")))
            .or_else(|| s("outside_interface").map(|i| format!("outside, through {i}")))
            .unwrap_or_default();
        // An IPv6-only host has no IPv4 address (null).
        let addresses: Vec<String> = [s("address"), s("address6")].into_iter().flatten().collect();
        format!("{} {}, {place}", s("name").unwrap_or_default(), addresses.join(" "))
    };
    info["hosts"].as_array().map(|a| a.iter().map(host).collect::<Vec<_>>().join("; ")).unwrap_or_default()
}

pub fn run(args: CtlArgs) -> Result<ExitCode> {
    let (id, request) = match args.command {
        CtlCommand::List => {
            let ids = control::list();
            if ids.is_empty() {
                outln!("no emulation is running");
            } else {
                outln!("RUN\tSCENARIO\tHOSTS (name address, where)");
            }
            for id in ids {
                match control::request(id, &Request::Info) {
                    Ok(info) => outln!("{}\t{}\t{}", id.0, info["scenario"].as_str().unwrap_or("?"), hosts(&info)),
                    Err(e) => outln!("{}\t(no answer: {e})", id.0),
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        CtlCommand::Watch(args) => return watch(&args),
        CtlCommand::Status { id } => (id, Request::Status),
        CtlCommand::State { id, name } => (id, Request::State { name }),
        CtlCommand::Blackout { id, switch, mode, direction } => (
            id,
            Request::Blackout {
                on: matches!(switch, OnOff::On),
                mode: match mode {
                    Mode::Hold => BlackoutMode::Hold,
                    Mode::Drop => BlackoutMode::Drop,
                },
                direction: match direction {
                    Dir::Downlink => BlackoutDirection::Downlink,
                    Dir::Uplink => BlackoutDirection::Uplink,
                    Dir::Both => BlackoutDirection::Both,
                },
            },
        ),
        CtlCommand::Background { id, stage, generator, action } => (
            id,
            Request::Background {
                stage,
                generator,
                action: match action {
                    GeneratorAction::Start => BackgroundAction::Start,
                    GeneratorAction::Stop => BackgroundAction::Stop,
                    GeneratorAction::Rate { rate } => BackgroundAction::Rate(rate),
                },
            },
        ),
    };
    match control::request(RunId(id), &request) {
        Ok(v) => {
            outln!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => bail!("{e}"),
    }
}

/// `squall ctl watch`: the control socket's lines as they come, raw
/// (`--json`) or as a table.
fn watch(args: &WatchArgs) -> Result<ExitCode> {
    let mut seen = 0;
    let done = control::watch(RunId(args.id), |line| {
        if args.json {
            outln!("{line}");
        } else {
            outln!("{}", table(&line));
        }
        seen += 1;
        args.count.is_none_or(|n| seen < n)
    });
    match done {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => bail!("{e}"),
    }
}

/// One line of `squall ctl watch` for a person: time and state, then a
/// row per path and per flow.
fn table(line: &serde_json::Value) -> String {
    let rate = |v: &serde_json::Value| v.as_f64().map_or("-".to_string(), |b| format!("{:.3} Mbit/s", b / 1e6));
    let mut out = format!(
        "t = {:.1} s   state: {}",
        line["time"].as_f64().unwrap_or(0.0),
        line["state"].as_str().unwrap_or("(initial)")
    );
    for e in line["events"].as_array().into_iter().flatten() {
        out += &format!(
            "   switched to `{}` at {:.3} s",
            e["state"].as_str().unwrap_or("?"),
            e["time"].as_f64().unwrap_or(0.0)
        );
    }
    let d = &line["departure_error"];
    if let Some(n) = d["deliveries"].as_u64().filter(|n| *n > 0) {
        let us = |k: &str| d[k].as_f64().unwrap_or(0.0);
        out += &format!(
            "   departure error p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs over {n} deliveries ({} late)",
            us("p50_us"),
            us("p99_us"),
            us("max_us"),
            d["late"]
        );
    }
    if let Some(n) = line["dropped_lines"].as_u64().filter(|n| *n > 0) {
        out += &format!("   ({n} lines dropped: this terminal reads slower than they come)");
    }
    for p in line["paths"].as_array().into_iter().flatten() {
        let stages: Vec<String> = p["stages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let dropped: u64 = s["dropped"].as_object().map_or(0, |d| d.values().filter_map(|v| v.as_u64()).sum());
                let classes: Vec<String> = s["classes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| format!("{} {}", c["name"].as_str().unwrap_or("?"), c["packets_queued"]))
                    .collect();
                let classes = if classes.is_empty() {
                    String::new()
                } else {
                    format!(", queued by class: {}", classes.join(", "))
                };
                format!(
                    "{} (rate {}, {} inside{classes}, {dropped} dropped)",
                    s["name"].as_str().unwrap_or("?"),
                    rate(&s["rate_bps"]),
                    s["packets_inside"]
                )
            })
            .collect();
        out += &format!(
            "\n  link {} {:<8} {:>16}  {} bytes delivered  {}",
            p["link"],
            p["direction"].as_str().unwrap_or("?"),
            rate(&p["throughput_bps"]),
            p["delivered_bytes"],
            stages.join(", ")
        );
    }
    for f in line["flows"].as_array().into_iter().flatten() {
        out += &format!(
            "\n  flow {:<40} {:>16}  {} bytes",
            f["flow"].as_str().unwrap_or("?"),
            rate(&f["throughput_bps"]),
            f["bytes"]
        );
    }
    out
}
