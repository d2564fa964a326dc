//! Warm tabs: a plain browser scrape reuses the tab an earlier one left, and finds nothing
//! of it (cookies, local and session storage, service workers, cache storage, the HTTP
//! cache, history); a scrape that brings its own headers gets a tab of its own. Reuse is
//! seen in the server's renderer processes: a reused tab starts none.

use serde_json::{Value, json};

use crate::common::{FixtureSite, TestServer};

/// One browser, one tab: a second scrape can only be served by the first one's tab.
async fn one_tab_server() -> TestServer {
    TestServer::builder()
        .settings(|s| {
            s.browser.pool_size = 1;
            s.browser.tabs_per_browser = 1;
        })
        .start()
        .await
}

async fn visit(app: &TestServer, body: Value) -> String {
    let (status, reply) = app.request(reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["data"]["metadata"]["engine"], "chromium", "{reply}");
    reply["data"]["markdown"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_reused_tab_keeps_nothing_of_the_last_page() {
    let site = FixtureSite::start();
    let app = one_tab_server().await;
    let page = json!({"url": site.url("/js/stateful"), "waitFor": 1000, "maxAge": 0});
    let clean = "Left by earlier visits: nothing. Left for the next: all.";
    let first = visit(&app, page.clone()).await;
    assert!(first.contains(clean), "{first}");
    let second = visit(&app, page.clone()).await;
    assert!(second.contains(clean), "visit 2: {second}");
    // Chromium may start a helper renderer a moment after the first page (the service
    // worker's); by the second visit the tab's processes are all there.
    let warm = crate::browser::renderers_of(&app.data_dir());
    assert!(!warm.is_empty(), "the page has a renderer");
    for round in 3..=4 {
        let again = visit(&app, page.clone()).await;
        assert!(again.contains(clean), "visit {round}: {again}");
    }
    let now = crate::browser::renderers_of(&app.data_dir());
    assert!(
        now.is_subset(&warm),
        "no renderer started for the later visits (the tab was reused): {warm:?} then {now:?}"
    );
    // Every visit fetched these anew: neither the HTTP cache nor a registration was kept
    // (Chromium may fetch a worker's script once more to check it for updates).
    let cached = site.hits("/js/cached.txt");
    assert_eq!(cached, 4, "the HTTP cache was emptied between visits");
    let worker = site.hits("/js/sw.js");
    assert!(worker >= 4, "every visit registered the service worker anew: {worker} fetches");
}

#[tokio::test]
async fn a_scrape_with_its_own_headers_gets_a_fresh_tab() {
    let site = FixtureSite::start();
    let app = one_tab_server().await;
    let page = json!({"url": site.url("/js/stateful"), "waitFor": 1000, "maxAge": 0});
    visit(&app, page.clone()).await;
    visit(&app, page.clone()).await;
    let warm = crate::browser::renderers_of(&app.data_dir());
    let mut with_cookie = page.clone();
    with_cookie["headers"] = json!({"Cookie": "visit=from-the-request"});
    let own = visit(&app, with_cookie).await;
    assert!(own.contains("cookie visit=from-the-request"), "the request's cookie, nothing else: {own}");
    let now = crate::browser::renderers_of(&app.data_dir());
    assert!(!now.is_subset(&warm), "a fresh tab, with a renderer of its own: {warm:?} then {now:?}");
    // The shelved tab made way for the fresh one (one tab in all) and plain scrapes go on.
    let plain = visit(&app, page).await;
    assert!(plain.contains("Left by earlier visits: nothing. Left for the next: all."), "{plain}");
}
