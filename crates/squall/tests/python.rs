//! The Python package (python/, issue 33): built with maturin from this
//! checkout into a virtual environment under target/python/, then
//! python/tests run with pytest against this build's `squall` binary
//! (every function against the CLI's outputs for the same scenario and
//! seed, errors with their place, a Dask cluster of two worker processes,
//! the notebook in docs/python/ executed).
//!
//! The environment and cargo's build of the native module are kept in
//! target/python/ between runs (a new environment when
//! python/pyproject.toml changes), so only the first run pays for them.
//! Without Python 3 the test skips, except under `CI=true`, where a
//! missing piece fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

fn run(what: &str, cmd: &mut Command) {
    eprintln!("python test: {what}: {cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The version of `name` that `pyproject` pins with `name==VERSION`.
fn pinned(pyproject: &str, name: &str) -> String {
    let start = pyproject.find(&format!("\"{name}==")).unwrap_or_else(|| panic!("pyproject.toml pins no {name}"));
    let rest = &pyproject[start + 1..];
    rest[..rest.find('"').expect("a closing quote")].to_string()
}

#[test]
fn python_package_against_the_cli() {
    let root = repo();
    let python = ["/usr/bin/python3", "python3"].into_iter().find(|p| {
        Command::new(p)
            .arg("-c")
            .arg("import venv, sys; assert sys.version_info >= (3, 9)")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no Python >= 3.9 with venv");
        eprintln!("skipped: no python3 with venv");
        return;
    };
    let pyproject = std::fs::read_to_string(root.join("python/pyproject.toml")).expect("python/pyproject.toml");
    let work = root.join("target/python");
    let venv = work.join("venv");
    let bin = venv.join("bin");
    // The environment is made anew when pyproject.toml (its pins) changes.
    let stamp = venv.join("squall-pyproject.toml");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(pyproject.as_str()) {
        let _ = std::fs::remove_dir_all(&venv);
        run("python -m venv", Command::new(python).args(["-m", "venv"]).arg(&venv));
        run(
            "pip install maturin",
            Command::new(bin.join("pip")).args(["install", "-q", &pinned(&pyproject, "maturin")]),
        );
    }
    let wheels = work.join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        "maturin build",
        Command::new(bin.join("maturin"))
            .args(["build", "--release", "--quiet", "-m"])
            .arg(root.join("python/Cargo.toml"))
            .arg("-i")
            .arg(bin.join("python"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", &work),
    );
    let wheel = std::fs::read_dir(&wheels)
        .expect("maturin's wheel directory")
        .map(|e| e.expect("an entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin built a wheel");
    let spec = format!("{}[test]", wheel.display());
    if !stamp.exists() {
        run("pip install the test dependencies", Command::new(bin.join("pip")).args(["install", "-q", &spec]));
        std::fs::write(&stamp, &pyproject).expect("the environment's stamp");
    }
    run(
        "pip install the wheel",
        Command::new(bin.join("pip")).args(["install", "-q", "--force-reinstall", "--no-deps"]).arg(&wheel),
    );
    let out = Command::new(bin.join("python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"])
        .current_dir(&root)
        .env("SQUALL", env!("CARGO_BIN_EXE_squall"))
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .output()
        .expect("pytest runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed ({})", out.status);
    assert!(!stdout.contains("skipped"), "no test of python/tests may skip:\n{stdout}");
}
