//! Names of the objects a run creates. Every one carries the prefix
//! `squall-` and the id of the run (the pid of the squall process that owns
//! it), so squall only ever removes its own objects, and objects whose
//! owner died can be told apart from live ones.

use std::path::PathBuf;

/// Prefix of every namespace and socket squall creates.
pub const PREFIX: &str = "squall-";

/// Name of the TUN device inside each host namespace.
pub const TUN_NAME: &str = "squall0";

/// A run's id: the owning process's pid. Whether it is alive is
/// [`RunId::is_alive`] (in [`crate::record`], from the run's record).
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

    /// [`RunId::is_alive`] for a run recorded to have started at
    /// `recorded` (clock ticks after boot; `None`: not recorded).
    pub fn is_alive_with(self, recorded: Option<u64>) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.0)) {
            Ok(text) => match ProcStat::parse(&text) {
                Some(stat) => !stat.is_dead() && recorded.is_none_or(|t| t == stat.start_time),
                None => true,
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            // No /proc to read: the kernel's word on the pid alone.
            Err(_) => {
                let pid = nix::unistd::Pid::from_raw(self.0 as i32);
                !matches!(nix::sys::signal::kill(pid, None), Err(nix::errno::Errno::ESRCH))
            }
        }
    }

    /// When this process started, in clock ticks after boot
    /// ([`ProcStat::start_time`]); `None` if /proc cannot tell.
    pub fn start_time(self) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{}/stat", self.0)).ok()?;
        ProcStat::parse(&text).map(|s| s.start_time)
    }

    /// The control socket of this run.
    pub fn control_socket(self) -> PathBuf {
        control_dir().join(format!("{PREFIX}{}.sock", self.0))
    }
}

/// What `/proc/PID/stat` says of a process (proc(5), "/proc/pid/stat";
/// written by `do_task_stat` in Linux's fs/proc/array.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 3, `state`: `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    pub state: char,
    /// Field 5, `pgrp`: the process group.
    pub pgrp: u32,
    /// Field 22, `starttime`: when the process started, in clock ticks
    /// after boot. A pid reused by another process has another.
    pub start_time: u64,
}

impl ProcStat {
    /// Parses the one line of `/proc/PID/stat`. Field 2, the command name
    /// in parentheses, may itself hold spaces and `)`, so the fields after
    /// it are counted from its last `)`.
    pub fn parse(text: &str) -> Option<ProcStat> {
        let after = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // fields[0] is field 3 (state), so field 22 is fields[19].
        let state = fields.first()?.chars().next()?;
        let pgrp = fields.get(2)?.parse().ok()?;
        let start_time = fields.get(19)?.parse().ok()?;
        Some(ProcStat { state, pgrp, start_time })
    }

    /// A zombie (`Z`: exited, not yet reaped by its parent) or dead (`X`).
    pub fn is_dead(self) -> bool {
        matches!(self.state, 'Z' | 'X')
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
    fn the_state_group_and_start_time_are_fields_3_5_and_22_of_proc_stat() {
        // A line as Linux 6.x writes it for a zombie whose name holds
        // spaces and a parenthesis (fields numbered as in proc(5)).
        let line = "4242 (squall (x) y) Z 1 4300 4242 0 -1 4194564 10 0 0 0 1 2 0 0 20 0 1 0 987654 0 0 \
                    18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(ProcStat::parse(line), Some(ProcStat { state: 'Z', pgrp: 4300, start_time: 987654 }));
        assert!(ProcStat::parse(line).unwrap().is_dead());
        assert_eq!(ProcStat::parse("12 (cut"), None);
    }
}
