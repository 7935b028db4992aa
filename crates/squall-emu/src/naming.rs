//! Names of the objects a run creates. Every one carries the prefix
//! `squall-` and the id of the run (the pid of the squall process that owns
//! it), so squall only ever removes its own objects, and objects whose
//! owner died can be told apart from live ones.

use std::path::PathBuf;

/// Prefix of every namespace and socket squall creates.
pub const PREFIX: &str = "squall-";

/// Name of the TUN device inside each host namespace.
pub const TUN_NAME: &str = "squall0";

/// A run's id: the owning process's pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RunId(pub u32);

impl RunId {
    /// The id of a run owned by this process.
    pub fn current() -> Self {
        RunId(std::process::id())
    }

    /// `squall-<pid>-<host>`; host names are cut to keep it readable and
    /// stripped of characters `ip netns` rejects.
    pub fn netns_name(self, host: &str) -> String {
        let host: String = host
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .take(32)
            .collect();
        format!("{PREFIX}{}-{host}", self.0)
    }

    /// The owner of a squall object named `name`, if it is one.
    pub fn owner_of(name: &str) -> Option<RunId> {
        let rest = name.strip_prefix(PREFIX)?;
        let pid = rest.split(['-', '.']).next()?;
        pid.parse().ok().map(RunId)
    }

    /// Whether the owning process still exists.
    pub fn is_alive(self) -> bool {
        let pid = nix::unistd::Pid::from_raw(self.0 as i32);
        !matches!(nix::sys::signal::kill(pid, None), Err(nix::errno::Errno::ESRCH))
    }

    /// The control socket of this run.
    pub fn control_socket(self) -> PathBuf {
        control_dir().join(format!("{PREFIX}{}.sock", self.0))
    }
}

/// Where control sockets live: `/run/squall` for root, else
/// `$XDG_RUNTIME_DIR/squall`, else a directory under the temp dir.
pub fn control_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SQUALL_RUN_DIR") {
        return PathBuf::from(dir);
    }
    if nix::unistd::Uid::effective().is_root() {
        return PathBuf::from("/run/squall");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("squall"),
        None => std::env::temp_dir().join("squall"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_prefix_and_owner() {
        let id = RunId(4242);
        assert_eq!(id.netns_name("mobile"), "squall-4242-mobile");
        assert_eq!(id.netns_name("a b/c"), "squall-4242-a_b_c");
        assert_eq!(RunId::owner_of("squall-4242-mobile"), Some(id));
        assert_eq!(RunId::owner_of("squall-4242.sock"), Some(id));
        assert_eq!(RunId::owner_of("other-4242-mobile"), None);
        assert_eq!(RunId::owner_of("squall-x-mobile"), None);
    }

    #[test]
    fn this_process_is_alive() {
        assert!(RunId::current().is_alive());
    }
}
