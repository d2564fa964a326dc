//! Browser sessions made without a scrape in a cluster of real child processes: a session
//! lives on the node that made it (where its Chromium is), runs code and ends through any
//! node (its id names its node), every node lists the team's sessions of all nodes, and a
//! session's DevTools connection (`cdpUrl`) and its live view's screen stream work through
//! any node.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::browser_sessions::{Cdp, parts};
use crate::cluster::{Node, call};

/// Nodes a and b, both live, and a browser session b made (as `POST /v2/browser` answered).
async fn a_session_on_b() -> (Node, Node, serde_json::Value) {
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let (status, made) = call(b.base(), &b.key, Method::POST, "/v2/browser", Some(&json!({}))).await;
    assert_eq!(status, 200, "{made}");
    (a, b, made)
}

#[tokio::test]
async fn sessions_are_listed_and_driven_through_any_node() {
    let (a, b, made) = a_session_on_b().await;
    let id = made["id"].as_str().expect("id").to_owned();
    assert!(made["cdpUrl"].as_str().is_some_and(|u| u.contains(&b.base().replace("http://", ""))), "{made}");

    let code = json!({"code": "window.kept = 'on b'; 6 * 7"});
    let path = format!("/v2/browser/{id}/execute");
    let (status, ran) = call(a.base(), &a.key, Method::POST, &path, Some(&code)).await;
    assert_eq!((status, ran["result"].as_str()), (200, Some("42")), "{ran}");

    for node in [&a, &b] {
        let (status, listed) =
            call(node.base(), &node.key, Method::GET, "/v2/browser?status=active", None).await;
        assert_eq!(status, 200, "{listed}");
        let ids: Vec<&str> = listed["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert_eq!(ids, [id.as_str()], "listed through {}: {listed}", node.name);
    }

    let (status, ended) = call(a.base(), &a.key, Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!((status, ended["success"].as_bool()), (200, Some(true)), "{ended}");
    let (status, _) = call(a.base(), &a.key, Method::POST, &path, Some(&code)).await;
    assert_eq!(status, 410);
    let (_, listed) = call(a.base(), &a.key, Method::GET, "/v2/browser?status=destroyed", None).await;
    assert_eq!(listed["sessions"][0]["id"], id.as_str(), "{listed}");
}

/// Behind a load balancer a session's `cdpUrl` may reach any node: that node carries the
/// connection to the session's node, whose guard still refuses what reaches beyond the
/// session; a token that names a node but no session of it connects nowhere.
#[tokio::test]
async fn the_cdp_url_works_through_any_node() {
    let (a, b, made) = a_session_on_b().await;
    let id = made["id"].as_str().expect("id").to_owned();
    let url = made["cdpUrl"].as_str().expect("cdpUrl");
    let through_a = url.replace(&b.base().replace("http://", ""), &a.base().replace("http://", ""));
    assert_ne!(through_a, url, "{made}");

    // The page endpoint: commands run in b's session, refusals still refused.
    let mut page = Cdp::connect(&format!("{through_a}/page")).await.expect("connected through a");
    let set = json!({"expression": "window.kept = 'through a'; 6 * 7", "returnByValue": true});
    let got = page.send("Runtime.evaluate", set).await;
    assert_eq!(got["result"]["result"]["value"], 42, "{got}");
    let refused = page.send("Page.navigate", json!({"url": "file:///etc/passwd"})).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("file:///etc/passwd"), "{refused}");
    let path = format!("/v2/browser/{id}/execute");
    let (status, ran) =
        call(b.base(), &b.key, Method::POST, &path, Some(&json!({"code": "window.kept"}))).await;
    assert_eq!((status, ran["result"].as_str()), (200, Some("through a")), "{ran}");

    // The browser endpoint, as Playwright and Puppeteer use it: the session's one page.
    let mut whole = Cdp::connect(&through_a).await.expect("the browser endpoint through a");
    let listed = whole.send("Target.getTargets", json!({})).await;
    let pages =
        listed["result"]["targetInfos"].as_array().into_iter().flatten().filter(|t| t["type"] == "page");
    assert_eq!(pages.count(), 1, "{listed}");
    // b carries both connections for a (what an operator sees on b's /metrics).
    assert_eq!(crate::cluster::metric(b.base(), "cluster_tunnels_open").await, 2.0);

    // b's tag with a token b never made, and the token once the session ended.
    let token = through_a.rsplit('/').next().expect("token");
    let made_up = through_a.replace(&token[8..], &"0".repeat(token.len() - 8));
    assert!(Cdp::connect(&made_up).await.is_err(), "a made-up token connected");
    let (status, _) = call(a.base(), &a.key, Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!(status, 200);
    assert!(Cdp::connect(&through_a).await.is_err(), "connected to an ended session");
}

/// The live view's screen stream of a session on b, through a: a's answer carries b's
/// frames as they come, and ends with the session.
#[tokio::test]
async fn the_live_view_streams_through_any_node() {
    let (a, b, made) = a_session_on_b().await;
    let id = made["id"].as_str().expect("id").to_owned();
    let view = made["liveViewUrl"].as_str().expect("live view");
    let through_a = view.replace(b.base(), a.base());
    assert_ne!(through_a, view, "{made}");
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut stream = client.get(format!("{through_a}/stream")).send().await.expect("stream");
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "multipart/x-mixed-replace; boundary=frame");
    let mut buf = Vec::new();
    let first = parts(&mut stream, &mut buf, 1).await.remove(0);
    assert!(first.starts_with(&[0xFF, 0xD8]), "a JPEG");
    let path = format!("/v2/browser/{id}/execute");
    let change = json!({"code": "document.body.style.background = 'red'; document.body.innerHTML = '<h1>changed</h1>'"});
    let (status, ran) = call(a.base(), &a.key, Method::POST, &path, Some(&change)).await;
    assert_eq!(status, 200, "{ran}");
    let next = parts(&mut stream, &mut buf, 1).await.remove(0);
    assert!(next.starts_with(&[0xFF, 0xD8]) && next != first, "a new frame of the changed page");
    let (status, _) = call(a.base(), &a.key, Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ends with the session");
}
