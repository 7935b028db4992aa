//! `squall trace`: make and read link traces (issue 30). `convert` between
//! Mahimahi's delivery opportunities and squall's rate series, `generate`
//! synthetic ones, `record` one from a run or a capture
//! (`trace_record.rs`), `stats` prints a trace's capacity and plots it,
//! `maketable` builds a netem distribution table from samples.
//!
//! The two formats, and how one becomes the other:
//! - Mahimahi (`mm-link`, `src/frontend/link_queue.cc`): one line per
//!   1 504-byte delivery opportunity, the ms from the trace's start; the
//!   file loops with its last value as the period.
//! - squall's rate series (`series.rate = { file = ... }`): a header with
//!   units, then `time,rate` rows, each rate held until the next row.
//!
//! A Mahimahi file becomes a rate per interval: n opportunities in an
//! interval of I ms are n · 1 504 · 8 bit / I. A rate series becomes
//! opportunities as Saturator would have recorded them: the bits the rate
//! carries accumulate ms by ms and every 1 504 · 8 = 12 032 bits make one
//! opportunity at the end of that ms (netem-trace's `Mahimahi::mahimahi`
//! does the same in 1 ms bins). An opportunity at ms t belongs to the
//! interval holding (t − 1, t], so the round trip gives back the same
//! opportunities per interval (tested).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use squall_link::series::SeriesKey;
use squall_link::time::Duration;
use squall_link::units::Rate;
use squall_link::{Distribution, Sampler};
use squall_scenario::mahimahi::{MahimahiTrace, OPPORTUNITY_BYTES};
use squall_scenario::series_file::SeriesFile;

use crate::output::outln;

/// Bits in one opportunity.
const OPPORTUNITY_BITS: u128 = OPPORTUNITY_BYTES as u128 * 8;
const NANOS_PER_MS: u64 = 1_000_000;

#[derive(Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Convert a Mahimahi trace into a rate series, or a rate series into
    /// a Mahimahi trace (the input's format is read from its content).
    Convert {
        /// The trace to read.
        input: PathBuf,
        /// The file to write (an existing file is refused without --force).
        #[arg(long)]
        out: PathBuf,
        /// The rate series' interval (Mahimahi -> series), whole ms.
        #[arg(long, default_value = "100 ms")]
        interval: Duration,
        #[arg(long)]
        force: bool,
    },
    /// Generate a synthetic trace: a rate per interval (constant, stepped,
    /// sawtooth, gaussian, markov), per-packet loss decisions (gilbert:
    /// `error = { sequence = { file } }`) or a state series (states:
    /// `state_series = { file }`).
    Generate {
        #[arg(value_enum)]
        kind: Kind,
        /// The trace's length.
        #[arg(long, default_value = "10 s")]
        duration: Duration,
        /// The time each generated rate holds, whole ms.
        #[arg(long, default_value = "100 ms")]
        interval: Duration,
        /// constant: the rate; gaussian: the mean.
        #[arg(long, default_value = "10 Mbit/s")]
        rate: Rate,
        /// stepped: the rates in turn, one per --interval, repeated
        /// (`--rates "10 Mbit/s,1 Mbit/s"`); markov: the two rates.
        #[arg(long, value_delimiter = ',')]
        rates: Vec<Rate>,
        /// sawtooth: the lowest rate; it rises linearly to --rate over
        /// --period, then falls back.
        #[arg(long, default_value = "1 Mbit/s")]
        low: Rate,
        /// sawtooth: the period of one tooth.
        #[arg(long, default_value = "2 s")]
        period: Duration,
        /// gaussian: the standard deviation (draws below 0 are 0).
        #[arg(long, default_value = "2 Mbit/s")]
        sd: Rate,
        /// markov: the probability of switching to the other rate at each
        /// interval; states: of moving to the next state.
        #[arg(long, default_value_t = 0.1)]
        switch: f64,
        /// gilbert: the probability that a packet moves from the good
        /// state to the bad (lossy) one.
        #[arg(long, default_value_t = 0.01)]
        p: f64,
        /// gilbert: the probability that a packet moves from the bad state
        /// back to the good one (the mean loss burst is 1/r packets).
        #[arg(long, default_value_t = 0.3)]
        r: f64,
        /// gilbert: the number of decisions (the scenario loops them).
        #[arg(long, default_value_t = 10_000)]
        count: u64,
        /// states: the `[[states]]` names, in turn (`--states "good,tunnel"`).
        #[arg(long, value_delimiter = ',')]
        states: Vec<String>,
        /// gaussian, markov, gilbert and states: the random stream's seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The format of a rate trace (gilbert writes loss decisions,
        /// states a state series) [default: series].
        #[arg(long, value_enum)]
        format: Option<Format>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        force: bool,
    },
    /// Build a netem delay distribution table (iproute2's .dist format)
    /// from samples, as iproute2's maketable does: 4096 entries of the
    /// samples' inverse CDF, normalised by their mean and deviation. Use it
    /// with `--link "delay MEAN DEVIATION distribution FILE"` (the mean and
    /// deviation it prints, in the samples' unit) or a jitter
    /// `{ kind = "netem_table", file = FILE, mu = ..., sigma = ... }`.
    Maketable {
        /// The samples: numbers separated by blanks or lines (`#` starts a
        /// comment), in any one unit.
        samples: PathBuf,
        /// The table to write; without it, standard output.
        #[arg(short, long)]
        out: Option<PathBuf>,
        #[arg(long)]
        force: bool,
    },
    /// Record a trace from what a link delivered: a stage's departures in
    /// a squall run (its directory or an events.csv, with --stage), or
    /// the packets in a capture of a saturated receiver (pcap, time 0 at
    /// its first record), as Saturator recorded them for Mahimahi: one
    /// 1 504-byte opportunity per 1 504 bytes delivered (IP length + 4),
    /// at the millisecond of the departure, rounded up.
    Record {
        /// A run directory, one of its rep-N/events.csv, or a pcap file.
        from: PathBuf,
        /// Run: the stage whose departures to record.
        #[arg(long)]
        stage: Option<String>,
        /// Run: only the stage's departures in this direction.
        #[arg(long, value_parser = ["downlink", "uplink"])]
        direction: Option<String>,
        /// Run directory: the replication whose events.csv to read.
        #[arg(long, default_value_t = 0)]
        replication: u32,
        /// Capture: only the packets to this IPv4 address (the receiver).
        #[arg(long)]
        to: Option<std::net::Ipv4Addr>,
        /// The format to write: mahimahi or series (from the departures),
        /// or, from a run only, per-packet sequences replayed with `order =
        /// "sequence"`: delays (each delivered packet's time in the stage,
        /// a jitter), gaps and sizes (between and of the packets entering
        /// it, a background pattern's `gap` and `size`).
        #[arg(long, value_enum, default_value_t = RecordFormat::Mahimahi)]
        format: RecordFormat,
        /// --format series: the rate series' interval, whole ms.
        #[arg(long, default_value = "100 ms")]
        interval: Duration,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        force: bool,
    },
    /// Print a trace's duration and its capacity over 100 ms windows: mean,
    /// 5th, 50th and 95th percentiles.
    Stats {
        file: PathBuf,
        /// Also plot the capacity per window into this SVG file.
        #[arg(long)]
        plot: Option<PathBuf>,
    },
}

/// What `squall trace record` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RecordFormat {
    Mahimahi,
    Series,
    Delays,
    Gaps,
    Sizes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    Constant,
    Stepped,
    Sawtooth,
    Gaussian,
    Markov,
    /// Per-packet loss decisions from Gilbert's two-state model (--p, --r,
    /// --count, --seed).
    Gilbert,
    /// A state series over named `[[states]]` (--states, --switch,
    /// --interval, --duration, --seed).
    States,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// squall's rate series (CSV).
    Series,
    /// Mahimahi's delivery opportunities.
    Mahimahi,
}

/// A rate trace as steps: `(start ns, bit/s)` and the end, ns.
#[derive(Clone, Debug, PartialEq)]
struct Steps {
    points: Vec<(u64, u64)>,
    end_ns: u64,
}

pub fn run(args: TraceArgs) -> Result<ExitCode> {
    match args.command {
        TraceCommand::Convert { input, out, interval, force } => {
            let ms = whole_ms(interval, "--interval")?;
            let text = match read(&input)? {
                Read::Mahimahi(t) => series_csv(&mahimahi_to_steps(t.opportunities(), ms), &input),
                Read::Series(s) => mahimahi_text(&steps_to_mahimahi(&s)),
            };
            write(&out, &text, force)?;
            outln!("wrote {}", out.display());
        }
        TraceCommand::Generate {
            kind,
            duration,
            interval,
            rate,
            rates,
            low,
            period,
            sd,
            switch,
            p,
            r,
            count,
            states,
            seed,
            format,
            out,
            force,
        } => {
            if matches!(kind, Kind::Gilbert | Kind::States)
                && let Some(f) = format
            {
                bail!(
                    "--format {f:?} is for rate traces; {} writes {}",
                    format!("{kind:?}").to_lowercase(),
                    if kind == Kind::Gilbert { "loss decisions" } else { "a state series" }
                );
            }
            if kind == Kind::Gilbert {
                write(&out, &crate::trace_generate::gilbert_decisions(p, r, count, seed)?, force)?;
                outln!("wrote {}", out.display());
                return Ok(ExitCode::SUCCESS);
            }
            let ms = whole_ms(interval, "--interval")?;
            let n = duration.as_nanos() / (ms * NANOS_PER_MS);
            if n == 0 {
                bail!(
                    "--duration {duration} is shorter than one --interval ({interval}); expected at least one interval"
                );
            }
            if kind == Kind::States {
                write(&out, &crate::trace_generate::state_series(&states, switch, ms, n, seed)?, force)?;
                outln!("wrote {}", out.display());
                return Ok(ExitCode::SUCCESS);
            }
            let values: Vec<u64> = match kind {
                Kind::Gilbert | Kind::States => unreachable!("written above"),
                Kind::Constant => vec![rate.bits_per_sec(); n as usize],
                Kind::Stepped => {
                    if rates.is_empty() {
                        bail!("stepped needs --rates, e.g. --rates \"10 Mbit/s,1 Mbit/s,10 Mbit/s\"");
                    }
                    (0..n as usize).map(|i| rates[i % rates.len()].bits_per_sec()).collect()
                }
                Kind::Sawtooth => {
                    let per_tooth = (period.as_nanos() / (ms * NANOS_PER_MS)).max(1);
                    let (lo, hi) = (low.bits_per_sec() as f64, rate.bits_per_sec() as f64);
                    (0..n)
                        .map(|i| (lo + (hi - lo) * (i % per_tooth) as f64 / per_tooth as f64).round() as u64)
                        .collect()
                }
                Kind::Gaussian => {
                    let normal =
                        Distribution::Normal { mean: rate.bits_per_sec() as f64, std_dev: sd.bits_per_sec() as f64 };
                    let mut s = Sampler::new(normal, squall_link::rng::stream(seed, "trace/gaussian"));
                    (0..n).map(|_| s.sample().max(0.0).round() as u64).collect()
                }
                Kind::Markov => {
                    let &[a, b] = rates.as_slice() else {
                        bail!("markov needs two --rates, e.g. --rates \"10 Mbit/s,1 Mbit/s\"");
                    };
                    if !(0.0..=1.0).contains(&switch) {
                        bail!("--switch {switch}: expected a probability from 0 to 1");
                    }
                    let markov = Distribution::TwoStateMarkov {
                        a: a.bits_per_sec() as f64,
                        b: b.bits_per_sec() as f64,
                        p_ab: switch,
                        p_ba: switch,
                    };
                    let mut s = Sampler::new(markov, squall_link::rng::stream(seed, "trace/markov"));
                    (0..n).map(|_| s.sample().round() as u64).collect()
                }
            };
            let step = ms * NANOS_PER_MS;
            let steps = Steps {
                points: values.iter().enumerate().map(|(i, &v)| (i as u64 * step, v)).collect(),
                end_ns: n * step,
            };
            let text = match format.unwrap_or(Format::Series) {
                Format::Series => series_csv(&steps, Path::new(&format!("generate {kind:?}"))),
                Format::Mahimahi => mahimahi_text(&steps_to_mahimahi(&steps)),
            };
            write(&out, &text, force)?;
            outln!("wrote {}", out.display());
        }
        TraceCommand::Record { from, stage, direction, replication, to, format, interval, out, force } => {
            let ms = whole_ms(interval, "--interval")?;
            let direction = direction
                .map(|d| if d == "uplink" { squall_link::Direction::Uplink } else { squall_link::Direction::Downlink });
            let source =
                crate::trace_record::Source { from: &from, stage: stage.as_deref(), direction, replication, to };
            if let RecordFormat::Delays | RecordFormat::Gaps | RecordFormat::Sizes = format {
                if to.is_some() {
                    bail!("--to picks a capture's packets; --format {format:?} reads a run (--stage)");
                }
                let (entries, what) = crate::trace_record::entries(&source)?;
                let name = format!("{format:?}").to_lowercase();
                write(&out, &crate::trace_record::sequence_text(&entries, &what, &name), force)?;
                let delivered = entries.iter().filter(|e| e.stayed.is_some()).count();
                outln!(
                    "wrote {}: {name} of {} packets that entered {what} ({delivered} delivered)",
                    out.display(),
                    entries.len()
                );
                return Ok(ExitCode::SUCCESS);
            }
            let (departures, what) = crate::trace_record::departures(&source)?;
            let opportunities = crate::trace_record::opportunities(&departures, &what)?;
            let text = match format {
                RecordFormat::Series => series_csv(&mahimahi_to_steps(&opportunities, ms), Path::new(&what)),
                _ => mahimahi_text(&opportunities),
            };
            write(&out, &text, force)?;
            let bytes: u64 = departures.iter().map(|d| u64::from(d.1)).sum();
            outln!(
                "wrote {}: {} departures ({bytes} B of IP) from {what}, {} opportunities over {} ms",
                out.display(),
                departures.len(),
                opportunities.len(),
                opportunities.last().expect("checked above")
            );
        }
        TraceCommand::Maketable { samples, out, force } => {
            let values = read_samples(&samples)?;
            let table = squall_link::dist::netem_table::maketable(&values)
                .with_context(|| format!("{}: cannot build a table", samples.display()))?;
            let text = squall_link::dist::netem_table::format_dist(&table);
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            match out {
                Some(out) => {
                    write(&out, &text, force)?;
                    outln!(
                        "wrote {} from {} samples: mean {mean:.6}, deviation {sd:.6} (in the samples' unit): \
                         `delay MEAN DEVIATION distribution {}`",
                        out.display(),
                        values.len(),
                        out.display()
                    );
                }
                None => {
                    print!("{text}");
                    eprintln!("{} samples: mean {mean:.6}, deviation {sd:.6} (in the samples' unit)", values.len());
                }
            }
        }
        TraceCommand::Stats { file, plot } => {
            let steps = match read(&file)? {
                Read::Mahimahi(t) => mahimahi_to_steps(t.opportunities(), 100),
                Read::Series(s) => s,
            };
            let windows = windows_bps(&steps, 100);
            let mean = windows.iter().sum::<f64>() / windows.len() as f64;
            let pct = |q| squall_analysis::stats::percentile(&windows, q) / 1e6;
            let (p5, p50, p95) = (pct(0.05), pct(0.5), pct(0.95));
            outln!("{}: {:.3} s", file.display(), steps.end_ns as f64 / 1e9);
            outln!(
                "capacity over 100 ms windows (Mbit/s): mean {:.3}, p5 {:.3}, p50 {:.3}, p95 {:.3}",
                mean / 1e6,
                p5,
                p50,
                p95
            );
            if let Some(svg) = plot {
                let points = windows.iter().enumerate().map(|(i, v)| (i as f64 * 0.1, v / 1e6)).collect();
                let series = squall_analysis::plot::Series {
                    name: "capacity".into(),
                    mark: squall_analysis::plot::Mark::Line,
                    points,
                };
                let title = format!("{}: capacity per 100 ms", file.display());
                let text = squall_analysis::plot::series_plot(&title, "time (s)", "Mbit/s", &[series], &[]);
                std::fs::write(&svg, text).with_context(|| format!("cannot write {}", svg.display()))?;
                outln!("wrote {}", svg.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The samples `maketable` reads: numbers separated by blanks or lines,
/// `#` to the line's end a comment. Errors name the file and line.
fn read_samples(path: &Path) -> Result<Vec<f64>> {
    Ok(squall_scenario::samples::read(path)?)
}

fn whole_ms(d: Duration, flag: &str) -> Result<u64> {
    let ns = d.as_nanos();
    if ns == 0 || !ns.is_multiple_of(NANOS_PER_MS) {
        bail!("{flag} {d}: expected a whole number of milliseconds above 0, e.g. \"100 ms\"");
    }
    Ok(ns / NANOS_PER_MS)
}

enum Read {
    Mahimahi(MahimahiTrace),
    Series(Steps),
}

/// Reads a Mahimahi trace or a rate series: a file whose first line that
/// is not a comment holds a `(` (a header's unit) is a series.
fn read(path: &Path) -> Result<Read> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut first = String::new();
    for line in std::io::BufReader::new(f).take(64 * 1024).lines() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            first = line;
            break;
        }
    }
    if first.contains('(') {
        let s = SeriesFile::read(path, SeriesKey::Rate)?;
        let end_ns = *s.times_ns.last().expect("a series has a row");
        if end_ns == 0 {
            bail!("{}: the series has one row, at time 0; expected a last row giving its end", path.display());
        }
        let points = s.times_ns.iter().zip(&s.values).map(|(&t, &v)| (t, v.round() as u64)).collect();
        Ok(Read::Series(Steps { points, end_ns }))
    } else {
        Ok(Read::Mahimahi(MahimahiTrace::read(path)?))
    }
}

/// A Mahimahi trace's opportunities per interval of `ms`, as rates: an
/// opportunity at ms t counts in the interval holding (t − 1, t] (one at 0
/// in the first).
fn mahimahi_to_steps(opportunities: &[u64], ms: u64) -> Steps {
    let period = *opportunities.last().expect("a trace has an opportunity");
    let n = period.div_ceil(ms);
    let mut counts = vec![0u128; n as usize];
    for &t in opportunities {
        let i = if t == 0 { 0 } else { (t - 1) / ms };
        counts[i as usize] += 1;
    }
    let points = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let len_ms = (period - i as u64 * ms).min(ms) as u128;
            (i as u64 * ms * NANOS_PER_MS, (c * OPPORTUNITY_BITS * 1000 / len_ms) as u64)
        })
        .collect();
    Steps { points, end_ns: period * NANOS_PER_MS }
}

/// The opportunities a rate trace gives, as Saturator would have recorded
/// them: bits accumulate ms by ms, one opportunity per 12 032 bits at the
/// end of the ms that completes it. Exact in integer bit·ns.
fn steps_to_mahimahi(steps: &Steps) -> Vec<u64> {
    let mut out = Vec::new();
    let mut credit: u128 = 0; // bit·ns
    let full = OPPORTUNITY_BITS * 1_000_000_000;
    let end_ms = steps.end_ns.div_ceil(NANOS_PER_MS);
    let mut i = 0;
    for m in 1..=end_ms {
        let (from, to) = ((m - 1) * NANOS_PER_MS, (m * NANOS_PER_MS).min(steps.end_ns));
        // The rate's integral over [from, to), step by step.
        let mut t = from;
        while t < to {
            while i + 1 < steps.points.len() && steps.points[i + 1].0 <= t {
                i += 1;
            }
            let next = steps.points.get(i + 1).map_or(to, |p| p.0.min(to));
            credit += steps.points[i].1 as u128 * (next - t) as u128;
            t = next;
        }
        while credit >= full {
            credit -= full;
            out.push(m);
        }
    }
    out
}

fn mahimahi_text(opportunities: &[u64]) -> String {
    let mut s = String::with_capacity(opportunities.len() * 6);
    for o in opportunities {
        s.push_str(&o.to_string());
        s.push('\n');
    }
    s
}

/// A rate series file: one row per step and a last row at the end (with
/// the last rate).
fn series_csv(steps: &Steps, from: &Path) -> String {
    let mut times_ns: Vec<u64> = steps.points.iter().map(|p| p.0).collect();
    let mut values: Vec<f64> = steps.points.iter().map(|p| p.1 as f64).collect();
    times_ns.push(steps.end_ns);
    values.push(*values.last().expect("a step"));
    let comment = format!("made by squall trace from {}", from.display());
    SeriesFile { times_ns, values }.to_csv(&comment, "rate", "bit/s", 1.0)
}

/// The mean rate over each window of `ms` (the last may be shorter).
fn windows_bps(steps: &Steps, ms: u64) -> Vec<f64> {
    let w = ms * NANOS_PER_MS;
    let n = steps.end_ns.div_ceil(w);
    let mut out = Vec::with_capacity(n as usize);
    let mut i = 0;
    for k in 0..n {
        let (from, to) = (k * w, ((k + 1) * w).min(steps.end_ns));
        let mut bits_ns: u128 = 0;
        let mut t = from;
        while t < to {
            while i + 1 < steps.points.len() && steps.points[i + 1].0 <= t {
                i += 1;
            }
            let next = steps.points.get(i + 1).map_or(to, |p| p.0.min(to));
            bits_ns += steps.points[i].1 as u128 * (next - t) as u128;
            t = next;
        }
        out.push(bits_ns as f64 / (to - from) as f64);
    }
    out
}

fn write(path: &Path, text: &str, force: bool) -> Result<()> {
    if path.exists() && !force {
        bail!("{} exists; give --force to replace it", path.display());
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mahimahi_to_series_and_back_keeps_the_opportunities_per_interval() {
        // 3 opportunities every 2 ms for 100 ms, then one per ms for 100 ms.
        let mut trace: Vec<u64> = (1..=50).flat_map(|k| [2 * k - 1, 2 * k - 1, 2 * k]).collect();
        trace.extend(101..=200);
        let steps = mahimahi_to_steps(&trace, 100);
        // By hand: 150 · 12 032 bit / 0.1 s = 18.048 Mbit/s; then 12.032.
        assert_eq!(steps.points, [(0, 18_048_000), (100 * NANOS_PER_MS, 12_032_000)]);
        let back = steps_to_mahimahi(&steps);
        let per_interval =
            |o: &[u64]| [o.iter().filter(|&&t| t <= 100).count(), o.iter().filter(|&&t| t > 100).count()];
        assert_eq!(per_interval(&back), [150, 100]);
        assert_eq!(back.last(), Some(&200));
    }

    #[test]
    fn a_rate_becomes_one_opportunity_per_12032_bits() {
        // 24.064 Mbit/s for 5 ms: two opportunities per ms (netem-trace's
        // example: 1,1,2,2,...,5,5).
        let steps = Steps { points: vec![(0, 24_064_000)], end_ns: 5 * NANOS_PER_MS };
        assert_eq!(steps_to_mahimahi(&steps), [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
        // 6.016 Mbit/s: one every 2 ms.
        let steps = Steps { points: vec![(0, 6_016_000)], end_ns: 6 * NANOS_PER_MS };
        assert_eq!(steps_to_mahimahi(&steps), [2, 4, 6]);
    }

    #[test]
    fn windows_average_the_steps() {
        // 10 Mbit/s for 50 ms then 0: a 100 ms window holds 5 Mbit/s.
        let steps = Steps { points: vec![(0, 10_000_000), (50 * NANOS_PER_MS, 0)], end_ns: 200 * NANOS_PER_MS };
        assert_eq!(windows_bps(&steps, 100), [5e6, 0.0]);
    }
}
