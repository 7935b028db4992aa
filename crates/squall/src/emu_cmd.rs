//! `squall emu`: run a scenario in the emulate engine (real time, real
//! Linux TCP in network namespaces) and write the same files as `squall
//! sim`: summary.json (engine "emu"), scenario.toml, rep-0/events.csv and
//! rep-0/HOST.pcap, plus rep-0/timing.csv (scheduled and actual time of
//! every delivery) and rep-0/workloads/ (each command's output).
//!
//! The pcaps, events.csv and timing.csv are written while the run goes on
//! (squall_emu::recording): memory stays flat however long it runs, and a
//! record the writer cannot keep up with is dropped and counted
//! (`emu.capture_dropped` in summary.json), never the packet.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use squall_analysis::Summary;
use squall_analysis::summary_file::{Aggregate, EmuRunSummary, StageSummary, SummaryFile, stage_summary};
use squall_emu::dataplane::{DataplaneOptions, DataplaneReport};
use squall_emu::recording::{DEFAULT_QUEUE, DEFAULT_QUEUE_BYTES, RecordCounts, RecordingOptions};
use squall_emu::workload::plan::{Sysctls, WorkloadPlan, apply_sysctls, ephemeral_port_sysctls, shell_quote};
use squall_emu::workload::{CommandOutcome, CommandSpec, WorkloadFile};
use squall_emu::{EmulationOptions, EmulationReport, EndReason};
use squall_link::Duration;
use squall_scenario::Scenario;
use squall_trace::SNAPLEN;

use crate::sim_cmd::{self, Loaded, ScenarioArgs};

/// `--host-device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HostDeviceArg {
    Tun,
    Xdp,
}

/// `--inline-socket`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InlineSocketArg {
    Packet,
    Xdp,
}

impl From<InlineSocketArg> for squall_emu::inline::InlineSocket {
    fn from(a: InlineSocketArg) -> Self {
        match a {
            InlineSocketArg::Packet => squall_emu::inline::InlineSocket::Packet,
            InlineSocketArg::Xdp => squall_emu::inline::InlineSocket::Xdp,
        }
    }
}

impl From<HostDeviceArg> for squall_emu::HostDevice {
    fn from(a: HostDeviceArg) -> Self {
        match a {
            HostDeviceArg::Tun => squall_emu::HostDevice::Tun,
            HostDeviceArg::Xdp => squall_emu::HostDevice::Xdp,
        }
    }
}

#[derive(Args)]
pub struct EmuArgs {
    #[command(flatten)]
    pub common: ScenarioArgs,
    /// Run a command on a host: HOST@TIME=COMMAND, e.g.
    /// `fixed@1s="iperf3 -c 10.0.1.1 -t 5"`. The run ends when all of them
    /// have exited (or at the scenario's duration). Repeatable.
    #[arg(long = "run", value_name = "HOST@TIME=COMMAND")]
    pub run: Vec<String>,
    /// Like --run, for a server: the run does not wait for it, and it is
    /// stopped at the end. Repeatable.
    #[arg(long = "serve", value_name = "HOST@TIME=COMMAND")]
    pub serve: Vec<String>,
    /// A TOML file with `[[commands]]` (host, at, run, background).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Run for this long instead of the scenario's duration ("30 s").
    #[arg(long)]
    pub duration: Option<Duration>,
    /// Sleep until this long before each delivery is due, then spin:
    /// `auto` (the default) chooses it from how late this machine wakes
    /// the data plane (the p99 of its sleeps' overshoot + 20 us, between
    /// 50 us and 2 ms; summary.json's timing.wakeup), or a fixed duration
    /// ("200 us").
    #[arg(long, default_value = "auto", value_name = "auto|DURATION")]
    pub early_wakeup: squall_emu::wakeup::EarlyWakeup,
    /// After reading packets, keep reading (spinning) this long before
    /// sleeping: while traffic flows, packets are found without waking
    /// the data plane, a cost the senders' CPUs pay ("0 s": sleep at once).
    #[arg(long, default_value = "50 us")]
    pub busy_poll: Duration,
    /// A delivery later than this is counted late and flags the run.
    #[arg(long, default_value = "1 ms")]
    pub late_threshold: Duration,
    /// Run the data plane in SCHED_FIFO at this priority (1-99). Helps on a
    /// loaded machine at low packet rates; at high rates the kernel's
    /// real-time throttling makes it worse.
    #[arg(long, value_name = "PRIORITY")]
    pub realtime: Option<i32>,
    /// Run the data plane alone on the last CPU, and the workloads (and
    /// squall's other threads) on the others.
    #[arg(long)]
    pub pin: bool,
    /// Run the data plane on this CPU, and leave the workloads and squall's
    /// other threads where the kernel puts them (place workloads yourself
    /// with `taskset -c`). With `--host-device xdp`, a sender alone on one
    /// CPU and its receiver on the data plane's is the fastest placement
    /// measured (docs/guide, "Emulation: Which device joins a host: TUN or AF_XDP").
    #[arg(long, value_name = "CPU", conflicts_with = "pin")]
    pub dataplane_cpu: Option<usize>,
    /// What joins each host to squall: `tun` (a TUN device with offloads,
    /// the faster for bulk TCP) or `xdp` (a veth pair read and written
    /// with AF_XDP, the faster for small packets; TCP flights come
    /// wire-sized). docs/guide, "Emulation: Which device joins a host: TUN or AF_XDP".
    #[arg(long, value_enum, default_value_t = HostDeviceArg::Tun)]
    pub host_device: HostDeviceArg,
    /// Inline, what reads and writes the two interfaces: `packet` (AF_PACKET
    /// with a receive ring; GSO super-frames pass, the faster for bulk TCP)
    /// or `xdp` (AF_XDP in copy mode, the faster for small frames; an XDP
    /// program on a veth turns its peer's GSO off). docs/guide, "Inline and outside hosts".
    #[arg(long, value_enum, default_value_t = InlineSocketArg::Packet)]
    pub inline_socket: InlineSocketArg,
    /// MTU of the hosts' TUN devices, bytes.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Open the hosts' TUN devices without offloads: each write of a host
    /// is one wire-sized packet (slower; the model sees the same packets
    /// either way, as offloaded flights are cut before it).
    #[arg(long)]
    pub no_offloads: bool,
    /// Keep at most this many bytes of each packet in the pcaps (like
    /// `tcpdump -s`); a record's original length stays the packet's.
    /// Default: whole packets.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=SNAPLEN as i64))]
    pub snaplen: Option<u32>,
    /// Do not write timing.csv (each delivery's scheduled and actual
    /// time); the summary's departure-error figures are kept. At millions
    /// of deliveries a second its writing competes with the data plane.
    #[arg(long)]
    pub no_timing: bool,
    /// Started by `squall run` or `squall compare`, which move the files
    /// into their own layout: the closing "wrote …" line, which would name
    /// paths gone by then, is left out.
    #[arg(long, hide = true)]
    pub files_moved_by_parent: bool,
    /// Records (packets, a wake-up's events, delivery timings) the queue to
    /// the recording thread holds; when it is full, records are dropped and
    /// counted (summary.json `emu.capture_dropped`), packets never.
    #[arg(long, value_name = "RECORDS", default_value_t = DEFAULT_QUEUE, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 24))]
    pub record_queue: usize,
    /// Inline mode: carry every frame between two existing interfaces
    /// through the scenario's link instead of making namespaces: frames
    /// from the first take the downlink (links[0].between[0]'s side),
    /// frames from the second the uplink. `--inline eth1,eth2`. Needs a
    /// scenario of two hosts and one link (or --link) and no workloads.
    #[arg(long, value_name = "IFACE,IFACE", value_parser = parse_interface_pair)]
    pub inline: Option<[String; 2]>,
    /// Inline mode: attach even to an interface with this machine's
    /// default route or one of its global addresses.
    #[arg(long)]
    pub force_interface: bool,
    /// Replace the run already in --out (its files are removed first, as
    /// `squall sim --force` does); without it such a directory is refused
    /// before anything is started.
    #[arg(long)]
    pub force: bool,
    /// How to print the per-flow results (from the hosts' pcaps): an
    /// aligned `table`, or `json` / `csv` with plain numbers and the unit
    /// in each name, as `squall sim --format`.
    #[arg(long, value_enum, default_value_t = sim_cmd::Format::Table)]
    pub format: sim_cmd::Format,
    /// Shell mode: run this command on the mobile host (the second host of
    /// the first link) with SQUALL_PEER set to the fixed host's address; the
    /// run ends when it exits.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `A,B`: two interface names.
fn parse_interface_pair(s: &str) -> Result<[String; 2], String> {
    match s.split(',').map(str::trim).collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok([a.to_string(), b.to_string()]),
        _ => Err(format!("expected two interface names separated by a comma, like `eth1,eth2`; got `{s}`")),
    }
}

/// The emulated run's summary.json (squall_analysis::summary_file).
type EmuSummary = SummaryFile<RunSummary, crate::limits::FlowLimit, EmuKeys>;
type RunSummary = EmuRunSummary<squall_emu::dataplane::HostCounters, squall_emu::timing::TimingSummary>;

/// The keys of an emulated run's summary.json after `aggregate`.
#[derive(Serialize)]
struct EmuKeys {
    /// Departure-time error of the run (seed 000 §6).
    timing: squall_emu::timing::TimingSummary,
    emu: EmuDetails,
}

#[derive(Serialize)]
struct EmuDetails {
    run_id: u32,
    ended_by: EndReason,
    /// TUN offloads granted to the hosts (absent inline).
    offloads: Option<squall_emu::device::TunOffloads>,
    /// The outside host: its interface, device and the packets dropped
    /// for leaving elsewhere (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    outside: Option<squall_emu::uplink::OutsideReport>,
    /// `auto` or the fixed duration (what was chosen: timing.wakeup).
    early_wakeup: String,
    busy_poll: f64,
    /// What joined the hosts to squall (`--host-device`; absent inline).
    #[serde(skip_serializing_if = "Option::is_none")]
    host_device: Option<squall_emu::HostDevice>,
    /// Inline, what read and wrote the interfaces (`--inline-socket`).
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_socket: Option<squall_emu::inline::InlineSocket>,
    /// The CPU the data plane was pinned to (`--pin` or `--dataplane-cpu`),
    /// if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned_cpu: Option<usize>,
    workloads: Vec<CommandOutcome>,
    stale_removed: Vec<String>,
    /// Records written to the pcaps, events.csv and timing.csv.
    recorded: RecordCounts,
    /// Records dropped because the recording queue was full.
    capture_dropped: RecordCounts,
    /// Bytes of each packet kept in the pcaps.
    snaplen: u32,
    record_queue: usize,
    /// Peak resident set of squall (VmHWM) when the run ended, before the
    /// pcaps were analysed, kB.
    peak_rss_kb: Option<u64>,
}

/// Every command of the run, and the sysctls its TCP workloads need: the
/// scenario's workloads (squall_emu::workload::plan), with `--run`,
/// `--serve` and `--workload` after its `[[workload.commands]]` and the
/// shell-mode command last. `resolved` is where the resolved scenario will
/// be, for the UDP senders to read; `workload_dir` where the workloads'
/// files go (a web site).
fn commands(
    args: &EmuArgs,
    scenario: &Scenario,
    resolved: &Path,
    workload_dir: &Path,
) -> Result<(Vec<CommandSpec>, Sysctls)> {
    let mut given = Vec::new();
    for spec in &args.run {
        given.push(CommandSpec::parse(spec, false)?);
    }
    for spec in &args.serve {
        given.push(CommandSpec::parse(spec, true)?);
    }
    if let Some(file) = &args.workload {
        given.extend(WorkloadFile::load(file)?.commands);
    }
    let plan = WorkloadPlan::of(scenario, resolved, workload_dir, &mut |note| eprintln!("squall emu: {note}"))?;
    let mut out = plan.commands;
    out.extend(given);
    out.extend(plan.tcp);
    out.extend(plan.udp);
    if !args.command.is_empty() {
        let mobile = scenario.links.first().map(|l| l.between[1].clone()).context("the scenario has no link")?;
        let run = args.command.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ");
        out.push(CommandSpec { host: mobile, at: Duration::ZERO, run, background: false, interactive: true });
    }
    Ok((out, plan.sysctls))
}

pub fn run(args: EmuArgs) -> Result<ExitCode> {
    if !args.command.is_empty() && args.format != sim_cmd::Format::Table {
        anyhow::bail!(
            "--format prints the per-flow results on stdout, which shell mode (a command after --) leaves to the \
             command; read them from OUT/summary.json instead"
        );
    }
    let Loaded { source, mut scenario } = sim_cmd::load(&args.common, None)?;
    if args.common.link.is_some() {
        eprintln!("{}", squall_scenario::describe_netem_directions(&scenario, args.common.uplink.is_some()));
    }
    if let Some(d) = args.duration {
        scenario.duration = d;
    }
    for never in scenario.after_the_end() {
        eprintln!("squall emu: warning: {never}");
    }
    scenario.replications = 1;
    if let Some(why) = squall_scenario::record::refused_in_emulation(&scenario.record).first() {
        anyhow::bail!("{source}: {why}");
    }
    if !scenario.record.is_empty() && args.common.no_events {
        anyhow::bail!("{source}: [[record]] stage vectors are made from events.csv, which --no-events leaves out");
    }
    let out = args.common.out.clone().unwrap_or_else(|| PathBuf::from("out").join(format!("{}-emu", scenario.name)));
    let rep = out.join("rep-0");
    // Refused before the output directory is touched.
    if args.force_interface && scenario.inline.is_none() && args.inline.is_none() {
        anyhow::bail!(
            "--force-interface is for inline mode (--inline IFACE,IFACE or an [inline] table in the scenario)"
        );
    }
    // Refused or cleared before anything starts (no namespace, no command).
    crate::output::prepare_out_dir(&out, args.force)?;
    fs::create_dir_all(rep.join("workloads"))
        .with_context(|| format!("cannot create output directory {}", rep.display()))?;
    let (commands, sysctls) = commands(&args, &scenario, &out.join("scenario.toml"), &rep.join("workloads"))?;
    apply_sysctls(&sysctls, &mut scenario)?;
    ephemeral_port_sysctls(&mut scenario)?;
    // --inline names the interfaces of the scenario's [inline] table (or
    // makes one that carries every IP frame); the resolved scenario says
    // which were used.
    if let Some(interfaces) = &args.inline {
        let inline = scenario.inline.get_or_insert_with(|| squall_scenario::Inline {
            interfaces: interfaces.clone(),
            rules: Vec::new(),
            default: squall_scenario::InlineClass::Link,
            clients: Vec::new(),
        });
        inline.interfaces = interfaces.clone();
    }
    let resolved = toml::to_string(&scenario).context("cannot write the resolved scenario")?;
    crate::output::write_atomic(&out.join("scenario.toml"), &resolved)?;
    let tcp_limits = crate::limits::emu_tcp_limits(&scenario, |h| crate::limits::kernel_buffers(&scenario, h));
    for l in &tcp_limits {
        eprintln!("squall emu: tcp flow `{}` is {}", l.flow, l.limited_by.text);
    }

    let options = EmulationOptions {
        dataplane: DataplaneOptions {
            early_wakeup: args.early_wakeup,
            busy_poll: args.busy_poll,
            late_threshold: args.late_threshold,
            realtime_priority: args.realtime,
            cpu: args.dataplane_cpu,
        },
        recording: Some(RecordingOptions {
            dir: rep.clone(),
            events: !args.common.no_events,
            captures: !args.common.no_pcap,
            deliveries: !args.no_timing,
            // The model's samples of the classes `[[record]]` names.
            classes: !squall_scenario::record::class_stages(&scenario.record).is_empty(),
            snaplen: args.snaplen.unwrap_or(SNAPLEN),
            queue: args.record_queue,
            queue_bytes: DEFAULT_QUEUE_BYTES,
        }),
        stop_when_workloads_exit: commands.iter().any(|c| !c.background),
        commands,
        workload_dir: rep.join("workloads"),
        inline: scenario.inline.as_ref().map(|i| squall_emu::inline::InlineOptions {
            interfaces: i.interfaces.clone(),
            force: args.force_interface,
            socket: args.inline_socket.into(),
        }),
        mtu: args.mtu,
        offloads: !args.no_offloads,
        control: true,
        pin: args.pin,
        host_device: args.host_device.into(),
        announce: Some(format!(
            "squall emu: {} ({source}), run {}, up to {} s; `squall ctl status {}` while it runs",
            scenario.name,
            std::process::id(),
            scenario.duration.as_secs_f64(),
            std::process::id()
        )),
    };
    let signal = squall_emu::cleanup::stop_on_signals()?;
    let report = squall_emu::run(&scenario, options, signal).context("emulation failed")?;
    let peak_rss_kb = crate::bench_cmd::vm_hwm_kb();
    let shell = !args.command.is_empty();
    // A workload still running when the scenario's duration ends is
    // stopped with the run, as the simulator's flows are: said (before the
    // closing lines), not failed (a bulk transfer that cannot finish in
    // time is a result, not an error).
    let cut = |w: &&CommandOutcome| w.exit_code.is_none() && report.ended_by == EndReason::Duration;
    for w in report.workloads.iter().filter(|w| !w.background).filter(cut) {
        eprintln!("squall emu: `{}` on {} was still running at the end of the run and was stopped", w.run, w.host);
    }
    write_outputs(&out, &rep, &args, source, scenario, &report, peak_rss_kb)?;
    let failed =
        report.workloads.iter().filter(|w| !w.background && (!cut(w) || shell)).find(|w| w.exit_code != Some(0));
    Ok(match (shell, failed) {
        (true, Some(w)) => ExitCode::from(w.exit_code.unwrap_or(1).clamp(1, 255) as u8),
        (false, Some(w)) => {
            match w.exit_code {
                Some(code) => {
                    eprintln!("squall emu: `{}` on {} exited with status {code}", w.run, w.host);
                    if let Some((path, tail)) = w.stderr.as_deref().and_then(|p| Some((p, last_lines(p, 5)?))) {
                        eprintln!("squall emu: the end of its stderr ({}):", path.display());
                        for line in tail {
                            eprintln!("  {line}");
                        }
                    }
                }
                None => eprintln!(
                    "squall emu: `{}` on {} did not exit by itself: a signal ended it (or squall stopped it when the \
                     run ended)",
                    w.run, w.host
                ),
            }
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    })
}

/// The last `n` non-blank lines of the text file `path` (a failed
/// workload's stderr: wget's `ERROR 404: Not Found.`, iperf3's `error -
/// ...`), or `None` when it cannot be read or has none.
fn last_lines(path: &Path, n: usize) -> Option<Vec<String>> {
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail: Vec<String> = lines[lines.len().saturating_sub(n)..].iter().map(|l| l.to_string()).collect();
    (!tail.is_empty()).then_some(tail)
}

/// The run's summary.json (squall_analysis::summary_file): its flows from
/// the hosts' pcaps in `rep`, the stages' counters, the timing, and what
/// the emulator did (`emu`).
fn emu_summary(
    rep: &Path,
    args: &EmuArgs,
    source: String,
    scenario: Scenario,
    report: &EmulationReport,
    peak_rss_kb: Option<u64>,
) -> Result<EmuSummary> {
    let host_device = scenario.inline.is_none().then_some(args.host_device.into());
    let inline_socket = scenario.inline.is_some().then_some(args.inline_socket.into());
    let d: &DataplaneReport = &report.dataplane;
    let recording = &d.recording;
    // As said before the run started.
    let tcp_limits = crate::limits::emu_tcp_limits(&scenario, |h| crate::limits::kernel_buffers(&scenario, h));
    let stages: Vec<StageSummary> = d.stages.iter().map(stage_summary).collect();
    let hosts: Vec<squall_analysis::RunHost> = scenario
        .hosts
        .iter()
        .map(|h| squall_analysis::RunHost { name: h.name.clone(), addresses: h.addresses() })
        .collect();
    let flows = if args.common.no_pcap {
        Vec::new()
    } else {
        for h in &hosts {
            let pcap = rep.join(format!("{}.pcap", h.name));
            if let Ok(unparsed) = squall_analysis::capture::unparsed_records(&pcap)
                && let Some(first) = unparsed.first()
            {
                eprintln!(
                    "squall emu: warning: {}: {} record(s) are not IP packets (the first, {first}), left out of the flow table; \
                     a stage with error_mode = \"corrupt\" flips bits in IP headers too",
                    pcap.display(),
                    unparsed.len()
                );
            }
        }
        squall_analysis::analyse_run(rep, &hosts).with_context(|| format!("analysing {}", rep.display()))?
    };
    let mut aggregate = Aggregate::of_one_run(&flows, &stages);
    // The flows of `count` and `arrivals` entries, one row each (flows.csv),
    // and each entry's table by size bucket, as `squall sim` gives them.
    let (tcp_counts, count_flows) = crate::emu_flows::emu_count_flows(&scenario, 0, &flows, d.end.as_secs_f64());
    aggregate.tcp_count_buckets = squall_outputs::aggregate_buckets([tcp_counts.as_slice()]);
    let run = RunSummary {
        replication: 0,
        seed: scenario.seed,
        end: d.end.as_secs_f64(),
        flows,
        stages,
        hosts: report.host_names.iter().cloned().zip(d.hosts.iter().cloned()).collect(),
        timing: d.timing.clone(),
        tcp_counts,
        count_flows,
    };
    let summary = EmuSummary {
        squall_version: env!("CARGO_PKG_VERSION"),
        engine: "emu",
        scenario: scenario.name.clone(),
        source,
        seed: scenario.seed,
        replications: 1,
        resolved_scenario: scenario,
        tcp_limits,
        runs: vec![run],
        aggregate,
        engine_details: EmuKeys {
            timing: d.timing.clone(),
            emu: EmuDetails {
                run_id: report.id.0,
                ended_by: report.ended_by,
                offloads: report.offloads,
                outside: report.outside.clone(),
                early_wakeup: args.early_wakeup.to_string(),
                busy_poll: args.busy_poll.as_secs_f64(),
                host_device,
                inline_socket,
                pinned_cpu: report.dataplane_cpu,
                workloads: report.workloads.clone(),
                stale_removed: report.stale_removed.clone(),
                recorded: recording.written,
                capture_dropped: recording.dropped,
                snaplen: args.snaplen.unwrap_or(SNAPLEN),
                record_queue: args.record_queue,
                peak_rss_kb,
            },
        },
    };
    Ok(summary)
}

fn write_outputs(
    out: &Path,
    rep: &Path,
    args: &EmuArgs,
    source: String,
    scenario: Scenario,
    report: &EmulationReport,
    peak_rss_kb: Option<u64>,
) -> Result<()> {
    let d: &DataplaneReport = &report.dataplane;
    let recording = &d.recording;
    if let Some(e) = &recording.error {
        anyhow::bail!("recording failed: {e}");
    }
    if !scenario.record.is_empty() {
        stage_vectors(&scenario, rep, d.end)?;
    }
    let summary = emu_summary(rep, args, source, scenario, report, peak_rss_kb)?;
    crate::output::write_atomic(&out.join("summary.json"), serde_json::to_string_pretty(&summary)?)?;
    let count_flows = &summary.runs[0].count_flows;
    if !count_flows.is_empty() {
        let csv = squall_analysis::summary_file::count_flows_csv(count_flows);
        crate::output::write_atomic(&out.join("flows.csv"), csv)?;
    }
    // `squall run` and `squall compare` print their own tables. In shell
    // mode stdout is the command's own (as in Mahimahi's shells, scripts
    // read it), so the table stays in summary.json and stdout carries
    // nothing else.
    if !args.files_moved_by_parent && !summary.aggregate.flows.is_empty() {
        if args.command.is_empty() {
            print_flows(&summary.aggregate.flows, args.format);
        } else {
            eprintln!(
                "squall emu: per-flow results in {}/summary.json (shell mode leaves stdout to the command)",
                out.display()
            );
        }
    }
    let t = &d.timing;
    eprintln!(
        "squall emu: ended by {:?} at {:.3} s; {} deliveries, departure error p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us; {} late (> {} ms){}",
        report.ended_by,
        d.end.as_secs_f64(),
        t.deliveries,
        t.error_p50 * 1e6,
        t.error_p99 * 1e6,
        t.error_p999 * 1e6,
        t.error_max * 1e6,
        t.late,
        t.late_threshold * 1e3,
        if t.on_time { "" } else { " — RUN FLAGGED: timing was not kept" }
    );
    if let Some(cause) = t.late_causes.dominant() {
        let w = &t.wakeup;
        eprintln!(
            "squall emu: late mostly because {cause} ({} late: wake-up {}, preemption {}, slow write {}, busy {}); \
             this machine woke the data plane p50 {:.1} us, p99 {:.1} us, max {:.1} us after it asked, over {} sleeps \
             (early wake-up {}: {:.1} us at the end, {:.0} % of its spins lost to other threads, ceiling lowered {} \
             times); writes to the devices took p50 {:.1} us, p99 {:.1} us ({} over the threshold); `squall bench \
             timing` measures the machine",
            t.late,
            t.late_causes.wakeup_latency,
            t.late_causes.preemption,
            t.late_causes.slow_write,
            t.late_causes.overload,
            w.overshoot_p50 * 1e6,
            w.overshoot_p99 * 1e6,
            w.overshoot_max * 1e6,
            w.sleeps,
            w.mode,
            w.chosen * 1e6,
            w.spin_stolen_share * 100.0,
            w.ceiling_lowered,
            t.writes.p50 * 1e6,
            t.writes.p99 * 1e6,
            t.writes.slow
        );
    }
    let written: Vec<&str> = [
        (!args.common.no_events, "events.csv"),
        (!args.common.no_pcap, "HOST.pcap"),
        (!args.no_timing, "timing.csv"),
        (true, "workloads/"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if !args.files_moved_by_parent {
        let flows_csv = if summary.runs[0].count_flows.is_empty() { "" } else { ", flows.csv" };
        eprintln!("wrote {}/summary.json{flows_csv}, scenario.toml and rep-0/ ({})", out.display(), written.join(", "));
    }
    let dropped = recording.dropped;
    if dropped.total() > 0 {
        eprintln!(
            "squall emu: warning: the recording could not keep up; dropped {} packet records, {} events and {} timing rows \
             (summary.json emu.capture_dropped); forwarding was not affected — a larger --record-queue, --snaplen or \
             --no-events helps",
            dropped.packets, dropped.events, dropped.deliveries
        );
    }
    if d.hosts.iter().any(|h| !h.refused.is_empty()) {
        for (name, h) in report.host_names.iter().zip(&d.hosts) {
            if !h.refused.is_empty() {
                eprintln!("squall emu: not carried from {name}: {:?}", h.refused);
            }
        }
    }
    Ok(())
}

/// The per-flow results of the run (from the hosts' pcaps, squall-analysis
/// METRICS), as `squall sim` prints its own: an aligned table, or json /
/// csv with the unit in each column's name and plain numbers.
/// The `[[record]]` stage vectors of an emulated run, from its events.csv
/// (the data plane drives the same stage model, whose events the run
/// recorded) and, for a class, its classes.csv (the model's per-class
/// samples), streamed into rep-0/vectors.csv as `squall sim` writes them.
fn stage_vectors(scenario: &squall_scenario::Scenario, rep: &Path, end: squall_link::Instant) -> Result<()> {
    let events = rep.join("events.csv");
    let file = fs::File::open(&events).with_context(|| format!("cannot read {}", events.display()))?;
    let reader = squall_trace::EventLogReader::new(std::io::BufReader::new(file))
        .with_context(|| format!("cannot read {}", events.display()))?;
    let Some(mut vectors) = squall_sim::VectorWriter::create(rep, scenario).map_err(anyhow::Error::msg)? else {
        return Ok(());
    };
    let mut batch = Vec::with_capacity(4096);
    for e in reader {
        batch.push(e.with_context(|| format!("cannot read {}", events.display()))?);
        if batch.len() == batch.capacity() {
            vectors.events(&batch).map_err(anyhow::Error::msg)?;
            batch.clear();
        }
    }
    vectors.events(&batch).map_err(anyhow::Error::msg)?;
    // A class's vectors: from the model's own samples (classes.csv).
    let classes = rep.join("classes.csv");
    if classes.exists() {
        let file = fs::File::open(&classes).with_context(|| format!("cannot read {}", classes.display()))?;
        let reader = squall_trace::ClassLogReader::new(std::io::BufReader::new(file))
            .with_context(|| format!("cannot read {}", classes.display()))?;
        let mut samples = Vec::with_capacity(4096);
        for s in reader {
            samples.push(s.with_context(|| format!("cannot read {}", classes.display()))?);
            if samples.len() == samples.capacity() {
                vectors.class_samples(&samples).map_err(anyhow::Error::msg)?;
                samples.clear();
            }
        }
        vectors.class_samples(&samples).map_err(anyhow::Error::msg)?;
    }
    vectors.finish(end).map_err(anyhow::Error::msg)?;
    Ok(())
}

fn print_flows(flows: &BTreeMap<String, BTreeMap<String, Summary>>, format: sim_cmd::Format) {
    use crate::output::{Cell, Rows};
    let value = |m: &BTreeMap<String, Summary>, k: &str| m.get(k).map_or(f64::NAN, |x| x.mean);
    if format != sim_cmd::Format::Table {
        let mut columns = vec!["flow".to_string()];
        columns.extend(squall_analysis::report::METRICS.iter().map(|(k, _)| crate::output::metric_with_unit(k)));
        let mut rows = Rows { columns, rows: Vec::new() };
        for (name, m) in flows {
            let mut row = vec![Cell::from(name.as_str())];
            row.extend(squall_analysis::report::METRICS.iter().map(|(k, _)| Cell::Num(value(m, k))));
            rows.push(row);
        }
        rows.print(format);
        return;
    }
    crate::output::outln!("\nflows (one run; from the hosts' pcaps; docs/metrics.md defines each figure)");
    let mut table = vec![
        [
            "flow",
            "sent",
            "received",
            "dropped",
            "throughput (Mbit/s)",
            "delay mean (ms)",
            "RTT mean (ms)",
            "jitter RFC 3550 (ms)",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (name, m) in flows {
        let ms = |k: &str| format!("{:.1}", value(m, k) * 1e3);
        table.push(vec![
            name.clone(),
            format!("{:.0}", value(m, "sent_packets")),
            format!("{:.0}", value(m, "received_packets")),
            format!("{:.0}", value(m, "dropped")),
            format!("{:.3}", value(m, "throughput_bps") / 1e6),
            ms("delay_mean"),
            ms("rtt_mean"),
            ms("jitter_rfc3550"),
        ]);
    }
    sim_cmd::print_aligned(&table);
}
