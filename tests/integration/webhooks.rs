//! Webhooks end to end against a local receiver: every event in order with the contract's
//! body, HMAC signatures, the events filter, retries while the receiver is down, delivery
//! after a restart, and the address policy.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::process::Binary;
use crate::common::{CrawlSite, FixtureSite, Receiver, TestServer, assert_error, decode, wait_for};

const WAIT: Duration = Duration::from_secs(60);
const SECRET: &str = "test-webhook-secret-0123";

fn hmac_hex(secret: &str, body: &[u8]) -> String {
    ferrocrawl::actors::webhook::signature(secret, body)
}

async fn signed_server() -> TestServer {
    TestServer::builder()
        .settings(|s| {
            s.teams.entry("default".into()).or_default().webhook_secret = Some(SECRET.into());
            s.webhooks.max_backoff_secs = 1;
            s.webhooks.poll_ms = 100;
        })
        .start()
        .await
}

fn types(events: &[crate::common::receiver::Received]) -> Vec<String> {
    events.iter().map(|e| e.body["type"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test]
async fn a_batch_reports_every_event_signed_and_in_order() {
    let site = FixtureSite::start();
    let hooks = Receiver::start();
    let app = signed_server().await;
    let webhook = json!({"url": hooks.url, "headers": {"X-Run": "nightly"}, "metadata": {"run": "42"}});
    let urls = json!([site.url("/article"), site.url("/notes.txt"), site.url("/image.png")]);
    let (status, started) = app
        .request(reqwest::Method::POST, "/v2/batch/scrape", Some(&json!({"urls": urls, "webhook": webhook})))
        .await;
    assert_eq!(status, 200, "{started}");
    let posted_ms = ferrocrawl::model::time::now_ms();
    let id = started["id"].as_str().expect("id");
    let events = hooks.wait_for(5, WAIT).await;
    let kinds = types(&events);
    assert_eq!(kinds.first().map(String::as_str), Some("batch_scrape.started"));
    assert_eq!(kinds.last().map(String::as_str), Some("batch_scrape.completed"));
    assert_eq!(kinds.iter().filter(|k| *k == "batch_scrape.page").count(), 3, "{kinds:?}");
    let mut ids: Vec<&str> =
        events.iter().map(|e| e.body["webhookId"].as_str().expect("webhookId")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5, "every event has its own webhookId");
    for event in &events {
        assert_eq!(event.body["id"], id);
        assert_eq!(event.body["metadata"], json!({"run": "42"}));
        assert_eq!(event.header("x-run"), Some("nightly"));
        assert_eq!(event.header("content-type"), Some("application/json"));
        let expected = hmac_hex(SECRET, &event.raw);
        assert_eq!(event.header("x-service-signature"), Some(expected.as_str()), "signature of the raw body");
        assert_eq!(event.header("x-firecrawl-signature"), Some(expected.as_str()));
        let happened: u64 =
            event.header("x-service-event-time").and_then(|t| t.parse().ok()).expect("event time");
        assert!(happened + 60_000 > posted_ms && happened <= ferrocrawl::model::time::now_ms());
    }
    let completed = events.last().expect("completed");
    assert_eq!((&completed.body["success"], &completed.body["data"]), (&json!(true), &json!([])));
    let page = |source: &str| {
        events
            .iter()
            .find(|e| {
                e.body["type"] == "batch_scrape.page" && e.body["data"][0]["metadata"]["sourceURL"] == source
            })
            .cloned()
    };
    let article = page(&site.url("/article")).expect("article event");
    assert_eq!(article.body["success"], true);
    assert!(article.body["data"][0]["markdown"].as_str().expect("md").contains("Growing Tomatoes"));
    let failed = page(&site.url("/image.png")).expect("failed page event");
    assert_eq!(failed.body["success"], false);
    assert!(failed.body["error"].as_str().expect("error").contains("image/png"));
}

/// A team that never had a secret set still signs every delivery, with a secret of its own
/// that the data directory keeps (and `ferrocrawl teams secret` prints).
#[tokio::test]
async fn teams_without_a_configured_secret_sign_with_their_own() {
    let site = FixtureSite::start();
    let hooks = Receiver::start();
    let app = TestServer::builder().key("fresh", "fresh-team-key").start().await;
    let body = json!({"urls": [site.url("/article")], "webhook": hooks.url});
    let (status, started) =
        app.request_as("fresh-team-key", reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let events = hooks.wait_for(3, WAIT).await;
    let data = app.stop();
    let store = ferrocrawl::store::Store::open(data.path()).expect("store");
    let team = ferrocrawl::model::TeamId::parse("fresh").expect("team");
    let secret = store.teams.webhook_secret(&team, None).expect("the team's secret");
    assert!(secret.starts_with("whsec-"), "{secret}");
    for event in &events {
        let expected = hmac_hex(&secret, &event.raw);
        assert_eq!(event.header("x-service-signature"), Some(expected.as_str()), "{:?}", event.body["type"]);
        assert_eq!(event.header("x-firecrawl-signature"), Some(expected.as_str()));
    }
}

#[tokio::test]
async fn crawl_events_follow_the_filter() {
    let site = CrawlSite::start(0);
    let hooks = Receiver::start();
    let app = signed_server().await;
    let body = json!({"url": site.url("/chain/0"), "limit": 3, "sitemap": "skip", "crawlEntireDomain": true,
                      "webhook": {"url": hooks.url, "events": ["completed"]}});
    let id = app.start_crawl(body).await;
    app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    // A job's events are delivered in order and `completed` is its last: once it is in,
    // any event the filter let through by mistake is in too.
    let events = wait_for("the completed event", WAIT, || async {
        let got = hooks.accepted();
        types(&got).contains(&"crawl.completed".to_owned()).then_some(got)
    })
    .await;
    assert_eq!(types(&events), vec!["crawl.completed"], "only the wanted kind");
    assert_eq!(events[0].body["id"], id);
    assert_eq!(events[0].body["metadata"], json!({}));
}

#[tokio::test]
async fn deliveries_are_retried_until_the_receiver_is_back_and_stay_in_order() {
    let site = CrawlSite::start(0);
    let hooks = Receiver::start();
    hooks.down_for(Duration::from_secs(3));
    let app = signed_server().await;
    let urls: Vec<String> = (0..4).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let (_, started) = app
        .request(
            reqwest::Method::POST,
            "/v2/batch/scrape",
            Some(&json!({"urls": urls, "webhook": hooks.url})),
        )
        .await;
    let id = started["id"].as_str().expect("id").to_owned();
    app.wait_job(&format!("/v2/batch/scrape/{id}"), WAIT).await;
    let events = hooks.wait_for(6, WAIT).await;
    assert!(hooks.refused() >= 1, "the receiver was down at first");
    let kinds = types(&events);
    assert_eq!(kinds[0], "batch_scrape.started");
    assert_eq!(kinds[5], "batch_scrape.completed", "{kinds:?}");
    assert!(kinds[1..5].iter().all(|k| k == "batch_scrape.page"), "{kinds:?}");
}

#[tokio::test]
async fn private_receivers_are_refused() {
    let app = TestServer::builder().settings(|s| s.security.allow_private_targets = false).start().await;
    let body = json!({"urls": ["http://a.example.com/"], "webhook": "http://10.1.2.3/hook"});
    let got = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert!(assert_error(&got, 400, "URL_BLOCKED").contains("`webhook.url`"));
}

#[tokio::test]
async fn queued_deliveries_survive_a_restart() {
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let site = CrawlSite::start(0);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port_holder = listener.local_addr().expect("addr");
    let hooks = Receiver::start_on(listener);
    hooks.down_for(Duration::from_secs(3600));
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("FERROCRAWL_WEBHOOKS__MAX_BACKOFF_SECS", "1"), ("FERROCRAWL_WEBHOOKS__POLL_MS", "100")];
    let server = Binary::serve(dir.path(), &env);
    let (key, client) = (server.key(), reqwest::Client::builder().no_proxy().build().expect("client"));
    let body = json!({"urls": [site.url("/chain/1"), site.url("/chain/2")], "webhook": hooks.url});
    let (_, started) = server.post("/v2/batch/scrape", &body).await;
    let id = started["id"].as_str().expect("id").to_owned();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let resp = client
            .get(format!("{}/v2/batch/scrape/{id}", server.base))
            .bearer_auth(&key)
            .send()
            .await
            .expect("get");
        let (_, status) = decode(resp).await;
        if status["status"] == "completed" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(hooks.accepted().is_empty());
    server.kill9();
    drop(hooks);
    let hooks =
        Receiver::start_on(std::net::TcpListener::bind(port_holder).expect("rebind the receiver's port"));
    let _server = Binary::serve(dir.path(), &env);
    let events = hooks.wait_for(4, WAIT).await;
    let kinds: Vec<Value> = events.iter().map(|e| e.body["type"].clone()).collect();
    assert_eq!(
        kinds,
        vec![
            json!("batch_scrape.started"),
            json!("batch_scrape.page"),
            json!("batch_scrape.page"),
            json!("batch_scrape.completed")
        ]
    );
    assert!(events.iter().all(|e| e.body["id"] == id));
}
