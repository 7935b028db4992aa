//! Every kind of agent behind one enum, so the engine's calls are
//! statically dispatched ([`crate::agent`] describes the interface).

use squall_link::{Instant, Packet};
use squall_tcp::Segment;

use crate::agent::{Agent, Ctx};
use crate::ids::TimerToken;
use crate::tcp::{TcpClient, TcpProxy, TcpServer};
use crate::udp::{UdpSink, UdpSource};

/// Every kind of agent, for static dispatch.
///
/// Agents sit in one `Vec` and are never moved after the run is built, so
/// the variants are stored inline rather than boxed (no indirection per
/// callback), all but the UDP source: it is 656 bytes where a TCP client
/// is 224, and every TCP flow has two agents (100 000 flows: 85 MB less).
#[derive(Debug)]
pub enum AnyAgent {
    UdpSource(Box<UdpSource>),
    UdpSink(UdpSink),
    TcpClient(TcpClient),
    TcpServer(TcpServer),
    TcpProxy(TcpProxy),
}

macro_rules! dispatch {
    ($self:ident, $a:ident => $e:expr) => {
        match $self {
            AnyAgent::UdpSource($a) => $e,
            AnyAgent::UdpSink($a) => $e,
            AnyAgent::TcpClient($a) => $e,
            AnyAgent::TcpServer($a) => $e,
            AnyAgent::TcpProxy($a) => $e,
        }
    };
}

impl Agent for AnyAgent {
    fn start(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        dispatch!(self, a => a.start(now, ctx))
    }
    fn on_packet(&mut self, now: Instant, packet: Packet, tcp: Option<Segment>, ctx: &mut Ctx<'_>) {
        dispatch!(self, a => a.on_packet(now, packet, tcp, ctx))
    }
    fn on_timer(&mut self, now: Instant, token: TimerToken, ctx: &mut Ctx<'_>) {
        dispatch!(self, a => a.on_timer(now, token, ctx))
    }
}
