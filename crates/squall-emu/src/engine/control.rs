//! The control socket (`squall ctl`): each running emulation listens on a
//! UNIX socket, mode 0600, named after its run id in [`control_dir`]. One
//! request per connection, one JSON line each way:
//!
//! ```text
//! {"cmd":"info"}
//! {"cmd":"status"}
//! {"cmd":"state","name":"weak-signal"}
//! {"cmd":"blackout","on":true,"mode":"hold","direction":"both"}
//! {"cmd":"background","stage":"cell","generator":"cbr","action":"stop"}
//! {"cmd":"background","stage":"cell","generator":"cbr","action":{"rate":"2 Mbit/s"}}
//! {"cmd":"watch"}
//! ```
//!
//! `watch` is the one request that keeps its connection: after the
//! answer, a JSON line of counters every [`watch::INTERVAL`] until the
//! run ends or the client leaves ([`watch`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use squall_link::BlackoutMode;
use squall_scenario::BlackoutDirection;

use crate::engine::command::{BackgroundAction, ControlMessage, ControlRequest};
use crate::engine::watch::{self, Hub};
use crate::error::{Context, EmuError};
use crate::naming::{PREFIX, RunId, control_dir};

/// A request on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Request {
    /// What the run is (answered without the data plane).
    Info,
    Status,
    State {
        name: String,
    },
    Blackout {
        on: bool,
        #[serde(default = "default_mode")]
        mode: BlackoutMode,
        #[serde(default = "default_direction")]
        direction: BlackoutDirection,
    },
    /// Start, stop or re-rate one background generator of a stage (seed
    /// 003 §2.2: the degrader's generators are started, stopped and
    /// configured independently).
    Background {
        stage: String,
        generator: String,
        action: BackgroundAction,
    },
    /// Counters every [`watch::INTERVAL`] on this connection (`squall
    /// ctl watch`).
    Watch,
}

fn default_mode() -> BlackoutMode {
    BlackoutMode::Hold
}
fn default_direction() -> BlackoutDirection {
    BlackoutDirection::Both
}

/// The listening side, served by a thread until dropped.
pub struct ControlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    sampler: Option<JoinHandle<()>>,
}

impl ControlServer {
    /// Listens for run `id`; `info` is the answer to `{"cmd":"info"}`.
    pub fn start(id: RunId, info: serde_json::Value, to_dataplane: Sender<ControlMessage>) -> Result<Self, EmuError> {
        let dir = control_dir();
        std::fs::create_dir_all(&dir).context(|| format!("create {}", dir.display()))?;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        let path = id.control_socket();
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).context(|| format!("listen on {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .context(|| format!("chmod 0600 {}", path.display()))?;
        listener.set_nonblocking(true).context(|| "non-blocking control socket".to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let hub = Arc::new(Hub::default());
        let (sampler_hub, sampler_stop, sampler_dataplane) =
            (Arc::clone(&hub), Arc::clone(&stop), to_dataplane.clone());
        let sampler = std::thread::Builder::new()
            .name("squall-watch".into())
            .spawn(move || watch::sample_loop(&sampler_hub, &sampler_dataplane, &sampler_stop))
            .context(|| "start the watch sampler thread".to_string())?;
        let thread = std::thread::Builder::new()
            .name("squall-ctl".into())
            .spawn(move || serve(listener, info, to_dataplane, &hub, &thread_stop))
            .context(|| "start control thread".to_string())?;
        Ok(ControlServer { path, stop, thread: Some(thread), sampler: Some(sampler) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in [self.thread.take(), self.sampler.take()].into_iter().flatten() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(
    listener: UnixListener,
    info: serde_json::Value,
    to_dataplane: Sender<ControlMessage>,
    hub: &Hub,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                let _ = stream.set_write_timeout(Some(std::time::Duration::from_secs(2)));
                match peer_uid(&stream) {
                    Ok(uid) if may_control(uid) => {
                        let _ = handle(stream, &info, &to_dataplane, hub);
                    }
                    Ok(uid) => refuse(&stream, &format!("refused: uid {uid} does not own this run")),
                    Err(e) => refuse(&stream, &format!("refused: cannot tell who is asking ({e})")),
                }
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// The user id of the process at the other end (SO_PEERCRED).
fn peer_uid(stream: &UnixStream) -> nix::Result<u32> {
    nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials).map(|c| c.uid())
}

/// Whether a process of user `uid` may control this run: the run's own
/// user, or root. The socket's mode (0600) already keeps others out; this
/// holds even if the mode is changed.
pub fn may_control(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

fn refuse(stream: &UnixStream, why: &str) {
    let mut w = stream;
    let _ = writeln!(w, "{}", serde_json::json!({"ok": false, "error": why}));
}

/// The longest request line accepted, bytes (the longest real one, a
/// state name, is far shorter).
pub const MAX_REQUEST: usize = 64 * 1024;

/// Reads one request line: at most [`MAX_REQUEST`] bytes of JSON.
pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    if line.len() > MAX_REQUEST {
        return Err(format!("request longer than {MAX_REQUEST} bytes"));
    }
    let text = std::str::from_utf8(line).map_err(|e| format!("request is not UTF-8: {e}"))?;
    serde_json::from_str(text.trim_end()).map_err(|e| format!("bad request: {e}"))
}

fn handle(
    stream: UnixStream,
    info: &serde_json::Value,
    to_dataplane: &Sender<ControlMessage>,
    hub: &Hub,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    // One byte past the limit tells an oversized request from one that fits.
    BufReader::new(&stream).take(MAX_REQUEST as u64 + 1).read_until(b'\n', &mut line)?;
    let answer: Result<serde_json::Value, String> = match parse_request(&line) {
        Err(e) => Err(e),
        Ok(Request::Info) => Ok(info.clone()),
        Ok(Request::Watch) => {
            let accepted =
                serde_json::json!({"ok": true, "result": {"interval_ms": watch::INTERVAL.as_millis() as u64}});
            let mut w = &stream;
            writeln!(w, "{accepted}")?;
            // A client too slow to take a line in 2 s is left behind.
            stream.set_write_timeout(Some(std::time::Duration::from_secs(2)))?;
            if let Err(e) = hub.subscribe(stream.try_clone()?) {
                writeln!(w, "{}", serde_json::json!({"ok": false, "error": e}))?;
            }
            return Ok(());
        }
        Ok(request) => {
            let request = match request {
                Request::Status => ControlRequest::Status,
                Request::State { name } => ControlRequest::EnterState(name),
                Request::Blackout { on, mode, direction } => {
                    ControlRequest::Blackout { mode: on.then_some(mode), direction }
                }
                Request::Background { stage, generator, action } => {
                    ControlRequest::Background { stage, generator, action }
                }
                Request::Info | Request::Watch => unreachable!("answered above"),
            };
            let (reply, answer) = mpsc::channel();
            match to_dataplane.send(ControlMessage { request, reply }) {
                Err(_) => Err("the run is ending".to_string()),
                Ok(()) => answer
                    .recv_timeout(std::time::Duration::from_secs(2))
                    .unwrap_or_else(|_| Err("the data plane did not answer".into())),
            }
        }
    };
    let reply = match answer {
        Ok(v) => serde_json::json!({"ok": true, "result": v}),
        Err(e) => serde_json::json!({"ok": false, "error": e}),
    };
    let mut w = &stream;
    writeln!(w, "{reply}")
}

/// Sends `request` to run `id` and returns its result.
pub fn request(id: RunId, request: &Request) -> Result<serde_json::Value, EmuError> {
    let path = id.control_socket();
    let err = |message: String| EmuError::Control { path: path.display().to_string(), message };
    let stream = UnixStream::connect(&path).map_err(|e| err(format!("{e} (is run {} still going?)", id.0)))?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).map_err(|e| err(e.to_string()))?;
    let text = serde_json::to_string(request).map_err(|e| err(e.to_string()))?;
    let mut w = &stream;
    writeln!(w, "{text}").map_err(|e| err(e.to_string()))?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).map_err(|e| err(e.to_string()))?;
    let reply: serde_json::Value = serde_json::from_str(&line).map_err(|e| err(format!("bad reply: {e}")))?;
    if reply["ok"] == serde_json::Value::Bool(true) {
        Ok(reply["result"].clone())
    } else {
        Err(err(reply["error"].as_str().unwrap_or("unknown error").to_string()))
    }
}

/// Watches run `id`: `each` gets every line of counters (see [`watch`])
/// until it returns `false` or the run ends (`Ok` both ways).
pub fn watch(id: RunId, mut each: impl FnMut(serde_json::Value) -> bool) -> Result<(), EmuError> {
    let path = id.control_socket();
    let err = |message: String| EmuError::Control { path: path.display().to_string(), message };
    let stream = UnixStream::connect(&path).map_err(|e| err(format!("{e} (is run {} still going?)", id.0)))?;
    // Lines come every 200 ms; 5 s of silence means the run is stuck.
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).map_err(|e| err(e.to_string()))?;
    let text = serde_json::to_string(&Request::Watch).map_err(|e| err(e.to_string()))?;
    let mut w = &stream;
    writeln!(w, "{text}").map_err(|e| err(e.to_string()))?;
    let mut first = true;
    for line in BufReader::new(&stream).lines() {
        let line = line.map_err(|e| err(e.to_string()))?;
        let value: serde_json::Value = serde_json::from_str(&line).map_err(|e| err(format!("bad line: {e}")))?;
        if value["ok"] == serde_json::Value::Bool(false) {
            return Err(err(value["error"].as_str().unwrap_or("unknown error").to_string()));
        }
        if std::mem::take(&mut first) {
            continue;
        }
        if !each(value) {
            break;
        }
    }
    Ok(())
}

/// The runs with a live control socket.
pub fn list() -> Vec<RunId> {
    let Ok(dir) = std::fs::read_dir(control_dir()) else { return Vec::new() };
    let mut ids: Vec<RunId> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // Only the sockets: the run's record (squall-PID.run, in the
            // same directory) is written before its socket exists.
            (name.starts_with(PREFIX) && name.ends_with(".sock")).then(|| RunId::owner_of(&name)).flatten()
        })
        .filter(|id| id.is_alive())
        .collect();
    ids.sort_by_key(|id| id.0);
    ids.dedup_by_key(|id| id.0);
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_json() {
        let r: Request = serde_json::from_str(r#"{"cmd":"blackout","on":true,"direction":"downlink"}"#).unwrap();
        assert_eq!(r, Request::Blackout { on: true, mode: BlackoutMode::Hold, direction: BlackoutDirection::Downlink });
        let r: Request = serde_json::from_str(r#"{"cmd":"state","name":"weak"}"#).unwrap();
        assert_eq!(r, Request::State { name: "weak".into() });
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"reboot"}"#).is_err());
        let r: Request = serde_json::from_str(
            r#"{"cmd":"background","stage":"cell","generator":"cbr","action":{"rate":"2 Mbit/s"}}"#,
        )
        .unwrap();
        let rate = "2 Mbit/s".parse().unwrap();
        assert_eq!(
            r,
            Request::Background { stage: "cell".into(), generator: "cbr".into(), action: BackgroundAction::Rate(rate) }
        );
        let bad = r#"{"cmd":"background","stage":"cell","generator":"cbr","action":{"rate":"fast"}}"#;
        assert!(
            parse_request(bad.as_bytes()).is_err_and(|e| e.contains("rate")),
            "{:?}",
            parse_request(bad.as_bytes())
        );
    }

    #[test]
    fn malformed_and_oversized_requests_are_refused_with_reasons() {
        assert!(parse_request(b"").unwrap_err().contains("bad request"));
        assert!(parse_request(b"{\"cmd\":\"state\"}").unwrap_err().contains("name"));
        assert!(parse_request(&[0xff, 0xfe, b'\n']).unwrap_err().contains("UTF-8"));
        let long = format!("{{\"cmd\":\"state\",\"name\":\"{}\"}}", "x".repeat(MAX_REQUEST));
        assert!(parse_request(long.as_bytes()).unwrap_err().contains("longer than"));
        assert_eq!(parse_request(b"{\"cmd\":\"status\"}\n"), Ok(Request::Status));
    }

    /// Sends `bytes` on a fresh connection to `path` and returns the reply.
    fn raw_request(path: &Path, bytes: &[u8]) -> serde_json::Value {
        let stream = UnixStream::connect(path).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let mut w = &stream;
        // The server may answer (and close) before reading everything.
        let _ = w.write_all(bytes);
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn server_answers_info_and_forwards_status() {
        let dir = std::env::temp_dir().join(format!("squall-ctl-test-{}", std::process::id()));
        crate::sys::test_env::set_var("SQUALL_RUN_DIR", &dir);
        let (tx, rx) = mpsc::channel::<ControlMessage>();
        let server = ControlServer::start(RunId::current(), serde_json::json!({"scenario": "t"}), tx).unwrap();
        let mode = std::fs::metadata(server.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let responder = std::thread::spawn(move || {
            let msg = rx.recv().unwrap();
            assert_eq!(msg.request, ControlRequest::Status);
            msg.reply.send(Ok(serde_json::json!({"time": 1.0}))).unwrap();
        });
        assert_eq!(request(RunId::current(), &Request::Info).unwrap()["scenario"], "t");
        assert_eq!(request(RunId::current(), &Request::Status).unwrap()["time"], 1.0);
        // Hostile clients: garbage, an unknown command, 1 MB without a
        // newline. Each gets a reason; the server keeps serving.
        let path = server.path().to_path_buf();
        for (bytes, reason) in [
            (b"\x00\x01garbage\n".to_vec(), "bad request"),
            (b"{\"cmd\":\"reboot\"}\n".to_vec(), "unknown variant"),
            (vec![b'{'; 1 << 20], "longer than"),
        ] {
            let reply = raw_request(&path, &bytes);
            assert_eq!(reply["ok"], false, "{reply}");
            assert!(reply["error"].as_str().unwrap().contains(reason), "{reply}");
        }
        assert_eq!(request(RunId::current(), &Request::Info).unwrap()["scenario"], "t");
        // Another user: even with the socket opened to everyone, the peer
        // credentials refuse it (only root can run this part).
        if nix::unistd::geteuid().is_root() {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
            use std::os::unix::process::CommandExt;
            let script = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n\
                          s.sendall(b'{\"cmd\":\"info\"}\\n')\nprint(s.makefile().readline())";
            let out = std::process::Command::new("/usr/bin/python3")
                .args(["-c", script])
                .arg(&path)
                .uid(65534)
                .gid(65534)
                .output()
                .expect("/usr/bin/python3 runs");
            let reply: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
            assert_eq!(reply["ok"], false, "{reply}");
            assert!(reply["error"].as_str().unwrap().contains("uid 65534"), "{reply}");
        }
        assert_eq!(list(), vec![RunId::current()]);
        responder.join().unwrap();
        drop(server);
        assert!(list().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
