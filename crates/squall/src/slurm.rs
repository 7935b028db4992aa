//! `squall run EXP --slurm`: the experiment as a Slurm job array of
//! `squall run EXP --shard $SLURM_ARRAY_TASK_ID/N` tasks (see
//! [`crate::shard`]) and a report job that depends on the array.
//!
//! The report job waits with `--dependency=afterany:ARRAY` (sbatch(1),
//! "afterany: this job can begin execution after the specified jobs have
//! terminated"), not `afterok`: with `afterok` a single failed task (a run
//! that errs, a node lost, a time limit) leaves the report job pending for
//! ever (`DependencyNeverSatisfied`), and nothing says which runs are
//! missing. After every task has ended, `squall report` merges what has
//! finished, names what is missing and exits with status 1, so sacct shows
//! the report job failed; the failed shard can then be rerun alone.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

use crate::output::outln;
use crate::run_args::{EventLog, RunArgs};

/// Tasks in the job array when `--array-size` is not given: one per run
/// up to this many.
pub const DEFAULT_ARRAY_SIZE: usize = 100;

/// The two batch scripts of an experiment in `out` of `runs` runs.
struct Scripts {
    shards: PathBuf,
    report: PathBuf,
    tasks: usize,
}

/// Writes the job array and the report job into `out`/slurm/ (and
/// submits them with `--submit`); `out` holds the experiment's manifest.
pub fn write_jobs(args: &RunArgs, out: &Path, runs: usize) -> Result<ExitCode> {
    let tasks = check(args, runs)?;
    let scripts = write_scripts(args, out, runs, tasks)?;
    if !args.slurm.submit {
        outln!(
            "wrote {} (a job array of {} tasks) and {} (the report, after every task has ended); submit them with:\n  \
             jobid=$(sbatch --parsable {}) && sbatch --dependency=afterany:${{jobid%%;*}} {}",
            scripts.shards.display(),
            scripts.tasks,
            scripts.report.display(),
            shell_quote(&scripts.shards.display().to_string()),
            shell_quote(&scripts.report.display().to_string())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let array = sbatch(&[], &scripts.shards)?;
    let report = sbatch(&[format!("--dependency=afterany:{array}")], &scripts.report)?;
    outln!(
        "submitted job array {array} ({} tasks) and report job {report} (after every task of {array})",
        scripts.tasks
    );
    outln!(
        "when job {report} has ended, {}/report.html holds the report and {}/slurm/ the jobs' logs",
        out.display(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Checks `--array-size` and `--slurm-arg` against an experiment of
/// `runs` runs (before anything is written); returns the number of tasks.
pub fn check(args: &RunArgs, runs: usize) -> Result<usize> {
    let tasks = match args.slurm.array_size {
        Some(n) if n > runs => bail!(
            "--array-size {n}: the experiment makes only {runs} run(s); give at most {runs} (tasks beyond one per run \
             would have nothing to do)"
        ),
        Some(n) => n,
        None => runs.clamp(1, DEFAULT_ARRAY_SIZE),
    };
    for a in &args.slurm.slurm_args {
        if !a.starts_with('-') || a.contains(['\n', '\r']) {
            bail!(
                "--slurm-arg {a:?}: expected one sbatch option on one line, starting with `-` (e.g. \
                 --slurm-arg=--partition=short or --slurm-arg=--time=2:00:00)"
            );
        }
    }
    Ok(tasks)
}

fn write_scripts(args: &RunArgs, out: &Path, runs: usize, tasks: usize) -> Result<Scripts> {
    let abs = |p: &Path| p.canonicalize().with_context(|| format!("cannot find {}", p.display()));
    let out = abs(out)?;
    let experiment = abs(&args.experiment)?;
    let squall = std::env::current_exe().context("cannot find the squall binary running now")?;
    let name = experiment.file_stem().map_or("experiment".into(), |s| s.to_string_lossy().into_owned());
    let dir = out.join("slurm");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let q = |p: &Path| shell_quote(&p.display().to_string());
    let header = |job: &str, log: &str| {
        let mut h = format!("#!/bin/bash\n#SBATCH --job-name={job}\n#SBATCH --output={}\n", dir.join(log).display());
        for a in &args.slurm.slurm_args {
            h.push_str(&format!("#SBATCH {a}\n"));
        }
        h
    };
    let mut run =
        format!("{} run {} --out {} --shard \"$SLURM_ARRAY_TASK_ID/{tasks}\"", q(&squall), q(&experiment), q(&out));
    // As many threads as the task was given CPUs (sbatch --cpus-per-task,
    // else Slurm's default of one), not every core of the node.
    match args.jobs {
        Some(j) => run.push_str(&format!(" --jobs {j}")),
        None => run.push_str(" --jobs \"${SLURM_CPUS_PER_TASK:-1}\""),
    }
    if args.events == EventLog::Drops {
        run.push_str(" --events drops");
    }
    if args.allow_many_runs {
        run.push_str(" --allow-many-runs");
    }
    let shards = format!(
        "{}#SBATCH --array=0-{}\n# Written by `squall run --slurm`: task I runs shard I of {tasks} of {runs} runs.\nexec {run}\n",
        header(&format!("squall-{name}"), "shard-%a.log"),
        tasks - 1
    );
    let report = format!(
        "{}# Written by `squall run --slurm`: submitted with --dependency=afterany on the job array.\nexec {} report {}\n",
        header(&format!("squall-{name}-report"), "report.log"),
        q(&squall),
        q(&out)
    );
    let paths = Scripts { shards: dir.join("shards.sh"), report: dir.join("report.sh"), tasks };
    crate::output::write_atomic(&paths.shards, shards)?;
    crate::output::write_atomic(&paths.report, report)?;
    Ok(paths)
}

/// `sbatch --parsable OPTIONS SCRIPT`; returns the job id (sbatch(1):
/// `--parsable` prints "jobid[;cluster_name]").
fn sbatch(options: &[String], script: &Path) -> Result<String> {
    let output = Command::new("sbatch")
        .arg("--parsable")
        .args(options)
        .arg(script)
        .output()
        .context("--submit: cannot run sbatch (is Slurm's client installed and on PATH?)")?;
    if !output.status.success() {
        bail!(
            "--submit: `sbatch --parsable {} {}` failed ({}): {}",
            options.join(" "),
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let id = text.trim().split(';').next().unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        bail!("--submit: sbatch printed {:?}, not a job id", text.trim());
    }
    Ok(id.to_string())
}

/// `s` as one word for bash: in single quotes, each `'` as `'\''`.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:,=".contains(&b)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quoted_words_read_back_as_bash_reads_them() {
        for word in ["plain/path.toml", "with space", "it's", "$HOME", "a'b'c", ""] {
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
        }
    }
}
