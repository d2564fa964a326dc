//! The browser engine with real Chromium against the fixture site: pages built by scripts
//! (requested and detected), screenshots served as owner-only files, device and locale
//! emulation seen by the page, ad blocking, the address policy for everything the page
//! loads, and recovery from a crashed browser.

use serde_json::{Value, json};

use crate::common::{FixtureSite, KEY, TestServer};

async fn scrape(app: &TestServer, body: Value) -> (u16, Value) {
    app.request(reqwest::Method::POST, "/v2/scrape", Some(&body)).await
}

fn markdown(body: &Value) -> &str {
    body["data"]["markdown"].as_str().unwrap_or_default()
}

/// Width and height from a PNG's header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    (be(16), be(20))
}

async fn download(url: &str, key: &str) -> (u16, Vec<u8>) {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let response = client.get(url).bearer_auth(key).send().await.expect("download");
    (response.status().as_u16(), response.bytes().await.expect("bytes").to_vec())
}

#[tokio::test]
async fn script_content_is_rendered_when_asked_and_when_detected() {
    let site = FixtureSite::start();
    let app = TestServer::builder().start().await;
    let (status, plain) = scrape(&app, json!({"url": site.url("/js/late"), "maxAge": 0})).await;
    assert_eq!(status, 200, "{plain}");
    // A late script on an otherwise static page is not a shell: without waitFor the page is as served.
    assert!(markdown(&plain).contains("village hall"), "{plain}");
    assert!(!markdown(&plain).contains("harvest festival"), "{plain}");
    assert_eq!(plain["data"]["metadata"]["engine"], "http");

    let (status, waited) = scrape(&app, json!({"url": site.url("/js/late"), "waitFor": 1000})).await;
    assert_eq!(status, 200, "{waited}");
    assert!(markdown(&waited).contains("harvest festival"), "{waited}");
    assert_eq!(waited["data"]["metadata"]["engine"], "chromium");
    assert_eq!(waited["data"]["metadata"]["statusCode"], 200);

    let (status, shell) = scrape(&app, json!({"url": site.url("/js/shell")})).await;
    assert_eq!(status, 200, "{shell}");
    assert!(markdown(&shell).contains("sixteen hours of light"), "the app shell was rendered: {shell}");
    assert_eq!(shell["data"]["metadata"]["engine"], "chromium");
    assert_eq!(site.hits("/api/content"), 1, "the page's own request went out once");

    let (_, article) = scrape(&app, json!({"url": site.url("/article")})).await;
    assert_eq!(article["data"]["metadata"]["engine"], "http", "static pages stay on HTTP");
}

#[tokio::test]
async fn screenshots_are_files_of_the_right_size_for_their_team_only() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-key").start().await;
    let (status, body) = scrape(
        &app,
        json!({"url": site.url("/article"), "formats": ["markdown", {"type": "screenshot", "viewport": {"width": 800, "height": 600}}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let url = body["data"]["screenshot"].as_str().expect("screenshot URL");
    assert!(url.starts_with(&app.base) && url.contains("/v2/files/"), "{url}");
    let (status, png) = download(url, KEY).await;
    assert_eq!(status, 200);
    assert_eq!(png_size(&png), (800, 600));
    let (status, _) = download(url, "other-key").await;
    assert_eq!(status, 404, "another team cannot read the file");

    let (_, full) = scrape(
        &app,
        json!({"url": site.url("/js/interactive"), "formats": [{"type": "screenshot", "fullPage": true}]}),
    )
    .await;
    let (_, png) = download(full["data"]["screenshot"].as_str().expect("url"), KEY).await;
    let (width, height) = png_size(&png);
    assert_eq!(width, 1920, "desktop viewport");
    assert!(height > 3000, "the whole page: {height}");
}
