//! Output directories that are never overwritten by accident, and files
//! written atomically (moved here from the `squall` binary's output.rs,
//! unchanged, so that the Python package writes its runs the same way).

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Writes `contents` to `path` atomically: into a temporary file in the
/// same directory, flushed, then renamed over `path` (rename(2) replaces
/// the name in one step on one file system), so an interrupted run leaves
/// the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(contents.as_ref()))
}

/// [`write_atomic`] of what `write` writes, streamed through a buffer:
/// a large file (the summary.json of a run of 4 000 stages is 14 MB) is
/// never held whole in memory.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".squall-")
        .suffix(".partial")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {} for {}", dir.display(), path.display()))?;
    // tempfile makes its files 0600; results are for everyone to read,
    // as fs::write's 0666 less the usual umask 022 would make them.
    tmp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .and_then(|()| {
            let mut buffered = std::io::BufWriter::new(tmp.as_file_mut());
            write(&mut buffered)?;
            buffered.flush()
        })
        .and_then(|()| tmp.as_file().sync_data())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The names that mark a directory as the output of a squall run (sim,
/// emu and compare write scenario.toml first, run writes experiment.json
/// first), in the order they are named in the refusal.
const RUN_MARKERS: [&str; 4] = ["summary.json", "experiment.json", "scenario.toml", "rep-0"];

/// Makes `out` ready for a new run: created when missing; an existing
/// directory that holds anything is refused unless `force`, which
/// removes it first so that no file of the old run (a `rep-N/` of more
/// replications) stays beside the new one. `force` removes only a
/// directory that holds a squall run: a mistyped `--out ~` stays refused.
pub fn prepare_out_dir(out: &Path, force: bool) -> Result<()> {
    if out.is_file() {
        bail!("--out {}: is a file; give a directory", out.display());
    }
    let not_empty =
        out.is_dir() && fs_entries(out).with_context(|| format!("cannot read output directory {}", out.display()))? > 0;
    if not_empty {
        let Some(marker) = RUN_MARKERS.iter().find(|m| out.join(m).exists()) else {
            bail!(
                "{} is not empty and holds no squall run (no {}); give a new or empty --out",
                out.display(),
                RUN_MARKERS.join(", ")
            );
        };
        if !force {
            bail!("{} already holds a run ({marker}); --force to replace it, or --out elsewhere", out.display());
        }
        std::fs::remove_dir_all(out).with_context(|| format!("--force: cannot remove {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create output directory {}", out.display()))
}

fn fs_entries(dir: &Path) -> io::Result<usize> {
    Ok(std::fs::read_dir(dir)?.count())
}
