//! Crawls end to end against the local crawl site: scope, robots.txt, sitemaps, dedup,
//! depth, limits, politeness measured at the server, paging, cancel, errors, active list,
//! and isolation between teams.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::crawlsite::HUB_LEN;
use crate::common::{CrawlSite, TestServer, wait_for};

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

/// The landing URLs (`metadata.url`) of `docs`, checked to be distinct.
pub(crate) fn landing_urls(docs: &[Value]) -> std::collections::BTreeSet<String> {
    let landed: Vec<String> =
        docs.iter().map(|d| d["metadata"]["url"].as_str().expect("metadata.url").to_owned()).collect();
    let set: std::collections::BTreeSet<String> = landed.iter().cloned().collect();
    assert_eq!(set.len(), landed.len(), "a page was returned twice: {landed:?}");
    set
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

/// A link that redirects to a page the crawl also reaches directly does not return that
/// page twice; the dropped fetch is not billed, and the counts are of documents returned.
#[tokio::test]
async fn redirects_onto_linked_pages_return_each_page_once() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let id = app
        .start_crawl(json!({"url": site.url("/hub/0"), "sitemap": "skip", "crawlEntireDomain": true}))
        .await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    let docs = done["data"].as_array().expect("data");
    let expected: std::collections::BTreeSet<String> =
        (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landing_urls(docs), expected);
    assert_eq!(done["completed"].as_u64(), Some(HUB_LEN as u64), "{done}");
    assert_eq!(done["total"].as_u64(), Some(HUB_LEN as u64));
    assert_eq!(done["creditsUsed"].as_u64(), Some(HUB_LEN as u64), "one credit per document returned");
    assert!(site.hits("/go/5") > 0, "the redirects were followed");
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

#[tokio::test]
async fn limit_delay_and_concurrency_hold_at_the_server() {
    let app = TestServer::start().await;
    let site = CrawlSite::start(0);
    let id = app
        .start_crawl(
            json!({"url": site.url("/chain/0"), "limit": 5, "sitemap": "skip", "crawlEntireDomain": true}),
        )
        .await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["completed"], 5);
    assert_eq!(site.starts("/chain/").len(), 5, "nothing beyond the limit is fetched");

    let site = CrawlSite::start(0);
    let body = json!({"url": site.url("/chain/0"), "limit": 4, "sitemap": "skip", "crawlEntireDomain": true, "delay": 0.3});
    let id = app.start_crawl(body).await;
    app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(site.max_in_flight(), 1, "a delay means one request at a time");
    let starts = site.starts("/chain/");
    assert_eq!(starts.len(), 4);
    for pair in starts.windows(2) {
        assert!(pair[1] - pair[0] >= Duration::from_millis(280), "requests {:?} apart", pair[1] - pair[0]);
    }

    let site = CrawlSite::start(80);
    let body = json!({"url": site.url("/chain/0"), "limit": 30, "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 2});
    let id = app.start_crawl(body).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["completed"], 30);
    assert_eq!(site.max_in_flight(), 2, "maxConcurrency caps requests in flight (and allows that many)");
}

#[tokio::test]
async fn site_politeness_holds_across_jobs() {
    let site = CrawlSite::start(60);
    let app = TestServer::builder().settings(|s| s.crawl.domain_concurrency = 2).start().await;
    let body = json!({"url": site.url("/chain/0"), "limit": 20, "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 5});
    let a = app.start_crawl(body.clone()).await;
    let b = app.start_crawl(body).await;
    app.wait_job(&format!("/v2/crawl/{a}"), WAIT).await;
    app.wait_job(&format!("/v2/crawl/{b}"), WAIT).await;
    assert_eq!(site.max_in_flight(), 2, "two crawls of one site share its concurrency cap");
}

/// Two sites of one host (two ports here, as `http://` and `https://` of one host are two
/// sites) share the host's concurrency limit and spacing on a node.
#[tokio::test]
async fn two_sites_of_one_host_share_its_concurrency_limit() {
    let mut site = CrawlSite::start(60);
    let other = site.listen_again();
    let app = TestServer::builder().settings(|s| s.crawl.domain_concurrency = 1).start().await;
    let crawl = |url: String| json!({"url": url, "limit": 12, "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 5});
    let a = app.start_crawl(crawl(site.url("/chain/0"))).await;
    let b = app.start_crawl(crawl(format!("http://site.localhost:{other}/chain/0"))).await;
    for id in [a, b] {
        let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
        assert_eq!(done["completed"], 12, "{done}");
    }
    assert_eq!(site.max_in_flight_at("site.localhost"), 1, "one request at a time to the host");
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let id = app.start_crawl(json!({"url": site.url("/flaky"), "sitemap": "skip"})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["completed"], 1);
    assert_eq!(done["data"][0]["metadata"]["statusCode"], 200, "the 429 was retried");
    let starts = site.starts("/flaky");
    assert_eq!(starts.len(), 2);
    assert!(starts[1] - starts[0] >= Duration::from_millis(950), "waited {:?}", starts[1] - starts[0]);
}

#[tokio::test]
async fn status_pages_with_next_links() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let id = app
        .start_crawl(
            json!({"url": site.url("/chain/0"), "limit": 7, "sitemap": "skip", "crawlEntireDomain": true}),
        )
        .await;
    app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    let (_, first) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}?limit=3"), None).await;
    assert_eq!(first["data"].as_array().expect("data").len(), 3);
    assert_eq!(first["next"], format!("{}/v2/crawl/{id}?skip=3&limit=3", app.base));
    let all = app.collect_pages(crate::common::KEY, first).await;
    let docs = all["data"].as_array().expect("data");
    assert_eq!(docs.len(), 7);
    let mut sources: Vec<&str> = docs.iter().filter_map(|d| d["metadata"]["sourceURL"].as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    assert_eq!(sources.len(), 7, "pages do not repeat across status pages");
    let (_, last) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}?skip=6&limit=3"), None).await;
    assert!(last.get("next").is_none(), "{last}");
    let got = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}?limit=0"), None).await;
    let msg = crate::common::assert_error(&got, 400, "BAD_REQUEST");
    assert!(msg.contains("`limit`"), "{msg}");
    // Behind a proxy: next follows the forwarded scheme and host.
    let resp = app
        .client()
        .get(format!("{}/v2/crawl/{id}?limit=2", app.base))
        .bearer_auth(crate::common::KEY)
        .header("X-Forwarded-Proto", "https")
        .header("X-Forwarded-Host", "crawl.example.com")
        .send()
        .await
        .expect("get");
    let (_, body) = crate::common::decode(resp).await;
    assert_eq!(body["next"], format!("https://crawl.example.com/v2/crawl/{id}?skip=2&limit=2"));
}

#[tokio::test]
async fn public_url_shapes_returned_links() {
    let site = CrawlSite::start(0);
    let app = TestServer::builder()
        .settings(|s| s.server.public_url = "https://api.example.org/".into())
        .start()
        .await;
    let (_, started) = app.request(reqwest::Method::POST, "/v2/crawl", Some(&json!({"url": site.url("/chain/0"), "limit": 3, "sitemap": "skip", "crawlEntireDomain": true}))).await;
    let id = started["id"].as_str().expect("id");
    assert_eq!(started["url"], format!("https://api.example.org/v2/crawl/{id}"));
    app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    let (_, body) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}?limit=1"), None).await;
    assert_eq!(body["next"], format!("https://api.example.org/v2/crawl/{id}?skip=1&limit=1"));
}

#[tokio::test]
async fn cancel_stops_fetching_and_is_reported() {
    let site = CrawlSite::start(150);
    let app = TestServer::start().await;
    let id = app.start_crawl(json!({"url": site.url("/chain/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 1})).await;
    wait_for("the crawl fetches pages", WAIT, || async { (site.starts("/chain/").len() >= 2).then_some(()) })
        .await;
    let (status, body) = app.request(reqwest::Method::DELETE, &format!("/v2/crawl/{id}"), None).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("cancelled")), "{body}");
    let cancelled_at = std::time::Instant::now();
    let (_, now) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}"), None).await;
    assert_eq!(now["status"], "cancelled");
    // Uncancelled, a page would start every ~150 ms (the site's answer time): six of them
    // without one is the proof. A request under way at the cancel may arrive just after it.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let starts = site.starts("/chain/");
    let late = starts.iter().filter(|at| **at > cancelled_at + Duration::from_millis(100)).count();
    assert_eq!(late, 0, "nothing new is fetched after cancel");
    assert!(starts.len() < 6, "{} pages fetched", starts.len());
    let (status, _) = app.request(reqwest::Method::DELETE, &format!("/v2/crawl/{id}"), None).await;
    assert_eq!(status, 200, "cancelling twice is harmless");

    let site = CrawlSite::start(0);
    let id = app.start_crawl(json!({"url": site.url("/chain/0"), "limit": 2, "sitemap": "skip"})).await;
    app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    let got = app.request(reqwest::Method::DELETE, &format!("/v2/crawl/{id}"), None).await;
    let msg = crate::common::assert_error(&got, 409, "CONFLICT");
    assert!(msg.contains("already completed"), "{msg}");
}

#[tokio::test]
async fn failed_pages_are_listed_in_errors() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let id = app.start_crawl(json!({"url": site.url("/about"), "sitemap": "skip", "crawlEntireDomain": true, "maxDiscoveryDepth": 1})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(pages(&done), paths(&["/", "/about"]));
    let (_, errors) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}/errors"), None).await;
    let list = errors["errors"].as_array().expect("errors");
    assert_eq!(list.len(), 1, "{errors}");
    assert!(list[0]["url"].as_str().expect("url").ends_with("/files/manual.pdf"));
    assert_eq!(list[0]["code"], "SCRAPE_DOCUMENT_UNREADABLE");
    assert!(list[0]["timestamp"].as_str().expect("ts").ends_with('Z') && list[0]["id"].is_string());
    // A start URL robots.txt forbids: nothing fetched, the URL reported.
    let id = app.start_crawl(json!({"url": site.url("/private/start"), "sitemap": "skip"})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!((done["status"].as_str(), done["completed"].as_u64()), (Some("completed"), Some(0)));
    assert_eq!(site.hits("/private/start"), 0);
    let (_, errors) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}/errors"), None).await;
    assert_eq!(errors["robotsBlocked"], json!([site.url("/private/start")]));
}

#[tokio::test]
async fn active_crawls_and_other_teams() {
    let site = CrawlSite::start(100);
    let app = TestServer::builder().key("rival", "rival-team-key").start().await;
    let id = app
        .start_crawl(json!({"url": site.url("/chain/0"), "limit": 8, "sitemap": "skip", "maxConcurrency": 1}))
        .await;
    let (_, active) = app.request(reqwest::Method::GET, "/v2/crawl/active", None).await;
    let crawls = active["crawls"].as_array().expect("crawls");
    assert_eq!(crawls.len(), 1, "{active}");
    assert_eq!(crawls[0]["id"], id);
    assert_eq!(crawls[0]["teamId"], "default");
    assert_eq!(crawls[0]["options"]["limit"], 8);
    let (_, ongoing) = app.request(reqwest::Method::GET, "/v2/crawl/ongoing", None).await;
    assert_eq!(ongoing["crawls"], active["crawls"]);
    let rival = |method: reqwest::Method, path: String| {
        let app = &app;
        async move { app.request_as("rival-team-key", method, &path, None).await }
    };
    let (_, theirs) = rival(reqwest::Method::GET, "/v2/crawl/active".into()).await;
    assert_eq!(theirs["crawls"], json!([]));
    for (method, path) in [
        (reqwest::Method::GET, format!("/v2/crawl/{id}")),
        (reqwest::Method::GET, format!("/v2/crawl/{id}/errors")),
        (reqwest::Method::DELETE, format!("/v2/crawl/{id}")),
    ] {
        let got = rival(method, path).await;
        crate::common::assert_error(&got, 404, "NOT_FOUND");
    }
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["status"], "completed", "the rival's cancel did nothing");
    let (_, active) = app.request(reqwest::Method::GET, "/v2/crawl/active", None).await;
    assert_eq!(active["crawls"], json!([]));
}

fn files_contain(dir: &std::path::Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_dir() {
            files_contain(&path, needle)
        } else {
            std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        }
    })
}

#[tokio::test]
async fn zero_data_retention_crawls_leave_nothing_on_disk() {
    let site = CrawlSite::start(0);
    // Control: an ordinary crawl does store its pages, so the check below can fail.
    let ordinary = TestServer::start().await;
    let id = ordinary
        .start_crawl(
            json!({"url": site.url("/chain/0"), "limit": 2, "sitemap": "skip", "crawlEntireDomain": true}),
        )
        .await;
    ordinary.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    let ordinary_dir = ordinary.stop();
    assert!(files_contain(ordinary_dir.path(), b"Link number"));

    let app = TestServer::start().await;
    let body = json!({"url": site.url("/chain/0"), "limit": 4, "sitemap": "skip", "crawlEntireDomain": true, "zeroDataRetention": true});
    let id = app.start_crawl(body).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["completed"], 4);
    assert!(done["data"][0]["markdown"].as_str().expect("md").contains("Link number"));
    let data_dir = app.stop();
    assert!(!files_contain(data_dir.path(), b"Link number"), "page text was written to disk");
    assert!(!files_contain(data_dir.path(), b"/chain/1"), "URLs were written to disk");

    let app = TestServer::builder().key("plain", "plain-team-key").start().await;
    let body = json!({"url": site.url("/chain/0"), "zeroDataRetention": true});
    let got = app.request_as("plain-team-key", reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
    crate::common::assert_error(&got, 403, "FORBIDDEN");
}

#[tokio::test]
async fn idempotency_keys_start_a_crawl_once() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let send = || async {
        let resp = app
            .client()
            .post(format!("{}/v2/crawl", app.base))
            .bearer_auth(crate::common::KEY)
            .header("x-idempotency-key", "nightly-2026-11-23")
            .json(&json!({"url": site.url("/chain/0"), "limit": 2}))
            .send()
            .await
            .expect("post");
        crate::common::decode(resp).await
    };
    let (status, first) = send().await;
    assert_eq!(status, 200, "{first}");
    let got = send().await;
    let msg = crate::common::assert_error(&got, 409, "CONFLICT");
    assert!(msg.contains("Idempotency key already used"));
}

#[tokio::test]
async fn robots_crawl_delay_spaces_requests() {
    let site = CrawlSite::start(0);
    let app = TestServer::start().await;
    let start = format!("http://polite.localhost:{}/p/0", site.port);
    let id = app.start_crawl(json!({"url": start, "limit": 3, "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 4})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["completed"], 3);
    let starts = site.starts("/p/");
    assert_eq!(starts.len(), 3);
    for pair in starts.windows(2) {
        assert!(pair[1] - pair[0] >= Duration::from_millis(950), "requests {:?} apart", pair[1] - pair[0]);
    }
}
