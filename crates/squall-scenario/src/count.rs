//! `[[workload.tcp]]` entries that stand for many flows (issue 35): the
//! rule that turns one entry into the flows a run opens, shared by every
//! engine and by the outputs that name those flows.
//!
//! The expansion rule, for an entry number `entry` named `NAME` with
//! `count = N`, in the replication with seed `seed`:
//!
//! - flow `k` (0 ≤ k < N) is the entry with the name `NAME#k`;
//! - its `start` is drawn from the entry's `start` (a constant is the
//!   same for every flow), the k-th draw of the random stream
//!   `tcp/NAME/start`;
//! - its application is `{ bulk = SIZE }`, SIZE the k-th draw of the
//!   stream `tcp/NAME/bytes` from the entry's `bulk` size (other
//!   applications are copied as they are);
//! - its client port is ephemeral (the host's `ephemeral_ports` range;
//!   `src_port` is refused with `count`), its server port `dst_port + k`
//!   (`dst_port` defaults to 5000 + entry).
//!
//! An entry without `count` whose `start` or `bulk` size is a
//! distribution is one flow, keeping its name and ports, that draws once
//! from the same streams.
//!
//! So N explicit `[[workload.tcp]]` tables with those names, starts,
//! sizes and ports, from a host that sets `ephemeral_ports`, run the same
//! flows (tests/count.rs in squall checks it).

use squall_link::rng::stream;
use squall_link::{Distribution, Sampler};

use crate::schema::{TcpApp, TcpFlow};

/// The name of flow `k` of the `count` entry named `entry`.
pub fn member_name(entry: &str, k: u32) -> String {
    format!("{entry}#{k}")
}

/// The first server port of `[[workload.tcp]]` entry number `entry`:
/// its `dst_port`, else 5000 + entry (squall_scenario::ports).
pub fn first_server_port(flow: &TcpFlow, entry: usize) -> Option<u32> {
    match flow.dst_port {
        Some(p) => Some(p.into()),
        None => u32::try_from(entry).ok()?.checked_add(5000),
    }
}

/// One flow an entry stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpMember {
    /// The flow, with a constant start and, for a bulk transfer, a
    /// constant size.
    pub flow: TcpFlow,
    /// Its index within a `count` entry (`None`: the entry has no
    /// `count`).
    pub index: Option<u32>,
    /// Its client ports come from the host's ephemeral range.
    pub ephemeral: bool,
}

/// The flows `[[workload.tcp]]` entry number `entry` stands for in the
/// replication with `seed`, by the rule above. The entry must have
/// passed the scenario's checks (its distributions are valid and its
/// server ports fit).
pub fn expand_tcp(flow: &TcpFlow, entry: usize, seed: u64) -> Vec<TcpMember> {
    let drawn_start = flow.start.as_constant().is_none();
    let drawn_size = matches!(&flow.app, TcpApp::Bulk(d) if d.as_constant().is_none());
    if flow.count.is_none() && !drawn_start && !drawn_size {
        return vec![TcpMember { flow: flow.clone(), index: None, ephemeral: false }];
    }
    let mut starts = Sampler::new(flow.start.clone(), stream(seed, &format!("tcp/{}/start", flow.name)));
    let mut sizes = match &flow.app {
        TcpApp::Bulk(d) => Some(Sampler::new(d.clone(), stream(seed, &format!("tcp/{}/bytes", flow.name)))),
        _ => None,
    };
    let first_port = first_server_port(flow, entry).unwrap_or(0);
    let one = |k: Option<u32>, starts: &mut Sampler<_>, sizes: &mut Option<Sampler<_>>| {
        let mut f = flow.clone();
        f.count = None;
        f.start = Distribution::constant(starts.sample());
        if let Some(sizes) = sizes {
            f.app = TcpApp::Bulk(Distribution::constant(sizes.sample()));
        }
        if let Some(k) = k {
            f.name = member_name(&flow.name, k);
            f.src_port = None;
            f.dst_port = u16::try_from(first_port + k).ok();
        }
        TcpMember { flow: f, index: k, ephemeral: k.is_some() }
    };
    match flow.count {
        None => vec![one(None, &mut starts, &mut sizes)],
        Some(n) => (0..n).map(|k| one(Some(k), &mut starts, &mut sizes)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn entry(keys: &str) -> TcpFlow {
        let text = format!(
            "name = \"t\"\nduration = \"10 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\naddress = \"10.0.0.2\"\n\
             [[links]]\nbetween = [\"a\", \"b\"]\n[[links.downlink]]\nname = \"l\"\nrate = \"10 Mbit/s\"\n\
             [[links.uplink]]\nname = \"u\"\nrate = \"10 Mbit/s\"\n\
             [[workload.tcp]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n{keys}\n"
        );
        parse("t.toml", &text, std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}")).workload.tcp.remove(0)
    }

    #[test]
    fn an_entry_without_count_or_draws_is_itself() {
        let f = entry("app = { bulk = \"10 KB\" }\nstart = \"1 s\"");
        assert_eq!(expand_tcp(&f, 0, 1), vec![TcpMember { flow: f.clone(), index: None, ephemeral: false }]);
    }

    #[test]
    fn count_members_take_names_ports_and_draws_in_order() {
        let f = entry(
            "count = 3\ndst_port = 6000\nstart = { kind = \"uniform\", low = \"0 s\", high = \"2 s\" }\n\
             app = { bulk = { kind = \"exponential\", mean = \"10 KB\" } }",
        );
        let m = expand_tcp(&f, 4, 7);
        // The same draws, by hand from the named streams.
        let mut s = Sampler::new(f.start.clone(), stream(7, "tcp/f/start"));
        let TcpApp::Bulk(size) = &f.app else { panic!() };
        let mut b = Sampler::new(size.clone(), stream(7, "tcp/f/bytes"));
        assert_eq!(m.len(), 3);
        for (k, m) in m.iter().enumerate() {
            assert_eq!(m.flow.name, format!("f#{k}"));
            assert_eq!(m.flow.dst_port, Some(6000 + k as u16));
            assert_eq!(m.flow.src_port, None);
            assert!(m.ephemeral);
            assert_eq!(m.flow.count, None);
            assert_eq!(m.flow.start, Distribution::constant(s.sample()));
            assert_eq!(m.flow.app, TcpApp::Bulk(Distribution::constant(b.sample())));
        }
        // Another replication draws other values.
        assert_ne!(expand_tcp(&f, 4, 8)[0].flow.start, m[0].flow.start);
    }

    #[test]
    fn server_ports_default_to_5000_plus_the_entry() {
        let f = entry("count = 2\napp = { bulk = \"1 KB\" }");
        let m = expand_tcp(&f, 3, 1);
        assert_eq!((m[0].flow.dst_port, m[1].flow.dst_port), (Some(5003), Some(5004)));
    }
}
