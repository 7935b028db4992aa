//! TCP agents (seed 001 §3.2–3.3): a client that opens connections and runs
//! the flow's application, a server that accepts them, and a split-TCP
//! proxy on a forwarding host. Each wraps squall-tcp's sans-IO
//! [`Connection`]: segments travel beside the packets (the engine keeps the
//! header in its ledger), IP size = 40 + options + payload over IPv4, 60 +
//! options + payload over IPv6.
//!
//! Applications: bulk (N bytes, or for a time), request/response, and a web
//! page (objects one after another over one keep-alive connection or one
//! connection each). Receiving applications read at once or at a set rate
//! (the receive buffer then fills and the window closes).
//!
//! Corrupted packets (bit errors in "corrupt" mode) fail the TCP checksum
//! and are discarded by the receiving agent.

use std::net::IpAddr;
use std::sync::Arc;

use squall_link::{Bytes, FlowKey, Instant, Packet, PacketId, Protocol, Rate, Sampler};
use squall_tcp::{CcSnapshot, Connection, Segment, TcpConfig, TcpStats};

use crate::agent::{Agent, Ctx};
use crate::ids::{AgentId, TimerToken};
pub use crate::result::BUCKET_NS;
use crate::result::{DeliverySeries, TcpFlowResult, TcpSample, TcpSenderResult, TcpTrace};

/// What a flow's application does, resolved from the scenario.
#[derive(Clone, Debug)]
pub(crate) enum AppPlan {
    /// The client sends `bytes`, then closes.
    Bulk { bytes: u64 },
    /// The client sends until `stop`, then closes.
    BulkUntil { stop: Instant },
    /// `count` exchanges of `request` bytes answered by a response, in
    /// order; over persistent connections (`keep_alive`) or one each.
    Exchanges {
        count: u64,
        request: u64,
        response: ResponseSize,
        think: squall_link::Duration,
        keep_alive: bool,
        limits: ServerLimits,
    },
}

/// The web server's connection limits (Apache's `MaxKeepAliveRequests`,
/// `KeepAliveTimeout` and `Timeout`; seed 003 §3).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ServerLimits {
    /// Responses on one persistent connection before it is closed; 0: no
    /// limit.
    pub max_requests: u32,
    /// An idle persistent connection is closed this long after its last
    /// response.
    pub keep_alive_timeout: Option<squall_link::Duration>,
    /// A connection without progress (request bytes in, or its data
    /// acknowledged) for this long is abandoned: the server sends nothing
    /// more on it and ignores what arrives.
    pub server_timeout: Option<squall_link::Duration>,
}

/// The size of each response: one for all, or drawn per exchange.
#[derive(Clone, Debug)]
pub(crate) enum ResponseSize {
    Fixed(u64),
    /// Drawn in exchange order from a sampler that the client and the
    /// server each copy, so both see the same sizes.
    Drawn(Sampler<Bytes>),
    /// The files of a site, in order (cycled if there are more exchanges).
    Listed(Arc<[u64]>),
}

/// The exchanges of an [`AppPlan::Exchanges`] one at a time: memory does
/// not grow with `count`, whatever the scenario says.
#[derive(Clone, Debug)]
pub(crate) struct ExchangeSequence {
    left: u64,
    taken: u64,
    request: u64,
    response: ResponseSize,
}

impl ExchangeSequence {
    /// `None` unless the plan is one of exchanges.
    fn of(app: &AppPlan) -> Option<Self> {
        match app {
            AppPlan::Exchanges { count, request, response, .. } => {
                Some(ExchangeSequence { left: *count, taken: 0, request: *request, response: response.clone() })
            }
            _ => None,
        }
    }

    /// Exchanges not yet taken.
    fn left(&self) -> u64 {
        self.left
    }

    /// Request bytes of every exchange.
    fn request(&self) -> u64 {
        self.request
    }

    /// The next exchange: (request bytes, response bytes).
    fn take(&mut self) -> Option<(u64, u64)> {
        self.left = self.left.checked_sub(1)?;
        let response = match &mut self.response {
            ResponseSize::Fixed(n) => *n,
            ResponseSize::Drawn(sampler) => sampler.sample().0,
            ResponseSize::Listed(sizes) => {
                sizes.get((self.taken % sizes.len().max(1) as u64) as usize).copied().unwrap_or(0)
            }
        };
        self.taken += 1;
        Some((self.request, response))
    }
}

/// Everything the agents of one `[[workload.tcp]]` flow share.
#[derive(Debug)]
pub(crate) struct TcpPlan {
    pub index: usize,
    pub name: String,
    pub cc: &'static str,
    /// Configuration of the client's and the server's connections (one
    /// copy a flow, not three: 288 bytes less a flow).
    pub cfg: TcpConfig,
    /// Configuration of the proxy's connection towards the client when
    /// its receive buffer (the proxy buffer) differs; `None`: `cfg`.
    /// Boxed: a flow rarely has one, and a flow's plan stays small.
    pub proxy_buffer_cfg: Option<Box<TcpConfig>>,
    /// The timestamp clock phases (`TcpConfig::clock_phase`) of the
    /// client's, the server's and the proxy's hosts (`[[hosts]]`
    /// `clock_phase`); `cfg`'s own is unused.
    pub clocks: ClockPhases,
    pub app: AppPlan,
    pub start: Instant,
    pub client: IpAddr,
    pub server: IpAddr,
    /// The first connection's client port, the next ones' above it; `None`:
    /// each connection takes an ephemeral port of the client's host.
    pub client_port: Option<u16>,
    pub server_port: u16,
    /// The flow's server agent, when the server port is shared with other
    /// flows (`server_ports = "shared"`): each connection registers
    /// itself with the server's host as it opens, so that its packets
    /// reach this flow's server.
    pub shared_server: Option<AgentId>,
    pub drain: Option<Rate>,
    /// Metrics indices: client → server and server → client packets.
    pub up_flow: u32,
    pub down_flow: u32,
    pub record_traces: bool,
}

/// Where the timestamp clocks of a flow's hosts tick.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ClockPhases {
    pub client: squall_link::Duration,
    pub server: squall_link::Duration,
    /// Zero without a proxy.
    pub proxy: squall_link::Duration,
}

/// `config` on a host whose clock has `phase`.
fn on_clock(config: &TcpConfig, phase: squall_link::Duration) -> TcpConfig {
    TcpConfig { clock_phase: phase, ..config.clone() }
}

/// TCP variables are traced for this many connections of a flow at most
/// (the first): a web page without keep-alive would otherwise write a
/// file pair per object.
pub const TRACED_CONNECTIONS: usize = 8;

/// Samples a traced end keeps before a streamed run hands them on.
const TRACE_BATCH: usize = 4096;

impl TcpPlan {
    /// Whether connection `slot` of the flow has its variables traced.
    fn traced(&self, slot: usize) -> bool {
        self.record_traces && slot < TRACED_CONNECTIONS
    }

    fn key(&self, client_port: u16, towards_server: bool) -> FlowKey {
        if towards_server {
            FlowKey {
                protocol: Protocol::Tcp,
                src: self.client,
                dst: self.server,
                src_port: client_port,
                dst_port: self.server_port,
            }
        } else {
            FlowKey {
                protocol: Protocol::Tcp,
                src: self.server,
                dst: self.client,
                src_port: self.server_port,
                dst_port: client_port,
            }
        }
    }

    /// The main data direction goes from the client (bulk) or from the
    /// server (responses).
    pub fn client_is_source(&self) -> bool {
        !matches!(self.app, AppPlan::Exchanges { .. })
    }
}

/// Inter-arrival statistics of data segments at a receiver (exact sums).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Arrivals {
    pub count: u64,
    pub last: Option<Instant>,
    pub gaps: u64,
    pub sum: u128,
    pub squares: u128,
}

impl Arrivals {
    fn on_arrival(&mut self, now: Instant) {
        self.count += 1;
        if let Some(last) = self.last {
            let g = (now - last).as_nanos() as u128;
            self.gaps += 1;
            self.sum += g;
            self.squares += g * g;
        }
        self.last = Some(now);
    }
    fn merge(&mut self, o: &Arrivals) {
        self.count += o.count;
        self.gaps += o.gaps;
        self.sum += o.sum;
        self.squares += o.squares;
    }
}

/// One connection end inside an agent.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub conn: Connection,
    /// Key of the packets this end sends.
    key: FlowKey,
    flow: u32,
    /// Token of the connection's timer; `token + 1` is the read timer.
    token: u64,
    armed: Option<Instant>,
    read_armed: Option<Instant>,
    drain: Option<Rate>,
    read_credit: f64,
    last_read: Instant,
    /// Bytes read by the application.
    pub read_total: u64,
    pub arrivals: Arrivals,
    pub corrupted: u64,
    trace: Option<TcpTrace>,
    last_snapshot: Option<CcSnapshot>,
    /// Delivered (in-order) bytes per 100 ms bucket.
    pub delivered: DeliverySeries,
    /// The ephemeral port this end holds, given back once the connection
    /// is closed (after TIME-WAIT).
    ephemeral: Option<u16>,
}

impl Endpoint {
    #[allow(clippy::too_many_arguments)]
    fn new(
        conn: Connection,
        key: FlowKey,
        flow: u32,
        token: u64,
        drain: Option<Rate>,
        trace: Option<(&str, u32, &'static str)>,
        now: Instant,
    ) -> Self {
        Endpoint {
            conn,
            key,
            flow,
            token,
            armed: None,
            read_armed: None,
            drain,
            read_credit: 0.0,
            last_read: now,
            read_total: 0,
            arrivals: Arrivals::default(),
            corrupted: 0,
            trace: trace.map(|(flow, connection, endpoint)| TcpTrace {
                flow: flow.to_string(),
                connection,
                endpoint,
                samples: Vec::new(),
                handed: 0,
            }),
            last_snapshot: None,
            delivered: DeliverySeries::default(),
            ephemeral: None,
        }
    }

    /// A segment arrived. Returns false if it was discarded (corrupted).
    fn on_segment(&mut self, now: Instant, packet: &Packet, seg: &Segment) -> bool {
        if packet.corrupted {
            self.corrupted += 1;
            return false;
        }
        let before = self.conn.received_total();
        self.conn.handle_segment(now, seg);
        if seg.len > 0 {
            self.arrivals.on_arrival(now);
        }
        let gained = self.conn.received_total() - before;
        if gained > 0 {
            self.delivered.add(now, gained);
        }
        true
    }

    /// The application reads what it may now.
    fn read(&mut self, now: Instant, ctx: &mut Ctx<'_>) -> u64 {
        let readable = self.conn.readable();
        let n = match self.drain {
            None => self.conn.read(readable),
            Some(rate) => {
                let bytes_per_sec = rate.bits_per_sec() as f64 / 8.0;
                let burst = self.conn.send_mss().max(1) as f64;
                self.read_credit = (self.read_credit + (now - self.last_read).as_secs_f64() * bytes_per_sec).min(burst);
                self.last_read = now;
                let n = self.conn.read((self.read_credit.floor() as u64).min(readable));
                self.read_credit -= n as f64;
                let left = self.conn.readable();
                if left > 0 {
                    let want = (left as f64).min(burst) - self.read_credit;
                    let at = now + squall_link::Duration::from_secs_f64(want.max(1.0) / bytes_per_sec);
                    if self.read_armed.is_none_or(|t| t > at || t <= now) {
                        ctx.set_timer(TimerToken(self.token + 1), at);
                        self.read_armed = Some(at);
                    }
                }
                n
            }
        };
        self.read_total += n;
        n
    }

    /// Sends every segment the connection has, records the trace, and
    /// arms its timer (lazily: a later deadline keeps the armed one, which
    /// then fires early and harmlessly).
    fn flush(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        while let Some(seg) = self.conn.poll_transmit(now) {
            // squall-tcp counts an IPv4 header; an IPv6 one is 20 bytes
            // longer (RFC 8200 §3).
            let size = seg.ip_size() + self.key.ip_header_len() - squall_tcp::IP_HEADER_LEN;
            let packet = Packet::new(PacketId(0), size, self.key);
            // The engine checked the route when it built the run.
            let _ = ctx.send_tcp(packet, seg, self.flow);
        }
        if let Some(trace) = &mut self.trace {
            let snap = self.conn.snapshot();
            if self.last_snapshot != Some(snap) {
                self.last_snapshot = Some(snap);
                trace.samples.push(TcpSample {
                    time: now,
                    cwnd: snap.cwnd,
                    ssthresh: snap.ssthresh,
                    srtt: snap.srtt.map_or(0, |d| d.as_nanos()),
                    rttvar: snap.rttvar.as_nanos(),
                    rto: snap.rto.as_nanos(),
                    in_flight: snap.in_flight,
                    acked: self.conn.acked_total(),
                    delivery_rate: self.conn.delivery_rate().map(|r| r.round() as u64),
                });
                // A streamed run hands the samples on in batches, once the
                // end has sent data (an end that never does has no file).
                if trace.samples.len() >= TRACE_BATCH && self.conn.stats().data_segments_sent > 0 {
                    ctx.tcp_samples(trace);
                }
            }
        }
        if let Some(at) = self.conn.poll_timeout()
            && self.armed.is_none_or(|t| at < t)
        {
            ctx.set_timer(TimerToken(self.token), at);
            self.armed = Some(at);
        }
    }

    /// Timer `token` of this endpoint fired.
    fn on_timer(&mut self, now: Instant, token: u64, ctx: &mut Ctx<'_>) {
        if token == self.token {
            self.armed = None;
            self.conn.handle_timeout(now);
        } else {
            self.read_armed = None;
            self.read(now, ctx);
        }
    }

    fn take_trace(&mut self) -> Option<TcpTrace> {
        let sent = self.conn.stats().data_segments_sent > 0;
        self.trace.take().filter(|t| (!t.samples.is_empty() || t.handed > 0) && sent)
    }
}

/// What one agent contributes to its flow's results.
#[derive(Debug, Default)]
pub(crate) struct TcpPart {
    pub connections: u32,
    /// Stats of the ends sending the main direction (the source) and of
    /// the other ends; the proxy's two halves separately.
    pub source: Vec<TcpStats>,
    pub sink: Vec<TcpStats>,
    pub proxy: Vec<TcpStats>,
    /// Receiver-side measures of the main direction.
    pub arrivals: Arrivals,
    pub delivered_bytes: u64,
    pub delivered: DeliverySeries,
    pub corrupted: u64,
    pub done_at: Option<Instant>,
    pub traces: Vec<TcpTrace>,
}

impl TcpPart {
    /// Adds one connection end: its stats as the source's or the sink's
    /// (with the receiver-side measures), its corrupted count and trace.
    fn add_end(&mut self, e: &mut Endpoint, source: bool) {
        let stats = e.conn.stats().clone();
        if source {
            self.source.push(stats);
        } else {
            self.sink.push(stats);
            self.arrivals.merge(&e.arrivals);
            self.delivered_bytes += e.conn.received_total();
            self.delivered.merge(&e.delivered);
        }
        self.corrupted += e.corrupted;
        self.traces.extend(e.take_trace());
    }
}

/// The newest connection slot whose port is `offset` above the flow's
/// first client port, among `slots`: ports wrap after 65 536 connections
/// (a web page of more objects without keep-alive), and the newest user
/// of a port is the one its packets are for.
fn newest_slot(offset: u16, slots: usize) -> Option<usize> {
    const PORTS: usize = 1 << 16;
    let first = usize::from(offset);
    (first < slots).then(|| first + (slots - 1 - first) / PORTS * PORTS)
}

/// Tokens: each connection slot `i` has 2·i (TCP timer) and 2·i + 1 (read
/// timer); application timers are above `APP_TIMER`.
const APP_TIMER: u64 = 1 << 40;

// ----------------------------------------------------------------------
// Client
// ----------------------------------------------------------------------

/// The client of a flow: opens the connection(s) and runs the application.
#[derive(Debug)]
pub struct TcpClient {
    plan: Arc<TcpPlan>,
    conns: Vec<Endpoint>,
    /// Exchanges still to request, and response bytes still expected.
    exchanges: Option<ExchangeSequence>,
    awaiting: u64,
    /// The exchange in progress: its request bytes and the response bytes
    /// received so far.
    request: u64,
    received: u64,
    /// Requests sent on the newest connection.
    on_connection: u32,
    done_at: Option<Instant>,
}

impl TcpClient {
    pub(crate) fn new(plan: Arc<TcpPlan>) -> Self {
        let exchanges = ExchangeSequence::of(&plan.app);
        TcpClient {
            plan,
            conns: Vec::new(),
            exchanges,
            awaiting: 0,
            request: 0,
            received: 0,
            on_connection: 0,
            done_at: None,
        }
    }

    /// Opens the flow's next connection; `None` if its host has no port
    /// free (the run then ends with that error).
    fn open(&mut self, now: Instant, ctx: &mut Ctx<'_>) -> Option<usize> {
        let slot = self.conns.len();
        let port = match self.plan.client_port {
            Some(first) => {
                let port = first.wrapping_add(slot as u16);
                // A port still bound by an earlier flow's agent only loses
                // this connection's packets; the scenario check keeps
                // flows apart.
                let _ = ctx.bind(Protocol::Tcp, port);
                port
            }
            None => {
                let port = ctx.connect_port(&self.plan.name)?;
                if let Some(server) = self.plan.shared_server {
                    ctx.accept_at(self.plan.server, self.plan.server_port, port, server);
                }
                if slot == 0 {
                    ctx.set_client_port(self.plan.up_flow, self.plan.down_flow, port);
                }
                port
            }
        };
        let conn = Connection::connect(on_clock(&self.plan.cfg, self.plan.clocks.client), now);
        let trace = self.plan.traced(slot).then_some((self.plan.name.as_str(), slot as u32, "client"));
        let key = self.plan.key(port, true);
        let mut end = Endpoint::new(conn, key, self.plan.up_flow, 2 * slot as u64, self.plan.drain, trace, now);
        end.ephemeral = self.plan.client_port.is_none().then_some(port);
        self.conns.push(end);
        Some(slot)
    }

    /// Sends the next request: on the newest connection while it may
    /// carry more (keep-alive, under the server's request limit, not
    /// closed by the server), otherwise on a new one.
    fn request_next(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let Some((request, response)) = self.exchanges.as_mut().and_then(ExchangeSequence::take) else { return };
        self.awaiting = response;
        self.request = request;
        self.received = 0;
        self.send_request(now, ctx);
    }

    /// Sends the current request, on the newest connection if it may take
    /// it. Called again when the server closed the connection before
    /// answering (wget retries on a new connection).
    fn send_request(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let AppPlan::Exchanges { keep_alive, limits, .. } = self.plan.app else { return };
        let reusable = self.conns.last().is_some_and(|e| {
            keep_alive
                && !e.conn.peer_closed()
                && !e.conn.is_closed()
                && (limits.max_requests == 0 || self.on_connection < limits.max_requests)
        });
        let slot = if reusable {
            self.conns.len() - 1
        } else {
            self.on_connection = 0;
            let Some(slot) = self.open(now, ctx) else { return };
            slot
        };
        self.on_connection += 1;
        let e = &mut self.conns[slot];
        let _ = e.conn.send(self.request);
        e.flush(now, ctx);
    }

    fn step(&mut self, now: Instant, slot: usize, ctx: &mut Ctx<'_>) {
        let newest = slot + 1 == self.conns.len();
        let e = &mut self.conns[slot];
        let got = e.read(now, ctx);
        let mut next = false;
        let mut retry = false;
        if let AppPlan::Exchanges { think, keep_alive, limits, .. } = &self.plan.app
            && got > 0
            && self.awaiting > 0
        {
            self.awaiting = self.awaiting.saturating_sub(got);
            self.received += got;
            if self.awaiting == 0 {
                let last = self.exchanges.as_ref().is_none_or(|x| x.left() == 0);
                let spent = limits.max_requests > 0 && self.on_connection >= limits.max_requests;
                if !*keep_alive || last || spent {
                    e.conn.close();
                }
                if last {
                    self.done_at.get_or_insert(now);
                } else if think.is_zero() {
                    next = true;
                } else {
                    ctx.set_timer(TimerToken(APP_TIMER + 1), now + *think);
                }
            }
        }
        if e.conn.peer_closed() {
            e.conn.close();
            // The server closed the newest connection (its keep-alive
            // timeout) before any of the awaited response came: ask again
            // on a new connection, as wget does.
            retry = newest && self.awaiting > 0 && self.received == 0 && !next;
        }
        e.flush(now, ctx);
        if e.conn.is_closed()
            && let Some(port) = e.ephemeral.take()
        {
            ctx.release_port(port);
            if let Some(server) = self.plan.shared_server {
                ctx.forget_at(self.plan.server, self.plan.server_port, port, server);
            }
        }
        if next {
            self.request_next(now, ctx);
        } else if retry {
            self.send_request(now, ctx);
        }
    }

    pub(crate) fn finish(&mut self) -> TcpPart {
        let source = self.plan.client_is_source();
        let mut part = TcpPart { connections: self.conns.len() as u32, done_at: self.done_at, ..Default::default() };
        for e in &mut self.conns {
            part.add_end(e, source);
        }
        part
    }
}

impl Agent for TcpClient {
    fn start(&mut self, _now: Instant, ctx: &mut Ctx<'_>) {
        ctx.set_timer(TimerToken(APP_TIMER), self.plan.start);
    }

    fn on_packet(&mut self, now: Instant, packet: Packet, tcp: Option<Segment>, ctx: &mut Ctx<'_>) {
        let Some(seg) = tcp else { return };
        let port = packet.flow.dst_port;
        let slot = match self.plan.client_port {
            Some(first) => newest_slot(port.wrapping_sub(first), self.conns.len()),
            // The newest connection with the port (an older one closed
            // and gave it back).
            None => self.conns.iter().rposition(|e| e.key.src_port == port),
        };
        let Some(slot) = slot else {
            return;
        };
        if self.conns[slot].on_segment(now, &packet, &seg) {
            self.step(now, slot, ctx);
        }
    }

    fn on_timer(&mut self, now: Instant, token: TimerToken, ctx: &mut Ctx<'_>) {
        match token.0 {
            APP_TIMER => match self.plan.app {
                AppPlan::Bulk { bytes } => {
                    let Some(slot) = self.open(now, ctx) else { return };
                    let e = &mut self.conns[slot];
                    let _ = e.conn.send(bytes);
                    e.conn.close();
                    e.flush(now, ctx);
                }
                AppPlan::BulkUntil { stop } => {
                    let Some(slot) = self.open(now, ctx) else { return };
                    let e = &mut self.conns[slot];
                    let _ = e.conn.send(1 << 50);
                    e.flush(now, ctx);
                    ctx.set_timer(TimerToken(APP_TIMER + 2), stop);
                }
                AppPlan::Exchanges { .. } => self.request_next(now, ctx),
            },
            t if t == APP_TIMER + 1 => self.request_next(now, ctx),
            t if t == APP_TIMER + 2 => {
                if let Some(e) = self.conns.first_mut() {
                    e.conn.discard_unsent();
                    e.conn.close();
                    e.flush(now, ctx);
                }
            }
            t => {
                let slot = (t / 2) as usize;
                if let Some(e) = self.conns.get_mut(slot) {
                    e.on_timer(now, t, ctx);
                    self.step(now, slot, ctx);
                }
            }
        }
    }
}

// ----------------------------------------------------------------------
// Server
// ----------------------------------------------------------------------

#[derive(Debug)]
struct ServerConn {
    client_port: u16,
    end: Endpoint,
    /// Request bytes read and not yet answered.
    pending: u64,
    /// Responses sent on this connection.
    answered: u32,
    /// The server closed the connection (request limit or keep-alive
    /// timeout): requests that still arrive are not answered.
    closing: bool,
    /// The server timeout passed without progress: nothing more is sent
    /// or handled on this connection.
    abandoned: bool,
    /// Last progress (request bytes in, data acknowledged) and the counts
    /// that tell it.
    progress_at: Instant,
    progress: (u64, u64),
    /// When the last response was sent, and the request bytes received by
    /// then: the keep-alive timeout runs from there until the next request.
    last_answer: (Instant, u64),
}

impl ServerConn {
    /// Request bytes received and bytes of the responses acknowledged.
    fn progress_counts(&self) -> (u64, u64) {
        (self.end.conn.received_total(), self.end.conn.stats().bytes_acked)
    }
}

/// The server of a flow: accepts connections on the flow's port.
#[derive(Debug)]
pub struct TcpServer {
    plan: Arc<TcpPlan>,
    conns: Vec<ServerConn>,
    /// Exchanges still to answer (counted over all connections).
    exchanges: Option<ExchangeSequence>,
    done_at: Option<Instant>,
}

impl TcpServer {
    pub(crate) fn new(plan: Arc<TcpPlan>) -> Self {
        let exchanges = ExchangeSequence::of(&plan.app);
        TcpServer { plan, conns: Vec::new(), exchanges, done_at: None }
    }

    fn step(&mut self, now: Instant, slot: usize, ctx: &mut Ctx<'_>) {
        let c = &mut self.conns[slot];
        if c.abandoned {
            return;
        }
        let got = c.end.read(now, ctx);
        let counts = c.progress_counts();
        if counts != c.progress {
            c.progress = counts;
            c.progress_at = now;
        }
        match &self.plan.app {
            AppPlan::Exchanges { keep_alive, limits, .. } => {
                c.pending += got;
                if c.closing {
                    c.pending = 0;
                }
                let mut answered = false;
                if let Some(exchanges) = &mut self.exchanges {
                    while exchanges.left() > 0 && c.pending >= exchanges.request() && !c.closing {
                        let Some((request, response)) = exchanges.take() else { break };
                        c.pending -= request;
                        let _ = c.end.conn.send(response);
                        c.answered += 1;
                        answered = true;
                        // Apache closes after the last response it allows
                        // on a connection ("Connection: close").
                        if !*keep_alive || (limits.max_requests > 0 && c.answered >= limits.max_requests) {
                            c.closing = true;
                            c.end.conn.close();
                        }
                    }
                }
                if answered {
                    c.last_answer = (now, c.end.conn.received_total());
                }
                if answered
                    && !c.closing
                    && let Some(idle) = limits.keep_alive_timeout
                {
                    ctx.set_timer(TimerToken(APP_TIMER + 2 * slot as u64), now + idle);
                }
            }
            AppPlan::Bulk { bytes } => {
                if c.end.conn.received_total() >= *bytes {
                    self.done_at.get_or_insert(now);
                }
            }
            AppPlan::BulkUntil { .. } => {
                if c.end.conn.peer_closed() {
                    self.done_at.get_or_insert(now);
                }
            }
        }
        if c.end.conn.peer_closed() {
            c.end.conn.close();
        }
        c.end.flush(now, ctx);
    }

    /// The keep-alive timeout or the server timeout of connection `slot`.
    fn on_limit_timer(&mut self, now: Instant, slot: usize, server_timeout: bool, ctx: &mut Ctx<'_>) {
        let AppPlan::Exchanges { limits, .. } = self.plan.app else { return };
        let Some(c) = self.conns.get_mut(slot) else { return };
        if c.abandoned || c.end.conn.is_closed() {
            return;
        }
        if server_timeout {
            let Some(limit) = limits.server_timeout else { return };
            let counts = c.progress_counts();
            if counts != c.progress {
                c.progress = counts;
                c.progress_at = now;
            }
            if now - c.progress_at >= limit {
                c.abandoned = true;
            } else {
                ctx.set_timer(TimerToken(APP_TIMER + 2 * slot as u64 + 1), c.progress_at + limit);
            }
            return;
        }
        // Keep-alive timeout: close unless a request came since the
        // response that armed it (the newest arming decides).
        let Some(idle) = limits.keep_alive_timeout else { return };
        let (answered_at, received) = c.last_answer;
        if c.closing || now < answered_at + idle || c.end.conn.received_total() > received {
            return;
        }
        c.closing = true;
        c.end.conn.close();
        c.end.flush(now, ctx);
    }

    pub(crate) fn finish(&mut self) -> TcpPart {
        let source = !self.plan.client_is_source();
        let mut part = TcpPart { connections: 0, done_at: self.done_at, ..Default::default() };
        for c in &mut self.conns {
            part.add_end(&mut c.end, source);
        }
        part
    }
}

impl Agent for TcpServer {
    fn start(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn on_packet(&mut self, now: Instant, packet: Packet, tcp: Option<Segment>, ctx: &mut Ctx<'_>) {
        let Some(seg) = tcp else { return };
        let port = packet.flow.src_port;
        let slot = match self.conns.iter().position(|c| c.client_port == port && !c.end.conn.is_closed()) {
            Some(s) => s,
            None if seg.syn() && !seg.has_ack() && !packet.corrupted => {
                let slot = self.conns.len();
                let conn = Connection::listen(on_clock(&self.plan.cfg, self.plan.clocks.server));
                let trace = self.plan.traced(slot).then_some((self.plan.name.as_str(), slot as u32, "server"));
                let key = self.plan.key(port, false);
                let end = Endpoint::new(conn, key, self.plan.down_flow, 2 * slot as u64, self.plan.drain, trace, now);
                self.conns.push(ServerConn {
                    client_port: port,
                    end,
                    pending: 0,
                    answered: 0,
                    closing: false,
                    abandoned: false,
                    progress_at: now,
                    progress: (0, 0),
                    last_answer: (now, 0),
                });
                if let AppPlan::Exchanges { limits: ServerLimits { server_timeout: Some(t), .. }, .. } = self.plan.app {
                    ctx.set_timer(TimerToken(APP_TIMER + 2 * slot as u64 + 1), now + t);
                }
                slot
            }
            None => return,
        };
        if self.conns[slot].abandoned {
            return;
        }
        if self.conns[slot].end.on_segment(now, &packet, &seg) {
            self.step(now, slot, ctx);
        }
    }

    fn on_timer(&mut self, now: Instant, token: TimerToken, ctx: &mut Ctx<'_>) {
        if token.0 >= APP_TIMER {
            let slot = ((token.0 - APP_TIMER) / 2) as usize;
            let server_timeout = token.0 % 2 == 1;
            self.on_limit_timer(now, slot, server_timeout, ctx);
            return;
        }
        let slot = (token.0 / 2) as usize;
        if let Some(c) = self.conns.get_mut(slot)
            && !c.abandoned
        {
            c.end.on_timer(now, token.0, ctx);
            self.step(now, slot, ctx);
        }
    }
}

// ----------------------------------------------------------------------
// Split-TCP proxy (seed 001 §3.3)
// ----------------------------------------------------------------------

/// One split connection: the half towards the client ("wired", where the
/// proxy plays the server) and the half towards the server ("wireless",
/// where it plays the client, with the client's address: transparent).
#[derive(Debug)]
struct Split {
    client_port: u16,
    wired: Endpoint,
    wireless: Endpoint,
    /// Bytes handed on in each direction, and bytes freed from the receive
    /// buffer they came from (only once the far end acknowledged them).
    up_forwarded: u64,
    up_freed: u64,
    down_forwarded: u64,
    down_freed: u64,
}

/// A split-TCP proxy on a forwarding host (base station): terminates the
/// client's connection, opens its own towards the server, and relays the
/// data through a buffer of set size. Data leaves the buffer only when the
/// far end acknowledges it (seed 001 §3.3), so the client's connection
/// sees the buffer as its receive window.
#[derive(Debug)]
pub struct TcpProxy {
    plan: Arc<TcpPlan>,
    splits: Vec<Split>,
}

impl TcpProxy {
    pub(crate) fn new(plan: Arc<TcpPlan>) -> Self {
        TcpProxy { plan, splits: Vec::new() }
    }

    fn relay(&mut self, now: Instant, slot: usize, ctx: &mut Ctx<'_>) {
        let s = &mut self.splits[slot];
        // Client → server: what the wired half received goes on; the wired
        // receive buffer is freed as the server acknowledges.
        let up = s.wired.conn.received_total();
        if up > s.up_forwarded && s.wireless.conn.send(up - s.up_forwarded).is_ok() {
            s.up_forwarded = up;
        }
        let acked = s.wireless.conn.stats().bytes_acked;
        if acked > s.up_freed {
            s.up_freed += s.wired.conn.read(acked - s.up_freed);
        }
        // Server → client, the same the other way.
        let down = s.wireless.conn.received_total();
        if down > s.down_forwarded && s.wired.conn.send(down - s.down_forwarded).is_ok() {
            s.down_forwarded = down;
        }
        let acked = s.wired.conn.stats().bytes_acked;
        if acked > s.down_freed {
            s.down_freed += s.wireless.conn.read(acked - s.down_freed);
        }
        // A FIN goes on once everything before it has been handed on.
        if s.wired.conn.peer_closed() && s.up_forwarded == up {
            s.wireless.conn.close();
        }
        if s.wireless.conn.peer_closed() && s.down_forwarded == down {
            s.wired.conn.close();
        }
        s.wired.flush(now, ctx);
        s.wireless.flush(now, ctx);
    }

    pub(crate) fn finish(&mut self) -> TcpPart {
        let mut part = TcpPart::default();
        for s in &mut self.splits {
            for e in [&mut s.wired, &mut s.wireless] {
                part.proxy.push(e.conn.stats().clone());
                part.corrupted += e.corrupted;
                part.traces.extend(e.take_trace());
            }
        }
        part
    }
}

impl Agent for TcpProxy {
    fn start(&mut self, _now: Instant, ctx: &mut Ctx<'_>) {
        // The engine checked the port is free.
        let _ = ctx.intercept(Protocol::Tcp, self.plan.server_port);
    }

    fn on_packet(&mut self, now: Instant, packet: Packet, tcp: Option<Segment>, ctx: &mut Ctx<'_>) {
        let Some(seg) = tcp else { return };
        let from_client = packet.flow.dst_port == self.plan.server_port && packet.flow.dst == self.plan.server;
        let client_port = if from_client { packet.flow.src_port } else { packet.flow.dst_port };
        let slot = match self.splits.iter().position(|s| s.client_port == client_port && !s.wired.conn.is_closed()) {
            Some(s) => s,
            None if from_client && seg.syn() && !seg.has_ack() && !packet.corrupted => {
                let slot = self.splits.len();
                let p = &self.plan;
                let trace = |end| p.traced(slot).then_some((p.name.as_str(), slot as u32, end));
                let wired = Endpoint::new(
                    Connection::listen(on_clock(p.proxy_buffer_cfg.as_deref().unwrap_or(&p.cfg), p.clocks.proxy)),
                    p.key(client_port, false),
                    p.down_flow,
                    4 * slot as u64,
                    None,
                    trace("proxy-wired"),
                    now,
                );
                let wireless = Endpoint::new(
                    Connection::connect(on_clock(&p.cfg, p.clocks.proxy), now),
                    p.key(client_port, true),
                    p.up_flow,
                    4 * slot as u64 + 2,
                    None,
                    trace("proxy-wireless"),
                    now,
                );
                self.splits.push(Split {
                    client_port,
                    wired,
                    wireless,
                    up_forwarded: 0,
                    up_freed: 0,
                    down_forwarded: 0,
                    down_freed: 0,
                });
                slot
            }
            None => return,
        };
        let s = &mut self.splits[slot];
        let end = if from_client { &mut s.wired } else { &mut s.wireless };
        if end.on_segment(now, &packet, &seg) {
            self.relay(now, slot, ctx);
        }
    }

    fn on_timer(&mut self, now: Instant, token: TimerToken, ctx: &mut Ctx<'_>) {
        let slot = (token.0 / 4) as usize;
        let Some(s) = self.splits.get_mut(slot) else { return };
        if token.0 % 4 < 2 {
            s.wired.on_timer(now, token.0, ctx);
        } else {
            s.wireless.on_timer(now, token.0, ctx);
        }
        self.relay(now, slot, ctx);
    }
}

impl TcpClient {
    pub(crate) fn flow_index(&self) -> usize {
        self.plan.index
    }
    /// The application finished (the last response is in).
    pub(crate) fn is_done(&self) -> bool {
        self.done_at.is_some()
    }
}
impl TcpServer {
    pub(crate) fn flow_index(&self) -> usize {
        self.plan.index
    }
    /// The application finished (a bulk transfer is all in).
    pub(crate) fn is_done(&self) -> bool {
        self.done_at.is_some()
    }
}
impl TcpProxy {
    pub(crate) fn flow_index(&self) -> usize {
        self.plan.index
    }
}

fn sender_result(ends: &[TcpStats]) -> TcpSenderResult {
    let mut r = TcpSenderResult::default();
    let (mut delay_sum, mut acked_segments) = (0u128, 0u64);
    for s in ends {
        r.data_segments_sent += s.data_segments_sent;
        r.data_bytes_sent += s.data_bytes_sent;
        r.retransmitted_segments += s.retransmitted_segments;
        r.timeouts += s.timeouts;
        r.fast_retransmits += s.fast_retransmits;
        r.bytes_acked += s.bytes_acked;
        delay_sum += s.ack_delay_sum_ns;
        acked_segments += s.acked_segments;
    }
    r.goodput = if r.data_bytes_sent == 0 { 0.0 } else { r.bytes_acked as f64 / r.data_bytes_sent as f64 };
    r.packet_delay_mean = if acked_segments == 0 { 0.0 } else { delay_sum as f64 / acked_segments as f64 / 1e9 };
    r
}

/// A flow's results from the parts its agents gathered; `end` is the end
/// of the run.
pub(crate) fn flow_result(plan: &TcpPlan, parts: Vec<TcpPart>, end: Instant) -> (TcpFlowResult, Vec<TcpTrace>) {
    let mut all = TcpPart::default();
    let mut has_proxy = false;
    for p in parts {
        all.connections += p.connections;
        all.source.extend(p.source);
        all.sink.extend(p.sink);
        has_proxy |= !p.proxy.is_empty();
        all.proxy.extend(p.proxy);
        all.arrivals.merge(&p.arrivals);
        all.delivered_bytes += p.delivered_bytes;
        all.delivered.merge(&p.delivered);
        all.corrupted += p.corrupted;
        all.done_at = all.done_at.or(p.done_at);
        all.traces.extend(p.traces);
    }
    let done = all.done_at.unwrap_or(end);
    let transfer = (done - plan.start).as_secs_f64();
    let per_sec = |x: f64| if transfer > 0.0 { x / transfer } else { 0.0 };
    let a = &all.arrivals;
    let (interarrival_mean, interarrival_sd) = if a.gaps == 0 {
        (0.0, 0.0)
    } else {
        let n = a.gaps as f64;
        let mean = a.sum as f64 / n;
        let var = (a.squares as f64 / n - mean * mean).max(0.0);
        (mean / 1e9, var.sqrt() / 1e9)
    };
    let result = TcpFlowResult {
        name: plan.name.clone(),
        cc: plan.cc,
        connections: all.connections,
        completed: all.done_at.is_some(),
        start: plan.start.as_secs_f64(),
        transfer_time: transfer,
        delivered_bytes: all.delivered_bytes,
        goodput_bps: per_sec(all.delivered_bytes as f64 * 8.0),
        throughput_pps: per_sec(a.count as f64),
        interarrival_mean,
        interarrival_sd,
        sender: sender_result(&all.source),
        receiver_acks_sent: all.sink.iter().map(|s| s.acks_sent).sum(),
        proxy: has_proxy.then(|| sender_result(&all.proxy)),
        corrupted_discarded: all.corrupted,
        delivered: all.delivered,
    };
    (result, all.traces)
}
