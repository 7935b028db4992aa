//! `squall tool`: small traffic tools to run as workloads.

use std::fs;
use std::io::BufWriter;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use squall_emu::bulk::{self, ClientOptions};
use squall_link::Bytes;

use crate::output::outln;

#[derive(Args)]
pub struct ToolArgs {
    #[command(subcommand)]
    pub tool: Tool,
}

#[derive(Subcommand)]
pub enum Tool {
    /// Bulk TCP transfer: `--server`, or `--client ADDR --bytes N --cc reno`.
    /// The client prints one JSON line: elapsed time, goodput, final TCP_INFO.
    Bulk(BulkArgs),
    /// UDP datagrams for benchmarks: `--send ADDR --size 64 --seconds 3
    /// [--rate-bps R]`, or `--sink` (prints one JSON line: packets, pps, bps).
    Udp(UdpArgs),
    /// A scenario's `[[workload.udp]]` flow sent from real sockets: the
    /// packets the simulator sends for it with the same seed, at the same
    /// times from the tool's start (`squall emu` runs it for every flow).
    UdpFlow(UdpFlowArgs),
    /// Takes UDP datagrams on a port until stopped.
    UdpSink {
        #[arg(long)]
        port: u16,
    },
}

#[derive(Args)]
pub struct UdpFlowArgs {
    /// The scenario file (a run's resolved scenario.toml).
    #[arg(long)]
    pub scenario: PathBuf,
    /// The flow's `name` in [[workload.udp]].
    #[arg(long)]
    pub flow: String,
    /// The run's seed (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Args)]
pub struct UdpArgs {
    #[arg(long, conflicts_with = "send")]
    pub sink: bool,
    #[arg(long)]
    pub send: Option<Ipv4Addr>,
    /// IP packet size, bytes.
    #[arg(long, default_value_t = 1500)]
    pub size: usize,
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Pace to this IP bit rate (default: as fast as possible).
    #[arg(long)]
    pub rate_bps: Option<f64>,
}

#[derive(Args)]
pub struct BulkArgs {
    /// Serve transfers until killed.
    #[arg(long, conflicts_with = "client")]
    pub server: bool,
    /// With --server: exit after one transfer.
    #[arg(long, requires = "server")]
    pub once: bool,
    /// Send to this server (an IPv4 or IPv6 address; the server listens
    /// on both).
    #[arg(long)]
    pub client: Option<std::net::IpAddr>,
    #[arg(long, default_value_t = bulk::DEFAULT_PORT)]
    pub port: u16,
    /// How much to send: "20 KB", "5 MB", or a number of bytes.
    #[arg(long, default_value = "1 MB")]
    pub bytes: String,
    /// Instead of --bytes: send as fast as possible for this long ("10 s"),
    /// then close (a scenario's `bulk_for`).
    #[arg(long = "for", value_name = "DURATION", conflicts_with = "request")]
    pub for_time: Option<String>,
    /// Instead of --bytes: exchanges of a request of this size and a
    /// response of --response bytes (a scenario's `request_response`).
    #[arg(long, value_name = "BYTES", requires = "response")]
    pub request: Option<String>,
    /// The response's size, with --request.
    #[arg(long, value_name = "BYTES", requires = "request")]
    pub response: Option<String>,
    /// Exchanges, with --request.
    #[arg(long, default_value_t = 1, requires = "request")]
    pub count: u32,
    /// Pause between a response and the next request, with --request.
    #[arg(long, default_value = "0 s", requires = "request")]
    pub think: String,
    /// Congestion control (TCP_CONGESTION): reno, cubic, bbr, ...
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Write TCP_INFO samples (cwnd, ssthresh, rtt, rttvar, retransmits,
    /// delivery rate) to this CSV file.
    #[arg(long)]
    pub info_csv: Option<PathBuf>,
    /// TCP_INFO sampling interval, milliseconds.
    #[arg(long, default_value_t = 5)]
    pub interval_ms: u64,
    /// Give up connecting after this many seconds.
    #[arg(long, default_value_t = 10)]
    pub connect_timeout_s: u64,
    /// Largest segment announced and sent (TCP_MAXSEG), bytes.
    #[arg(long)]
    pub mss: Option<u32>,
    /// With --server: the largest window offered (TCP_WINDOW_CLAMP), bytes.
    #[arg(long, requires = "server")]
    pub window: Option<u32>,
}

pub fn run(args: ToolArgs) -> Result<ExitCode> {
    match args.tool {
        Tool::Bulk(b) => bulk_cmd(b),
        Tool::Udp(u) => udp_cmd(u),
        Tool::UdpFlow(f) => udp_flow_cmd(f),
        Tool::UdpSink { port } => {
            squall_emu::udp_flow::sink(port).with_context(|| format!("UDP sink on port {port}"))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn bulk_cmd(args: BulkArgs) -> Result<ExitCode> {
    if args.server {
        let options = bulk::ServerOptions { mss: args.mss, window: args.window };
        bulk::serve(args.port, args.once, options).with_context(|| format!("bulk server on port {}", args.port))?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(server) = args.client else { bail!("give --server, or --client ADDR") };
    let size = |key: &str, text: &str| -> Result<u64> {
        match text.trim().parse::<u64>() {
            Ok(n) => Ok(n),
            Err(_) => Ok(text.parse::<Bytes>().map_err(|e| anyhow::anyhow!("--{key}: {e}"))?.0),
        }
    };
    let time = |key: &str, text: &str| -> Result<std::time::Duration> {
        let d = text.parse::<squall_link::Duration>().map_err(|e| anyhow::anyhow!("--{key}: {e}"))?;
        Ok(std::time::Duration::from_nanos(d.as_nanos()))
    };
    let app = match (&args.for_time, &args.request, &args.response) {
        (Some(t), _, _) => bulk::App::For(time("for", t)?),
        (None, Some(request), Some(response)) => bulk::App::Exchanges {
            request: size("request", request)?,
            response: size("response", response)?,
            count: args.count,
            think: time("think", &args.think)?,
        },
        _ => bulk::App::Bytes(size("bytes", &args.bytes)?),
    };
    let options = ClientOptions {
        server,
        port: args.port,
        app,
        cc: args.cc.clone(),
        interval: if args.info_csv.is_some() {
            std::time::Duration::from_millis(args.interval_ms.max(1))
        } else {
            std::time::Duration::ZERO
        },
        connect_timeout: std::time::Duration::from_secs(args.connect_timeout_s),
        mss: args.mss,
    };
    let (result, samples) = bulk::send(&options).with_context(|| format!("bulk transfer to {server}:{}", args.port))?;
    if let Some(path) = &args.info_csv {
        let file = fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        bulk::write_samples_csv(BufWriter::new(file), &samples)?;
    }
    outln!("{}", serde_json::to_string(&result)?);
    Ok(ExitCode::SUCCESS)
}

fn udp_cmd(args: UdpArgs) -> Result<ExitCode> {
    use squall_emu::blast;
    if args.sink {
        let limit = std::time::Duration::from_secs_f64(args.seconds.max(1.0) + 30.0);
        let report = blast::sink(std::time::Duration::from_millis(500), limit).context("UDP sink")?;
        outln!("{}", serde_json::to_string(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(to) = args.send else { bail!("give --sink, or --send ADDR") };
    let sent =
        blast::send(to, args.size, args.seconds, args.rate_bps).with_context(|| format!("UDP sender to {to}"))?;
    outln!("{{\"sent\":{sent}}}");
    Ok(ExitCode::SUCCESS)
}

fn udp_flow_cmd(args: UdpFlowArgs) -> Result<ExitCode> {
    let scenario = squall_scenario::load(&args.scenario).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (index, flow) = scenario
        .workload
        .udp
        .iter()
        .enumerate()
        .find(|(_, f)| f.name == args.flow)
        .with_context(|| format!("{}: no [[workload.udp]] named `{}`", args.scenario.display(), args.flow))?;
    let what = format!("[[workload.udp]] `{}`", flow.name);
    let host = |name: &str| {
        scenario.hosts.iter().find(|h| h.name == name).with_context(|| format!("{what}: no host `{name}`"))
    };
    // The family the simulator sends it over: ip_version, else IPv6 when
    // both hosts have one.
    let (_, to) = squall_scenario::topology::flow_addresses(
        host(&flow.from)?.addresses(),
        host(&flow.to)?.addresses(),
        flow.ip_version,
    )
    .with_context(|| format!("{what}: `{}` and `{}` have no IP version in common", flow.from, flow.to))?;
    let (src_port, dst_port) =
        squall_scenario::ports::udp_ports(flow, index).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    let seed = args.seed.unwrap_or(scenario.seed);
    let end = squall_link::Instant::ZERO + scenario.duration;
    let mut arrivals = flow.arrival_process(seed, end).map_err(|e| anyhow::anyhow!("{e}"))?;
    let packets = std::iter::from_fn(move || arrivals.next_packet())
        .map(|(at, size)| (std::time::Duration::from_nanos((at - squall_link::Instant::ZERO).as_nanos()), size));
    let to = std::net::SocketAddr::new(to, dst_port);
    let report = squall_emu::udp_flow::send(to, src_port, flow.ecn, packets)
        .with_context(|| format!("{what}: sending to {to} from port {src_port}"))?;
    outln!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}
