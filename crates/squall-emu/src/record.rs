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
    pub joined: Vec<crate::engine::joined::JoinedRecord>,
    /// The process groups of workloads started in those namespaces
    /// ([`crate::engine::joined::WorkloadGroup`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<crate::engine::joined::WorkloadGroup>,
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
