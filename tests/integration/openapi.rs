//! The served OpenAPI document matches what the server accepts: every documented scrape
//! field is accepted, an undocumented one is refused, and documented bounds are enforced.

use serde_json::{Value, json};

use crate::common::{TestServer, assert_error};

#[tokio::test]
async fn document_matches_the_scrape_endpoint() {
    let app = TestServer::start().await;
    let resp = app.client().get(format!("{}/v2/openapi.json", app.base)).send().await.expect("get");
    assert_eq!(resp.status(), 200);
    let doc: Value = resp.json().await.expect("json");
    assert!(doc["paths"]["/v2/scrape"]["post"].is_object());
    assert!(doc["paths"]["/v2/scrape/{id}"]["get"].is_object());
    let schema = &doc["components"]["schemas"]["ScrapeRequest"];
    assert_eq!(schema["required"], json!(["url"]));
    let props = schema["properties"].as_object().expect("properties");
    assert!(props.len() > 20, "{props:?}");
    let url = "http://a.example.com/";

    for (schema, path) in
        [("ScrapeRequest", "/v2/scrape"), ("CrawlRequest", "/v2/crawl"), ("MapRequest", "/v2/map")]
    {
        let documented = doc["components"]["schemas"][schema]["properties"].as_object().expect("properties");
        assert!(documented.len() > 5, "{schema} documents its keys: {documented:?}");
        assert!(doc["paths"][path]["post"].is_object(), "{path} is documented");
        for name in documented.keys().filter(|k| *k != "url") {
            let body = json!({"url": "ftp://refused.example/", name: null});
            let (status, reply) = app.request(reqwest::Method::POST, path, Some(&body)).await;
            // The only complaint may be about the URL, never about the documented key.
            assert_eq!(status, 400, "{path} {name}: {reply}");
            let msg = reply["error"].as_str().unwrap_or_default();
            assert!(!msg.contains("Unrecognized key"), "{path}: documented `{name}` was refused: {msg}");
            assert!(msg.contains("`url`"), "{path} {name}: {msg}");
        }
        let got =
            app.request(reqwest::Method::POST, path, Some(&json!({"url": url, "notInTheDocument": 1}))).await;
        assert!(assert_error(&got, 400, "BAD_REQUEST").contains("notInTheDocument"), "{path}");
    }
    let got = app.scrape(json!({"url": url, "notInTheDocument": true})).await;
    let msg = assert_error(&got, 400, "BAD_REQUEST");
    assert!(msg.contains("Unrecognized key") && msg.contains("notInTheDocument"), "{msg}");

    // Batch: every documented key is accepted (the complaint is about the URL list only).
    let documented =
        doc["components"]["schemas"]["BatchScrapeRequest"]["properties"].as_object().expect("properties");
    assert!(documented.len() > 5, "the batch request documents its keys: {documented:?}");
    for name in documented.keys().filter(|k| *k != "urls") {
        let body = json!({"urls": ["ftp://refused.example/"], name: null});
        let (status, reply) = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
        let msg = reply["error"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{name}: {reply}");
        assert!(msg.contains("No valid URLs"), "batch: documented `{name}` was refused: {msg}");
    }

    let timeout = &props["timeout"];
    let min = timeout["minimum"].as_u64().expect("minimum");
    let max = timeout["maximum"].as_u64().expect("maximum");
    // A `.invalid` host passes validation and then fails to resolve, without any network.
    let target = "http://bounds.invalid/";
    for value in [min - 1, max + 1] {
        let got = app.scrape(json!({"url": target, "timeout": value})).await;
        let msg = assert_error(&got, 400, "BAD_REQUEST");
        assert!(msg.contains("`timeout`"), "{value}: {msg}");
    }
    for value in [min, max] {
        let got = app.scrape(json!({"url": target, "timeout": value})).await;
        assert_error(&got, 200, "SCRAPE_DNS_RESOLUTION_ERROR");
    }
}

/// Every route the server serves, as its path template (kept with the `configure`
/// functions of `src/api`).
const SERVED: &[&str] = &[
    "/",
    "/health",
    "/ready",
    "/metrics",
    "/v2/openapi.json",
    "/v2/scrape",
    "/v2/scrape/{id}",
    "/v2/scrape/{id}/interact",
    "/v2/browser",
    "/v2/browser/{sessionId}",
    "/v2/browser/{sessionId}/execute",
    "/v2/interact",
    "/v2/interact/{sessionId}",
    "/v2/interact/{sessionId}/execute",
    "/v2/live/{token}",
    "/v2/live/{token}/frame",
    "/v2/live/{token}/input",
    "/v2/live/{token}/stream",
    "/v2/cdp/{token}",
    "/v2/cdp/{token}/page",
    "/v2/crawl",
    "/v2/crawl/active",
    "/v2/crawl/ongoing",
    "/v2/crawl/{id}",
    "/v2/crawl/{id}/errors",
    "/v2/batch/scrape",
    "/v2/batch/scrape/{id}",
    "/v2/batch/scrape/{id}/errors",
    "/v2/map",
    "/v2/search",
    "/v2/parse",
    "/v2/parse/formats",
    "/v2/team/credit-usage",
    "/v2/team/credit-usage/historical",
    "/v2/team/token-usage",
    "/v2/team/token-usage/historical",
    "/v2/team/queue-status",
    "/v2/concurrency-check",
    "/v2/team/activity",
    "/v2/files/{name}",
    "/v2/cluster",
    "/v2/cluster/members/{name}",
    "/v2/crawl/params-preview",
    "/v2/support/docs-search",
    "/v2/extract",
    "/v2/extract/{id}",
    "/v2/agent",
    "/v2/agent/{id}",
];

#[tokio::test]
async fn every_served_route_is_documented_with_its_methods_and_error_envelope() {
    let app = TestServer::start().await;
    let doc: Value = app
        .client()
        .get(format!("{}/v2/openapi.json", app.base))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    let paths = doc["paths"].as_object().expect("paths");
    let mut documented: Vec<&str> = paths.keys().map(String::as_str).collect();
    documented.sort_unstable();
    let mut served = SERVED.to_vec();
    served.sort_unstable();
    assert_eq!(documented, served, "the document lists exactly the served routes");
    for (template, item) in paths {
        let ops = item.as_object().expect("operations");
        for (method, op) in ops {
            assert_eq!(
                op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {template} describes its errors"
            );
            let responses = op["responses"].as_object().expect("responses");
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{method} {template} describes its success"
            );
        }
        // A method the route does not take: 405 naming the ones it does, which proves the
        // template is served as documented (an unserved one would be a 404).
        let concrete = template
            .replace("{id}", "0194f3a0-0000-7000-8000-000000000000")
            .replace("{sessionId}", "s")
            .replace("{token}", "t")
            .replace("{name}", "n");
        let resp = app
            .client()
            .request(reqwest::Method::PATCH, format!("{}{concrete}", app.base))
            .send()
            .await
            .expect("patch");
        assert_eq!(resp.status(), 405, "PATCH {template}");
        let allow = resp.headers().get("allow").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let mut allowed: Vec<String> = allow.split(", ").map(str::to_owned).collect();
        allowed.sort_unstable();
        let mut expected: Vec<String> = ops.keys().map(|m| m.to_ascii_uppercase()).collect();
        expected.sort_unstable();
        assert_eq!(allowed, expected, "Allow of {template}");
    }
}
