//! The live view of a running emulation (`squall ctl watch`, issue 32):
//! counters the data plane keeps ([`LiveCounters`]), sampled by the
//! control thread every [`INTERVAL`] while someone watches, and turned
//! into one JSON line per sample for each subscriber ([`Hub`]).
//!
//! The data plane only counts and, when asked (one request per
//! interval, whatever the number of subscribers), copies its counters
//! into a JSON value; rates, fan-out and writing happen on the control
//! side. Each subscriber has a bounded queue of [`QUEUE_LINES`] lines and
//! its own writer thread: a subscriber that reads slowly (or not at all)
//! loses lines, counted in the `dropped_lines` of the next line it gets,
//! and never holds up the sampler, the other subscribers or the data
//! plane (the design's rule for recording: a record that cannot be
//! written is counted, a packet is never delayed for it).

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use squall_link::{FlowKey, Instant, Path};
use squall_scenario::TopologyPath;

use crate::engine::command::{ControlMessage, ControlRequest};

/// How often the counters are sampled while someone watches: several
/// times a second, as a live chart needs, and few enough that the data
/// plane's copy of its counters stays negligible.
pub const INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Flows counted one by one; bytes of flows past this many are counted
/// together (`untracked_bytes`), so a run with thousands of flows does
/// not grow the table without bound.
pub const MAX_FLOWS: usize = 256;

/// State switches kept for the sampler between two samples.
pub const MAX_EVENTS: usize = 64;

/// Lines waiting for one subscriber before newer ones are dropped.
pub const QUEUE_LINES: usize = 8;

/// Subscribers at once; more are refused with a reason.
pub const MAX_SUBSCRIBERS: usize = 32;

/// A state entered (by the schedule, `squall ctl state`, or a blackout
/// switched by `squall ctl blackout`), as events.csv logs it.
#[derive(Clone, Debug, Serialize)]
pub struct StateEvent {
    /// Numbers the switches of the run, from 1.
    pub seq: u64,
    /// Emulation time, seconds.
    pub time: f64,
    pub state: String,
}

/// What the data plane counts for the live view.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// Bytes (IP packets, headers included) delivered by each path.
    path_bytes: Vec<u64>,
    /// Bytes delivered to a host, per flow; counted once someone watched.
    flows: HashMap<FlowKey, u64>,
    flows_counted: bool,
    untracked_bytes: u64,
    state: Option<String>,
    events: VecDeque<StateEvent>,
    switches: u64,
}

impl LiveCounters {
    pub fn path_delivered(&mut self, path: usize, bytes: u32) {
        if self.path_bytes.len() <= path {
            self.path_bytes.resize(path + 1, 0);
        }
        self.path_bytes[path] += u64::from(bytes);
    }

    /// A packet of `flow` written to its host. Only counted once a watch
    /// began, so that a run nobody watches pays no table look-up.
    pub fn flow_delivered(&mut self, flow: &FlowKey, bytes: u32) {
        if !self.flows_counted {
            return;
        }
        if let Some(n) = self.flows.get_mut(flow) {
            *n += u64::from(bytes);
        } else if self.flows.len() < MAX_FLOWS {
            self.flows.insert(*flow, u64::from(bytes));
        } else {
            self.untracked_bytes += u64::from(bytes);
        }
    }

    pub fn state_entered(&mut self, at: Instant, name: &str) {
        self.switches += 1;
        self.state = Some(name.to_string());
        if self.events.len() == MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(StateEvent { seq: self.switches, time: at.as_secs_f64(), state: name.to_string() });
    }

    /// The counters at `now`, with the state switches numbered above
    /// `since`: `paths` are the run's paths in routing order.
    pub fn sample<'a>(
        &mut self,
        now: Instant,
        since: u64,
        paths: impl Iterator<Item = (&'a TopologyPath, Option<&'a Path>)>,
    ) -> serde_json::Value {
        self.flows_counted = true;
        let paths: Vec<serde_json::Value> = paths
            .enumerate()
            .filter_map(|(i, (ends, path))| {
                let path = path?;
                let stats = path.stats();
                let stages: Vec<serde_json::Value> = path
                    .stage_stats(now)
                    .into_iter()
                    .map(|s| {
                        let rate = path.stage_config(&s.name).and_then(|c| c.rate).map(|r| r.bits_per_sec());
                        // Real packets inside the stage: queued, on its
                        // link or in its buffers.
                        let inside = (s.entered + s.duplicated).saturating_sub(s.delivered + s.dropped_total());
                        let mut stage = serde_json::json!({
                            "name": s.name,
                            "rate_bps": rate,
                            "packets_inside": inside,
                            "delivered_packets": s.delivered,
                            "dropped": s.dropped,
                            "background_packets": s.background,
                        });
                        // A classful queue: each class's packets waiting
                        // now (real and background), sent and dropped.
                        if !s.classes.is_empty() {
                            stage["classes"] = s
                                .classes
                                .iter()
                                .map(|c| {
                                    serde_json::json!({
                                        "name": c.name, "packets_queued": c.queued,
                                        "sent_packets": c.sent, "dropped_packets": c.dropped,
                                    })
                                })
                                .collect();
                        }
                        stage
                    })
                    .collect();
                Some(serde_json::json!({
                    "path": i,
                    "link": ends.link,
                    "direction": ends.direction,
                    "delivered_packets": stats.delivered,
                    "delivered_bytes": self.path_bytes.get(i).copied().unwrap_or(0),
                    "dropped_packets": stats.dropped,
                    "in_flight_packets": stats.in_flight,
                    "stages": stages,
                }))
            })
            .collect();
        let mut flows: Vec<(String, u64)> = self.flows.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        flows.sort();
        serde_json::json!({
            "time": now.as_secs_f64(),
            "state": self.state,
            "events": self.events.iter().filter(|e| e.seq > since).collect::<Vec<_>>(),
            "paths": paths,
            "flows": flows.into_iter().map(|(flow, bytes)| serde_json::json!({"flow": flow, "bytes": bytes})).collect::<Vec<_>>(),
            "untracked_bytes": self.untracked_bytes,
        })
    }
}

/// The line a subscriber gets from two consecutive samples: the sample
/// with each path's and flow's throughput over the interval between them
/// (bit/s, from the data plane's own clock), `null` on the first line.
pub fn line(previous: Option<&serde_json::Value>, sample: &serde_json::Value) -> serde_json::Value {
    let mut line = sample.clone();
    let dt = previous.and_then(|p| Some(sample["time"].as_f64()? - p["time"].as_f64()?)).filter(|dt| *dt > 0.0);
    line["interval_s"] = dt.into();
    let rate = |key: &str, list: &str, item: &serde_json::Value, bytes: &str| -> serde_json::Value {
        let (Some(dt), Some(p)) = (dt, previous) else { return serde_json::Value::Null };
        let before = p[list].as_array().and_then(|a| a.iter().find(|x| x[key] == item[key]));
        let before = before.and_then(|b| b[bytes].as_u64()).unwrap_or(0);
        let now = item[bytes].as_u64().unwrap_or(0);
        (now.saturating_sub(before) as f64 * 8.0 / dt).into()
    };
    for (list, key) in [("paths", "path"), ("flows", "flow")] {
        let rates: Vec<serde_json::Value> = sample[list]
            .as_array()
            .map(|a| a.iter().map(|item| rate(key, list, item, list_bytes(list))).collect())
            .unwrap_or_default();
        if let Some(items) = line[list].as_array_mut() {
            for (item, r) in items.iter_mut().zip(rates) {
                item["throughput_bps"] = r;
            }
        }
    }
    line
}

fn list_bytes(list: &str) -> &'static str {
    if list == "paths" { "delivered_bytes" } else { "bytes" }
}

struct Subscriber {
    lines: SyncSender<Arc<serde_json::Value>>,
    dropped: Arc<AtomicU64>,
}

/// The subscribers of one run and the sampler that feeds them.
#[derive(Default)]
pub struct Hub {
    subscribers: Mutex<Vec<Subscriber>>,
}

impl Hub {
    /// Takes `stream` as a subscriber: its own thread writes it the lines.
    pub fn subscribe(&self, stream: UnixStream) -> Result<(), String> {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        if subscribers.len() >= MAX_SUBSCRIBERS {
            return Err(format!("{MAX_SUBSCRIBERS} watchers already; try again when one has left"));
        }
        let (lines, receiver) = mpsc::sync_channel::<Arc<serde_json::Value>>(QUEUE_LINES);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&dropped);
        std::thread::Builder::new()
            .name("squall-watch".into())
            .spawn(move || write_lines(stream, &receiver, &counted))
            .map_err(|e| format!("cannot start a writer thread: {e}"))?;
        subscribers.push(Subscriber { lines, dropped });
        Ok(())
    }

    fn watched(&self) -> bool {
        !self.subscribers.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Hands `line` to every subscriber that has room; counts it dropped
    /// for the others; forgets those that left.
    fn publish(&self, line: serde_json::Value) {
        let line = Arc::new(line);
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| {
            match s.lines.try_send(Arc::clone(&line)) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) => {
                    s.dropped.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(TrySendError::Disconnected(_)) => false,
            }
        });
    }
}

fn write_lines(stream: UnixStream, lines: &mpsc::Receiver<Arc<serde_json::Value>>, dropped: &AtomicU64) {
    let mut w = &stream;
    for line in lines {
        let mut line = (*line).clone();
        line["dropped_lines"] = dropped.load(Ordering::Relaxed).into();
        if writeln!(w, "{line}").is_err() {
            return;
        }
    }
}

/// Samples the data plane every [`INTERVAL`] while `hub` has subscribers,
/// until `stop` is set; returns then, dropping the subscribers' queues
/// (their connections end).
pub fn sample_loop(hub: &Hub, to_dataplane: &Sender<ControlMessage>, stop: &AtomicBool) {
    let mut previous: Option<serde_json::Value> = None;
    let mut since = 0;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(INTERVAL);
        if !hub.watched() {
            previous = None;
            continue;
        }
        let (reply, answer) = mpsc::channel();
        if to_dataplane.send(ControlMessage { request: ControlRequest::Sample { since }, reply }).is_err() {
            break;
        }
        let Ok(Ok(sample)) = answer.recv_timeout(std::time::Duration::from_secs(1)) else { continue };
        since = sample["events"].as_array().and_then(|e| e.last()).and_then(|e| e["seq"].as_u64()).unwrap_or(since);
        hub.publish(line(previous.as_ref(), &sample));
        previous = Some(sample);
    }
    hub.subscribers.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time: f64, path_bytes: u64, flow_bytes: u64) -> serde_json::Value {
        serde_json::json!({
            "time": time,
            "paths": [{"path": 0, "delivered_bytes": path_bytes}],
            "flows": [{"flow": "tcp a > b", "bytes": flow_bytes}],
        })
    }

    #[test]
    fn throughput_is_bytes_over_the_interval() {
        let first = line(None, &sample(1.0, 1000, 500));
        assert!(first["paths"][0]["throughput_bps"].is_null() && first["interval_s"].is_null());
        // 25 000 bytes more in 0.2 s: 1 Mbit/s; 12 500 for the flow.
        let next = line(Some(&sample(1.0, 1000, 500)), &sample(1.2, 26_000, 13_000));
        let bps = |v: &serde_json::Value| v.as_f64().unwrap();
        assert!((bps(&next["paths"][0]["throughput_bps"]) - 1e6).abs() < 1e-3, "{next}");
        assert!((bps(&next["flows"][0]["throughput_bps"]) - 5e5).abs() < 1e-3, "{next}");
        // A flow first seen in this sample counts from zero.
        let mut later = sample(1.4, 26_000, 13_000);
        later["flows"].as_array_mut().unwrap().push(serde_json::json!({"flow": "udp c > d", "bytes": 2500}));
        let next = line(Some(&sample(1.2, 26_000, 13_000)), &later);
        assert!((bps(&next["flows"][1]["throughput_bps"]) - 1e5).abs() < 1e-3, "{next}");
        assert_eq!(bps(&next["paths"][0]["throughput_bps"]), 0.0);
    }

    #[test]
    fn flows_are_counted_once_watched_and_bounded() {
        let mut c = LiveCounters::default();
        let key = |port: u16| FlowKey {
            protocol: squall_link::Protocol::Udp,
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 1, 1].into(),
            src_port: port,
            dst_port: 9,
        };
        c.flow_delivered(&key(1), 100);
        let s = c.sample(Instant::ZERO, 0, std::iter::empty());
        assert_eq!(s["flows"], serde_json::json!([]), "nothing counted before a watch");
        for port in 0..(MAX_FLOWS as u16 + 10) {
            c.flow_delivered(&key(port), 100);
        }
        let s = c.sample(Instant::ZERO, 0, std::iter::empty());
        assert_eq!(s["flows"].as_array().unwrap().len(), MAX_FLOWS);
        assert_eq!(s["untracked_bytes"], 1000);
    }

    #[test]
    fn state_switches_are_numbered_and_given_once() {
        let mut c = LiveCounters::default();
        c.state_entered(Instant::from_millis(1500), "weak");
        c.state_entered(Instant::from_millis(2500), "handover");
        let s = c.sample(Instant::from_millis(3000), 0, std::iter::empty());
        assert_eq!(s["state"], "handover");
        assert_eq!(s["events"].as_array().unwrap().len(), 2);
        assert_eq!(s["events"][0]["time"], 1.5);
        let s = c.sample(Instant::from_millis(3200), 2, std::iter::empty());
        assert_eq!(s["events"], serde_json::json!([]));
        for _ in 0..MAX_EVENTS + 5 {
            c.state_entered(Instant::from_millis(4000), "weak");
        }
        let s = c.sample(Instant::from_millis(4000), 2, std::iter::empty());
        assert_eq!(s["events"].as_array().unwrap().len(), MAX_EVENTS);
    }

    /// A subscriber that never reads loses lines (counted) and the
    /// publisher never waits for it; one that reads gets every line.
    #[test]
    fn a_slow_subscriber_loses_lines_and_holds_up_nobody() {
        use std::io::BufRead;
        let hub = Hub::default();
        let (slow_server, _slow_client) = UnixStream::pair().unwrap();
        let (fast_server, fast_client) = UnixStream::pair().unwrap();
        hub.subscribe(slow_server).unwrap();
        hub.subscribe(fast_server).unwrap();
        let (read, got) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for l in std::io::BufReader::new(fast_client).lines() {
                let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap();
                read.send((v["n"].as_u64().unwrap(), v["dropped_lines"].as_u64().unwrap())).unwrap();
            }
        });
        // Lines of 16 KB: the slow client's socket buffer, then its
        // queue, fill; the fast one reads each line before the next.
        let pad = "x".repeat(16 * 1024);
        let n = 100;
        for i in 0..n {
            hub.publish(serde_json::json!({"n": i, "pad": pad}));
            assert_eq!(got.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), (i, 0));
        }
        let dropped = hub.subscribers.lock().unwrap()[0].dropped.load(Ordering::Relaxed);
        assert!(dropped > 0 && dropped < n, "slow subscriber dropped {dropped} of {n}");
        assert_eq!(hub.subscribers.lock().unwrap()[1].dropped.load(Ordering::Relaxed), 0);
        hub.subscribers.lock().unwrap().clear();
        reader.join().unwrap();
    }
}
