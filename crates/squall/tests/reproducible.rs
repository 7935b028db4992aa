//! Over random scenarios: the engine conserves packets per flow, and the
//! same seed gives byte-identical events.csv and pcap files.

use proptest::prelude::*;
use squall_sim::{RunOptions, RunResult};
use squall_trace::{EventLogWriter, PcapWriter};

/// A random two-host scenario with one or two stages per direction, states
/// and a blackout, and two or three UDP flows.
fn arb_scenario() -> impl Strategy<Value = String> {
    (
        (100u32..5000, 0u32..80, 0u32..30, prop::option::of(1u32..20)),
        (0u8..4, 0u32..20, 0u8..3, any::<bool>()),
        (any::<bool>(), 1u32..30, 0u32..10, any::<bool>()),
        (prop::collection::vec((40u32..1400, 5u32..400, any::<bool>()), 2..4), any::<bool>()),
    )
        .prop_map(|((kbit, delay, jitter, queue), (model, pct, mode, reorder), (two_stage, state_at, bo_at, hold), (flows, frag))| {
            let error = match model {
                0 => String::new(),
                1 => format!("error = {{ packet = \"{pct}%\" }}"),
                2 => format!("error = {{ bit = {:e} }}", pct as f64 * 1e-6),
                _ => "error = { gilbert_elliott = { p = 0.02, r = 0.25 } }".to_string(),
            };
            let error_mode = ["\"drop\"", "\"corrupt\"", "{ arq = { delay = \"3 ms\", retries = 2 } }"][mode as usize];
            let queue = queue.map_or(String::new(), |q| format!("queue = {{ packets = {q} }}"));
            let jitter = if jitter > 0 { format!("jitter = {{ kind = \"uniform\", low = \"0 ms\", high = \"{jitter} ms\" }}") } else { String::new() };
            let frag = if frag { "fragmentation = { frame_payload = \"200 B\", frame_header = \"6 B\" }" } else { "" };
            let second = |dir: &str| if two_stage { format!("[[links.{dir}]]\nname = \"core-{dir}\"\nrate = \"100 Mbit/s\"\ndelay = \"5 ms\"\n") } else { String::new() };
            let stage = |dir: &str| {
                format!(
                    "[[links.{dir}]]\nname = \"radio-{dir}\"\nrate = \"{kbit} kbit/s\"\ndelay = \"{delay} ms\"\n{queue}\n{error}\nerror_mode = {error_mode}\n{jitter}\n{frag}\nreorder = {reorder}\n{}",
                    second(dir)
                )
            };
            let mut s = format!(
                "name = \"random\"\nduration = \"40 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\naddress = \"10.0.1.1\"\n[[links]]\nbetween = [\"a\", \"b\"]\n{}{}",
                stage("downlink"),
                stage("uplink")
            );
            s += &format!("[[states]]\nname = \"worse\"\nat = \"{state_at} s\"\nset.radio-downlink = {{ rate = \"{} kbit/s\", delay = \"{} ms\" }}\n", kbit / 2 + 50, delay + 20);
            s += &format!(
                "[[blackouts]]\nat = \"{bo_at} s\"\nduration = \"2 s\"\ndirection = \"both\"\nmode = \"{}\"\n",
                if hold { "hold" } else { "drop" }
            );
            for (i, (size, kbps, poisson)) in flows.iter().enumerate() {
                let (from, to) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
                s += &format!(
                    "[[workload.udp]]\nname = \"f{i}\"\nfrom = \"{from}\"\nto = \"{to}\"\nsize = \"{size} B\"\nrate = \"{kbps} kbit/s\"\narrivals = \"{}\"\n",
                    if *poisson { "poisson" } else { "constant" }
                );
            }
            s
        })
}

const ALL: RunOptions = RunOptions { record_events: true, record_packets: false, record_captures: true };

fn files(run: &RunResult) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut log = EventLogWriter::new(Vec::new()).unwrap();
    for e in &run.events {
        log.write_event(e).unwrap();
    }
    let events = log.into_inner().unwrap();
    let pcaps = run
        .captures
        .iter()
        .map(|c| {
            let mut w = PcapWriter::new(Vec::new()).unwrap();
            for (t, _, p) in &c.packets {
                w.write_packet(*t, p).unwrap();
            }
            w.into_inner()
        })
        .collect();
    (events, pcaps)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn packets_are_conserved_and_same_seed_gives_same_bytes(text in arb_scenario(), seed in 0u64..1000) {
        let scenario = squall_scenario::parse("random.toml", &text, std::path::Path::new("."))
            .map_err(|e| TestCaseError::fail(format!("{e:?}\n{text}")))?;
        // run() itself fails on any conservation violation inside a path.
        let a = squall_sim::run(&scenario, seed, ALL).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        for f in &a.flows {
            let dropped: u64 = f.dropped.values().sum();
            prop_assert_eq!(f.sent_packets, f.delivered_packets + dropped + f.in_flight, "flow {}", f.name);
        }
        let b = squall_sim::run(&scenario, seed, ALL).unwrap();
        let (ea, pa) = files(&a);
        let (eb, pb) = files(&b);
        prop_assert!(ea.len() > 100);
        prop_assert_eq!(ea, eb);
        prop_assert_eq!(pa, pb);
    }
}
