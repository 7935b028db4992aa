//! squall-scenario: scenario files. Reads TOML into the model's
//! configuration, checks it, and reports every error with the file, line,
//! column, key, what was expected and an example.

mod resolve;
pub mod schema;

pub use resolve::LinkPaths;
pub use schema::*;
