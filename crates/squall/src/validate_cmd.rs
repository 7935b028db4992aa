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
    /// How to print the checks: aligned `table`, or `json` / `csv` with
    /// one row per check and plain numbers (as `squall sim --format`).
    #[arg(long, value_enum, default_value_t = crate::sim_cmd::Format::Table)]
    pub format: crate::sim_cmd::Format,
}

pub fn run(args: ValidateArgs) -> Result<ExitCode> {
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut reports = Vec::new();
    let mut failed = 0;
    let table = args.format == crate::sim_cmd::Format::Table;
    let mut rows = crate::output::Rows::new(&[
        "case",
        "case_name",
        "check",
        "expected",
        "measured",
        "ci95_low",
        "ci95_high",
        "tolerance",
        "result",
    ]);
    if table {
        crate::output::outln!(
            "{:<44} {:>12} {:>12} {:>28} {:>26} result",
            "check",
            "expected",
            "measured",
            "95% CI",
            "tolerance"
        );
    }
    for case in squall_validate::cases() {
        if !args.cases.is_empty() && !args.cases.contains(&case.number) {
            continue;
        }
        let report = case.run(jobs)?;
        if table {
            crate::output::outln!(
                "\ncase {}: {} ({} replications, {})",
                report.number,
                report.name,
                report.replications,
                case.file
            );
        }
        for check in &report.checks {
            if table {
                crate::output::outln!("  {check}");
            }
            use crate::output::Cell;
            rows.push(vec![
                Cell::Num(f64::from(report.number)),
                Cell::from(report.name),
                Cell::from(check.name.as_str()),
                Cell::Num(check.expected),
                Cell::Num(check.measured),
                Cell::Num(check.ci.map_or(f64::NAN, |c| c.low)),
                Cell::Num(check.ci.map_or(f64::NAN, |c| c.high)),
                Cell::from(check.tolerance.as_str()),
                Cell::from(if check.pass { "PASS" } else { "FAIL" }),
            ]);
        }
        if !report.passed() {
            failed += 1;
        }
        reports.push(report);
    }
    let tally = format!("{} case(s): {} passed, {} failed", reports.len(), reports.len() - failed, failed);
    if table {
        crate::output::outln!("\n{tally}");
    } else {
        rows.print(args.format);
        eprintln!("{tally}");
    }
    if let Some(path) = args.json {
        crate::output::write_atomic(&path, serde_json::to_string_pretty(&reports)?)?;
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
