//! Every scenario shipped in `scenarios/` (not `scenarios/bad/`) loads and
//! passes the checks, and its resolved form reads back the same.

use std::path::{Path, PathBuf};

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "bad") {
                scenario_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn shipped_scenarios_load() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    scenario_files(&root, &mut files);
    assert!(!files.is_empty());
    for f in files {
        let sc = squall_scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        // The resolved scenario, written out, reads back the same.
        let text = toml::to_string(&sc).unwrap();
        let again = squall_scenario::parse("resolved.toml", &text, Path::new("."))
            .unwrap_or_else(|e| panic!("{}: resolved form: {e}\n{text}", f.display()));
        assert_eq!(again, sc, "{}", f.display());
    }
}
