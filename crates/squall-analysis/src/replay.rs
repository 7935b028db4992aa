//! A finished run replayed as the live view sees a running emulation
//! (issue 32: "a simulation replaying at a chosen speed, so a user can
//! watch a model behave"): its events.csv, streamed, cut into samples
//! every `interval` of the run's time, each shaped as a `squall ctl watch`
//! sample (squall-emu `engine::watch::LiveCounters::sample`): per path
//! (a link's direction) the packets and bytes its last stage delivered,
//! per stage the rate in force, the packets inside, deliveries and drops
//! by reason, per flow the bytes delivered, and the state switches. The
//! pacing in wall-clock time is the caller's.
//!
//! Memory is bounded by the scenario's stages and the flows counted
//! ([`MAX_FLOWS`]; the rest together in `untracked_bytes`), not by the
//! run's length: the file is read one event at a time.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use squall_link::{EventKind, FlowKey, Inside};

use crate::flows::AnalysisError;
use crate::timeline::rate_bps;

/// Flows counted one by one, as the live view counts them.
pub const MAX_FLOWS: usize = 256;

/// One stage of a path, as the sample shows it.
#[derive(Debug)]
struct StageCounter {
    name: String,
    /// The rate in force, bit/s (`None`: not a constant rate).
    rate_bps: Option<u64>,
    inside: Inside,
    delivered: u64,
    dropped: BTreeMap<&'static str, u64>,
}

#[derive(Debug)]
struct PathCounter {
    link: usize,
    direction: &'static str,
    stages: Vec<StageCounter>,
    delivered_packets: u64,
    delivered_bytes: u64,
    dropped_packets: u64,
}

/// A run's events turned into live-view samples; see the module's text.
pub struct Replay {
    events: squall_trace::EventLogReader<BufReader<File>>,
    file: String,
    /// The next event, read but past the sample being built.
    ahead: Option<squall_link::Event>,
    interval: f64,
    /// Samples given so far: the next is at (samples + 1) × interval.
    samples: u64,
    end: f64,
    done: bool,
    /// events.csv has been read to its end.
    exhausted: bool,
    paths: Vec<PathCounter>,
    /// Stage name → (path, stage) index.
    where_is: HashMap<String, (usize, usize)>,
    /// Each state's rates: state → stage → bit/s.
    state_rates: HashMap<String, Vec<(String, Option<u64>)>>,
    flows: HashMap<FlowKey, u64>,
    untracked_bytes: u64,
    state: Option<String>,
    switches: u64,
    events_since: Vec<serde_json::Value>,
}

impl Replay {
    /// The replay of `dir`'s events.csv with the resolved scenario
    /// `scenario` (scenario.toml as JSON), a sample every `interval`
    /// seconds of the run, from the first interval to the scenario's
    /// `duration` (or the last event).
    pub fn open(dir: &Path, scenario: &serde_json::Value, interval: f64) -> Result<Replay, AnalysisError> {
        let path = dir.join("events.csv");
        let file = path.display().to_string();
        let f = File::open(&path).map_err(|source| AnalysisError::Open { file: file.clone(), source })?;
        let events = squall_trace::EventLogReader::new(BufReader::new(f))
            .map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
        let mut paths = Vec::new();
        let mut where_is = HashMap::new();
        for (link, l) in scenario["links"].as_array().into_iter().flatten().enumerate() {
            for direction in ["downlink", "uplink"] {
                let stages: Vec<StageCounter> = l[direction]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| StageCounter {
                        name: s["name"].as_str().unwrap_or_default().to_string(),
                        rate_bps: rate_bps(&s["rate"]),
                        inside: Inside::default(),
                        delivered: 0,
                        dropped: BTreeMap::new(),
                    })
                    .collect();
                if stages.is_empty() {
                    continue;
                }
                for (i, s) in stages.iter().enumerate() {
                    where_is.insert(s.name.clone(), (paths.len(), i));
                }
                paths.push(PathCounter {
                    link,
                    direction,
                    stages,
                    delivered_packets: 0,
                    delivered_bytes: 0,
                    dropped_packets: 0,
                });
            }
        }
        let mut state_rates = HashMap::new();
        for s in scenario["states"].as_array().into_iter().flatten() {
            let rates = s["set"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, patch)| !patch["rate"].is_null())
                .map(|(stage, patch)| (stage.clone(), rate_bps(&patch["rate"])))
                .collect();
            state_rates.insert(s["name"].as_str().unwrap_or_default().to_string(), rates);
        }
        let end = scenario["duration"]
            .as_str()
            .and_then(|d| d.parse::<squall_link::Duration>().ok())
            .map_or(f64::INFINITY, |d| d.as_secs_f64());
        Ok(Replay {
            events,
            file,
            ahead: None,
            interval,
            samples: 0,
            end,
            done: false,
            exhausted: false,
            paths,
            where_is,
            state_rates,
            flows: HashMap::new(),
            untracked_bytes: 0,
            state: None,
            switches: 0,
            events_since: Vec::new(),
        })
    }

    fn count(&mut self, e: &squall_link::Event) {
        let at = |me: &Self| me.where_is.get(&*e.stage).copied();
        match e.kind {
            EventKind::StateChange => {
                self.switches += 1;
                let name = e.stage.to_string();
                if let Some(rates) = self.state_rates.get(&name) {
                    for (stage, rate) in rates {
                        if let Some(&(p, s)) = self.where_is.get(stage) {
                            self.paths[p].stages[s].rate_bps = *rate;
                        }
                    }
                }
                self.events_since.push(serde_json::json!({
                    "seq": self.switches, "time": e.time.as_secs_f64(), "state": name,
                }));
                self.state = Some(name);
            }
            EventKind::Enqueue => {
                if let Some((p, s)) = at(self) {
                    self.paths[p].stages[s].inside.apply(e);
                }
            }
            EventKind::Deliver => {
                let Some((p, s)) = at(self) else { return };
                let path = &mut self.paths[p];
                let stage = &mut path.stages[s];
                stage.inside.apply(e);
                stage.delivered += 1;
                if s + 1 == path.stages.len() {
                    path.delivered_packets += 1;
                    path.delivered_bytes += u64::from(e.size);
                    if let Some(flow) = &e.flow {
                        if let Some(n) = self.flows.get_mut(flow) {
                            *n += u64::from(e.size);
                        } else if self.flows.len() < MAX_FLOWS {
                            self.flows.insert(*flow, u64::from(e.size));
                        } else {
                            self.untracked_bytes += u64::from(e.size);
                        }
                    }
                }
            }
            EventKind::Drop(reason) => {
                let Some((p, s)) = at(self) else { return };
                let path = &mut self.paths[p];
                let stage = &mut path.stages[s];
                stage.inside.apply(e);
                *stage.dropped.entry(reason.as_str()).or_insert(0) += 1;
                path.dropped_packets += 1;
            }
            _ => {}
        }
    }

    fn sample(&mut self, time: f64) -> serde_json::Value {
        let paths: Vec<serde_json::Value> = self
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let stages: Vec<serde_json::Value> = p
                    .stages
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "name": s.name, "rate_bps": s.rate_bps, "packets_inside": s.inside.packets(),
                            "delivered_packets": s.delivered, "dropped": s.dropped,
                        })
                    })
                    .collect();
                let inside: u64 = p.stages.iter().map(|s| s.inside.packets()).sum();
                serde_json::json!({
                    "path": i, "link": p.link, "direction": p.direction,
                    "delivered_packets": p.delivered_packets, "delivered_bytes": p.delivered_bytes,
                    "dropped_packets": p.dropped_packets, "in_flight_packets": inside, "stages": stages,
                })
            })
            .collect();
        let mut flows: Vec<(String, u64)> = self.flows.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        flows.sort();
        serde_json::json!({
            "time": time,
            "state": self.state,
            "events": std::mem::take(&mut self.events_since),
            "paths": paths,
            "flows": flows.into_iter().map(|(flow, bytes)| serde_json::json!({ "flow": flow, "bytes": bytes })).collect::<Vec<_>>(),
            "untracked_bytes": self.untracked_bytes,
        })
    }
}

impl Iterator for Replay {
    type Item = Result<serde_json::Value, AnalysisError>;

    /// The sample at the next multiple of the interval (the last one at
    /// the run's end): every event at or before it counted, none after.
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // A multiple of the interval, not a sum of them (no drift), and the
        // end itself when within a nanosecond of it.
        let mut time = (self.samples + 1) as f64 * self.interval;
        if time >= self.end - 1e-9 {
            time = self.end;
        }
        while !self.exhausted {
            let e = match self.ahead.take() {
                Some(e) => e,
                None => match self.events.next() {
                    Some(Ok(e)) => e,
                    Some(Err(source)) => {
                        self.done = true;
                        return Some(Err(AnalysisError::Events { file: self.file.clone(), source }));
                    }
                    None => {
                        self.exhausted = true;
                        break;
                    }
                },
            };
            if e.time.as_secs_f64() > time {
                self.ahead = Some(e);
                break;
            }
            self.count(&e);
        }
        // The run's end: its duration, or (a file without one) the last
        // event's interval.
        if time >= self.end || (self.exhausted && !self.end.is_finite()) {
            self.done = true;
            time = time.min(self.end);
        }
        self.samples += 1;
        Some(Ok(self.sample(time)))
    }
}
