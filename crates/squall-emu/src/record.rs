//! The record of a run: a file `squall-<pid>.run` in the control
//! directory ([`crate::naming::control_dir`]), written before the run makes
//! anything and removed after its teardown. It holds the start time of the
//! owning process (field 22 of `/proc/PID/stat`), so that a later start
//! tells a live run from a dead one whose pid was reused
//! ([`crate::naming::RunId::is_alive`]). A record whose owner is dead is
//! removed by the next start's sweep ([`crate::engine::cleanup`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Context, EmuError};
use crate::naming::{PREFIX, RunId, control_dir};

/// What is kept of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub pid: u32,
    /// Field 22 of `/proc/PID/stat`: clock ticks after boot.
    pub start_time: u64,
    /// Existing namespaces the run joined and what it changed there
    /// ([`crate::engine::joined`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joined: Vec<JoinedRecord>,
    /// The process groups of workloads started in those namespaces
    /// ([`WorkloadGroup`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadGroup>,
}

/// What a run changed in a namespace it joined, as its record keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JoinedRecord {
    /// The scenario's host.
    pub host: String,
    /// The namespace as messages name it (`lab`, `pid 4242`).
    pub netns: String,
    /// The file that holds it (`/run/netns/lab`, `/proc/4242/ns/net`).
    pub path: PathBuf,
    /// Its device and inode ([`crate::sys::netns::NetNs::identity`]): a namespace found
    /// there later with others is another one, and is left alone.
    pub dev: u64,
    pub ino: u64,
    /// Sysctls set, each with the value it had before (in the order set).
    pub sysctls: Vec<(String, String)>,
}

/// A workload's process group in a namespace a run joined, as the run's
/// record keeps it. A workload gets its own group
/// ([`crate::sys::netns::NetNs::prepare`]) and dies with squall
/// (PR_SET_PDEATHSIG), but what it started (a shell's background job, a
/// server's worker processes) does not; in a namespace squall made, the
/// next start kills every process in it, in a joined one only these.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadGroup {
    /// The scenario's host.
    pub host: String,
    /// The process group (the pid of the workload's first process).
    pub pgid: u32,
    /// When that process started ([`crate::naming::ProcStat::start_time`]).
    pub start_time: u64,
    /// The namespace's device and inode ([`crate::sys::netns::NetNs::identity`]).
    pub dev: u64,
    pub ino: u64,
}

impl RunId {
    /// Whether the owning process still runs: it exists, is not a zombie
    /// (a SIGKILLed run its parent has not reaped yet, which `kill(pid, 0)`
    /// still finds) and, if the run was recorded ([`crate::record`]), it
    /// started when the record says (else its pid was reused by another
    /// process).
    pub fn is_alive(self) -> bool {
        self.is_alive_with(recorded_start_time(self))
    }
}

/// The file of run `id`'s record.
pub fn record_path(id: RunId) -> PathBuf {
    control_dir().join(format!("{PREFIX}{}.run", id.0))
}

/// The start time recorded for run `id`, if it has a readable record.
pub fn recorded_start_time(id: RunId) -> Option<u64> {
    read(id).map(|r| r.start_time)
}

/// Run `id`'s record, if it has a readable one.
pub fn read(id: RunId) -> Option<RunRecord> {
    let text = std::fs::read_to_string(record_path(id)).ok()?;
    serde_json::from_str(&text).ok()
}

/// This run's record on disk, removed when dropped (after everything the
/// run changed was undone).
pub struct RecordFile {
    path: PathBuf,
    record: RunRecord,
}

impl RecordFile {
    /// Records run `id` (this process).
    pub fn create(id: RunId) -> Result<Self, EmuError> {
        let start_time = id.start_time().ok_or_else(|| {
            EmuError::io(
                format!("read /proc/{}/stat (the start time that marks this run as live)", id.0),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        let file =
            RecordFile { path: record_path(id), record: RunRecord { pid: id.0, start_time, ..RunRecord::default() } };
        if let Some(dir) = file.path.parent() {
            std::fs::create_dir_all(dir).context(|| format!("create {}", dir.display()))?;
        }
        file.write()?;
        Ok(file)
    }

    /// Changes the record with `f` and writes it, before the change it
    /// records is made.
    pub fn update(&mut self, f: impl FnOnce(&mut RunRecord)) -> Result<(), EmuError> {
        f(&mut self.record);
        self.write()
    }

    /// Writes the record (whole, through a temporary file renamed over
    /// it, so a reader never sees half of it).
    fn write(&self) -> Result<(), EmuError> {
        let text = serde_json::to_string_pretty(&self.record).expect("a record serialises");
        let tmp = self.path.with_extension("run.tmp");
        std::fs::write(&tmp, text).context(|| format!("write {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).context(|| format!("write {}", self.path.display()))
    }
}

impl Drop for RecordFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use crate::naming::{ProcStat, RunId};

    #[test]
    fn this_process_is_alive() {
        assert!(RunId::current().is_alive());
    }

    #[test]
    fn a_zombie_is_dead_and_so_is_a_reaped_child() {
        // A child that exits and is not reaped is a zombie: kill(pid, 0)
        // still succeeds on it, is_alive must not.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let id = RunId(child.id());
        let mut zombie = false;
        for _ in 0..500 {
            let text = std::fs::read_to_string(format!("/proc/{}/stat", id.0)).unwrap();
            if ProcStat::parse(&text).unwrap().state == 'Z' {
                zombie = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(zombie, "the child never became a zombie");
        let pid = nix::unistd::Pid::from_raw(id.0 as i32);
        assert!(nix::sys::signal::kill(pid, None).is_ok(), "kill(pid, 0) finds a zombie");
        assert!(!id.is_alive());
        child.wait().unwrap();
        assert!(!id.is_alive());
    }

    #[test]
    fn a_pid_that_started_at_another_time_than_recorded_is_a_reused_one() {
        let me = RunId::current();
        let started = me.start_time().expect("this process's start time");
        assert!(me.is_alive_with(Some(started)));
        assert!(!me.is_alive_with(Some(started + 1)), "a reused pid");
        assert!(me.is_alive_with(None));
    }
}
