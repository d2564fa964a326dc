//! Bad input gets a 4xx JSON envelope naming the field: unknown keys, types, ranges,
//! formats, URLs, malformed JSON, oversized bodies, unknown routes and methods, and the
//! options whose capability this build does not have.

use serde_json::json;

use crate::common::{FixtureSite, TestServer, assert_error};

#[tokio::test]
async fn unknown_keys_are_named_but_sdk_keys_pass() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let got = app.scrape(json!({"url": site.url("/article"), "maxDepth": 2})).await;
    let msg = assert_error(&got, 400, "BAD_REQUEST");
    assert!(msg.contains("`maxDepth`"), "{msg}");
    // Exactly what the Python SDK sends with default options.
    let sdk = json!({
        "url": site.url("/article"), "formats": [{"type": "markdown"}], "onlyMainContent": true, "mobile": false,
        "skipTlsVerification": true, "removeBase64Images": true, "fastMode": false, "blockAds": true,
        "maxAge": 14_400_000, "storeInCache": true, "origin": "python-sdk@4.38.0", "integration": "tests",
        "__experimental_omce": true
    });
    let (status, body) = app.scrape(sdk).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn types_and_ranges_name_the_field() {
    let app = TestServer::start().await;
    let url = "http://a.example.com/";
    for (body, field) in [
        (json!({"url": url, "timeout": "fast"}), "`timeout`"),
        (json!({"url": url, "timeout": 999}), "`timeout`"),
        (json!({"url": url, "timeout": 300_001}), "`timeout`"),
        (json!({"url": url, "maxAge": -5}), "`maxAge`"),
        (json!({"url": url, "onlyMainContent": "yes"}), "`onlyMainContent`"),
        (json!({"url": url, "headers": {"X": 1}}), "`headers.X`"),
        (json!({"url": url, "location": {"country": "Narnia"}}), "`location.country`"),
        (json!({"url": url, "location": ["US", ["en-US"]]}), "`location`"),
        (json!({"url": url, "location": {"": "US"}}), "`location`: unknown field ``"),
        (json!({"url": url, "proxy": "tor"}), "`proxy`"),
        (json!({"url": url, "formats": ["markdown", "pdfText"]}), "`formats[1]`"),
        (json!({"url": url, "formats": [{"type": "markdown", "x": 1}]}), "`formats[0].x`"),
        (json!({"url": url, "includeTags": ["p", "a[["]}), "`includeTags[1]`"),
        (json!({"url": url, "waitFor": 70_000}), "`waitFor`"),
        (json!({"url": url, "auditMetadata": 0}), "`auditMetadata`"),
        (json!({"url": "ftp://a.example.com/"}), "`url`"),
        (json!({"url": "not a url at all"}), "`url`"),
        (json!({"url": "http://intranet/"}), "`url`"),
        (json!({}), "`url`"),
    ] {
        let got = app.scrape(body.clone()).await;
        let msg = assert_error(&got, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{body} → {msg}");
    }
}

#[tokio::test]
async fn unbuilt_capabilities_answer_feature_not_available() {
    let app = TestServer::start().await;
    let url = "http://a.example.com/";
    for (body, option) in [
        (json!({"url": url, "formats": [{"type": "json", "prompt": "x"}]}), "json"),
        (json!({"url": url, "formats": ["summary"]}), "summary"),
        (json!({"url": url, "formats": ["audio"]}), "audio"),
        (json!({"url": url, "formats": ["video"]}), "video"),
        (json!({"url": url, "formats": [{"type": "question", "question": "q"}]}), "question"),
        (json!({"url": url, "formats": [{"type": "highlights", "query": "q"}]}), "highlights"),
        (json!({"url": url, "onlyCleanContent": true}), "onlyCleanContent"),
    ] {
        let got = app.scrape(body.clone()).await;
        let msg = assert_error(&got, 400, "FEATURE_NOT_AVAILABLE");
        assert!(msg.contains(option), "{body} → {msg}");
    }
}

#[tokio::test]
async fn malformed_and_oversized_bodies() {
    let app = TestServer::builder().settings(|s| s.server.max_request_bytes = 4096).start().await;
    let got = app.post_raw("/v2/scrape", "{\"url\": ").await;
    assert_error(&got, 400, "BAD_REQUEST_INVALID_JSON");
    let got = app.post_raw("/v2/scrape", "[1, 2]").await;
    assert_error(&got, 400, "BAD_REQUEST");
    let big = format!("{{\"url\": \"http://a.example.com/\", \"origin\": \"{}\"}}", "x".repeat(10_000));
    let got = app.post_raw("/v2/scrape", big).await;
    assert_error(&got, 413, "PAYLOAD_TOO_LARGE");
}

#[tokio::test]
async fn unknown_routes_methods_and_ids() {
    let app = TestServer::start().await;
    let got = app.request(reqwest::Method::GET, "/v2/nothing-here", None).await;
    assert_error(&got, 404, "NOT_FOUND");
    let got = app.request(reqwest::Method::DELETE, "/v2/scrape", None).await;
    assert_error(&got, 405, "METHOD_NOT_ALLOWED");
    let got = app.request(reqwest::Method::GET, "/v2/scrape/not-a-uuid", None).await;
    let msg = assert_error(&got, 400, "BAD_REQUEST");
    assert!(msg.contains("Invalid job ID"), "{msg}");
    let (status, body) = app.request(reqwest::Method::GET, "/health", None).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let got = app.request(reqwest::Method::GET, "/ready", None).await;
    assert_eq!(got, (200, serde_json::json!({"status": "ready"})));
}

#[tokio::test]
async fn query_parameters_are_named_when_invalid() {
    let app = TestServer::start().await;
    for (path, field) in [
        ("/v2/team/credit-usage/historical?byApiKey=yes", "`byApiKey`"),
        ("/v2/team/token-usage/historical?byApiKey=1", "`byApiKey`"),
        ("/v2/files/a.png?expires=-5&signature=x", "`expires`"),
        ("/v2/browser?status=", "`status`"),
        ("/v2/team/activity?limit=0", "`limit`"),
    ] {
        let got = app.request(reqwest::Method::GET, path, None).await;
        let msg = assert_error(&got, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{path} → {msg}");
    }
    // Both booleans are read as such.
    let (status, body) =
        app.request(reqwest::Method::GET, "/v2/team/token-usage/historical?byApiKey=false", None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        app.request(reqwest::Method::GET, "/v2/team/token-usage/historical?byApiKey=true", None).await;
    assert_eq!(status, 200, "{body}");
}
