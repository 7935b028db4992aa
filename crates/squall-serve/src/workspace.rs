//! The workspace: the directory the control tool works on, holding the
//! same files the command line reads and writes.
//!
//! ```text
//! networks/NAME.toml      scenario files; a set replaces their [workload]
//! workloads/NAME.toml     files holding a [workload] table (squall_scenario::compose)
//! experiments/NAME.toml   experiment files (`squall run experiments/NAME.toml`)
//! results/NAME/           what `squall run … --out results/NAME` writes
//! ```
//!
//! Every path the API takes is confined to the workspace: a name is one
//! file name of a restricted alphabet (no `/`, no `..`, not absolute), and
//! the path it names, once symbolic links are resolved, must still lie
//! inside the workspace (OWASP's path traversal rules: canonicalise, then
//! compare with the allowed base).

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::ApiError;

/// The three kinds of configuration file, each in its own directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Network,
    Workload,
    Experiment,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Network, Kind::Workload, Kind::Experiment];

    /// The directory's name, which is also the kind's name in the API.
    pub fn dir(self) -> &'static str {
        match self {
            Kind::Network => "networks",
            Kind::Workload => "workloads",
            Kind::Experiment => "experiments",
        }
    }

    pub fn parse(text: &str) -> Result<Kind, ApiError> {
        Kind::ALL.into_iter().find(|k| k.dir() == text).ok_or_else(|| {
            ApiError::not_found(format!("no file kind `{text}`: expected networks, workloads or experiments"))
        })
    }
}

/// Checks a file name given in the API: 1 to 100 characters of letters,
/// digits, `.`, `_` and `-`, not starting with `.` (so neither `..` nor a
/// hidden file), with no separator. A trailing `.toml` is taken off.
pub fn check_name(name: &str) -> Result<&str, ApiError> {
    let bare = name.strip_suffix(".toml").unwrap_or(name);
    let ok = !bare.is_empty()
        && bare.len() <= 100
        && !bare.starts_with('.')
        && bare.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(bare)
    } else {
        Err(ApiError::bad_request(format!(
            "name `{name}` refused: a name is 1 to 100 letters, digits, '.', '_' or '-', not starting with '.' \
             (no '/', no '..', not an absolute path), like `gsm-link`"
        )))
    }
}

/// A file's version for optimistic concurrency (RFC 9110 §8.8.3 entity
/// tag, §13.1.1 If-Match): FNV-1a 64 of its bytes, quoted.
pub fn etag(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

#[derive(Clone, Debug)]
pub struct Workspace {
    /// Canonical (symbolic links resolved) absolute path.
    root: PathBuf,
}

impl Workspace {
    /// Opens `dir` (created with its sub-directories if missing).
    pub fn open(dir: &Path) -> io::Result<Workspace> {
        std::fs::create_dir_all(dir)?;
        let root = dir.canonicalize()?;
        for kind in Kind::ALL {
            std::fs::create_dir_all(root.join(kind.dir()))?;
        }
        std::fs::create_dir_all(root.join("results"))?;
        Ok(Workspace { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` with symbolic links resolved, refused unless inside `base`
    /// (itself inside the workspace).
    fn confine(&self, path: &Path, shown: &str) -> Result<PathBuf, ApiError> {
        let real = path.canonicalize().map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                ApiError::not_found(format!("{shown} does not exist"))
            } else {
                ApiError::internal(format!("cannot resolve {shown}: {e}"))
            }
        })?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(ApiError::forbidden(format!(
                "{shown} is a symbolic link to {}, outside the workspace {}: refused",
                real.display(),
                self.root.display()
            )))
        }
    }

    /// The directory of `kind`, refused if it is a link out of the workspace.
    pub fn kind_dir(&self, kind: Kind) -> Result<PathBuf, ApiError> {
        let dir = self.root.join(kind.dir());
        std::fs::create_dir_all(&dir).map_err(|e| ApiError::internal(format!("cannot create {}: {e}", kind.dir())))?;
        self.confine(&dir, &format!("{}/", kind.dir()))
    }

    /// The path of the file `name` of `kind`, whether or not it exists;
    /// refused if it exists as a symbolic link leading out of the workspace.
    pub fn file(&self, kind: Kind, name: &str) -> Result<PathBuf, ApiError> {
        let name = check_name(name)?;
        let path = self.kind_dir(kind)?.join(format!("{name}.toml"));
        if std::fs::symlink_metadata(&path).is_ok() {
            self.confine(&path, &format!("{}/{name}.toml", kind.dir()))?;
        }
        Ok(path)
    }

    /// The results directory of the run `name`.
    pub fn results_dir(&self, name: &str) -> Result<PathBuf, ApiError> {
        let name = check_name(name)?;
        let base = self.root.join("results");
        std::fs::create_dir_all(&base).map_err(|e| ApiError::internal(format!("cannot create results/: {e}")))?;
        let base = self.confine(&base, "results/")?;
        Ok(base.join(name))
    }

    /// A file below results/NAME/ named by a relative path whose every
    /// component is a plain name; refused if it resolves outside the
    /// workspace.
    pub fn result_file(&self, name: &str, relative: &str) -> Result<PathBuf, ApiError> {
        let dir = self.results_dir(name)?;
        let rel = Path::new(relative);
        let plain = !relative.is_empty()
            && rel.components().all(|c| matches!(c, Component::Normal(s) if !s.to_string_lossy().starts_with('.')));
        if !plain {
            return Err(ApiError::bad_request(format!(
                "path `{relative}` refused: a path inside a result is relative, made of plain names (no '..', no \
                 leading '/', no hidden files), like `plots/001-s_p0_seq.svg`"
            )));
        }
        let shown = format!("results/{name}/{relative}");
        let real = self.confine(&dir.join(rel), &shown)?;
        if !real.is_file() {
            return Err(ApiError::not_found(format!("{shown} is not a file")));
        }
        Ok(real)
    }
}

/// Writes `bytes` to `path` through a temporary file in the same
/// directory and a rename, so that a reader sees the old or the new text,
/// never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_directory_are_refused() {
        for bad in ["", "..", "../x", "/etc/passwd", "a/b", ".hidden", "a\\b", "x y", "%2e%2e"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(check_name("gsm-link.toml").unwrap(), "gsm-link");
        assert_eq!(check_name("seed001_e2e.v2").unwrap(), "seed001_e2e.v2");
    }

    #[test]
    fn etag_is_fnv1a_64() {
        // FNV-1a 64 test vectors (draft-eastlake-fnv, appendix C): "" and "a".
        assert_eq!(etag(b""), "\"cbf29ce484222325\"");
        assert_eq!(etag(b"a"), "\"af63dc4c8601ec8c\"");
    }

    #[test]
    fn a_link_out_of_the_workspace_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.toml"), "x = 1").unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = Workspace::open(ws.path()).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.toml"), ws.root().join("networks/evil.toml")).unwrap();
        let e = ws.file(Kind::Network, "evil").unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::FORBIDDEN, "{}", e.message);
        assert!(e.message.contains("outside the workspace"), "{}", e.message);
        std::fs::write(ws.root().join("networks/ok.toml"), "").unwrap();
        std::os::unix::fs::symlink(ws.root().join("networks/ok.toml"), ws.root().join("networks/alias.toml")).unwrap();
        assert!(ws.file(Kind::Network, "alias").is_ok());
    }
}
