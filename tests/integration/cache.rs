//! The page cache: hits make no request to the target, freshness rules (maxAge, minAge,
//! lockdown), what is never cached (storeInCache false, personal headers, zero data
//! retention), and variants.

use serde_json::json;

use crate::common::{FixtureSite, TestServer, assert_error};

#[tokio::test]
async fn a_second_scrape_is_served_from_the_cache() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, first) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(first["data"]["metadata"]["cacheState"], "miss");
    assert!(first["data"]["metadata"].get("cachedAt").is_none());
    // Different formats and content options still hit: the cache holds the fetched page.
    let (_, second) = app
        .scrape(json!({"url": site.url("/article"), "formats": ["html", "links"], "onlyMainContent": false}))
        .await;
    assert_eq!(second["data"]["metadata"]["cacheState"], "hit");
    assert!(second["data"]["metadata"]["cachedAt"].as_str().expect("cachedAt").ends_with('Z'));
    assert!(second["data"]["links"].as_array().is_some_and(|l| !l.is_empty()));
    assert_ne!(second["data"]["metadata"]["scrapeId"], first["data"]["metadata"]["scrapeId"]);
    assert_eq!(site.hits("/article"), 1, "a hit must not contact the target");
    // maxAge 0 always fetches.
    let (_, third) = app.scrape(json!({"url": site.url("/article"), "maxAge": 0})).await;
    assert!(third["data"]["metadata"].get("cacheState").is_none());
    assert_eq!(site.hits("/article"), 2);
}

#[tokio::test]
async fn max_age_bounds_freshness() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    app.scrape(json!({"url": site.url("/article")})).await;
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "maxAge": 50})).await;
    assert_eq!(body["data"]["metadata"]["cacheState"], "miss");
    assert_eq!(site.hits("/article"), 2);
}

#[tokio::test]
async fn min_age_reads_only_the_cache() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let got = app.scrape(json!({"url": site.url("/article"), "minAge": 1})).await;
    assert_error(&got, 404, "SCRAPE_NO_CACHED_DATA");
    assert_eq!(site.hits("/article"), 0);
    app.scrape(json!({"url": site.url("/article")})).await;
    let (status, body) = app.scrape(json!({"url": site.url("/article"), "minAge": 1})).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["metadata"]["cacheState"], "hit");
    let got = app.scrape(json!({"url": site.url("/article"), "minAge": 3_600_000})).await;
    assert_error(&got, 404, "SCRAPE_NO_CACHED_DATA");
    assert_eq!(site.hits("/article"), 1);
}

#[tokio::test]
async fn lockdown_never_contacts_the_target() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let got = app.scrape(json!({"url": site.url("/article"), "lockdown": true})).await;
    assert_error(&got, 404, "SCRAPE_LOCKDOWN_CACHE_MISS");
    assert_eq!(site.hits("/article"), 0);
    app.scrape(json!({"url": site.url("/article")})).await;
    let (status, body) = app.scrape(json!({"url": site.url("/article"), "lockdown": true})).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["metadata"]["cacheState"], "hit");
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 5);
    assert_eq!(site.hits("/article"), 1);
    // Lockdown is zero data retention: the result is not stored.
    let id = body["data"]["metadata"]["scrapeId"].as_str().expect("id");
    let got = app.request(reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_error(&got, 404, "NOT_FOUND");
}

#[tokio::test]
async fn store_in_cache_false_and_personal_headers_are_not_cached() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    app.scrape(json!({"url": site.url("/article"), "storeInCache": false})).await;
    app.scrape(json!({"url": site.url("/article"), "headers": {"Cookie": "me=1"}})).await;
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "headers": {"Cookie": "me=1"}})).await;
    assert!(body["data"]["metadata"].get("cacheState").is_none(), "personal requests skip the cache");
    let (_, body) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(body["data"]["metadata"]["cacheState"], "miss");
    assert_eq!(site.hits("/article"), 4);
}

#[tokio::test]
async fn zero_data_retention_writes_nothing() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": site.url("/article"), "zeroDataRetention": true})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 2);
    let id = body["data"]["metadata"]["scrapeId"].as_str().expect("id");
    let got = app.request(reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_error(&got, 404, "NOT_FOUND");
    let (_, body) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(body["data"]["metadata"]["cacheState"], "miss", "the ZDR fetch was not cached");
    assert_eq!(site.hits("/article"), 2);
}

#[tokio::test]
async fn device_variants_are_cached_separately() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    app.scrape(json!({"url": site.url("/article")})).await;
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "mobile": true})).await;
    assert_eq!(body["data"]["metadata"]["cacheState"], "miss");
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "mobile": true})).await;
    assert_eq!(body["data"]["metadata"]["cacheState"], "hit", "{body}");
    assert_eq!(site.hits("/article"), 2);
}

#[tokio::test]
async fn error_pages_are_not_cached() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    app.scrape(json!({"url": site.url("/missing")})).await;
    let (_, body) = app.scrape(json!({"url": site.url("/missing")})).await;
    assert_eq!(body["data"]["metadata"]["cacheState"], "miss");
    assert_eq!(site.hits("/missing"), 2);
}
