//! `squall serve`: the control tool (crates/squall-serve) over a workspace.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct ServeArgs {
    /// The workspace: networks/, workloads/, experiments/ and results/
    /// (created if missing).
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Address to listen on; one that is not loopback needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Port to listen on (0: any free port; the printed URL says which).
    #[arg(long, default_value_t = 8632)]
    pub port: u16,
    /// Listen on a non-loopback address (anyone who can reach it and has
    /// the token may use the tool; it warns).
    #[arg(long)]
    pub allow_remote: bool,
    /// Threads a simulation set's replications run on (default: all cores).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
}

pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let templates = crate::builtin::ALL
        .iter()
        .map(|b| squall_serve::Template { name: b.name.into(), summary: b.summary.into(), text: b.text.into() })
        .collect();
    squall_serve::serve(squall_serve::Config {
        workspace: args.workspace,
        bind: args.bind,
        port: args.port,
        allow_remote: args.allow_remote,
        jobs: args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        squall: None,
        templates,
    })?;
    Ok(ExitCode::SUCCESS)
}
