//! What every command that writes files or prints shares: output
//! directories that are never overwritten by accident, files written
//! atomically, and printing that ends quietly when the reader has gone.

use std::io::{self, Write};

/// How a command prints its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// Prints a line to stdout; a closed stdout (`squall sim … | head -1`)
/// ends the process quietly through [`stdout_closed`] instead of
/// panicking as `println!` does.
macro_rules! outln {
    () => { $crate::output::print_to_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::print_to_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// [`outln!`] without the newline.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::print_to_stdout(format_args!($($arg)*)) };
}

pub(crate) use {out, outln};

/// Writes `args` to stdout. Like ripgrep (crates/core/main.rs: a broken
/// pipe error is "a graceful exit"), a reader that closed the pipe ends
/// the program with status 0 and no message: the output it wanted has
/// been written and the files of the run were written before printing.
/// SIGPIPE is left ignored (Rust's default) rather than reset to its
/// default action, because the emulator writes to sockets and pipes of
/// its own (the control socket, workloads' pipes) where a peer that went
/// away must be an error to handle, not the end of the emulation.
/// Any other write error is reported on stderr with status 2.
pub fn print_to_stdout(args: std::fmt::Arguments) {
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        stdout_closed(&e);
    }
}

/// Ends the process after a failed write to stdout: quietly with status 0
/// for a broken pipe, else with the error and status 2.
pub fn stdout_closed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to stdout: {e}");
    std::process::exit(2);
}

pub use squall_outputs::files::{prepare_out_dir, write_atomic};

/// One cell of a [`Rows`] table: a name or a plain number (NaN: none).
#[derive(Clone, Debug)]
pub enum Cell {
    Text(String),
    Num(f64),
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_string())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Self {
        Cell::Num(x)
    }
}

/// A table as `--format json|csv` prints it: column names with the unit
/// in the name (`throughput_bit_per_s`), plain numbers in SI base units,
/// as `squall sim --format` does.
#[derive(Debug, Default)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Rows {
    pub fn new(columns: &[&str]) -> Self {
        Rows { columns: columns.iter().map(|c| c.to_string()).collect(), rows: Vec::new() }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    /// One JSON object per row; a number that does not exist (NaN) is null.
    pub fn json(&self) -> serde_json::Value {
        let rows = self.rows.iter().map(|row| {
            let o: serde_json::Map<String, serde_json::Value> = self
                .columns
                .iter()
                .zip(row)
                .map(|(c, v)| {
                    let v = match v {
                        Cell::Text(t) => t.clone().into(),
                        Cell::Num(x) if x.is_finite() => serde_json::json!(x),
                        Cell::Num(_) => serde_json::Value::Null,
                    };
                    (c.clone(), v)
                })
                .collect();
            serde_json::Value::Object(o)
        });
        serde_json::Value::Array(rows.collect())
    }

    /// A header and one line per row (RFC 4180: a field with a comma, a
    /// quote or a line break is quoted); a number that does not exist is
    /// an empty field.
    pub fn csv(&self) -> String {
        fn field(s: &str) -> String {
            if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
        }
        let mut text = self.columns.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
        text.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = row
                .iter()
                .map(|c| match c {
                    Cell::Text(t) => field(t),
                    Cell::Num(x) if x.is_finite() => x.to_string(),
                    Cell::Num(_) => String::new(),
                })
                .collect();
            text.push_str(&cells.join(","));
            text.push('\n');
        }
        text
    }

    /// Prints the rows as json or csv on stdout (quietly ending on a
    /// closed pipe); `table` is for the caller's own layout.
    pub fn print(&self, format: Format) {
        match format {
            Format::Json => {
                outln!("{}", serde_json::to_string_pretty(&self.json()).unwrap_or_default())
            }
            Format::Csv => out!("{}", self.csv()),
            Format::Table => {}
        }
    }
}

/// A flow metric's name (squall-analysis `METRICS`) with its unit, as
/// `--format json|csv` names columns: `throughput_bps` is
/// `throughput_bit_per_s`, `delay_mean` `delay_mean_s`.
pub fn metric_with_unit(metric: &str) -> String {
    match metric {
        "throughput_bps" => "throughput_bit_per_s".into(),
        "goodput_bps" => "goodput_bit_per_s".into(),
        "retransmitted" | "dropped" => format!("{metric}_packets"),
        "retransmitted_pct" => "retransmitted_percent".into(),
        "elapsed" | "delay_mean" | "rtt_mean" | "interarrival_mean" | "jitter_rfc3550" | "delay_p50" | "delay_p99"
        | "interarrival_sd" => format!("{metric}_s"),
        other => other.into(),
    }
}
