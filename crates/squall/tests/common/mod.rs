//! Helpers the test binaries share: each binary uses some of them.
#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub mod netem_theory;
pub mod ping;

/// The squall binary under test.
pub const SQUALL: &str = env!("CARGO_BIN_EXE_squall");

/// `squall ARGS`, run to its end.
pub fn squall(args: &[&str]) -> Output {
    Command::new(SQUALL).args(args).output().expect("squall runs")
}

/// `o`, after checking that squall succeeded (its stdout and stderr said
/// if not).
pub fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "squall failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The summary.json of run directory `dir`.
pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The rows of a CSV file without quoted fields, each as column -> value.
pub fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines.map(|l| header.iter().cloned().zip(l.split(',').map(String::from)).collect()).collect()
}

/// The rows of one replication's events.csv (`RUN/rep-N/events.csv`), in
/// order, each as column -> value: only stage `stage`'s when given.
pub fn events(file: &Path, stage: Option<&str>) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    csv_rows(&text).into_iter().filter(|r| stage.is_none_or(|s| r["stage"] == s)).collect()
}

/// One UDP flow from `a` to `b`: 100-byte packets at 40 kbit/s, one every
/// 20 ms from 0 (for [`path_scenario`]).
pub const UDP_A_TO_B: &str =
    "[[workload.udp]]\nname = \"u\"\nfrom = \"a\"\nto = \"b\"\nsize = \"100 B\"\nrate = \"40 kbit/s\"\n";

/// Writes DIR/s.toml, a scenario `name` lasting `duration` of hosts `a`
/// (10.0.0.1) and `b` (10.0.1.1) over one link whose downlink stage
/// `path` and uplink stage `up` each delay by 5 ms, with `top` (keys of
/// the scenario), `path_keys` (keys of stage `path`) and `tail` (states,
/// workload) added, and the data `files` (name, content) beside it.
/// Returns the scenario's path.
pub fn path_scenario(
    dir: &Path,
    (name, duration): (&str, &str),
    top: &str,
    path_keys: &str,
    tail: &str,
    files: &[(&str, &str)],
) -> std::path::PathBuf {
    for (file, content) in files {
        std::fs::write(dir.join(file), content).unwrap();
    }
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"{name}\"\nduration = \"{duration}\"\n{top}\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n\
             [[hosts]]\nname = \"b\"\naddress = \"10.0.1.1\"\n[[links]]\nbetween = [\"a\", \"b\"]\n\
             [[links.downlink]]\nname = \"path\"\ndelay = \"5 ms\"\n{path_keys}\n\
             [[links.uplink]]\nname = \"up\"\ndelay = \"5 ms\"\n{tail}"
        ),
    )
    .unwrap();
    file
}

/// `ip ARGS` with its output discarded: whether it succeeded.
pub fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Headless Chromium's flags for the report tests: no sandbox (root in
/// CI), no network of its own, console messages on stderr.
pub const CHROMIUM_FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
];

/// A page as headless Chromium rendered it: its DOM and a screenshot
/// (pixels, samples per pixel).
pub struct Rendered {
    pub dom: String,
    pub pixels: Vec<u8>,
    pub samples: usize,
}

/// Loads `page` in headless Chromium with its profile in `profile`:
/// asserts that it printed no console message and returns its DOM and a
/// `window` ("W,H") screenshot written to `shot`. None (said on stderr)
/// when Chromium is not installed; under CI=true that fails instead.
pub fn render(page: &Path, profile: &Path, window: &str, shot: &Path) -> Option<Rendered> {
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()));
    let Some(chromium) = chromium else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "chromium is required in CI");
        eprintln!("chromium not installed: skipping the browser checks");
        return None;
    };
    let url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", profile.display());
    let dom = Command::new(chromium).args(CHROMIUM_FLAGS).arg(&profile).arg("--dump-dom").arg(&url).output().unwrap();
    assert!(dom.status.success());
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let s = Command::new(chromium)
        .args(CHROMIUM_FLAGS)
        .arg(&profile)
        .arg(format!("--window-size={window}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(info.buffer_size());
    Some(Rendered {
        dom: String::from_utf8_lossy(&dom.stdout).into_owned(),
        pixels,
        samples: info.color_type.samples(),
    })
}

/// How many of `pixels` (`samples` bytes each) are within `within` of
/// `colour` in each of red, green and blue.
pub fn pixels_near(pixels: &[u8], samples: usize, colour: [u8; 3], within: u8) -> usize {
    pixels
        .chunks(samples)
        .filter(|p| {
            p[0].abs_diff(colour[0]) < within && p[1].abs_diff(colour[1]) < within && p[2].abs_diff(colour[2]) < within
        })
        .count()
}

/// The namespaces `ip netns list` shows whose name starts with `prefix`.
pub fn namespaces_named(prefix: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(String::from)
        .collect()
}

/// The namespaces of the emulation run `run` (its process id):
/// `squall-RUN-*`.
pub fn namespaces_of(run: impl std::fmt::Display) -> Vec<String> {
    namespaces_named(&format!("squall-{run}-"))
}

/// Whether network namespaces and TUN devices can be made here; panics
/// under CI=true if not (CI runs as root: a skip there would hide a
/// broken set-up).
///
/// It also makes the calling test the only one of its test binary that
/// emulates until it ends: libtest runs two tests at once on this 2-core
/// machine, and two emulations with their pings, iperf3s and tsharks on
/// two cores wake each other's data planes late (CI saw a slot batch
/// split by a departure 2.5 ms late, tests/netem_emu.rs). The turn is a
/// process-wide lock whose guard lives in a thread-local of the test's
/// thread (libtest gives each test its own), so it is released when the
/// test returns or panics; a second call on the same thread keeps it.
pub fn namespaces_available() -> bool {
    take_emulation_turn();
    // Tests run as threads of one process: each probe needs its own name.
    static PROBE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("squall-{}-probe{n}", std::process::id());
    let made =
        Command::new("ip").args(["netns", "add", &name]).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
            && Path::new("/dev/net/tun").exists();
    let _ = Command::new("ip").args(["netns", "delete", &name]).stderr(Stdio::null()).status();
    if !made {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but network namespaces cannot be made (need root, iproute2 and /dev/net/tun)");
        }
        eprintln!("skipping: network namespaces cannot be made here (need root, iproute2 and /dev/net/tun)");
    }
    made
}

/// Waits until no other test of this binary holds the emulation turn and
/// holds it for the rest of the calling thread (see
/// [`namespaces_available`]).
fn take_emulation_turn() {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    thread_local! {
        static HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, ()>>> =
            const { std::cell::RefCell::new(None) };
    }
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if held.is_none() {
            // A test that panicked while holding it leaves it poisoned;
            // the lock guards no data, so the next test goes on.
            *held = Some(TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        }
    });
}

/// Runs `squall ENGINE SCENARIO --out DIR/ENGINE EXTRA…`, checks that it
/// succeeded and returns its summary.json.
pub fn run_engine(dir: &Path, engine: &str, scenario: impl AsRef<OsStr>, extra: &[&str]) -> serde_json::Value {
    let out = dir.join(engine);
    let o = Command::new(env!("CARGO_BIN_EXE_squall"))
        .arg(engine)
        .arg(scenario)
        .args(["--out", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{engine}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Half the width of the normal-approximation binomial interval of a
/// count out of `n` trials of probability `p`: `z`·√(n·p·(1−p)) (z = 1.96
/// for 95 %, 3.29 for 99.9 %). A count is inside when it differs from
/// n·p by at most this.
pub fn binomial_half_width(n: f64, p: f64, z: f64) -> f64 {
    z * (n * p * (1.0 - p)).sqrt()
}

/// Runs `f` while another thread measures how late this machine wakes
/// a sleeping thread (`std::thread::sleep(1 ms)` overshoot, for as long
/// as `f` runs). A test that needs an upper bound on real time widens the
/// bound by this and by nothing else: each late wake-up of squall's data
/// plane, of a sender or of a receiver adds at most one such overshoot.
/// `squall bench timing` prints the same figures.
pub fn timer_latency_during<T>(f: impl FnOnce() -> T) -> (T, squall_emu::timing::SleepOvershoot) {
    let (result, late) = squall_emu::timing::sleep_overshoot_during(f);
    eprintln!(
        "timer latency meanwhile ({} sleeps of 1 ms): overshoot p99 {:.3} ms, max {:.3} ms",
        late.samples,
        late.p99 * 1e3,
        late.max * 1e3
    );
    (result, late)
}

/// tcp-10mbit.toml with a 4 Mbit/s downlink, a state `slow` at 1 Mbit/s
/// and a bulk TCP download of `bytes` as its workload.
pub fn live_network(bytes: &str) -> String {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/emu/tcp-10mbit.toml");
    let text = std::fs::read_to_string(file).unwrap();
    let down = "name = \"down\"\nrate = \"10 Mbit/s\"";
    assert!(text.contains(down));
    text.replacen(down, "name = \"down\"\nrate = \"4 Mbit/s\"", 1)
        + "\n[[states]]\nname = \"slow\"\nset.down = { rate = \"1 Mbit/s\" }\n\n[[workload.tcp]]\nname = \
           \"download\"\nfrom = \"fixed\"\nto = \"mobile\"\nstart = \"0.1 s\"\n"
        + &format!("app = {{ bulk = \"{bytes}\" }}\n")
}
