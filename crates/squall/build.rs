//! Puts the commit the binary is built from into `squall --version`:
//! `SQUALL_COMMIT` (`git rev-parse --short HEAD`) and `SQUALL_COMMIT_DATE`
//! (`git log -1 --format=%cs`, the committer date), each "unknown" outside
//! a git checkout (a crate tarball, a source archive).

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let commit = git(&dir, &["rev-parse", "--short", "HEAD"]);
    let date = git(&dir, &["log", "-1", "--format=%cs"]);
    println!("cargo:rustc-env=SQUALL_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
    println!("cargo:rustc-env=SQUALL_COMMIT_DATE={}", date.as_deref().unwrap_or("unknown"));
    // HEAD moves on checkout; the branch's ref (loose, or in packed-refs)
    // moves on commit. `--git-path` finds both in a worktree too, where
    // .git is a file.
    let mut watched = vec![git(&dir, &["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&dir, &["rev-parse", "--git-path", &branch]));
        watched.push(git(&dir, &["rev-parse", "--git-path", "packed-refs"]));
    }
    // When git itself failed (no git, or a repository it could not read at
    // that moment: a test once got "unknown" in a checkout and kept it,
    // since nothing was watched), the checkout's HEAD and refs, if any,
    // are watched all the same, so the next commit runs this again.
    if watched.iter().all(Option::is_none)
        && let Some(git_dir) = dir.ancestors().map(|a| a.join(".git")).find(|g| g.is_dir())
    {
        for name in ["HEAD", "packed-refs", "refs/heads"] {
            watched.push(Some(git_dir.join(name).display().to_string()));
        }
    }
    for path in watched.into_iter().flatten() {
        let path = if Path::new(&path).is_absolute() { path.into() } else { dir.join(path) };
        // A path that does not exist would rerun this script on every build.
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
