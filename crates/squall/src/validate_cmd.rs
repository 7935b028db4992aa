//! `squall validate`: run the validation cases and print expected against
//! measured, with confidence intervals and tolerances. Exit 1 on a failure.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct ValidateArgs {
    /// Only these case numbers (repeatable); default: all.
    #[arg(long = "case")]
    pub cases: Vec<u32>,
    /// Threads for replications (default: all cores).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

pub fn run(args: ValidateArgs) -> Result<ExitCode> {
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut reports = Vec::new();
    let mut failed = 0;
    crate::output::outln!(
        "{:<44} {:>12} {:>12} {:>28} {:>26} result",
        "check",
        "expected",
        "measured",
        "95% CI",
        "tolerance"
    );
    for case in squall_validate::cases() {
        if !args.cases.is_empty() && !args.cases.contains(&case.number) {
            continue;
        }
        let report = case.run(jobs)?;
        crate::output::outln!(
            "\ncase {}: {} ({} replications, {})",
            report.number,
            report.name,
            report.replications,
            case.file
        );
        for check in &report.checks {
            crate::output::outln!("  {check}");
        }
        if !report.passed() {
            failed += 1;
        }
        reports.push(report);
    }
    crate::output::outln!("\n{} case(s): {} passed, {} failed", reports.len(), reports.len() - failed, failed);
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&reports)?)?;
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
