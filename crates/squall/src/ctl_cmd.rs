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

/// A run's hosts as `ctl list` shows them: name, address and where the
/// host is (its namespace, or the interface it is behind).
fn hosts(info: &serde_json::Value) -> String {
    let host = |h: &serde_json::Value| {
        let s = |k: &str| h[k].as_str().map(str::to_string);
        let place = s("netns")
            .map(|n| format!("netns {n}"))
            .or_else(|| s("interface").map(|i| format!("interface {i}")))
            .or_else(|| s("outside_interface").map(|i| format!("outside, through {i}")))
            .unwrap_or_default();
        format!("{} {}, {place}", s("name").unwrap_or_default(), s("address").unwrap_or_default())
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
