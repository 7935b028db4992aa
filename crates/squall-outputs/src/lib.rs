//! What `squall sim` writes, as a library: the built-in scenarios, the
//! scenario loading with `--set`, the replication loop that streams each
//! replication's events.csv, pcaps and vectors into `rep-N/`, and
//! summary.json with its aggregate. The `squall` binary and the Python
//! package (python/) both call these, so that a run from Python writes
//! and reads exactly the numbers `squall sim` writes for the same
//! scenario and seed.

pub mod builtin;
mod count_out;
pub use count_out::aggregate_buckets;
pub mod files;
pub mod limits;
pub mod sim;
