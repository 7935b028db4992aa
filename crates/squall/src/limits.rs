//! What caps a TCP flow's throughput: squall_outputs::limits, where
//! the Python package's summary.json is written too.

pub use squall_outputs::limits::*;
