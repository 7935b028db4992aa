//! The process environment for unit tests (setenv(3) is not thread-safe,
//! so Rust 2024 makes `std::env::set_var` unsafe).

use std::ffi::OsStr;

/// Sets `key` to `value` in this process's environment.
pub fn set_var(key: &str, value: impl AsRef<OsStr>) {
    // SAFETY: only unit tests call this, each for a variable that no other
    // test of the crate reads or writes (SQUALL_RUN_DIR: the control socket test).
    unsafe { std::env::set_var(key, value) };
}
