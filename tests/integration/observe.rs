//! What an operator watches: every response (errors too) carries a request id, the one the
//! client sent or a new one, also in the JSON error; `GET /metrics` counts requests by route
//! template, never by raw path.

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
}
