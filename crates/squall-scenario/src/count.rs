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
//!   (`dst_port` defaults to 5000 + entry), or `dst_port` itself for
//!   every flow with `server_ports = "shared"` (one listening port; the
//!   engines tell the connections apart by their 4-tuples).
//!
//! An entry with `arrivals` (an open-loop arrival process) stands for
//! the flows whose starts fall in its window: with `from` F and `until`
//! U (default: the run's duration), flow `k` starts at
//! F + g₀ + … + g_k, the g drawn from the stream `tcp/NAME/gap`, and the
//! first start at or after U ends the entry. Gaps come from `gap`, or for
//! `poisson = { load = L, of = STAGE }` from an exponential distribution
//! of mean E[S]·8 / (L · R), E[S] the mean of the bulk size distribution
//! and R the stage's rate ([`poisson_mean_gap`]). Names, sizes and ports
//! follow the `count` rule.
//!
//! An entry without `count` whose `start` or `bulk` size is a
//! distribution is one flow, keeping its name and ports, that draws once
//! from the same streams.
//!
//! So N explicit `[[workload.tcp]]` tables with those names, starts,
//! sizes and ports, from a host that sets `ephemeral_ports`, run the same
//! flows (tests/count.rs in squall checks it).

use squall_link::dist::unit;
use squall_link::rng::{StreamRng, stream};
use squall_link::{Bytes, Distribution, Duration, Rate, Sampler};

use crate::schema::{FlowArrivals, Pairing, Scenario, ServerPorts, TcpApp, TcpFlow};

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

/// The flows `[[workload.tcp]]` entry number `entry` of `scenario`
/// stands for in the replication with `seed`, by the rule above. The
/// scenario must have passed its checks (its distributions are valid, a
/// `count` entry's server ports fit, a `poisson` stage has a rate). A
/// member of an `arrivals` entry whose server port would pass 65535 has
/// no `dst_port` (the engines refuse it, naming the flow).
pub fn expand_tcp(scenario: &Scenario, entry: usize, seed: u64) -> Vec<TcpMember> {
    let flow = &scenario.workload.tcp[entry];
    let drawn_start = flow.start.as_constant().is_none();
    let drawn_size = matches!(&flow.app, TcpApp::Bulk(d) if d.as_constant().is_none());
    if flow.count.is_none() && flow.arrivals.is_none() && !drawn_start && !drawn_size {
        return vec![TcpMember { flow: flow.clone(), index: None, ephemeral: false }];
    }
    let mut starts = Sampler::new(flow.start.clone(), stream(seed, &format!("tcp/{}/start", flow.name)));
    let mut sizes = match &flow.app {
        TcpApp::Bulk(d) => Some(Sampler::new(d.clone(), stream(seed, &format!("tcp/{}/bytes", flow.name)))),
        _ => None,
    };
    let first_port = first_server_port(flow, entry).unwrap_or(0);
    let mut hosts = HostPairs::new(scenario, flow, seed);
    // What every member has, without the entry's distributions (an
    // empirical size CDF is a table): each member is a copy of this with
    // its own start, size, hosts and name.
    let mut template = flow.clone();
    template.count = None;
    template.arrivals = None;
    template.start = Distribution::constant(Duration::ZERO);
    if sizes.is_some() {
        template.app = TcpApp::Bulk(Distribution::constant(Bytes(0)));
    }
    let mut member = |k: Option<u32>, start: Duration, sizes: &mut Option<Sampler<Bytes>>| {
        let mut f = template.clone();
        if let (Some(k), Some(hosts)) = (k, hosts.as_mut()) {
            let (from, to) = hosts.pair(k);
            f.from = from;
            f.to = to;
            f.pairing = None;
        }
        f.count = None;
        f.arrivals = None;
        f.start = Distribution::constant(start);
        if let Some(sizes) = sizes {
            f.app = TcpApp::Bulk(Distribution::constant(sizes.sample()));
        }
        if let Some(k) = k {
            f.name = member_name(&flow.name, k);
            f.src_port = None;
            let offset = if flow.server_ports == ServerPorts::Shared { 0 } else { u64::from(k) };
            f.dst_port = u16::try_from(u64::from(first_port) + offset).ok();
        }
        TcpMember { flow: f, index: k, ephemeral: k.is_some() }
    };
    if let Some(arrivals) = &flow.arrivals {
        let Some(gap) = arrival_gaps(scenario, flow, arrivals) else { return Vec::new() };
        let mut gaps = Sampler::new(gap, stream(seed, &format!("tcp/{}/gap", flow.name)));
        let until = arrivals.until.unwrap_or(scenario.duration);
        let mut at = arrivals.from;
        let mut out = Vec::new();
        for k in 0u32.. {
            at += gaps.sample();
            if at >= until {
                break;
            }
            out.push(member(Some(k), at, &mut sizes));
        }
        return out;
    }
    match flow.count {
        None => vec![member(None, starts.sample(), &mut sizes)],
        Some(n) => (0..n).map(|k| member(Some(k), starts.sample(), &mut sizes)).collect(),
    }
}

/// The hosts the flows of an entry with `pairing` run between.
struct HostPairs {
    rule: Pairing,
    from: Vec<String>,
    to: Vec<String>,
    draws: Option<(StreamRng, StreamRng)>,
}

impl HostPairs {
    /// `None` for an entry without `pairing` (its flows run between its
    /// `from` and `to` hosts).
    fn new(scenario: &Scenario, flow: &TcpFlow, seed: u64) -> Option<Self> {
        let rule = flow.pairing?;
        let hosts = |name: &str| -> Vec<String> {
            let group = crate::pattern::group_hosts(scenario, name);
            if group.is_empty() { vec![name.to_string()] } else { group.iter().map(|h| h.name.clone()).collect() }
        };
        let draws = (rule == Pairing::Random).then(|| {
            (stream(seed, &format!("tcp/{}/from", flow.name)), stream(seed, &format!("tcp/{}/to", flow.name)))
        });
        Some(HostPairs { rule, from: hosts(&flow.from), to: hosts(&flow.to), draws })
    }

    /// Flow k's client and server hosts (the checks made sure the groups
    /// fit the rule).
    fn pair(&mut self, k: u32) -> (String, String) {
        let k = k as usize;
        match (self.rule, &mut self.draws) {
            (Pairing::AllToOne, _) => (self.from[k % self.from.len()].clone(), self.to[0].clone()),
            (Pairing::Pairs, _) => (self.from[k % self.from.len()].clone(), self.to[k % self.to.len()].clone()),
            (Pairing::Random, Some((from_rng, to_rng))) => {
                let from = &self.from[index(from_rng, self.from.len())];
                // The server among the `to` hosts other than the client.
                let others = self.to.len() - usize::from(self.to.contains(from));
                let mut i = index(to_rng, others.max(1));
                if let Some(at) = self.to.iter().position(|h| h == from)
                    && i >= at
                {
                    i += 1;
                }
                (from.clone(), self.to[i.min(self.to.len() - 1)].clone())
            }
            (Pairing::Random, None) => unreachable!("a random pairing has its streams"),
        }
    }
}

/// A uniform draw of 0..n (n ≥ 1) from 53 random bits.
fn index(rng: &mut StreamRng, n: usize) -> usize {
    ((unit(rng) * n as f64) as usize).min(n - 1)
}

/// The distribution of the gaps of an `arrivals` entry (`None` for a
/// `poisson` entry whose stage or mean size the checks refuse).
fn arrival_gaps(scenario: &Scenario, flow: &TcpFlow, arrivals: &FlowArrivals) -> Option<Distribution<Duration>> {
    if let Some(gap) = &arrivals.gap {
        return Some(gap.clone());
    }
    let poisson = arrivals.poisson.as_ref()?;
    let TcpApp::Bulk(size) = &flow.app else { return None };
    let rate = stage_rate(scenario, &poisson.of)?;
    let mean = poisson_mean_gap(size.mean()?, poisson.load.get(), rate)?;
    Some(Distribution::Exponential { mean })
}

/// The mean gap between Poisson arrivals of flows of mean size
/// `mean_bytes` that offer `load` (0 < load ≤ 1) of `rate`:
/// E[S]·8 / (load · R) (pFabric, SIGCOMM 2013, §5: load as the share of
/// the link's capacity the flows' bytes take). `None` when that is not a
/// positive time.
pub fn poisson_mean_gap(mean_bytes: f64, load: f64, rate: Rate) -> Option<Duration> {
    let secs = mean_bytes * 8.0 / (load * rate.bits_per_sec() as f64);
    (secs.is_finite() && secs > 0.0).then(|| Duration::from_secs_f64(secs))
}

/// The `rate` of the stage named `name`, on any link and direction.
pub fn stage_rate(scenario: &Scenario, name: &str) -> Option<Rate> {
    scenario.stage(name).and_then(|st| st.rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn scenario(keys: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nduration = \"10 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\naddress = \"10.0.0.2\"\n\
             [[links]]\nbetween = [\"a\", \"b\"]\n[[links.downlink]]\nname = \"l\"\nrate = \"10 Mbit/s\"\n\
             [[links.uplink]]\nname = \"u\"\nrate = \"10 Mbit/s\"\n\
             [[workload.tcp]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n{keys}\n"
        );
        parse("t.toml", &text, std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn shared_members_all_take_the_entry_s_server_port() {
        let sc = scenario("count = 70000\ndst_port = 6000\nserver_ports = \"shared\"\napp = { bulk = \"1 KB\" }");
        let m = expand_tcp(&sc, 0, 1);
        assert_eq!(m.len(), 70_000);
        assert!(m.iter().all(|m| m.flow.dst_port == Some(6000) && m.ephemeral));
        assert_eq!(m[69_999].flow.name, "f#69999");
    }

    #[test]
    fn an_entry_without_count_or_draws_is_itself() {
        let s = scenario("app = { bulk = \"10 KB\" }\nstart = \"1 s\"");
        let f = &s.workload.tcp[0];
        assert_eq!(expand_tcp(&s, 0, 1), vec![TcpMember { flow: f.clone(), index: None, ephemeral: false }]);
    }

    #[test]
    fn count_members_take_names_ports_and_draws_in_order() {
        let sc = scenario(
            "count = 3\ndst_port = 6000\nstart = { kind = \"uniform\", low = \"0 s\", high = \"2 s\" }\n\
             app = { bulk = { kind = \"exponential\", mean = \"10 KB\" } }",
        );
        let f = &sc.workload.tcp[0];
        let m = expand_tcp(&sc, 0, 7);
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
        assert_ne!(expand_tcp(&sc, 0, 8)[0].flow.start, m[0].flow.start);
    }

    #[test]
    fn server_ports_default_to_5000_plus_the_entry() {
        let s = scenario("count = 2\napp = { bulk = \"1 KB\" }");
        let m = expand_tcp(&s, 0, 1);
        assert_eq!((m[0].flow.dst_port, m[1].flow.dst_port), (Some(5000), Some(5001)));
    }

    #[test]
    fn arrivals_start_at_summed_gaps_inside_the_window() {
        let s = scenario(
            "arrivals = { gap = { kind = \"uniform\", low = \"10 ms\", high = \"30 ms\" }, from = \"1 s\", until = \"2 s\" }\n\
             app = { bulk = { kind = \"exponential\", mean = \"10 KB\" } }",
        );
        let m = expand_tcp(&s, 0, 3);
        let mut gaps = Sampler::new(s.workload.tcp[0].arrivals.clone().unwrap().gap.unwrap(), stream(3, "tcp/f/gap"));
        let TcpApp::Bulk(size) = &s.workload.tcp[0].app else { panic!() };
        let mut b = Sampler::new(size.clone(), stream(3, "tcp/f/bytes"));
        let mut at = Duration::from_secs(1);
        // Gaps of 10 to 30 ms in a 1 s window: 33 to 100 flows.
        assert!((33..=100).contains(&m.len()), "{} flows", m.len());
        for (k, m) in m.iter().enumerate() {
            at += gaps.sample();
            assert_eq!(m.flow.name, format!("f#{k}"));
            assert_eq!(m.flow.start, Distribution::constant(at));
            assert_eq!(m.flow.app, TcpApp::Bulk(Distribution::constant(b.sample())));
            assert_eq!((m.flow.arrivals.as_ref(), m.flow.dst_port), (None, Some(5000 + k as u16)));
        }
        // The next draw would fall at or after the window's end.
        assert!(at + gaps.sample() >= Duration::from_secs(2));
    }

    #[test]
    fn poisson_gaps_offer_the_load() {
        // 60% of 10 Mbit/s with 10 KB flows: 10 000·8 / 6 000 000 s.
        let gap = poisson_mean_gap(10_000.0, 0.6, Rate::from_bits_per_sec(10_000_000)).unwrap();
        assert_eq!(gap, Duration::from_secs_f64(80_000.0 / 6_000_000.0));
        let s = scenario(
            "arrivals = { poisson = { load = \"60%\", of = \"l\" } }\napp = { bulk = { kind = \"constant\", value = \"10 KB\" } }",
        );
        let m = expand_tcp(&s, 0, 1);
        let mut gaps = Sampler::new(Distribution::Exponential { mean: gap }, stream(1, "tcp/f/gap"));
        assert_eq!(m[0].flow.start, Distribution::constant(Duration::ZERO + gaps.sample()));
        assert_eq!(m[1].flow.start, Distribution::constant(m[0].flow.start.as_constant().unwrap() + gaps.sample()));
    }
}
