//! UDP (seed 001 §3.1): a source that sends datagrams at a set pace and a
//! sink that takes them. No acknowledgements, no retransmission, no
//! congestion control.
//!
//! When the source sends and how big each packet is, is the flow's arrival
//! process ([`squall_link::arrival`], built by
//! [`UdpFlow::arrival_process`]): a rate (each gap is the packet's
//! size·8/rate) or an interval distribution, Poisson gaps with the same
//! mean, on and off periods. `squall tool udp-flow` sends the same packets
//! from the same process.

use squall_link::arrival::ArrivalProcess;
use squall_link::{Ecn, FlowKey, Instant, Packet, PacketId};
use squall_scenario::UdpFlow;

use crate::agent::{Agent, Ctx};
use crate::ids::TimerToken;

/// The source's only timer: send the next packet.
const SEND: TimerToken = TimerToken(0);

/// A UDP source (seed 001 §3.1's source process): the flow's arrival
/// process sending on a flow.
#[derive(Debug)]
pub struct UdpSource {
    flow: FlowKey,
    ecn: bool,
    arrivals: ArrivalProcess,
    /// The size of the packet the send timer is set for.
    pending: Option<u32>,
}

impl UdpSource {
    /// The source of `config` sending on `flow` until `end` (see
    /// [`UdpFlow::arrival_process`]).
    pub fn new(config: &UdpFlow, flow: FlowKey, seed: u64, end: Instant) -> Result<Self, String> {
        Ok(UdpSource { flow, ecn: config.ecn, arrivals: config.arrival_process(seed, end)?, pending: None })
    }

    fn schedule_next(&mut self, ctx: &mut Ctx<'_>) {
        if let Some((at, size)) = self.arrivals.next_packet() {
            self.pending = Some(size);
            ctx.set_timer(SEND, at);
        }
    }
}

impl Agent for UdpSource {
    fn start(&mut self, _now: Instant, ctx: &mut Ctx<'_>) {
        self.schedule_next(ctx);
    }

    fn on_packet(&mut self, _now: Instant, _packet: Packet, _tcp: Option<squall_tcp::Segment>, _ctx: &mut Ctx<'_>) {}

    fn on_timer(&mut self, _now: Instant, token: TimerToken, ctx: &mut Ctx<'_>) {
        let Some(size) = self.pending.take().filter(|_| token == SEND) else { return };
        let mut packet = Packet::new(PacketId(0), size, self.flow);
        if self.ecn {
            packet.ecn = Ecn::Ect0;
        }
        // The engine checked the route when it built the run; a refused
        // send ends the source.
        if ctx.send(packet).is_ok() {
            self.schedule_next(ctx);
        }
    }
}

/// A UDP sink (seed 001 §2.1: "discards each packet after processing it").
/// The engine measures each flow; the sink only counts what it took.
#[derive(Debug, Default)]
pub struct UdpSink {
    pub packets: u64,
    pub bytes: u64,
}

impl Agent for UdpSink {
    fn start(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn on_packet(&mut self, _now: Instant, packet: Packet, _tcp: Option<squall_tcp::Segment>, _ctx: &mut Ctx<'_>) {
        self.packets += 1;
        self.bytes += packet.size as u64;
    }

    fn on_timer(&mut self, _now: Instant, _token: TimerToken, _ctx: &mut Ctx<'_>) {}
}
