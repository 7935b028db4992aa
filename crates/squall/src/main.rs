//! The `squall` command line: flags, progress and printing live here; the
//! work is done by the library crates.

mod bench_bridge;
mod bench_cmd;
mod bench_more;
mod builtin;
mod compare_cmd;
mod ctl_cmd;
mod emu_cmd;
mod limits;
mod report_cmd;
mod run_cmd;
mod sim_cmd;
mod tool_cmd;
mod validate_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "squall",
    version,
    about = "How protocols and applications behave over wireless and other impaired links"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario in the simulate engine (virtual time).
    Sim(sim_cmd::SimArgs),
    /// Run a scenario in the emulate engine (real time, real Linux TCP in
    /// network namespaces; needs root).
    Emu(emu_cmd::EmuArgs),
    /// Talk to running emulations: list, status, state, blackout, background.
    Ctl(ctl_cmd::CtlArgs),
    /// Traffic tools to run as workloads: bulk (TCP), udp, udp-flow, udp-sink.
    Tool(tool_cmd::ToolArgs),
    /// Benchmarks of the engines (`squall bench tcp`, `emu`, `bridge`).
    Bench(bench_cmd::BenchArgs),
    /// Run the validation cases of docs/validation.md and compare with theory.
    Validate(validate_cmd::ValidateArgs),
    /// Run an experiment: replication sets and parameter sweeps, then the report.
    Run(run_cmd::RunArgs),
    /// Run a scenario in both engines and compare them: simulator against
    /// real Linux TCP, per flow and metric, against a tolerance (needs root).
    Compare(compare_cmd::CompareArgs),
    /// Rebuild an experiment's results.csv, summary.csv and report.html from its runs.
    Report(report_cmd::ReportArgs),
    /// List the built-in scenarios (use them as `builtin:NAME`).
    Scenarios,
    /// Print a built-in scenario's file, to copy and edit.
    Show {
        /// NAME or builtin:NAME
        name: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim_cmd::run(args),
        Command::Validate(args) => validate_cmd::run(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Emu(args) => emu_cmd::run(args),
        Command::Ctl(args) => ctl_cmd::run(args),
        Command::Tool(args) => tool_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Scenarios => {
            for b in builtin::ALL {
                println!("builtin:{:<24} {} ({})", b.name, b.summary, b.file);
                println!("{:<33}demonstrates: {}", "", b.demonstrates);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { name } => match builtin::find(name.trim_start_matches("builtin:")) {
            Some(b) => {
                print!("{}", b.text);
                Ok(ExitCode::SUCCESS)
            }
            None => Err(anyhow::anyhow!("no built-in scenario `{name}`; `squall scenarios` lists them")),
        },
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
