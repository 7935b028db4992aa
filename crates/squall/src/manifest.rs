//! The experiment's manifest, written by `squall run` before its first
//! replication and read by `squall report DIR`.

use serde::{Deserialize, Serialize};

/// What `squall report DIR` needs to rebuild the report: written before
/// the first replication runs.
#[derive(Serialize, Deserialize)]
pub struct Manifest {
    pub experiment: String,
    pub sets: Vec<ManifestSet>,
}

#[derive(Serialize, Deserialize)]
pub struct ManifestSet {
    pub name: String,
    pub engine: String,
    pub scenario: String,
    pub hosts: Vec<(String, std::net::IpAddr)>,
    pub points: Vec<ManifestPoint>,
}

#[derive(Serialize, Deserialize)]
pub struct ManifestPoint {
    pub params: Vec<(String, String)>,
    /// The point's hosts where the set crosses networks, whose hosts may
    /// differ (absent: the set's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<(String, std::net::IpAddr)>,
    /// The resolved scenario of this point, as TOML.
    pub scenario: String,
    /// (replication, seed, run directory relative to the output directory).
    pub runs: Vec<(u32, u64, String)>,
}
