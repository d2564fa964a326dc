//! What an operator watches: every response (errors too) carries a request id, the one the
//! client sent or a new one, also in the JSON error; `GET /metrics` counts requests by route
//! template, never by raw path, and can be kept to API keys.

use crate::common::{FixtureSite, KEY, TestServer};

#[tokio::test]
async fn every_response_carries_a_request_id_and_metrics_count_routes() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let client = app.client();

    // The client's id comes back, on a success and on an error (in the envelope too).
    let body = serde_json::json!({"url": site.url("/article")});
    let ok = client
        .post(format!("{}/v2/scrape", app.base))
        .bearer_auth(KEY)
        .header("x-request-id", "client-chosen-42")
        .json(&body)
        .send()
        .await
        .expect("scrape");
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["x-request-id"], "client-chosen-42");
    let missing = uuid::Uuid::now_v7();
    let error = client
        .get(format!("{}/v2/crawl/{missing}", app.base))
        .bearer_auth(KEY)
        .header("x-request-id", "client-chosen-43")
        .send()
        .await
        .expect("crawl status");
    assert_eq!(error.status(), 404);
    assert_eq!(error.headers()["x-request-id"], "client-chosen-43");
    let envelope: serde_json::Value = error.json().await.expect("json");
    assert_eq!(envelope["requestId"], "client-chosen-43", "{envelope}");

    // No id, or an unusable one: a new id, also on actix's own errors (unknown route).
    for given in [None, Some("has spaces in it")] {
        let mut request = client.get(format!("{}/v2/no-such-route", app.base)).bearer_auth(KEY);
        if let Some(given) = given {
            request = request.header("x-request-id", given);
        }
        let answer = request.send().await.expect("unknown route");
        assert_eq!(answer.status(), 404);
        let id = answer.headers()["x-request-id"].to_str().expect("ascii").to_owned();
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "a fresh id: {id}");
        let envelope: serde_json::Value = answer.json().await.expect("json");
        assert_eq!(envelope["requestId"], id.as_str(), "{envelope}");
    }

    // Metrics: by route template; the job id of the path is no label.
    let text = client.get(format!("{}/metrics", app.base)).send().await.expect("metrics");
    assert_eq!(text.status(), 200);
    let text = text.text().await.expect("text");
    assert!(
        text.lines().any(|l| l.starts_with("http_requests_total")
            && l.contains(r#"route="/v2/crawl/{id}""#)
            && l.contains(r#"status="404""#)),
        "{text}"
    );
    assert!(text.contains("http_request_duration_seconds_bucket"), "{text}");
    assert!(!text.contains(&missing.to_string()), "no id as a label");

    // A batch's pages are counted as they settle; the gauges are read when scraped.
    let body = serde_json::json!({"urls": [site.url("/article"), site.url("/missing")]});
    let (status, started) = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"));
    let done = app.wait_job(&path, std::time::Duration::from_secs(60)).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = client.get(format!("{}/metrics", app.base)).send().await.expect("metrics");
    let text = text.text().await.expect("text");
    let value = |series: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("{series}: {text}"));
        line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a number")
    };
    assert!(value(r#"pages_settled_total{kind="batch",outcome="page"}"#) >= 2.0, "{text}");
    assert!(value("credits_charged_total") >= 3.0, "{text}");
    assert!(value("process_resident_memory_bytes") > 1e6, "{text}");
    assert!(value("process_open_fds") > 3.0, "{text}");
    assert!(value("store_disk_bytes") > 0.0, "{text}");
    assert!(value("store_disk_free_bytes") > 0.0, "{text}");
    assert_eq!(value("store_short_of_space"), 0.0, "{text}");
    assert!(value(r#"jobs_started_total{kind="batch"}"#) >= 1.0, "{text}");
    assert!(value(r#"jobs_finished_total{kind="batch",status="completed"}"#) >= 1.0, "{text}");
    assert!(value("browser_tabs_capacity") >= 1.0, "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("scrapes_total{")
            && l.contains(r#"engine="http""#)
            && l.contains(r#"outcome="ok""#)),
        "{text}"
    );
    assert!(text.contains("scrape_retrieve_seconds_bucket"), "{text}");
    for gauge in [
        "domain_actors",
        "jobs_running",
        "browser_sessions",
        "pages_cut_short_total",
        "webhook_outbox_events",
        "frontier_pages",
        "browser_processes",
        "browser_tabs_busy",
        "browser_tabs_waiting",
    ] {
        value(gauge);
    }
}

#[tokio::test]
async fn metrics_can_require_a_key() {
    let app = TestServer::builder().settings(|s| s.metrics.require_key = true).start().await;
    let url = format!("{}/metrics", app.base);
    let refused = app.client().get(&url).send().await.expect("metrics");
    assert_eq!(refused.status(), 401);
    let envelope: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(envelope["code"], "UNAUTHORIZED", "{envelope}");
    let served = app.client().get(&url).bearer_auth(KEY).send().await.expect("metrics");
    assert_eq!(served.status(), 200);
    assert!(served.text().await.expect("text").contains("http_requests_total"));
}

#[tokio::test]
async fn metrics_can_move_to_an_address_of_their_own() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = free.local_addr().expect("addr").to_string();
    drop(free);
    let listen = address.clone();
    let app = TestServer::builder().settings(move |s| s.metrics.listen = listen).start().await;
    let on_api = app.client().get(format!("{}/metrics", app.base)).send().await.expect("metrics");
    assert_eq!(on_api.status(), 404, "no longer on the API's port");
    let (status, _) = app.request(reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 200);
    let own = app.client().get(format!("http://{address}/metrics")).send().await.expect("metrics");
    assert_eq!(own.status(), 200);
    assert!(own.headers().contains_key("x-request-id"));
    let text = own.text().await.expect("text");
    assert!(text.contains(r#"route="/v2/team/credit-usage""#), "{text}");
    let elsewhere =
        app.client().get(format!("http://{address}/v2/team/credit-usage")).send().await.expect("get");
    assert_eq!(elsewhere.status(), 404, "only /metrics there");
}
