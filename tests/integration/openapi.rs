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
