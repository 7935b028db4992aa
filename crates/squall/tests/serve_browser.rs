//! The control tool in a real browser (issue 32): headless Chromium driven
//! through chromedriver (WebDriver, W3C) walks a new user's path — open
//! the printed URL, make a network from a template, make a mistake and
//! see it located, fix it, make a workload, run a 4-replication set, read
//! the summary table, open a plot — with a screenshot of each step in
//! target/serve-browser/ and no message on the browser's console.
//! Without chromium and chromedriver it skips, unless CI is set: then it
//! fails.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver's legacy log endpoint (`/session/ID/se/log`): the browser
/// console's messages since the last call.
#[derive(Debug)]
struct BrowserLog;
impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

fn tool(name: &str) -> bool {
    Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn shots() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/serve-browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots().join(format!("{name}.png")), png).unwrap();
}

async fn text_of(c: &Client, id: &str) -> String {
    c.find(Locator::Id(id)).await.unwrap().text().await.unwrap()
}

/// Waits (polling, 60 s at most: a bound against hanging, not a timing
/// check) until the element matched by `css` exists.
async fn wait_css(c: &Client, css: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(Duration::from_secs(120))
        .every(Duration::from_millis(100))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
}

#[tokio::test(flavor = "current_thread")]
async fn a_new_users_path_through_the_control_tool() {
    if !tool("chromium") || !tool("chromedriver") {
        assert!(
            std::env::var("CI").is_err(),
            "chromium and chromedriver are needed (apt-get install chromium chromium-driver)"
        );
        eprintln!("skipped: chromium or chromedriver missing");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let mut server = Command::new(common::SQUALL)
        .args(["serve", "--port", "0", "--jobs", "2", "--workspace"])
        .arg(ws.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("the URL").unwrap();
        if line.trim().starts_with("http://") {
            break line.trim().to_string();
        }
    };
    let _server = Killed(server);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let driver =
        Killed(Command::new("chromedriver").arg(format!("--port={port}")).stdout(Stdio::null()).spawn().unwrap());
    let caps = serde_json::json!({
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                     "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking"]
        },
        "goog:loggingPrefs": { "browser": "ALL" }
    });
    let caps: fantoccini::wd::Capabilities = caps.as_object().unwrap().clone();
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let mut client = None;
    for _ in 0..100 {
        match ClientBuilder::new(connector.clone())
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let c = client.expect("chromedriver starts a session");

    // 1. The printed URL opens the library.
    c.goto(&url).await.unwrap();
    wait_css(&c, "#new-template option[value='gsm-reno']").await;
    assert_eq!(c.current_url().await.unwrap().path(), "/", "the token is taken out of the address bar");
    // Only the library's tab is shown.
    assert!(!c.find(Locator::Id("set-form")).await.unwrap().is_displayed().await.unwrap(), "the sets tab is hidden");
    shot(&c, "01-library").await;

    // 2. A network from a template.
    c.find(Locator::Id("new-kind")).await.unwrap().select_by_value("networks").await.unwrap();
    c.find(Locator::Id("new-template")).await.unwrap().select_by_value("gsm-reno").await.unwrap();
    c.find(Locator::Id("new-name")).await.unwrap().send_keys("gsm").await.unwrap();
    c.find(Locator::Id("new-create")).await.unwrap().click().await.unwrap();
    wait_css(&c, "#problems li.ok").await;
    assert_eq!(text_of(&c, "editor-title").await, "networks/gsm.toml");
    assert!(std::fs::read_to_string(ws.path().join("networks/gsm.toml")).unwrap().contains("9600 bit/s"));
    shot(&c, "02-network-from-template").await;

    // 3. A mistake typed at the end: the problem names its line.
    let editor = c.find(Locator::Id("editor")).await.unwrap();
    let lines_before = editor.prop("value").await.unwrap().unwrap().lines().count();
    let typed = "\nqueue_size = 7";
    c.execute(
        "const t = document.getElementById('editor'); t.focus(); t.setSelectionRange(t.value.length, t.value.length);",
        vec![],
    )
    .await
    .unwrap();
    editor.send_keys(typed).await.unwrap();
    let problem = wait_css(&c, "#problems li[data-line]:not([data-line=''])").await;
    let line: usize = problem.attr("data-line").await.unwrap().unwrap().parse().unwrap();
    let text = editor.prop("value").await.unwrap().unwrap();
    assert_eq!(text.lines().nth(line - 1), Some("queue_size = 7"), "the problem is on the typed line");
    assert!(line > lines_before);
    assert!(problem.text().await.unwrap().contains("unknown field `queue_size`"), "{}", problem.text().await.unwrap());
    wait_css(&c, "#gutter span.bad").await;
    shot(&c, "03-located-error").await;

    // 4. Fixed: the typed characters removed again, saved.
    let backspaces: String = std::iter::repeat_n('\u{E003}', typed.chars().count()).collect();
    editor.send_keys(&backspaces).await.unwrap();
    wait_css(&c, "#problems li.ok").await;
    c.find(Locator::Id("save")).await.unwrap().click().await.unwrap();
    let saved = wait_css(&c, "#editor-state").await;
    for _ in 0..100 {
        if saved.text().await.unwrap() == "saved" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!std::fs::read_to_string(ws.path().join("networks/gsm.toml")).unwrap().contains("queue_size"));
    shot(&c, "04-fixed-and-saved").await;

    // 5. A workload: the voice flows of another template.
    c.find(Locator::Id("new-kind")).await.unwrap().select_by_value("workloads").await.unwrap();
    c.find(Locator::Id("new-template")).await.unwrap().select_by_value("gsm-udp").await.unwrap();
    let name = c.find(Locator::Id("new-name")).await.unwrap();
    name.clear().await.unwrap();
    name.send_keys("gsm-udp-flows").await.unwrap();
    c.find(Locator::Id("new-create")).await.unwrap().click().await.unwrap();
    wait_css(&c, "#list-workloads li[data-name='gsm-udp-flows']").await;
    wait_css(&c, "#problems li.ok").await;
    shot(&c, "05-workload").await;

    // 6. The set: network × workload × 4 replications, seed 3.
    c.find(Locator::Id("tab-sets")).await.unwrap().click().await.unwrap();
    wait_css(&c, "#set-network option[value='gsm']").await;
    wait_css(&c, "#set-workload option[value='gsm-udp-flows']").await;
    c.find(Locator::Id("set-name")).await.unwrap().send_keys("gsm-voice").await.unwrap();
    c.find(Locator::Id("set-network")).await.unwrap().select_by_value("gsm").await.unwrap();
    c.find(Locator::Id("set-workload")).await.unwrap().select_by_value("gsm-udp-flows").await.unwrap();
    let reps = c.find(Locator::Id("set-reps")).await.unwrap();
    reps.clear().await.unwrap();
    reps.send_keys("4").await.unwrap();
    c.find(Locator::Id("set-seed")).await.unwrap().send_keys("3").await.unwrap();
    c.find(Locator::Id("set-run")).await.unwrap().click().await.unwrap();
    wait_css(&c, "#jobs tr[data-name='gsm-voice'][data-state='done']").await;
    shot(&c, "06-set-done").await;

    // 7. The results: the summary table and a plot.
    c.find(Locator::Id("tab-results")).await.unwrap().click().await.unwrap();
    wait_css(&c, "#results-list li[data-name='gsm-voice']").await.click().await.unwrap();
    wait_css(&c, "#summary-table tbody tr").await;
    let summary = std::fs::read_to_string(ws.path().join("results/gsm-voice/summary.csv")).unwrap();
    let rows = c.find_all(Locator::Css("#summary-table tbody tr")).await.unwrap().len();
    assert_eq!(rows, summary.lines().count() - 1, "one table row per summary.csv row");
    assert!(text_of(&c, "result-meta").await.contains("seeds 3, 4, 5, 6"), "{}", text_of(&c, "result-meta").await);
    let img = wait_css(&c, "#plots img").await;
    let loaded = c
        .execute("return arguments[0].complete && arguments[0].naturalWidth", vec![serde_json::to_value(&img).unwrap()])
        .await
        .unwrap();
    assert!(loaded.as_u64().is_some_and(|w| w > 0), "the plot image loaded: {loaded}");
    shot(&c, "07-results").await;
    let plot = img.attr("src").await.unwrap().unwrap();
    c.goto(&format!("{}{plot}", url.split("/?token").next().unwrap())).await.unwrap();
    wait_css(&c, "svg").await;
    shot(&c, "08-plot").await;

    let log = c.issue_cmd(BrowserLog).await.unwrap();
    let messages: Vec<&serde_json::Value> = log.as_array().map(|a| a.iter().collect()).unwrap_or_default();
    assert!(messages.is_empty(), "the browser's console: {messages:?}");
    c.close().await.unwrap();
    drop(driver);
}
