//! Time series of one run for the report's plots, read from its files:
//! the time-sequence diagram (seed 000 Figure 6), packets in each stage
//! over time, state changes and blackouts, and TCP variables from trace
//! CSVs when the run has them.

use std::collections::BTreeMap;
use std::path::Path;

use squall_link::{EventKind, Protocol};

use crate::capture::read_capture_skipping;
use crate::flows::{AnalysisError, RunHost};
use crate::plot::{Mark, Series, Shade};

/// The plots' data for one run.
#[derive(Clone, Debug, Default)]
pub struct RunDetail {
    /// Per data flow: sent, retransmitted and dropped packets as sequence
    /// (TCP: relative sequence number; UDP: packet number) against time.
    pub sequence: Vec<(String, Vec<Series>)>,
    /// States and blackouts as shaded intervals.
    pub shades: Vec<Shade>,
    /// Packets inside each stage over time.
    pub occupancy: Vec<Series>,
    /// TCP trace files: file name → one series per column.
    pub tcp: Vec<(String, Vec<Series>)>,
}

/// Reads the run in `dir` (HOST.pcap, events.csv, tcp-*.csv / *.tcpinfo.csv).
pub fn run_detail(dir: &Path, hosts: &[RunHost]) -> Result<RunDetail, AnalysisError> {
    let mut detail = RunDetail::default();
    // Packet ids (low 16 bits = IP id) → (flow, y) for marking drops.
    let mut position: BTreeMap<(String, u16), f64> = BTreeMap::new();
    for host in hosts {
        let path = dir.join(format!("{}.pcap", host.name));
        if !path.exists() {
            continue;
        }
        // Per flow: first transmissions and retransmissions as (time, y).
        let mut per_flow: BTreeMap<String, [Vec<(f64, f64)>; 2]> = BTreeMap::new();
        let mut first_seq: BTreeMap<String, u32> = BTreeMap::new();
        let mut highest: BTreeMap<String, i64> = BTreeMap::new();
        let mut count: BTreeMap<String, f64> = BTreeMap::new();
        for c in read_capture_skipping(&path)?.0.into_iter().filter(|c| host.addresses.has(c.flow.src)) {
            let name = c.flow.to_string();
            let t = c.time.as_secs_f64();
            let (y, retransmitted) = match (c.flow.protocol, c.tcp) {
                (Protocol::Tcp, Some(tcp)) if tcp.payload_len > 0 => {
                    let base = *first_seq.entry(name.clone()).or_insert(tcp.seq);
                    let rel = tcp.seq.wrapping_sub(base) as i64;
                    let end = rel + tcp.payload_len as i64;
                    let h = highest.entry(name.clone()).or_insert(i64::MIN);
                    let again = end <= *h;
                    *h = (*h).max(end);
                    (rel as f64, again)
                }
                (Protocol::Tcp, _) => continue,
                _ => {
                    let n = count.entry(name.clone()).or_insert(0.0);
                    *n += 1.0;
                    (*n, false)
                }
            };
            position.insert((name.clone(), c.ip_id), y);
            per_flow.entry(name).or_default()[usize::from(retransmitted)].push((t, y));
        }
        for (name, [sent, again]) in per_flow {
            // A direction with a handful of packets (ACKs' replies, a
            // request) makes no useful diagram.
            if sent.len() + again.len() < 5 {
                continue;
            }
            let mut series = vec![Series { name: "sent".into(), mark: Mark::Dots, points: sent }];
            if !again.is_empty() {
                series.push(Series { name: "retransmitted".into(), mark: Mark::Crosses, points: again });
            }
            detail.sequence.push((name, series));
        }
    }
    read_events(dir, &position, &mut detail)?;
    detail.tcp = read_tcp_trace_files(dir)?;
    Ok(detail)
}

fn read_events(
    dir: &Path,
    position: &BTreeMap<(String, u16), f64>,
    detail: &mut RunDetail,
) -> Result<(), AnalysisError> {
    let path = dir.join("events.csv");
    if !path.exists() {
        return Ok(());
    }
    let file = path.display().to_string();
    let f = std::fs::File::open(&path).map_err(|source| AnalysisError::Open { file: file.clone(), source })?;
    let reader = squall_trace::EventLogReader::new(std::io::BufReader::new(f))
        .map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
    let mut inside: BTreeMap<String, (i64, Vec<(f64, f64)>)> = BTreeMap::new();
    let mut drops: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut blackout_from: BTreeMap<String, f64> = BTreeMap::new();
    let mut state_from: Option<(f64, String)> = None;
    let mut last_time = 0.0;
    for e in reader {
        let e = e.map_err(|source| AnalysisError::Events { file: file.clone(), source })?;
        let t = e.time.as_secs_f64();
        last_time = t;
        let stage = e.stage.to_string();
        let delta = match e.kind {
            EventKind::Enqueue => 1,
            EventKind::Deliver => -1,
            EventKind::Drop(_) => {
                if let (Some(flow), Some(id)) = (e.flow, e.packet) {
                    let name = flow.to_string();
                    if let Some(&y) = position.get(&(name.clone(), id.0 as u16)) {
                        drops.entry(name).or_default().push((t, y));
                    }
                }
                // Packets dropped on arrival never entered.
                if matches!(e.kind, EventKind::Drop(r) if r == squall_link::DropReason::QueueOverflow || r == squall_link::DropReason::Red)
                {
                    0
                } else {
                    -1
                }
            }
            EventKind::StateChange if !stage.starts_with("blackout-") => {
                if let Some((from, name)) = state_from.take() {
                    detail.shades.push(Shade { from, to: t, label: format!("state {name}") });
                }
                state_from = Some((t, stage.clone()));
                0
            }
            EventKind::BlackoutStart => {
                blackout_from.entry(stage.clone()).or_insert(t);
                0
            }
            EventKind::BlackoutEnd => {
                if let Some(from) = blackout_from.remove(&stage) {
                    detail.shades.push(Shade { from, to: t, label: format!("blackout {stage}") });
                }
                0
            }
            _ => 0,
        };
        if delta != 0 {
            let (n, points) = inside.entry(stage).or_default();
            // Overflow drops happen before enqueue and leave the count as it was.
            *n = (*n + delta).max(0);
            points.push((t, *n as f64));
        }
    }
    if let Some((from, name)) = state_from {
        detail.shades.push(Shade { from, to: last_time, label: format!("state {name}") });
    }
    for (from, stage) in blackout_from.into_iter().map(|(s, f)| (f, s)) {
        detail.shades.push(Shade { from, to: last_time, label: format!("blackout {stage}") });
    }
    detail.occupancy =
        inside.into_iter().map(|(name, (_, points))| Series { name, mark: Mark::Line, points }).collect();
    for (name, series) in &mut detail.sequence {
        if let Some(points) = drops.remove(name.as_str()) {
            series.push(Series { name: "dropped".into(), mark: Mark::Crosses, points });
        }
    }
    Ok(())
}

/// What Linux's TCP_INFO (and TCP models that mimic it) report for an
/// infinite ssthresh.
const UNSET: f64 = 2_147_483_647.0;

/// TCP variables over time: any `tcp*.csv` or `*tcpinfo*.csv` with a
/// `time` column; each other numeric column becomes a series (an empty
/// cell, as an unset ssthresh, leaves the column out at that time); a file
/// without a `time` column is not a trace. A file that cannot be read, or
/// a row that is not CSV or whose time is not a number, is an error naming
/// the file and line: nothing of a trace is dropped unsaid.
pub fn read_tcp_trace_files(dir: &Path) -> Result<Vec<(String, Vec<Series>)>, AnalysisError> {
    let mut out = Vec::new();
    // The simulator writes traces beside events.csv; emulation workloads
    // (squall tool bulk --info-csv) write them in workloads/.
    let mut files: Vec<_> = [dir.to_path_buf(), dir.join("workloads")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".csv") && (n.starts_with("tcp") || n.contains("tcpinfo"))
        })
        .collect();
    files.sort();
    for path in files {
        let file = path.display().to_string();
        let bad = |line: u64, message: String| AnalysisError::TcpTrace { file: file.clone(), line, message };
        let mut reader = csv::Reader::from_path(&path)
            .map_err(|e| AnalysisError::Open { file: file.clone(), source: std::io::Error::other(e) })?;
        let header = reader.headers().cloned().map_err(|e| bad(1, format!("cannot read the header: {e}")))?;
        // A workload's own CSV that happens to be named tcp*.csv is not a
        // trace: a trace's header has a time column.
        let Some(time_col) = header.iter().position(|h| h == "time" || h == "time_s") else { continue };
        let mut columns: Vec<Vec<(f64, f64)>> = vec![Vec::new(); header.len()];
        for row in reader.records() {
            let row = row.map_err(|e| bad(e.position().map_or(0, |p| p.line()), format!("not a CSV row: {e}")))?;
            let line = row.position().map_or(0, |p| p.line());
            let cell = row.get(time_col).unwrap_or("");
            let t = cell.parse::<f64>().map_err(|_| bad(line, format!("time `{cell}` is not a number")))?;
            for (i, v) in row.iter().enumerate() {
                // Linux reports an unset ssthresh as 2^31-1: leave it out.
                if let (true, Ok(v)) = (i != time_col, v.parse::<f64>())
                    && v < UNSET
                {
                    columns[i].push((t, v));
                }
            }
        }
        let series = header
            .iter()
            .zip(columns)
            .filter(|(_, pts)| !pts.is_empty())
            .map(|(h, points)| Series { name: h.to_string(), mark: Mark::Line, points })
            .collect();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("tcp").to_string();
        out.push((name, series));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(name: &str, text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
        dir
    }

    #[test]
    fn a_trace_gives_one_series_per_column_and_leaves_unset_cells_out() {
        // The simulator's layout: ssthresh unset (empty) at first, then set.
        let dir = dir_with("tcp-bulk-0-client.csv", "time,cwnd,ssthresh\n0.0,14600,\n0.5,29200,20000\n");
        let traces = read_tcp_trace_files(dir.path()).unwrap();
        assert_eq!(traces.len(), 1);
        let (name, series) = &traces[0];
        assert_eq!(name, "tcp-bulk-0-client.csv");
        let cwnd = series.iter().find(|s| s.name == "cwnd").unwrap();
        assert_eq!(cwnd.points, vec![(0.0, 14600.0), (0.5, 29200.0)]);
        let ssthresh = series.iter().find(|s| s.name == "ssthresh").unwrap();
        assert_eq!(ssthresh.points, vec![(0.5, 20000.0)]);
    }

    #[test]
    fn a_bad_row_is_an_error_naming_the_file_and_line() {
        let dir = dir_with("tcp-x.csv", "time,cwnd\n0.0,10\nsoon,20\n");
        let e = read_tcp_trace_files(dir.path()).unwrap_err().to_string();
        assert!(e.contains("tcp-x.csv:3:") && e.contains("time `soon` is not a number"), "{e}");
        // A row with a missing field is not CSV of that header.
        let dir = dir_with("tcp-y.csv", "time,cwnd\n0.0,10\n0.1\n");
        let e = read_tcp_trace_files(dir.path()).unwrap_err().to_string();
        assert!(e.contains("tcp-y.csv:3:") && e.contains("not a CSV row"), "{e}");
    }

    #[test]
    fn a_csv_without_a_time_column_is_not_a_trace() {
        let dir = dir_with("tcp-notes.csv", "host,bytes\na,1\n");
        assert!(read_tcp_trace_files(dir.path()).unwrap().is_empty());
    }
}
