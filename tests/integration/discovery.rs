//! Requests no crawl schedule lists keep the site's spacing like every page, measured at
//! the fixture site's access log: sitemap requests (the configured interval and robots.txt's
//! Crawl-delay), and a cancelled crawl makes no more of them; redirect hops, which go out
//! when the redirect's answer comes.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::crawlsite::{MANY_MAPS_PARTS, MAPS_PARTS};
use crate::common::{CrawlSite, TestServer, wait_for};

const WAIT: Duration = Duration::from_secs(60);

/// Asserts that consecutive requests to `host` (robots.txt aside, which is read before the
/// first slot) came at least `gap` apart.
fn assert_spaced(site: &CrawlSite, host: &str, gap: Duration) {
    let requests: Vec<(String, Instant)> =
        site.requests_to(host).into_iter().filter(|(path, _)| path != "/robots.txt").collect();
    for pair in requests.windows(2) {
        let apart = pair[1].1 - pair[0].1;
        assert!(apart >= gap, "{} came {apart:?} after {} ({requests:?})", pair[1].0, pair[0].0);
    }
}

#[tokio::test]
async fn sitemap_requests_keep_the_site_spacing() {
    let site = CrawlSite::start(0);
    let app = TestServer::builder().settings(|s| s.crawl.domain_min_interval_ms = 300).start().await;
    let id = app.start_crawl(json!({"url": format!("http://maps.localhost:{}/", site.port)})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["completed"].as_u64(),
        Some(1 + MAPS_PARTS as u64),
        "the start page and the mapped pages"
    );
    let sitemaps = site.requests_to("maps.localhost").iter().filter(|(p, _)| p.ends_with(".xml")).count();
    assert_eq!(sitemaps, 1 + MAPS_PARTS, "the index and its sitemaps were read");
    assert_spaced(&site, "maps.localhost", Duration::from_millis(250));

    // robots.txt's Crawl-delay (1 s) holds for the default /sitemap.xml as for pages.
    let start = format!("http://polite.localhost:{}/p/0", site.port);
    let id = app.start_crawl(json!({"url": start, "limit": 2})).await;
    app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    let requests = site.requests_to("polite.localhost");
    assert!(requests.iter().any(|(p, _)| p == "/sitemap.xml"), "{requests:?}");
    assert_spaced(&site, "polite.localhost", Duration::from_millis(950));
}

#[tokio::test]
async fn a_cancelled_crawl_reads_no_more_sitemaps() {
    let site = CrawlSite::start(0);
    let app = TestServer::builder().settings(|s| s.crawl.domain_min_interval_ms = 300).start().await;
    let id = app.start_crawl(json!({"url": format!("http://manymaps.localhost:{}/", site.port)})).await;
    let parts_read =
        || site.requests_to("manymaps.localhost").iter().filter(|(p, _)| p.starts_with("/sitemaps/")).count();
    wait_for("discovery reads sitemaps", Duration::from_secs(30), || async {
        (parts_read() >= 2).then_some(())
    })
    .await;
    let (status, body) = app.request(reqwest::Method::DELETE, &format!("/v2/crawl/{id}"), None).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("cancelled")), "{body}");
    let cancelled_at = Instant::now();
    // Uncancelled, a sitemap would come every 300 ms: five intervals without one is the proof.
    // A request already under way when the cancel was answered may still arrive just after.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late: Vec<String> = site
        .requests_to("manymaps.localhost")
        .into_iter()
        .filter(|(_, at)| *at > cancelled_at + Duration::from_millis(200))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(late, Vec::<String>::new(), "requests after the cancel");
    assert!(parts_read() < MANY_MAPS_PARTS, "discovery stopped part-way");
    assert_spaced(&site, "manymaps.localhost", Duration::from_millis(250));
}

#[tokio::test]
async fn redirect_hops_keep_the_site_spacing() {
    let site = CrawlSite::start(0);
    let app = TestServer::builder()
        .settings(|s| {
            s.crawl.domain_min_interval_ms = 150;
            s.crawl.domain_concurrency = 2;
        })
        .start()
        .await;
    let body = json!({"url": site.url("/hub/0"), "limit": 10, "crawlEntireDomain": true, "includePaths": ["^/(hub|go)/"]});
    let id = app.start_crawl(body).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), WAIT).await;
    assert_eq!(done["status"], "completed", "{done}");
    let requests = site.requests_to("site.localhost");
    // Each /go/ answer is a redirect whose hop goes out when it comes: at once, were it not
    // for the site's pace.
    assert!(requests.iter().any(|(p, _)| p.starts_with("/go/")), "the crawl met redirects: {requests:?}");
    assert_spaced(&site, "site.localhost", Duration::from_millis(140));
}
