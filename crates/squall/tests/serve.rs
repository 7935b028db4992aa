//! `squall serve` (issue 32) through its real HTTP interface: the server
//! is the squall binary on an ephemeral port, the client is curl.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{SQUALL, namespaces_of};

/// Tests that start emulations run one at a time: GET /api/emulations
/// lists every run on the machine, and each run keeps its own timing.
static EMULATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running `squall serve`, stopped when dropped.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    base: String,
    token: String,
}

impl Server {
    fn start(workspace: &Path) -> Server {
        Server::start_as(Command::new(SQUALL), workspace)
    }

    /// `command` (the squall binary, maybe behind a wrapper) serving
    /// `workspace`.
    fn start_as(mut command: Command, workspace: &Path) -> Server {
        let mut child = command
            .args(["serve", "--port", "0", "--jobs", "2", "--workspace"])
            .arg(workspace)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("squall serve starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("squall serve prints its URL").unwrap();
            if let Some(url) = line.trim().strip_prefix("http://") {
                break url.to_string();
            }
        };
        let (host, token) = url.split_once("/?token=").expect("URL with ?token=");
        assert!(host.starts_with("127.0.0.1:"), "binds loopback by default: {url}");
        Server { child, base: format!("http://{host}"), token: token.into() }
    }

    /// curl METHOD PATH with the token and `extra` arguments: (status, body).
    fn call(&self, method: &str, path: &str, extra: &[&str]) -> (u16, String) {
        let token = format!("X-Squall-Token: {}", self.token);
        let mut args = vec!["-H", token.as_str()];
        args.extend_from_slice(extra);
        curl(method, &format!("{}{path}", self.base), &args)
    }

    fn json(&self, method: &str, path: &str, body: &serde_json::Value, headers: &[&str]) -> (u16, serde_json::Value) {
        let body = body.to_string();
        let mut extra = vec!["-H", "Content-Type: application/json", "--data-binary", body.as_str()];
        for h in headers {
            extra.extend(["-H", h]);
        }
        let (status, text) = self.call(method, path, &extra);
        (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }

    fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let (status, text) = self.call("GET", path, &[]);
        (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn curl(method: &str, url: &str, extra: &[&str]) -> (u16, String) {
    let o = Command::new("curl")
        .args(["-sS", "-X", method, "-w", "\n%{http_code}", url])
        .args(extra)
        .output()
        .expect("curl runs (apt-get install curl)");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        code.trim().parse().unwrap_or_else(|_| panic!("curl {url}: {text} {}", String::from_utf8_lossy(&o.stderr))),
        body.into(),
    )
}

/// Every operation of /api/openapi.json as (method, path with its
/// parameters filled in).
fn operations(server: &Server) -> Vec<(String, String)> {
    let (status, spec) = server.get("/api/openapi.json");
    assert_eq!(status, 200);
    assert_eq!(spec["openapi"], "3.1.0");
    let mut ops = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        let filled = path
            .replace("{kind}", "networks")
            .replace("{name}", "nothing-here")
            .replace("{id}", "999")
            .replace("{path}", "summary.csv");
        for method in item.as_object().unwrap().keys() {
            ops.push((method.to_uppercase(), filled.clone()));
        }
    }
    assert!(ops.len() >= 15, "{ops:?}");
    ops
}

#[test]
fn every_documented_operation_is_mounted_and_needs_the_token() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    for (method, path) in operations(&server) {
        let body = ["-H", "Content-Type: application/json", "--data-binary", "{}"];
        let url = format!("{}{path}", server.base);
        let (status, text) = curl(&method, &url, &body);
        assert_eq!(status, 401, "{method} {path} without a token: {text}");
        assert!(text.contains("access token"), "{text}");
        let (status, _) = curl(&method, &url, &["-H", "X-Squall-Token: 0123", "--data-binary", "{}"]);
        assert_eq!(status, 401, "{method} {path} with a wrong token");
        let (status, text) = server.call(&method, &path, &body);
        assert!(status != 405 && !text.contains("no_route"), "{method} {path} is not mounted: {status} {text}");
    }
    // A route that is not documented is not there.
    let (status, text) = server.call("GET", "/api/nothing", &[]);
    assert_eq!(status, 404);
    assert!(text.contains("no_route"), "{text}");
    // The page: 401 without the token, 200 and a SameSite cookie with it.
    let (status, _) = curl("GET", &format!("{}/", server.base), &[]);
    assert_eq!(status, 401);
    let page = format!("{}/?token={}", server.base, server.token);
    let o = Command::new("curl").args(["-sS", "-i", &page]).output().unwrap();
    let head = String::from_utf8_lossy(&o.stdout);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_lowercase().contains("set-cookie: squall_token="), "{head}");
    assert!(head.contains("SameSite=Strict") && head.contains("HttpOnly"), "{head}");
    // ... and the cookie alone opens the API.
    let cookie = format!("Cookie: squall_token={}", server.token);
    let (status, _) = curl("GET", &format!("{}/api/files/networks", server.base), &["-H", &cookie]);
    assert_eq!(status, 200);
}

#[test]
fn a_foreign_host_or_origin_is_refused() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let port = server.base.rsplit(':').next().unwrap();
    // DNS rebinding: a page of evil.example whose name now leads to 127.0.0.1.
    let host = format!("Host: evil.example:{port}");
    let (status, text) = server.call("GET", "/api/files/networks", &["-H", &host]);
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("evil.example"), "{text}");
    let (status, text) = server.call("GET", "/api/files/networks", &["-H", "Origin: http://evil.example"]);
    assert_eq!(status, 403, "{text}");
    let (status, _) = server.call("GET", "/api/files/networks", &["-H", "Sec-Fetch-Site: cross-site"]);
    assert_eq!(status, 403);
    let own = format!("Origin: {}", server.base);
    let (status, _) = server.call("GET", "/api/files/networks", &["-H", &own]);
    assert_eq!(status, 200);
    let localhost = format!("Host: localhost:{port}");
    let (status, _) = server.call("GET", "/api/files/networks", &["-H", &localhost]);
    assert_eq!(status, 200);
}

#[test]
fn a_non_loopback_bind_needs_allow_remote() {
    let o = common::squall(&["serve", "--bind", "0.0.0.0", "--port", "0", "--workspace", "/nonexistent-never"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--bind 0.0.0.0") && err.contains("--allow-remote"), "{err}");
    assert!(!Path::new("/nonexistent-never").exists(), "refused before the workspace is made");
}

#[test]
fn files_are_written_read_listed_deleted_and_no_edit_is_lost() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let text = "name = \"one\"\n";
    let (status, made) =
        server.json("PUT", "/api/files/workloads/w1", &serde_json::json!({ "text": text }), &["If-None-Match: *"]);
    assert_eq!(status, 201, "{made}");
    assert_eq!(std::fs::read_to_string(ws.path().join("workloads/w1.toml")).unwrap(), text);
    // Creating it again is refused: it exists.
    let (status, _) =
        server.json("PUT", "/api/files/workloads/w1", &serde_json::json!({ "text": "x" }), &["If-None-Match: *"]);
    assert_eq!(status, 409);
    let (status, read) = server.get("/api/files/workloads/w1");
    assert_eq!((status, read["text"].as_str()), (200, Some(text)));
    let loaded = read["etag"].as_str().unwrap().to_string();
    assert_eq!(loaded, made["etag"].as_str().unwrap());
    // Two editors loaded the same version; the first saves, the second is refused.
    let a = "description = \"edited by A\"\n";
    let (status, saved) = server.json(
        "PUT",
        "/api/files/workloads/w1",
        &serde_json::json!({ "text": a }),
        &[&format!("If-Match: {loaded}")],
    );
    assert_eq!(status, 200, "{saved}");
    let (status, refused) = server.json(
        "PUT",
        "/api/files/workloads/w1",
        &serde_json::json!({ "text": "description = \"edited by B\"\n" }),
        &[&format!("If-Match: {loaded}")],
    );
    assert_eq!(status, 409, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("changed by someone else"), "{refused}");
    assert_eq!(refused["etag"], saved["etag"]);
    assert_eq!(std::fs::read_to_string(ws.path().join("workloads/w1.toml")).unwrap(), a, "A's edit kept");
    // No precondition on an existing file: refused too.
    let (status, _) = server.json("PUT", "/api/files/workloads/w1", &serde_json::json!({ "text": "x" }), &[]);
    assert_eq!(status, 409);
    let (status, list) = server.get("/api/files/workloads");
    assert_eq!(status, 200);
    assert_eq!(list.as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect::<Vec<_>>(), ["w1"]);
    // A stale delete is refused, a current one done.
    let (status, _) = server.call("DELETE", "/api/files/workloads/w1", &["-H", &format!("If-Match: {loaded}")]);
    assert_eq!(status, 409);
    let current = format!("If-Match: {}", saved["etag"].as_str().unwrap());
    let (status, _) = server.call("DELETE", "/api/files/workloads/w1", &["-H", &current]);
    assert_eq!(status, 204);
    assert!(!ws.path().join("workloads/w1.toml").exists());
    assert_eq!(server.get("/api/files/workloads/w1").0, 404);
    assert_eq!(server.get("/api/files/nonsense").0, 404);
}

/// Every file below `dir`.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(tree(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

#[test]
fn traversal_oversized_and_malformed_requests_are_refused_and_nothing_is_written() {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.toml"), "secret = 1\n").unwrap();
    let server = Server::start(&ws);
    std::os::unix::fs::symlink(outside.join("secret.toml"), ws.join("networks/evil.toml")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("results/evil")).unwrap();
    let before = (tree(root.path()), std::fs::read_to_string(outside.join("secret.toml")).unwrap());
    let body = serde_json::json!({ "text": "pwned = 1\n" });
    for (path, want) in [
        ("/api/files/networks/..%2F..%2Foutside%2Fx", 400),
        ("/api/files/networks/%2E%2E", 400),
        ("/api/files/networks/%2Ftmp%2Fabsolute", 400),
        ("/api/files/networks/evil", 403),
    ] {
        let (status, answer) = server.json("PUT", path, &body, &["If-Match: *"]);
        assert_eq!(status, want, "PUT {path}: {answer}");
        assert!(answer["error"].as_str().is_some_and(|e| e.contains("refused")), "{answer}");
    }
    let (status, answer) = server.get("/api/files/networks/evil");
    assert_eq!(status, 403, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("outside the workspace"), "{answer}");
    assert!(!answer.to_string().contains("secret = 1"));
    for path in [
        "/api/results/x/files/..%2F..%2Fnetworks%2Fevil.toml",
        "/api/results/x/files/%2Fetc%2Fpasswd",
        "/api/results/..%2F..%2Foutside/files/secret.toml",
    ] {
        let (status, answer) = server.get(path);
        assert_eq!(status, 400, "GET {path}: {answer}");
    }
    let (status, answer) = server.get("/api/results/evil/files/secret.toml");
    assert_eq!(status, 403, "{answer}");
    // A body over the 1 MiB bound.
    let big = serde_json::json!({ "text": "#".repeat(2 << 20) });
    let file = root.path().join("big.json");
    std::fs::write(&file, big.to_string()).unwrap();
    let at = format!("@{}", file.display());
    let (status, _) = server.call(
        "PUT",
        "/api/files/networks/big",
        &["-H", "Content-Type: application/json", "-H", "If-None-Match: *", "--data-binary", &at],
    );
    assert_eq!(status, 413);
    std::fs::remove_file(&file).unwrap();
    // Malformed JSON, an unknown field, a wrong type.
    for (body, says) in [
        ("{\"text\": ", "EOF while parsing"),
        ("{\"txt\": \"a = 1\"}", "unknown field `txt`"),
        ("{\"text\": 5}", "invalid type"),
    ] {
        let (status, text) = server.call(
            "PUT",
            "/api/files/networks/new",
            &["-H", "Content-Type: application/json", "-H", "If-None-Match: *", "--data-binary", body],
        );
        assert_eq!(status, 400, "{body}: {text}");
        assert!(text.contains("request body") && text.contains(says), "{body}: {text}");
    }
    let (status, text) = server.call("POST", "/api/sets", &["--data-binary", "[1,"]);
    assert_eq!(status, 400, "{text}");
    assert_eq!((tree(root.path()), std::fs::read_to_string(outside.join("secret.toml")).unwrap()), before);
}

/// A network with a mistake: the API's located problem is where `squall
/// sim` says it is.
#[test]
fn validation_gives_the_command_lines_located_errors() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let (status, t) = server.get("/api/templates/gsm-udp");
    assert_eq!(status, 200);
    let good = t["network"].as_str().unwrap();
    assert!(t["workload"].as_str().unwrap().contains("[[workload.udp]]"));
    let (status, ok) = server.json(
        "POST",
        "/api/validate",
        &serde_json::json!({ "kind": "networks", "name": "gsm", "text": good }),
        &[],
    );
    assert_eq!((status, &ok["ok"]), (200, &serde_json::json!(true)), "{ok}");
    let bad = good.replacen("rate = \"9600 bit/s\"", "rate = \"9600 bananas\"", 1);
    assert_ne!(bad, good, "the template has the rate the test spoils");
    let (_, answer) = server.json(
        "POST",
        "/api/validate",
        &serde_json::json!({ "kind": "networks", "name": "gsm", "text": bad }),
        &[],
    );
    let p = &answer["problems"][0];
    assert_eq!(answer["ok"], false);
    // The command line on the same file.
    std::fs::write(ws.path().join("networks/gsm.toml"), &bad).unwrap();
    let o =
        Command::new(SQUALL).current_dir(ws.path()).args(["sim", "networks/gsm.toml", "--out", "o"]).output().unwrap();
    let cli = String::from_utf8_lossy(&o.stderr);
    let located = format!(
        "networks/gsm.toml:{}:{}: `{}`: {}",
        p["line"],
        p["column"],
        p["key"].as_str().unwrap(),
        p["message"].as_str().unwrap()
    );
    assert!(cli.contains(&located), "API {located}\nCLI {cli}");
    let line = bad.lines().nth(p["line"].as_u64().unwrap() as usize - 1).unwrap();
    assert!(line.contains("9600 bananas"), "line {} is `{line}`", p["line"]);
    // A workload file with a network's key in it.
    let (_, w) = server.json(
        "POST",
        "/api/validate",
        &serde_json::json!({ "kind": "workloads", "text": "[[workload.tcp]]\nname = \"t\"\n\n[[links]]\n" }),
        &[],
    );
    assert_eq!(w["problems"][0]["line"], 4, "{w}");
}

fn wait_for_job(server: &Server, name: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let (_, jobs) = server.get("/api/jobs");
        let job = jobs.as_array().unwrap().iter().find(|j| j["name"] == name).cloned().expect("the job is listed");
        if ["done", "failed", "cancelled"].contains(&job["state"].as_str().unwrap()) {
            return job;
        }
        assert!(start.elapsed() < Duration::from_secs(300), "job still {job} after 300 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A 4-replication set run by the server gives, replication by
/// replication, the very numbers `squall sim` gives for the same scenario
/// and seed; a restarted server still lists the run.
#[test]
fn a_four_replication_set_matches_squall_sim_and_survives_a_restart() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let (_, t) = server.get("/api/templates/gsm-reno");
    let network = t["network"].as_str().unwrap().replace("duration = \"600 s\"", "duration = \"60 s\"");
    let (status, _) =
        server.json("PUT", "/api/files/networks/gsm", &serde_json::json!({ "text": network }), &["If-None-Match: *"]);
    assert_eq!(status, 201);
    let workload = "[[workload.udp]]\nname = \"cbr\"\nfrom = \"fixed\"\nto = \"mobile\"\nsize = \"200 B\"\ninterval = \"500 ms\"\n";
    let (status, _) =
        server.json("PUT", "/api/files/workloads/cbr", &serde_json::json!({ "text": workload }), &["If-None-Match: *"]);
    assert_eq!(status, 201);
    for (wl, name) in [(None, "own"), (Some("cbr"), "crossed")] {
        let mut set = serde_json::json!({ "name": name, "network": "gsm", "replications": 4, "seed": 11 });
        if let Some(w) = wl {
            set["workload"] = w.into();
        }
        let (status, made) = server.json("POST", "/api/sets", &set, &[]);
        assert_eq!(status, 201, "{made}");
        let job = wait_for_job(&server, name);
        assert_eq!(job["state"], "done", "{job}");
        assert_eq!((job["done"].as_u64(), job["total"].as_u64()), (Some(4), Some(4)));
        // The same scenario through the command line: the network as it
        // is, or with its workload replaced by hand.
        let scenario = ws.path().join(format!("{name}.toml"));
        let text = match wl {
            None => network.clone(),
            Some(_) => {
                let mut doc: toml::Table = network.parse().unwrap();
                let w: toml::Table = workload.parse().unwrap();
                doc.insert("workload".into(), w["workload"].clone());
                toml::to_string(&doc).unwrap()
            }
        };
        std::fs::write(&scenario, text).unwrap();
        let out = ws.path().join(format!("sim-{name}"));
        common::ok(common::squall(&[
            "sim",
            scenario.to_str().unwrap(),
            "--seed",
            "11",
            "--replications",
            "4",
            "--out",
            out.to_str().unwrap(),
            "--no-pcap",
        ]));
        let sim = common::summary(&out);
        let (status, shown) = server.get(&format!("/api/results/{name}"));
        assert_eq!(status, 200, "{shown}");
        let results = &shown["results"];
        let col = |c: &str| results["columns"].as_array().unwrap().iter().position(|x| x == c).unwrap();
        for r in 0..4 {
            let dir = shown["run"]["sets"][0]["name"].as_str().unwrap();
            let path = format!("/api/results/{name}/files/{dir}/p0/rep-{r}/result.json");
            let (status, served) = server.get(&path);
            assert_eq!(status, 200, "{path}");
            assert_eq!(served, sim["runs"][r], "replication {r} of `{name}` differs from squall sim's");
            let row = results["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|row| row[col("replication")].as_str() == Some(r.to_string().as_str()))
                .unwrap();
            assert_eq!(row[col("seed")], (11 + r).to_string());
            // The results table the page shows: the flow's packet counts.
            let flow = &sim["runs"][r]["flows"][0];
            assert_eq!(row[col("sent_packets")], flow["sent_packets"].to_string(), "{row:?} vs {flow}");
        }
        assert_eq!(shown["run"]["sets"][0]["seeds"], serde_json::json!([11, 12, 13, 14]));
        assert!(shown["summary"]["rows"].as_array().is_some_and(|r| !r.is_empty()), "summary table");
        let plot = shown["plots"][0]["path"].as_str().expect("a plot");
        let (status, svg) = server.call("GET", &format!("/api/results/{name}/files/{plot}"), &[]);
        assert_eq!(status, 200);
        assert!(svg.contains("<svg"), "{plot}");
    }
    // The experiment file the set wrote runs the same from the command line.
    let text = std::fs::read_to_string(ws.path().join("experiments/crossed.toml")).unwrap();
    assert!(text.contains("../networks/gsm.toml") && text.contains("../workloads/cbr.toml"), "{text}");
    drop(server);
    let again = Server::start(ws.path());
    let (_, runs) = again.get("/api/results");
    let mut names: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["crossed", "own"]);
    assert!(runs.as_array().unwrap().iter().all(|r| r["complete"] == true && r["done"] == 4));
    // Running it again into the same results is refused; resuming is not.
    let (status, _) = again.json("POST", "/api/runs", &serde_json::json!({ "experiment": "own" }), &[]);
    assert_eq!(status, 409);
    let (status, _) = again.json("POST", "/api/runs", &serde_json::json!({ "experiment": "own", "resume": true }), &[]);
    assert_eq!(status, 201);
    assert_eq!(wait_for_job(&again, "own")["state"], "done");
}

/// A simulated set whose network has an outside host is refused before
/// anything is written, as `squall run` refuses it (the simulator has no
/// world beyond the scenario), naming the host.
#[test]
fn a_simulated_set_with_an_outside_host_is_refused_before_queuing() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let (_, t) = server.get("/api/templates/gsm-udp");
    let network = t["network"].as_str().unwrap();
    let fixed = "name = \"fixed\"\n";
    assert!(network.contains(fixed), "{network}");
    let outside = network.replacen(fixed, "name = \"fixed\"\noutside_interface = \"eth9\"\n", 1);
    let (status, _) =
        server.json("PUT", "/api/files/networks/o", &serde_json::json!({ "text": outside }), &["If-None-Match: *"]);
    assert_eq!(status, 201);
    let set = serde_json::json!({ "name": "s", "network": "o", "replications": 1 });
    let (status, answer) = server.json("POST", "/api/sets", &set, &[]);
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.contains("host `fixed`") && error.contains("squall emu"), "{answer}");
    assert!(!ws.path().join("experiments/s.toml").exists());
    assert_eq!(server.get("/api/jobs").1, serde_json::json!([]));
}

/// The id of a running emulation listed by GET /api/emulations whose
/// control socket answers, waited for (60 s at most: a bound, not a
/// timing check).
fn wait_for_emulation(server: &Server) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, runs) = server.get("/api/emulations");
        if let Some(id) = runs.as_array().unwrap().iter().find(|r| r.get("info").is_some()).map(|r| r["id"].as_u64()) {
            return id.unwrap();
        }
        assert!(Instant::now() < deadline, "no emulation answered within 60 s: {runs}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A replication set with engine `emu` (seed 000 §4.1: the same sets for
/// the emulator) is queued like a simulated one and runs its
/// replications one at a time as `squall run` does, each a `squall emu`
/// the Live tab lists and watches; while it runs the emulator is taken
/// (a start from the Live tab is refused, naming the set); a cancel ends
/// the running `squall emu` with SIGTERM, which removes its namespaces,
/// and frees the emulator. Bad engines are refused and nothing written.
/// Needs root and namespaces (skipped without them, except under
/// CI=true, where it fails).
#[test]
fn emulation_sets_run_one_at_a_time_and_a_cancel_leaves_nothing() {
    let _emulator = EMULATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let (status, answer) = server.json(
        "PUT",
        "/api/files/networks/n",
        &serde_json::json!({ "text": common::live_network("200 KB") }),
        &["If-None-Match: *"],
    );
    assert_eq!(status, 201, "{answer}");
    let set = |name: &str, reps: u32, duration: &str| {
        serde_json::json!({ "name": name, "network": "n", "replications": reps, "engine": "emu", "seed": 5,
                            "set": { "duration": duration } })
    };
    let mut bad = set("b", 1, "3 s");
    bad["engine"] = "ns3".into();
    let (status, answer) = server.json("POST", "/api/sets", &bad, &[]);
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains(r#"expected "sim" or "emu""#), "{answer}");
    assert!(!ws.path().join("experiments/b.toml").exists());
    if !common::namespaces_available() {
        return;
    }
    // Two replications of a 3 s emulation, one after the other.
    let (status, answer) = server.json("POST", "/api/sets", &set("e", 2, "3 s"), &[]);
    assert_eq!(status, 201, "{answer}");
    assert!(answer["experiment"].as_str().unwrap().contains("engine = \"emu\""), "{answer}");
    let first = wait_for_emulation(&server);
    let (status, answer) = server.json(
        "POST",
        "/api/emulations",
        &serde_json::json!({ "name": "x", "network": "n", "duration_s": 3 }),
        &[],
    );
    assert_eq!(status, 409, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("set `e`"), "{answer}");
    assert!(!ws.path().join("results/x").exists());
    let job = wait_for_job(&server, "e");
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!((job["done"].as_u64(), job["total"].as_u64()), (Some(2), Some(2)), "{job}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path().join("results/e/experiment.json")).unwrap()).unwrap();
    let runs: Vec<&serde_json::Value> = manifest["sets"][0]["points"][0]["runs"].as_array().unwrap().iter().collect();
    assert_eq!(runs.len(), 2, "{manifest}");
    let seeds: Vec<u64> = runs.iter().map(|r| r[1].as_u64().unwrap()).collect();
    assert_eq!(seeds, [5, 6], "replication i uses seed + i: {manifest}");
    for r in &runs {
        let dir = ws.path().join("results/e").join(r[2].as_str().unwrap());
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
        assert_eq!(result["scenario"], "emu-tcp-10mbit", "{result}");
        // The 200 KB download arrived in each: the mobile host's pcap holds it.
        assert!(std::fs::metadata(dir.join("mobile.pcap")).unwrap().len() > 200_000, "{}", dir.display());
    }
    assert!(namespaces_of(first).is_empty(), "{:?}", namespaces_of(first));

    // A long set (a 100 MB download at 4 Mbit/s outlasts its 60 s)
    // cancelled while its first emulation runs.
    let (status, answer) = server.json(
        "PUT",
        "/api/files/networks/long",
        &serde_json::json!({ "text": common::live_network("100 MB") }),
        &["If-None-Match: *"],
    );
    assert_eq!(status, 201, "{answer}");
    let mut long = set("c", 3, "60 s");
    long["network"] = "long".into();
    let (status, answer) = server.json("POST", "/api/sets", &long, &[]);
    assert_eq!(status, 201, "{answer}");
    let id = wait_for_emulation(&server);
    assert_eq!(namespaces_of(id).len(), 2, "the running emulation's namespaces");
    let job_id = answer["job"]["id"].as_u64().unwrap();
    let (status, answer) = server.json("POST", &format!("/api/jobs/{job_id}/cancel"), &serde_json::json!({}), &[]);
    assert_eq!(status, 200, "{answer}");
    let cancelled = Instant::now();
    let job = wait_for_job(&server, "c");
    assert_eq!(job["state"], "cancelled", "{job}");
    // Ended by the cancel, not by its 60 s.
    assert!(cancelled.elapsed() < Duration::from_secs(30), "{:?}", cancelled.elapsed());
    assert_eq!(job["done"], 0, "{job}");
    assert!(namespaces_of(id).is_empty(), "namespaces left by the cancelled run: {:?}", namespaces_of(id));
    assert!(!std::path::Path::new(&format!("/run/squall/squall-{id}.sock")).exists());
    let (_, runs) = server.get("/api/emulations");
    assert!(runs.as_array().unwrap().iter().all(|r| r["id"] != id), "{runs}");
    // The emulator is free again.
    let (status, answer) = server.json(
        "POST",
        "/api/emulations",
        &serde_json::json!({ "name": "x", "network": "n", "duration_s": 1 }),
        &[],
    );
    assert_eq!(status, 201, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.get("/api/emulations").1.as_array().unwrap().iter().any(|r| r["launch"]["state"] == "running") {
        assert!(Instant::now() < deadline, "the 1 s emulation still runs after 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// POST /api/emulations: a checked scenario of the workspace starts
/// `squall emu` into results/NAME; a bad one is refused with the command
/// line's located error and nothing is started or written; a second
/// start while the first runs is refused; the run, once ended, is a
/// `squall emu` directory listed among the results. Starting one needs
/// root and namespaces (this part is skipped without them, except under
/// CI=true, where it fails).
#[test]
fn emulations_start_one_at_a_time_from_a_checked_scenario() {
    let _emulator = EMULATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let put = |name: &str, text: &str| {
        let (status, answer) = server.json(
            "PUT",
            &format!("/api/files/networks/{name}"),
            &serde_json::json!({ "text": text }),
            &["If-None-Match: *"],
        );
        assert_eq!(status, 201, "{answer}");
    };
    let good = common::live_network("200 KB");
    put("live", &good);
    // Line 7 of the bad file holds the misspelt key.
    let bad = good.replacen("duration = ", "durration = ", 1);
    let line = bad.lines().position(|l| l.starts_with("durration")).unwrap() + 1;
    put("bad", &bad);
    let start = |body: serde_json::Value| server.json("POST", "/api/emulations", &body, &[]);
    let url = format!("{}/api/emulations", server.base);
    let (status, text) = curl(
        "POST",
        &url,
        &["-H", "Content-Type: application/json", "--data-binary", r#"{"name":"x","network":"live"}"#],
    );
    assert_eq!(status, 401, "{text}");
    let (status, answer) = start(serde_json::json!({ "name": "b", "network": "bad", "duration_s": 3 }));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["problems"][0]["file"], "networks/bad.toml", "{answer}");
    assert_eq!(answer["problems"][0]["line"], line, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("durration"), "{answer}");
    let (status, answer) = start(serde_json::json!({ "name": "b", "network": "missing" }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("no networks/missing.toml"), "{answer}");
    let (status, answer) = start(serde_json::json!({ "name": "b", "network": "live", "duration_s": 0.5 }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("duration_s 0.5"), "{answer}");
    let (status, answer) = start(serde_json::json!({ "name": "../b", "network": "live" }));
    assert_eq!(status, 400, "{answer}");
    assert!(!ws.path().join("results/b").exists());
    assert_eq!(
        server.get("/api/emulations").1.as_array().unwrap().iter().filter(|r| r.get("launch").is_some()).count(),
        0
    );
    if !common::namespaces_available() {
        return;
    }
    let (status, first) = start(serde_json::json!({ "name": "first", "network": "live", "duration_s": 3 }));
    assert_eq!(status, 201, "{first}");
    let id = first["id"].as_u64().unwrap();
    let (status, answer) = start(serde_json::json!({ "name": "second", "network": "live", "duration_s": 3 }));
    assert_eq!(status, 409, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.contains("one at a time") && error.contains(&format!("run {id}")), "{answer}");
    assert!(!ws.path().join("results/second").exists());
    // Listed from its start; done (60 s at most: a bound, not a timing check).
    let deadline = Instant::now() + Duration::from_secs(60);
    let launch = loop {
        let (_, runs) = server.get("/api/emulations");
        let run = runs.as_array().unwrap().iter().find(|r| r["id"] == id).cloned().expect("the started run is listed");
        if run["launch"]["state"] != "running" || Instant::now() > deadline {
            break run["launch"].clone();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(launch["state"], "done", "{launch}");
    let out = ws.path().join("results/first");
    let summary = common::summary(&out);
    assert_eq!(summary["scenario"], "emu-tcp-10mbit", "{summary}");
    assert!(std::fs::read_to_string(out.join("rep-0/events.csv")).unwrap().lines().count() > 1);
    // The 200 KB download arrived: the mobile host's pcap holds it.
    assert!(std::fs::metadata(out.join("rep-0/mobile.pcap")).unwrap().len() > 200_000);
    let (_, results) = server.get("/api/results");
    let listed = results.as_array().unwrap().iter().find(|r| r["name"] == "first").cloned().expect("listed");
    assert_eq!(listed["sets"][0]["engine"], "emu", "{listed}");
    assert_eq!((listed["done"].as_u64(), listed["complete"].as_bool()), (Some(1), Some(true)), "{listed}");
    // Now that it ended, the next one may start.
    let (status, answer) = start(serde_json::json!({ "name": "first", "network": "live", "duration_s": 3 }));
    assert_eq!(status, 409, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("results/first/ exists"), "{answer}");
}

/// A network for the live actions: a 4 Mbit/s downlink carrying a
/// background generator `cbr` and a 1 Mbit/s UDP stream of 1 000 B
/// datagrams (125 a second).
const ACTIONS_NETWORK: &str = r#"name = "live-actions"
duration = "6 s"
seed = 1

[[hosts]]
name = "fixed"
address = "10.0.0.1"

[[hosts]]
name = "mobile"
address = "10.0.1.1"

[[links]]
between = ["fixed", "mobile"]

[[links.downlink]]
name = "down"
rate = "4 Mbit/s"
delay = "10 ms"
queue = { packets = 100, drop = "tail" }
background = [{ name = "cbr", rate = "800 kbit/s", size = "1000 B" }]

[[links.uplink]]
name = "up"
rate = "4 Mbit/s"
delay = "10 ms"

[[workload.udp]]
name = "stream"
from = "fixed"
to = "mobile"
size = "1000 B"
rate = "1 Mbit/s"
"#;

/// The page's blackout and background-load actions (POST
/// /api/emulations/{id}/blackout and /background) reach the run as
/// `squall ctl` does: a drop-mode blackout of the downlink drops the
/// stream's datagrams, for reason `blackout`, only between the times its
/// start and end were answered, and delivers none then; a re-rate and a
/// stop are answered with the generators' new configuration and logged;
/// refusals name what was wrong. Needs root and namespaces (skipped
/// without them, except under CI=true, where it fails).
#[test]
fn blackout_and_background_actions_reach_the_run_and_are_logged() {
    let _emulator = EMULATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let (status, answer) = server.json(
        "PUT",
        "/api/files/networks/actions",
        &serde_json::json!({ "text": ACTIONS_NETWORK }),
        &["If-None-Match: *"],
    );
    assert_eq!(status, 201, "{answer}");
    let (status, about) = server.get("/api/server");
    assert_eq!(status, 200, "{about}");
    assert_eq!(about["version"], env!("CARGO_PKG_VERSION"), "{about}");
    // A run that is not running: 404, before any emulation starts.
    let (status, answer) = server.json("POST", "/api/emulations/1/blackout", &serde_json::json!({ "on": true }), &[]);
    assert_eq!(status, 404, "{answer}");
    if !common::namespaces_available() {
        return;
    }
    assert_eq!(about["root"], true, "{about}");
    let (status, started) = server.json(
        "POST",
        "/api/emulations",
        &serde_json::json!({ "name": "a", "network": "actions", "duration_s": 6 }),
        &[],
    );
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_u64().unwrap();
    // Until its control socket answers (a bound, not a timing check).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, runs) = server.get("/api/emulations");
        let run = runs.as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
        if run.get("info").is_some() {
            assert_eq!(run["info"]["background"], serde_json::json!([{ "stage": "down", "generator": "cbr" }]));
            break;
        }
        assert!(Instant::now() < deadline, "run {id} never answered: {run}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let act =
        |what: &str, body: serde_json::Value| server.json("POST", &format!("/api/emulations/{id}/{what}"), &body, &[]);
    std::thread::sleep(Duration::from_millis(1000));
    let (status, on) = act("blackout", serde_json::json!({ "on": true, "mode": "drop", "direction": "downlink" }));
    assert_eq!(status, 200, "{on}");
    assert_eq!((&on["blackout"], &on["stages"]), (&serde_json::json!(true), &serde_json::json!(["down"])), "{on}");
    std::thread::sleep(Duration::from_millis(1000));
    let (status, off) = act("blackout", serde_json::json!({ "on": false }));
    assert_eq!(status, 200, "{off}");
    assert_eq!(off["blackout"], false, "{off}");
    let (status, rerated) = act(
        "background",
        serde_json::json!({ "stage": "down", "generator": "cbr", "action": { "rate": "1600 kbit/s" } }),
    );
    assert_eq!(status, 200, "{rerated}");
    assert_eq!(
        (&rerated["running"][0]["name"], &rerated["running"][0]["rate"]),
        (&"cbr".into(), &"1600 kbit/s".into())
    );
    let (status, stopped) =
        act("background", serde_json::json!({ "stage": "down", "generator": "cbr", "action": "stop" }));
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["stopped"], serde_json::json!(["cbr"]), "{stopped}");
    // Refused, each saying why: stopping it twice, an unknown stage, a
    // mode the blackout does not have.
    let (status, answer) =
        act("background", serde_json::json!({ "stage": "down", "generator": "cbr", "action": "stop" }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("runs no background generator `cbr`"), "{answer}");
    let (status, answer) =
        act("background", serde_json::json!({ "stage": "nowhere", "generator": "cbr", "action": "stop" }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("no stage `nowhere`"), "{answer}");
    let (status, answer) = act("blackout", serde_json::json!({ "on": true, "mode": "sideways" }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("sideways"), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, runs) = server.get("/api/emulations");
        let run = runs.as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
        if run["launch"]["state"] != "running" {
            assert_eq!(run["launch"]["state"], "done", "{run}");
            break;
        }
        assert!(Instant::now() < deadline, "run {id} did not end: {run}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let events = std::fs::read_to_string(ws.path().join("results/a/rep-0/events.csv")).unwrap();
    let (t_on, t_off) = (on["time"].as_f64().unwrap(), off["time"].as_f64().unwrap());
    let rows: Vec<Vec<&str>> = events.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let time = |r: &Vec<&str>| r[0].parse::<f64>().unwrap();
    // The two switches are logged at the times the API answered.
    for (name, t) in [("ctl-blackout-start", t_on), ("ctl-blackout-end", t_off)] {
        let logged: Vec<f64> = rows.iter().filter(|r| r[1] == name && r[3] == "state_change").map(time).collect();
        assert_eq!(logged.len(), 1, "{name}: {logged:?}");
        assert!((logged[0] - t).abs() < 1e-6, "{name} logged at {}, answered {t}", logged[0]);
    }
    assert_eq!(rows.iter().filter(|r| r[1] == "ctl-background").count(), 2, "{events}");
    let blackout_drops: Vec<f64> = rows.iter().filter(|r| r[3] == "drop" && r[7] == "blackout").map(time).collect();
    println!("blackout {t_on:.6} to {t_off:.6} s: {} datagrams dropped", blackout_drops.len());
    // The stream's 125 datagrams a second over the blackout (10% for the
    // real sender's timing).
    let expected = 125.0 * (t_off - t_on);
    let n = blackout_drops.len() as f64;
    assert!((n - expected).abs() <= 0.1 * expected + 2.0, "{n} blackout drops, expected {expected:.1}");
    assert!(blackout_drops.iter().all(|&t| t >= t_on && t <= t_off), "{blackout_drops:?} outside [{t_on}, {t_off}]");
    // Nothing delivered downlink once what was already on the 10 ms
    // propagation has arrived, until the end.
    let delivered = rows.iter().filter(|r| r[1] == "down" && r[3] == "deliver").map(time);
    let inside: Vec<f64> = delivered.filter(|&t| t > t_on + 0.05 && t < t_off).collect();
    assert!(inside.is_empty(), "delivered during the blackout: {inside:?}");
}

/// A server that does not run as root says so (GET /api/server: the page
/// disables the emulation actions and says why) and refuses to start an
/// emulation with 403 naming root, starting and writing nothing. Run as
/// root, the test drops the server to user `nobody` with setpriv(1).
#[test]
fn a_server_without_root_says_so_and_starts_no_emulation() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap();
    // The binary and the workspace where `nobody` can reach them.
    let bin = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let squall = bin.path().join("squall");
    std::fs::copy(SQUALL, &squall).unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let command = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&squall);
        c
    } else {
        Command::new(&squall)
    };
    let server = Server::start_as(command, ws.path());
    let (status, about) = server.get("/api/server");
    assert_eq!(status, 200, "{about}");
    assert_eq!(about["root"], false, "{about}");
    let (status, answer) = server.json(
        "PUT",
        "/api/files/networks/live",
        &serde_json::json!({ "text": common::live_network("200 KB") }),
        &["If-None-Match: *"],
    );
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = server.json(
        "POST",
        "/api/emulations",
        &serde_json::json!({ "name": "x", "network": "live", "duration_s": 3 }),
        &[],
    );
    assert_eq!(status, 403, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("emulations need root"), "{answer}");
    assert!(!ws.path().join("results/x").exists());
    let (_, runs) = server.get("/api/emulations");
    assert!(runs.as_array().unwrap().iter().all(|r| r.get("launch").is_none()), "{runs}");
    // Nor an emulation set, made here or written by hand.
    let set = serde_json::json!({ "name": "e", "network": "live", "replications": 1, "engine": "emu" });
    let (status, answer) = server.json("POST", "/api/sets", &set, &[]);
    assert_eq!(status, 403, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("set `e` has engine emu"), "{answer}");
    assert!(!ws.path().join("experiments/e.toml").exists());
    let hand = "name = \"hand\"\n[networks]\nn = \"../networks/live.toml\"\n\n[[sets]]\nname = \"h\"\n\
                networks = [\"n\"]\nengine = \"emu\"\nreplications = 1\n";
    std::fs::write(ws.path().join("experiments/hand.toml"), hand).unwrap();
    let (status, answer) = server.json("POST", "/api/runs", &serde_json::json!({ "experiment": "hand" }), &[]);
    assert_eq!(status, 403, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("set `h` has engine emu"), "{answer}");
    assert_eq!(server.get("/api/jobs").1, serde_json::json!([]));
}

/// `squall bench serve` (the 20-client benchmark, issue 32) really has
/// its clients on the live stream: each reads a line every 200 ms of the
/// run (a 4 s run, so at least 10 each after the control socket
/// answers), the server's memory is sampled, and both runs of the pair
/// report their departure error. Needs root and namespaces.
#[test]
fn bench_serve_puts_every_client_on_the_live_stream() {
    let _emulator = EMULATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let out = Command::new(SQUALL)
        .args(["bench", "serve", "--pairs", "1", "--seconds", "4", "--clients", "5", "--rate", "20 Mbit/s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["served"].as_bool().unwrap()).collect::<Vec<_>>(), [false, true]);
    for r in runs {
        assert!(r["deliveries"].as_u64().unwrap() > 1000, "{r}");
        assert!(r["error_p99_us"].as_f64().unwrap() > 0.0, "{r}");
    }
    let served = &runs[1];
    assert!(served["lines_min"].as_u64().unwrap() >= 10, "{served}");
    assert!(served["server_rss_max_kb"].as_u64().unwrap() > 1000, "{served}");
    assert!(runs[0]["lines_min"].is_null() && runs[0]["server_rss_max_kb"].is_null());
}

/// The library's form for a network's common keys (POST /api/form): the
/// fields become the stage keys a person would write (checked by reading
/// the answered text as TOML), the file's comments and layout stay, a
/// state is appended as a `[[states]]` entry, a value the scenario
/// refuses comes back as the command line's located problem, and bad
/// requests are refused naming what was wrong. Nothing is written.
#[test]
fn the_common_keys_form_edits_the_text_as_a_person_would() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let text = common::live_network("200 KB");
    let form = |body: serde_json::Value| server.json("POST", "/api/form", &body, &[]);
    let (status, answer) = form(serde_json::json!({ "text": text }));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["stages"], serde_json::json!(["down", "up"]));
    assert_eq!(answer["problems"], serde_json::json!([]));
    let keys = serde_json::json!({ "rate": "2 Mbit/s", "jitter": "5 ms", "loss": "1%", "queue_packets": 50,
                                   "aqm": "codel" });
    let (status, answer) = form(serde_json::json!({ "text": text, "name": "live", "stage": "down", "keys": keys }));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["problems"], serde_json::json!([]), "{answer}");
    let edited = answer["text"].as_str().unwrap();
    assert!(edited.starts_with(text.lines().next().unwrap()) && edited.contains("# ") == text.contains("# "));
    let doc: toml::Value = toml::from_str(edited).unwrap();
    let down = &doc["links"][0]["downlink"][0];
    let expected: toml::Value = toml::from_str(
        r#"name = "down"
rate = "2 Mbit/s"
delay = "25 ms"
queue = { packets = 50, codel = {} }
jitter = { kind = "uniform", low = "0 ms", high = "5 ms" }
error = { packet = "1%" }
"#,
    )
    .unwrap();
    assert_eq!(down, &expected, "{edited}");
    // The other stage is untouched.
    assert_eq!(doc["links"][0]["uplink"][0]["rate"].as_str(), Some("10 Mbit/s"));
    // A new state: appended after `slow`.
    let (status, answer) = form(serde_json::json!({ "text": text, "stage": "down",
        "keys": { "rate": "500 kbit/s" }, "state": { "name": "worse", "at": "3 s" } }));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["problems"], serde_json::json!([]), "{answer}");
    let doc: toml::Value = toml::from_str(answer["text"].as_str().unwrap()).unwrap();
    let states = doc["states"].as_array().unwrap();
    assert_eq!(states.len(), 2);
    let worse: toml::Value =
        toml::from_str("name = \"worse\"\nat = \"3 s\"\nset = { down = { rate = \"500 kbit/s\" } }\n").unwrap();
    assert_eq!(states[1], worse);
    // A rate the scenario refuses: the located problem, on the rate's line.
    let (status, answer) = form(serde_json::json!({ "text": text, "stage": "down", "keys": { "rate": "fast" } }));
    assert_eq!(status, 200, "{answer}");
    let edited = answer["text"].as_str().unwrap();
    let line = edited.lines().position(|l| l == "rate = \"fast\"").unwrap() + 1;
    assert_eq!(answer["problems"][0]["line"], line, "{answer}");
    assert!(answer["problems"][0]["message"].as_str().unwrap().contains("fast"), "{answer}");
    // Refused: no such stage (its stages named), no field, an AQM it lacks,
    // a state without its time.
    for (body, expected) in [
        (
            serde_json::json!({ "text": text, "stage": "nowhere", "keys": { "rate": "1 Mbit/s" } }),
            "its stages: down, up",
        ),
        (serde_json::json!({ "text": text, "stage": "down" }), "no key given"),
        (serde_json::json!({ "text": text, "stage": "down", "keys": { "aqm": "red" } }), "expected none, codel or pie"),
        (
            serde_json::json!({ "text": text, "stage": "down", "keys": { "rate": "1 Mbit/s" },
                                "state": { "name": "x", "at": "" } }),
            "needs a name and a time",
        ),
    ] {
        let (status, answer) = form(body);
        assert_eq!(status, 400, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains(expected), "{expected}: {answer}");
    }
    assert!(std::fs::read_dir(ws.path().join("networks")).unwrap().next().is_none(), "nothing written");
}

/// A finished simulation replayed in the live view's form
/// (`GET /api/results/{name}/replay`): a line every 200 ms of the run's
/// time to its 30 s end, paced by the speed (a lower bound on the wall
/// time, not a timing check), the downlink's bytes at the end equal to
/// events.csv's deliveries of its stage (counted here from the file), no
/// interval above the rate in force plus a packet, and the scheduled
/// state at 2 s in the line of 2 s with the stage's new rate. Bad
/// requests are refused with what was wrong.
#[test]
fn a_simulated_run_replays_as_live_lines_at_the_chosen_speed() {
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(ws.path());
    let network = common::live_network("2 MB").replacen("name = \"slow\"\n", "name = \"slow\"\nat = \"2 s\"\n", 1);
    assert!(network.contains("at = \"2 s\""));
    std::fs::write(ws.path().join("networks/replay.toml"), network).unwrap();
    let sim = Command::new(SQUALL)
        .current_dir(ws.path())
        .args(["sim", "networks/replay.toml", "--out", "results/r", "--seed", "3", "--replications", "1"])
        .output()
        .unwrap();
    assert!(sim.status.success(), "{}", String::from_utf8_lossy(&sim.stderr));
    for (query, status, said) in [
        ("run=rep-0&speed=0", 400, "speed 0"),
        ("run=rep-0&speed=5000", 400, "at most 1000"),
        ("run=../r/rep-0", 400, "refused"),
        ("run=rep-9", 404, "rep-9/events.csv"),
        ("speed=2", 400, "run"),
    ] {
        let (got, body) = server.call("GET", &format!("/api/results/r/replay?{query}"), &[]);
        assert_eq!(got, status, "{query}: {body}");
        assert!(body.contains(said), "{query}: {body}");
    }
    let started = Instant::now();
    let (status, body) = server.call("GET", "/api/results/r/replay?run=rep-0&speed=100", &["-N"]);
    let wall = started.elapsed();
    assert_eq!(status, 200, "{body}");
    let lines: Vec<serde_json::Value> =
        body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|l| serde_json::from_str(l).unwrap()).collect();
    let (end, samples) = lines.split_last().unwrap();
    assert_eq!(end["end"], "the replay ended", "{end}");
    assert_eq!(samples.len(), 150, "30 s in lines of 0.2 s");
    for (k, line) in samples.iter().enumerate() {
        assert!((line["time"].as_f64().unwrap() - 0.2 * (k + 1) as f64).abs() < 1e-9, "{line}");
    }
    assert!(wall >= Duration::from_secs_f64(30.0 / 100.0), "{wall:?}");
    // The downlink's bytes, counted here from events.csv.
    let csv = std::fs::read_to_string(ws.path().join("results/r/rep-0/events.csv")).unwrap();
    let rows = common::csv_rows(&csv);
    let delivered: u64 = rows
        .iter()
        .filter(|r| r["stage"] == "down" && r["event"] == "deliver")
        .map(|r| r["size"].parse::<u64>().unwrap())
        .sum();
    assert!(delivered > 2_000_000, "{delivered} B delivered");
    let down = |line: &serde_json::Value| -> serde_json::Value {
        line["paths"].as_array().unwrap().iter().find(|p| p["direction"] == "downlink").unwrap().clone()
    };
    assert_eq!(down(samples.last().unwrap())["delivered_bytes"], delivered);
    // A packet delivered in (t0, t1] left the link at most its 25 ms
    // delay earlier, so at a rate in force in (t0 − 0.2 s, t1].
    for w in samples.windows(3) {
        let (a, b) = (down(&w[1]), down(&w[2]));
        let bytes = (b["delivered_bytes"].as_u64().unwrap() - a["delivered_bytes"].as_u64().unwrap()) as f64;
        let rate = w.iter().map(|l| down(l)["stages"][0]["rate_bps"].as_f64().unwrap()).fold(0.0, f64::max);
        assert!(bytes * 8.0 <= rate * 0.2 + 2.0 * 1500.0 * 8.0, "{bytes} B in 0.2 s at {rate} bit/s");
        let bps = b["throughput_bps"].as_f64().unwrap();
        assert!((bps - bytes * 8.0 / 0.2).abs() < 1e-6 * bps.max(1.0), "{b}");
    }
    let at_two = &samples[9];
    assert_eq!(at_two["events"][0]["state"], "slow", "{at_two}");
    assert_eq!(at_two["events"][0]["time"], 2.0, "{at_two}");
    assert_eq!(at_two["state"], "slow");
    assert_eq!(down(at_two)["stages"][0]["rate_bps"], 1_000_000);
    assert_eq!(down(&samples[8])["stages"][0]["rate_bps"], 4_000_000);
    assert!(samples[..9].iter().all(|l| l["events"].as_array().unwrap().is_empty()));
}
