//! squall-analysis: what runs mean. Statistics over replications
//! (percentiles, Student-t confidence intervals), per-flow metrics read
//! from the files both engines write (pcap, events.csv), plots and the HTML
//! report.

pub mod buckets;
pub mod capture;
pub mod compare;
pub mod detail;
pub mod flows;
pub mod param_value;
pub mod plot;
pub mod replay;
pub mod report;
pub mod run_report;
pub mod stats;
pub mod summary_file;
pub mod timeline;
pub mod vectors;

pub use flows::{FlowStats, RunHost, analyse_run, by_workload, jain_index};
pub use stats::*;
