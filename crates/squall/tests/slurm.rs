//! `squall run --slurm --submit` on a real Slurm (issue 33): munged,
//! slurmctld and slurmd for one node on this machine, a 100-run
//! experiment as a job array of 10 shards and a dependent report job,
//! whose results.csv must be that of a local `squall run`.
//!
//! Needs root and Debian's slurm-wlm and munge (.ci/run installs them);
//! without them it skips, except under CI=true, where it fails. It
//! installs nothing; what it starts it stops, and what it creates it
//! removes, also when it fails ([`Cluster`]'s Drop).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{SQUALL, ok, squall};

/// 4 sweep points × 25 replications = 100 short runs.
const EXPERIMENT: &str = r#"
name = "on-slurm"
[[sets]]
name = "sweep"
scenario = "builtin:gsm-udp"
replications = 25
set = { duration = "5 s" }
[sets.sweep]
"stage.gsm-down.rate" = ["4800 bit/s", "9600 bit/s"]
"stage.gsm-down.delay" = ["100 ms", "300 ms"]
"#;

const TOOLS: [&str; 9] =
    ["munged", "mungekey", "munge", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "scancel"];

/// Whether this test can run here; under CI=true a missing piece fails it.
fn available() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let missing: Vec<&str> = TOOLS
        .iter()
        .copied()
        .filter(|t| !Command::new("which").arg(t).output().is_ok_and(|o| o.status.success()))
        .collect();
    let munge_user = Command::new("id").args(["-u", "munge"]).output().is_ok_and(|o| o.status.success());
    if root && missing.is_empty() && munge_user {
        return true;
    }
    let why = format!(
        "the Slurm test needs root ({}), the munge user ({}) and {} (Debian's slurm-wlm and munge)",
        if root { "yes" } else { "no" },
        if munge_user { "yes" } else { "no" },
        if missing.is_empty() {
            "its tools (all found)".to_string()
        } else {
            format!("{} (missing)", missing.join(", "))
        }
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {why}");
    eprintln!("skipping: {why}");
    false
}

/// The standard output of `program ARGS`, which must succeed.
fn stdout_of(program: &str, args: &[&str]) -> String {
    let o = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(o.status.success(), "{program} {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// Sends SIGTERM to `child` and waits up to 20 s for it to end (then
/// SIGKILL).
fn stop(child: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A one-node Slurm cluster on this machine, and the munged it needs;
/// dropped, it cancels its jobs, stops every daemon it started and
/// removes what it created.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    munged: Option<Child>,
    slurmctld: Option<Child>,
    slurmd: Option<Child>,
    made_key: bool,
    made_run_dir: bool,
    jobs: Vec<String>,
}

const MUNGE_KEY: &str = "/etc/munge/munge.key";
const MUNGE_RUN: &str = "/run/munge";

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::Builder::new().prefix("squall-slurm-").tempdir().unwrap();
        let conf = dir.path().join("slurm.conf");
        let mut cluster = Cluster {
            dir,
            conf,
            munged: None,
            slurmctld: None,
            slurmd: None,
            made_key: false,
            made_run_dir: false,
            jobs: Vec::new(),
        };
        cluster.start_munge();
        cluster.start_slurm();
        cluster
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A log file of the temporary directory for a daemon's output.
    fn log(&self, name: &str) -> Stdio {
        Stdio::from(std::fs::File::create(self.path(name)).unwrap())
    }

    /// munged with the system's key and socket (where sbatch and the
    /// daemons look for them), run as the munge user as Debian's unit
    /// does; one already running is used as it is.
    fn start_munge(&mut self) {
        if !Path::new(MUNGE_KEY).exists() {
            // mungekey(8): -c creates the key, owned by who runs it.
            ok_status(Command::new("mungekey").args(["-c", "-k", MUNGE_KEY]), "mungekey -c");
            ok_status(Command::new("chown").args(["munge:munge", MUNGE_KEY]), "chown munge.key");
            self.made_key = true;
        }
        if Command::new("munge")
            .arg("-n")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return;
        }
        if !Path::new(MUNGE_RUN).exists() {
            std::fs::create_dir(MUNGE_RUN).unwrap();
            self.made_run_dir = true;
        }
        ok_status(Command::new("chown").args(["munge:munge", MUNGE_RUN]), "chown /run/munge");
        let uid: u32 = stdout_of("id", &["-u", "munge"]).parse().unwrap();
        let gid: u32 = stdout_of("id", &["-g", "munge"]).parse().unwrap();
        use std::os::unix::process::CommandExt as _;
        let munged = Command::new("munged")
            .arg("--foreground")
            .uid(uid)
            .gid(gid)
            .stdout(self.log("munged.out"))
            .stderr(self.log("munged.err"))
            .spawn()
            .expect("munged starts");
        self.munged = Some(munged);
        self.wait_for("munged to answer", || {
            Command::new("munge")
                .arg("-n")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
    }

    /// slurmctld and slurmd in the foreground (-D), with a minimal
    /// slurm.conf(5) for one node of all this machine's CPUs, its state,
    /// spool, pid and log files in the temporary directory.
    fn start_slurm(&mut self) {
        let host = stdout_of("hostname", &["-s"]);
        let cpus = stdout_of("nproc", &[]);
        let d = self.dir.path().display().to_string();
        for sub in ["state", "spool"] {
            std::fs::create_dir(self.path(sub)).unwrap();
        }
        let conf = format!(
            "ClusterName=squalltest\n\
             SlurmctldHost={host}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             SlurmctldPort=16817\n\
             SlurmdPort=16818\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\n\
             SlurmdLogFile={d}/slurmd.log\n\
             ReturnToService=2\n\
             MpiDefault=none\n\
             JobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             NodeName={host} CPUs={cpus} State=UNKNOWN\n\
             PartitionName=squall Nodes={host} Default=YES MaxTime=INFINITE State=UP\n"
        );
        std::fs::write(&self.conf, conf).unwrap();
        let (conf, dir) = (self.conf.clone(), self.dir.path().to_path_buf());
        let daemon = move |program: &str, out: &str| {
            let log = std::fs::File::create(dir.join(out)).unwrap();
            Command::new(program)
                .args(["-D", "-f"])
                .arg(&conf)
                .env("SLURM_CONF", &conf)
                .stderr(log.try_clone().unwrap())
                .stdout(log)
                .spawn()
                .unwrap_or_else(|e| panic!("{program} starts: {e}"))
        };
        // Each stored as it starts: a failure after it still stops it (Drop).
        self.slurmctld = Some(daemon("slurmctld", "slurmctld.out"));
        self.slurmd = Some(daemon("slurmd", "slurmd.out"));
        self.wait_for("the node to be idle in sinfo", || {
            self.slurm("sinfo", &["-h", "-o", "%t"]).is_some_and(|s| s.trim() == "idle")
        });
    }

    /// `program ARGS` against this cluster: its stdout if it succeeded.
    fn slurm(&self, program: &str, args: &[&str]) -> Option<String> {
        let o = Command::new(program).args(args).env("SLURM_CONF", &self.conf).output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(60), "waited 60 s for {what}; logs:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The state of job `id` (`scontrol show job`'s JobState), None when
    /// Slurm does not know it.
    fn job_state(&self, id: &str) -> Option<String> {
        let text = self.slurm("scontrol", &["show", "job", id])?;
        let state = text.split_whitespace().find_map(|w| w.strip_prefix("JobState="))?;
        Some(state.to_string())
    }

    /// The daemons' logs, for a failure's message.
    fn logs(&self) -> String {
        ["munged.err", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.path(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!("--- {f}\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn ok_status(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed ({status})");
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.jobs.is_empty() {
            let _ = Command::new("scancel").args(&self.jobs).env("SLURM_CONF", &self.conf).status();
        }
        for child in [self.slurmd.take(), self.slurmctld.take(), self.munged.take()].into_iter().flatten() {
            let mut child = child;
            stop(&mut child);
        }
        if self.made_run_dir {
            let _ = std::fs::remove_dir_all(MUNGE_RUN);
        }
        if self.made_key {
            let _ = std::fs::remove_file(MUNGE_KEY);
        }
    }
}

#[test]
fn an_experiment_on_slurm_gives_the_results_of_a_local_run() {
    if !available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let exp = work.path().join("on-slurm.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let exp = exp.to_str().unwrap();
    let local = work.path().join("local");
    ok(squall(&["run", exp, "--out", local.to_str().unwrap()]));
    let expected = std::fs::read_to_string(local.join("results.csv")).unwrap();
    // 2 flows per run.
    assert_eq!(expected.lines().count(), 1 + 100 * 2);

    let mut cluster = Cluster::start();
    let out = work.path().join("cluster");
    let submitted = Command::new(SQUALL)
        .args(["run", exp, "--out", out.to_str().unwrap(), "--slurm", "--array-size", "10", "--submit"])
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&submitted.stdout).into_owned();
    assert!(submitted.status.success(), "{said}\n{}", String::from_utf8_lossy(&submitted.stderr));
    // "submitted job array A (10 tasks) and report job R (after every task of A)"
    let words: Vec<&str> = said.split_whitespace().collect();
    let after = |w: &str| words.windows(2).find(|p| p[0] == w).map(|p| p[1].to_string());
    let array = after("array").unwrap_or_else(|| panic!("no job array id in {said}"));
    let report = words
        .windows(3)
        .find(|p| p[0] == "report" && p[1] == "job")
        .map(|p| p[2].to_string())
        .unwrap_or_else(|| panic!("no report job id in {said}"));
    assert!(said.contains("(10 tasks)"), "{said}");
    cluster.jobs = vec![array.clone(), report.clone()];
    // The report job waits on the whole array.
    let shown = cluster.slurm("scontrol", &["show", "job", &report]).unwrap_or_default();
    assert!(shown.contains(&format!("afterany:{array}")), "{shown}");

    let start = Instant::now();
    let state = loop {
        if let Some(s @ ("COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY")) =
            cluster.job_state(&report).as_deref()
        {
            break s.to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "the jobs did not end in 15 minutes; squeue:\n{}\n{}",
            cluster.slurm("squeue", &[]).unwrap_or_default(),
            cluster.logs()
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    let slurm_dir = out.join("slurm");
    let report_log = std::fs::read_to_string(slurm_dir.join("report.log")).unwrap_or_default();
    assert_eq!(state, "COMPLETED", "report job: {report_log}\n{}", cluster.logs());
    // Every task ran its shard and finished.
    for i in 0..10 {
        let log = std::fs::read_to_string(slurm_dir.join(format!("shard-{i}.log"))).unwrap();
        assert!(log.contains(&format!("shard {i}/10 done")), "task {i}: {log}");
    }
    // The report job (not a shard) wrote the report, from all 100 runs.
    assert!(report_log.contains("results.csv"), "{report_log}");
    let got = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(got, expected, "results.csv of the Slurm run differs from the local run's");
    drop(cluster);
}
