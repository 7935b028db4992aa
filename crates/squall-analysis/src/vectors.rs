//! A run's `[[record]]` output vectors (vectors.csv: `time_s,source,name,value`,
//! one row per sample, squall-sim's vectors.rs) read back for the report:
//! per vector its time-average, minimum, maximum and its points to plot
//! (seed 004 §5: vectors recorded during the run, plotted and averaged
//! afterwards).

use std::collections::BTreeMap;
use std::path::Path;

use crate::flows::AnalysisError;

/// One vector of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Vector {
    pub source: String,
    pub name: String,
    /// (time s, value) of its numeric samples, in file order.
    pub points: Vec<(f64, f64)>,
    /// Samples that are names (a stage's state), not numbers.
    pub names: u64,
}

/// Statistics of one numeric vector over a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VectorStats {
    /// Each value held until the next sample (the last until `end`),
    /// averaged from the first sample to `end` (OMNeT++'s time-weighted
    /// average of an output vector).
    pub time_average: f64,
    pub min: f64,
    pub max: f64,
    pub samples: usize,
}

impl Vector {
    /// Its statistics up to `end` (s); `None` without numeric samples.
    pub fn stats(&self, end: f64) -> Option<VectorStats> {
        let (first, _) = *self.points.first()?;
        let mut area = 0.0;
        for w in self.points.windows(2) {
            area += w[0].1 * (w[1].0 - w[0].0);
        }
        let (last_t, last_v) = self.points[self.points.len() - 1];
        let end = end.max(last_t);
        area += last_v * (end - last_t);
        let length = end - first;
        let time_average = if length > 0.0 { area / length } else { last_v };
        let min = self.points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let max = self.points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        Some(VectorStats { time_average, min, max, samples: self.points.len() })
    }
}

/// The vectors of vectors.csv in `dir`, by (source, name); empty when the
/// run has no vectors.csv.
pub fn read_vectors(dir: &Path) -> Result<Vec<Vector>, AnalysisError> {
    let path = dir.join("vectors.csv");
    if !path.exists() {
        return Ok(Vec::new());
    }
    let file = path.display().to_string();
    let bad = |line: u64, message: String| AnalysisError::Vectors { file: file.clone(), line, message };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(&path)
        .map_err(|e| bad(1, format!("cannot read: {e}")))?;
    let header = reader.headers().map_err(|e| bad(1, e.to_string()))?.clone();
    if header.iter().collect::<Vec<_>>() != ["time_s", "source", "name", "value"] {
        return Err(bad(1, format!("expected the header time_s,source,name,value, found {}", header.as_slice())));
    }
    let mut vectors: BTreeMap<(String, String), Vector> = BTreeMap::new();
    for (i, row) in reader.records().enumerate() {
        let line = i as u64 + 2;
        let row = row.map_err(|e| bad(line, e.to_string()))?;
        if row.len() != 4 {
            return Err(bad(line, format!("expected 4 fields (time_s,source,name,value), found {}", row.len())));
        }
        let t: f64 = row[0].parse().map_err(|_| bad(line, format!("time_s `{}` is not a number", &row[0])))?;
        let v = vectors.entry((row[1].to_string(), row[2].to_string())).or_insert_with(|| Vector {
            source: row[1].to_string(),
            name: row[2].to_string(),
            points: Vec::new(),
            names: 0,
        });
        match row[3].parse::<f64>() {
            Ok(x) => v.points.push((t, x)),
            Err(_) => v.names += 1,
        }
    }
    Ok(vectors.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: queue 2 from 0 s, 4 from 1 s, until the end at 3 s:
    /// (2·1 + 4·2) / 3 = 10/3; cwnd from 0.5 s: 1000 for 0.5 s, 3000 for
    /// 2 s: (500 + 6000) / 2.5 = 2600.
    #[test]
    fn time_average_min_and_max_by_hand() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("vectors.csv"),
            "time_s,source,name,value\n0.000000000,down,queue_packets,2\n0.000000000,down,state,\n\
             0.500000000,bulk/0/client,cwnd,1000\n1.000000000,down,queue_packets,4\n\
             1.000000000,bulk/0/client,cwnd,3000\n2.000000000,down,state,slow\n",
        )
        .unwrap();
        let v = read_vectors(dir.path()).unwrap();
        let names: Vec<(&str, &str)> = v.iter().map(|v| (v.source.as_str(), v.name.as_str())).collect();
        assert_eq!(names, [("bulk/0/client", "cwnd"), ("down", "queue_packets"), ("down", "state")]);
        let cwnd = v[0].stats(3.0).unwrap();
        assert_eq!(cwnd, VectorStats { time_average: 2600.0, min: 1000.0, max: 3000.0, samples: 2 });
        let q = v[1].stats(3.0).unwrap();
        assert!((q.time_average - 10.0 / 3.0).abs() < 1e-12, "{q:?}");
        assert_eq!((q.min, q.max), (2.0, 4.0));
        assert_eq!(v[2].stats(3.0), None);
        assert_eq!(v[2].names, 2);
    }

    #[test]
    fn a_bad_row_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("vectors.csv"),
            "time_s,source,name,value\n0.5,down,queue_packets,1\nsoon,down,x,1\n",
        )
        .unwrap();
        let e = read_vectors(dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("vectors.csv:3: time_s `soon` is not a number"), "{e}");
    }
}
