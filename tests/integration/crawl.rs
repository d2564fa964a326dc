//! Crawls end to end against the local crawl site: scope, robots.txt, sitemaps, dedup,
//! depth, limits, politeness measured at the server, paging, cancel, errors, active list,
//! and isolation between teams.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{CrawlSite, TestServer};

const WAIT: Duration = Duration::from_secs(60);

/// Source URL path → number of documents with it.
fn pages(status: &Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for doc in status["data"].as_array().expect("data") {
        let source = doc["metadata"]["sourceURL"].as_str().expect("sourceURL");
        let url = url::Url::parse(source).expect("url");
        let key = match url.query() {
            Some(q) => format!(
                "{}{}?{q}",
                url.host_str().unwrap_or_default().replace("site.localhost", ""),
                url.path()
            ),
            None => {
                format!("{}{}", url.host_str().unwrap_or_default().replace("site.localhost", ""), url.path())
            }
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

fn paths(list: &[&str]) -> BTreeMap<String, usize> {
    list.iter().map(|p| ((*p).to_owned(), 1)).collect()
}

#[tokio::test]
async fn a_default_crawl_follows_links_and_sitemaps_politely() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let id = app.start_crawl(json!({"url": site.url("/")})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["success"], true);
    let expected = paths(&[
        "/",
        "/about",
        "/blog/",
        "/blog/post-1",
        "/blog/post-1?ref=home",
        "/blog/post-2",
        "/blog/post-3",
        "/docs/",
        "/docs/a",
        "/docs/a/deep",
        "/docs/a/deep/deeper",
        "/missing-link",
        "/orphan",
    ]);
    assert_eq!(pages(&done), expected, "every reachable page exactly once");
    assert_eq!(done["completed"], expected.len());
    assert_eq!(done["total"], expected.len());
    assert_eq!(done["creditsUsed"], expected.len());
    assert!(done.get("next").is_none());
    assert_eq!(site.hits("/private/secret") + site.hits("/private/from-sitemap"), 0, "robots.txt is obeyed");
    assert_eq!(
        site.hits("/blog/") + site.hits("/blog") + site.hits("/blog/index.html"),
        1,
        "similar URLs are one page"
    );
    assert_eq!(site.hits("/logo.png"), 0);
    assert!(
        !site
            .requests()
            .iter()
            .any(|r| r.starts_with("b.site.localhost") || r.starts_with("other.localhost"))
    );
    let redirected = done["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|d| d["metadata"]["sourceURL"].as_str().is_some_and(|s| s.ends_with("/blog/post-3")))
        .expect("post 3");
    assert!(redirected["metadata"]["url"].as_str().expect("url").ends_with("/blog/post-3-final"));
    assert!(redirected["markdown"].as_str().expect("md").contains("Third post"));
    let (status, errors) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}/errors"), None).await;
    assert_eq!(status, 200);
    let blocked: Vec<&str> =
        errors["robotsBlocked"].as_array().expect("blocked").iter().filter_map(Value::as_str).collect();
    assert_eq!(blocked.len(), 2, "{errors}");
    assert!(blocked.iter().all(|u| u.contains("/private/")));
    assert!(done["warning"].as_str().is_some_and(|w| w.contains("robots.txt")));
}

#[tokio::test]
async fn scope_options_change_what_is_followed() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let run = |body: Value| {
        let app = &app;
        async move {
            let id = app.start_crawl(body).await;
            app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await
        }
    };
    // Only under the start path by default.
    let done = run(json!({"url": site.url("/docs/"), "sitemap": "skip"})).await;
    assert_eq!(pages(&done), paths(&["/docs/", "/docs/a", "/docs/a/deep", "/docs/a/deep/deeper"]));
    let done = run(json!({"url": site.url("/docs/a"), "sitemap": "skip", "crawlEntireDomain": true, "limit": 50, "maxDiscoveryDepth": 1})).await;
    assert_eq!(pages(&done), paths(&["/docs/a", "/docs/a/deep"]));
    // Depth: start 0, its links 1.
    let done = run(json!({"url": site.url("/"), "sitemap": "skip", "maxDiscoveryDepth": 1})).await;
    assert_eq!(
        pages(&done),
        paths(&["/", "/about", "/blog/", "/blog/post-1", "/blog/post-1?ref=home", "/docs/", "/missing-link"])
    );
    // Include patterns: the start page fails them (reported as an error) but leads on.
    let done = run(json!({"url": site.url("/"), "sitemap": "skip", "includePaths": ["^/blog/post"]})).await;
    assert_eq!(
        pages(&done),
        paths(&["/blog/post-1", "/blog/post-1?ref=home", "/blog/post-2", "/blog/post-3"])
    );
    let done =
        run(json!({"url": site.url("/"), "sitemap": "skip", "excludePaths": ["^/blog", "^/docs/a"]})).await;
    assert_eq!(pages(&done), paths(&["/", "/about", "/docs/", "/missing-link"]));
    // Queries ignored; similar-URL dedup off.
    let done = run(json!({"url": site.url("/"), "sitemap": "skip", "maxDiscoveryDepth": 1, "ignoreQueryParameters": true})).await;
    assert!(!pages(&done).contains_key("/blog/post-1?ref=home"));
    let done = run(json!({"url": site.url("/"), "sitemap": "skip", "maxDiscoveryDepth": 1, "deduplicateSimilarURLs": false})).await;
    let got = pages(&done);
    assert!(
        got.contains_key("/blog") && got.contains_key("/blog/") && got.contains_key("/blog/index.html"),
        "{got:?}"
    );
    assert!(got.contains_key("www./about") && got.contains_key("/about"), "{got:?}");
}

#[tokio::test]
async fn sitemap_modes_subdomains_and_external_links() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let id = app.start_crawl(json!({"url": site.url("/"), "sitemap": "only"})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(pages(&done), paths(&["/", "/blog/post-1", "/orphan"]), "sitemap only: no link following");
    let id = app
        .start_crawl(
            json!({"url": site.url("/"), "sitemap": "skip", "maxDiscoveryDepth": 1, "allowSubdomains": true}),
        )
        .await;
    let got = pages(&app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await);
    assert!(got.contains_key("b./shop") && !got.contains_key("other.localhost/elsewhere"), "{got:?}");
    let id = app.start_crawl(json!({"url": site.url("/"), "sitemap": "skip", "maxDiscoveryDepth": 1, "allowExternalLinks": true})).await;
    let got = pages(&app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await);
    assert!(got.contains_key("other.localhost/elsewhere"), "{got:?}");
    // A sitemap as the start URL: its pages are the start.
    let id = app.start_crawl(json!({"url": site.url("/sitemap.xml"), "sitemap": "only"})).await;
    let got = pages(&app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await);
    assert_eq!(got, paths(&["/blog/post-1", "/orphan"]));
}
