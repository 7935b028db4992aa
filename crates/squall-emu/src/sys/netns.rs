//! Network namespaces: one per emulated host, created and removed with
//! `ip netns` (so they appear in `ip netns list` and `ip netns exec` works
//! on them), entered with `setns(2)` from a short-lived thread.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sched::{CloneFlags, setns};

use crate::error::{Context, EmuError};

/// Where `ip netns` keeps its namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// A named network namespace that this run created.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Creates the namespace `name` with its loopback up.
    pub fn create(name: &str) -> Result<Self, EmuError> {
        ip(&["netns", "add", name])?;
        let ns = NetNs { name: name.to_string() };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// A handle on the existing namespace `name` (made by this run).
    pub(crate) fn named(name: &str) -> Self {
        NetNs { name: name.to_string() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    /// Runs `ip -n NAME ARGS...`.
    pub fn ip(&self, args: &[&str]) -> Result<(), EmuError> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs `f` on a thread that has entered this namespace, and returns
    /// its result. File descriptors opened there (sockets, TUN devices)
    /// stay bound to the namespace and can be used from any thread.
    pub fn run_in<T: Send>(&self, f: impl FnOnce() -> Result<T, EmuError> + Send) -> Result<T, EmuError> {
        let file = File::open(self.path()).context(|| format!("open namespace {}", self.name))?;
        std::thread::scope(|s| {
            s.spawn(|| {
                setns(&file, CloneFlags::CLONE_NEWNET).context(|| format!("enter namespace {}", self.name))?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(EmuError::Panicked { thread: format!("thread in namespace {}", self.name) }))
        })
    }

    /// Sets the sysctl `key` (dotted, `net.*`) to `value` inside this
    /// namespace, by writing /proc/sys from a thread that has entered it.
    /// `host` names the host in the error.
    pub fn set_sysctl(&self, host: &str, key: &str, value: &str) -> Result<(), EmuError> {
        let fail = |message: String| EmuError::Sysctl {
            host: host.to_string(),
            key: key.to_string(),
            value: value.to_string(),
            message,
        };
        // The scenario checks keys; this guards the path all the same.
        if !key.starts_with("net.") || key.split('.').any(|p| p.is_empty() || p.contains('/')) {
            return Err(fail("only net.* keys can be set in a host's network namespace".into()));
        }
        let path = Path::new("/proc/sys").join(key.replace('.', "/"));
        let result = self.run_in(|| {
            Ok(std::fs::OpenOptions::new().write(true).open(&path).and_then(|mut f| {
                use std::io::Write;
                f.write_all(value.as_bytes())
            }))
        })?;
        result.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                fail(format!("no such setting in the namespace ({} does not exist)", path.display()))
            }
            _ => fail(format!("the kernel refused it ({e})")),
        })
    }

    /// Makes `command` start inside this namespace, in its own process
    /// group unless it shares the terminal (`own_group` false), and die with squall (PR_SET_PDEATHSIG) even if squall is
    /// killed with SIGKILL.
    pub fn prepare(&self, command: &mut Command, own_group: bool) -> Result<(), EmuError> {
        let file = File::open(self.path()).context(|| format!("open namespace {}", self.name))?;
        let fd = file.as_raw_fd();
        if own_group {
            command.process_group(0);
        }
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (setns, prctl), and `file` outlives the spawn because the
        // closure owns it.
        unsafe {
            command.pre_exec(move || {
                let _keep = &file;
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Kills every process left inside and removes the namespace (and the
    /// devices in it with it).
    pub fn delete(self) -> Result<(), EmuError> {
        delete_by_name(&self.name)
    }
}

/// Kills the processes inside namespace `name` and removes it.
pub fn delete_by_name(name: &str) -> Result<(), EmuError> {
    kill_processes_in(name);
    ip(&["netns", "delete", name])
}

/// SIGKILLs every process whose network namespace is `name` and waits
/// (up to 2 s) until none is left: a kill only queues the signal, and an
/// orphan of a killed workload (a shell's child) must be gone before the
/// namespace is, or it outlives the run.
fn kill_processes_in(name: &str) {
    let pids = || -> Vec<i32> {
        let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() else { return Vec::new() };
        String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect()
    };
    for _ in 0..200 {
        let left = pids();
        if left.is_empty() {
            return;
        }
        for pid in left {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    tracing::warn!("squall: processes in namespace {name} survived SIGKILL for 2 s");
}

/// Names of the namespaces in [`NETNS_DIR`].
pub fn list() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else { return Vec::new() };
    let mut names: Vec<String> = dir.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    names.sort();
    names
}

/// Runs `ip ARGS...`, turning a failure into an error with its stderr.
pub fn ip(args: &[&str]) -> Result<(), EmuError> {
    let command = format!("ip {}", args.join(" "));
    let out = Command::new("ip").args(args).output().context(|| format!("run `{command}` (is iproute2 installed?)"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::IpCommand { command, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() })
    }
}
