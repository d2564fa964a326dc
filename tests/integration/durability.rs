//! Accepted work survives `kill -9` and a graceful stop: a crawl or batch stopped mid-way
//! resumes when the server restarts and finishes with every page exactly once (none of them
//! failed by the stop); jobs accepted together are all made durable without stalling the
//! store.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::crawlsite::{CHAIN_LEN, HUB_LEN};
use crate::common::process::Binary;
use crate::common::{CrawlSite, decode};

async fn get(base: &str, key: &str, path_or_url: &str) -> Value {
    let url =
        if path_or_url.starts_with("http") { path_or_url.to_owned() } else { format!("{base}{path_or_url}") };
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let (status, body) = decode(client.get(url).bearer_auth(key).send().await.expect("get")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Starts a job with `body` at `endpoint`, kills the server with SIGKILL once 12 pages are
/// done, restarts it, waits for the end and returns the final status and every document's
/// source URL (checked to be unique).
async fn killed_and_resumed(site: &CrawlSite, endpoint: &str, body: Value) -> (Value, Vec<String>) {
    let (done, docs, _) = stopped_and_resumed_docs(site, endpoint, body, Binary::kill9).await;
    let sources: Vec<String> =
        docs.iter().map(|d| d["metadata"]["sourceURL"].as_str().expect("source").to_owned()).collect();
    let unique: BTreeSet<&String> = sources.iter().collect();
    assert_eq!(unique.len(), sources.len(), "a page appears twice: {sources:?}");
    (done, sources)
}

/// [`killed_and_resumed`] with `stop` for the kill, returning the documents themselves and
/// the job's failed pages.
async fn stopped_and_resumed_docs(
    site: &CrawlSite,
    endpoint: &str,
    body: Value,
    stop: impl FnOnce(Binary),
) -> (Value, Vec<Value>, Value) {
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[]);
    let key = server.key();
    let (_, started) = server.post(endpoint, &body).await;
    let id = started["id"].as_str().expect("id").to_owned();
    let status_path = format!("{endpoint}/{id}");

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = get(&server.base, &key, &status_path).await;
        if status["completed"].as_u64().unwrap_or(0) >= 12 {
            assert_eq!(status["status"], "scraping", "the job must still be running when killed");
            break;
        }
        assert!(Instant::now() < deadline, "the job made no progress: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop(server);
    let before_restart = site.requests().len();

    let server = Binary::serve(dir.path(), &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let status = get(&server.base, &key, &status_path).await;
        if status["status"] != "scraping" {
            break status;
        }
        assert!(Instant::now() < deadline, "the resumed job did not finish: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert!(site.requests().len() > before_restart, "the restarted server fetched the rest");
    let mut docs: Vec<Value> = done["data"].as_array().cloned().unwrap_or_default();
    let mut next = done["next"].as_str().map(str::to_owned);
    while let Some(url) = next {
        let page = get(&server.base, &key, &url).await;
        docs.extend(page["data"].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().map(str::to_owned);
    }
    let errors = get(&server.base, &key, &format!("{status_path}/errors")).await["errors"].clone();
    (done, docs, errors)
}

#[tokio::test]
async fn a_crawl_killed_mid_way_finishes_after_restart() {
    let site = CrawlSite::start(40);
    let body = json!({"url": site.url("/chain/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 2});
    let (done, sources) = killed_and_resumed(&site, "/v2/crawl", body).await;
    // /chain/0 .. /chain/CHAIN_LEN+1: the chain plus the two 404 pages past its end.
    let expected: BTreeSet<String> = (0..CHAIN_LEN + 2).map(|n| site.url(&format!("/chain/{n}"))).collect();
    assert_eq!(sources.into_iter().collect::<BTreeSet<String>>(), expected);
    assert_eq!(done["completed"].as_u64(), Some(expected.len() as u64));
}

/// Redirects that land on pages also linked directly: after a kill -9 and resume, still one
/// document per landing URL, the same set as an uninterrupted crawl's.
#[tokio::test]
async fn a_crawl_with_redirects_onto_linked_pages_keeps_each_page_once_across_a_kill() {
    let site = CrawlSite::start(40);
    let body =
        json!({"url": site.url("/hub/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 2});
    let (done, docs, _) = stopped_and_resumed_docs(&site, "/v2/crawl", body, Binary::kill9).await;
    let landed = crate::crawl::landing_urls(&docs);
    let expected: BTreeSet<String> = (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landed, expected);
    assert_eq!(done["completed"].as_u64(), Some(HUB_LEN as u64), "{done}");
    assert_eq!(done["total"].as_u64(), Some(HUB_LEN as u64), "{done}");
}

#[tokio::test]
async fn a_batch_killed_mid_way_finishes_after_restart() {
    let site = CrawlSite::start(40);
    let urls: Vec<String> = (0..40).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let (done, sources) =
        killed_and_resumed(&site, "/v2/batch/scrape", json!({"urls": urls, "maxConcurrency": 2})).await;
    let expected: BTreeSet<String> = urls.into_iter().collect();
    assert_eq!(sources.into_iter().collect::<BTreeSet<String>>(), expected);
    assert_eq!(done["completed"].as_u64(), Some(40));
}

/// A server stopped gracefully (SIGTERM) while a batch's pages wait at their site: its
/// actors stop, and the pages they had not fetched stay queued, none of them recorded as
/// failed; after the restart the batch finishes with every page.
#[tokio::test]
async fn a_batch_stopped_gracefully_mid_way_fails_no_page_and_finishes_after_restart() {
    let site = CrawlSite::start(200);
    let urls: Vec<String> = (0..60).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let body = json!({"urls": urls, "maxConcurrency": 30});
    let terminate = |server: Binary| drop(server.terminate());
    let (done, docs, errors) = stopped_and_resumed_docs(&site, "/v2/batch/scrape", body, terminate).await;
    assert_eq!(errors, json!([]), "no page failed at the stop");
    assert_eq!(done["completed"].as_u64(), Some(60), "{done}");
    let sources: BTreeSet<&str> = docs.iter().filter_map(|d| d["metadata"]["sourceURL"].as_str()).collect();
    assert_eq!(sources.len(), 60, "every page once");
}

/// Many jobs accepted at the same moment: each is made durable before it is acknowledged,
/// and none of those waits may stall the store (the server answers them all, and runs them).
#[tokio::test]
async fn many_jobs_accepted_at_once_are_all_acknowledged_and_run() {
    let site = CrawlSite::start(0);
    let app = crate::common::TestServer::start().await;
    let app = &app;
    let starts = (0..48).map(|n| {
        let body = serde_json::json!({"urls": [site.url(&format!("/chain/{n}"))]});
        async move { app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await }
    });
    let answers = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(starts))
        .await
        .expect("48 batches sent at once are all answered within a minute");
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "{answer}");
    }
    for (_, answer) in &answers {
        let id = answer["id"].as_str().expect("id");
        let done = app.wait_job(&format!("/v2/batch/scrape/{id}"), Duration::from_secs(60)).await;
        assert_eq!(done["status"], "completed", "{done}");
    }
}
