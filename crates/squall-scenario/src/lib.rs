//! squall-scenario: scenario files. Reads TOML into the model's
//! configuration, checks it, and reports every error with the file, line,
//! column, key, what was expected and an example.
//!
//! - [`load`] / [`parse`]: a scenario file, checked, with empirical
//!   distribution files and measured SNR files ([`snr_file`]) read.
//! - [`apply_overrides`]: `--set key=value` edits before reading.
//! - [`parse_netem`] / [`scenario_from_netem`]: a netem command line as a
//!   stage or a two-host scenario.

mod bounded_lines;
mod check;
pub mod compose;
pub mod count;
pub mod dist_table;
pub mod empirical;
mod error;
pub mod experiment;
pub mod fabric;
pub mod flow_cdf;
mod load;
pub mod loss_sequence;
pub mod mahimahi;
pub mod mahimahi_line;
pub mod mahimahi_shells;
mod netem;
mod overrides;
pub mod pattern;
pub mod ports;
mod prefix;
pub mod record;
mod resolve;
pub mod samples;
pub mod schema;
pub mod series_file;
pub mod site;
pub mod snr_file;
mod source;
mod spans;
pub mod state_series;
mod state_series_spec;
pub mod topology;
mod udp_arrivals;

pub use compose::{ConfigText, check_workload, compose};
pub use error::{ErrorKind, ScenarioError};
pub use experiment::{
    Combination, Engine, Experiment, ReplicationSet, SweepMode, SweepPoint, load_experiment, parse_experiment,
};
pub use load::{load, load_with_overrides, parse, parse_with_overrides};
pub use netem::{describe_netem_directions, parse_netem, scenario_from_netem};
pub use overrides::{apply_overrides, parse_set};
pub use record::{Quantity, Record, RecordSource};
pub use resolve::LinkPaths;
pub use schema::*;
pub use source::{MAX_TEXT_FILE, read_text};
pub use topology::{HostIndex, PathIndex, Topology, TopologyError, TopologyPath};

impl Scenario {
    /// The timed states and blackouts that start at or after the run's
    /// end, and so never happen, each as a sentence naming it and both
    /// times (issue 28: they were accepted silently). Not an error: a
    /// run shortened with `--set duration` or `--duration` leaves out
    /// what lies beyond, as ns-3's events after `Simulator::Stop` never
    /// fire; the engines say so before they start.
    pub fn after_the_end(&self) -> Vec<String> {
        let end = self.duration;
        let states = self.states.iter().filter_map(|st| {
            st.at
                .filter(|at| *at >= end)
                .map(|at| format!("state `{}` at {at} is not before the run ends at {end}: it never applies", st.name))
        });
        // A drawn start may or may not fall in the run: only a set one is
        // known never to.
        let blackouts = self.blackouts.iter().enumerate().filter_map(|(i, b)| {
            let at = b.at.as_constant().filter(|at| *at >= end)?;
            Some(format!("blackouts[{i}] at {at} is not before the run ends at {end}: it never happens"))
        });
        states.chain(blackouts).collect()
    }
}
