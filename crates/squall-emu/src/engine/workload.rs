//! Workloads (seed 000 §4.1, "workload generators"): commands started at
//! set times inside a host's namespace, with their output saved in the run
//! directory. The run ends when every foreground command has exited;
//! background commands (servers) are stopped then.
//!
//! From the command line, `HOST@TIME=COMMAND` (`mobile@0s=iperf3 -s`); from
//! a file, a `[[commands]]` list:
//!
//! ```toml
//! [[commands]]
//! host = "mobile"
//! at = "0 s"
//! run = "iperf3 -s"
//! background = true
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use squall_link::{Duration, Instant};

use crate::error::{Context, EmuError};
use crate::sys::netns::NetNs;

pub mod plan;

/// One command to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The host (namespace) it runs in.
    pub host: String,
    /// When it starts, from the start of the run.
    #[serde(default)]
    pub at: Duration,
    /// A shell command line (`sh -c`).
    pub run: String,
    /// A server or other helper: the run does not wait for it, and it is
    /// stopped when the run ends.
    #[serde(default)]
    pub background: bool,
    /// Shell mode: the command shares squall's terminal instead of writing
    /// its output to files.
    #[serde(skip)]
    pub interactive: bool,
}

/// A workload file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    #[serde(default)]
    pub commands: Vec<CommandSpec>,
}

impl CommandSpec {
    /// Reads `HOST@TIME=COMMAND`, or `HOST=COMMAND` for time zero.
    pub fn parse(spec: &str, background: bool) -> Result<Self, EmuError> {
        let err = |message: &str| EmuError::Workload {
            spec: spec.to_string(),
            message: format!("{message}; expected HOST@TIME=COMMAND, like mobile@1s=\"iperf3 -c 10.0.0.1\""),
        };
        let (target, run) = spec.split_once('=').ok_or_else(|| err("no `=`"))?;
        let (host, at) = match target.split_once('@') {
            Some((h, t)) => (h, t.trim().parse::<Duration>().map_err(|e| err(&e.to_string()))?),
            None => (target, Duration::ZERO),
        };
        if host.trim().is_empty() || run.trim().is_empty() {
            return Err(err("empty host or command"));
        }
        Ok(CommandSpec {
            host: host.trim().to_string(),
            at,
            run: run.trim().to_string(),
            background,
            interactive: false,
        })
    }
}

impl WorkloadFile {
    pub fn load(path: &Path) -> Result<Self, EmuError> {
        let text = std::fs::read_to_string(path).context(|| format!("read workload file {}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| EmuError::Workload { spec: path.display().to_string(), message: e.to_string() })
    }
}

/// How a command ended, for summary.json.
#[derive(Clone, Debug, Serialize)]
pub struct CommandOutcome {
    pub host: String,
    pub run: String,
    pub background: bool,
    pub started: Option<f64>,
    pub ended: Option<f64>,
    /// Exit code; `None` if it was stopped by squall or killed by a signal.
    pub exit_code: Option<i32>,
    /// The files its output went to; `None` for the shell command, whose
    /// output is the terminal's.
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
}

struct Slot {
    spec: CommandSpec,
    /// The run's workload directory.
    dir: PathBuf,
    /// Index of the host's namespace.
    host: usize,
    child: Option<Child>,
    outcome: CommandOutcome,
}

/// A command [`Workloads::poll`] started.
pub struct Started {
    /// The index of its host (in the namespaces given to `poll`).
    pub host: usize,
    pub host_name: String,
    pub pid: u32,
}

/// The commands of a run and their processes.
pub struct Workloads {
    slots: Vec<Slot>,
    env: Vec<(String, String)>,
    /// Per host: the address put in SQUALL_PEER.
    peers: Vec<String>,
}

impl Workloads {
    /// `hosts` are the scenario's host names; output goes to `dir`.
    pub fn new(
        specs: Vec<CommandSpec>,
        hosts: &[String],
        env: Vec<(String, String)>,
        peers: Vec<String>,
        dir: &Path,
    ) -> Result<Self, EmuError> {
        let mut slots = Vec::new();
        for (i, spec) in specs.into_iter().enumerate() {
            let host = hosts.iter().position(|h| *h == spec.host).ok_or_else(|| EmuError::Workload {
                spec: spec.run.clone(),
                message: format!("no host `{}`; the scenario has: {}", spec.host, hosts.join(", ")),
            })?;
            let base = dir.join(format!("{i}-{}", spec.host));
            let outcome = CommandOutcome {
                host: spec.host.clone(),
                run: spec.run.clone(),
                background: spec.background,
                started: None,
                ended: None,
                exit_code: None,
                stdout: (!spec.interactive).then(|| base.with_extension("stdout")),
                stderr: (!spec.interactive).then(|| base.with_extension("stderr")),
            };
            slots.push(Slot { spec, dir: dir.to_path_buf(), host, child: None, outcome });
        }
        Ok(Workloads { slots, env, peers })
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Starts the commands due by `now` and reaps those that exited.
    /// Returns the commands it started.
    pub fn poll(&mut self, now: Instant, namespaces: &[NetNs]) -> Result<Vec<Started>, EmuError> {
        let mut started = Vec::new();
        for slot in &mut self.slots {
            if slot.outcome.started.is_none() && Instant::ZERO + slot.spec.at <= now {
                let mut command = Command::new("sh");
                command.arg("-c").arg(&slot.spec.run);
                if let (Some(out), Some(err)) = (&slot.outcome.stdout, &slot.outcome.stderr) {
                    let stdout = File::create(out).context(|| format!("create {}", out.display()))?;
                    let stderr = File::create(err).context(|| format!("create {}", err.display()))?;
                    command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
                    // Files a workload writes stay with the run.
                    command.current_dir(&slot.dir);
                }
                command.envs(self.env.iter().map(|(k, v)| (k, v)));
                command.env("SQUALL_HOST", &slot.spec.host);
                // `squall tool ...` in a workload means this squall.
                if let Some(path) = path_with_own_binary(&slot.dir) {
                    command.env("PATH", path);
                }
                if let Some(peer) = self.peers.get(slot.host).filter(|p| !p.is_empty()) {
                    command.env("SQUALL_PEER", peer);
                }
                namespaces[slot.host].prepare(&mut command, !slot.spec.interactive)?;
                let child = command.spawn().context(|| format!("start `{}` on {}", slot.spec.run, slot.spec.host))?;
                started.push(Started { host: slot.host, host_name: slot.spec.host.clone(), pid: child.id() });
                slot.child = Some(child);
                slot.outcome.started = Some(now.as_secs_f64());
            }
            if let Some(child) = slot.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                slot.outcome.exit_code = status.code();
                slot.outcome.ended = Some(now.as_secs_f64());
                slot.child = None;
            }
        }
        Ok(started)
    }

    /// Every foreground command has run and exited (and there is at least
    /// one).
    pub fn foreground_done(&self) -> bool {
        let mut fg = self.slots.iter().filter(|s| !s.spec.background).peekable();
        fg.peek().is_some() && fg.all(|s| s.outcome.ended.is_some())
    }

    /// Stops what still runs: SIGTERM to each process group, SIGKILL to
    /// those still there after `grace`.
    pub fn stop_all(&mut self, now: Instant, grace: std::time::Duration) -> Vec<CommandOutcome> {
        let running: Vec<&mut Slot> = self.slots.iter_mut().filter(|s| s.child.is_some()).collect();
        for slot in &running {
            if let Some(c) = &slot.child {
                signal(c, slot.spec.interactive, Signal::SIGTERM);
            }
        }
        let deadline = std::time::Instant::now() + grace;
        for slot in running {
            let Some(mut child) = slot.child.take() else { continue };
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    slot.outcome.exit_code = status.code();
                    break;
                }
                if std::time::Instant::now() >= deadline {
                    signal(&child, slot.spec.interactive, Signal::SIGKILL);
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            slot.outcome.ended = Some(now.as_secs_f64());
        }
        self.slots.iter().map(|s| s.outcome.clone()).collect()
    }
}

/// Signals a command's process group, or the process alone when it shares
/// squall's group.
fn signal(child: &Child, interactive: bool, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32);
    let _ = if interactive { nix::sys::signal::kill(pid, sig) } else { killpg(pid, sig) };
}

/// PATH with a directory holding `squall` (a link to the running binary,
/// whatever its file name) first, so that workloads find `squall tool bulk`
/// even when squall is not installed. The link lives in `workload_dir/bin`.
fn path_with_own_binary(workload_dir: &std::path::Path) -> Option<std::ffi::OsString> {
    let exe = std::env::current_exe().ok()?;
    // Absolute: a relative `--out` would otherwise put a relative entry in
    // PATH, which a workload that changes directory no longer finds.
    let bin = std::path::absolute(workload_dir.join("bin")).ok()?;
    let link = bin.join("squall");
    if std::fs::symlink_metadata(&link).is_err() {
        std::fs::create_dir_all(&bin).ok()?;
        std::os::unix::fs::symlink(&exe, &link).ok()?;
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_time_command() {
        let c = CommandSpec::parse("fixed@1.5s=iperf3 -c 10.0.1.1 -t 5", false).unwrap();
        assert_eq!(
            (c.host.as_str(), c.at, c.run.as_str()),
            ("fixed", Duration::from_millis(1500), "iperf3 -c 10.0.1.1 -t 5")
        );
        let c = CommandSpec::parse("mobile=iperf3 -s", true).unwrap();
        assert_eq!(c.at, Duration::ZERO);
        assert!(c.background);
        assert!(CommandSpec::parse("mobile@soon=x", false).is_err());
        assert!(CommandSpec::parse("mobile", false).is_err());
        assert!(CommandSpec::parse("@1s=x", false).is_err());
    }

    #[test]
    fn reads_a_workload_file() {
        let w: WorkloadFile = toml::from_str(
            "[[commands]]\nhost = \"mobile\"\nrun = \"iperf3 -s\"\nbackground = true\n[[commands]]\nhost = \"fixed\"\nat = \"1 s\"\nrun = \"iperf3 -c 10.0.1.1\"\n",
        )
        .unwrap();
        assert_eq!(w.commands.len(), 2);
        assert_eq!(w.commands[1].at, Duration::from_secs(1));
    }
}
