//! Batch scrape end to end: invalid URL handling both ways, results and paging, duplicates,
//! concurrency measured at the server, cancel, errors, appending, and team isolation.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{CrawlSite, FixtureSite, TestServer, assert_error, wait_for};

const WAIT: Duration = Duration::from_secs(60);

fn sources(status: &Value) -> Vec<String> {
    let mut out: Vec<String> = status["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d["metadata"]["sourceURL"].as_str().expect("source").to_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_batch_scrapes_every_valid_url_once() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let body = json!({
        "urls": [site.url("/article"), "not a url", site.url("/notes.txt"), site.url("/article"), site.url("/missing"), 42],
        "formats": ["markdown", "links"],
    });
    let (status, started) = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["invalidURLs"], json!(["not a url", "42"]));
    let id = started["id"].as_str().expect("id");
    assert_eq!(started["url"], format!("{}/v2/batch/scrape/{id}", app.base));
    let done = app.wait_job(&format!("/v2/batch/scrape/{id}"), WAIT).await;
    assert_eq!(done["status"], "completed", "{done}");
    let mut expected = vec![site.url("/article"), site.url("/missing"), site.url("/notes.txt")];
    expected.sort();
    assert_eq!(sources(&done), expected);
    assert_eq!(site.hits("/article"), 1, "duplicates are scraped once");
    assert_eq!(done["creditsUsed"], 3);
    let article = done["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|d| d["metadata"]["sourceURL"] == site.url("/article"))
        .expect("article");
    assert!(article["markdown"].as_str().expect("md").contains("# Growing Tomatoes at Home"));
    assert!(article["links"].as_array().is_some_and(|l| !l.is_empty()), "requested formats apply");
    assert_eq!(site.hits("/news"), 0, "a batch does not follow links");

    let (_, page) = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{id}?limit=2"), None).await;
    assert_eq!(page["next"], format!("{}/v2/batch/scrape/{id}?skip=2&limit=2", app.base));
    let (_, crawl_view) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}"), None).await;
    assert_eq!(crawl_view["code"], "NOT_FOUND", "a batch is not a crawl");
}

#[tokio::test]
async fn invalid_urls_can_fail_the_request() {
    let app = TestServer::start().await;
    let body =
        json!({"urls": ["http://ok.example.com/", "ftp://files.example.com/x"], "ignoreInvalidURLs": false});
    let got = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    let msg = assert_error(&got, 400, "BAD_REQUEST");
    assert!(msg.contains("`urls[1]`") && msg.contains("ftp://files.example.com/x"), "{msg}");
    assert!(got.1.get("invalidURLs").is_none());
    let got =
        app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&json!({"urls": ["nope", ""]}))).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("No valid URLs provided"));
    for (body, field) in [
        (json!({}), "`urls`"),
        (json!({"urls": []}), "`urls`"),
        (json!({"urls": "http://a.example.com/"}), "`urls`"),
        (json!({"urls": ["http://a.example.com/"], "maxConcurrency": 0}), "`maxConcurrency`"),
        (json!({"urls": ["http://a.example.com/"], "timeout": 5}), "`timeout`"),
        (json!({"urls": ["http://a.example.com/"], "url": "http://a.example.com/"}), "`url`"),
    ] {
        let got = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
        assert!(assert_error(&got, 400, "BAD_REQUEST").contains(field), "{body}");
    }
}

#[tokio::test]
async fn concurrency_cancel_errors_and_append() {
    let site = CrawlSite::start(100);
    let app = TestServer::builder().key("rival", "rival-team-key").start().await;
    let urls: Vec<String> = (0..12).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let (_, started) = app
        .request(reqwest::Method::POST, "/v2/batch/scrape", Some(&json!({"urls": urls, "maxConcurrency": 2})))
        .await;
    let id = started["id"].as_str().expect("id").to_owned();
    let got =
        app.request_as("rival-team-key", reqwest::Method::GET, &format!("/v2/batch/scrape/{id}"), None).await;
    assert_error(&got, 404, "NOT_FOUND");
    let done = app.wait_job(&format!("/v2/batch/scrape/{id}"), WAIT).await;
    assert_eq!(done["completed"], 12);
    assert_eq!(site.max_in_flight(), 2, "maxConcurrency holds at the server");

    // Append to the finished batch: it reopens and scrapes only what is new.
    let more = json!({"urls": [site.url("/chain/3"), site.url("/about"), site.url("/files/manual.pdf")], "appendToId": id});
    let (status, appended) = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&more)).await;
    assert_eq!((status, appended["id"].as_str()), (200, Some(id.as_str())), "{appended}");
    let done = app.wait_job(&format!("/v2/batch/scrape/{id}"), WAIT).await;
    assert_eq!(done["completed"], 13, "{done}");
    assert_eq!(site.hits("/chain/3"), 1);
    let (_, errors) = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{id}/errors"), None).await;
    assert_eq!(errors["errors"][0]["code"], "SCRAPE_DOCUMENT_UNREADABLE", "{errors}");
    let unknown = json!({"urls": [site.url("/about")], "appendToId": "0190b4a2-7c3e-7000-8000-000000000000"});
    let got = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&unknown)).await;
    assert_error(&got, 404, "NOT_FOUND");

    let slow: Vec<String> = (20..50).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let (_, started) = app
        .request(reqwest::Method::POST, "/v2/batch/scrape", Some(&json!({"urls": slow, "maxConcurrency": 1})))
        .await;
    let id = started["id"].as_str().expect("id").to_owned();
    let slow_started = || {
        site.requests()
            .iter()
            .any(|r| r.rsplit("/chain/").next().and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n >= 20))
    };
    wait_for("the slow batch starts", WAIT, || async { slow_started().then_some(()) }).await;
    let (status, cancelled) =
        app.request(reqwest::Method::DELETE, &format!("/v2/batch/scrape/{id}"), None).await;
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")));
    let (_, now) = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{id}"), None).await;
    assert_eq!(now["status"], "cancelled");
    assert!(now["completed"].as_u64().expect("completed") < 10, "{now}");
}
