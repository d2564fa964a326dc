//! The outbound address policy on every way out beside a scrape (`security`): a crawl's
//! start page and the links and redirects it follows, a map, a batch's pages, the results a
//! search scrapes, a webhook whose receiver's name resolves to a private address at
//! delivery, and targets fetched through the enhanced proxy. A strict server (private
//! targets refused, `localhost` alone exempt) sends nothing to a private address: the
//! fixtures record what they were asked, and of which host.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::process::Binary;
use crate::common::searchsite::FakeSearxng;
use crate::common::{FixtureSite, ProxyServer, Receiver, TestServer, assert_error, wait_for};
use crate::security::{strict_server, strict_server_with};

const WAIT: Duration = Duration::from_secs(30);

/// `path` of `site` through the exempt name `localhost`.
fn exempt(site: &FixtureSite, path: &str) -> String {
    format!("http://localhost:{}{path}", site.port)
}

/// `path` of `site` through a name of loopback that is not exempt.
fn named(site: &FixtureSite, path: &str) -> String {
    format!("http://private.localhost:{}{path}", site.port)
}

/// Asserts that `site` was asked nothing at its address (`127.0.0.1`) or through a name of
/// it other than the exempt `localhost`.
fn nothing_asked_privately(site: &FixtureSite) {
    for host in ["127.0.0.1", "private.localhost"] {
        assert_eq!(site.requests_to(host), Vec::<String>::new(), "asked of {host}");
    }
}

/// The failed pages of the job at `path` (`/v2/{crawl|batch/scrape}/ID`): URL and code.
async fn errors(app: &TestServer, path: &str) -> Vec<(String, String)> {
    let (status, body) = app.request(Method::GET, &format!("{path}/errors"), None).await;
    assert_eq!(status, 200, "{body}");
    let field = |e: &Value, name: &str| e[name].as_str().unwrap_or_default().to_owned();
    let list = body["errors"].as_array().cloned().unwrap_or_default();
    let mut found: Vec<(String, String)> = list.iter().map(|e| (field(e, "url"), field(e, "code"))).collect();
    found.sort();
    found
}

/// The source URLs of a finished job's documents, sorted.
fn sources(job: &Value) -> Vec<String> {
    let docs = job["data"].as_array().cloned().unwrap_or_default();
    let mut urls: Vec<String> =
        docs.iter().filter_map(|d| d["metadata"]["sourceURL"].as_str().map(str::to_owned)).collect();
    urls.sort();
    urls
}

/// A crawl whose start page is at a private address is accepted, fetches nothing, and
/// ends with the start page failed as blocked.
#[tokio::test]
async fn a_crawl_of_a_private_start_page_asks_nothing() {
    let site = FixtureSite::start();
    let app = strict_server().await;
    for start in [site.url("/links-to-private"), named(&site, "/links-to-private")] {
        let id = app.start_crawl(json!({"url": start, "limit": 5})).await;
        let path = format!("/v2/crawl/{id}");
        let job = app.wait_job(&path, WAIT).await;
        assert_eq!(sources(&job), Vec::<String>::new(), "{job}");
        assert_eq!(errors(&app, &path).await, [(start.clone(), "URL_BLOCKED".to_owned())], "{job}");
    }
    nothing_asked_privately(&site);
}

/// A crawl from an exempt page that links to private addresses, and to a page of its own
/// that redirects to one, with external links allowed: the exempt pages are crawled, and
/// every private page fails as blocked without a request.
#[tokio::test]
async fn a_crawl_follows_no_link_or_redirect_to_a_private_address() {
    let site = FixtureSite::start();
    let app = strict_server().await;
    let start = exempt(&site, "/links-to-private");
    let body = json!({"url": start, "limit": 20, "crawlEntireDomain": true, "allowExternalLinks": true,
        "sitemap": "skip"});
    let id = app.start_crawl(body).await;
    let path = format!("/v2/crawl/{id}");
    let job = app.wait_job(&path, WAIT).await;
    assert_eq!(job["status"], "completed", "{job}");
    let crawled = sources(&job);
    for page in [&start, &exempt(&site, "/short-post")] {
        assert!(crawled.contains(page), "{page} crawled: {crawled:?}");
    }
    let failed = errors(&app, &path).await;
    let blocked: Vec<&String> =
        failed.iter().filter(|(_, code)| code == "URL_BLOCKED").map(|(u, _)| u).collect();
    for page in [exempt(&site, "/to-private"), site.url("/private/linked"), named(&site, "/private/named")] {
        assert!(blocked.contains(&&page), "{page} failed as blocked: {failed:?}");
    }
    assert_eq!(site.hits("/to-private"), 1, "the exempt first hop of the redirect");
    assert_eq!(site.hits("/article"), 0, "its private second hop");
    nothing_asked_privately(&site);
}

/// A map of a private start page (or of one redirecting to a private address), its site's
/// sitemaps included, asks nothing there and finds nothing, as for any start page that
/// cannot be read; a map of an exempt page lists its links to private addresses without
/// asking any of them.
#[tokio::test]
async fn a_map_asks_no_private_address() {
    let site = FixtureSite::start();
    let app = strict_server().await;
    let private =
        [site.url("/links-to-private"), named(&site, "/links-to-private"), exempt(&site, "/to-private")];
    for start in private {
        let (status, body) = app.request(Method::POST, "/v2/map", Some(&json!({"url": start}))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["links"], json!([]), "{body}");
    }
    let start = exempt(&site, "/links-to-private");
    let body = json!({"url": start, "filterByPath": false, "allowExternalLinks": true});
    let (status, body) = app.request(Method::POST, "/v2/map", Some(&body)).await;
    assert_eq!(status, 200, "{body}");
    let links: Vec<&str> =
        body["links"].as_array().expect("links").iter().filter_map(|l| l["url"].as_str()).collect();
    assert!(links.contains(&site.url("/private/linked").as_str()), "listed, not fetched: {links:?}");
    assert_eq!(site.hits("/to-private"), 1, "the redirect's exempt first hop");
    assert_eq!(site.hits("/article"), 0, "its private second hop");
    nothing_asked_privately(&site);
}

/// A batch with private URLs among exempt ones is accepted (a private URL is a valid URL;
/// whether a name is private is known only when it is resolved): each private page fails as
/// blocked without a request, the exempt ones are scraped.
#[tokio::test]
async fn a_batch_fails_its_private_pages_without_asking_them() {
    let site = FixtureSite::start();
    let app = strict_server().await;
    let private = [site.url("/article"), named(&site, "/short-post"), exempt(&site, "/to-private")];
    let allowed = exempt(&site, "/notes.txt");
    let urls: Vec<&String> = private.iter().chain([&allowed]).collect();
    let (status, started) = app.request(Method::POST, "/v2/batch/scrape", Some(&json!({"urls": urls}))).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["invalidURLs"], json!([]), "{started}");
    let path = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"));
    let job = app.wait_job(&path, WAIT).await;
    assert_eq!(job["status"], "completed", "{job}");
    let scraped: Vec<String> = job["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter(|d| d["metadata"]["statusCode"] == 200)
        .filter_map(|d| d["metadata"]["sourceURL"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(scraped, [allowed], "{job}");
    let mut blocked: Vec<(String, String)> =
        private.iter().map(|url| (url.clone(), "URL_BLOCKED".to_owned())).collect();
    blocked.sort();
    assert_eq!(errors(&app, &path).await, blocked, "{job}");
    assert_eq!(site.hits("/notes.txt"), 1);
    assert_eq!(site.hits("/to-private"), 1, "the redirect's exempt first hop");
    assert_eq!(site.hits("/article") + site.hits("/short-post"), 0, "the private pages");
    nothing_asked_privately(&site);
}

/// A search whose provider returns private URLs, with `scrapeOptions`: those results are
/// answered with the blocked error and never fetched; an exempt result is scraped.
#[tokio::test]
async fn search_results_at_private_addresses_are_not_scraped() {
    let site = FixtureSite::start();
    let private = [site.url("/article"), named(&site, "/short-post")];
    let allowed = exempt(&site, "/notes.txt");
    let searxng = FakeSearxng::answering(private.iter().chain([&allowed]).cloned().collect());
    let provider = searxng.url.clone();
    let app = strict_server_with(move |s| {
        s.search.providers = vec!["searxng".into()];
        s.search.searxng_url = provider;
    })
    .await;
    let body = json!({"query": "tomatoes", "scrapeOptions": {"formats": ["markdown"]}});
    let (status, answer) = app.request(Method::POST, "/v2/search", Some(&body)).await;
    assert_eq!(status, 200, "{answer}");
    let results = answer["data"]["web"].as_array().expect("web results");
    assert_eq!(results.len(), 3, "{answer}");
    for result in results {
        let url = result["url"].as_str().expect("url");
        if url == allowed {
            assert_eq!(result["metadata"]["statusCode"], 200, "{result}");
            assert!(result["markdown"].as_str().is_some_and(|m| m.contains("water at dawn")), "{result}");
        } else {
            assert_eq!(result["metadata"]["statusCode"], 400, "{result}");
            assert!(result["metadata"]["error"].as_str().is_some(), "{result}");
            assert_eq!(result.get("markdown"), None, "{result}");
        }
    }
    assert_eq!(site.hits("/notes.txt"), 1);
    assert_eq!(site.hits("/article") + site.hits("/short-post"), 0, "the private results");
    nothing_asked_privately(&site);
}

/// A webhook whose receiver is a name (not exempt) of a loopback address passes the check
/// at submission (only an address can be judged there) and is refused at delivery, where
/// the name is resolved: the receiver gets nothing, and the refusals show on `/metrics`
/// and in the log.
#[tokio::test]
async fn a_webhook_to_a_name_of_a_private_address_is_never_delivered() {
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let site = FixtureSite::start();
    let hooks = Receiver::start();
    let hook = hooks.url.replace("127.0.0.1", "hook.localhost");
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [
        ("FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS", "false"),
        ("FERROCRAWL_SECURITY__ALLOWED_PRIVATE_HOSTS", r#"["localhost"]"#),
        ("FERROCRAWL_WEBHOOKS__POLL_MS", "100"),
    ];
    let server = Binary::serve(dir.path(), &env);
    let (key, client) = (server.key(), reqwest::Client::builder().no_proxy().build().expect("client"));
    let body = json!({"urls": [exempt(&site, "/notes.txt")], "webhook": hook});
    let (status, started) = server.post("/v2/batch/scrape", &body).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("{}/v2/batch/scrape/{}", server.base, started["id"].as_str().expect("id"));
    let job = wait_for("the batch to finish", WAIT, || async {
        let resp = client.get(&path).bearer_auth(&key).send().await.expect("status");
        let (_, job) = crate::common::decode(resp).await;
        (job["status"] == "completed").then_some(job)
    })
    .await;
    assert_eq!(job["completed"], 1, "{job}");
    // Started, the page and completed: three events, each refused (none retried).
    wait_for("three refused deliveries on /metrics", WAIT, || async {
        let text = client.get(format!("{}/metrics", server.base)).send().await.expect("metrics");
        let text = text.text().await.expect("metrics text");
        let refused = text
            .lines()
            .find(|l| l.starts_with("webhook_deliveries_total") && l.contains(r#"result="refused""#))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<f64>().ok());
        (refused == Some(3.0)).then_some(())
    })
    .await;
    let log = server.stderr();
    assert_eq!(log.matches("the receiver's address is not allowed").count(), 3, "{log}");
    assert_eq!(hooks.accepted().len(), 0, "the receiver was never asked");
    assert_eq!(hooks.refused(), 0);
}

/// With the enhanced proxy configured (at a private address, as the operator's own proxy
/// may be), a target is still checked against the policy before anything goes out: a
/// private target is refused whatever the `proxy` mode and engine, and the proxy is asked
/// nothing for it; an exempt target goes through the proxy.
#[tokio::test]
async fn targets_are_checked_before_the_enhanced_proxy() {
    let site = FixtureSite::start();
    let proxy = ProxyServer::start();
    let proxy_url = proxy.url.clone();
    let app = strict_server_with(move |s| s.proxy.enhanced_url = proxy_url).await;
    for target in [site.url("/article"), named(&site, "/article")] {
        for mode in ["basic", "enhanced", "auto"] {
            let got = app.scrape(json!({"url": target, "proxy": mode})).await;
            assert_error(&got, 400, "URL_BLOCKED");
        }
        // Rendered in the browser, whose requests go through the proxy too.
        let got = app.scrape(json!({"url": target, "proxy": "enhanced", "waitFor": 10})).await;
        assert_error(&got, 400, "URL_BLOCKED");
    }
    assert_eq!(proxy.targets(), Vec::<String>::new(), "the proxy was asked for a private target");
    assert_eq!(site.hits("/article"), 0);
    nothing_asked_privately(&site);
    let allowed = exempt(&site, "/notes.txt");
    let (status, body) = app.scrape(json!({"url": allowed, "proxy": "enhanced"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["markdown"].as_str().is_some_and(|m| m.contains("through the proxy")), "{body}");
    assert_eq!(proxy.targets(), [allowed]);
}
