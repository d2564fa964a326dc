//! Change tracking: first scrape is new, unchanged content is same, edits are changed with
//! a unified diff; tags keep separate histories; teams never share one; crawl pages that
//! links no longer reach (only the sitemap does) are `hidden`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{CrawlSite, FixtureSite, TestServer};

fn tracking(tag: Option<&str>) -> serde_json::Value {
    json!(["markdown", {"type": "changeTracking", "modes": ["git-diff"], "tag": tag}])
}

#[tokio::test]
async fn new_same_changed_with_diff() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let url = site.url("/changing");
    site.set_version(3);
    let (status, body) = app.scrape(json!({"url": url, "formats": tracking(None)})).await;
    assert_eq!(status, 200, "{body}");
    let ct = &body["data"]["changeTracking"];
    assert_eq!(ct["changeStatus"], "new");
    assert!(ct["previousScrapeAt"].is_null());
    assert_eq!(ct["visibility"], "visible");

    let (_, body) = app.scrape(json!({"url": url, "formats": tracking(None)})).await;
    let ct = &body["data"]["changeTracking"];
    assert_eq!(ct["changeStatus"], "same");
    assert!(ct["previousScrapeAt"].as_str().expect("previous").ends_with('Z'));
    assert!(ct.get("diff").is_none());
    assert_eq!(site.hits("/changing"), 2, "change tracking always fetches");

    site.set_version(4);
    let (_, body) = app.scrape(json!({"url": url, "formats": tracking(None)})).await;
    let ct = &body["data"]["changeTracking"];
    assert_eq!(ct["changeStatus"], "changed");
    let diff = ct["diff"].as_str().expect("diff");
    assert!(diff.contains("-Tomatoes cost 3 euros") && diff.contains("+Tomatoes cost 4 euros"), "{diff}");
    assert!(!diff.contains("-Basil"), "unchanged lines are context only: {diff}");
}

#[tokio::test]
async fn tags_and_teams_keep_separate_histories() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-team-key").start().await;
    let url = site.url("/changing");
    app.scrape(json!({"url": url, "formats": tracking(Some("daily"))})).await;
    let (_, body) = app.scrape(json!({"url": url, "formats": tracking(Some("weekly"))})).await;
    assert_eq!(body["data"]["changeTracking"]["changeStatus"], "new");
    let (_, body) = app.scrape(json!({"url": url, "formats": tracking(Some("daily"))})).await;
    assert_eq!(body["data"]["changeTracking"]["changeStatus"], "same");
    let (_, body) = app
        .request_as(
            "other-team-key",
            reqwest::Method::POST,
            "/v2/scrape",
            Some(&json!({"url": url, "formats": tracking(Some("daily"))})),
        )
        .await;
    assert_eq!(body["data"]["changeTracking"]["changeStatus"], "new", "{body}");
}

#[tokio::test]
async fn without_git_diff_mode_only_the_status_is_given() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let url = site.url("/changing");
    let formats = json!(["markdown", "changeTracking"]);
    app.scrape(json!({"url": url, "formats": formats})).await;
    site.set_version(9);
    let (_, body) = app.scrape(json!({"url": url, "formats": formats})).await;
    assert_eq!(body["data"]["changeTracking"]["changeStatus"], "changed");
    assert!(body["data"]["changeTracking"].get("diff").is_none());
}

/// Path → (changeStatus, visibility) of every page of a finished crawl.
async fn crawl_tracking(app: &TestServer, body: Value) -> BTreeMap<String, (String, String)> {
    let id = app.start_crawl(body).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), Duration::from_secs(60)).await;
    assert_eq!(done["status"], "completed", "{done}");
    let mut out = BTreeMap::new();
    for doc in done["data"].as_array().expect("data") {
        let source = doc["metadata"]["sourceURL"].as_str().expect("sourceURL");
        let path = url::Url::parse(source).expect("url").path().to_owned();
        let ct = &doc["changeTracking"];
        let pair = |k: &str| ct[k].as_str().unwrap_or_else(|| panic!("{k} of {path}: {doc}")).to_owned();
        out.insert(path.clone(), (pair("changeStatus"), pair("visibility")));
    }
    out
}

fn expect(list: &[(&str, &str, &str)]) -> BTreeMap<String, (String, String)> {
    list.iter().map(|(p, c, v)| ((*p).to_owned(), ((*c).to_owned(), (*v).to_owned()))).collect()
}

/// A crawl page is `hidden` when following links from the start URL did not reach it and
/// only the sitemap did: a page the home page stops linking turns hidden on the next crawl.
#[tokio::test]
async fn crawl_pages_only_the_sitemap_reaches_are_hidden() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let start = format!("http://news.localhost:{}/", site.port);
    let crawl = json!({"url": start, "scrapeOptions": {"formats": ["markdown", {"type": "changeTracking"}]}});
    let first = crawl_tracking(&app, crawl.clone()).await;
    assert_eq!(
        first,
        expect(&[
            ("/", "new", "visible"),
            ("/a", "new", "visible"),
            ("/b", "new", "visible"),
            ("/c", "new", "hidden"),
        ])
    );

    site.unlink_b();
    let second = crawl_tracking(&app, crawl).await;
    assert_eq!(
        second,
        expect(&[
            // Its links are navigation, which the main content leaves out.
            ("/", "same", "visible"),
            ("/a", "same", "visible"),
            ("/b", "same", "hidden"),
            ("/c", "same", "hidden"),
        ])
    );

    // Without the sitemap, or with nothing but the sitemap, nothing can be told apart.
    let skip = json!({"url": start, "sitemap": "skip", "scrapeOptions": {"formats": ["markdown", {"type": "changeTracking", "tag": "skip"}]}});
    assert_eq!(
        crawl_tracking(&app, skip).await,
        expect(&[("/", "new", "visible"), ("/a", "new", "visible")])
    );
    let only = json!({"url": start, "sitemap": "only", "scrapeOptions": {"formats": ["markdown", {"type": "changeTracking", "tag": "only"}]}});
    let got = crawl_tracking(&app, only).await;
    assert!(got.values().all(|(_, v)| v == "visible"), "{got:?}");
    assert_eq!(got.len(), 4, "{got:?}");

    // Linked pages come first: under a limit the sitemap-only pages wait their turn.
    let limited = |limit: u64| json!({"url": start, "limit": limit, "scrapeOptions": {"formats": ["markdown", {"type": "changeTracking", "tag": format!("limit {limit}")}]}});
    assert_eq!(
        crawl_tracking(&app, limited(2)).await,
        expect(&[("/", "new", "visible"), ("/a", "new", "visible")])
    );
    let got = crawl_tracking(&app, limited(3)).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got.values().filter(|(_, v)| v == "hidden").count(), 1, "{got:?}");
}
