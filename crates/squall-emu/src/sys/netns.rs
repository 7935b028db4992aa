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

/// A network namespace: one this run created (an `ip netns` name), or an
/// existing one it joined (an `ip netns` name, or a process's
/// `/proc/PID/ns/net`), which it never removes.
#[derive(Clone, Debug)]
pub struct NetNs {
    /// The `ip netns` name, or `pid N` for a process's namespace.
    name: String,
    /// The file that holds the namespace (`/run/netns/NAME`,
    /// `/proc/PID/ns/net`).
    path: PathBuf,
    /// Reachable by name with `ip -n NAME`.
    by_name: bool,
    /// Existing before the run: joined, never removed.
    joined: bool,
}

impl NetNs {
    /// Creates the namespace `name` with its loopback up.
    pub fn create(name: &str) -> Result<Self, EmuError> {
        ip(&["netns", "add", name])?;
        let ns = NetNs::named(name);
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// A handle on the existing namespace `name` (made by this run).
    pub(crate) fn named(name: &str) -> Self {
        NetNs { name: name.to_string(), path: Path::new(NETNS_DIR).join(name), by_name: true, joined: false }
    }

    /// The existing namespace `name` (`ip netns list`), joined: this run
    /// will not remove it.
    pub fn join_named(name: &str) -> Self {
        NetNs { joined: true, ..NetNs::named(name) }
    }

    /// The namespace of process `pid` (`/proc/PID/ns/net`), joined.
    pub fn join_pid(pid: u32) -> Self {
        NetNs { name: format!("pid {pid}"), path: format!("/proc/{pid}/ns/net").into(), by_name: false, joined: true }
    }

    /// A joined namespace held by the file `path` (as recorded), named
    /// `name` in messages.
    pub fn join_path(name: &str, path: &Path) -> Self {
        NetNs { name: name.to_string(), path: path.to_path_buf(), by_name: false, joined: true }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether the namespace existed before the run (joined, not made).
    pub fn is_joined(&self) -> bool {
        self.joined
    }

    /// The device and inode of the namespace (nsfs): the same pair for
    /// every file that holds one namespace, so it identifies it across
    /// names, pids and runs (namespaces(7), "/proc/[pid]/ns/").
    pub fn identity(&self) -> Result<(u64, u64), EmuError> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&self.path)
            .context(|| format!("open namespace {} ({})", self.name, self.path.display()))?;
        Ok((meta.dev(), meta.ino()))
    }

    /// Runs `ip -n NAME ARGS...` (`ip ARGS...` inside the namespace for
    /// one reached through a process).
    pub fn ip(&self, args: &[&str]) -> Result<(), EmuError> {
        self.ip_output(args).map(|_| ())
    }

    /// As [`NetNs::ip`], returning what `ip` printed on stdout.
    pub fn ip_output(&self, args: &[&str]) -> Result<String, EmuError> {
        if self.by_name {
            let mut all = vec!["-n", &self.name];
            all.extend_from_slice(args);
            return ip_output(&all, Command::new("ip"));
        }
        let file = File::open(&self.path).context(|| format!("open namespace {}", self.name))?;
        let fd = file.as_raw_fd();
        let mut command = Command::new("ip");
        // SAFETY: between fork and exec only setns, async-signal-safe, is
        // called; `file` outlives the spawn because the closure owns it.
        unsafe {
            command.pre_exec(move || {
                let _keep = &file;
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        ip_output(args, command).map_err(|e| match e {
            EmuError::IpCommand { command, stderr } => {
                EmuError::IpCommand { command: format!("{command} (in namespace {})", self.name), stderr }
            }
            e => e,
        })
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
        // The parent's pid, read before the fork: a child whose parent died
        // between the fork and its prctl gets no signal (prctl(2): the
        // setting applies from then on), so it checks getppid after setting
        // it and does not exec an orphan (SIGKILL of squall while a workload
        // was being started left `sleep 60` running, seen in CI).
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (setns, prctl, getppid), and `file` outlives the spawn
        // because the closure owns it.
        unsafe {
            command.pre_exec(move || {
                let _keep = &file;
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("squall died while starting this process"));
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Kills every process left inside and removes the namespace (and the
    /// devices in it with it); a joined namespace is left alone.
    pub fn delete(self) -> Result<(), EmuError> {
        if self.joined {
            return Ok(());
        }
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
    ip_output(args, Command::new("ip")).map(|_| ())
}

/// Runs `ip ARGS...` through `command` (an `ip` command, maybe set to
/// enter a namespace), returning its stdout or an error with its stderr.
fn ip_output(args: &[&str], mut command: Command) -> Result<String, EmuError> {
    let line = format!("ip {}", args.join(" "));
    let out = command.args(args).output().context(|| format!("run `{line}` (is iproute2 installed?)"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(EmuError::IpCommand { command: line, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() })
    }
}
