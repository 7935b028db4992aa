//! `squall run`'s arguments, apart from the command so that the Slurm
//! writer and the simulator's command can read them without depending on
//! the command itself.

use std::path::PathBuf;

use clap::Args;

#[derive(Args)]
pub struct RunArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// Output directory (default: out/EXPERIMENT-NAME).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Simulation replications in parallel on this many threads (default:
    /// all cores). Emulation replications run one at a time.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Continue an interrupted experiment in the same directory: finished
    /// replications are kept, the others run.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Replace the run already in --out (its files are removed first);
    /// without it (or --resume) such a directory is refused.
    #[arg(long)]
    pub force: bool,
    /// Stop after this many replications have run (to split a long
    /// experiment; continue with --resume).
    #[arg(long)]
    pub max_runs: Option<usize>,
    /// Which model events simulation runs write to events.csv: `all`, or
    /// `drops` (drops with their reasons, corruptions, states and
    /// blackouts: all the analysis needs but the stage-occupancy plots, at
    /// a small fraction of the size).
    #[arg(long, value_enum, default_value_t = EventLog::All)]
    pub events: EventLog,
    /// Run an experiment of more than 100 000 replications (refused
    /// without it: usually a sweep with more keys or values than meant).
    #[arg(long)]
    pub allow_many_runs: bool,
    /// How to print the summary table: aligned `table`, or `json` / `csv`
    /// with plain numbers and the unit in each name (as `squall sim
    /// --format`).
    #[arg(long, value_enum, default_value_t = crate::output::Format::Table)]
    pub format: crate::output::Format,
    /// Run only shard I of N (0 ≤ I < N, as $SLURM_ARRAY_TASK_ID of
    /// `sbatch --array=0-(N-1)`): every N-th run of the experiment from
    /// run I on, into --out, which shards share (any may run at the same
    /// time as the others, and each may be rerun alone: its finished runs
    /// are kept). A shard writes no report: `squall report DIR` builds it
    /// from whatever has finished.
    #[arg(long, value_name = "I/N", conflicts_with = "force")]
    pub shard: Option<crate::shard::Shard>,
    #[command(flatten)]
    pub slurm: SlurmArgs,
}

/// More replications than this need `--allow-many-runs`.
pub const MANY_RUNS: u64 = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EventLog {
    All,
    Drops,
}

#[derive(Args)]
pub struct SlurmArgs {
    /// Instead of running, write a Slurm job array (one task per shard,
    /// `--shard $SLURM_ARRAY_TASK_ID/N`) and a report job that runs
    /// `squall report` after every task has ended, into --out's slurm/.
    #[arg(long, conflicts_with_all = ["shard", "max_runs"])]
    pub slurm: bool,
    /// An sbatch option for both jobs, written as an `#SBATCH` line
    /// (repeat it: --slurm-arg=--partition=short --slurm-arg=--time=1:00:00).
    #[arg(long = "slurm-arg", value_name = "ARG", requires = "slurm", allow_hyphen_values = true)]
    pub slurm_args: Vec<String>,
    /// Tasks in the job array, each one shard (default: one per run, at
    /// most 100).
    #[arg(long, requires = "slurm", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub array_size: Option<usize>,
    /// Submit the two jobs with sbatch and print their ids (without it,
    /// the command to submit them is printed).
    #[arg(long, requires = "slurm")]
    pub submit: bool,
}
