//! `POST /v2/scrape` end to end: formats, main content, metadata, target errors, stored
//! results.

use serde_json::json;

use crate::common::{FixtureSite, TestServer, assert_error};

#[tokio::test]
async fn article_markdown_keeps_the_content_and_drops_the_chrome() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("# Growing Tomatoes at Home"), "{md}");
    assert!(md.contains("most rewarding plants"), "{md}");
    for boilerplate in ["We use cookies", "About us", "Popular posts", "All rights reserved"] {
        assert!(!md.contains(boilerplate), "`{boilerplate}` leaked into: {md}");
    }
    // GFM table with a header row, fenced code with its language, nested list.
    assert!(md.contains("| Variety | Days to harvest | Best for |"), "{md}");
    assert!(md.contains("| Roma | 75 | Sauce |"), "{md}");
    assert!(md.contains("```python\ndef water(days):"), "{md}");
    assert!(md.contains("- Prepare the bed\n  - Loosen the soil"), "{md}");
    assert!(md.contains("1. Stake the plants\n2. Prune the suckers"), "{md}");
    // Relative links and images become absolute.
    assert!(md.contains(&format!("[soil guide]({})", site.url("/guides/soil"))), "{md}");
    assert!(md.contains(&format!("![Ripe tomatoes on the vine]({})", site.url("/img/tomato.jpg"))), "{md}");
    // Only the requested format is present.
    let data = body["data"].as_object().expect("data");
    assert!(!data.contains_key("html") && !data.contains_key("rawHtml") && !data.contains_key("links"));
}

/// A short page has little text for the main-content filter to go on; its chrome and
/// boilerplate boxes still never reach the Markdown, unless the caller names them.
#[tokio::test]
async fn a_short_post_drops_its_chrome_too() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": site.url("/short-post")})).await;
    assert_eq!(status, 200, "{body}");
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("cover the dahlias tonight") && md.contains("dry and cool"), "{md}");
    for boilerplate in [
        "We use cookies",
        "Accept all",
        "Garden Weekly",
        "About us",
        "Ann Gardner",
        "3 comments",
        "Read next",
        "weekly letter",
        "Popular posts",
        "All rights reserved",
    ] {
        assert!(!md.contains(boilerplate), "`{boilerplate}` leaked into: {md}");
    }
    let (_, named) = app
        .scrape(json!({"url": site.url("/short-post"), "includeTags": ["#cookie", "nav"], "maxAge": 0}))
        .await;
    let md = named["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("We use cookies") && md.contains("About us"), "named in includeTags: {md}");
}

#[tokio::test]
async fn every_basic_format_on_request() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app
        .scrape(json!({"url": site.url("/article"), "formats": ["markdown", "html", "rawHtml", "links", "images"]}))
        .await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert!(data["rawHtml"].as_str().expect("rawHtml").contains("cookie-banner"));
    let html = data["html"].as_str().expect("html");
    assert!(
        html.contains("Varieties compared") && !html.contains("<script") && !html.contains("cookie-banner")
    );
    let links: Vec<&str> =
        data["links"].as_array().expect("links").iter().filter_map(|v| v.as_str()).collect();
    assert!(links.contains(&site.url("/news").as_str()), "{links:?}");
    assert!(links.contains(&"https://seeds.example.org/catalog"), "{links:?}");
    let images: Vec<&str> =
        data["images"].as_array().expect("images").iter().filter_map(|v| v.as_str()).collect();
    assert!(images.contains(&site.url("/img/tomato.jpg").as_str()), "{images:?}");
}

#[tokio::test]
async fn full_page_when_only_main_content_is_off() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, body) =
        app.scrape(json!({"url": site.url("/article"), "onlyMainContent": false, "blockAds": false})).await;
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("Popular posts") && md.contains("About us") && md.contains("most rewarding"), "{md}");
    assert!(md.contains("We use cookies"), "blockAds off keeps the banner: {md}");
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "onlyMainContent": false})).await;
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("Popular posts") && !md.contains("We use cookies"), "{md}");
}

#[tokio::test]
async fn include_and_exclude_tags() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "includeTags": ["table", "ol"]})).await;
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("| Cherry | 60 | Snacking |") && md.contains("Stake the plants"), "{md}");
    assert!(!md.contains("most rewarding"), "{md}");
    let (_, body) = app.scrape(json!({"url": site.url("/article"), "excludeTags": ["table", "pre"]})).await;
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("most rewarding") && !md.contains("Cherry") && !md.contains("def water"), "{md}");
}

#[tokio::test]
async fn metadata_follows_the_contract() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, body) = app.scrape(json!({"url": site.url("/redirect"), "formats": ["markdown"]})).await;
    let meta = &body["data"]["metadata"];
    assert_eq!(meta["title"], "Growing Tomatoes at Home");
    assert_eq!(meta["description"], "A practical guide to tomatoes.");
    assert_eq!(meta["language"], "en");
    assert_eq!(meta["keywords"], "tomatoes, garden");
    assert_eq!(meta["ogTitle"], "Tomato Guide");
    assert_eq!(meta["og:title"], "Tomato Guide");
    assert_eq!(meta["twitter:card"], "summary");
    assert_eq!(meta["article:tag"], json!(["garden", "food"]));
    assert_eq!(meta["favicon"], site.url("/favicon.ico"));
    assert_eq!(meta["sourceURL"], site.url("/redirect"));
    assert_eq!(meta["url"], site.url("/article"), "url is the final URL after redirects");
    assert_eq!(meta["statusCode"], 200);
    assert_eq!(meta["contentType"], "text/html; charset=utf-8");
    assert_eq!(meta["proxyUsed"], "basic");
    assert_eq!(meta["creditsUsed"], 1);
    assert_eq!(meta["cacheState"], "miss");
    let scrape_id = meta["scrapeId"].as_str().expect("scrapeId");
    assert_eq!(scrape_id.len(), 36);
}

#[tokio::test]
async fn stored_results_are_retrievable_by_id() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, body) = app.scrape(json!({"url": site.url("/article")})).await;
    let id = body["data"]["metadata"]["scrapeId"].as_str().expect("id").to_owned();
    let (status, stored) = app.request(reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["data"], body["data"]);
    let unknown = "0190b4a2-7c3e-7000-8000-000000000000";
    let got = app.request(reqwest::Method::GET, &format!("/v2/scrape/{unknown}"), None).await;
    assert_error(&got, 404, "NOT_FOUND");
}

#[tokio::test]
async fn target_status_errors_are_results_not_api_errors() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": site.url("/missing")})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["metadata"]["statusCode"], 404);
    assert_eq!(body["data"]["metadata"]["error"], "Not Found");
    assert!(body["data"]["markdown"].as_str().expect("md").contains("does not exist"));
    let (_, body) = app.scrape(json!({"url": site.url("/server-error")})).await;
    assert_eq!(body["data"]["metadata"]["statusCode"], 500);
}

#[tokio::test]
async fn non_html_content() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, body) = app.scrape(json!({"url": site.url("/data.json")})).await;
    assert_eq!(body["data"]["markdown"], "```json\n{\"plants\": [\"tomato\", \"basil\"]}\n```");
    let (_, body) = app.scrape(json!({"url": site.url("/notes.txt")})).await;
    assert_eq!(body["data"]["markdown"], "Plain *notes*: water at dawn.");
    let (_, body) = app.scrape(json!({"url": site.url("/notes.txt"), "formats": ["rawBase64"]})).await;
    assert_eq!(body["data"]["rawBase64"], "UGxhaW4gKm5vdGVzKjogd2F0ZXIgYXQgZGF3bi4=");
    let got = app.scrape(json!({"url": site.url("/file.pdf")})).await;
    let msg = assert_error(&got, 422, "SCRAPE_DOCUMENT_UNREADABLE");
    assert!(msg.contains("PDF"), "{msg}");
    let got = app.scrape(json!({"url": site.url("/image.png")})).await;
    assert_error(&got, 415, "SCRAPE_UNSUPPORTED_FILE_ERROR");
}

#[tokio::test]
async fn attributes_format() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app
        .scrape(json!({"url": site.url("/article"), "formats": [{"type": "attributes", "selectors": [{"selector": "nav a", "attribute": "href"}]}]}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["attributes"],
        json!([{"selector": "nav a", "attribute": "href", "values": ["/news", "/shop", "/about"]}])
    );
}
