//! The flows of `count` and `arrivals` entries in an emulated run (issue
//! 35): one row each, the columns of the simulator's flows.csv
//! (squall_analysis::summary_file::CountFlow), read from the hosts' pcaps.
//!
//! The emulator runs entry member `i` (counted over every
//! `[[workload.tcp]]` entry's members in order, squall_scenario::count) as
//! a `squall tool bulk` client on its `from` host and a server on its `to`
//! host listening on `squall_emu::workload::plan::tcp_server_port(i)`. Its
//! data flow is the one from `from` to `to` towards that port (Linux picks
//! the client's port). As in the simulator, a flow starts with the
//! client's SYN and completes when its last byte reaches the receiver:
//! FCT = the last data segment received − the SYN sent, both from the
//! pcaps, with the same clock as the run's (`FlowStats::opened` and
//! `last_data`). The bulk tool sends an 8-byte length before the bytes
//! (squall_emu::tools::bulk), so a flow of N bytes is complete once N + 8
//! reached the receiver. The ideal FCT is the simulator's
//! (squall_sim::ideal), so that the two engines' slowdowns share one
//! denominator. Retransmission timeouts are not in the pcaps: left empty.

use squall_analysis::flows::{FlowStats, flow_label};
use squall_analysis::summary_file::{CountFlow, CountSummary};
use squall_link::{FlowKey, Protocol};
use squall_scenario::{Scenario, TcpApp, Topology};

/// The bulk tool's length header, bytes (squall_emu::tools::bulk: "an
/// 8-byte big-endian length, then that many bytes").
const LENGTH_HEADER: u64 = 8;

/// Each `count`/`arrivals` entry's summary and its flows' rows in the
/// emulated run of `scenario` (its seed is the run's), from `flows` (the
/// run's pcaps, squall_analysis::analyse_run); `end`, the run's end, s.
pub(crate) fn emu_count_flows(
    scenario: &Scenario,
    replication: u32,
    flows: &[FlowStats],
    end: f64,
) -> (Vec<CountSummary>, Vec<CountFlow>) {
    let open_loop = |e: usize| {
        let f = &scenario.workload.tcp[e];
        f.count.is_some() || f.arrivals.is_some()
    };
    if !(0..scenario.workload.tcp.len()).any(open_loop) {
        return (Vec::new(), Vec::new());
    }
    // A member's connections (a SYN sent again is the same connection;
    // a second connection to the port is not expected) as one.
    let by_label = squall_analysis::by_workload(flows.to_vec());
    let topology = Topology::new(scenario).ok();
    let address = |name: &str| scenario.hosts.iter().find(|h| h.name == name).and_then(|h| h.address);
    let mut summaries = Vec::new();
    let mut rows = Vec::new();
    // Member number over every entry: the emulator's server port rule.
    let mut i = 0usize;
    for (e, entry) in scenario.workload.tcp.iter().enumerate() {
        let members = squall_scenario::count::expand_tcp(scenario, e, scenario.seed);
        if !open_loop(e) {
            i += members.len();
            continue;
        }
        let mut of_entry = Vec::new();
        for m in members {
            let f = &m.flow;
            let port = squall_emu::workload::plan::tcp_server_port(f, i).ok();
            i += 1;
            let bytes = match &f.app {
                TcpApp::Bulk(b) => b.as_constant().map_or(0, |b| b.0),
                _ => 0,
            };
            let seen = match (address(&f.from), address(&f.to), port) {
                (Some(from), Some(to), Some(port)) => {
                    // Any client port at or above the ephemeral range is `*`.
                    let key = FlowKey {
                        protocol: Protocol::Tcp,
                        src: from.into(),
                        dst: to.into(),
                        src_port: u16::MAX,
                        dst_port: port,
                    };
                    let label = flow_label(&key, &f.from, &f.to);
                    by_label.iter().find(|s| s.label == label)
                }
                _ => None,
            };
            let scheduled = f.start.as_constant().map_or(0.0, |d| d.as_secs_f64());
            let start = seen.map_or(scheduled, |s| s.opened);
            let completed = seen.is_some_and(|s| bytes > 0 && s.app_bytes >= bytes + LENGTH_HEADER);
            let fct = match seen {
                Some(s) if completed => s.last_data - s.opened,
                _ => end - start,
            };
            let ideal_fct = topology.as_ref().and_then(|topology| squall_sim::ideal::ideal_fct(scenario, topology, f));
            let delivered = seen.map_or(0, |s| s.app_bytes.saturating_sub(LENGTH_HEADER).min(bytes));
            of_entry.push(CountFlow {
                replication,
                entry: entry.name.clone(),
                flow: m.index.unwrap_or(0),
                src: f.from.clone(),
                dst: f.to.clone(),
                dst_port: port.unwrap_or(0),
                start,
                bytes,
                completed,
                fct,
                goodput_bps: if fct > 0.0 { delivered as f64 * 8.0 / fct } else { 0.0 },
                retransmitted_segments: seen.map_or(0, |s| s.retransmitted),
                timeouts: None,
                ideal_fct,
                slowdown: ideal_fct.map(|i| fct / i),
            });
        }
        summaries.push(CountSummary::of(&entry.name, &of_entry.iter().collect::<Vec<_>>()));
        rows.extend(of_entry);
    }
    (summaries, rows)
}
