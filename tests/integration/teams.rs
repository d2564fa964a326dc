//! Teams: credits charged and refused (402) before any work, crawl limits shrinking to the
//! credits left, the team concurrency limit measured at the server, the request rate limit
//! (429 with Retry-After), usage endpoints, and the activity log with filter and cursor.

use std::time::Duration;

use ferrocrawl::config::TeamSettings;
use serde_json::{Value, json};

use crate::common::{CrawlSite, FixtureSite, KEY, TestServer, assert_error, wait_for};

const WAIT: Duration = Duration::from_secs(60);

async fn server_with(team: &str, key: &str, settings: TeamSettings) -> TestServer {
    let name = team.to_owned();
    TestServer::builder()
        .key(team, key)
        .settings(move |s| {
            s.teams.insert(name, settings);
        })
        .start()
        .await
}

#[tokio::test]
async fn credits_are_charged_and_enforced_before_work() {
    let site = FixtureSite::start();
    let app =
        server_with("small", "small-key", TeamSettings { credits: Some(3), ..Default::default() }).await;
    let post = |path: &'static str, body: Value| {
        let app = &app;
        async move { app.request_as("small-key", reqwest::Method::POST, path, Some(&body)).await }
    };
    let (status, body) = post("/v2/scrape", json!({"url": site.url("/article")})).await;
    assert_eq!((status, body["data"]["metadata"]["creditsUsed"].as_u64()), (200, Some(1)));
    let got = post(
        "/v2/batch/scrape",
        json!({"urls": [site.url("/notes.txt"), site.url("/data.json"), site.url("/missing")]}),
    )
    .await;
    let msg = assert_error(&got, 402, "INSUFFICIENT_CREDITS");
    assert!(msg.contains("3 needed, 2 remaining"), "{msg}");
    let (status, _) = post("/v2/scrape", json!({"url": site.url("/notes.txt"), "maxAge": 0})).await;
    assert_eq!(status, 200);
    let (_, usage) = app.request_as("small-key", reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(usage["data"]["remainingCredits"], 1);
    assert_eq!(usage["data"]["planCredits"], 3);
    let (status, _) = post("/v2/map", json!({"url": site.url("/article")})).await;
    assert_eq!(status, 200, "a map costs the last credit");
    let hits = site.hits("/data.json");
    let got = post("/v2/scrape", json!({"url": site.url("/data.json")})).await;
    assert_error(&got, 402, "INSUFFICIENT_CREDITS");
    assert_eq!(site.hits("/data.json"), hits, "no work is done without credits");
    let (_, tokens) = app.request_as("small-key", reqwest::Method::GET, "/v2/team/token-usage", None).await;
    assert_eq!(
        (tokens["data"]["remainingTokens"].as_u64(), tokens["data"]["planTokens"].as_u64()),
        (Some(0), Some(45))
    );
    let (_, history) =
        app.request_as("small-key", reqwest::Method::GET, "/v2/team/credit-usage/historical", None).await;
    assert_eq!(history["periods"][0]["creditsUsed"], 3);
    assert!(history["periods"][0]["startDate"].as_str().expect("date").ends_with("T00:00:00.000Z"));

    let (_, unlimited) = app.request(reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(
        (unlimited["data"]["unlimited"].as_bool(), &unlimited["data"]["planCredits"]),
        (Some(true), &Value::Null)
    );
    assert!(unlimited["data"]["remainingCredits"].as_u64().expect("number") > 1_000_000_000);
}

#[tokio::test]
async fn a_crawl_is_cut_to_the_credits_left() {
    let site = CrawlSite::start(0);
    let app = server_with("five", "five-key", TeamSettings { credits: Some(5), ..Default::default() }).await;
    let body =
        json!({"url": site.url("/chain/0"), "limit": 100, "sitemap": "skip", "crawlEntireDomain": true});
    let (_, started) = app.request_as("five-key", reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
    let id = started["id"].as_str().expect("id");
    let done = app.wait_job_as("five-key", &format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!((done["completed"].as_u64(), done["creditsUsed"].as_u64()), (Some(5), Some(5)));
    assert_eq!(site.starts("/chain/").len(), 5);
}

#[tokio::test]
async fn the_team_concurrency_limit_holds_across_jobs_and_scrapes() {
    let site = CrawlSite::start(120);
    let app =
        server_with("pair", "pair-key", TeamSettings { concurrency: Some(2), ..Default::default() }).await;
    let urls: Vec<String> = (0..8).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let (_, first) = app
        .request_as(
            "pair-key",
            reqwest::Method::POST,
            "/v2/batch/scrape",
            Some(&json!({"urls": urls, "maxConcurrency": 10})),
        )
        .await;
    let more: Vec<String> = (20..26).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let (_, second) = app
        .request_as("pair-key", reqwest::Method::POST, "/v2/batch/scrape", Some(&json!({"urls": more})))
        .await;
    // The batches fill the team's two slots; the rest waits.
    let check = wait_for("the team's slots fill", WAIT, || async {
        let (_, check) =
            app.request_as("pair-key", reqwest::Method::GET, "/v2/concurrency-check", None).await;
        (check["concurrency"] == 2).then_some(check)
    })
    .await;
    assert_eq!(check["maxConcurrency"], 2, "{check}");
    let (_, queue) = app.request_as("pair-key", reqwest::Method::GET, "/v2/team/queue-status", None).await;
    assert!(queue["waitingJobsInQueue"].as_u64().expect("waiting") > 0, "{queue}");
    assert_eq!(queue["activeJobsInQueue"], 2);
    let (status, scraped) = app
        .request_as(
            "pair-key",
            reqwest::Method::POST,
            "/v2/scrape",
            Some(&json!({"url": site.url("/chain/40")})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(scraped["data"]["metadata"]["concurrencyLimited"], true, "the scrape waited its turn");
    assert!(scraped["data"]["metadata"]["concurrencyQueueDurationMs"].as_u64().expect("duration") > 0);
    for started in [first, second] {
        let id = started["id"].as_str().expect("id");
        let done = app.wait_job_as("pair-key", &format!("/v2/batch/scrape/{id}"), WAIT).await;
        assert_eq!(done["status"], "completed");
        let limited = done["data"]
            .as_array()
            .expect("data")
            .iter()
            .filter(|d| d["metadata"]["concurrencyLimited"] == true)
            .count();
        assert!(limited > 0, "pages waited for the team limit");
    }
    assert_eq!(site.max_in_flight(), 2, "never more than the team's limit at the server");
    let (_, queue) = app.request_as("pair-key", reqwest::Method::GET, "/v2/team/queue-status", None).await;
    assert!(queue["mostRecentSuccess"].as_str().is_some_and(|t| t.ends_with('Z')), "{queue}");
}

#[tokio::test]
async fn the_request_rate_limit_answers_429_with_retry_after() {
    let app = server_with(
        "chatty",
        "chatty-key",
        TeamSettings { requests_per_minute: Some(2), ..Default::default() },
    )
    .await;
    let body = json!({"url": "http://rate.invalid/"});
    for _ in 0..2 {
        let (status, _) =
            app.request_as("chatty-key", reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
        assert_eq!(status, 200, "within the rate (the DNS failure is a 200 result)");
    }
    let resp = app
        .client()
        .post(format!("{}/v2/scrape", app.base))
        .bearer_auth("chatty-key")
        .json(&body)
        .send()
        .await
        .expect("post");
    let retry_after: u64 = resp
        .headers()
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let got = crate::common::decode(resp).await;
    assert!(assert_error(&got, 429, "RATE_LIMITED").contains("Rate limit exceeded"));
    let (status, _) = app.request_as("chatty-key", reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 200, "reads are not rate limited");
    let (status, _) = app.request(reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
    assert_eq!(status, 200, "other teams have their own budget");
}

#[tokio::test]
async fn the_activity_log_pages_newest_first() {
    let site = CrawlSite::start(0);
    let app = TestServer::builder().key("other", "other-key").start().await;
    let post = |path: &'static str, body: Value| {
        let app = &app;
        async move { app.request(reqwest::Method::POST, path, Some(&body)).await.1 }
    };
    let scrape = post("/v2/scrape", json!({"url": site.url("/about")})).await;
    let crawl = post("/v2/crawl", json!({"url": site.url("/chain/0"), "limit": 2})).await;
    let batch = post("/v2/batch/scrape", json!({"urls": [site.url("/orphan")]})).await;
    let map = post("/v2/map", json!({"url": site.url("/")})).await;
    let secret =
        post("/v2/scrape", json!({"url": site.url("/orphan?private"), "zeroDataRetention": true})).await;
    let ids = [
        secret["data"]["metadata"]["scrapeId"].clone(),
        map["id"].clone(),
        batch["id"].clone(),
        crawl["id"].clone(),
        scrape["data"]["metadata"]["scrapeId"].clone(),
    ];
    let (_, all) = app.request(reqwest::Method::GET, "/v2/team/activity", None).await;
    let got: Vec<Value> = all["data"].as_array().expect("data").iter().map(|r| r["id"].clone()).collect();
    assert_eq!(got, ids, "newest first: {all}");
    assert_eq!((all["has_more"].as_bool(), &all["cursor"]), (Some(false), &Value::Null));
    let first = &all["data"][0];
    assert_eq!((first["endpoint"].as_str(), first["api_version"].as_str()), (Some("scrape"), Some("v2")));
    assert!(first["target"].is_null(), "zero-data-retention work records no target");
    assert_eq!(all["data"][4]["target"], site.url("/about"));
    assert!(all["data"][4]["created_at"].as_str().expect("time").ends_with('Z'));

    let (_, page) = app.request(reqwest::Method::GET, "/v2/team/activity?limit=2", None).await;
    assert_eq!((page["data"].as_array().map(Vec::len), page["has_more"].as_bool()), (Some(2), Some(true)));
    let cursor = page["cursor"].as_str().expect("cursor");
    let (_, next) =
        app.request(reqwest::Method::GET, &format!("/v2/team/activity?limit=2&cursor={cursor}"), None).await;
    assert_eq!(next["data"][0]["id"], ids[2]);
    let (_, crawls) = app.request(reqwest::Method::GET, "/v2/team/activity?endpoint=crawl", None).await;
    assert_eq!(crawls["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(crawls["data"][0]["id"], ids[3]);
    let (_, theirs) = app.request_as("other-key", reqwest::Method::GET, "/v2/team/activity", None).await;
    assert_eq!(theirs["data"], json!([]));
    for bad in
        ["/v2/team/activity?endpoint=ftp", "/v2/team/activity?limit=101", "/v2/team/activity?cursor=abc"]
    {
        let got = app.request(reqwest::Method::GET, bad, None).await;
        assert_error(&got, 400, "BAD_REQUEST");
    }
    let _ = KEY;
}
