//! The `squall` command line: flags, progress and printing live here; the
//! work is done by the library crates.

mod bench_bridge;
mod bench_cmd;
mod bench_loops;
mod bench_more;
mod bench_serve;
mod bench_sim;
mod builtin;
mod compare_cmd;
mod ctl_cmd;
mod emu_cmd;
mod emu_flows;
mod limits;
mod mahimahi_flags;
mod manifest;
mod output;
mod report_cmd;
mod run_args;
mod run_cmd;
mod serve_cmd;
mod shard;
mod sim_cmd;
mod slurm;
mod soak;
mod tool_cmd;
mod trace_cmd;
mod trace_generate;
mod trace_record;
mod validate_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::output::{out, outln};

/// `squall --version`: the crate's version and the commit the binary was
/// built from with its date (build.rs; "unknown" outside git).
const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("SQUALL_COMMIT"), " ", env!("SQUALL_COMMIT_DATE"), ")");

#[derive(Parser)]
#[command(
    name = "squall",
    version = VERSION,
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
    /// Benchmarks of the engines (`squall bench tcp`, `sim`, `emu`, `bridge`, `timing`).
    Bench(bench_cmd::BenchArgs),
    /// Run the validation cases of docs/validation.md and compare with theory.
    Validate(validate_cmd::ValidateArgs),
    /// Make and read link traces: convert (Mahimahi <-> rate series),
    /// generate, stats.
    Trace(trace_cmd::TraceArgs),
    /// Run an experiment: replication sets and parameter sweeps, then the report.
    Run(run_cmd::RunArgs),
    /// Run a scenario in both engines and compare them: simulator against
    /// real Linux TCP, per flow and metric, against a tolerance (needs root).
    Compare(compare_cmd::CompareArgs),
    /// Rebuild an experiment's results.csv, summary.csv and report.html from its runs.
    Report(report_cmd::ReportArgs),
    /// The control tool: a web page and JSON API over a workspace of
    /// networks, workloads, experiments and results (prints its URL).
    Serve(serve_cmd::ServeArgs),
    /// List the built-in scenarios (use them as `builtin:NAME`).
    Scenarios,
    /// Print a built-in scenario's file, to copy and edit.
    Show {
        /// NAME or builtin:NAME
        name: String,
    },
    /// Print a shell completion script: `squall completions bash >
    /// /etc/bash_completion.d/squall` (zsh, fish, elvish, powershell alike).
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (roff): squall.1 and squall-SUBCOMMAND.1 into
    /// --out; without --out, print squall.1 (`squall man | man -l -`).
    Man {
        /// Directory to write every page into (created if missing).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
}

/// The manual pages: (file name, roff text) for squall and each visible
/// subcommand, at every depth (what `clap_mangen::generate_to` writes).
fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn pages(cmd: clap::Command, acc: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut text = Vec::new();
        man.render(&mut text)?;
        acc.push((man.get_filename(), text));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            pages(sub, acc)?;
        }
        Ok(())
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut acc = Vec::new();
    pages(cmd, &mut acc)?;
    Ok(acc)
}

fn man(dir: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let pages = man_pages().context("cannot render the manual pages")?;
    match dir {
        None => out!("{}", String::from_utf8_lossy(&pages[0].1)),
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            for (name, text) in &pages {
                output::write_atomic(&dir.join(name), text)?;
            }
            outln!("wrote {} manual pages into {}", pages.len(), dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the libraries' messages (`tracing` events: squall-emu's notes and
/// warnings) on stderr as they are, one a line, with no time, level or
/// target, so they read as they did when the library printed them itself.
fn log_to_stderr() {
    tracing_subscriber::fmt().with_writer(std::io::stderr).without_time().with_level(false).with_target(false).init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    log_to_stderr();
    let result = match cli.command {
        Command::Sim(args) => sim_cmd::run(args),
        Command::Validate(args) => validate_cmd::run(args),
        Command::Trace(args) => trace_cmd::run(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Emu(args) => emu_cmd::run(args),
        Command::Ctl(args) => ctl_cmd::run(args),
        Command::Tool(args) => tool_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "squall", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { out } => man(out),
        Command::Scenarios => {
            for b in builtin::ALL {
                outln!("builtin:{:<24} {} ({})", b.name, b.summary, b.file);
                outln!("{:<33}demonstrates: {}", "", b.demonstrates);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { name } => match builtin::find(name.trim_start_matches("builtin:")) {
            Some(b) => {
                out!("{}", b.text);
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
