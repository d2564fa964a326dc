//! The HTTP engine seen from the API: request headers, device and language, redirects,
//! encodings, compression, TLS verification, proxies, size and time limits, and the
//! contract's error codes for unreachable targets.

use serde_json::json;

use crate::common::{FixtureSite, ProxyServer, TestServer, TlsSite, assert_error};

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn caller_headers_mobile_and_languages_reach_the_target() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, _) = app
        .scrape(json!({"url": site.url("/echo"), "headers": {"X-Garden": "tomato", "Cookie": "session=1"}}))
        .await;
    assert_eq!(status, 200);
    let seen = site.last_headers();
    assert_eq!(header(&seen, "x-garden"), Some("tomato"));
    assert_eq!(header(&seen, "cookie"), Some("session=1"));
    assert!(header(&seen, "user-agent").is_some_and(|ua| !ua.contains("Mobile")));
    assert_eq!(header(&seen, "accept-language"), Some("en-US,en;q=0.9"));

    app.scrape(json!({"url": site.url("/echo"), "mobile": true, "location": {"country": "de", "languages": ["de-DE", "de"]}}))
        .await;
    let seen = site.last_headers();
    assert!(header(&seen, "user-agent").is_some_and(|ua| ua.contains("Mobile")), "{seen:?}");
    assert_eq!(header(&seen, "accept-language"), Some("de-DE,de;q=0.9"));

    app.scrape(json!({"url": site.url("/echo"), "headers": {"User-Agent": "my-agent/1.0"}})).await;
    assert_eq!(header(&site.last_headers(), "user-agent"), Some("my-agent/1.0"));
}

#[tokio::test]
async fn redirects_are_followed_and_bounded() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, body) = app.scrape(json!({"url": site.url("/redirect-chain")})).await;
    assert_eq!(body["data"]["metadata"]["url"], site.url("/article"));
    assert_eq!(site.hits("/redirect-chain") + site.hits("/redirect") + site.hits("/article"), 3);
    let got = app.scrape(json!({"url": site.url("/redirect-loop")})).await;
    let msg = assert_error(&got, 502, "SCRAPE_SITE_ERROR");
    assert!(msg.contains("redirects"), "{msg}");
}

#[tokio::test]
async fn encodings_and_compression_are_decoded() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let md = |body: serde_json::Value| body["data"]["markdown"].as_str().unwrap_or_default().to_owned();
    let (_, body) = app.scrape(json!({"url": site.url("/latin1")})).await;
    assert!(md(body.clone()).contains("Café crème brûlée"), "{body}");
    let (_, body) = app.scrape(json!({"url": site.url("/meta-charset")})).await;
    assert!(md(body.clone()).contains("\u{201c}Quoted\u{201d} prices in €"), "{body}");
    let (_, body) = app.scrape(json!({"url": site.url("/gzip")})).await;
    assert!(md(body.clone()).contains("Compressed garden notes arrive intact."), "{body}");
    let (_, body) = app.scrape(json!({"url": site.url("/brotli")})).await;
    assert!(md(body.clone()).contains("Brotli garden notes arrive intact."), "{body}");
}

#[tokio::test]
async fn tls_verification_is_the_callers_choice() {
    let tls = TlsSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": tls.url})).await;
    assert_eq!(status, 200, "skipTlsVerification defaults to true: {body}");
    assert!(body["data"]["markdown"].as_str().expect("md").contains("Secret garden"));
    let got = app.scrape(json!({"url": tls.url, "skipTlsVerification": false})).await;
    assert_error(&got, 502, "SCRAPE_SSL_ERROR");
}

#[tokio::test]
async fn a_spaced_site_is_crawled_over_tls_with_the_callers_choice_of_verification() {
    // With an interval, a site's requests go through the client that spaces them where
    // they are written: it speaks TLS too, and checks certificates when asked to.
    let tls = TlsSite::start();
    let app = TestServer::builder().settings(|s| s.crawl.domain_min_interval_ms = 20).start().await;
    let id = app.start_crawl(json!({"url": tls.url, "limit": 1})).await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), std::time::Duration::from_secs(60)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["data"][0]["markdown"].as_str().is_some_and(|md| md.contains("Secret garden")), "{done}");
    let id = app
        .start_crawl(json!({"url": tls.url, "limit": 1, "scrapeOptions": {"skipTlsVerification": false}}))
        .await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), std::time::Duration::from_secs(60)).await;
    assert_eq!(done["completed"], 0, "a certificate nobody signed is refused: {done}");
    let (_, errors) = app.request(reqwest::Method::GET, &format!("/v2/crawl/{id}/errors"), None).await;
    assert!(errors.to_string().to_lowercase().contains("tls"), "{errors}");
}

#[tokio::test]
async fn timeouts_answer_408() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let got = app.scrape(json!({"url": site.url("/slow"), "timeout": 1000})).await;
    let msg = assert_error(&got, 408, "SCRAPE_TIMEOUT");
    assert!(msg.contains("1000"), "{msg}");
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let site = FixtureSite::start();
    let app = TestServer::builder().settings(|s| s.scrape.max_body_bytes = 64 * 1024).start().await;
    let got = app.scrape(json!({"url": site.url("/big")})).await;
    let msg = assert_error(&got, 502, "SCRAPE_SITE_ERROR");
    assert!(msg.contains("65536"), "{msg}");
    let (status, _) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn unreachable_targets_get_contract_codes() {
    let app = TestServer::start().await;
    // `.invalid` names never resolve (RFC 6761); no DNS query leaves the machine.
    let got = app.scrape(json!({"url": "http://nothing-here.invalid/page"})).await;
    assert_error(&got, 200, "SCRAPE_DNS_RESOLUTION_ERROR");
    // A closed port on loopback: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let got = app.scrape(json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    assert_error(&got, 502, "SCRAPE_SITE_ERROR");
}

#[tokio::test]
async fn enhanced_proxy_is_used_and_reported_honestly() {
    let site = FixtureSite::start();
    let proxy = ProxyServer::start();
    let app = TestServer::builder().settings(|s| s.proxy.enhanced_url = proxy.url.clone()).start().await;

    let (_, body) = app.scrape(json!({"url": site.url("/article"), "proxy": "basic"})).await;
    assert_eq!(body["data"]["metadata"]["proxyUsed"], "basic");
    assert_eq!(proxy.requests(), 0);

    let (_, body) = app.scrape(json!({"url": site.url("/notes.txt"), "proxy": "enhanced"})).await;
    assert_eq!(body["data"]["metadata"]["proxyUsed"], "stealth");
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 5);
    assert!(body["data"]["markdown"].as_str().expect("md").contains("Served through the proxy"));
    assert_eq!(proxy.requests(), 1);

    // auto: direct first; the target refuses direct clients, so the proxy retries.
    let (_, body) = app.scrape(json!({"url": site.url("/direct-refused")})).await;
    assert_eq!(body["data"]["metadata"]["proxyUsed"], "stealth", "{body}");
    assert_eq!(body["data"]["metadata"]["statusCode"], 200);
    assert_eq!(site.hits("/direct-refused"), 1);
    assert_eq!(proxy.requests(), 2);
}

#[tokio::test]
async fn enhanced_without_a_proxy_says_so() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": site.url("/article"), "proxy": "enhanced"})).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["metadata"]["proxyUsed"], "basic");
    assert!(body["data"]["warning"].as_str().expect("warning").contains("No enhanced proxy"));
    let (_, body) = app.scrape(json!({"url": site.url("/direct-refused"), "maxAge": 0})).await;
    assert_eq!(body["data"]["metadata"]["statusCode"], 403, "auto without a proxy keeps the direct answer");
}
