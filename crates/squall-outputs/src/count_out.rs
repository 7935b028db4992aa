//! The results of `[[workload.tcp]]` entries with `count`
//! (squall_scenario::count): their flows leave summary.json's per-flow
//! lists for one row each in flows.csv, and each entry gets a summary per
//! replication and statistics over replications.

use std::collections::{BTreeMap, HashMap};

use squall_analysis::stats::{Summary, summarize};
use squall_analysis::summary_file::{CountFlow, CountSummary};
use squall_scenario::count::TcpMember;
use squall_scenario::{Scenario, TcpApp};
use squall_sim::RunResult;

/// Takes the flows of `count` entries out of `run` (its `tcp_flows` and
/// the two directions of each in `flows`) and returns each entry's
/// summary and the flows' rows, in entry and flow order.
pub(crate) fn take_count_flows(
    scenario: &Scenario,
    replication: u32,
    run: &mut RunResult,
) -> (Vec<CountSummary>, Vec<CountFlow>) {
    // Entry name → (entry, its flows in member order). A member's name is
    // `ENTRY#k` (squall_scenario::count::member_name) and it is the k-th
    // flow of its entry, so a flow is found by its name's parts, not by a
    // map of every member's name (at 100 000 flows that map was 12 % of
    // the whole run's CPU time).
    let mut entries: HashMap<&str, (usize, Vec<TcpMember>)> = HashMap::new();
    let mut order = Vec::new();
    for (e, f) in scenario.workload.tcp.iter().enumerate() {
        if f.count.is_none() && f.arrivals.is_none() {
            continue;
        }
        order.push(e);
        entries.insert(f.name.as_str(), (e, squall_scenario::count::expand_tcp(scenario, e, run.seed)));
    }
    if entries.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let member = |name: &str| {
        let (entry, k) = name.rsplit_once('#')?;
        let (e, members) = entries.get(entry)?;
        let m = members.get(k.parse::<usize>().ok()?)?;
        (m.flow.name == name).then_some((*e, m))
    };
    let end = run.end.as_secs_f64();
    let topology = squall_scenario::Topology::new(scenario).ok();
    // The ideal FCT depends on the entry's TCP settings, the hosts and the
    // size only: computed once for each.
    let mut ideal: HashMap<(usize, &str, &str, u64), Option<f64>> = HashMap::new();
    let mut rows: Vec<(usize, CountFlow)> = Vec::new();
    run.tcp_flows.retain(|t| {
        let Some((e, m)) = member(&t.name) else { return true };
        let f = &m.flow;
        let fct = if t.completed { t.transfer_time } else { end - t.start };
        let bytes = match &f.app {
            TcpApp::Bulk(b) => b.as_constant().map_or(0, |b| b.0),
            _ => t.delivered_bytes,
        };
        let ideal_fct = *ideal.entry((e, f.from.as_str(), f.to.as_str(), bytes)).or_insert_with(|| {
            topology.as_ref().and_then(|topology| squall_sim::ideal::ideal_fct(scenario, topology, f))
        });
        rows.push((
            e,
            CountFlow {
                replication,
                entry: scenario.workload.tcp[e].name.clone(),
                flow: m.index.unwrap_or(0),
                src: f.from.clone(),
                dst: f.to.clone(),
                dst_port: f.dst_port.unwrap_or(0),
                start: t.start,
                bytes,
                completed: t.completed,
                fct,
                goodput_bps: t.goodput_bps,
                retransmitted_segments: t.sender.retransmitted_segments,
                timeouts: Some(t.sender.timeouts),
                ideal_fct,
                slowdown: ideal_fct.map(|i| fct / i),
            },
        ));
        false
    });
    run.flows.retain(|f| {
        let name = f.name.strip_suffix(":c2s").or_else(|| f.name.strip_suffix(":s2c"));
        name.is_none_or(|m| member(m).is_none())
    });
    rows.sort_by_key(|(e, r)| (*e, r.flow));
    let summaries = order
        .iter()
        .map(|&e| {
            let of_entry: Vec<&CountFlow> = rows.iter().filter(|(re, _)| *re == e).map(|(_, r)| r).collect();
            CountSummary::of(&scenario.workload.tcp[e].name, &of_entry)
        })
        .collect();
    (summaries, rows.into_iter().map(|(_, r)| r).collect())
}

/// Entry → size bucket → metric → statistics over the replications with
/// flows in the bucket (`runs`: each replication's entry summaries).
pub fn aggregate_buckets<'a>(
    runs: impl IntoIterator<Item = &'a [CountSummary]>,
) -> BTreeMap<String, BTreeMap<String, BTreeMap<String, Summary>>> {
    let mut samples: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<f64>>>> = BTreeMap::new();
    for run in runs {
        for c in run {
            for b in &c.buckets {
                let m = samples.entry(c.entry.clone()).or_default().entry(b.bucket.clone()).or_default();
                let mut put = |k: &str, v: f64| m.entry(k.to_string()).or_default().push(v);
                put("flows", b.flows.into());
                put("completed", b.completed.into());
                put("fct_mean", b.fct_mean);
                put("fct_p50", b.fct_p50);
                put("fct_p99", b.fct_p99);
                put("slowdown_mean", b.slowdown_mean);
                put("slowdown_p50", b.slowdown_p50);
                put("slowdown_p99", b.slowdown_p99);
            }
        }
    }
    samples
        .into_iter()
        .map(|(e, buckets)| {
            let buckets = buckets
                .into_iter()
                .map(|(b, m)| (b, m.into_iter().map(|(k, xs)| (k, summarize(&xs))).collect()))
                .collect();
            (e, buckets)
        })
        .collect()
}

/// Entry → metric → statistics over replications (`runs`: each
/// replication's entry summaries).
pub(crate) fn aggregate<'a>(
    runs: impl IntoIterator<Item = &'a [CountSummary]>,
) -> BTreeMap<String, BTreeMap<String, Summary>> {
    let mut samples: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for run in runs {
        for c in run {
            let m = samples.entry(c.entry.clone()).or_default();
            let mut put = |k: &str, v: f64| m.entry(k.to_string()).or_default().push(v);
            put("flows", c.flows.into());
            put("completed", c.completed.into());
            put("fct_mean", c.fct_mean);
            put("fct_p50", c.fct_p50);
            put("fct_p99", c.fct_p99);
            put("goodput_mean_bps", c.goodput_mean_bps);
        }
    }
    samples.into_iter().map(|(k, m)| (k, m.into_iter().map(|(mk, xs)| (mk, summarize(&xs))).collect())).collect()
}
