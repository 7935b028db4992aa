//! The ports of `[[workload.udp]]` and `[[workload.tcp]]` flows when the
//! scenario leaves them out: one rule for the simulator (squall-sim's
//! agents) and the emulator (squall-emu's workloads, `squall tool
//! udp-flow`), so that both engines send from and to the same ports.

use crate::{TcpFlow, UdpFlow};

/// Default UDP ports (`workload.udp`): source 10000 + flow index.
const UDP_SOURCE_PORT_BASE: u32 = 10_000;
const UDP_SINK_PORT: u16 = 5001;

/// The source and destination ports of `[[workload.udp]]` entry number
/// `index`: its `src_port` and `dst_port`, or 10000 + index and 5001. The
/// emulator sends from and to the same ports.
pub fn udp_ports(flow: &UdpFlow, index: usize) -> Result<(u16, u16), String> {
    let src = match flow.src_port {
        Some(p) => p,
        None => u32::try_from(index)
            .ok()
            .and_then(|i| u16::try_from(UDP_SOURCE_PORT_BASE.checked_add(i)?).ok())
            .ok_or_else(|| format!("give `src_port` (10000 + {index} is not a port)"))?,
    };
    Ok((src, flow.dst_port.unwrap_or(UDP_SINK_PORT)))
}

/// The first client port and the server port of `[[workload.tcp]]` entry
/// number `index`: its `src_port` and `dst_port`, or 20000 + 1000·index
/// (while that is a port: entries 0 to 45) and 5000 + index. A client
/// port of `None` is ephemeral: the host hands one to each connection
/// (squall-sim's `ports`), as it does for every flow without a `src_port`
/// from a host that sets `ephemeral_ports`.
pub fn tcp_ports(flow: &TcpFlow, index: usize) -> Result<(Option<u16>, u16), String> {
    let client = flow.src_port.or_else(|| {
        u32::try_from(index).ok().and_then(|i| u16::try_from(i.checked_mul(1000)?.checked_add(20_000)?).ok())
    });
    let server = match flow.dst_port {
        Some(p) => p,
        None => u32::try_from(index)
            .ok()
            .and_then(|i| u16::try_from(i.checked_add(5000)?).ok())
            .ok_or_else(|| format!("give `dst_port` (5000 + {index} is not a port)"))?,
    };
    Ok((client, server))
}
