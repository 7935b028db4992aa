//! The real-time loop: one thread drives every path of the scenario with
//! the wall clock (seed 000 §6).
//!
//! Each turn it answers control requests, enters the states that are due,
//! writes every packet the paths deliver by now to its destination's
//! device, and reads whatever the hosts sent into the path towards its
//! destination. Then it waits for the earliest of: the paths' and the
//! schedule's next wake-up, a packet from a host, or a 10 ms tick. The
//! wait first keeps reading the devices for `busy_poll` after the last
//! packet read (while traffic flows, packets are found without a
//! wake-up), then sleeps in `ppoll` until `early_wakeup` before the
//! deadline and spins (still reading the devices) for the rest, so
//! deliveries leave within microseconds of their scheduled time. Each delivery's scheduled
//! and actual time are recorded ([`crate::engine::timing`]).
//!
//! Captures, events and timing rows go to a [`Recorder`], which hands them
//! to a writer thread without waiting; nothing is kept here between
//! wake-ups.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::time::TimeSpec;
use serde::Serialize;
use squall_link::fabric::{Arrival, FabricPath, HostIndex};
use squall_link::{
    BackgroundConfig, Change, Direction, Duration, Event, EventKind, Fabric, Hooks, Instant, Packet, PacketId, Path,
    PathId, PathRole, PathStats, Payload, Recording, StagePatch, StageStats, State,
};
use squall_scenario::BlackoutDirection;

use crate::engine::clock::{Clock, to_std};
pub use crate::engine::command::BackgroundAction;
use crate::engine::command::{ControlMessage, ControlRequest};
use crate::engine::recording::{DeliveryRecord, Recorder, RecordingReport};
use crate::engine::routing::Routing;
use crate::engine::timing::{TimingRecorder, TimingSummary, WriteTimes};
use crate::engine::wakeup::{self, EarlyWakeup, LastWait, LateCauses, WakeupTuner};
use crate::engine::watch::LiveCounters;
use crate::sys::device::PacketDevice;
use crate::wire::ethernet::Frame;
use crate::wire::ip::{self, Refused};

/// The bytes of a packet that has none (never one read from a device).
static NO_BYTES: Payload = Payload::Owned(Vec::new());

/// How the loop keeps time and what it records.
#[derive(Clone, Debug)]
pub struct DataplaneOptions {
    /// Sleep until this long before a delivery is due, then spin (seed
    /// 000 §6's "configurable amount" of early wake-up); `Auto` chooses
    /// it from the loop's own sleeps ([`crate::engine::wakeup`]).
    pub early_wakeup: EarlyWakeup,
    /// After reading packets, keep reading (spinning) this long before
    /// sleeping, as NAPI busy polling does (SO_BUSY_POLL): while traffic
    /// flows, a packet is then found without a wake-up, which the sender's
    /// CPU would otherwise pay for in its send (`sock_def_readable`
    /// waking the loop out of `ppoll`). Zero: sleep as soon as nothing is
    /// due.
    pub busy_poll: Duration,
    /// A delivery later than this is counted late and flags the run.
    pub late_threshold: Duration,
    /// Run the loop in the SCHED_FIFO class at this priority (needs root
    /// or CAP_SYS_NICE; on failure the loop runs as a normal thread). Off
    /// by default: at high packet rates the loop spins nearly all the time,
    /// and the kernel's real-time throttling then stops it for 50 ms each
    /// second (measured: p99 error 28 ms at 100 Mbit/s).
    pub realtime_priority: Option<i32>,
    /// Run the loop on this CPU only (`squall emu --pin`).
    pub cpu: Option<usize>,
}

impl Default for DataplaneOptions {
    fn default() -> Self {
        DataplaneOptions {
            early_wakeup: EarlyWakeup::Auto,
            busy_poll: Duration::from_micros(50),
            late_threshold: Duration::from_millis(1),
            realtime_priority: None,
            cpu: None,
        }
    }
}

/// Per-host packet counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostCounters {
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub received_packets: u64,
    pub received_bytes: u64,
    /// Packets read from the host's device and not carried, by reason.
    pub refused: BTreeMap<&'static str, u64>,
    /// Bridge mode: ARP and neighbour-discovery frames passed straight to
    /// the other side, outside the model.
    pub link_control: u64,
    /// Bridge mode: IP frames the `[inline]` rules pass straight to the
    /// other side, outside the model.
    pub passed: u64,
    pub write_errors: u64,
    /// What the host's device offloads did (super-packets cut on the way
    /// in, deliveries joined on the way out).
    pub offload: crate::sys::device::OffloadCounts,
    /// Frames the kernel dropped on their way to squall, before the model
    /// saw them: the host's TUN queue or the AF_PACKET receive ring was
    /// full. Kernel buffers, not wire packets: a dropped GSO super-frame
    /// counts once, whatever it carried.
    pub kernel_dropped_frames: u64,
    /// Frames the kernel dropped after squall wrote them, where the
    /// device tells (an inline interface's transmit drops: its far side
    /// was down or without its carrier). They are counted delivered too:
    /// squall's write succeeded.
    pub dropped_after_write: u64,
}

/// What a run of the loop leaves.
pub struct DataplaneReport {
    pub end: Instant,
    pub timing: TimingSummary,
    pub hosts: Vec<HostCounters>,
    pub paths: Vec<PathStats>,
    pub stages: Vec<StageStats>,
    /// What was written and what was dropped of the pcaps, events.csv and
    /// timing.csv.
    pub recording: RecordingReport,
}

/// How long the data plane runs on after the foreground workloads have
/// exited, at most, to deliver what they sent: long enough for a packet
/// to cross a slow, deep path, short enough that a path holding packets
/// (a blackout in hold mode) or a background program that keeps sending
/// does not keep a finished run alive.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// The loop's state.
pub struct Dataplane {
    clock: Clock,
    options: DataplaneOptions,
    routing: Routing,
    devices: Vec<Box<dyn PacketDevice>>,
    /// The paths, routes, hosts' processing delays and state schedule.
    fabric: Fabric,
    /// A stage has a series with `at_end = "end"`: the run ends where it
    /// does (`Path::series_end`).
    series_may_end: bool,
    downlink_stages: Vec<String>,
    uplink_stages: Vec<String>,
    timing: TimingRecorder,
    /// What the loop does as packets cross the fabric.
    edge: Edge,
    next_id: u64,
    /// Background generators stopped by `squall ctl`, by stage and name,
    /// to start again as they were.
    stopped_background: BTreeMap<(String, String), BackgroundConfig>,
    /// Bridge mode (inline between two interfaces): the devices read and
    /// write Ethernet frames, a frame from one side crosses the path to the
    /// other whatever its addresses.
    bridge: bool,
    /// Bridge mode: which IP frames take the link; the others pass
    /// straight across.
    inline_filter: crate::engine::inline::InlineFilter,
    /// Bridge mode: which hosts each interface's frames go between (`None`:
    /// one device per host, `devices[i]` host i's).
    sides: Option<crate::engine::inline::InlineSides>,
    /// When the paths were last advanced: no packet enters them earlier.
    polled: Instant,
    /// When packets were last read (for `busy_poll`).
    last_read: Instant,
    /// States entered more often at one instant than the fabric allows
    /// (said once).
    state_storm: bool,
    /// How early to wake before a delivery is due.
    wakeup: WakeupTuner,
    /// What ended the last wait (why a delivery after it was late).
    last_wait: LastWait,
    late_causes: LateCauses,
    /// How long the writes to the devices took.
    writes: WriteTimes,
}

/// What the loop keeps at the fabric's edge: the hosts' counters, the
/// recorder and the wake-up's deliveries.
struct Edge {
    hosts: Vec<HostCounters>,
    names: Vec<String>,
    recorder: Recorder,
    /// Events of the current wake-up, sent to the recorder at its end.
    events: Vec<Event>,
    /// Deliveries of the current wake-up, written together at its end so
    /// that the packets due for one host go in one write; `true` for a
    /// packet whose capture was taken when it reached the host, before
    /// its processing delay.
    outbox: Vec<(Instant, Packet, HostIndex, bool)>,
    /// What `squall ctl watch` samples.
    live: LiveCounters,
}

impl Dataplane {
    /// `devices[i]` belongs to `routing`'s host i; `fabric` is the
    /// scenario's (`squall_scenario::fabric::build`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: Clock,
        options: DataplaneOptions,
        routing: Routing,
        devices: Vec<Box<dyn PacketDevice>>,
        mut fabric: Fabric,
        downlink_stages: Vec<String>,
        uplink_stages: Vec<String>,
        recorder: Recorder,
    ) -> Self {
        let n = routing.names.len();
        fabric.set_recording(if recorder.records_events() { Recording::All } else { Recording::Off });
        let series_may_end = fabric.may_end_run();
        let edge = Edge {
            hosts: vec![HostCounters::default(); n],
            names: routing.names.clone(),
            recorder,
            events: Vec::new(),
            outbox: Vec::new(),
            live: LiveCounters::default(),
        };
        let (options_early, late_threshold) = (options.early_wakeup, options.late_threshold);
        Dataplane {
            clock,
            timing: TimingRecorder::new(options.late_threshold),
            options,
            routing,
            devices,
            fabric,
            series_may_end,
            downlink_stages,
            uplink_stages,
            edge,
            next_id: 0,
            stopped_background: BTreeMap::new(),
            bridge: false,
            inline_filter: crate::engine::inline::InlineFilter::default(),
            sides: None,
            polled: Instant::ZERO,
            last_read: Instant::ZERO,
            state_storm: false,
            wakeup: WakeupTuner::new(options_early),
            last_wait: LastWait::default(),
            late_causes: LateCauses::default(),
            writes: WriteTimes::new(late_threshold),
        }
    }

    /// Bridge mode: the devices are the interfaces on either side, and
    /// `sides` says which hosts each one's frames go between (two hosts
    /// joined by one link, or clients each with its link to the host on
    /// the other side); every IP frame read on one crosses its path to the
    /// other, ARP and neighbour discovery pass at once.
    pub fn bridging(
        mut self,
        filter: crate::engine::inline::InlineFilter,
        sides: crate::engine::inline::InlineSides,
    ) -> Self {
        self.bridge = true;
        self.fabric = self.fabric.bridging();
        self.inline_filter = filter;
        self.sides = Some(sides);
        self
    }

    /// The device `host`'s packets are written to.
    fn device_of(&self, host: HostIndex) -> usize {
        self.sides.as_ref().map_or(host, |s| s.device_of(host))
    }

    /// The host whose counters hold what `device` itself counts.
    fn host_of(&self, device: usize) -> HostIndex {
        self.sides.as_ref().map_or(device, |s| s.host_of(device))
    }

    /// Runs until `stop` is set or the clock reaches `end`. Once `drain`
    /// is set (the foreground workloads have exited), it runs on, reading
    /// the devices and delivering, until no packet of the workloads is
    /// left inside the model (what they wrote before exiting reaches its
    /// host or is dropped with a reason, as it does in the simulator,
    /// which runs to the scenario's end), for at most [`DRAIN_LIMIT`].
    pub fn run(
        mut self,
        mut end: Instant,
        stop: &AtomicBool,
        drain: &AtomicBool,
        control: &Receiver<ControlMessage>,
    ) -> DataplaneReport {
        crate::sys::sched::minimise_timer_slack();
        if let Some(cpu) = self.options.cpu
            && let Err(e) = crate::sys::sched::pin_this_thread(cpu)
        {
            tracing::warn!("squall emu: the data plane could not be pinned to CPU {cpu} ({e})");
        }
        if let Some(priority) = self.options.realtime_priority {
            match crate::sys::sched::enter_realtime_class(priority) {
                Err(e) => {
                    tracing::warn!(
                        "squall emu: the data plane runs without real-time priority ({e}); timing may suffer"
                    )
                }
                Ok(()) => {
                    if let Some(w) = crate::sys::sched::rt_throttle_warning_here() {
                        tracing::warn!("squall emu: --realtime {priority}: {w}");
                    }
                }
            }
        }
        let mut draining = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = self.clock.now();
            if !draining && drain.load(Ordering::Relaxed) {
                draining = true;
                end = end.min(now + DRAIN_LIMIT);
            }
            if now >= end {
                break;
            }
            while let Ok(msg) = control.try_recv() {
                let answer = self.answer(now, msg.request);
                let _ = msg.reply.send(answer);
            }
            self.enter_due_states(now);
            self.deliver_due(now);
            self.read_devices();
            self.drain_events();
            if self.series_may_end {
                end = self.fabric.series_end().map_or(end, |e| end.min(e));
            }
            // Every path has been advanced to `now` (deliver_due) and the
            // schedule polled up to it: no later event is earlier.
            self.edge.recorder.events(std::mem::take(&mut self.edge.events), now);
            self.edge.recorder.flush();
            if draining && self.drained() {
                break;
            }
            let (deadline, due) = self.next_deadline(now);
            self.wait_until(deadline.min(end), due && deadline <= end);
        }
        // The model runs to the run's last instant: what its paths (and
        // their background sources) do before the end is in the run, as
        // in the simulator.
        let last = self.clock.now().min(end);
        self.enter_due_states(last);
        self.deliver_due(last);
        self.finish()
    }

    /// Nothing of the workloads' is left to deliver: no packet read but
    /// not handed out, none inside a path (the model's background packets
    /// do not count).
    fn drained(&self) -> bool {
        !self.devices.iter().any(|d| d.buffered()) && self.fabric.is_empty()
    }

    /// The next wake-up: the fabric's, or a 10 ms tick when that is
    /// later; and whether it is the fabric's (something is due then, worth
    /// waking early for).
    fn next_deadline(&self, now: Instant) -> (Instant, bool) {
        let tick = now + Duration::from_millis(10);
        match self.fabric.next_wakeup() {
            Some(at) if at <= tick => (at, true),
            _ => (tick, false),
        }
    }

    /// Spins reading the devices while `busy_poll` has not passed since
    /// packets were last read; then sleeps in `ppoll` until the early
    /// wake-up before `deadline` (when something is `due` then; a tick is
    /// slept to its end), or until a device is readable; then spins to the
    /// deadline, reading devices. A sleep that ends by its timeout tells
    /// the tuner how late it ended.
    fn wait_until(&mut self, deadline: Instant, due: bool) {
        self.last_wait = LastWait::default();
        let now = self.clock.now();
        // Packets read already but not yet handed out (a batch or a
        // super-packet cut short by the per-turn bound): back to the loop.
        if deadline <= now || self.devices.iter().any(|d| d.buffered()) {
            return;
        }
        let busy_until = (self.last_read + self.options.busy_poll).min(deadline);
        if now < busy_until && (self.spin_reading(busy_until) || self.clock.now() >= deadline) {
            return;
        }
        let now = self.clock.now();
        let early = if due { self.wakeup.early() } else { Duration::ZERO };
        let sleep = (deadline - now).as_nanos().saturating_sub(early.as_nanos());
        if sleep > 0 {
            let mut fds: Vec<PollFd> = self.devices.iter().map(|d| PollFd::new(d.fd(), PollFlags::POLLIN)).collect();
            let timeout = TimeSpec::from_duration(to_std(Duration::from_nanos(sleep)));
            match ppoll(&mut fds, Some(timeout), None) {
                Ok(0) => {
                    let woke = self.clock.now();
                    self.wakeup.slept(woke.saturating_since(now + Duration::from_nanos(sleep)));
                    self.last_wait.woke_at = Some(woke);
                }
                // A packet to read, or a signal: back to the loop.
                Ok(_) => {
                    let failed: Vec<usize> = (fds.iter().enumerate())
                        .filter(|(_, fd)| fd.revents().is_some_and(|r| r.contains(PollFlags::POLLERR)))
                        .map(|(device, _)| device)
                        .collect();
                    drop(fds);
                    for device in failed {
                        self.device_failed(device);
                    }
                    return;
                }
                Err(_) => return,
            }
        }
        if due {
            let (start, stolen_before) = (self.clock.now(), self.last_wait.stolen);
            self.spin_reading(deadline);
            let spun = self.clock.now().saturating_since(start);
            self.wakeup.spun(spun, self.last_wait.stolen.saturating_sub(stolen_before));
        } else {
            self.spin_reading(deadline);
        }
    }

    /// Reads the devices until `until` or until packets are read; says
    /// whether some were.
    fn spin_reading(&mut self, until: Instant) -> bool {
        let mut last = self.clock.now();
        while last < until {
            if self.read_devices() > 0 {
                return true;
            }
            std::hint::spin_loop();
            let now = self.clock.now();
            // A gap between two readings is time the thread did not run.
            let gap = now.saturating_since(last);
            self.last_wait.longest_spin_gap = self.last_wait.longest_spin_gap.max(gap);
            if gap >= wakeup::STOLEN_GAP {
                self.last_wait.stolen += gap;
            }
            last = now;
        }
        false
    }

    fn enter_due_states(&mut self, now: Instant) {
        if let Err(storm) = self.fabric.enter_due_states(now, &mut self.edge)
            && !std::mem::replace(&mut self.state_storm, true)
        {
            tracing::warn!(
                "squall emu: states entered more than {} times at {} s: a cycle with zero holding times? The rest \
                 are entered at the next wake-ups (said once)",
                Fabric::MAX_STATES_PER_INSTANT,
                storm.at
            );
        }
    }

    /// Writes every packet delivered by now; forwards those that reached
    /// an intermediate host.
    fn deliver_due(&mut self, now: Instant) {
        self.polled = now;
        self.fabric.poll(now, &mut self.edge);
        self.write_outbox();
    }

    /// Writes the wake-up's deliveries: per host in the order they were
    /// delivered, as one batch (which a device may join, as GRO does).
    /// Every one of them is due by now (`deliver_due`): written together,
    /// none leaves later than it would one by one, and those behind
    /// their time catch up sooner.
    ///
    /// A delivery's departure is the instant its write starts: writing to
    /// a TUN device runs the receiving host's stack in this thread
    /// (`tun_get_user` → `netif_rx`, drivers/net/tun.c), tens of µs on a
    /// VM, which is the host's time, not the path's. Each write's
    /// duration is kept apart ([`WriteTimes`]); the writes to other hosts
    /// before a delivery's, in the same wake-up, are what delays it when
    /// writes are slow ([`wakeup::LateCause::SlowWrite`]).
    fn write_outbox(&mut self) {
        let mut outbox = std::mem::take(&mut self.edge.outbox);
        outbox.sort_by_key(|(_, _, host, _)| *host);
        let mut written = Vec::new();
        let mut entries = outbox.drain(..).peekable();
        let mut group = Vec::new();
        // Time spent in this wake-up's earlier writes.
        let mut writing = Duration::ZERO;
        while let Some((at, packet, host, captured)) = entries.next() {
            group.clear();
            group.push((at, packet, captured));
            while let Some((at, packet, _, captured)) = entries.next_if(|(_, _, h, _)| *h == host) {
                group.push((at, packet, captured));
            }
            let payloads: Vec<&Payload> =
                group.iter().map(|(_, p, _)| p.payload.as_deref().unwrap_or(&NO_BYTES)).collect();
            written.clear();
            written.resize(group.len(), false);
            let device = self.device_of(host);
            let departure = self.clock.now();
            self.devices[device].send_batch(&payloads, &mut written);
            let write = self.clock.now().saturating_since(departure);
            self.writes.record(write);
            if written.contains(&false) {
                let error = self.devices[device].write_error();
                self.write_failed(host, error.as_ref());
            }
            for ((at, packet, captured), ok) in group.drain(..).zip(&written) {
                self.delivered(at, (departure, writing), packet, host, *ok, captured);
            }
            writing += write;
        }
        drop(entries);
        self.edge.outbox = outbox;
    }

    /// Counts, times and records a delivery written (`ok`) or not, whose
    /// write started at `actual` after `writing` spent on the wake-up's
    /// earlier writes; its capture unless it was `captured` on arrival.
    fn delivered(
        &mut self,
        scheduled: Instant,
        (actual, writing): (Instant, Duration),
        packet: Packet,
        host: HostIndex,
        ok: bool,
        captured: bool,
    ) {
        let counters = &mut self.edge.hosts[host];
        if ok {
            counters.received_packets += 1;
            counters.received_bytes += u64::from(packet.size);
            self.edge.live.flow_delivered(&packet.flow, packet.size);
        } else {
            counters.write_errors += 1;
        }
        let late = self.timing.record(scheduled, actual);
        if late {
            let cause = wakeup::classify(scheduled, actual, self.last_wait, writing);
            self.late_causes.count(cause);
            self.wakeup.late(cause);
        }
        if late && self.timing.late() == 1 {
            tracing::warn!(
                "squall emu: warning: a delivery left {:.3} ms late at {} s (threshold {}); the run is flagged",
                actual.saturating_since(scheduled).as_secs_f64() * 1e3,
                scheduled,
                self.options.late_threshold
            );
        }
        self.edge.recorder.delivery(DeliveryRecord { packet: packet.id.0, host, size: packet.size, scheduled, actual });
        // In bridge mode the IP packet inside the frame (the packet says
        // where it starts), so the pcaps are raw IP in both modes.
        let l3 = usize::from(packet.l3);
        if let Some(bytes) = packet.payload.filter(|_| !captured && self.edge.recorder.records_captures()) {
            let mut bytes = bytes.into_vec();
            bytes.drain(..l3.min(bytes.len()));
            self.edge.recorder.capture_owned(host, actual, bytes);
        }
    }

    /// Reads every packet waiting on every device into its path; returns
    /// how many were read.
    fn read_devices(&mut self) -> usize {
        let mut count = 0;
        for device in 0..self.devices.len() {
            // A bounded batch per device keeps one busy host from starving
            // the deliveries: 64 packets, and the rest of the super-packet
            // the last one came from (its segments then leave together).
            let mut read_at = None;
            let mut taken = 0;
            while taken < 64 || self.devices[device].mid_read() {
                taken += 1;
                let bytes = match self.devices[device].recv() {
                    Ok(Some(bytes)) => bytes,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!("squall emu: reading {}: {e}", self.devices[device].label());
                        break;
                    }
                };
                count += 1;
                // The segments of one super-packet all reached squall with
                // its read.
                let at = match read_at {
                    Some(at) if self.devices[device].same_read() => at,
                    _ => self.reached_device(device),
                };
                read_at = Some(at);
                self.read_on(at, device, bytes);
            }
        }
        if count > 0 {
            self.last_read = self.clock.now();
        }
        count
    }

    /// When the packet `device` last returned reached it: when the
    /// device says, but never before the paths' last advance (`polled`);
    /// now when it does not say.
    fn reached_device(&self, device: usize) -> Instant {
        let now = self.clock.now();
        match self.devices[device].last_age() {
            Some(age) => {
                let age = age.as_nanos().min(u64::MAX as u128) as u64;
                Instant::from_nanos(now.as_nanos().saturating_sub(age)).max(self.polled)
            }
            None => now,
        }
    }

    /// A packet read on `device` at `now`: sent by its host, or in bridge
    /// mode by a host on that interface's side.
    fn read_on(&mut self, now: Instant, device: usize, bytes: Payload) {
        let id = PacketId(self.next_id);
        self.next_id += 1;
        let (host, packet, first) = if let Some(sides) = self.sides.as_ref().filter(|_| self.bridge) {
            let side = sides.host_of(device);
            let packet = match crate::wire::ethernet::parse(id, bytes) {
                Ok(Frame::Ip { packet, l3: _ }) => packet,
                Ok(Frame::LinkControl(frame)) => {
                    // Not the model's: the other side gets it at once.
                    self.edge.hosts[side].link_control += 1;
                    return self.pass_across(device, &frame);
                }
                Err(reason) => return self.refuse(side, reason),
            };
            if !self.inline_filter.carries(&packet) {
                self.edge.hosts[side].passed += 1;
                let bytes = packet.payload.as_deref().map(Payload::bytes).unwrap_or_default();
                return self.pass_across(device, &bytes);
            }
            let Some((from, to)) = sides.ends(device, &packet) else {
                return self.refuse(side, Refused::NoRoute);
            };
            let Some(first) = self.fabric.next_path(from, to) else {
                return self.refuse(from, Refused::NoRoute);
            };
            (from, packet, first)
        } else {
            let host = device;
            let packet = match ip::parse(id, bytes) {
                Ok(p) => p,
                Err(reason) => return self.refuse(host, reason),
            };
            let Some(first) = self.fabric.first_path(host, &packet) else {
                return self.refuse(host, Refused::NoRoute);
            };
            (host, packet, first)
        };
        let counters = &mut self.edge.hosts[host];
        counters.sent_packets += 1;
        counters.sent_bytes += u64::from(packet.size);
        self.fabric.send(now, host, packet, first, &mut self.edge);
    }

    /// Bridge mode: writes a frame read on device `from` straight to the
    /// other side, outside the model; a failed write counts against the
    /// other side.
    fn pass_across(&mut self, from: usize, bytes: &[u8]) {
        let other = 1 - from.min(1);
        if let Err(e) = self.devices[other].send(bytes) {
            let host = self.host_of(other);
            self.write_failed(host, Some(&e));
            self.edge.hosts[host].write_errors += 1;
        }
    }

    /// Takes the error the kernel holds for `host`'s device, which would
    /// otherwise keep poll from sleeping, and says it: the interface went
    /// down or was removed. The run goes on; what cannot be written to it
    /// meanwhile counts as write errors.
    fn device_failed(&mut self, device: usize) {
        let host = self.host_of(device);
        if let Some(e) = self.devices[device].take_error() {
            tracing::warn!(
                "squall emu: {} (host `{}`): {e}; the run goes on, and what cannot be written to it counts as \
                 write_errors",
                self.devices[device].label(),
                self.routing.names[host]
            );
        }
    }

    /// Says, the first time only for each host, that packets for `host`
    /// could not be written and why (the interface went down, say): they
    /// are counted as `write_errors`, not lost unseen.
    fn write_failed(&mut self, host: HostIndex, error: Option<&std::io::Error>) {
        if self.edge.hosts[host].write_errors > 0 {
            return;
        }
        let why = error.map_or(String::new(), |e| format!(" ({e})"));
        tracing::warn!(
            "squall emu: a packet for host `{}` could not be written to {}{why}; such packets are dropped and \
             counted as write_errors in summary.json (said once per host)",
            self.routing.names[host],
            self.devices[self.device_of(host)].label()
        );
    }

    fn refuse(&mut self, host: HostIndex, reason: Refused) {
        self.edge.refuse(host, reason);
    }

    fn drain_events(&mut self) {
        self.edge.drain_events(self.fabric.paths_mut());
    }

    fn enter_state(&mut self, now: Instant, at: Instant, state: &State) {
        self.fabric.enter_state(now, at, state, &mut self.edge);
    }

    /// Answers a control request at `now`.
    fn answer(&mut self, now: Instant, request: ControlRequest) -> Result<serde_json::Value, String> {
        match request {
            ControlRequest::Status => Ok(serde_json::json!({
                "time": now.as_secs_f64(),
                "hosts": self.routing.names.iter().zip(&self.edge.hosts).map(|(n, c)| (n.clone(), serde_json::to_value(c).unwrap_or_default())).collect::<BTreeMap<_, _>>(),
                "paths": self.routing.paths.iter().enumerate().filter_map(|(i, e)| {
                    let p = self.fabric.link_path(i)?;
                    Some(serde_json::json!({"link": e.link, "direction": e.direction, "stats": p.stats()}))
                }).collect::<Vec<_>>(),
                "timing": self.timing.summary(),
                "capture_dropped": self.edge.recorder.dropped(),
            })),
            // Sampled at the instant the paths were last advanced to:
            // every delivery scheduled up to it is counted, none after,
            // so bytes between two samples are bounded by the link's
            // rate times the time between them.
            ControlRequest::Sample { since } => {
                let paths = self.routing.paths.iter().enumerate().map(|(i, e)| (e, self.fabric.link_path(i)));
                let mut sample = self.edge.live.sample(self.polled, since, paths);
                sample["departure_error"] = serde_json::to_value(self.timing.take_interval()).unwrap_or_default();
                Ok(sample)
            }
            ControlRequest::EnterState(name) => {
                let schedule = self.fabric.schedule();
                let state = schedule.enter(&name).cloned().ok_or_else(|| {
                    let names: Vec<&str> = schedule.states().map(|s| s.name.as_str()).collect();
                    format!("no state `{name}`; the scenario has: {}", names.join(", "))
                })?;
                self.enter_state(now, now, &state);
                Ok(serde_json::json!({"entered": name, "time": now.as_secs_f64()}))
            }
            ControlRequest::Blackout { mode, direction } => {
                let mut stages = Vec::new();
                if matches!(direction, BlackoutDirection::Downlink | BlackoutDirection::Both) {
                    stages.extend(self.downlink_stages.iter().cloned());
                }
                if matches!(direction, BlackoutDirection::Uplink | BlackoutDirection::Both) {
                    stages.extend(self.uplink_stages.iter().cloned());
                }
                let changes = stages
                    .iter()
                    .map(|stage| match mode {
                        Some(mode) => Change::BlackoutStart { stage: stage.clone(), mode },
                        None => Change::BlackoutEnd { stage: stage.clone() },
                    })
                    .collect();
                let name = if mode.is_some() { "ctl-blackout-start" } else { "ctl-blackout-end" };
                self.enter_state(now, now, &State { name: name.into(), changes });
                Ok(serde_json::json!({"blackout": mode.is_some(), "stages": stages, "time": now.as_secs_f64()}))
            }
            ControlRequest::Background { stage, generator, action } => {
                let state = self.background_change(&stage, &generator, &action)?;
                self.enter_state(now, now, &state);
                // The generators running now, as configured (a new rate
                // shows), from the stage's first path.
                let running = self
                    .fabric
                    .paths()
                    .iter()
                    .filter_map(|s| s.path.stage_config(&stage))
                    .map(|c| c.background.clone())
                    .next()
                    .unwrap_or_default();
                let stopped = self.stopped_background.keys().filter(|(s, _)| *s == stage).map(|(_, g)| g.clone());
                Ok(serde_json::json!({
                    "stage": stage,
                    "running": running,
                    "stopped": stopped.collect::<Vec<_>>(),
                    "time": now.as_secs_f64(),
                }))
            }
        }
    }

    /// The stage's background generators after `action` on `generator`,
    /// as a scenario state to enter: the others are left as they were, so
    /// they run on undisturbed (crate `squall_link`, `Background::replaced`).
    fn background_change(&mut self, stage: &str, generator: &str, action: &BackgroundAction) -> Result<State, String> {
        let config = self
            .fabric
            .paths()
            .iter()
            .filter_map(|s| s.path.stage_config(stage))
            .next()
            .ok_or_else(|| format!("no stage `{stage}` in this run"))?
            .clone();
        let mut list = config.background.clone();
        let running = list.iter().position(|g| g.name == generator);
        let key = (stage.to_string(), generator.to_string());
        match (action, running) {
            (BackgroundAction::Stop, Some(i)) => {
                self.stopped_background.insert(key, list.remove(i));
            }
            (BackgroundAction::Start, None) => {
                let g = self
                    .stopped_background
                    .remove(&key)
                    .ok_or_else(|| format!("stage `{stage}` has no stopped background generator `{generator}`"))?;
                list.push(g);
            }
            (BackgroundAction::Rate(rate), _) => {
                let g = match running {
                    Some(i) => &mut list[i],
                    None => self
                        .stopped_background
                        .get_mut(&key)
                        .ok_or_else(|| format!("stage `{stage}` has no background generator `{generator}`"))?,
                };
                if g.rate.is_none() {
                    return Err(format!(
                        "background generator `{generator}` of stage `{stage}` is given by `gap`, not `rate`"
                    ));
                }
                if rate.bits_per_sec() == 0 {
                    return Err("the rate must be above 0 bit/s (stop the generator instead)".into());
                }
                g.rate = Some(*rate);
                if running.is_none() {
                    return Ok(State { name: "ctl-background".into(), changes: Vec::new() });
                }
            }
            (BackgroundAction::Stop, None) => {
                return Err(format!("stage `{stage}` runs no background generator `{generator}`"));
            }
            (BackgroundAction::Start, Some(_)) => {
                return Err(format!("background generator `{generator}` of stage `{stage}` is already running"));
            }
        }
        let patch = StagePatch::default().with("background", |c| c.background = list);
        patch.check(&config).map_err(|e| e.to_string())?;
        Ok(State {
            name: "ctl-background".into(),
            changes: vec![Change::Set { stage: stage.to_string(), patch: Box::new(patch) }],
        })
    }

    fn finish(mut self) -> DataplaneReport {
        let end = self.clock.now();
        for d in 0..self.devices.len() {
            let host = self.host_of(d);
            let (counters, device, name) =
                (&mut self.edge.hosts[host], &mut self.devices[d], &self.routing.names[host]);
            counters.offload = device.offload_counts();
            counters.kernel_dropped_frames = device.kernel_dropped();
            counters.dropped_after_write = device.dropped_after_write();
            if counters.dropped_after_write > 0 {
                tracing::warn!(
                    "squall emu: the kernel dropped {} frame(s) written to {} (host `{name}`) after squall wrote \
                     them: the far side was down or without its carrier (its transmit drops; summary.json \
                     dropped_after_write)",
                    counters.dropped_after_write,
                    device.label(),
                );
            }
        }
        self.drain_events();
        self.edge.recorder.events(std::mem::take(&mut self.edge.events), end);
        let paths = self.fabric.stats();
        let stages = self.fabric.paths().iter().flat_map(|p| p.path.stage_stats(end)).collect();
        let mut timing = self.timing.summary();
        timing.wakeup = self.wakeup.report(crate::sys::sched::thread_cpu_time(), end.saturating_since(Instant::ZERO));
        timing.late_causes = self.late_causes;
        timing.writes = self.writes.report();
        DataplaneReport { end, timing, hosts: self.edge.hosts, paths, stages, recording: self.edge.recorder.finish() }
    }
}

impl Edge {
    fn refuse(&mut self, host: HostIndex, reason: Refused) {
        let n = self.hosts[host].refused.entry(reason.as_str()).or_default();
        *n += 1;
        if *n == 1 {
            tracing::warn!(
                "squall emu: dropped a packet from host `{}`: {} (counted in summary.json, logged once)",
                self.names[host],
                reason.as_str()
            );
        }
    }

    fn drain_events(&mut self, paths: &mut [FabricPath]) {
        // Taken even when classes.csv is not written: the stages keep
        // their samples until then.
        let mut samples = Vec::new();
        for p in paths.iter_mut() {
            p.path.drain_class_samples_into(&mut samples);
        }
        self.recorder.class_samples(samples);
        if !self.recorder.records_events() {
            return;
        }
        for p in paths {
            p.path.drain_events_into(&mut self.events);
        }
    }

    /// Records `packet` in `host`'s capture at `at`: as it leaves the host,
    /// or as it reaches a host with a processing delay (before the delay).
    fn capture(&mut self, host: HostIndex, at: Instant, packet: &Packet) {
        if let Some(payload) = packet.payload.as_ref().filter(|_| self.recorder.records_captures()) {
            let bytes = payload.bytes();
            let l3 = usize::from(packet.l3).min(bytes.len());
            self.recorder.capture(host, at, &bytes[l3..]);
        }
    }
}

/// The loop's part in each step of a packet through the fabric. A host's
/// capture shows a packet it receives when it is written to the host (or,
/// with a processing delay for what it receives, when it reaches the host,
/// before the delay), and one it sends as it enters the link (after the
/// host's delay for what it sends), as the simulator's does; packets a host
/// forwards are not in its capture (`squall emu` captures at the hosts'
/// devices, which forwarded packets never reach).
impl Hooks for Edge {
    fn left(&mut self, _now: Instant, _id: PathId, role: PathRole, _path: &mut Path, packet: &Packet) {
        if let PathRole::Link(index) = role {
            self.live.path_delivered(index, packet.size);
        }
    }

    fn reached(&mut self, now: Instant, host: HostIndex, packet: &Packet, local: bool, delayed: bool) {
        if local && delayed {
            self.capture(host, now, packet);
        }
    }

    fn departs(&mut self, now: Instant, host: HostIndex, packet: &Packet, origin: bool) {
        if origin {
            self.capture(host, now, packet);
        }
    }

    fn no_route(&mut self, _now: Instant, host: HostIndex, _packet: Packet) {
        self.refuse(host, Refused::NoRoute);
    }

    /// Written with the wake-up's other deliveries ([`Dataplane::write_outbox`]).
    fn arrived(&mut self, arrival: Arrival) {
        self.outbox.push((arrival.at, arrival.packet, arrival.host, arrival.delayed));
    }

    /// The events before the state go first.
    fn entering_state(&mut self, at: Instant, state: &State, paths: &mut [FabricPath]) {
        self.drain_events(paths);
        self.live.state_entered(at, &state.name);
        if self.recorder.records_events() {
            self.events.push(Event {
                time: at,
                stage: Arc::from(state.name.as_str()),
                direction: Direction::Downlink,
                kind: EventKind::StateChange,
                packet: None,
                flow: None,
                size: 0,
            });
        }
    }
}
