//! A line of Mahimahi shells as a `--link` one-liner: what a Mahimahi user
//! types, `mm-delay 20`, `mm-loss uplink 0.1`, `mm-onoff downlink 5 1`,
//! `mm-link UP-TRACE DOWN-TRACE [--once] [--uplink-queue=...]`, and these
//! nested as Mahimahi's shells nest (`mm-delay 20 mm-loss uplink 0.1
//! mm-link up.trace down.trace`), each shell's meaning read from its
//! source (github.com/ravinet/mahimahi, `src/frontend/`):
//!
//! - `mm-delay MS` (`delayshell.cc`, `delay_queue.cc`): each packet, both
//!   ways, leaves MS whole milliseconds after it came; a stage with
//!   `delay = MS ms` in each direction, `mm-delay-down` and `mm-delay-up`.
//! - `mm-loss uplink|downlink RATE` (`lossshell.cc`, `loss_queue.cc`
//!   `IIDLoss`): each packet of that direction is dropped with probability
//!   RATE (0 to 1, `std::bernoulli_distribution`), the other direction
//!   loses none; a stage `mm-loss-down` (or `-up`) with `error = { packet
//!   = RATE }` in that direction.
//! - `mm-onoff uplink|downlink MEAN-ON MEAN-OFF` (`onoffshell.cc`,
//!   `StochasticSwitchingLink`): a stage `mm-onoff-down` (or `-up`) and
//!   the blackout of [`crate::mahimahi_shells::mm_onoff`] on that stage
//!   alone, so a packet past it when the link goes off is not dropped, as
//!   in Mahimahi, where the shells inside and outside hold their own
//!   packets.
//! - `mm-link UP DOWN` (`linkshell.cc`): a trace stage each way,
//!   `mm-link-up` and `mm-link-down`,
//!   replaying the file ([`crate::mahimahi::MahimahiTrace`]), with
//!   `--once`, `--uplink-queue=TYPE`, `--uplink-queue-args=ARGS` and the
//!   downlink's ([`crate::mahimahi_shells::mm_link_queue`]); the options
//!   before or after the two files, as getopt takes them. The logs and
//!   meters (`--uplink-log`, `--meter-uplink`, ...) are refused: every
//!   squall run writes events.csv and pcaps, and `squall report` plots
//!   them.
//!
//! Nesting: each shell runs the next inside it, and the innermost runs the
//! application. A packet to the application (squall's downlink, fixed →
//! mobile) crosses the outermost shell first; one from it (the uplink)
//! the innermost first. So the downlink's stages are the shells in the
//! line's order and the uplink's the reverse. Stage names are unique in a
//! scenario: a shell given twice names its second stages `mm-delay-2-down`
//! and `mm-delay-2-up`, and so on. A direction no shell acts on gets one
//! stage `mm-none-down` (or `-up`) that does nothing (a path has a stage).

use std::ops::Range;
use std::path::Path;

use squall_link::{DeliveryTrace, Duration, ErrorModel, Probability, StageConfig};

use crate::error::{ErrorKind, ScenarioError};
use crate::mahimahi::MahimahiTrace;
use crate::mahimahi_shells::{mm_link_queue, mm_onoff};
use crate::schema::{BlackoutDirection, BlackoutSpec};

/// The shells a line can name.
pub const SHELLS: [&str; 4] = ["mm-delay", "mm-loss", "mm-onoff", "mm-link"];

/// mm-link's options that take a value (`--uplink-queue droptail` or
/// `--uplink-queue=droptail`).
const QUEUE_OPTIONS: [&str; 6] =
    ["uplink-queue", "uplink-queue-args", "downlink-queue", "downlink-queue-args", "uplink-log", "downlink-log"];

/// The largest delay taken, one day (as a delay series' largest).
const MAX_DELAY_MS: u64 = 86_400_000;

/// Whether a `--link` line is a line of Mahimahi shells (its first word
/// is one of [`SHELLS`]) rather than netem's options.
pub fn is_mm_line(spec: &str) -> bool {
    spec.split_whitespace().next().is_some_and(|w| SHELLS.contains(&w))
}

/// What a line of shells builds: the two directions' stages and the
/// blackouts of its `mm-onoff` shells.
#[derive(Debug, Clone, PartialEq)]
pub struct MmLine {
    /// Fixed → mobile: the shells in the line's order.
    pub downlink: Vec<StageConfig>,
    /// Mobile → fixed: the shells in reverse order.
    pub uplink: Vec<StageConfig>,
    pub blackouts: Vec<BlackoutSpec>,
}

/// One word of the line (quotes removed) and where it is.
struct Word {
    text: String,
    span: Range<usize>,
}

/// Splits a line into words as a shell would: blanks separate, `"..."` and
/// `'...'` quote (`--uplink-queue-args="packets=100, target=5"` is one
/// word), a lone `\` (a line continuation) is a blank.
fn words(spec: &str) -> Result<Vec<Word>, Range<usize>> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut quote: Option<(char, usize)> = None;
    for (i, c) in spec.char_indices() {
        match (quote, c) {
            (Some((q, _)), c) if c == q => quote = None,
            (Some(_), c) => current.get_or_insert((i, String::new())).1.push(c),
            (None, '"' | '\'') => {
                quote = Some((c, i));
                current.get_or_insert((i, String::new()));
            }
            (None, c) if c.is_whitespace() => {
                if let Some((start, text)) = current.take()
                    && text != "\\"
                {
                    out.push(Word { text, span: start..i });
                }
            }
            (None, c) => current.get_or_insert((i, String::new())).1.push(c),
        }
    }
    if let Some((_, at)) = quote {
        return Err(at..spec.len());
    }
    if let Some((start, text)) = current
        && text != "\\"
    {
        out.push(Word { text, span: start..spec.len() });
    }
    Ok(out)
}

struct Line<'a> {
    spec: &'a str,
    source: &'a str,
    words: Vec<Word>,
    at: usize,
}

impl Line<'_> {
    fn error(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> ScenarioError {
        let message = message.into();
        ScenarioError::new(ErrorKind::Netem, self.source, Some(self.spec), Some(span))
            .key(key)
            .label(message.split(';').next().unwrap_or("").to_string())
            .message(message)
    }

    /// The words of one shell: its fixed number of arguments (mm-delay 1,
    /// mm-loss 2, mm-onoff 3), or mm-link's options and two files (an
    /// option's value may be the next word); none past the next shell's
    /// name. What follows is the next shell.
    fn shell_args(&mut self, shell: &str) -> Vec<Word> {
        let fixed = match shell {
            "mm-delay" => Some(1),
            "mm-loss" => Some(2),
            "mm-onoff" => Some(3),
            _ => None,
        };
        let (mut args, mut files, mut value_next) = (Vec::new(), 0, false);
        while let Some(w) = self.words.get(self.at) {
            let text = w.text.as_str();
            let takes = match fixed {
                _ if SHELLS.contains(&text) => false,
                Some(n) => args.len() < n,
                None if value_next => {
                    value_next = false;
                    true
                }
                None if text.starts_with("--") => {
                    value_next = !text.contains('=') && QUEUE_OPTIONS.contains(&&text[2..]);
                    true
                }
                None => {
                    files += 1;
                    files <= 2
                }
            };
            if !takes {
                break;
            }
            args.push(Word { text: w.text.clone(), span: w.span.clone() });
            self.at += 1;
        }
        args
    }
}

/// Reads a line of Mahimahi shells (see the module's doc); `source` names
/// it in errors (`--link`). Trace files are read relative to the working
/// directory, as mm-link reads them.
pub fn parse_mm_line(spec: &str, source: &str) -> Result<MmLine, ScenarioError> {
    let words = words(spec).map_err(|span| {
        ScenarioError::new(ErrorKind::Netem, source, Some(spec), Some(span.clone()))
            .key(&spec[span])
            .message("a quote is not closed; expected a closing quote, as a shell reads the line")
    })?;
    let mut line = Line { spec, source, words, at: 0 };
    let mut shells: Vec<Pair> = Vec::new();
    let mut blackouts: Vec<BlackoutSpec> = Vec::new();
    let mut used: Vec<String> = Vec::new();
    while let Some(shell) = line.words.get(line.at).map(|w| Word { text: w.text.clone(), span: w.span.clone() }) {
        line.at += 1;
        if !SHELLS.contains(&shell.text.as_str()) {
            let hint = if shell.text == "--" {
                "the command goes after squall's own `--`: squall emu --link \"mm-delay 20\" -- COMMAND".to_string()
            } else {
                format!(
                    "expected a Mahimahi shell, one of {}; a command goes after squall's `--`: squall emu --link \"mm-delay 20\" -- COMMAND",
                    SHELLS.join(", ")
                )
            };
            return Err(line.error(
                shell.span.clone(),
                &shell.text,
                format!("`{}` is not a Mahimahi shell; {hint}", shell.text),
            ));
        }
        let count = used.iter().filter(|u| **u == shell.text).count();
        used.push(shell.text.clone());
        let name = if count == 0 { shell.text.clone() } else { format!("{}-{}", shell.text, count + 1) };
        let args = line.shell_args(&shell.text);
        let (down, up) = match shell.text.as_str() {
            "mm-delay" => mm_delay(&line, &shell, &args, &name)?,
            "mm-loss" => mm_loss(&line, &shell, &args, &name)?,
            "mm-onoff" => {
                let text: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
                let mut b = mm_onoff("mm-onoff", &text.join(" ")).map_err(|e| {
                    let span = args.first().map_or(shell.span.clone(), |a| a.span.start..args[args.len() - 1].span.end);
                    line.error(span, "mm-onoff", e.message)
                })?;
                let downlink = b.direction == BlackoutDirection::Downlink;
                let stage = StageConfig::named(&format!("{name}-{}", if downlink { "down" } else { "up" }));
                b.stages = Some(vec![stage.name.clone()]);
                blackouts.push(b);
                if downlink { (Some(stage), None) } else { (None, Some(stage)) }
            }
            _ => mm_link(&line, &shell, &args, &name)?,
        };
        shells.push((down, up));
    }
    if shells.is_empty() {
        return Err(line.error(0..spec.len(), "", format!("no shell; expected one of {}", SHELLS.join(", "))));
    }
    let mut downlink: Vec<StageConfig> = shells.iter().filter_map(|(d, _)| d.clone()).collect();
    let mut uplink: Vec<StageConfig> = shells.into_iter().rev().filter_map(|(_, u)| u).collect();
    for (dir, suffix) in [(&mut downlink, "down"), (&mut uplink, "up")] {
        if dir.is_empty() {
            dir.push(StageConfig::named(&format!("mm-none-{suffix}")));
        }
    }
    Ok(MmLine { downlink, uplink, blackouts })
}

type Pair = (Option<StageConfig>, Option<StageConfig>);

/// `mm-delay DELAY-MS`: a whole number of ms, as `myatoi` reads it.
fn mm_delay(line: &Line, shell: &Word, args: &[Word], name: &str) -> Result<Pair, ScenarioError> {
    let usage =
        "expected `mm-delay DELAY-MS`, a whole number of milliseconds each way, e.g. \"mm-delay 20\" (delayshell.cc)";
    let [ms] = args else {
        let span = args.get(1).map_or(shell.span.clone(), |w| w.span.clone());
        return Err(line.error(span, "mm-delay", format!("{} argument(s); {usage}", args.len())));
    };
    let digits = ms.text.strip_prefix('+').unwrap_or(&ms.text);
    let value = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse::<u64>().ok())
        .flatten()
        .filter(|&v| v <= MAX_DELAY_MS)
        .ok_or_else(|| {
            let why = if ms.text.starts_with('-') {
                "a negative delay (mm-delay reads it as 2^64 ms less its value)".to_string()
            } else if digits.bytes().all(|b| b.is_ascii_digit()) && !digits.is_empty() {
                format!("above one day ({MAX_DELAY_MS} ms)")
            } else {
                "not a whole number of milliseconds (no unit: mm-delay's delay is in ms)".to_string()
            };
            line.error(ms.span.clone(), "mm-delay", format!("`{}` is {why}; {usage}", ms.text))
        })?;
    let stage =
        |dir: &str| StageConfig { delay: Duration::from_millis(value), ..StageConfig::named(&format!("{name}-{dir}")) };
    Ok((Some(stage("down")), Some(stage("up"))))
}

/// `mm-loss uplink|downlink RATE`, RATE from 0 to 1 (`myatof`).
fn mm_loss(line: &Line, shell: &Word, args: &[Word], name: &str) -> Result<Pair, ScenarioError> {
    let usage = "expected `mm-loss uplink|downlink RATE`, RATE the probability to drop each packet from 0 to 1, e.g. \"mm-loss uplink 0.1\" (lossshell.cc)";
    let [direction, rate] = args else {
        let span = args.get(2).map_or(shell.span.clone(), |w| w.span.clone());
        return Err(line.error(span, "mm-loss", format!("{} argument(s); {usage}", args.len())));
    };
    let downlink = match direction.text.as_str() {
        "uplink" => false,
        "downlink" => true,
        other => {
            return Err(line.error(
                direction.span.clone(),
                "mm-loss",
                format!("`{other}` is not a direction; {usage}"),
            ));
        }
    };
    let p = rate.text.parse::<f64>().ok().filter(|p| p.is_finite()).and_then(Probability::new).ok_or_else(|| {
        let why = if rate.text.ends_with('%') {
            "a percentage; mm-loss takes a probability (10% is 0.1)"
        } else {
            "not a probability from 0 to 1"
        };
        line.error(rate.span.clone(), "mm-loss", format!("`{}` is {why}; {usage}", rate.text))
    })?;
    let stage = StageConfig {
        error: ErrorModel::Packet(p),
        ..StageConfig::named(&format!("{name}-{}", if downlink { "down" } else { "up" }))
    };
    Ok(if downlink { (Some(stage), None) } else { (None, Some(stage)) })
}

/// An option's value and where it is in the line.
type Valued = (String, Range<usize>);

/// `mm-link [OPTIONS] UPLINK-TRACE DOWNLINK-TRACE [OPTIONS]`.
fn mm_link(line: &Line, shell: &Word, args: &[Word], name: &str) -> Result<Pair, ScenarioError> {
    let usage = "expected `mm-link [--once] [--uplink-queue=TYPE --uplink-queue-args=ARGS] [--downlink-queue=TYPE --downlink-queue-args=ARGS] UPLINK-TRACE DOWNLINK-TRACE` (linkshell.cc)";
    let mut files: Vec<&Word> = Vec::new();
    let mut once = false;
    // (type, args) per direction: up, down.
    let mut queues: [(Option<Valued>, Option<Valued>); 2] = Default::default();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let Some(option) = w.text.strip_prefix("--") else {
            files.push(w);
            continue;
        };
        let (option, inline) = match option.split_once('=') {
            Some((o, v)) => (o, Some(v.to_string())),
            None => (option, None),
        };
        let mut value = || -> Result<Valued, ScenarioError> {
            if let Some(v) = &inline {
                return Ok((v.clone(), w.span.clone()));
            }
            let v = args
                .get(i)
                .ok_or_else(|| line.error(w.span.clone(), "mm-link", format!("`--{option}` needs a value; {usage}")))?;
            i += 1;
            Ok((v.text.clone(), v.span.clone()))
        };
        let slot = match option {
            "once" => {
                if inline.is_some() {
                    return Err(line.error(w.span.clone(), "mm-link", "`--once` takes no value; write `--once`"));
                }
                once = true;
                continue;
            }
            "uplink-queue" => &mut queues[0].0,
            "uplink-queue-args" => &mut queues[0].1,
            "downlink-queue" => &mut queues[1].0,
            "downlink-queue-args" => &mut queues[1].1,
            "uplink-log" | "downlink-log" => {
                return Err(line.error(
                    w.span.clone(),
                    "mm-link",
                    format!(
                        "`--{option}` is not taken: every squall run writes each packet's events (events.csv) and pcaps in its output directory, and `squall trace record RUN --stage {name}-down` writes the departures as a trace"
                    ),
                ));
            }
            "meter-uplink" | "meter-downlink" | "meter-uplink-delay" | "meter-downlink-delay" | "meter-all" => {
                return Err(line.error(
                    w.span.clone(),
                    "mm-link",
                    format!("`--{option}` is not taken: `squall report RUN` plots throughput against the link's capacity and the delay"),
                ));
            }
            other => {
                return Err(line.error(
                    w.span.clone(),
                    "mm-link",
                    format!("`--{other}` is not an option of mm-link; {usage}"),
                ));
            }
        };
        *slot = Some(value()?);
    }
    let [up_file, down_file] = files[..] else {
        let span = files.get(2).map_or(shell.span.clone(), |w| w.span.clone());
        return Err(line.error(span, "mm-link", format!("{} trace file(s); {usage}", files.len())));
    };
    let mut stages = Vec::new();
    for ((file, (kind, queue_args)), dir) in
        [(up_file, &queues[0]), (down_file, &queues[1])].into_iter().zip(["uplink", "downlink"])
    {
        let trace = MahimahiTrace::read(Path::new(&file.text))
            .map_err(|e| line.error(file.span.clone(), "mm-link", format!("{dir} trace: {e}")))?;
        let mut stage = StageConfig::named(&format!("{name}-{}", if dir == "uplink" { "up" } else { "down" }));
        stage.trace = Some(DeliveryTrace {
            file: Some(file.text.clone()),
            opportunities_ms: trace.opportunities().to_vec(),
            once,
        });
        let option = format!("--{dir}-queue");
        match (kind, queue_args) {
            (Some((kind, span)), args) => {
                stage.queue = mm_link_queue(&option, kind, args.as_ref().map(|(a, _)| a.as_str())).map_err(|e| {
                    let span = if e.option.ends_with("-args") {
                        args.as_ref().map_or(span.clone(), |(_, s)| s.clone())
                    } else {
                        span.clone()
                    };
                    line.error(span, "mm-link", format!("{}: {}", e.option, e.message))
                })?;
            }
            (None, Some((_, span))) => {
                return Err(line.error(
                    span.clone(),
                    "mm-link",
                    format!("{option}-args gives the arguments of {option}: give {option}=TYPE too"),
                ));
            }
            (None, None) => {}
        }
        stages.push(stage);
    }
    let down = stages.pop();
    Ok((down, stages.pop()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use squall_link::{BlackoutMode, Distribution, DropPolicy};

    fn line(spec: &str) -> MmLine {
        parse_mm_line(spec, "--link").unwrap()
    }

    fn err(spec: &str) -> String {
        parse_mm_line(spec, "--link").unwrap_err().to_string()
    }

    fn names(stages: &[StageConfig]) -> Vec<&str> {
        stages.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn each_shell_alone() {
        let d = line("mm-delay 20");
        assert_eq!((names(&d.downlink), names(&d.uplink)), (vec!["mm-delay-down"], vec!["mm-delay-up"]));
        assert_eq!(d.downlink[0].delay, Duration::from_millis(20));
        assert_eq!(d.uplink[0].delay, Duration::from_millis(20));
        assert!(d.blackouts.is_empty());

        let l = line("mm-loss uplink 0.1");
        assert_eq!((names(&l.downlink), names(&l.uplink)), (vec!["mm-none-down"], vec!["mm-loss-up"]));
        assert_eq!(l.uplink[0].error, ErrorModel::Packet(Probability::new(0.1).unwrap()));
        assert_eq!(l.downlink[0], StageConfig::named("mm-none-down"));
        let l = line("mm-loss downlink 1");
        assert_eq!(l.downlink[0].error, ErrorModel::Packet(Probability::new(1.0).unwrap()));

        let o = line("mm-onoff downlink 5 1");
        assert_eq!((names(&o.downlink), names(&o.uplink)), (vec!["mm-onoff-down"], vec!["mm-none-up"]));
        let b = &o.blackouts[0];
        assert_eq!((b.direction, b.mode), (BlackoutDirection::Downlink, BlackoutMode::Drop));
        assert_eq!(b.at, Distribution::Exponential { mean: Duration::from_secs(5) });
        assert_eq!(b.duration, Distribution::Exponential { mean: Duration::from_secs(1) });
        assert_eq!(b.stages, Some(vec!["mm-onoff-down".to_string()]));
    }

    /// Trace files `1` and `1 2` in a temporary directory.
    fn traces() -> (tempfile::TempDir, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let (up, down) = (dir.path().join("up.trace"), dir.path().join("down.trace"));
        std::fs::write(&up, "1\n").unwrap();
        std::fs::write(&down, "1\n2\n2\n").unwrap();
        (dir, up.display().to_string(), down.display().to_string())
    }

    #[test]
    fn mm_link_takes_its_traces_and_queues() {
        let (_dir, up, down) = traces();
        let m = line(&format!(
            "mm-link --uplink-queue=droptail --uplink-queue-args=\"packets=100, bytes=30000\" {up} {down} --once --downlink-queue codel --downlink-queue-args packets=50,target=5,interval=100"
        ));
        assert_eq!((names(&m.downlink), names(&m.uplink)), (vec!["mm-link-down"], vec!["mm-link-up"]));
        let (u, d) = (m.uplink[0].trace.as_ref().unwrap(), m.downlink[0].trace.as_ref().unwrap());
        assert_eq!((u.opportunities_ms.as_slice(), d.opportunities_ms.as_slice()), (&[1u64][..], &[1u64, 2, 2][..]));
        assert!(u.once && d.once);
        assert_eq!(u.file.as_deref(), Some(up.as_str()));
        let q = &m.uplink[0].queue;
        assert_eq!((q.packets, q.bytes, q.drop), (Some(100), Some(squall_link::Bytes(30_000)), DropPolicy::Tail));
        let q = &m.downlink[0].queue;
        assert_eq!(q.packets, Some(50));
        assert_eq!(q.codel.as_ref().unwrap().target, Duration::from_millis(5));
        let plain = line(&format!("mm-link {up} {down}"));
        assert_eq!(plain.uplink[0].queue, squall_link::QueueConfig::default());
        assert!(!plain.uplink[0].trace.as_ref().unwrap().once);
    }

    /// `mm-delay 20 mm-loss uplink 0.1 mm-link UP DOWN`: the downlink
    /// crosses the shells from the outside in, the uplink from the inside
    /// out.
    #[test]
    fn nested_shells_are_stages_in_crossing_order() {
        let (_dir, up, down) = traces();
        let m = line(&format!("mm-delay 20 mm-loss uplink 0.1 mm-onoff uplink 2 0.5 mm-link {up} {down} mm-delay 5"));
        assert_eq!(names(&m.downlink), ["mm-delay-down", "mm-link-down", "mm-delay-2-down"]);
        assert_eq!(names(&m.uplink), ["mm-delay-2-up", "mm-link-up", "mm-onoff-up", "mm-loss-up", "mm-delay-up"]);
        assert_eq!(m.uplink[0].delay, Duration::from_millis(5));
        assert_eq!(m.uplink[4].delay, Duration::from_millis(20));
        assert_eq!(m.blackouts[0].stages, Some(vec!["mm-onoff-up".to_string()]));
        assert_eq!(m.blackouts[0].direction, BlackoutDirection::Uplink);
    }

    #[test]
    fn bad_lines_are_refused_at_the_word() {
        assert_eq!(
            err("mm-delay 20ms"),
            "--link:1:10: `mm-delay`: `20ms` is not a whole number of milliseconds (no unit: mm-delay's delay is in ms); expected `mm-delay DELAY-MS`, a whole number of milliseconds each way, e.g. \"mm-delay 20\" (delayshell.cc)"
        );
        assert!(err("mm-delay -5").contains("`-5` is a negative delay"));
        assert!(err("mm-delay 86400001").contains("above one day"));
        assert!(err("mm-delay").contains("0 argument(s); expected `mm-delay DELAY-MS`"));
        assert!(err("mm-delay 20 30").starts_with("--link:1:13: `30`: `30` is not a Mahimahi shell"));
        assert_eq!(
            err("mm-loss up 0.1"),
            "--link:1:9: `mm-loss`: `up` is not a direction; expected `mm-loss uplink|downlink RATE`, RATE the probability to drop each packet from 0 to 1, e.g. \"mm-loss uplink 0.1\" (lossshell.cc)"
        );
        assert!(err("mm-loss uplink 10%").contains("`10%` is a percentage; mm-loss takes a probability (10% is 0.1)"));
        assert!(err("mm-loss uplink 1.5").contains("`1.5` is not a probability from 0 to 1"));
        assert!(err("mm-loss uplink nan").contains("`nan` is not a probability"));
        assert!(err("mm-onoff sideways 5 1").contains("`sideways` is not a direction"));
        assert!(err("mm-onoff uplink 5 0").contains("mean off time 0 s"));
        assert!(err("mm-link up.trace").contains("1 trace file(s); expected `mm-link"));
        assert!(
            err("mm-link --uplink-log=up.log a b").contains("`--uplink-log` is not taken: every squall run writes")
        );
        assert!(err("mm-link --meter-all a b").contains("`--meter-all` is not taken: `squall report RUN`"));
        assert!(err("mm-link --fast a b").contains("`--fast` is not an option of mm-link"));
        assert!(err("mm-link /nonexistent/up /nonexistent/down").starts_with("--link:1:9: `mm-link`: uplink trace: "));
        let (_dir, up, down) = traces();
        assert!(err(&format!("mm-link {up} {down} c")).contains("`c` is not a Mahimahi shell"));
        assert!(
            err(&format!("mm-link {up} {down} --uplink-queue-args=packets=10"))
                .contains("--uplink-queue-args gives the arguments of --uplink-queue: give --uplink-queue=TYPE too")
        );
        assert!(
            err(&format!("mm-link {up} {down} --uplink-queue=droptail --uplink-queue-args=\"packets=10, target=5\""))
                .contains("--uplink-queue-args: `target` is not an argument of droptail")
        );
        assert!(
            err("mm-delay 20 -- ping 10.0.0.1")
                .contains("`--` is not a Mahimahi shell; the command goes after squall's own `--`")
        );
        assert!(err("mm-delay 20 ping").contains("`ping` is not a Mahimahi shell"));
        assert!(err("mm-delay \"20").contains("a quote is not closed"));
    }

    #[test]
    fn words_are_split_as_a_shell_splits_them() {
        let w: Vec<String> = words("mm-link --uplink-queue-args=\"packets=100, target=5\" 'a b' \\\n x")
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(w, ["mm-link", "--uplink-queue-args=packets=100, target=5", "a b", "x"]);
        assert_eq!(words("mm-delay \"20").err(), Some(9..12));
    }
}
