//! Change tracking: first scrape is new, unchanged content is same, edits are changed with
//! a unified diff; tags keep separate histories; teams never share one.

use serde_json::json;

use crate::common::{FixtureSite, TestServer};

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
