//! The radio link: WIPEMU's core (seed 002 §II.C, Figure 1), as a pure,
//! driven component.
//!
//! Packets wait in a FIFO; the link takes one at a time and cuts it into
//! frames as slots come: each slot carries one frame of
//! `symbols_per_frame`·log2(M) bits, M chosen from the predicted SNR (or
//! fixed); the last frame of a packet carries the rest and is padded. The
//! true SNR of the slot decides whether the frame is hit, with probability
//! 1 − (1 − SER)^symbols. A hit frame is sent again, no earlier than the
//! ARQ delay after its slot ended, ahead of new frames ("retransmission
//! takes priority over transmission of new data"), with the bits it had.
//! Its modulation is the one it had, or with adaptive modulation the one
//! the slot's predicted SNR calls for when that is lower ("for every frame,
//! predicted channel data is consulted"): the frame is then re-cut, its
//! first bits in this slot and the rest in the next ones. Without that, a
//! frame cut at a fading peak would be retried blind in the fades that
//! follow. With fixed modulation a retransmission is the frame as it was
//! sent. Transmission is pipelined: new frames go out while a
//! retransmission waits, so frames, and packets, can be reordered. After
//! the last allowed retransmission the frame's bit errors are applied and
//! the packet delivered, or it is dropped if so configured.
//!
//! Driver contract (as [`crate::Path`]): [`RadioLink::push`]`(now, packet)`,
//! [`RadioLink::poll`]`(now)`, [`RadioLink::next_wakeup`]`()`, with
//! non-decreasing `now`; early or spurious calls are harmless. Time is
//! slotted: slot n spans [⌊n·10⁹/sps⌋ ns, ⌊(n+1)·10⁹/sps⌋ ns), so a second
//! holds exactly `slots_per_second` slots. A frame starts at a slot start
//! and ends (is received or hit) at the next.
//!
//! State changes: [`RadioLink::apply`]`(now, patch)` changes the channel's
//! mean SNR, the prediction NMSE, the modulation, the scheduling, ARQ or
//! the residual-error mode from the first slot that starts at or after
//! `now`. A slot starting exactly at `now` gets the new parameters when the
//! driver holds it first ([`RadioLink::hold_slot_start`]), as
//! [`crate::Path::apply`] does; otherwise it was begun before the change.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;

use serde::Serialize;

use super::adaptive::AdaptiveModulator;
use super::channel::{Channel, ChannelConfig, FadingChannel, MeasuredChannel, SlotChannel};
use super::config::{RadioConfig, RadioPatch, ResidualErrors, Scheduling};
use super::modulation::{Modulation, ModulationChoice, frame_error_from_ser};
use super::prediction::Predictor;
use super::residual::{FrameBits, apply_symbol_errors};
use crate::config::StageConfig;
use crate::dist::unit;
use crate::error::ConfigError;
use crate::event::{Direction, DropReason, Event, EventKind, Recording};
use crate::packet::Packet;
use crate::patch::Change;
use crate::patch::StagePatch;
use crate::path::Delivery;
use crate::rng::{StreamRng, stream};
use crate::stage::any_link::LinkKind;
use crate::stage::link::{Link, LinkStats};
use crate::stage::{DropCounts, Recorder};
use crate::time::{Duration, Instant};

/// What a radio link counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RadioStats {
    pub entered: u64,
    pub delivered: u64,
    /// Dropped after the ARQ limit ([`ResidualErrors::Drop`]).
    pub dropped: u64,
    /// Delivered with at least one flipped bit.
    pub corrupted: u64,
    /// Frame transmissions, retransmissions included.
    pub frames_sent: u64,
    pub frame_errors: u64,
    pub retransmissions: u64,
    /// Frame transmissions per modulation, indexed by [`Modulation::index`].
    pub frames_by_modulation: [u64; 8],
    /// Frame capacity offered, bits: Σ symbols·log2(M) over transmissions.
    pub capacity_bits: u64,
    /// Packet bits carried by first transmissions (capacity minus the
    /// padding of last frames).
    pub payload_bits: u64,
}

/// A link frame: a run of a packet's bits sent in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Frame {
    seq: u64,
    index: u32,
    first_bit: u64,
    bits: u32,
    modulation: Modulation,
    /// 0 for the first transmission.
    attempt: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct PendingRetransmission {
    ready: Instant,
    order: u64,
    frame: Frame,
}

#[derive(Clone, Copy, Debug)]
struct OnAir {
    frame: Frame,
    /// True SNR (linear) of the slot and sub-channel it went on.
    snr: f64,
}

/// The packet being cut into frames.
#[derive(Clone, Copy, Debug)]
struct Segmenter {
    seq: u64,
    next_bit: u64,
    total_bits: u64,
    next_frame: u32,
}

#[derive(Debug)]
struct Assembly {
    packet: Packet,
    frames: u32,
    frames_done: u32,
    segmented: bool,
}

#[derive(Debug)]
pub struct RadioLink {
    /// The stage's name, direction and recording level: events go
    /// straight into the caller's log through it.
    recorder: Recorder,
    config: RadioConfig,
    channel: Channel,
    adaptive: AdaptiveModulator,
    errors: StreamRng,
    slot_channel: SlotChannel,
    /// The first slot whose start has not been handled.
    next_slot: u64,
    on_air: Option<OnAir>,
    waiting: VecDeque<Packet>,
    segmenting: Option<Segmenter>,
    assemblies: HashMap<u64, Assembly>,
    retransmissions: BinaryHeap<Reverse<PendingRetransmission>>,
    next_seq: u64,
    next_order: u64,
    out: VecDeque<Delivery>,
    stats: RadioStats,
    /// A slot start not to begin yet: a state change at that instant comes
    /// first ([`RadioLink::hold_slot_start`]).
    held: Option<Instant>,
    /// Switching levels were designed up front; redesign after a change.
    prepared: bool,
}

impl RadioLink {
    /// Builds the link named `name` (events carry it) on `direction`;
    /// `seed` is the replication seed. Random streams are
    /// "{direction}/{name}/radio/{fading,shadow,prediction,errors}".
    pub fn new(config: &RadioConfig, name: &str, direction: Direction, seed: u64) -> Result<Self, ConfigError> {
        config.validate(&format!("{name}.radio"))?;
        let rng = |c: &str| stream(seed, &format!("{direction}/{name}/radio/{c}"));
        let predictor = Predictor::new(config.prediction_nmse, seed, &format!("{direction}/{name}/radio/prediction"));
        let channel = match &config.channel {
            ChannelConfig::Fading(f) => Channel::Fading(Box::new(FadingChannel::new(
                f,
                config.slots_per_second,
                predictor,
                rng("fading"),
                rng("shadow"),
            ))),
            ChannelConfig::Measured(m) => Channel::Measured(MeasuredChannel::new(m, predictor)),
        };
        Ok(RadioLink {
            recorder: Recorder { stage: Arc::from(name), direction, recording: Recording::All },
            adaptive: AdaptiveModulator::new(config.prediction_nmse, config.symbols_per_frame),
            config: config.clone(),
            channel,
            errors: rng("errors"),
            slot_channel: SlotChannel::default(),
            next_slot: 0,
            on_air: None,
            waiting: VecDeque::new(),
            segmenting: None,
            assemblies: HashMap::new(),
            retransmissions: BinaryHeap::new(),
            next_seq: 0,
            next_order: 0,
            out: VecDeque::new(),
            stats: RadioStats::default(),
            held: None,
            prepared: false,
        })
    }

    /// Designs the adaptive switching levels for the local means the
    /// channel is likely to visit (mean SNR ± 4σ of shadowing) up front, so
    /// that a real-time driver never waits for one. Optional: levels are
    /// otherwise designed when first needed.
    pub fn prepare_switching_levels(&mut self) {
        self.prepared = true;
        if self.config.modulation != ModulationChoice::Adaptive {
            return;
        }
        match &self.config.channel {
            ChannelConfig::Fading(f) => {
                let spread = 4.0 * f.shadowing.std_dev_db;
                self.adaptive.prepare(f.mean_snr_db - spread, f.mean_snr_db + spread);
            }
            ChannelConfig::Measured(_) => {
                let mut probe = SlotChannel::default();
                self.channel.slot(0, &mut probe);
                self.adaptive.levels(probe.local_mean);
            }
        }
    }

    /// A state change at `now` (seed 002's knobs, changed mid-run): runs
    /// the link up to `now` with the old parameters, then sets those the
    /// patch names. Slots that start at or after `now` and have not begun
    /// use the new ones. Nothing in flight is lost or repeated: waiting
    /// packets, the packet being cut (its next frame at the new
    /// modulation), the frame on the air and pending retransmissions (with
    /// their ready times and attempts, sent by the retransmission rules
    /// above) carry on. No random stream is touched, so a run stays
    /// reproducible. An invalid patch is refused and changes nothing.
    pub fn apply(&mut self, now: Instant, patch: &RadioPatch, log: &mut Vec<Event>) -> Result<(), ConfigError> {
        let key = format!("{}.radio", self.recorder.stage);
        patch.validate(&key)?;
        let config = self.config.patched(patch);
        config.validate(&key)?;
        self.run_until(now, log);
        let predictor = self.channel.predictor().with_nmse(config.prediction_nmse);
        match (&mut self.channel, &config.channel) {
            (Channel::Fading(c), ChannelConfig::Fading(f)) => c.set_mean_snr_db(f.mean_snr_db),
            (Channel::Measured(c), ChannelConfig::Measured(m)) if patch.channel.is_some() => {
                *c = MeasuredChannel::new(m, predictor.clone());
            }
            _ => {}
        }
        self.channel.set_predictor(predictor);
        if config.prediction_nmse != self.config.prediction_nmse {
            self.adaptive = AdaptiveModulator::new(config.prediction_nmse, config.symbols_per_frame);
        }
        self.config = config;
        if self.prepared {
            self.prepare_switching_levels();
        }
        Ok(())
    }

    /// Keeps the slot that starts at `at` from beginning until
    /// [`RadioLink::release_hold`]: a frame ending at `at` still ends (and
    /// its packet is delivered), but the next frame is not cut, so a state
    /// change at `at` decides it. While held, [`RadioLink::next_wakeup`]
    /// does not report that slot start.
    pub fn hold_slot_start(&mut self, at: Instant) {
        self.held = Some(at);
    }

    /// Ends a [`RadioLink::hold_slot_start`]; the held slot begins at the
    /// next call with `now` at or after it.
    pub fn release_hold(&mut self) {
        self.held = None;
    }

    pub fn config(&self) -> &RadioConfig {
        &self.config
    }

    pub fn stats(&self) -> &RadioStats {
        &self.stats
    }

    pub fn set_recording(&mut self, recording: Recording) {
        self.recorder.recording = recording;
    }

    /// Packets waiting that the link has not started cutting into frames.
    pub fn backlog(&self) -> usize {
        self.waiting.len()
    }

    /// Packets inside the link: waiting, being sent, or delivered and not
    /// yet polled.
    pub fn occupancy(&self) -> usize {
        self.waiting.len() + self.assemblies.len() + self.out.len()
    }

    /// Start of slot `n`.
    pub fn slot_start(&self, n: u64) -> Instant {
        let nanos = n as u128 * 1_000_000_000 / self.config.slots_per_second as u128;
        Instant::from_nanos(nanos.min(u64::MAX as u128) as u64)
    }

    /// The first slot starting at or after `t`.
    pub fn slot_at_or_after(&self, t: Instant) -> u64 {
        let scaled = t.as_nanos() as u128 * self.config.slots_per_second as u128;
        scaled.div_ceil(1_000_000_000).min(u64::MAX as u128) as u64
    }

    /// A packet enters the link at `now`; it goes into the first slot that
    /// starts at or after `now` and finds no earlier frame waiting.
    pub fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        self.run_until(now, log);
        self.stats.entered += 1;
        self.next_slot = self.next_slot.max(self.slot_at_or_after(now));
        self.waiting.push_back(packet);
        self.run_until(now, log);
    }

    /// The next packet delivered at or before `now`, in delivery order.
    pub fn poll(&mut self, now: Instant, log: &mut Vec<Event>) -> Option<Delivery> {
        self.run_until(now, log);
        self.out.pop_front()
    }

    /// The earliest time the link needs a call; `None` when it is idle.
    pub fn next_wakeup(&self) -> Option<Instant> {
        if let Some(d) = self.out.front() {
            return Some(d.at);
        }
        if self.on_air.is_some() {
            return Some(self.slot_start(self.next_slot));
        }
        let start = if self.has_new_data() {
            self.slot_start(self.next_slot)
        } else {
            let ready = self.retransmissions.peek()?.0.ready;
            self.slot_start(self.next_slot.max(self.slot_at_or_after(ready)))
        };
        (self.held != Some(start)).then_some(start)
    }

    fn has_new_data(&self) -> bool {
        self.segmenting.is_some() || !self.waiting.is_empty()
    }

    /// The earliest pending retransmission whose packet is still alive.
    fn earliest_retransmission(&mut self) -> Option<Instant> {
        while let Some(Reverse(r)) = self.retransmissions.peek() {
            if self.assemblies.contains_key(&r.frame.seq) {
                return Some(r.ready);
            }
            self.retransmissions.pop();
        }
        None
    }

    /// Handles every slot boundary at or before `now`, in order.
    pub fn run_until(&mut self, now: Instant, log: &mut Vec<Event>) {
        loop {
            if self.on_air.is_none() && !self.has_new_data() {
                let Some(ready) = self.earliest_retransmission() else { break };
                self.next_slot = self.next_slot.max(self.slot_at_or_after(ready));
            }
            let t = self.slot_start(self.next_slot);
            if t > now {
                break;
            }
            if let Some(on_air) = self.on_air.take() {
                self.finish(on_air, t, log);
            }
            if self.held == Some(t) {
                break;
            }
            self.begin_slot(self.next_slot, t, log);
            self.next_slot += 1;
        }
    }

    /// Records `kind` for the packet of frame sequence `seq`.
    fn log(&self, log: &mut Vec<Event>, time: Instant, kind: EventKind, seq: u64) {
        if let Some(a) = self.assemblies.get(&seq) {
            self.recorder.log(log, time, kind, Some(&a.packet));
        }
    }

    /// Starts the frame of slot `slot` at `t`: a due retransmission, else
    /// the next piece of the current packet.
    fn begin_slot(&mut self, slot: u64, t: Instant, log: &mut Vec<Event>) {
        let retransmission = match self.earliest_retransmission() {
            Some(ready) if ready <= t => self.retransmissions.pop().map(|Reverse(r)| r.frame),
            _ => None,
        };
        if retransmission.is_none() && !self.has_new_data() {
            return;
        }
        self.channel.slot(slot, &mut self.slot_channel);
        let sub_channel = self.choose_sub_channel();
        let adapted = match self.config.modulation {
            ModulationChoice::Fixed(_) => None,
            ModulationChoice::Adaptive => {
                Some(self.adaptive.choose(self.slot_channel.predicted[sub_channel], self.slot_channel.local_mean))
            }
        };
        let frame = match retransmission {
            Some(frame) => {
                let frame = match adapted {
                    Some(m) if m < frame.modulation => self.resegment(frame, m, t),
                    _ => frame,
                };
                self.log(log, t, EventKind::Retransmit { frame: frame.index, attempt: frame.attempt }, frame.seq);
                frame
            }
            None => {
                let modulation = match self.config.modulation {
                    ModulationChoice::Fixed(m) => m,
                    ModulationChoice::Adaptive => adapted.expect("chosen above"),
                };
                self.next_new_frame(modulation)
            }
        };
        self.log(log, t, EventKind::TransmitStart { frame: frame.index }, frame.seq);
        let capacity = self.config.symbols_per_frame as u64 * frame.modulation.bits_per_symbol() as u64;
        self.stats.frames_sent += 1;
        self.stats.frames_by_modulation[frame.modulation.index()] += 1;
        self.stats.capacity_bits += capacity;
        if frame.attempt == 0 {
            self.stats.payload_bits += frame.bits as u64;
        }
        self.on_air = Some(OnAir { frame, snr: self.slot_channel.snr[sub_channel] });
    }

    /// A retransmission going out in a slot whose predicted SNR calls for
    /// `modulation`, lower than the frame's: the frame's first bits go in
    /// this slot at `modulation`, the rest wait (ready now, same attempt)
    /// as a further piece of the packet, cut again when it goes out.
    /// Sending the frame unchanged would put a format chosen for an earlier
    /// slot, often a fading peak, into a slot predicted to fail it.
    fn resegment(&mut self, frame: Frame, modulation: Modulation, t: Instant) -> Frame {
        let capacity = self.config.symbols_per_frame * modulation.bits_per_symbol();
        if frame.bits > capacity
            && let Some(a) = self.assemblies.get_mut(&frame.seq)
        {
            let rest = Frame {
                index: a.frames,
                first_bit: frame.first_bit + capacity as u64,
                bits: frame.bits - capacity,
                ..frame
            };
            a.frames += 1;
            let order = self.next_order;
            self.next_order += 1;
            self.retransmissions.push(Reverse(PendingRetransmission { ready: t, order, frame: rest }));
            return Frame { bits: capacity, modulation, ..frame };
        }
        Frame { modulation, ..frame }
    }

    fn choose_sub_channel(&self) -> usize {
        match self.config.scheduling {
            Scheduling::Static(c) => c as usize,
            Scheduling::Best => {
                let p = &self.slot_channel.predicted;
                (0..p.len()).fold(0, |best, c| if p[c] > p[best] { c } else { best })
            }
        }
    }

    /// Cuts the next frame of `modulation` from the current packet, taking
    /// a new packet from the FIFO if needed (the caller checked there is
    /// one).
    fn next_new_frame(&mut self, modulation: Modulation) -> Frame {
        let mut seg = match self.segmenting {
            Some(seg) => seg,
            None => {
                let packet = self.waiting.pop_front().expect("caller checked for new data");
                let seq = self.next_seq;
                self.next_seq += 1;
                let total_bits = packet.size as u64 * 8;
                self.assemblies.insert(seq, Assembly { packet, frames: 0, frames_done: 0, segmented: false });
                Segmenter { seq, next_bit: 0, total_bits, next_frame: 0 }
            }
        };
        let capacity = self.config.symbols_per_frame as u64 * modulation.bits_per_symbol() as u64;
        let bits = (seg.total_bits - seg.next_bit).min(capacity) as u32;
        let frame =
            Frame { seq: seg.seq, index: seg.next_frame, first_bit: seg.next_bit, bits, modulation, attempt: 0 };
        seg.next_bit += bits as u64;
        seg.next_frame += 1;
        let done = seg.next_bit >= seg.total_bits;
        if let Some(a) = self.assemblies.get_mut(&seg.seq) {
            a.frames += 1;
            a.segmented = done;
        }
        self.segmenting = if done { None } else { Some(seg) };
        frame
    }

    /// The frame on the air ends at `t`: received, retransmitted later, or
    /// past the ARQ limit.
    fn finish(&mut self, on_air: OnAir, t: Instant, log: &mut Vec<Event>) {
        let frame = on_air.frame;
        if !self.assemblies.contains_key(&frame.seq) {
            return;
        }
        self.log(log, t, EventKind::TransmitEnd { frame: frame.index }, frame.seq);
        let symbols = self.config.symbols_per_frame;
        let ser = frame.modulation.symbol_error_rate(on_air.snr);
        let hit = unit(&mut self.errors) < frame_error_from_ser(ser, symbols);
        if hit {
            self.stats.frame_errors += 1;
            self.log(log, t, EventKind::FrameError { frame: frame.index }, frame.seq);
            if frame.attempt < self.config.arq.retries {
                self.stats.retransmissions += 1;
                let order = self.next_order;
                self.next_order += 1;
                let again = Frame { attempt: frame.attempt + 1, ..frame };
                let ready = t + self.config.arq.delay;
                self.retransmissions.push(Reverse(PendingRetransmission { ready, order, frame: again }));
                return;
            }
            match self.config.residual {
                ResidualErrors::Drop => {
                    let a = self.assemblies.remove(&frame.seq).expect("checked above");
                    if self.segmenting.is_some_and(|s| s.seq == frame.seq) {
                        self.segmenting = None;
                    }
                    self.stats.dropped += 1;
                    self.recorder.log(log, t, EventKind::Drop(DropReason::ArqLimit), Some(&a.packet));
                    return;
                }
                ResidualErrors::Deliver => {
                    let a = self.assemblies.get_mut(&frame.seq).expect("checked above");
                    let was_corrupted = a.packet.corrupted;
                    let bits = FrameBits {
                        first_bit: frame.first_bit,
                        bits: frame.bits,
                        bits_per_symbol: frame.modulation.bits_per_symbol(),
                        symbols,
                    };
                    let flipped = apply_symbol_errors(&mut a.packet, bits, ser, &mut self.errors);
                    if flipped > 0 {
                        if !was_corrupted {
                            self.stats.corrupted += 1;
                        }
                        self.log(log, t, EventKind::Corrupt { bits: flipped }, frame.seq);
                    }
                }
            }
        }
        let a = self.assemblies.get_mut(&frame.seq).expect("checked above");
        a.frames_done += 1;
        if a.segmented && a.frames_done == a.frames {
            let a = self.assemblies.remove(&frame.seq).expect("present");
            self.stats.delivered += 1;
            self.recorder.log(log, t, EventKind::Deliver, Some(&a.packet));
            self.out.push_back(Delivery { at: t, packet: a.packet });
        }
    }
}

/// A stage with `radio`; its random streams are its own, named from the
/// stage and the seed.
impl LinkKind for RadioLink {
    fn choose(
        config: &StageConfig,
        recorder: &Recorder,
        seed: u64,
        _rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> Option<Self> {
        let mut radio = RadioLink::new(config.radio.as_ref()?, &recorder.stage, recorder.direction, seed)
            .expect("radio configuration validated with the stage");
        Link::set_recorder(&mut radio, recorder);
        Some(radio)
    }
}

/// The radio as a stage's link (seed 002: the base station's queue feeds
/// the link one packet at a time). Blackouts, vacations and flow control
/// are refused for a radio stage with the scenario, so the trait's no-op
/// defaults stand for them.
impl Link for RadioLink {
    type Timer = ();
    fn next_timer(&self) -> Option<(Instant, ())> {
        self.next_wakeup().map(|t| (t, ()))
    }
    fn fire(
        &mut self,
        now: Instant,
        _timer: (),
        _queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        self.run_until(now, log);
        out.extend(self.out.drain(..).map(|d| (d.at, d.packet)));
    }
    fn accepts(&self, _size: u32) -> bool {
        self.backlog() == 0
    }
    fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        RadioLink::push(self, now, packet, log);
    }
    fn fed(&mut self, _now: Instant, _queue_empty: bool, _log: &mut Vec<Event>) {}
    fn wake(&mut self, _now: Instant) {}
    fn idle(&self) -> bool {
        true
    }
    /// The radio's frames vary with modulation; RED sees the channel's
    /// starting value, 1 ms.
    fn typical_tx(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn occupancy(&self) -> u64 {
        RadioLink::occupancy(self) as u64
    }
    fn stats(&self) -> LinkStats {
        let r = RadioLink::stats(self);
        let mut dropped = DropCounts::default();
        dropped.add_n(DropReason::ArqLimit, r.dropped);
        LinkStats {
            delivered: r.delivered,
            dropped,
            frame_errors: r.frame_errors,
            retransmissions: r.retransmissions,
            corrupted: r.corrupted,
            ..LinkStats::default()
        }
    }
    fn set_recorder(&mut self, recorder: &Recorder) {
        self.recorder = recorder.clone();
    }
    /// Applies the radio part of the patch, if any ([`RadioLink::apply`]).
    fn reconfigure(
        &mut self,
        now: Instant,
        _config: &StageConfig,
        patch: &StagePatch,
        log: &mut Vec<Event>,
        _rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> bool {
        let Some(p) = &patch.radio else { return true };
        self.apply(now, p, log).is_ok()
    }
    /// A change of radio parameters decides the slot starting at `at`: it
    /// is held until the change is in ([`RadioLink::hold_slot_start`]).
    fn before_change(&mut self, at: Instant, change: &Change) {
        if change.sets_radio() {
            self.hold_slot_start(at);
        }
    }
    fn changed(&mut self) {
        self.release_hold();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ArqConfig;
    use crate::packet::PacketId;
    use crate::radio::channel::MeasuredSnr;
    use crate::time::Duration;
    use crate::{FlowKey, Protocol};

    /// Slot 0 is predicted at 40 dB but is really at 0 dB; every later slot
    /// is predicted at 5 dB (BPSK) and really at 40 dB.
    fn peak_then_fade() -> RadioConfig {
        let slots = 100;
        let true_db = (0..slots).map(|s| vec![if s == 0 { 0.0 } else { 40.0 }]).collect();
        let predicted_db = (0..slots).map(|s| vec![if s == 0 { 40.0 } else { 5.0 }]).collect();
        RadioConfig {
            channel: ChannelConfig::Measured(MeasuredSnr {
                file: None,
                snr_db: true_db,
                predicted_snr_db: Some(predicted_db),
            }),
            arq: ArqConfig { delay: Duration::from_millis(2), retries: 3 },
            ..Default::default()
        }
    }

    /// One 108-byte packet (864 bits: one 256-QAM frame) pushed at 0 and
    /// run until the link is idle.
    fn send_one(config: &RadioConfig) -> (RadioLink, Vec<Delivery>) {
        let mut link = RadioLink::new(config, "radio", Direction::Downlink, 1).unwrap();
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            src_port: 1,
            dst_port: 2,
        };
        let mut events = Vec::new();
        link.push(Instant::ZERO, Packet::new(PacketId(1), 108, flow), &mut events);
        let mut out = Vec::new();
        while let Some(t) = link.next_wakeup() {
            while let Some(d) = link.poll(t, &mut events) {
                out.push(d);
            }
        }
        (link, out)
    }

    #[test]
    fn adaptive_retransmission_is_recut_at_the_slots_modulation() {
        // 256-QAM in slot 0 (predicted 40 dB), hit. Ready 2 ms after slot 0
        // ends: slot 4, predicted at BPSK's 108 bits, so the frame goes
        // again as 8 pieces in slots 4..=11, all received; the packet
        // leaves when slot 11 ends.
        let (link, out) = send_one(&peak_then_fade());
        assert_eq!(out.len(), 1);
        assert!(!out[0].packet.corrupted);
        assert_eq!(out[0].at, link.slot_start(12));
        let s = link.stats();
        assert_eq!(s.frames_by_modulation[Modulation::Qam256.index()], 1);
        assert_eq!(s.frames_by_modulation[Modulation::Bpsk.index()], 8);
        assert_eq!((s.frame_errors, s.retransmissions), (1, 1));
    }

    #[test]
    fn fixed_modulation_retransmits_the_frame_as_it_was() {
        let config = RadioConfig { modulation: ModulationChoice::Fixed(Modulation::Qam256), ..peak_then_fade() };
        let (link, out) = send_one(&config);
        assert_eq!(out[0].at, link.slot_start(5));
        assert_eq!(link.stats().frames_by_modulation[Modulation::Qam256.index()], 2);
    }
}
