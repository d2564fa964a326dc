//! Interact `python` and `bash` code in its bubblewrap sandbox, with real Chromium: the
//! session's own page works from inside (its target list and its DevTools WebSocket, behind
//! the guard), and nothing else of the machine does: the data directory, the server's
//! environment, other loopback addresses, the server's own port, files over the limit, and
//! processes that detach to outlive the run. Teams use only the languages their entry
//! allows, and a server that cannot build the sandbox refuses to start.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{FixtureSite, TestServer, assert_error, test_settings, wait_for};
use crate::interact::{run, scrape_id};

/// A server whose `default` team may run node, python and bash; team `other` (key
/// `other-key`) has no entry.
async fn server() -> TestServer {
    let languages = vec!["node".to_owned(), "python".to_owned(), "bash".to_owned()];
    TestServer::builder()
        .key("other", "other-key")
        .settings(move |s| {
            s.browser.code_languages = languages.clone();
            s.teams.entry("default".to_owned()).or_default().code_languages = Some(languages);
        })
        .start()
        .await
}

/// Python that speaks DevTools over `CDP_URL` with the standard library alone: prints the
/// page's address as the page reports it, then the answer to a command the guard refuses.
const DEVTOOLS_CLIENT: &str = r#"
import base64, json, os, socket, struct, urllib.request
url = os.environ["CDP_URL"]
host, path = url[len("ws://"):].split("/", 1)
listed = json.load(urllib.request.urlopen("http://" + host + "/json/list"))
print(len(listed), listed[0]["url"] == os.environ["PAGE_URL"], url == listed[0]["webSocketDebuggerUrl"])
name, port = host.split(":")
s = socket.create_connection((name, int(port)))
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /" + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf:
    buf += s.recv(4096)
head, buf = buf.split(b"\r\n\r\n", 1)
assert head.startswith(b"HTTP/1.1 101"), head
def send(message):
    data, mask = json.dumps(message).encode(), os.urandom(4)
    size = bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data))
    s.sendall(bytes([0x81]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
def receive():
    global buf
    while True:
        if len(buf) >= 2:
            n, at = buf[1] & 0x7f, 2
            if n == 126:
                n, at = struct.unpack(">H", buf[2:4])[0], 4
            elif n == 127:
                n, at = struct.unpack(">Q", buf[2:10])[0], 10
            if len(buf) >= at + n:
                message, buf = buf[at:at + n], buf[at + n:]
                return json.loads(message)
        buf += s.recv(65536)
def call(i, method, params):
    send({"id": i, "method": method, "params": params})
    while True:
        answer = receive()
        if answer.get("id") == i:
            return answer
print(call(1, "Runtime.evaluate", {"expression": "location.href", "returnByValue": True})["result"]["result"]["value"])
print(json.dumps(call(2, "Page.navigate", {"url": "file:///etc/passwd"}).get("error", {}).get("message")))
"#;

#[tokio::test]
async fn sandboxed_code_drives_the_sessions_page_through_the_guard() {
    let site = FixtureSite::start();
    let app = server().await;
    let page = site.url("/js/interactive");
    let id = scrape_id(&app, page.clone(), json!({"waitFor": 10})).await;

    let (status, py) = run(&app, &id, json!({"code": DEVTOOLS_CLIENT, "language": "python"})).await;
    assert_eq!(status, 200, "{py}");
    let lines: Vec<&str> = py["stdout"].as_str().unwrap_or_default().lines().collect();
    assert_eq!(lines.first(), Some(&"1 True True"), "the target list holds the session's page alone: {py}");
    assert_eq!(lines.get(1), Some(&page.as_str()), "{py}");
    let refused: Value = serde_json::from_str(lines.get(2).unwrap_or(&"null")).expect("json");
    assert!(refused.as_str().is_some_and(|m| !m.is_empty()), "a file: navigation is refused: {py}");
    assert_eq!((py["exitCode"].as_i64(), py["success"].as_bool()), (Some(0), Some(true)), "{py}");

    let (_, failed) = run(
        &app,
        &id,
        json!({"code": "import sys; print('oops', file=sys.stderr); sys.exit(3)", "language": "python"}),
    )
    .await;
    assert_eq!(
        (failed["exitCode"].as_i64(), failed["success"].as_bool(), failed["stderr"].as_str()),
        (Some(3), Some(false), Some("oops\n")),
        "{failed}"
    );
    let (status, slow) =
        run(&app, &id, json!({"code": "echo \"on $PAGE_URL\"; sleep 30", "language": "bash", "timeout": 1}))
            .await;
    assert_eq!(status, 200, "{slow}");
    assert_eq!(slow["killed"], true, "{slow}");
    assert!(slow["stdout"].as_str().unwrap_or_default().contains("/js/interactive"), "{slow}");
}

#[tokio::test]
async fn sandboxed_code_reaches_nothing_of_the_machine() {
    let site = FixtureSite::start();
    let app = server().await;
    let id = scrape_id(&app, site.url("/js/interactive"), json!({})).await;
    // A listener on another loopback address, which the test itself reaches.
    let other = std::net::TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let other_port = other.local_addr().expect("addr").port();
    std::net::TcpStream::connect(("127.0.0.2", other_port)).expect("reachable from outside");
    let api_port = url::Url::parse(&app.base).expect("base").port().expect("port");
    let data = app.data_dir().display().to_string();
    let code = format!(
        r#"
import json, os, socket
def reach(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return "reached"
    except OSError as e:
        return type(e).__name__
def listing(path):
    try:
        return os.listdir(path)
    except OSError as e:
        return type(e).__name__
print(json.dumps({{
    "data": listing({data:?}),
    "env": sorted(os.environ),
    "other": reach("127.0.0.2", {other_port}),
    "api": reach("127.0.0.1", {api_port}),
    "etc": listing("/etc"),
    "root": sorted(listing("/")),
}}))
"#
    );
    let (status, py) = run(&app, &id, json!({"code": code, "language": "python"})).await;
    assert_eq!(status, 200, "{py}");
    let seen: Value = serde_json::from_str(py["stdout"].as_str().unwrap_or_default()).expect("json");
    assert_eq!(seen["data"], "FileNotFoundError", "{seen}");
    let env: Vec<&str> = seen["env"].as_array().expect("env").iter().filter_map(Value::as_str).collect();
    assert_eq!(
        env,
        ["CDP_URL", "HOME", "LANG", "PAGE_URL", "PATH", "PWD", "TMPDIR"],
        "a cleared environment"
    );
    assert_ne!(seen["other"], "reached", "{seen}");
    assert_ne!(seen["api"], "reached", "{seen}");
    let mut etc = seen["etc"].as_array().cloned().unwrap_or_default();
    etc.sort_by_key(|v| v.to_string());
    assert_eq!(etc, [json!("alternatives"), json!("ld.so.cache")], "{seen}");
    assert_eq!(
        seen["root"],
        json!(["bin", "dev", "etc", "lib", "lib64", "proc", "run", "sbin", "tmp", "usr"])
    );

    // Memory and processes are bounded.
    let greedy = r#"
import os, time
try:
    hoard = bytearray(3 << 30)
    print("allocated")
except MemoryError:
    print("MemoryError")
started = 0
for _ in range(100):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        started += 1
    except OSError:
        break
print(started)
"#;
    let (_, greedy) = run(&app, &id, json!({"code": greedy, "language": "python"})).await;
    let out: Vec<&str> = greedy["stdout"].as_str().unwrap_or_default().lines().collect();
    assert_eq!(out.first(), Some(&"MemoryError"), "{greedy}");
    let started: u32 = out.get(1).and_then(|n| n.parse().ok()).expect("count");
    assert!((1..64).contains(&started), "{greedy}");

    // A file over the limit is cut off.
    let big = "head -c 100000000 /dev/zero > /tmp/big; echo \"wrote $?\"; ls -l /tmp/big | awk '{print $5}'";
    let (_, wrote) = run(&app, &id, json!({"code": big, "language": "bash"})).await;
    let out = wrote["stdout"].as_str().unwrap_or_default();
    assert!(!out.starts_with("wrote 0"), "{wrote}");
    let size: u64 = out.lines().nth(1).and_then(|l| l.trim().parse().ok()).expect("size");
    assert!(size <= 64 << 20, "{wrote}");
}

/// Processes whose command line holds `marker`.
fn processes_named(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
        .count()
}

#[tokio::test]
async fn processes_that_detach_end_with_the_run_or_the_session() {
    let site = FixtureSite::start();
    let app = server().await;
    let id = scrape_id(&app, site.url("/js/interactive"), json!({})).await;
    for (timeout, tail) in [(30, "echo started"), (1, "echo started; sleep 30")] {
        let marker = format!("ferrocrawl-escape-{}-{timeout}", std::process::id());
        let code = format!(
            "setsid bash -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; {tail}"
        );
        let (status, ran) =
            run(&app, &id, json!({"code": code, "language": "bash", "timeout": timeout})).await;
        assert_eq!(status, 200, "{ran}");
        assert_eq!(ran["stdout"], "started\n", "{ran}");
        wait_for("the detached process to end", Duration::from_secs(10), || async {
            (processes_named(&marker) == 0).then_some(())
        })
        .await;
    }

    // A session ended during a run takes the run's processes with it.
    let marker = format!("ferrocrawl-escape-{}-deleted", std::process::id());
    let code = format!("setsid bash -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 & sleep 60");
    let running = {
        let (app_base, key) = (app.base.clone(), crate::common::KEY);
        let body = json!({"code": code, "language": "bash", "timeout": 120});
        let url = format!("{app_base}/v2/scrape/{id}/interact");
        tokio::spawn(
            async move { reqwest::Client::new().post(url).bearer_auth(key).json(&body).send().await },
        )
    };
    wait_for("the run to start", Duration::from_secs(20), || async {
        (processes_named(&marker) > 0).then_some(())
    })
    .await;
    let (status, ended) =
        app.request(reqwest::Method::DELETE, &format!("/v2/scrape/{id}/interact"), None).await;
    assert_eq!(status, 200, "{ended}");
    wait_for("the session's processes to end", Duration::from_secs(10), || async {
        (processes_named(&marker) == 0).then_some(())
    })
    .await;
    running.abort();
}

#[tokio::test]
async fn a_team_runs_only_the_languages_its_entry_allows() {
    let site = FixtureSite::start();
    let app = server().await;
    let (status, scraped) = app
        .request_as(
            "other-key",
            reqwest::Method::POST,
            "/v2/scrape",
            Some(&json!({"url": site.url("/js/interactive")})),
        )
        .await;
    assert_eq!(status, 200, "{scraped}");
    let id = scraped["data"]["metadata"]["scrapeId"].as_str().expect("id").to_owned();
    let path = format!("/v2/scrape/{id}/interact");
    let python = json!({"code": "print(1)", "language": "python"});
    let refused = app.request_as("other-key", reqwest::Method::POST, &path, Some(&python)).await;
    let message = assert_error(&refused, 400, "FEATURE_NOT_AVAILABLE");
    assert!(message.contains("teams.other.code_languages"), "{message}");
    let node = json!({"code": "1 + 1"});
    let (status, ran) = app.request_as("other-key", reqwest::Method::POST, &path, Some(&node)).await;
    assert_eq!((status, ran["result"].as_str()), (200, Some("2")), "{ran}");
}

#[tokio::test]
async fn a_server_that_cannot_build_the_sandbox_refuses_to_start() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(data.path());
    settings.browser.code_languages = vec!["node".to_owned(), "bash".to_owned()];
    settings.browser.sandbox_exe = Some(data.path().join("no-such-program"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let started = ferrocrawl::serve(listener, settings, std::future::pending()).await;
    let error = started.expect_err("refused").to_string();
    assert!(error.contains("browser.code_languages") && error.contains("bash"), "{error}");
}
