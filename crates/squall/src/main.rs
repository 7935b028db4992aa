//! The `squall` command line: flags, progress and printing live here; the
//! work is done by the library crates.

mod builtin;
mod sim_cmd;
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
    /// Run the validation cases of shared/VALIDATION.md and compare with theory.
    Validate(validate_cmd::ValidateArgs),
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
        Command::Scenarios => {
            for b in builtin::ALL {
                println!("builtin:{:<24} {}", b.name, b.summary);
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
