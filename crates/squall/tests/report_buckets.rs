//! `squall report DIR` on a `squall sim` output of an open-loop workload:
//! the FCT and slowdown table by size bucket over the replications (issue
//! 35), checked against the same table computed here by hand from the
//! run's flows.csv (each replication's mean over its completed flows, then
//! the mean over the replications and Student's t interval).

use std::collections::BTreeMap;

mod common;
use common::{csv_rows, ok, squall};

/// Poisson arrivals at 40% of a 10 Mbit/s, 10 ms link for 3 s, sizes from
/// a CDF over 2 KB .. 2 MB, three replications.
const OPEN_LOOP: &str = r#"
name = "open-loop-table"
duration = "8 s"
seed = 3
replications = 3
[[hosts]]
name = "client"
address = "10.0.0.1"
[[hosts]]
name = "server"
address = "10.0.1.1"
[[links]]
between = ["client", "server"]
downlink = [{ name = "bottleneck", rate = "10 Mbit/s", delay = "10 ms" }]
uplink = [{ name = "back", rate = "10 Mbit/s", delay = "10 ms" }]
[[workload.tcp]]
name = "web"
from = "client"
to = "server"
app = { bulk = { kind = "cdf", points = [[2000, 0], [10000, 0.3], [100000, 0.7], [1000000, 0.95], [2000000, 1]] } }
arrivals = { poisson = { load = "40%", of = "bottleneck" }, from = "0 s", until = "3 s" }
"#;

/// Per replication, the completed flows' FCTs (s) and slowdowns.
type ByReplication = BTreeMap<u32, (Vec<f64>, Vec<f64>)>;

/// t(0.975, n − 1) for n = 2 and 3 replications.
fn t975(n: usize) -> f64 {
    match n {
        2 => 12.706_204_736,
        3 => 4.302_652_730,
        _ => panic!("no t quantile for {n} replications here"),
    }
}

fn bucket(bytes: u64) -> &'static str {
    match bytes {
        0..10_000 => "<10KB",
        10_000..100_000 => "10KB-100KB",
        100_000..1_000_000 => "100KB-1MB",
        _ => ">=1MB",
    }
}

/// Mean and 95% half width of `xs` (one value per replication).
fn mean_ci(xs: &[f64]) -> (f64, Option<f64>) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, None);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, Some(t975(n) * var.sqrt() / (n as f64).sqrt()))
}

/// "0.1234 ±0.0100" or "0.1234".
fn parse_cell(cell: &str) -> (f64, Option<f64>) {
    match cell.split_once(" ±") {
        Some((m, h)) => (m.parse().unwrap(), Some(h.parse().unwrap())),
        None => (cell.parse().unwrap(), None),
    }
}

/// Checks the table rows of entry `web` that `stdout` prints (its lines
/// starting with "web ") against a hand computation from `rows` (flows.csv
/// rows of every replication): per bucket, each replication's mean FCT and
/// slowdown over its completed flows, then their mean and Student-t 95%
/// half width over the replications.
fn check_table_against_flows(rows: &[BTreeMap<String, String>], stdout: &str) {
    let mut per: BTreeMap<&str, ByReplication> = BTreeMap::new();
    for r in rows {
        if r["entry"] != "web" || r["completed"] != "true" {
            continue;
        }
        let e = per.entry(bucket(r["bytes"].parse().unwrap())).or_default();
        let (fcts, slowdowns) = e.entry(r["replication"].parse().unwrap()).or_default();
        fcts.push(r["fct_s"].parse().unwrap());
        slowdowns.push(r["slowdown"].parse().unwrap());
    }
    assert!(per.len() >= 3, "the CDF fills at least three buckets: {per:?}");
    let avg = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let table: BTreeMap<String, Vec<String>> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("web "))
        .map(|l| {
            let cells: Vec<String> = l.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect();
            (cells[1].clone(), cells)
        })
        .collect();
    assert_eq!(table.len(), per.len(), "one row per bucket with completed flows:\n{stdout}");
    for (name, reps) in &per {
        let cells = &table[*name];
        let fct: Vec<f64> = reps.values().map(|(f, _)| avg(f)).collect();
        let slowdown: Vec<f64> = reps.values().map(|(_, s)| avg(s)).collect();
        assert_eq!(cells[2], reps.len().to_string(), "{name}: replications\n{stdout}");
        for ((mean, half), cell, digits) in [(mean_ci(&fct), &cells[5], 4), (mean_ci(&slowdown), &cells[7], 2)] {
            let (m, h) = parse_cell(cell);
            let rounding = 0.5 * 10f64.powi(-digits) + 1e-9;
            assert!((m - mean).abs() <= rounding, "{name}: mean {m} printed, {mean} by hand\n{stdout}");
            match (h, half) {
                (Some(h), Some(half)) => {
                    assert!((h - half).abs() <= rounding, "{name}: ±{h} printed, ±{half} by hand\n{stdout}")
                }
                (None, None) => {}
                other => panic!("{name}: interval {other:?}\n{stdout}"),
            }
        }
    }
}

/// The rows of entry `web` in the bucket tables of `html` (report.html),
/// one line each as the terminal prints them (cells two spaces apart),
/// so that [`check_table_against_flows`] reads them as it reads stdout.
fn html_table_lines(html: &str) -> String {
    html.split("<tr>")
        .filter(|row| row.starts_with("<td>web</td>"))
        .map(|row| {
            // Cells as text: `<10KB` is written `&lt;10KB`.
            let cells: Vec<String> = row
                .split("<td>")
                .skip(1)
                .map(|c| c.split("</td>").next().unwrap_or_default().replace("&lt;", "<").replace("&gt;", ">"))
                .collect();
            format!("  {}\n", cells.join("  "))
        })
        .collect()
}

/// The terminal's table rows of entry `web`, as [`html_table_lines`] gives
/// the HTML's (cells two spaces apart).
fn text_table_lines(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("web "))
        .map(|l| {
            let cells: Vec<&str> = l.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
            format!("  {}\n", cells.join("  "))
        })
        .collect()
}

#[test]
fn the_bucket_table_of_an_open_loop_run_matches_a_hand_computation_from_its_flows() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("open.toml");
    std::fs::write(&file, OPEN_LOOP).unwrap();
    let out = dir.path().join("out");
    ok(squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-pcap", "--no-events"]));
    let rows = csv_rows(&std::fs::read_to_string(out.join("flows.csv")).unwrap());
    let o = ok(squall(&["report", out.to_str().unwrap()]));
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    check_table_against_flows(&rows, &stdout);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Flow completion time and slowdown by size bucket"), "report.html has the table");
    // report.html's table: the same cells as the terminal's, and the hand
    // computation's numbers.
    let lines = html_table_lines(&html);
    assert_eq!(lines, text_table_lines(&stdout));
    check_table_against_flows(&rows, &lines);
}

/// `squall report` of a `squall run` experiment prints the same table for
/// each point, over the point's replications (one run directory each),
/// checked by hand against the flows.csv of those directories.
#[test]
fn the_bucket_table_of_an_experiment_point_matches_a_hand_computation_from_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = OPEN_LOOP.replace("replications = 3\n", "");
    std::fs::write(dir.path().join("open.toml"), scenario).unwrap();
    let exp = dir.path().join("exp.toml");
    std::fs::write(&exp, "name = \"open\"\n[[sets]]\nname = \"a\"\nscenario = \"open.toml\"\nreplications = 3\n")
        .unwrap();
    let out = dir.path().join("out");
    ok(squall(&["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    let mut rows = Vec::new();
    for r in 0..3 {
        let flows = out.join(format!("a/p0/rep-{r}/flows.csv"));
        rows.extend(csv_rows(&std::fs::read_to_string(&flows).unwrap_or_else(|e| panic!("{}: {e}", flows.display()))));
    }
    let o = ok(squall(&["report", out.to_str().unwrap()]));
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(stdout.contains("set a, point 0: FCT and slowdown by size bucket, over 3 replication(s)"), "{stdout}");
    check_table_against_flows(&rows, &stdout);
    // report.html has the point's table under the point's: the same
    // cells as the terminal's, and the hand computation's numbers.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h4>FCT and slowdown by size bucket, over 3 replication(s)</h4>"), "report.html");
    let lines = html_table_lines(&html);
    assert_eq!(lines, text_table_lines(&stdout));
    check_table_against_flows(&rows, &lines);
}
