//! The scenarios built into the binary: they live in squall_outputs::builtin,
//! where the Python package finds them too.

pub use squall_outputs::builtin::*;
