//! Hostile inputs hold: what a target site sends (a 300 MB page, a 4 GiB gzip bomb, a trickle
//! of one byte a second, a redirect loop, 2,000 headers, an endless tree of sitemap indexes,
//! invalid UTF-8) and what a caller sends (a 60 MB body, 100k-deep JSON, invalid UTF-8, a
//! 1 MB URL, 10,000 actions). Each gets a bounded, clear answer, and the server goes on
//! answering.

use serde_json::{Value, json};

use crate::common::hostile::{BOMB_BYTES, HUGE_BYTES, HostileSite};
use crate::common::{TestServer, assert_error};

/// The page-size cap the tests run with (the default's size).
const CAP: usize = 25 << 20;

async fn server() -> TestServer {
    TestServer::builder().settings(|s| s.scrape.max_body_bytes = CAP).start().await
}

/// The server still scrapes an ordinary page.
async fn still_serves(app: &TestServer, site: &HostileSite) {
    let (status, body) = app.scrape(json!({"url": site.url("/plain")})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["markdown"].as_str().unwrap_or_default().contains("of the hostile site"), "{body}");
}

#[tokio::test]
async fn a_300_mb_page_and_a_gzip_bomb_are_refused_at_the_body_cap() {
    let site = HostileSite::start();
    let app = server().await;
    for path in ["/huge", "/bomb"] {
        let got = app.scrape(json!({"url": site.url(path)})).await;
        let msg = assert_error(&got, 502, "SCRAPE_SITE_ERROR");
        assert!(msg.contains(&CAP.to_string()), "{path}: {msg}");
    }
    // Reading stopped near the cap: far from all 300 MB, far from the 4 GiB inflated.
    let huge = site.produced("/huge");
    assert!(huge < HUGE_BYTES / 3, "the client read on to {huge} bytes of the 300 MB page");
    let bomb = site.produced("/bomb");
    assert!(bomb < BOMB_BYTES / 4, "the bomb was inflated to {bomb} bytes");
    still_serves(&app, &site).await;
}

#[tokio::test]
async fn a_trickle_answers_408_at_the_timeout_and_a_redirect_loop_stops() {
    let site = HostileSite::start();
    let app = server().await;
    let got = app.scrape(json!({"url": site.url("/trickle"), "timeout": 3000})).await;
    let msg = assert_error(&got, 408, "SCRAPE_TIMEOUT");
    assert!(msg.contains("3000"), "{msg}");
    // The server hung up: the trickle stopped long before its 120 bytes.
    assert!(site.produced("/trickle") < 20, "sent {}", site.produced("/trickle"));

    let got = app.scrape(json!({"url": site.url("/loop/a")})).await;
    let msg = assert_error(&got, 502, "SCRAPE_SITE_ERROR");
    assert!(msg.contains("redirects"), "{msg}");
    assert!(site.hits("/loop/") <= 11, "{} requests for the loop", site.hits("/loop/"));
    still_serves(&app, &site).await;
}

#[tokio::test]
async fn many_headers_and_invalid_utf8_pages_get_clear_answers() {
    let site = HostileSite::start();
    let app = server().await;
    let got = app.scrape(json!({"url": site.url("/headers")})).await;
    let msg = assert_error(&got, 502, "SCRAPE_SITE_ERROR");
    assert!(msg.contains("head is too large"), "{msg}");

    let (status, body) = app.scrape(json!({"url": site.url("/invalid-utf8")})).await;
    assert_eq!(status, 200, "{body}");
    let md = body["data"]["markdown"].as_str().unwrap_or_default();
    assert!(md.contains("Before the bytes") && md.contains("and after the bytes."), "{md}");
    assert!(md.contains('\u{fffd}'), "invalid bytes become replacement characters: {md}");
    still_serves(&app, &site).await;
}

#[tokio::test]
async fn an_endless_tree_of_sitemap_indexes_is_read_a_bounded_number_of_times() {
    let site = HostileSite::start();
    let app = server().await;
    let (status, body) = app
        .request(reqwest::Method::POST, "/v2/map", Some(&json!({"url": site.url("/"), "sitemap": "only"})))
        .await;
    assert_eq!(status, 200, "{body}");
    let links = body["links"].as_array().expect("links");
    assert!(links.iter().any(|l| l["url"].as_str().is_some_and(|u| u.contains("/page"))), "{body}");
    let sitemaps = site.hits("/sitemap.xml") + site.hits("/maps/") + site.hits("/pages/");
    assert!((2..=50).contains(&sitemaps), "{sitemaps} sitemap requests");
    assert_eq!(site.hits("/sitemap.xml"), 1, "an index listing itself is read once");
}

/// Sends `body` to `path` and expects a 400 naming `field`.
async fn refused(app: &TestServer, path: &str, body: impl Into<reqwest::Body>, field: &str) -> String {
    let got = app.post_raw(path, body).await;
    assert_eq!(got.0, 400, "{}", got.1);
    let msg = got.1["error"].as_str().unwrap_or_default().to_owned();
    assert!(msg.contains(field), "{path}: {msg} does not name {field}");
    msg
}

#[tokio::test]
async fn hostile_request_bodies_get_4xx_naming_the_problem() {
    let app = TestServer::start().await;
    // 60 MB: refused by size, before it is read as JSON.
    let big = format!("{{\"url\": \"http://a.example.com/\", \"origin\": \"{}\"}}", "x".repeat(60 << 20));
    let got = app.post_raw("/v2/scrape", big).await;
    assert_error(&got, 413, "PAYLOAD_TOO_LARGE");

    // 100k-deep JSON, as the whole body and inside a field, on the endpoints that read
    // bodies differently (the batch leaves `urls` unread until it validates them).
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    for path in ["/v2/scrape", "/v2/batch/scrape", "/v2/crawl", "/v2/map"] {
        let got = app.post_raw(path, deep(100_000)).await;
        assert_error(&got, 400, "BAD_REQUEST_INVALID_JSON");
    }
    // Deep JSON inside a field other than `urls`: refused as invalid JSON.
    let nested = [
        ("/v2/scrape", format!("{{\"url\": \"http://a.example.com/\", \"formats\": {}}}", deep(100_000))),
        (
            "/v2/batch/scrape",
            format!("{{\"urls\": [\"http://a.example.com/\"], \"formats\": {}}}", deep(100_000)),
        ),
    ];
    for (path, body) in nested {
        let got = app.post_raw(path, body).await;
        assert_error(&got, 400, "BAD_REQUEST_INVALID_JSON");
    }
    let got = app.post_raw("/v2/batch/scrape", format!("{{\"urls\": {}}}", deep(100_000))).await;
    assert_eq!(got.0, 400, "{}", got.1);

    // Invalid UTF-8.
    let mut bytes = b"{\"url\": \"http://a.example.com/".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, b'"', b'}']);
    let got = app.post_raw("/v2/scrape", bytes).await;
    assert_error(&got, 400, "BAD_REQUEST_INVALID_JSON");

    // A 1 MB URL.
    let long = format!("http://a.example.com/{}", "a".repeat(1 << 20));
    refused(&app, "/v2/scrape", json!({"url": long}).to_string(), "`url`").await;
    refused(&app, "/v2/crawl", json!({"url": long}).to_string(), "`url`").await;
    refused(&app, "/v2/map", json!({"url": long}).to_string(), "`url`").await;
    let batch = json!({"urls": [long], "ignoreInvalidURLs": false});
    refused(&app, "/v2/batch/scrape", batch.to_string(), "`urls[0]`").await;

    // 10,000 actions.
    let actions: Vec<Value> = (0..10_000).map(|_| json!({"type": "wait", "milliseconds": 1})).collect();
    let msg = refused(
        &app,
        "/v2/scrape",
        json!({"url": "http://a.example.com/", "actions": actions}).to_string(),
        "`actions`",
    )
    .await;
    assert!(msg.contains("10000"), "{msg}");

    // `urls` of the wrong shape.
    refused(&app, "/v2/batch/scrape", json!({"urls": "http://a.example.com/"}).to_string(), "`urls`").await;
    refused(&app, "/v2/batch/scrape", json!({"formats": ["markdown"]}).to_string(), "`urls`").await;

    // Still answering.
    let (status, _) = app.request(reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 200);
}
