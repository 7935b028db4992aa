//! Experiments end to end: sweeps expand, a resumed experiment neither
//! repeats nor loses a replication, the file-based analysis agrees with
//! the engine's own counters, and the report renders in headless Chromium
//! with its plots.

use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{csv_rows, ok, pixels_near, squall};

const EXPERIMENT: &str = r#"
name = "small"
[[sets]]
name = "sweep"
scenario = "builtin:gsm-udp"
replications = 3
set = { duration = "50 s" }
[sets.sweep]
"stage.gsm-down.rate" = ["4800 bit/s", "9600 bit/s"]
"stage.gsm-down.delay" = ["100 ms", "300 ms"]
"#;

fn write_experiment(dir: &Path) -> String {
    let path = dir.join("small.toml");
    std::fs::write(&path, EXPERIMENT).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn resumed_experiment_neither_repeats_nor_loses_a_replication() {
    let dir = tempfile::tempdir().unwrap();
    let exp = write_experiment(dir.path());
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    // 2 × 2 points × 3 replications = 12 runs, done as 5 + 4 + the rest.
    ok(squall(&["run", &exp, "--out", out_s, "--max-runs", "5"]));
    assert!(!out.join("report.html").exists(), "report written before the experiment finished");
    // Without --resume an existing experiment is refused.
    let refused = squall(&["run", &exp, "--out", out_s]);
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("--resume"));
    ok(squall(&["run", &exp, "--out", out_s, "--resume", "--max-runs", "4"]));
    ok(squall(&["run", &exp, "--out", out_s, "--resume"]));
    let log = std::fs::read_to_string(out.join("runs.log")).unwrap();
    let mut count: BTreeMap<&str, u32> = BTreeMap::new();
    for line in log.lines() {
        *count.entry(line).or_default() += 1;
    }
    assert_eq!(count.len(), 12, "{log}");
    assert!(count.values().all(|&n| n == 1), "a replication ran twice:\n{log}");
    for p in 0..4 {
        for r in 0..3 {
            assert!(out.join(format!("sweep/p{p}/rep-{r}/result.json")).exists());
        }
    }
    // results.csv: one row per replication and flow (2 flows), swept keys as columns.
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header = results.lines().next().unwrap();
    assert!(header.contains("stage.gsm-down.rate") && header.contains("stage.gsm-down.delay"));
    assert_eq!(results.lines().count(), 1 + 12 * 2);
    // Each swept value also as a number in base units, the unit in the
    // column name: "9600 bit/s" is 9600, "300 ms" is 0.3.
    let mut by_point = BTreeMap::new();
    for row in csv_rows(&results) {
        let rate = match row["stage.gsm-down.rate"].trim_matches('"') {
            "4800 bit/s" => 4800.0,
            "9600 bit/s" => 9600.0,
            other => panic!("swept rate {other}"),
        };
        let delay = if row["stage.gsm-down.delay"].trim_matches('"') == "100 ms" { 0.1 } else { 0.3 };
        assert_eq!(row["stage.gsm-down.rate_bit_per_s"].parse::<f64>().unwrap(), rate, "{row:?}");
        assert_eq!(row["stage.gsm-down.delay_s"].parse::<f64>().unwrap(), delay, "{row:?}");
        by_point.insert(row["point"].clone(), (rate, delay));
    }
    assert_eq!(by_point.len(), 4);
    // summary.csv carries the swept values as numbers too, under the same
    // column names (issue 28: no "300 ms" to parse), one row per point,
    // flow and metric.
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let rows = csv_rows(&summary);
    assert!(rows.len() >= 4 * 2, "{summary}");
    for row in rows {
        let (rate, delay) = by_point[&row["point"]];
        assert_eq!(row["stage.gsm-down.rate_bit_per_s"].parse::<f64>().unwrap(), rate, "{row:?}");
        assert_eq!(row["stage.gsm-down.delay_s"].parse::<f64>().unwrap(), delay, "{row:?}");
    }
    // A finished experiment resumed again runs nothing and rebuilds the report.
    ok(squall(&["run", &exp, "--out", out_s, "--resume"]));
    assert_eq!(std::fs::read_to_string(out.join("runs.log")).unwrap(), log);
    ok(squall(&["report", out_s]));
    // `squall report --format json|csv`: the summary table as plain
    // numbers, each flow's throughput summary.csv's mean of throughput_bps
    // for the same set, point and flow.
    let means: BTreeMap<(String, String, String), f64> = csv_rows(&summary)
        .into_iter()
        .filter(|r| r["metric"] == "throughput_bps")
        .map(|r| ((r["set"].clone(), r["point"].clone(), r["flow"].clone()), r["mean"].parse().unwrap()))
        .collect();
    let json = ok(squall(&["report", out_s, "--format", "json"]));
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("stdout is JSON alone");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), means.len(), "{rows:?}");
    for row in rows {
        let key = (
            row["set"].as_str().unwrap().to_string(),
            row["point"].as_f64().unwrap().to_string(),
            row["flow"].as_str().unwrap().to_string(),
        );
        // The same mean, up to the order of a floating-point sum.
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs();
        assert!(close(row["throughput_bit_per_s"].as_f64().unwrap(), means[&key]), "{row} against {}", means[&key]);
        assert_eq!(row["replications"], 3.0);
    }
    let csv = String::from_utf8(ok(squall(&["report", out_s, "--format", "csv"])).stdout).unwrap();
    for row in csv_rows(&csv) {
        let key = (row["set"].clone(), row["point"].clone(), row["flow"].clone());
        let x = row["throughput_bit_per_s"].parse::<f64>().unwrap();
        assert!((x - means[&key]).abs() <= 1e-12 * x.abs(), "{row:?} against {}", means[&key]);
    }
}

#[test]
fn analysis_from_files_agrees_with_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let exp = write_experiment(dir.path());
    let out = dir.path().join("out");
    ok(squall(&["run", &exp, "--out", out.to_str().unwrap()]));
    // The engine's counters, from each replication's result.json.
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut rows = csv_rows(&results);
    rows.sort();
    for p in 0..4 {
        for r in 0..3 {
            let json: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(out.join(format!("sweep/p{p}/rep-{r}/result.json"))).unwrap(),
            )
            .unwrap();
            for f in json["flows"].as_array().unwrap() {
                let key = &f["key"];
                let flow = format!(
                    "udp:{}:{}>{}:{}",
                    key["src"].as_str().unwrap(),
                    key["src_port"],
                    key["dst"].as_str().unwrap(),
                    key["dst_port"]
                );
                let row = rows
                    .iter()
                    .find(|row| {
                        row["point"] == p.to_string() && row["replication"] == r.to_string() && row["flow"] == flow
                    })
                    .unwrap_or_else(|| panic!("no analysed row for {flow} p{p} rep {r}"));
                let n = |k: &str| row[k].parse::<f64>().unwrap();
                assert_eq!(n("sent_packets"), f["sent_packets"].as_f64().unwrap(), "{flow}");
                assert_eq!(n("received_packets"), f["delivered_packets"].as_f64().unwrap(), "{flow}");
                let dropped: f64 = f["dropped"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
                assert_eq!(n("dropped"), dropped, "{flow}");
                let (a, b) = (n("delay_mean"), f["delay_mean"].as_f64().unwrap());
                assert!((a - b).abs() < 1e-6, "{flow}: delay {a} vs engine {b}");
            }
        }
    }
}

#[test]
fn report_renders_in_headless_chromium_with_its_plots() {
    let dir = tempfile::tempdir().unwrap();
    let exp = write_experiment(dir.path());
    let out = dir.path().join("out");
    ok(squall(&["run", &exp, "--out", out.to_str().unwrap()]));
    let shot = dir.path().join("shot.png");
    let Some(page) = common::render(&out.join("report.html"), &dir.path().join("profile"), "1200,4000", &shot) else {
        return;
    };
    let html = page.dom;
    let files = std::fs::read_dir(out.join("plots")).unwrap().count();
    assert!(files >= 8, "only {files} plots");
    assert_eq!(html.matches("<figure class=\"plot\"").count(), files, "every plot file is in the page");
    assert!(html.matches("<svg").count() >= files);
    // The screenshot (tall enough to pass the tables, whose columns now
    // carry their units, and the links to each point's page) shows the
    // plots: series dots in the first colour
    // (31, 119, 180) and the shading of states, white mixed with 18% of
    // (255, 200, 0) = (255, 245, 209).
    let (pixels, bpp) = (&page.pixels, page.samples);
    let blue = pixels_near(pixels, bpp, [31, 119, 180], 8);
    let shade = pixels_near(pixels, bpp, [255, 245, 209], 8);
    let total = pixels.len() / bpp;
    assert!(blue > 1000, "series colour on {blue} of {total} pixels: no plot drawn?");
    assert!(shade > total / 100, "state shading on {shade} of {total} pixels");
}

/// `--events drops` keeps drops, corruptions, states and blackouts only:
/// far smaller event logs, and results.csv identical to a full log's.
#[test]
fn drops_only_event_logs_give_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let exp = write_experiment(dir.path());
    let (all, drops) = (dir.path().join("all"), dir.path().join("drops"));
    ok(squall(&["run", &exp, "--out", all.to_str().unwrap()]));
    ok(squall(&["run", &exp, "--out", drops.to_str().unwrap(), "--events", "drops"]));
    let read = |d: &Path| std::fs::read_to_string(d.join("results.csv")).unwrap();
    assert_eq!(read(&all), read(&drops));
    let events = |d: &Path| std::fs::read_to_string(d.join("sweep/p0/rep-0/events.csv")).unwrap();
    let (full, small) = (events(&all), events(&drops));
    assert!(
        small.lines().count() * 10 < full.lines().count(),
        "{} vs {} lines",
        small.lines().count(),
        full.lines().count()
    );
    assert!(small.contains(",drop,") && small.contains("state_change"), "{small}");
}

/// Issue 15, input 4: a sweep of 8^12 points is counted and refused before
/// a single point is built (it used to exhaust memory), and says how to
/// run it anyway.
#[test]
fn an_experiment_of_too_many_runs_is_refused_before_it_is_built() {
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/regressions/experiment/sweep-8-pow-12.toml");
    let dir = tempfile::tempdir().unwrap();
    // Refused before it is built: squall's peak resident memory (GNU
    // time's %M, KB) stays that of a small run; 8^12 points would need
    // 68 GB at a single byte each.
    let time = std::path::Path::new("/usr/bin/time");
    assert!(time.exists() || std::env::var("CI").as_deref() != Ok("true"), "CI=true needs GNU time (/usr/bin/time)");
    let out = dir.path().join("out");
    let o = if time.exists() {
        std::process::Command::new(time)
            .args(["-f", "peak resident %M KB", common::SQUALL, "run", exp, "--out", out.to_str().unwrap()])
            .output()
            .unwrap()
    } else {
        eprintln!("no /usr/bin/time: the memory check is skipped");
        squall(&["run", exp, "--out", out.to_str().unwrap()])
    };
    let err = String::from_utf8_lossy(&o.stderr);
    if time.exists() {
        let peak: u64 = err
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("peak resident ")?.strip_suffix(" KB")?.parse().ok())
            .unwrap_or_else(|| panic!("GNU time's line: {err}"));
        assert!(peak < 200_000, "squall peaked at {peak} KB refusing the sweep");
    }
    assert!(!o.status.success(), "{err}");
    // 8^12 points × 1 replication, the limit, the file and the way out.
    assert!(err.contains("68719476736 runs") && err.contains("100000"), "{err}");
    assert!(err.contains("sweep-8-pow-12.toml") && err.contains("--allow-many-runs"), "{err}");
    // The set and its swept keys, each with its number of values.
    assert!(err.contains("set `all`: sweep of duration (8) × seed (8) × stage.gsm-down.allocation_delay (8)"), "{err}");
    assert!(!dir.path().join("out").exists(), "an output directory was made for a refused experiment");
}

/// Issue 15, input 5: replication seeds wrap past u64::MAX as `squall sim`
/// does (seed + r, modulo 2^64), instead of overflowing.
#[test]
fn replication_seeds_wrap_past_the_largest_seed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrap.toml");
    std::fs::write(
        &path,
        "name = \"wrap\"\n[[sets]]\nname = \"a\"\nscenario = \"builtin:mm1\"\nreplications = 2\n\
         seed = 18446744073709551615\nset = { duration = \"100 s\" }\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    ok(squall(&["run", path.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    let seed_of = |rep: u32| -> u64 {
        let text = std::fs::read_to_string(out.join(format!("a/p0/rep-{rep}/result.json"))).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["seed"].as_u64().unwrap()
    };
    assert_eq!(seed_of(0), u64::MAX);
    assert_eq!(seed_of(1), 0);
    // The same seeds as `squall sim` gives its replications.
    let sim_out = dir.path().join("sim");
    ok(squall(&[
        "sim",
        "builtin:mm1",
        "--seed",
        "18446744073709551615",
        "--replications",
        "2",
        "--set",
        "duration=\"100 s\"",
        "--out",
        sim_out.to_str().unwrap(),
    ]));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sim_out.join("summary.json")).unwrap()).unwrap();
    let sim_seeds: Vec<u64> = summary["runs"].as_array().unwrap().iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(sim_seeds, vec![seed_of(0), seed_of(1)]);
}

/// A web page of 499 connections per run (seed 003 §3, keep-alive off)
/// over 6 sweep points: the report has one row per run and workload, and
/// a bounded number of plots, not one per connection.
#[test]
fn a_report_of_runs_with_hundreds_of_connections_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed003-web.toml");
    let text = format!(
        r#"
name = "web-small"
[[sets]]
name = "off"
scenario = "{}"
replications = 2
set = {{ "workload.tcp.0.app.web.keep_alive" = false }}
[sets.sweep]
"stage.down.background.0.load" = ["0%", "20%", "40%", "60%", "80%", "90%"]
"#,
        scenario.display()
    );
    let file = dir.path().join("web.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    ok(squall(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let rows = csv_rows(&results);
    let site: Vec<_> = rows.iter().filter(|r| r["label"] == "tcp server:80 > client:*").collect();
    assert_eq!(site.len(), 12, "one row per run for the site's responses");
    assert!(site.iter().all(|r| r["connections"] == "499"), "{site:?}");
    let elapsed: f64 = site[0]["elapsed"].parse().unwrap();
    assert!((30.0..34.0).contains(&elapsed), "unloaded site download {elapsed} s");
    let plots = std::fs::read_dir(out.join("plots")).unwrap().count();
    let html = std::fs::metadata(out.join("report.html")).unwrap().len();
    println!("{plots} plots, report.html {html} bytes");
    // 4 detailed points × (2 sequence diagrams + queue + 2 × 2 TCP trace
    // plots) + 12 metrics against the load.
    assert!(plots <= 4 * 7 + 12, "{plots} plots");
    assert!(html < 2_000_000, "report.html {html} bytes");
    // Every point has its page over time, linked from report.html, each
    // bounded: at most 6 flows and 240 bins a series, whatever the
    // number of connections.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    for point in 0..6 {
        let name = format!("runs/off-p{point}.html");
        assert!(page.contains(&format!("href=\"{name}\"")), "report.html does not link {name}");
        let size = std::fs::metadata(out.join(&name)).unwrap().len();
        println!("{name}: {size} bytes");
        assert!(size < 1_000_000, "{name}: {size} bytes");
    }
}

/// Seed 000 §4.1's replication sets: the shipped experiment crosses 2
/// networks × 3 workloads (two files, one inline) × 5 replications, and
/// makes exactly those 30 runs, each with its network's stages and its
/// workload's flows only; a crossed run is the run of the scenario written
/// by hand from the two parts.
#[test]
fn networks_cross_workloads_into_exactly_their_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let exp = root.join("experiments/cross-networks-workloads.toml");
    let done = ok(squall(&["run", exp.to_str().unwrap(), "--out", out_s]));
    assert!(String::from_utf8_lossy(&done.stderr).contains("makes 30 run(s)"), "{done:?}");
    let log = std::fs::read_to_string(out.join("runs.log")).unwrap();
    let mut dirs: Vec<&str> = log.lines().collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 30, "{log}");
    // Every combination once, networks slowest, with its five replications.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("experiment.json")).unwrap()).unwrap();
    let points = manifest["sets"][0]["points"].as_array().unwrap();
    let mut combos = Vec::new();
    for p in points {
        let params: Vec<(String, String)> = serde_json::from_value(p["params"].clone()).unwrap();
        assert_eq!(p["runs"].as_array().unwrap().len(), 5);
        let scenario: toml::Table = p["scenario"].as_str().unwrap().parse().unwrap();
        let stages: Vec<&str> =
            scenario["links"][0]["downlink"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
        let w = &scenario["workload"];
        let flows: Vec<&str> = ["tcp", "udp"]
            .iter()
            .flat_map(|k| w.get(*k).and_then(|v| v.as_array()).into_iter().flatten())
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let want_stage = if params[0].1 == "gsm" { "gsm-down" } else { "degrader-down" };
        let want_flows = match params[1].1.as_str() {
            "bulk" => vec!["download"],
            "web" => vec!["page"],
            _ => vec!["voice-down", "voice-up"],
        };
        assert_eq!(stages, vec![want_stage], "{params:?}");
        assert_eq!(flows, want_flows, "{params:?}: the network's own workload must be gone");
        assert_eq!(scenario["duration"].as_str(), Some("20 s"), "the set's `set` applies to every combination");
        combos.push(params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
    }
    let expected: Vec<String> = ["gsm", "degrader"]
        .iter()
        .flat_map(|n| ["bulk", "web", "voice"].iter().map(move |w| format!("network={n} workload={w}")))
        .collect();
    assert_eq!(combos, expected);
    // results.csv groups by network and workload.
    let rows = csv_rows(&std::fs::read_to_string(out.join("results.csv")).unwrap());
    let mut runs: BTreeMap<(String, String), std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in &rows {
        runs.entry((r["network"].clone(), r["workload"].clone())).or_default().insert(r["replication"].clone());
    }
    assert_eq!(runs.len(), 6);
    assert!(runs.values().all(|reps| reps.len() == 5), "{runs:?}");
    // report.html groups by each (seed 000 §4.1): the goodput table has a
    // row per network and a column per workload, and each cell gives, per
    // flow, the mean of that combination's five replications in
    // results.csv and its 95% CI half-width, t(0.975, 4) = 2.776 times
    // the sample deviation over √5, worked here from the rows.
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    let start = report.find("<table class=\"cross-goodput_bps\">").expect("a networks × workloads goodput table");
    let table = &report[start..start + report[start..].find("</table>").unwrap()];
    let unescape = |s: &str| s.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&");
    let body: Vec<&str> = table.split("<tr>").skip(1).collect();
    let heads: Vec<String> = body[0].split("<th>").skip(2).map(|c| c[..c.find("</th>").unwrap()].to_string()).collect();
    assert_eq!(heads, ["bulk", "web", "voice"], "{table}");
    let mut cells = 0;
    for (row, network) in body[1..].iter().zip(["gsm", "degrader"]) {
        let tds: Vec<&str> = row.split("<td>").skip(1).map(|c| &c[..c.find("</td>").unwrap()]).collect();
        assert_eq!(tds[0], network, "{table}");
        for (cell, workload) in tds[1..].iter().zip(["bulk", "web", "voice"]) {
            let mut by_flow: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in rows.iter().filter(|r| r["network"] == network && r["workload"] == workload) {
                by_flow.entry(r["label"].clone()).or_default().push(r["goodput_bps"].parse::<f64>().unwrap() / 1e3);
            }
            let shown: Vec<String> = cell.split("<br>").map(unescape).collect();
            assert_eq!(shown.len(), by_flow.len(), "{network} × {workload}: {cell}");
            for (line, (label, xs)) in shown.iter().zip(&by_flow) {
                let n = xs.len() as f64;
                let mean = xs.iter().sum::<f64>() / n;
                let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
                assert_eq!(n, 5.0);
                let (flow, numbers) = line.rsplit_once(": ").unwrap();
                let (m, hw) = numbers.split_once(" ± ").unwrap();
                assert_eq!(flow, label, "{network} × {workload}");
                assert!(
                    (m.parse::<f64>().unwrap() - mean).abs() <= 0.0051,
                    "{network} × {workload} {label}: {m} against {mean}"
                );
                let hw_hand = 2.776 * sd / n.sqrt();
                assert!(
                    (hw.parse::<f64>().unwrap() - hw_hand).abs() <= 0.005 + 1e-3 * hw_hand,
                    "{label}: ± {hw} against {hw_hand}"
                );
                cells += 1;
            }
        }
    }
    assert!(cells >= 7, "{cells} flow cells (voice has two flows per network)");

    // The GSM × bulk point, replication 0, is the run of the scenario
    // written by hand: gsm-udp.toml without its UDP flows, the bulk
    // workload's flow in their place, 20 s.
    let gsm = std::fs::read_to_string(root.join("scenarios/gsm-udp.toml")).unwrap();
    let network = &gsm[..gsm.find("[[workload.udp]]").unwrap()];
    let bulk = std::fs::read_to_string(root.join("experiments/workloads/bulk-tcp.toml")).unwrap();
    let bulk = &bulk[bulk.find("[[workload.tcp]]").unwrap()..];
    let by_hand = dir.path().join("by-hand.toml");
    std::fs::write(&by_hand, format!("{}\n{bulk}", network.replace("duration = \"120 s\"", "duration = \"20 s\"")))
        .unwrap();
    let sim_out = dir.path().join("sim");
    ok(squall(&["sim", by_hand.to_str().unwrap(), "--seed", "1", "--out", sim_out.to_str().unwrap()]));
    let sim: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sim_out.join("summary.json")).unwrap()).unwrap();
    let run0: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("cross/p0/rep-0/result.json")).unwrap()).unwrap();
    assert_eq!(sim["runs"][0]["flows"], run0["flows"]);
    assert_eq!(sim["runs"][0]["stages"], run0["stages"]);
}

/// A crossed set's bad parts are named: a missing workload file by its
/// key and path, a workload naming a host the network lacks at its line.
#[test]
fn a_bad_network_or_workload_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        "name = \"e\"\n[networks]\ng = \"builtin:gsm-udp\"\n[workloads]\nw = \"w.toml\"\n\
         [[sets]]\nname = \"s\"\nnetworks = [\"g\"]\nworkloads = [\"w\"]\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = || squall(&["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        !o.status.success() && err.contains("workloads.w: cannot read the workload file") && err.contains("w.toml"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("w.toml"),
        "[[workload.tcp]]\nname = \"x\"\nfrom = \"fixed\"\nto = \"nobody\"\napp = { bulk = \"1 MB\" }\n",
    )
    .unwrap();
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        !o.status.success() && err.contains("no host named `nobody`") && err.contains("workload.tcp[0].to"),
        "{err}"
    );
    std::fs::write(dir.path().join("w.toml"), "[[links]]\nbetween = [\"a\", \"b\"]\n").unwrap();
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success() && err.contains("w.toml:1:") && err.contains("belong to the network"), "{err}");
}
