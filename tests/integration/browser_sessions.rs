//! Browser sessions made without a scrape, with real Chromium: `POST /v2/browser` with its
//! lifetimes and checks, code run with `execute` keeping the page's state between calls,
//! the team's list by status, ending and the 410 that follows, also after a restart, and
//! the `/v2/interact` aliases.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{FixtureSite, TestServer, assert_error, wait_for};

async fn create(app: &TestServer, body: Value) -> Value {
    let (status, got) = app.request(Method::POST, "/v2/browser", Some(&body)).await;
    assert_eq!(status, 200, "{got}");
    got
}

async fn execute(app: &TestServer, id: &str, code: &str) -> (u16, Value) {
    app.request(Method::POST, &format!("/v2/browser/{id}/execute"), Some(&json!({"code": code}))).await
}

async fn listed(app: &TestServer, query: &str) -> Vec<(String, String)> {
    let (status, got) = app.request(Method::GET, &format!("/v2/browser{query}"), None).await;
    assert_eq!(status, 200, "{got}");
    got["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| (s["id"].as_str().expect("id").to_owned(), s["status"].as_str().expect("status").to_owned()))
        .collect()
}

#[tokio::test]
async fn a_session_without_a_scrape_runs_code_is_listed_and_ends() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-key").start().await;
    let made = create(&app, json!({"ttl": 120, "activityTtl": 60, "streamWebView": false})).await;
    let id = made["id"].as_str().expect("id").to_owned();
    assert!(made["liveViewUrl"].as_str().is_some_and(|u| u.contains("/v2/live/")), "{made}");
    assert!(made["expiresAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{made}");

    // The page's state lasts from one call to the next, navigation included.
    let target = site.url("/article");
    let (status, went) = execute(&app, &id, &format!("location.href = {target:?}; 'going'")).await;
    assert_eq!((status, went["result"].as_str()), (200, Some("going")), "{went}");
    wait_for("the session's page to load the article", Duration::from_secs(15), || async {
        let (_, got) =
            execute(&app, &id, "document.querySelector('h1') && document.querySelector('h1').textContent")
                .await;
        got["result"].as_str().filter(|t| !t.is_empty()).map(str::to_owned)
    })
    .await;
    let (_, marked) = execute(&app, &id, "window.kept = 41; location.pathname").await;
    assert_eq!(marked["result"], "/article", "{marked}");
    let (_, again) = execute(&app, &id, "console.log('seen'); window.kept + 1").await;
    assert_eq!((again["result"].as_str(), again["stdout"].as_str()), (Some("42"), Some("seen\n")), "{again}");
    assert_eq!((again["success"].as_bool(), again["exitCode"].as_i64()), (Some(true), Some(0)));

    // Listed for its team only, with what was asked.
    let (status, all) = app.request(Method::GET, "/v2/browser?status=active", None).await;
    assert_eq!(status, 200, "{all}");
    let entry =
        all["sessions"].as_array().expect("sessions").iter().find(|s| s["id"] == id.as_str()).cloned();
    let entry = entry.unwrap_or_else(|| panic!("{id} listed: {all}"));
    assert_eq!((entry["status"].as_str(), entry["streamWebView"].as_bool()), (Some("active"), Some(false)));
    let (_, theirs) = app.request_as("other-key", Method::GET, "/v2/interact", None).await;
    assert_eq!(theirs["sessions"], json!([]), "{theirs}");
    let path = format!("/v2/interact/{id}/execute");
    let (status, _) = app.request_as("other-key", Method::POST, &path, Some(&json!({"code": "1"}))).await;
    assert_eq!(status, 404, "another team's session is not found");

    // Ended: billed, then 410, and listed as destroyed.
    let (status, ended) = app.request(Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!((status, ended["creditsBilled"].as_u64()), (200, Some(2)), "{ended}");
    assert_error(&execute(&app, &id, "1").await, 410, "SESSION_DESTROYED");
    assert_eq!(listed(&app, "?status=destroyed").await, vec![(id.clone(), "destroyed".to_owned())]);
    assert!(listed(&app, "?status=active").await.is_empty());

    // A restart forgets the tab, not the session: a live one ends with the server.
    let live = create(&app, json!({})).await["id"].as_str().expect("id").to_owned();
    let app = TestServer::builder_on(app.stop()).start().await;
    assert_error(&execute(&app, &id, "1").await, 410, "SESSION_DESTROYED");
    assert_error(&execute(&app, &live, "1").await, 410, "SESSION_DESTROYED");
    let mut after = listed(&app, "").await;
    after.sort();
    let mut expected = vec![(id, "destroyed".to_owned()), (live, "destroyed".to_owned())];
    expected.sort();
    assert_eq!(after, expected);
}

#[tokio::test]
async fn session_requests_are_checked_and_lifetimes_kept() {
    let app = TestServer::builder().settings(|s| s.browser.max_sessions = 1).start().await;
    for (body, field) in [
        (json!({"ttl": 5}), "`ttl`"),
        (json!({"ttl": "long"}), "`ttl`"),
        (json!({"activityTtl": 4000}), "`activityTtl`"),
        (json!({"streamWebView": "yes"}), "streamWebView"),
        (json!({"profile": {"saveChanges": true}}), "profile.name"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let got = app.request(Method::POST, "/v2/browser", Some(&body)).await;
        let message = assert_error(&got, 400, "BAD_REQUEST");
        assert!(message.contains(field), "{body}: {message}");
    }
    let got = app.request(Method::GET, "/v2/browser?status=sleeping", None).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("`status`"));
    let unknown = "0192b2f0-0000-7000-8000-000000000000";
    assert_eq!(execute(&app, unknown, "1").await.0, 404);

    // One session at most here; an idle one ends at its own activityTtl.
    let id = create(&app, json!({"activityTtl": 10})).await["id"].as_str().expect("id").to_owned();
    let second = app.request(Method::POST, "/v2/browser", Some(&json!({}))).await;
    assert_error(&second, 429, "TOO_MANY_SESSIONS");
    let (status, bad) = app
        .request(
            Method::POST,
            &format!("/v2/browser/{id}/execute"),
            Some(&json!({"code": "1", "existingSessionId": "x"})),
        )
        .await;
    assert_eq!(status, 400, "{bad}");
    // Listing is not activity; running code would be.
    wait_for("the idle session to end", Duration::from_secs(30), || async {
        listed(&app, "?status=destroyed").await.iter().any(|(s, _)| s == &id).then_some(())
    })
    .await;
    assert_error(&execute(&app, &id, "1").await, 410, "SESSION_DESTROYED");
    create(&app, json!({})).await;
}

/// A DevTools client on a session's `cdpUrl`.
pub(crate) struct Cdp {
    socket: async_tungstenite::WebSocketStream<async_tungstenite::tokio::ConnectStream>,
    next_id: u64,
}

impl Cdp {
    pub(crate) async fn connect(url: &str) -> Result<Self, String> {
        let (socket, _) = async_tungstenite::tokio::connect_async(url).await.map_err(|e| e.to_string())?;
        Ok(Self { socket, next_id: 0 })
    }

    /// Sends a command and returns its answer (events in between are skipped).
    pub(crate) async fn send(&mut self, method: &str, params: Value) -> Value {
        self.command(json!({"method": method, "params": params})).await
    }

    /// Sends a command to an attached session (flat mode) and returns its answer.
    async fn send_to(&mut self, session: &str, method: &str, params: Value) -> Value {
        self.command(json!({"method": method, "params": params, "sessionId": session})).await
    }

    async fn command(&mut self, mut command: Value) -> Value {
        use futures::StreamExt;
        self.next_id += 1;
        let id = self.next_id;
        command["id"] = json!(id);
        let command = command.to_string();
        self.socket.send(async_tungstenite::tungstenite::Message::text(command)).await.expect("send");
        loop {
            let message = tokio::time::timeout(Duration::from_secs(20), self.socket.next())
                .await
                .expect("an answer in time")
                .expect("open")
                .expect("message");
            let answer: Value = serde_json::from_str(message.to_text().expect("text")).expect("json");
            if answer["id"] == id {
                return answer;
            }
        }
    }
}

#[tokio::test]
async fn the_cdp_url_drives_the_page_and_refuses_what_reaches_beyond_it() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let made = create(&app, json!({})).await;
    let id = made["id"].as_str().expect("id").to_owned();
    let url = made["cdpUrl"].as_str().expect("cdpUrl").to_owned();
    assert!(url.starts_with("ws://127.0.0.1:") && url.contains("/v2/cdp/"), "{made}");

    // The session's page itself: page commands without a session id.
    let mut cdp = Cdp::connect(&format!("{url}/page")).await.expect("connect");
    let got = cdp.send("Runtime.evaluate", json!({"expression": "6 * 7", "returnByValue": true})).await;
    assert_eq!(got["result"]["result"]["value"], 42, "{got}");
    let went = cdp.send("Page.navigate", json!({"url": site.url("/article")})).await;
    assert!(went["result"]["frameId"].is_string(), "{went}");
    wait_for("the navigation to show in the session", Duration::from_secs(15), || async {
        let (_, got) = execute(&app, &id, "location.pathname").await;
        (got["result"] == "/article").then_some(())
    })
    .await;

    for (method, params, named) in [
        ("Page.navigate", json!({"url": "file:///etc/passwd"}), "file:///etc/passwd"),
        ("Browser.close", json!({}), "Browser.close"),
        ("Target.createTarget", json!({"url": "about:blank"}), "Target.createTarget"),
        ("DOM.setFileInputFiles", json!({"files": ["/etc/passwd"], "nodeId": 1}), "DOM.setFileInputFiles"),
    ] {
        let refused = cdp.send(method, params).await;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{method}: {refused}");
    }
    // Still there and still on the article.
    let got = cdp
        .send(
            "Runtime.evaluate",
            json!({"expression": "location.protocol + location.pathname", "returnByValue": true}),
        )
        .await;
    assert_eq!(got["result"]["result"]["value"], "http:/article", "{got}");

    // The read-only live view's token opens no DevTools connection, nor does a made-up one.
    let view_token =
        made["liveViewUrl"].as_str().expect("live view").rsplit('/').next().expect("token").to_owned();
    let read_only = url.replace(url.rsplit('/').next().expect("token"), &view_token);
    assert!(Cdp::connect(&read_only).await.is_err(), "a read-only token connected");
    assert!(Cdp::connect(&url.replace("/v2/cdp/", "/v2/cdp/00")).await.is_err(), "a made-up token connected");
    let path = format!("/v2/cdp/{}", url.rsplit('/').next().expect("token"));
    let (status, plain) = app.request(Method::GET, &path, None).await;
    assert_eq!(status, 400, "a plain GET is not a WebSocket: {plain}");

    // Ended with the session.
    let (status, _) = app.request(Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!(status, 200);
    assert!(Cdp::connect(&url).await.is_err(), "connected to an ended session");
}

/// The browser endpoint (`cdpUrl` itself, as Playwright and Puppeteer use it) shows one
/// context: its session's. Another session's page in the same Chromium is not listed, not
/// attachable, and its events never arrive; a new page opens in the session's context.
#[tokio::test]
async fn the_cdp_url_shows_its_own_session_only() {
    let app = TestServer::builder().settings(|s| s.browser.pool_size = 1).start().await;
    let mine = create(&app, json!({})).await;
    let other = create(&app, json!({})).await;
    let mut cdp = Cdp::connect(mine["cdpUrl"].as_str().expect("cdpUrl")).await.expect("connect");
    let pages = |listed: &Value| -> Vec<String> {
        listed["result"]["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["type"] == "page")
            .map(|t| t["targetId"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let listed = cdp.send("Target.getTargets", json!({})).await;
    let mine_only = pages(&listed);
    assert_eq!(mine_only.len(), 1, "the session's page only: {listed}");
    // The other session's page, as the browser's own endpoint would list it.
    let (status, _) = execute(&app, other["id"].as_str().expect("id"), "document.title = 'other'").await;
    assert_eq!(status, 200);
    let listed = cdp.send("Target.getTargets", json!({})).await;
    assert_eq!(pages(&listed), mine_only, "still one page after the other session's work: {listed}");
    let contexts = cdp.send("Target.getBrowserContexts", json!({})).await;
    assert_eq!(contexts["result"]["browserContextIds"].as_array().map(Vec::len), Some(1), "{contexts}");

    let attached =
        cdp.send("Target.attachToTarget", json!({"targetId": mine_only[0], "flatten": true})).await;
    let session = attached["result"]["sessionId"].as_str().expect("a session").to_owned();
    let got = cdp
        .send_to(&session, "Runtime.evaluate", json!({"expression": "6 * 7", "returnByValue": true}))
        .await;
    assert_eq!(got["result"]["result"]["value"], 42, "{got}");
    let refused = cdp.send_to(&session, "Page.navigate", json!({"url": "file:///etc/passwd"})).await;
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.contains("file:///etc/passwd")),
        "{refused}"
    );
    let made = cdp.send("Target.createTarget", json!({"url": "about:blank"})).await;
    let new_page = made["result"]["targetId"].as_str().expect("a new page").to_owned();
    let listed = cdp.send("Target.getTargets", json!({})).await;
    assert!(pages(&listed).contains(&new_page), "the new page is in the session's context: {listed}");
    for (method, params) in [
        ("Target.createBrowserContext", json!({})),
        ("Browser.close", json!({})),
        ("Target.sendMessageToTarget", json!({"message": "{}"})),
    ] {
        let refused = cdp.send(method, params).await;
        assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains(method)), "{refused}");
    }
    let gone = cdp.send_to("NOT-A-SESSION", "Runtime.evaluate", json!({"expression": "1"})).await;
    assert!(gone["error"].is_object(), "{gone}");
    // The other session still answers: nothing of this connection reached it.
    let (status, got) = execute(&app, other["id"].as_str().expect("id"), "document.title").await;
    assert_eq!((status, got["result"].as_str()), (200, Some("other")), "{got}");
}

/// Reads `response` until it has `parts` whole parts of a `multipart/x-mixed-replace`
/// stream, and returns their bodies.
pub(crate) async fn parts(response: &mut reqwest::Response, buf: &mut Vec<u8>, parts: usize) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    while found.len() < parts {
        // A part: its headers, a blank line, Content-Length bytes, CRLF.
        if let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            assert!(head.starts_with("--frame"), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|n| n.trim().parse().ok())
                .expect("a length");
            let start = head_end + 4;
            if buf.len() >= start + length + 2 {
                found.push(buf[start..start + length].to_vec());
                buf.drain(..start + length + 2);
                continue;
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(15), response.chunk())
            .await
            .expect("a frame in time")
            .expect("read")
            .expect("the stream goes on");
        buf.extend_from_slice(&chunk);
    }
    found
}

#[tokio::test]
async fn the_live_view_streams_the_screen_when_asked() {
    let app = TestServer::start().await;
    let made = create(&app, json!({})).await;
    let id = made["id"].as_str().expect("id").to_owned();
    let view = made["liveViewUrl"].as_str().expect("live view").to_owned();
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let page = client.get(&view).send().await.expect("page").text().await.expect("html");
    assert!(page.contains("if (true)"), "the page streams");

    let mut stream = client.get(format!("{view}/stream")).send().await.expect("stream");
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "multipart/x-mixed-replace; boundary=frame");
    let mut buf = Vec::new();
    let first = parts(&mut stream, &mut buf, 1).await.remove(0);
    assert!(first.starts_with(&[0xFF, 0xD8]), "a JPEG");
    // A change on the page is a new frame, without asking.
    let (status, _) = execute(
        &app,
        &id,
        "document.body.style.background = 'red'; document.body.innerHTML = '<h1>changed</h1>'",
    )
    .await;
    assert_eq!(status, 200);
    let next = parts(&mut stream, &mut buf, 1).await.remove(0);
    assert!(next.starts_with(&[0xFF, 0xD8]) && next != first, "a new frame of the changed page");
    let (status, _) = app.request(Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(15), async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ends with the session");

    // Without streamWebView the page asks for frames, and there is no stream.
    let quiet = create(&app, json!({"streamWebView": false})).await;
    let view = quiet["liveViewUrl"].as_str().expect("live view").to_owned();
    let page = client.get(&view).send().await.expect("page").text().await.expect("html");
    assert!(page.contains("if (false)"), "the page polls");
    assert_eq!(client.get(format!("{view}/stream")).send().await.expect("stream").status(), 404);
}
