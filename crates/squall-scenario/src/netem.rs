//! A netem command line as a stage: `rate 10mbit delay 50ms 10ms loss 1%
//! limit 100`, with tc's spelling of quantities (tc-netem(8), iproute2
//! `tc/q_netem.c` and `tc/tc_util.c`).
//!
//! Mapping:
//! - `rate R` → `rate` (tc units: `bit`/`kbit`/`mbit`/`gbit` are bits per
//!   second, `Bps`/`KBps`/`MBps` bytes per second, a bare number bits).
//!   `bps`/`kbps`/`mbps`/`gbps` (lower-case b), which tc reads as bytes
//!   and everyone else as bits, are refused with both readings
//!   (`squall_link::units::ambiguous_rate`).
//! - `delay D [J]` (also `delay D jitter J`) → netem draws uniformly in
//!   D±J, so `delay = D-J` fixed plus `jitter` uniform in [0, 2J]: the mean
//!   stays D (when J > D, the fixed part is 0 and the range [0, D+J]).
//!   With `distribution normal`, `delay = D-3J` plus a normal jitter of
//!   mean 3J and deviation J (mean D; when 3J > D, fixed 0 and mean D).
//!   With `distribution pareto` or `paretonormal`, netem's own tables
//!   (iproute2 `netem/pareto.c`, `netem/paretonormal.c`, generated in
//!   `squall_link::dist::netem_table`): `D + J · t / 8192` for an entry
//!   `t` drawn uniformly (sch_netem.c `tabledist()`), 0 when negative.
//!   Each packet's delay is drawn on its own; without a `rate` packets
//!   leave in the order of their drawn times (`reorder = true`: netem's
//!   tfifo reorders jittered packets), with a `rate` in the order they
//!   came (netem then times each packet from the one before it).
//! - `delay D J C`, `loss P C`, `corrupt P C`, `duplicate P C`, `reorder
//!   P C`: correlations with netem's own generator (`jitter_correlation`,
//!   `error_correlation`, ...: `squall_link::dist::correlated`, flaws
//!   included; a scenario file can choose the `markov` one instead).
//! - `loss [random] P` → `error = { packet = P }`; `loss gemodel p [r [1-h
//!   [1-k]]]` → Gilbert-Elliott with tc's defaults r = 1-p, 1-h = 100%,
//!   1-k = 0 (squall's `h` and `k` are the chances to get *through*);
//!   `loss state p13 [p31 [p32 [p23 [p14]]]]` → the four-state model with
//!   tc's defaults p31 = 1-p13, p32 = 0, p23 = 100%, p14 = 0.
//! - `ecn` → `error_ecn`: ECN-capable packets the loss would drop are
//!   marked CE.
//! - `corrupt P` → `error = { packet = P }` with `error_mode = "corrupt"`.
//! - `duplicate P` → `duplicate`.
//! - `reorder P [gap N]`, `gap N` → `send_early` (and `reorder = true`):
//!   chosen packets skip the delay. `gap` alone, which tc refuses, takes
//!   the kernel's meaning: reorder 100 % (`netem_change`).
//! - `rate R [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]` → `rate` and
//!   `rate_overhead`.
//! - `limit N` → `queue = { packets = N }` (netem's default is 1000).
//!
//! - `slot MIN [MAX] [packets N] [bytes B]`, `slot distribution DIST D J
//!   [packets N] [bytes B]` → `slot` ([`squall_link::Slot`]: packets leave
//!   only at slot starts, a slot every draw from [MIN, MAX) or from netem's
//!   table with mean D and jitter J).
//!
//! - `delay D J distribution FILE` (FILE a path, with a `/` or ending in
//!   `.dist`): the table in iproute2's `.dist` format
//!   ([`crate::dist_table`]), read relative to the working directory (tc
//!   looks names up in `/usr/lib/tc`), used as netem uses its own tables.
//!
//! Refused with a clear error: `seed` (give `--seed`) and `loss` with
//! `corrupt` on one line (a squall stage has one error model).

use std::collections::BTreeMap;
use std::ops::Range;

use squall_link::{
    Bytes, Correlation, CorrelationGenerator, Distribution, Duplicate, Duration, ErrorMode, ErrorModel, FourState,
    GilbertElliott, NetemTable, Probability, QueueConfig, Rate, RateOverhead, SendEarly, Slot, StageConfig,
};

use squall_link::dist::netem_table::table_delay;

use crate::error::{ErrorKind, ScenarioError};
use crate::schema::{Host, Link, Scenario, Workload};

/// netem's default queue limit in packets.
const NETEM_LIMIT: u32 = 1000;

/// Reads a netem option list (the part after `netem` in `tc qdisc add dev
/// eth0 root netem ...`; a leading `netem` is accepted) as a stage named
/// `netem`.
pub fn parse_netem(spec: &str) -> Result<StageConfig, ScenarioError> {
    parse_named(spec, "netem", "netem")
}

/// A two-host scenario over one link: hosts `fixed` (10.0.0.1) and
/// `mobile` (10.0.1.1); the downlink (fixed → mobile) is `down`, the uplink
/// `up`, or by default the downlink's delay and jitter with no rate limit
/// and no loss. Stages are named `netem-down` and `netem-up`. The run lasts
/// 60 s; there is no workload: the caller adds one (or, in emulation, runs
/// real applications).
///
/// A line of Mahimahi shells (`mm-delay 20 mm-loss uplink 0.1 mm-link
/// up.trace down.trace`, [`crate::mahimahi_line`]) gives both directions
/// instead, and its `mm-onoff` shells' blackouts; it takes no `up`.
pub fn scenario_from_netem(down: &str, up: Option<&str>) -> Result<Scenario, ScenarioError> {
    if crate::mahimahi_line::is_mm_line(down) {
        if let Some(up) = up {
            return Err(ScenarioError::new(ErrorKind::Netem, "--uplink", Some(up), Some(0..up.len())).message(
                "a line of Mahimahi shells gives both directions (mm-delay delays both, mm-loss and mm-onoff name theirs, mm-link takes both traces); leave --uplink out",
            ));
        }
        let mm = crate::mahimahi_line::parse_mm_line(down, "--link")?;
        let mut scenario = two_hosts(mm.downlink, mm.uplink, format!("Mahimahi: {}", down.trim()));
        scenario.blackouts = mm.blackouts;
        return Ok(scenario);
    }
    let downlink = parse_named(down, "netem-down", "netem (downlink)")?;
    let uplink = match up {
        Some(up) => parse_named(up, "netem-up", "netem (uplink)")?,
        None => StageConfig {
            delay: downlink.delay,
            jitter: downlink.jitter.clone(),
            reorder: downlink.jitter.is_some(),
            queue: QueueConfig { packets: Some(NETEM_LIMIT), ..QueueConfig::default() },
            ..StageConfig::named("netem-up")
        },
    };
    let description = match up {
        Some(up) => format!("netem: downlink `{}`, uplink `{}`", down.trim(), up.trim()),
        None => format!("netem: downlink `{}`", down.trim()),
    };
    Ok(two_hosts(vec![downlink], vec![uplink], description))
}

/// The two-host scenario of a one-liner over `downlink` and `uplink`.
fn two_hosts(downlink: Vec<StageConfig>, uplink: Vec<StageConfig>, description: String) -> Scenario {
    Scenario {
        name: "netem".to_string(),
        description: Some(description),
        seed: 1,
        duration: Duration::from_secs(60),
        stop_when_done: false,
        replications: 1,
        hosts: vec![
            Host {
                name: "fixed".to_string(),
                address: Some([10, 0, 0, 1].into()),
                address6: None,
                sysctl: BTreeMap::new(),
                outside_interface: None,
                netns: None,
                netns_pid: None,
                processing: None,
                stack_delay: None,
                ephemeral_ports: None,
                clock_phase: None,
                group: None,
            },
            Host {
                name: "mobile".to_string(),
                address: Some([10, 0, 1, 1].into()),
                address6: None,
                sysctl: BTreeMap::new(),
                outside_interface: None,
                netns: None,
                netns_pid: None,
                processing: None,
                stack_delay: None,
                ephemeral_ports: None,
                clock_phase: None,
                group: None,
            },
        ],
        host_groups: Vec::new(),
        links: vec![Link { between: ["fixed".to_string(), "mobile".to_string()], downlink, uplink }],
        states: Vec::new(),
        state_series: None,
        blackouts: Vec::new(),
        workload: Workload::default(),
        inline: None,
        record: Vec::new(),
    }
}

/// The two directions of a netem-made scenario in one line, as the first
/// line of a `--link` run states them (issue 28: `--link` adds its delay
/// both ways but its loss and rate only on the downlink):
/// `--link: downlink rate 10 Mbit/s delay 50 ms loss 1%; uplink delay 50 ms,
/// no loss (--uplink to change)`.
pub fn describe_netem_directions(scenario: &Scenario, uplink_given: bool) -> String {
    let stage = |dir: &[StageConfig]| dir.first().map_or_else(|| "none".to_string(), describe_stage);
    let Some(link) = scenario.links.first() else { return String::new() };
    if scenario.description.as_deref().is_some_and(|d| d.starts_with("Mahimahi: ")) {
        // Every shell's stage, in the order a packet crosses them.
        let stage = |dir: &[StageConfig]| {
            dir.iter().map(|s| format!("{} ({})", s.name, describe_stage(s))).collect::<Vec<_>>().join(" -> ")
        };
        let onoff: Vec<String> = scenario
            .blackouts
            .iter()
            .map(|b| format!("; {:?} on/off as mm-onoff", b.direction).to_lowercase())
            .collect();
        return format!("--link: downlink {}; uplink {}{}", stage(&link.downlink), stage(&link.uplink), onoff.concat());
    }
    format!(
        "--link: downlink {}; uplink {}{}",
        stage(&link.downlink),
        stage(&link.uplink),
        if uplink_given { "" } else { " (--uplink to change)" }
    )
}

/// A netem-made stage in words: rate, delay and jitter, loss, limit.
fn describe_stage(s: &StageConfig) -> String {
    let mut parts = Vec::new();
    if let Some(r) = s.rate {
        parts.push(format!("rate {r}"));
    }
    let ms = |ns: f64| {
        let ms = ns / 1e6;
        if (ms - ms.round()).abs() < 1e-9 { format!("{ms:.0} ms") } else { format!("{ms} ms") }
    };
    if let Some(t) = &s.trace {
        let file = t.file.as_deref().unwrap_or("inline");
        let last = t.opportunities_ms.last().copied().unwrap_or(0);
        parts.push(format!(
            "trace {file}: {} opportunities per {last} ms{}",
            t.opportunities_ms.len(),
            if t.once { ", once" } else { "" }
        ));
    }
    let delay = s.delay.as_nanos() as f64;
    let order = if s.reorder { "reordering" } else { "in order" };
    match &s.jitter {
        None => parts.push(format!("delay {}", ms(delay))),
        Some(Distribution::Uniform { low, high }) => {
            let (low, high) = (delay + low.as_nanos() as f64, delay + high.as_nanos() as f64);
            parts.push(format!("delay uniform {}..{} ({order})", ms(low), ms(high)));
        }
        Some(Distribution::Normal { mean, std_dev }) => parts.push(format!(
            "delay {} normal, deviation {} ({order})",
            ms(delay + mean.as_nanos() as f64),
            ms(std_dev.as_nanos() as f64)
        )),
        Some(Distribution::NetemTable { table, file, mu, sigma, .. }) => parts.push(format!(
            "delay {} {}, jitter {} ({order})",
            ms(delay + mu.as_nanos() as f64),
            table_name(table, file),
            ms(sigma.as_nanos() as f64)
        )),
        Some(_) => parts.push(format!("delay {} plus a random part ({order})", ms(delay))),
    }
    let corrupt = s.error_mode == ErrorMode::Corrupt;
    match &s.error {
        ErrorModel::None => parts.push("no loss".to_string()),
        ErrorModel::Packet(p) => {
            parts.push(format!("{} {}%", if corrupt { "corrupt" } else { "loss" }, p.get() * 100.0))
        }
        ErrorModel::GilbertElliott(g) => parts.push(format!(
            "loss gemodel p {}% r {}% 1-h {}% 1-k {}%",
            g.p.get() * 100.0,
            g.r.get() * 100.0,
            (1.0 - g.h.get()) * 100.0,
            (1.0 - g.k.get()) * 100.0
        )),
        ErrorModel::FourState(f) => parts.push(format!(
            "loss state p13 {}% p31 {}% p32 {}% p23 {}% p14 {}%",
            f.p13.get() * 100.0,
            f.p31.get() * 100.0,
            f.p32.get() * 100.0,
            f.p23.get() * 100.0,
            f.p14.get() * 100.0
        )),
        other => parts.push(format!("errors {other:?}")),
    }
    let corr = |c: &Option<Correlation>| {
        c.map_or(String::new(), |c| format!(" correlation {}% ({})", c.correlation.get() * 100.0, c.generator.as_str()))
    };
    if s.error_correlation.is_some() {
        parts.push(format!("error{}", corr(&s.error_correlation)));
    }
    if s.jitter_correlation.is_some() {
        parts.push(format!("jitter{}", corr(&s.jitter_correlation)));
    }
    if s.error_ecn {
        parts.push("ecn".to_string());
    }
    if let Some(d) = &s.duplicate {
        parts.push(format!("duplicate {}%{}", d.probability.get() * 100.0, corr(&d.correlation)));
    }
    if let Some(e) = &s.send_early {
        parts.push(format!("reorder {}%{} gap {}", e.probability.get() * 100.0, corr(&e.correlation), e.gap));
    }
    if let Some(o) = &s.rate_overhead {
        parts.push(format!("overhead {} B, cell {} B + {} B", o.packet, o.cell_size, o.cell));
    }
    if let Some(slot) = &s.slot {
        let interval = match &slot.interval {
            Distribution::Constant { value } => format!("every {}", ms(value.as_nanos() as f64)),
            Distribution::Uniform { low, high } => {
                format!("every {}..{}", ms(low.as_nanos() as f64), ms(high.as_nanos() as f64))
            }
            Distribution::NetemTable { table, file, mu, sigma, .. } => format!(
                "every {} {}, jitter {}",
                ms(mu.as_nanos() as f64),
                table_name(table, file),
                ms(sigma.as_nanos() as f64)
            ),
            other => format!("every {other:?}"),
        };
        let packets = slot.packets.map_or(String::new(), |n| format!(", {n} packets"));
        let bytes = slot.bytes.map_or(String::new(), |b| format!(", {} B", b.0));
        parts.push(format!("slots {interval}{packets}{bytes}"));
    }
    if let Some(n) = s.queue.packets {
        parts.push(format!("limit {n}"));
    }
    parts.join(", ")
}

/// A netem table distribution in words: its name, or its file.
fn table_name(table: &Option<NetemTable>, file: &Option<String>) -> String {
    match (table, file) {
        (Some(t), _) => t.as_str().to_string(),
        (None, Some(f)) => format!("table {f}"),
        (None, None) => "table".to_string(),
    }
}

struct Token<'a> {
    text: &'a str,
    span: Range<usize>,
}

struct Parser<'a> {
    spec: &'a str,
    source: &'a str,
    tokens: Vec<Token<'a>>,
    at: usize,
}

fn tokens(spec: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in spec.char_indices().chain(std::iter::once((spec.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                // A shell's line continuation is whitespace.
                if &spec[s..i] != "\\" {
                    out.push(Token { text: &spec[s..i], span: s..i });
                }
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

impl<'a> Parser<'a> {
    fn error(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> ScenarioError {
        let message = message.into();
        ScenarioError::new(ErrorKind::Netem, self.source, Some(self.spec), Some(span))
            .key(key)
            .label(message.split([';', ',']).next().unwrap_or("").to_string())
            .message(message)
    }

    fn next(&mut self) -> Option<&Token<'a>> {
        let t = self.tokens.get(self.at)?;
        self.at += 1;
        Some(t)
    }

    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.at)
    }

    /// The argument of `option`, or an error at the option saying what was
    /// expected.
    fn arg(&mut self, option: &Token<'a>, expected: &str) -> Result<Token<'a>, ScenarioError> {
        match self.next() {
            Some(t) => Ok(Token { text: t.text, span: t.span.clone() }),
            None => Err(self.error(option.span.clone(), option.text, format!("`{}` needs {expected}", option.text))),
        }
    }

    /// Whether the next token starts with a digit or a dot (a value, not
    /// an option), like tc's `NEXT_IS_NUMBER`.
    fn next_is_number(&self) -> bool {
        self.peek().is_some_and(|t| t.text.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
    }
}

fn parse_named(spec: &str, stage: &str, source: &str) -> Result<StageConfig, ScenarioError> {
    let mut p = Parser { spec, source, tokens: tokens(spec), at: 0 };
    if p.peek().is_some_and(|t| matches!(t.text, "tc" | "sudo")) {
        skip_tc_command(&mut p)?;
    } else if p.peek().is_some_and(|t| t.text == "netem") {
        p.at += 1;
    }
    let cfg = StageConfig {
        queue: QueueConfig { packets: Some(NETEM_LIMIT), ..QueueConfig::default() },
        ..StageConfig::named(stage)
    };
    let mut line = NetemLine { p, cfg, seen: Vec::new(), error_from: None, reorder_at: None, ecn_at: None };
    while let Some(t) = line.p.next() {
        let opt = Token { text: t.text, span: t.span.clone() };
        match opt.text {
            "rate" => line.rate(&opt)?,
            "delay" | "latency" => line.delay(&opt)?,
            "loss" | "drop" => line.loss(&opt)?,
            "corrupt" => line.corrupt(&opt)?,
            "limit" => line.limit(&opt)?,
            "reorder" => line.reorder(&opt)?,
            "gap" => line.gap(&opt)?,
            "duplicate" => line.duplicate(&opt)?,
            "ecn" => line.ecn(&opt)?,
            "slot" => line.slot(&opt)?,
            "seed" => {
                return Err(line.p.error(
                    opt.span.clone(),
                    opt.text,
                    "netem's `seed` is not read: a squall run's random streams come from the scenario's seed; give `--seed S` instead",
                ));
            }
            other => {
                return Err(line.p.error(opt.span.clone(), other, format!(
                    "unknown netem option `{other}`; expected one of rate, delay, distribution, loss, corrupt, duplicate, reorder, gap, ecn, slot, limit, like `rate 10mbit delay 50ms 10ms loss 1%`"
                )));
            }
        }
    }
    line.finish()
}

/// A whole tc command line, pasted as tc-netem(8)'s EXAMPLES write it:
/// `[sudo] tc qdisc add|change|replace dev DEV [root | parent ID] [handle
/// ID] netem OPTIONS` (tc(8): the verbs that set a qdisc's options; the
/// device, parent and handle say where the qdisc goes, which a squall
/// stage does not need). Leaves `p` at the first option after `netem`.
fn skip_tc_command(p: &mut Parser<'_>) -> Result<(), ScenarioError> {
    if p.peek().is_some_and(|t| t.text == "sudo") {
        p.at += 1;
    }
    let Some(tc) = p.next().map(|t| Token { text: t.text, span: t.span.clone() }) else {
        return Err(p.error(
            0..p.spec.len(),
            "sudo",
            "expected a tc command after `sudo`, like `tc qdisc add dev eth0 root netem delay 100ms`",
        ));
    };
    if tc.text != "tc" {
        return Err(p.error(
            tc.span,
            tc.text,
            "expected `tc` after `sudo`, like `sudo tc qdisc add dev eth0 root netem delay 100ms`",
        ));
    }
    let object = p.arg(&tc, "`qdisc`, like `tc qdisc add dev eth0 root netem delay 100ms`")?;
    if object.text != "qdisc" {
        return Err(p.error(object.span, object.text, format!(
            "squall reads `tc qdisc ... netem` lines; `tc {}` sets no netem options (a filter's matches are a stage's `classes` in a scenario file)",
            object.text
        )));
    }
    let verb = p.arg(&object, "add, change or replace, like `tc qdisc add dev eth0 root netem delay 100ms`")?;
    if !matches!(verb.text, "add" | "change" | "replace") {
        return Err(p.error(verb.span, verb.text, format!(
            "`tc qdisc {}` sets no netem options; expected add, change or replace, like `tc qdisc add dev eth0 root netem delay 100ms`",
            verb.text
        )));
    }
    let mut last = verb;
    loop {
        let Some(word) = p.next().map(|t| Token { text: t.text, span: t.span.clone() }) else {
            return Err(p.error(last.span, last.text, "the tc line ends before `netem`; expected `netem` and its options, like `tc qdisc add dev eth0 root netem delay 100ms`"));
        };
        match word.text {
            "netem" => return Ok(()),
            "root" => {}
            "dev" | "parent" | "handle" => {
                p.arg(&word, &format!("a value after `{}`", word.text))?;
            }
            other => {
                return Err(p.error(word.span, other, format!(
                    "`{other}` is not netem: squall reads the options of a `netem` qdisc; expected dev, root, parent, handle or netem here (a `tbf` or `prio` in front of netem is a stage's `rate` or `classes` in a scenario file)"
                )));
            }
        }
        last = word;
    }
}

/// `loss gemodel p [r [1-h [1-k]]]` (tc/q_netem.c `get_loss_gemodel`):
/// the Gilbert–Elliott model, r = 1 − p, 1-h = 100%, 1-k = 0 by default.
fn loss_gemodel<'a>(p: &mut Parser<'a>, first: &Token<'a>) -> Result<ErrorModel, ScenarioError> {
    let v = p.arg(first, "the good→bad probability, like `loss gemodel 1% 30%`")?;
    let gp = percent(p, &v, "loss gemodel p")?;
    let mut params = [None; 3];
    for (k, slot) in params.iter_mut().enumerate() {
        if !p.next_is_number() {
            break;
        }
        let v = p.arg(first, "a probability")?;
        let name = ["loss gemodel r", "loss gemodel 1-h", "loss gemodel 1-k"][k];
        *slot = Some(percent(p, &v, name)?);
    }
    let r = params[0].unwrap_or_else(|| Probability::new(1.0 - gp.get()).unwrap_or(Probability::ONE));
    let loss_bad = params[1].map_or(1.0, Probability::get);
    let loss_good = params[2].map_or(0.0, Probability::get);
    Ok(ErrorModel::GilbertElliott(GilbertElliott {
        p: gp,
        r,
        h: Probability::new(1.0 - loss_bad).unwrap_or(Probability::ZERO),
        k: Probability::new(1.0 - loss_good).unwrap_or(Probability::ONE),
    }))
}

/// `loss state p13 [p31 [p32 [p23 [p14]]]]`: the four-state Markov model
/// (tc/q_netem.c `get_loss_state`).
fn loss_state<'a>(p: &mut Parser<'a>, first: &Token<'a>) -> Result<ErrorModel, ScenarioError> {
    // tc/q_netem.c: p13 [p31 [p32 [p23 [p14]]]], with
    // p31 = 1 − p13, p32 = 0, p23 = 1, p14 = 0 by default.
    let v = p.arg(first, "p13, like `loss state 1% 30% 20% 40% 0.5%`")?;
    let p13 = percent(p, &v, "loss state p13")?;
    let mut rest = [None; 4];
    for (k, slot) in rest.iter_mut().enumerate() {
        if !p.next_is_number() {
            break;
        }
        let v = p.arg(first, "a probability")?;
        let name = ["loss state p31", "loss state p32", "loss state p23", "loss state p14"][k];
        *slot = Some(percent(p, &v, name)?);
    }
    let four = FourState {
        p13,
        p31: rest[0].unwrap_or_else(|| Probability::new(1.0 - p13.get()).unwrap_or(Probability::ZERO)),
        p32: rest[1].unwrap_or(Probability::ZERO),
        p23: rest[2].unwrap_or(Probability::ONE),
        p14: rest[3].unwrap_or(Probability::ZERO),
    };
    if four.p13.get() + four.p14.get() > 1.0 || four.p31.get() + four.p32.get() > 1.0 {
        return Err(p.error(
            first.span.clone(),
            "loss state",
            "p13 + p14 and p31 + p32 must each be at most 100% (each pair leaves one state)",
        ));
    }
    Ok(ErrorModel::FourState(four))
}

/// Marks option `name` given, or refuses it given twice.
fn once(seen: &mut Vec<&'static str>, opt: &Token, name: &'static str, p: &Parser) -> Result<(), ScenarioError> {
    if seen.contains(&name) {
        Err(p.error(opt.span.clone(), name, format!("`{name}` is given twice; give it once")))
    } else {
        seen.push(name);
        Ok(())
    }
}

/// One netem line being read: its tokens, the stage it builds, and what
/// the checks after its last option need. Each option's method reads the
/// option's arguments (tc/q_netem.c's `netem_parse_opt` order and
/// defaults) into the stage.
struct NetemLine<'a> {
    p: Parser<'a>,
    cfg: StageConfig,
    /// Options given so far (each at most once).
    seen: Vec<&'static str>,
    /// The option that set the stage's one error model.
    error_from: Option<&'static str>,
    reorder_at: Option<Range<usize>>,
    ecn_at: Option<Range<usize>>,
}

impl<'a> NetemLine<'a> {
    fn rate(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, .. } = self;
        once(seen, opt, "rate", p)?;
        let v = p.arg(opt, "a rate, like `rate 10mbit`")?;
        if let Some(why) = squall_link::units::ambiguous_rate(v.text) {
            return Err(p.error(v.span.clone(), "rate", format!("{:?} is not {why}", v.text)));
        }
        cfg.rate = Some(tc_rate(v.text).ok_or_else(|| {
            p.error(
                v.span.clone(),
                "rate",
                format!("{:?} is not a rate; expected tc's spelling, like 10mbit, 512kbit or 1MBps (bytes)", v.text),
            )
        })?);
        // tc/q_netem.c: PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]],
        // each taken if the next word starts with a digit or `-`.
        let mut overhead = RateOverhead { packet: 0, cell_size: 0, cell: 0 };
        let mut given = 0;
        while given < 3 && (p.next_is_number() || p.peek().is_some_and(|t| t.text.starts_with('-'))) {
            let v = p.arg(opt, "a number of bytes")?;
            let what = ["packet overhead", "cell size", "cell overhead"][given];
            let bad = |p: &Parser| {
                p.error(
                    v.span.clone(),
                    "rate",
                    format!(
                        "{:?} is not a {what}; expected a whole number of bytes, like `rate 5kbit 20 100 5` (packet overhead 20, cell size 100, cell overhead 5)",
                        v.text
                    ),
                )
            };
            match given {
                0 => overhead.packet = v.text.parse().map_err(|_| bad(p))?,
                1 => overhead.cell_size = v.text.parse().map_err(|_| bad(p))?,
                _ => overhead.cell = v.text.parse().map_err(|_| bad(p))?,
            }
            given += 1;
        }
        if given > 0 {
            cfg.rate_overhead = Some(overhead);
        }
        Ok(())
    }

    fn delay(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, .. } = self;
        once(seen, opt, "delay", p)?;
        let v = p.arg(opt, "a time, like `delay 50ms`")?;
        let delay = tc_time(v.text).ok_or_else(|| bad_time(p, &v, "delay"))?;
        let mut jitter = Duration::ZERO;
        if p.peek().is_some_and(|t| t.text == "jitter") {
            p.at += 1;
            let j = p.arg(opt, "a jitter time after `jitter`, like `delay 50ms jitter 10ms`")?;
            jitter = tc_time(j.text).ok_or_else(|| bad_time(p, &j, "jitter"))?;
        } else if p.next_is_number() {
            let j = p.arg(opt, "a time")?;
            jitter = tc_time(j.text).ok_or_else(|| bad_time(p, &j, "jitter"))?;
        }
        if p.next_is_number() {
            cfg.jitter_correlation = correlation(p, "delay")?;
        }
        let mut shape = DelayShape::Uniform;
        if p.peek().is_some_and(|t| t.text == "distribution") {
            let d = p
                .next()
                .map(|t| Token { text: t.text, span: t.span.clone() })
                .unwrap_or(Token { text: "", span: 0..0 });
            let kind = p.arg(&d, "a distribution, like `distribution normal`")?;
            shape = match kind.text {
                "uniform" => DelayShape::Uniform,
                "normal" => DelayShape::Normal,
                "pareto" => DelayShape::Table(TableSource::Named(NetemTable::Pareto)),
                "paretonormal" => DelayShape::Table(TableSource::Named(NetemTable::Paretonormal)),
                path if is_table_path(path) => DelayShape::Table(table_file(p, &kind)?),
                other => {
                    return Err(p.error(
                        kind.span.clone(),
                        "distribution",
                        format!(
                            "distribution `{other}` is not known; netem's are `uniform` (its default), \
                             `normal`, `pareto` and `paretonormal`, or a table file in iproute2's .dist \
                             format given by its path, like `distribution ./my.dist`"
                        ),
                    ));
                }
            };
            if jitter == Duration::ZERO {
                return Err(p.error(
                    kind.span.clone(),
                    "distribution",
                    "a delay distribution needs a jitter, like `delay 50ms 10ms distribution normal`",
                ));
            }
        }
        set_delay(cfg, delay, jitter, shape);
        Ok(())
    }

    fn loss(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, error_from, .. } = self;
        once(seen, opt, "loss", p)?;
        if let Some(other) = *error_from {
            return Err(p.error(
                opt.span.clone(),
                "loss",
                format!("a squall stage has one error model; give `loss` or `{other}`, not both"),
            ));
        }
        *error_from = Some("loss");
        let first = p.arg(opt, "a probability, like `loss 1%` or `loss gemodel 1% 30%`")?;
        match first.text {
            "random" => {
                let v = p.arg(&first, "a probability, like `loss random 1%`")?;
                cfg.error = ErrorModel::Packet(percent(p, &v, "loss")?);
                if p.next_is_number() {
                    cfg.error_correlation = correlation(p, "loss")?;
                }
            }
            "gemodel" | "gilbert" => cfg.error = loss_gemodel(p, &first)?,
            "state" => cfg.error = loss_state(p, &first)?,
            _ => {
                cfg.error = ErrorModel::Packet(percent(p, &first, "loss")?);
                if p.next_is_number() {
                    cfg.error_correlation = correlation(p, "loss")?;
                }
            }
        }
        Ok(())
    }

    fn corrupt(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, error_from, .. } = self;
        once(seen, opt, "corrupt", p)?;
        if let Some(other) = *error_from {
            return Err(p.error(
                opt.span.clone(),
                "corrupt",
                format!("a squall stage has one error model; give `corrupt` or `{other}`, not both"),
            ));
        }
        *error_from = Some("corrupt");
        let v = p.arg(opt, "a probability, like `corrupt 0.1%`")?;
        cfg.error = ErrorModel::Packet(percent(p, &v, "corrupt")?);
        cfg.error_mode = ErrorMode::Corrupt;
        if p.next_is_number() {
            cfg.error_correlation = correlation(p, "corrupt")?;
        }
        Ok(())
    }

    fn limit(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, .. } = self;
        once(seen, opt, "limit", p)?;
        let v = p.arg(opt, "a number of packets, like `limit 100`")?;
        let n: u32 = match v.text.parse::<u64>() {
            Ok(n) if n > 0 && n <= u64::from(u32::MAX) => n as u32,
            Ok(n) if n > 0 => {
                return Err(p.error(
                    v.span.clone(),
                    "limit",
                    format!("{n} packets is too large: at most {} (tc's limit is a 32-bit count)", u32::MAX),
                ));
            }
            _ => {
                return Err(p.error(
                    v.span.clone(),
                    "limit",
                    format!(
                        "{:?} is not a number of packets; expected a positive whole number, like `limit 100`",
                        v.text
                    ),
                ));
            }
        };
        cfg.queue.packets = Some(n);
        Ok(())
    }

    fn reorder(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, reorder_at, .. } = self;
        once(seen, opt, "reorder", p)?;
        let v = p.arg(opt, "a probability, like `reorder 25%`")?;
        let probability = percent(p, &v, "reorder")?;
        let correlation = if p.next_is_number() { correlation(p, "reorder")? } else { None };
        let gap = cfg.send_early.as_ref().map_or(1, |e| e.gap);
        cfg.send_early = Some(SendEarly { probability, correlation, gap });
        *reorder_at = Some(opt.span.clone());
        Ok(())
    }

    fn gap(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, reorder_at, .. } = self;
        once(seen, opt, "gap", p)?;
        let v = p.arg(opt, "a number of packets, like `gap 5`")?;
        let gap: u32 = v.text.parse().ok().filter(|&g| g > 0).ok_or_else(|| {
            p.error(
                v.span.clone(),
                "gap",
                format!("{:?} is not a gap; expected a whole number of packets from 1, like `gap 5`", v.text),
            )
        })?;
        // sch_netem.c `netem_change`: a gap sets the reorder
        // probability to 100 % until `reorder` says otherwise.
        match &mut cfg.send_early {
            Some(e) => e.gap = gap,
            None => cfg.send_early = Some(SendEarly { probability: Probability::ONE, correlation: None, gap }),
        }
        reorder_at.get_or_insert(opt.span.clone());
        Ok(())
    }

    fn duplicate(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, .. } = self;
        once(seen, opt, "duplicate", p)?;
        let v = p.arg(opt, "a probability, like `duplicate 1%`")?;
        let probability = percent(p, &v, "duplicate")?;
        let correlation = if p.next_is_number() { correlation(p, "duplicate")? } else { None };
        cfg.duplicate = Some(Duplicate { probability, correlation });
        Ok(())
    }

    /// `slot MIN [MAX] [packets N] [bytes B]` or `slot distribution DIST
    /// DELAY JITTER [packets N] [bytes B]` (tc/q_netem.c: MAX defaults to
    /// MIN and may not be below it; the jitter must be positive).
    fn slot(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, .. } = self;
        once(seen, opt, "slot", p)?;
        let interval = if p.next_is_number() {
            let min = p.arg(opt, "a time")?;
            let low = tc_time(min.text).ok_or_else(|| bad_time(p, &min, "slot"))?;
            let mut high = low;
            if p.next_is_number() {
                let max = p.arg(opt, "a time")?;
                high = tc_time(max.text).ok_or_else(|| bad_time(p, &max, "slot"))?;
                if high < low {
                    return Err(p.error(
                        max.span.clone(),
                        "slot",
                        format!("the longest slot {:?} is shorter than the shortest {:?}; give MIN then MAX, like `slot 800us 1ms`", max.text, min.text),
                    ));
                }
            }
            if high == low { Distribution::Constant { value: low } } else { Distribution::Uniform { low, high } }
        } else {
            let word = p.arg(opt, "slot times, like `slot 800us 1ms` or `slot distribution normal 1ms 200us`")?;
            if word.text != "distribution" {
                return Err(p.error(
                    word.span.clone(),
                    "slot",
                    format!("{:?} is not a slot time; expected `slot MIN [MAX]` or `slot distribution DIST DELAY JITTER`, like `slot 800us 1ms packets 32`", word.text),
                ));
            }
            let kind = p.arg(&word, "a distribution, like `slot distribution normal 1ms 200us`")?;
            let table = match kind.text {
                "normal" => NetemTable::Normal,
                "pareto" => NetemTable::Pareto,
                "paretonormal" => NetemTable::Paretonormal,
                other => {
                    return Err(p.error(
                        kind.span.clone(),
                        "slot distribution",
                        format!(
                            "distribution `{other}` is not known; netem's are `normal`, `pareto` and `paretonormal`"
                        ),
                    ));
                }
            };
            let d = p.arg(opt, "the mean slot time and its jitter, like `slot distribution normal 1ms 200us`")?;
            let mu = tc_time(d.text).ok_or_else(|| bad_time(p, &d, "slot delay"))?;
            let j = p.arg(opt, "a jitter after the slot time, like `slot distribution normal 1ms 200us`")?;
            let sigma = tc_time(j.text).ok_or_else(|| bad_time(p, &j, "slot jitter"))?;
            if sigma == Duration::ZERO {
                return Err(p.error(
                    j.span.clone(),
                    "slot jitter",
                    "a slot distribution needs a positive jitter, like `slot distribution normal 1ms 200us` (as in tc)",
                ));
            }
            Distribution::NetemTable { table: Some(table), file: None, entries: Vec::new(), mu, sigma }
        };
        let mut slot = Slot { interval, packets: None, bytes: None };
        if p.peek().is_some_and(|t| t.text == "packets") {
            let at = p.next().map(|t| Token { text: t.text, span: t.span.clone() }).expect("peeked");
            let v = p.arg(&at, "a number of packets per slot, like `packets 32`")?;
            slot.packets =
                Some(v.text.parse::<u32>().ok().filter(|&n| n > 0 && n <= i32::MAX as u32).ok_or_else(|| {
                    p.error(
                        v.span.clone(),
                        "slot packets",
                        format!(
                            "{:?} is not a number of packets; expected a whole number from 1, like `packets 32`",
                            v.text
                        ),
                    )
                })?);
        }
        if p.peek().is_some_and(|t| t.text == "bytes") {
            let at = p.next().map(|t| Token { text: t.text, span: t.span.clone() }).expect("peeked");
            let v = p.arg(&at, "a size per slot, like `bytes 64k`")?;
            slot.bytes = Some(tc_size(v.text).filter(|&n| n > 0).map(Bytes).ok_or_else(|| {
                p.error(
                    v.span.clone(),
                    "slot bytes",
                    format!("{:?} is not a size; expected tc's spelling from 1 byte, like 1500, 64k or 1mb", v.text),
                )
            })?);
        }
        cfg.slot = Some(slot);
        Ok(())
    }

    fn ecn(&mut self, opt: &Token<'a>) -> Result<(), ScenarioError> {
        let NetemLine { p, cfg, seen, ecn_at, .. } = self;
        once(seen, opt, "ecn", p)?;
        cfg.error_ecn = true;
        *ecn_at = Some(opt.span.clone());
        Ok(())
    }

    /// The checks across options, once the line is read.
    fn finish(self) -> Result<StageConfig, ScenarioError> {
        let NetemLine { p, mut cfg, reorder_at, ecn_at, .. } = self;
        // tc/q_netem.c refuses these combinations too.
        if let Some(at) = reorder_at
            && cfg.delay.is_zero()
            && cfg.jitter.is_none()
        {
            return Err(p.error(
                at,
                "reorder",
                "reordering needs a delay for the other packets, like `delay 10ms reorder 25%` (as in tc)",
            ));
        }
        if let Some(at) = ecn_at
            && (cfg.error.is_none() || cfg.error_mode != ErrorMode::Drop)
        {
            return Err(p.error(
                at,
                "ecn",
                "`ecn` marks packets a loss model would drop: give a `loss`, like `loss 1% ecn` (as in tc)",
            ));
        }
        if cfg.jitter.is_none() {
            // A correlation of a jitter of 0 has nothing to correlate.
            cfg.jitter_correlation = None;
        }
        cfg.reorder = netem_reorders(&cfg);
        Ok(cfg)
    }
}

/// Whether netem lets this stage's packets overtake each other: each
/// packet's delay is drawn on its own and netem's time-ordered queue
/// (`tfifo_enqueue` in net/sched/sch_netem.c) sends it at its own time, so
/// jitter reorders; with a `rate`, netem takes the last queued packet's
/// send time as the reference for the next ("Last packet in queue is
/// reference point (now)" in `netem_enqueue`), so packets stay in order.
/// Packets sent early (`reorder`) overtake the delayed ones.
fn netem_reorders(cfg: &StageConfig) -> bool {
    (cfg.jitter.is_some() && cfg.rate.is_none()) || cfg.send_early.is_some()
}

/// netem's delay distributions as `delay D J distribution …` names them.
enum DelayShape {
    /// netem's default without a table: uniform in D ± J.
    Uniform,
    /// `normal`: a normal of mean D and deviation J.
    Normal,
    /// `pareto`, `paretonormal`: netem's own tables (iproute2
    /// `netem/pareto.c`, `netem/paretonormal.c`), or a `.dist` file:
    /// `D + J · t / 8192`.
    Table(TableSource),
}

/// A netem table: one of netem's by name, or a `.dist` file's entries.
enum TableSource {
    Named(NetemTable),
    File { path: String, entries: Vec<i16> },
}

impl TableSource {
    fn entries(&self) -> &[i16] {
        match self {
            TableSource::Named(t) => t.entries(),
            TableSource::File { entries, .. } => entries,
        }
    }

    fn distribution(self, mu: Duration, sigma: Duration) -> Distribution<Duration> {
        match self {
            TableSource::Named(t) => {
                Distribution::NetemTable { table: Some(t), file: None, entries: Vec::new(), mu, sigma }
            }
            TableSource::File { path, entries } => {
                Distribution::NetemTable { table: None, file: Some(path), entries, mu, sigma }
            }
        }
    }
}

/// Whether a `distribution` word names a table file rather than one of
/// netem's tables: a path (with a `/`) or a name ending in `.dist`. tc
/// itself looks names up as `/usr/lib/tc/NAME.dist`; squall reads the
/// file named, relative to the working directory.
fn is_table_path(word: &str) -> bool {
    word.contains('/') || word.ends_with(".dist")
}

/// Reads the `.dist` file a `distribution` word names ([`crate::dist_table`]).
fn table_file(p: &Parser<'_>, word: &Token<'_>) -> Result<TableSource, ScenarioError> {
    let entries = crate::dist_table::read(std::path::Path::new(word.text))
        .map_err(|e| p.error(word.span.clone(), "distribution", e.to_string()))?;
    Ok(TableSource::File { path: word.text.to_string(), entries })
}

fn set_delay(cfg: &mut StageConfig, delay: Duration, jitter: Duration, shape: DelayShape) {
    if jitter == Duration::ZERO {
        cfg.delay = delay;
        cfg.jitter = None;
        return;
    }
    let (d, j) = (delay.as_nanos(), jitter.as_nanos());
    match shape {
        DelayShape::Normal => {
            // Fixed part D-3J, normal part N(3J, J): the mean stays D and the
            // truncation at zero cuts off 0.13 % of the mass.
            let shift = j.saturating_mul(3).min(d);
            cfg.delay = Duration::from_nanos(d - shift);
            cfg.jitter = Some(Distribution::Normal { mean: Duration::from_nanos(shift), std_dev: jitter });
        }
        DelayShape::Uniform => {
            let low = d - j.min(d);
            let high = d.saturating_add(j);
            cfg.delay = Duration::from_nanos(low);
            cfg.jitter = Some(Distribution::Uniform { low: Duration::ZERO, high: Duration::from_nanos(high - low) });
        }
        DelayShape::Table(table) => {
            // The fixed part is the table's smallest delay (D + J · t_min /
            // 8192, at least 0), the table's draw the rest: the stage's
            // delay stays the least a packet can get, as for the others.
            let smallest = table.entries().iter().copied().min().unwrap_or(0);
            let least = table_delay(&[smallest], 0, d as f64, j as f64).floor() as u64;
            cfg.delay = Duration::from_nanos(least);
            cfg.jitter = Some(table.distribution(Duration::from_nanos(d - least), jitter));
        }
    }
}

/// A correlation after a probability or a jitter, with netem's generator
/// (`squall_link::dist::correlated`): 0 % is none.
fn correlation(p: &mut Parser<'_>, of: &str) -> Result<Option<Correlation>, ScenarioError> {
    let Some(t) = p.next() else { return Ok(None) };
    let (text, span) = (t.text, t.span.clone());
    match tc_percent(text).and_then(Probability::new) {
        Some(c) if c.get() == 0.0 => Ok(None),
        Some(c) => Ok(Some(Correlation { correlation: c, generator: CorrelationGenerator::Netem })),
        None => Err(p.error(
            span,
            &format!("{of} correlation"),
            format!("{text:?} is not a {of} correlation; expected a percentage between 0% and 100%, like 25%"),
        )),
    }
}

fn bad_time(p: &Parser<'_>, t: &Token<'_>, key: &str) -> ScenarioError {
    p.error(
        t.span.clone(),
        key,
        format!("{:?} is not a time; expected tc's spelling, like 50ms, 1.5s or 200us", t.text),
    )
}

fn percent(p: &Parser<'_>, t: &Token<'_>, key: &str) -> Result<Probability, ScenarioError> {
    tc_percent(t.text).and_then(Probability::new).ok_or_else(|| {
        p.error(
            t.span.clone(),
            key,
            format!("{:?} is not a percentage; expected one between 0% and 100%, like 1% or 0.5%", t.text),
        )
    })
}

/// tc's percentages: `1%` or a bare number, both in percent.
fn tc_percent(s: &str) -> Option<f64> {
    let n: f64 = s.strip_suffix('%').unwrap_or(s).parse().ok()?;
    (n.is_finite() && (0.0..=100.0).contains(&n)).then_some(n / 100.0)
}

fn split_unit(s: &str) -> Option<(f64, String)> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let v: f64 = s[..end].parse().ok()?;
    v.is_finite().then(|| (v, s[end..].to_ascii_lowercase()))
}

/// tc's times: `s`/`sec`, `ms`/`msec`, `us`/`usec`, `ns`/`nsec`; a bare
/// number is microseconds.
fn tc_time(s: &str) -> Option<Duration> {
    let (v, unit) = split_unit(s)?;
    let ns = match unit.as_str() {
        "s" | "sec" | "secs" => 1e9,
        "ms" | "msec" | "msecs" => 1e6,
        "" | "us" | "usec" | "usecs" => 1e3,
        "ns" | "nsec" | "nsecs" => 1.0,
        _ => return None,
    };
    let nanos = v * ns;
    (nanos < u64::MAX as f64).then(|| Duration::from_nanos_f64(nanos))
}

/// tc's sizes (tc/tc_util.c `get_size`, case-insensitive): a bare number
/// or `b` in bytes, `k`/`kb` 1024 bytes, `m`/`mb` 1024², `g`/`gb` 1024³,
/// `kbit`, `mbit`, `gbit` those over 8; at most 2³¹ − 1 (netem keeps the
/// budget in an int).
fn tc_size(s: &str) -> Option<u64> {
    let (v, unit) = split_unit(s)?;
    let scale = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1024.0,
        "m" | "mb" => 1024.0 * 1024.0,
        "g" | "gb" => 1024.0 * 1024.0 * 1024.0,
        "kbit" => 1024.0 / 8.0,
        "mbit" => 1024.0 * 1024.0 / 8.0,
        "gbit" => 1024.0 * 1024.0 * 1024.0 / 8.0,
        _ => return None,
    };
    let n = (v * scale).floor();
    (n <= f64::from(i32::MAX)).then_some(n as u64)
}

/// tc's rates (case-insensitive): `bit`, `kbit`, `mbit`, `gbit`, `tbit`
/// and `kibit`... in bits per second; `bps`, `kbps`, `mbps`... in bytes per
/// second; a bare number in bits per second.
fn tc_rate(s: &str) -> Option<Rate> {
    let (v, unit) = split_unit(s)?;
    let scale = match unit.as_str() {
        "" | "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "kibit" => 1024.0,
        "mibit" => 1024.0 * 1024.0,
        "gibit" => 1024.0 * 1024.0 * 1024.0,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        "kibps" => 8.0 * 1024.0,
        "mibps" => 8.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bps = v * scale;
    (bps >= 1.0 && bps < u64::MAX as f64).then(|| Rate::from_bits_per_sec(bps.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_units() {
        assert_eq!(tc_rate("10mbit"), Some(Rate::from_bits_per_sec(10_000_000)));
        assert_eq!(tc_rate("1Mbps"), Some(Rate::from_bits_per_sec(8_000_000)));
        assert_eq!(tc_rate("9600"), Some(Rate::from_bits_per_sec(9600)));
        assert_eq!(tc_rate("0bit"), None);
        assert_eq!(tc_time("50ms"), Some(Duration::from_millis(50)));
        assert_eq!(tc_time("100"), Some(Duration::from_micros(100)));
        assert_eq!(tc_time("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(tc_percent("0.5"), Some(0.005));
        assert_eq!(tc_percent("150%"), None);
    }
}
