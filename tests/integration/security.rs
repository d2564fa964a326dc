//! Authentication, team isolation and the outbound address policy (SSRF guard) of a scrape;
//! the policy on the other ways out is in `address_policy`.

use ferrocrawl::config::Settings;
use serde_json::json;

use crate::common::{FixtureSite, KEY, TestServer, assert_error};

/// A server that refuses private targets, `localhost` alone exempt.
pub(crate) async fn strict_server() -> TestServer {
    strict_server_with(|_| {}).await
}

/// [`strict_server`] with more settings.
pub(crate) async fn strict_server_with(more: impl FnOnce(&mut Settings)) -> TestServer {
    TestServer::builder()
        .settings(|s| {
            s.security.allow_private_targets = false;
            s.security.allowed_private_hosts = vec!["localhost".into()];
            more(s);
        })
        .start()
        .await
}

#[tokio::test]
async fn missing_or_wrong_keys_get_401() {
    let app = TestServer::start().await;
    let resp = app
        .client()
        .post(format!("{}/v2/scrape", app.base))
        .json(&json!({"url": "http://a.test/"}))
        .send()
        .await
        .expect("request");
    let got = crate::common::decode(resp).await;
    let msg = assert_error(&got, 401, "UNAUTHORIZED");
    assert!(msg.contains("Token missing"), "{msg}");
    let got = app
        .request_as("fc-wrong", reqwest::Method::POST, "/v2/scrape", Some(&json!({"url": "http://a.test/"})))
        .await;
    let msg = assert_error(&got, 401, "UNAUTHORIZED");
    assert!(msg.contains("Invalid token"), "{msg}");
    let got = app
        .request_as(KEY, reqwest::Method::GET, "/v2/scrape/0190b4a2-7c3e-7000-8000-000000000000", None)
        .await;
    assert_eq!(got.0, 404, "a valid key passes authentication");
}

#[tokio::test]
async fn private_targets_are_refused() {
    let site = FixtureSite::start();
    let app = strict_server().await;
    let got = app.scrape(json!({"url": site.url("/article")})).await;
    let msg = assert_error(&got, 400, "URL_BLOCKED");
    assert!(msg.contains("127.0.0.1"), "{msg}");
    for url in [
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://blog.localhost/",
    ] {
        let got = app.scrape(json!({"url": url})).await;
        assert_error(&got, 400, "URL_BLOCKED");
    }
    assert_eq!(site.hits("/article"), 0);
}

#[tokio::test]
async fn every_redirect_hop_is_checked() {
    let site = FixtureSite::start();
    let app = strict_server().await;
    // `localhost` is exempt, so the first hop is fetched; its redirect to 127.0.0.1 is not.
    let exempt = format!("http://localhost:{}/article", site.port);
    let (status, _) = app.scrape(json!({"url": exempt})).await;
    assert_eq!(status, 200);
    let got = app.scrape(json!({"url": format!("http://localhost:{}/to-private", site.port)})).await;
    assert_error(&got, 400, "URL_BLOCKED");
    assert_eq!(site.hits("/to-private"), 1);
    assert_eq!(site.hits("/article"), 1, "the private hop was never requested");
}

#[tokio::test]
async fn results_belong_to_their_team() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("rival", "rival-team-key").start().await;
    let (_, body) = app.scrape(json!({"url": site.url("/article")})).await;
    let id = body["data"]["metadata"]["scrapeId"].as_str().expect("id").to_owned();
    let got = app.request_as("rival-team-key", reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_error(&got, 404, "NOT_FOUND");
    let (status, _) = app.request(reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn zero_data_retention_needs_the_team_permission() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("basic", "basic-team-key").start().await;
    let body = json!({"url": site.url("/article"), "zeroDataRetention": true});
    let got = app.request_as("basic-team-key", reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
    let msg = assert_error(&got, 403, "FORBIDDEN");
    assert!(msg.contains("zeroDataRetention") && msg.contains("basic"), "{msg}");
    assert_eq!(site.hits("/article"), 0);
}
