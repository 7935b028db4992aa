//! squall-link is the sans-IO core (docs/design.md, "The sans-IO rule"): it depends
//! on no I/O or async crate, reads no clock, and starts no thread. These
//! tests keep it so.

use std::path::Path;
use std::process::Command;

/// Crates that do I/O, read entropy or time from the OS, or run async code.
const FORBIDDEN_CRATES: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "futures",
    "mio",
    "libc",
    "nix",
    "socket2",
    "getrandom",
    "rustix",
    "chrono",
    "time",
    "rayon",
    "crossbeam",
];

/// Source patterns that read a clock, touch files or sockets, or spawn.
const FORBIDDEN_SOURCE: &[&str] = &[
    "std::time",
    "SystemTime",
    "std::fs",
    "std::io",
    "std::net::TcpStream",
    "std::net::UdpSocket",
    "std::thread",
    "std::env",
    "std::process",
    "thread_rng",
    "rand::rng(",
];

#[test]
fn depends_on_no_io_async_or_clock_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-p", "squall-link", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(crates.contains(&"rand_core"), "tree looks wrong: {tree}");
    for bad in FORBIDDEN_CRATES {
        assert!(!crates.contains(bad), "squall-link depends on `{bad}`:\n{tree}");
    }
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn source_reads_no_clock_and_does_no_io() {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.len() >= 10, "found only {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for bad in FORBIDDEN_SOURCE {
                assert!(!line.contains(bad), "{}:{}: `{bad}` in the pure model: {line}", file.display(), n + 1);
            }
        }
    }
}
