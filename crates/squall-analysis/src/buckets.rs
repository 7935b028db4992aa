//! The flow completion time (FCT) and slowdown table by size bucket of a
//! run's `count` and `arrivals` entries, as validation case 27 tabulates
//! its open-loop workload: per entry and bucket ([`SIZE_BUCKETS`]), each
//! replication's mean FCT and mean slowdown of the completed flows, then
//! their mean over the replications with a 95% confidence interval
//! (Student's t; [`crate::stats::confidence_interval`]).
//!
//! Read from summary.json's `aggregate.tcp_count_buckets` (written by
//! `squall sim`: entry → bucket → metric → statistics over the replications
//! with flows in the bucket).

use std::fmt::Write as _;

use serde_json::Value;

use crate::summary_file::SIZE_BUCKETS;

/// A metric's mean over the replications and the half width of its 95%
/// confidence interval (`None` with fewer than two replications).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanCi {
    pub mean: f64,
    pub half_width: Option<f64>,
}

/// One entry's flows of one size bucket, over the replications.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketRow {
    pub entry: String,
    pub bucket: String,
    /// Replications with flows in the bucket.
    pub replications: usize,
    /// Flows in the bucket and those completed, per replication (mean).
    pub flows: f64,
    pub completed: f64,
    /// FCT of the completed flows, s: the replications' means, and their
    /// 99th percentiles.
    pub fct: MeanCi,
    pub fct_p99: MeanCi,
    /// Slowdown (FCT over the ideal FCT on an empty path): the
    /// replications' means, and their 99th percentiles.
    pub slowdown: MeanCi,
    pub slowdown_p99: MeanCi,
}

/// The table's rows from a summary.json, entries in name order, buckets
/// from small to large; empty when the run has no `count` or `arrivals`
/// entry.
pub fn bucket_rows(summary: &Value) -> Vec<BucketRow> {
    let Some(entries) = summary["aggregate"]["tcp_count_buckets"].as_object() else { return Vec::new() };
    let mut rows = Vec::new();
    for (entry, buckets) in entries {
        for (bucket, _, _) in SIZE_BUCKETS {
            let Some(metrics) = buckets.get(bucket) else { continue };
            let of = |metric: &str| -> MeanCi {
                let s = &metrics[metric];
                let mean = s["mean"].as_f64().unwrap_or(f64::NAN);
                let n = s["n"].as_u64().unwrap_or(0);
                let half_width = match (n >= 2, s["ci95"]["low"].as_f64(), s["ci95"]["high"].as_f64()) {
                    (true, Some(low), Some(high)) => Some((high - low) / 2.0),
                    _ => None,
                };
                MeanCi { mean, half_width }
            };
            rows.push(BucketRow {
                entry: entry.clone(),
                bucket: bucket.to_string(),
                replications: metrics["fct_mean"]["n"].as_u64().unwrap_or(0) as usize,
                flows: of("flows").mean,
                completed: of("completed").mean,
                fct: of("fct_mean"),
                fct_p99: of("fct_p99"),
                slowdown: of("slowdown_mean"),
                slowdown_p99: of("slowdown_p99"),
            });
        }
    }
    rows
}

fn cell(m: MeanCi, digits: usize) -> String {
    match m.half_width {
        Some(h) => format!("{:.digits$} ±{:.digits$}", m.mean, h),
        None => format!("{:.digits$}", m.mean),
    }
}

/// The table as aligned text (FCT in seconds, ± the 95% CI's half width).
pub fn bucket_table_text(rows: &[BucketRow]) -> String {
    let header = [
        "entry",
        "bucket",
        "reps",
        "flows",
        "completed",
        "FCT mean (s)",
        "FCT p99 (s)",
        "slowdown mean",
        "slowdown p99",
    ];
    let body: Vec<[String; 9]> = rows
        .iter()
        .map(|r| {
            [
                r.entry.clone(),
                r.bucket.clone(),
                r.replications.to_string(),
                format!("{:.1}", r.flows),
                format!("{:.1}", r.completed),
                cell(r.fct, 4),
                cell(r.fct_p99, 4),
                cell(r.slowdown, 2),
                cell(r.slowdown_p99, 2),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &body {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let text: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "  {}", text.join("  ").trim_end());
    };
    line(&header);
    for row in &body {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

/// The table as an HTML section for a run's report.html.
pub fn bucket_table_html(rows: &[BucketRow]) -> String {
    bucket_table_section(rows, "<h2>Flow completion time and slowdown by size bucket</h2>")
}

/// The table as an HTML section under `heading` (an HTML heading: an
/// experiment's report.html puts one under each point's).
pub fn bucket_table_section(rows: &[BucketRow], heading: &str) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = format!("{heading}\n");
    s.push_str(
        "<p>Per replication, the mean (and 99th \
         percentile) of the completed flows' FCT and slowdown (FCT over the ideal FCT on an empty path); \
         here their mean over the replications ± the half width of its 95% confidence interval.</p>\n<table>\n\
         <tr><th>entry</th><th>bucket</th><th>replications</th><th>flows</th><th>completed</th>\
         <th>FCT mean (s)</th><th>FCT p99 (s)</th><th>slowdown mean</th><th>slowdown p99</th></tr>\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            crate::report::html(&r.entry),
            crate::report::html(&r.bucket),
            r.replications,
            r.flows,
            r.completed,
            cell(r.fct, 4),
            cell(r.fct_p99, 4),
            cell(r.slowdown, 2),
            cell(r.slowdown_p99, 2)
        );
    }
    s.push_str("</table>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two replications by hand: bucket <10KB has mean FCT 0.10 s and
    /// 0.14 s, so the mean is 0.12 and the 95% half width is
    /// t(0.975, 1) · s / √2 = 12.7062 · 0.028284 / 1.41421 = 0.254124.
    #[test]
    fn a_bucket_over_two_replications_has_the_mean_and_t_interval_by_hand() {
        use crate::stats::summarize;
        let put = |xs: &[f64]| serde_json::to_value(summarize(xs)).unwrap();
        let summary = serde_json::json!({"aggregate": {"tcp_count_buckets": {"web": {
            // Out of order on purpose: the table goes small to large.
            ">=1MB": {"flows": put(&[1.0]), "completed": put(&[1.0]), "fct_mean": put(&[2.0]), "fct_p99": put(&[2.0]),
                      "slowdown_mean": put(&[4.0]), "slowdown_p99": put(&[4.0])},
            "<10KB": {"flows": put(&[3.0, 5.0]), "completed": put(&[3.0, 4.0]), "fct_mean": put(&[0.10, 0.14]),
                      "fct_p99": put(&[0.2, 0.3]), "slowdown_mean": put(&[2.0, 3.0]), "slowdown_p99": put(&[5.0, 9.0])},
        }}}});
        let rows = bucket_rows(&summary);
        assert_eq!(rows.iter().map(|r| r.bucket.as_str()).collect::<Vec<_>>(), ["<10KB", ">=1MB"]);
        let small = &rows[0];
        assert_eq!((small.replications, small.flows, small.completed), (2, 4.0, 3.5));
        assert!((small.fct.mean - 0.12).abs() < 1e-12);
        let h = small.fct.half_width.unwrap();
        assert!((h - 0.254124).abs() < 1e-5, "{h}");
        // Slowdowns 2 and 3: mean 2.5, half width 12.7062 · 0.707107 / 1.41421 = 6.3531.
        assert!((small.slowdown.mean - 2.5).abs() < 1e-12);
        assert!((small.slowdown.half_width.unwrap() - 6.3531).abs() < 1e-3);
        // One replication: no interval.
        assert_eq!(rows[1].fct, MeanCi { mean: 2.0, half_width: None });
        let text = bucket_table_text(&rows);
        assert!(text.contains("0.1200 ±0.2541"), "{text}");
        assert!(text.contains("2.50 ±6.35"), "{text}");
        assert!(bucket_table_html(&rows).contains("<td>&lt;10KB</td>"));
        assert!(bucket_rows(&serde_json::json!({"aggregate": {}})).is_empty());
    }
}
