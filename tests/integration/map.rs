//! `POST /v2/map` against the local crawl site.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::{CrawlSite, TestServer, assert_error};

fn urls(reply: &Value, site: &CrawlSite) -> BTreeSet<String> {
    let base = site.url("");
    reply["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| {
            let url = l["url"].as_str().expect("url");
            url.strip_prefix(&base).map(str::to_owned).unwrap_or_else(|| url.to_owned())
        })
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn map_lists_page_links_and_sitemap_urls() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let (status, reply) =
        app.request(reqwest::Method::POST, "/v2/map", Some(&json!({"url": site.url("/")}))).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["success"], true);
    let sub = format!("http://b.site.localhost:{}/shop", site.port);
    let expected = set(&[
        "/",
        "/about",
        "/blog/",
        "/blog/post-1",
        "/docs/",
        "/missing-link",
        "/orphan",
        "/private/from-sitemap",
        "/private/secret",
        &sub,
    ]);
    assert_eq!(urls(&reply, &site), expected);
    let home = &reply["links"][0];
    assert_eq!((home["url"].as_str(), home["title"].as_str()), (Some(site.url("/").as_str()), Some("Home")));
    assert_eq!(site.hits("/blog/"), 0, "a map does not scrape the pages it lists");
}

#[tokio::test]
async fn map_options_filter_and_rank() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let map = |body: Value| {
        let app = &app;
        async move { app.request(reqwest::Method::POST, "/v2/map", Some(&body)).await.1 }
    };
    let reply = map(json!({"url": site.url("/"), "search": "post"})).await;
    assert_eq!(urls(&reply, &site), set(&["/blog/post-1"]));
    let reply = map(json!({"url": site.url("/"), "limit": 2})).await;
    assert_eq!(reply["links"].as_array().expect("links").len(), 2);
    let reply = map(json!({"url": site.url("/"), "sitemap": "only"})).await;
    assert_eq!(urls(&reply, &site), set(&["/blog/post-1", "/orphan", "/private/from-sitemap"]));
    let reply = map(json!({"url": site.url("/"), "sitemap": "skip", "includeSubdomains": false, "ignoreQueryParameters": false})).await;
    let got = urls(&reply, &site);
    assert!(got.contains("/blog/post-1?ref=home") && !got.iter().any(|u| u.contains("b.site")), "{got:?}");
    let reply = map(json!({"url": site.url("/blog/"), "sitemap": "skip"})).await;
    assert_eq!(urls(&reply, &site), set(&["/blog/", "/blog/post-1", "/blog/post-2", "/blog/post-3"]));
    let got =
        app.request(reqwest::Method::POST, "/v2/map", Some(&json!({"url": site.url("/"), "limit": 0}))).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("`limit`"));
    let got = app
        .request(reqwest::Method::POST, "/v2/map", Some(&json!({"url": site.url("/"), "maxDepth": 2})))
        .await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("`maxDepth`"));
    // A crawl's options the SDKs send along are taken: `delay` is checked as a crawl's,
    // and the answer says it changes nothing here; audit labels are objects.
    let reply = map(json!({"url": site.url("/"), "delay": 0.5})).await;
    assert_eq!(urls(&reply, &site).len(), reply["links"].as_array().expect("links").len(), "{reply}");
    assert!(reply["warning"].as_str().is_some_and(|w| w.contains("`delay` has no effect")), "{reply}");
    for (body, field) in [
        (json!({"url": site.url("/"), "delay": 61}), "`delay`"),
        (json!({"url": site.url("/"), "auditMetadata": [1]}), "`auditMetadata`"),
    ] {
        let got = app.request(reqwest::Method::POST, "/v2/map", Some(&body)).await;
        assert!(assert_error(&got, 400, "BAD_REQUEST").contains(field), "{body}");
    }
}
