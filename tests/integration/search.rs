//! `POST /v2/search`: the local index of scraped pages with every query operator, filters,
//! sources and scraping of results; the SearXNG provider against a stand-in speaking its
//! JSON API (pagination, an error, an answer too late); the checks of the request; the
//! index rebuilt and searched from the command line, and surviving `kill -9`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::searchsite::{FakeSearxng, Mode, SearchSite};
use crate::common::{TestServer, assert_error, wait_for};

/// Scrapes every page of `site` into the server's index and waits until search finds them.
async fn indexed(site: &SearchSite) -> TestServer {
    let app = TestServer::builder().start().await;
    for url in site.urls() {
        let (status, body) = app.scrape(json!({"url": url})).await;
        assert_eq!(status, 200, "{url}: {body}");
    }
    wait_for("the pages in the index", Duration::from_secs(20), || async {
        let found = urls(&search(&app, json!({"query": "quokka", "limit": 20})).await, "web");
        (found.len() >= 5).then_some(())
    })
    .await;
    app
}

async fn search(app: &TestServer, body: Value) -> Value {
    let (status, answer) = app.request(reqwest::Method::POST, "/v2/search", Some(&body)).await;
    assert_eq!(status, 200, "{body}: {answer}");
    answer
}

/// The URLs of a result list, in order.
fn urls(answer: &Value, source: &str) -> Vec<String> {
    answer["data"][source]
        .as_array()
        .map(|items| items.iter().filter_map(|i| i["url"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

fn paths(answer: &Value, source: &str) -> Vec<String> {
    urls(answer, source)
        .iter()
        .map(|u| {
            url::Url::parse(u)
                .map(|u| format!("{}{}", u.host_str().unwrap_or_default(), u.path()))
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn the_local_index_answers_with_every_operator() {
    let site = SearchSite::start();
    let app = indexed(&site).await;
    let find = |query: &str| search(&app, json!({"query": query, "limit": 20}));

    let best = find("quokka install cargo").await;
    assert_eq!(
        paths(&best, "web").first().map(String::as_str),
        Some("docs.localhost/guide/install"),
        "{best}"
    );
    assert_eq!(best["data"]["web"][0]["title"], "Installing the Quokka toolkit");
    assert_eq!(best["data"]["web"][0]["description"], "How to install Quokka with cargo.");
    assert_eq!(best["data"]["web"][0]["position"], 1);
    assert_eq!(best["creditsUsed"], 2, "{best}");

    let only = |answer: &Value, prefix: &str| paths(answer, "web").iter().all(|p| p.starts_with(prefix));
    let blog = find("quokka site:blog.localhost").await;
    assert!(!paths(&blog, "web").is_empty() && only(&blog, "blog.localhost/"), "{blog}");
    let not_blog = find("quokka -site:blog.localhost").await;
    assert!(!paths(&not_blog, "web").is_empty() && only(&not_blog, "docs.localhost/"), "{not_blog}");
    let titled = find("intitle:configuring").await;
    assert_eq!(paths(&titled, "web"), ["docs.localhost/guide/configure"], "{titled}");
    let text = find("quokka filetype:txt").await;
    assert_eq!(paths(&text, "web"), ["docs.localhost/notes.txt"], "{text}");
    let no_text = find("quokka -filetype:txt").await;
    assert!(!paths(&no_text, "web").iter().any(|p| p.ends_with(".txt")), "{no_text}");
    let posts = find("quokka inurl:posts").await;
    assert!(only(&posts, "blog.localhost/posts/") && paths(&posts, "web").len() == 2, "{posts}");
    let all_in_url = find("allinurl: guide configure").await;
    assert_eq!(paths(&all_in_url, "web"), ["docs.localhost/guide/configure"], "{all_in_url}");
    let phrase = find(r#""faster than ever""#).await;
    assert_eq!(paths(&phrase, "web"), ["blog.localhost/posts/release"], "{phrase}");
    let without = find("quokka -released").await;
    assert!(!paths(&without, "web").contains(&"blog.localhost/posts/release".to_owned()), "{without}");
    let domains = search(&app, json!({"query": "quokka", "includeDomains": ["docs.localhost"]})).await;
    assert!(!paths(&domains, "web").is_empty() && only(&domains, "docs.localhost/"), "{domains}");
    let related = find(&format!("related:{}", site.url("docs.localhost", "/guide/install"))).await;
    let related = paths(&related, "web");
    assert!(related.contains(&"docs.localhost/guide/configure".to_owned()), "{related:?}");
    assert!(!related.contains(&"docs.localhost/guide/install".to_owned()), "{related:?}");
    let (status, activity) =
        app.request(reqwest::Method::GET, "/v2/team/activity?endpoint=search", None).await;
    assert_eq!(status, 200, "{activity}");
    let records = activity["data"].as_array().expect("records");
    assert!(records.iter().any(|r| r["target"] == "quokka install cargo"), "{activity}");
    let nothing = find("xylophone").await;
    assert_eq!(nothing["data"]["web"], json!([]));
    assert!(nothing["warning"].as_str().is_some_and(|w| w.contains("No results")), "{nothing}");
}

#[tokio::test]
async fn news_images_dates_and_scraped_results() {
    let site = SearchSite::start();
    let app = indexed(&site).await;

    let news = search(&app, json!({"query": "quokka", "sources": ["news"], "tbs": "sbd:1"})).await;
    assert_eq!(news["data"].get("web"), None, "only the sources asked: {news}");
    assert_eq!(paths(&news, "news"), ["blog.localhost/posts/release", "blog.localhost/posts/old"], "{news}");
    assert_eq!(news["data"]["news"][0]["date"], "2026-11-20T10:00:00.000Z");
    // The lead image an article declares, made absolute; none where there is none.
    let lead = news["data"]["news"][0]["imageUrl"].as_str().unwrap_or_default();
    assert!(lead.starts_with("http://blog.localhost:") && lead.ends_with("/img/release.png"), "{news}");
    assert_eq!(news["data"]["news"][1].get("imageUrl"), None, "{news}");
    let november = search(
        &app,
        json!({"query": "quokka", "sources": [{"type": "news"}], "tbs": "cdr:1,cd_min:11/01/2026,cd_max:11/30/2026"}),
    )
    .await;
    assert_eq!(paths(&november, "news"), ["blog.localhost/posts/release"], "{november}");

    let images = search(&app, json!({"query": "diagram", "sources": ["images"]})).await;
    let first = &images["data"]["images"][0];
    assert_eq!(first["imageUrl"], site.url("docs.localhost", "/img/diagram.png"), "{images}");
    assert_eq!((first["imageWidth"].as_u64(), first["imageHeight"].as_u64()), (Some(800), Some(600)));
    assert_eq!(first["title"], "architecture diagram");
    assert_eq!(first["url"], site.url("docs.localhost", "/guide/install"));
    let image_urls = |answer: &Value| -> Vec<String> {
        answer["data"]["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["imageUrl"].as_str().unwrap().to_owned())
            .collect()
    };
    let large = search(&app, json!({"query": "larger:100x100", "sources": ["images"]})).await;
    let large = image_urls(&large);
    assert_eq!(large.len(), 2, "{large:?}");
    assert!(!large.iter().any(|u| u.ends_with("logo.png")), "{large:?}");
    let exact = search(&app, json!({"query": "imagesize:64x64", "sources": ["images"]})).await;
    assert_eq!(image_urls(&exact), [site.url("docs.localhost", "/img/logo.png")]);

    // With formats, each result is scraped: its Markdown comes along, and its credit.
    let scraped =
        search(&app, json!({"query": "configuring", "scrapeOptions": {"formats": ["markdown"]}})).await;
    let result = &scraped["data"]["web"][0];
    assert!(result["markdown"].as_str().is_some_and(|m| m.contains("toml files")), "{scraped}");
    assert_eq!(result["title"], "Configuring Quokka");
    assert_eq!(scraped["creditsUsed"], 3, "2 for the search, 1 for the page: {scraped}");
}

#[tokio::test]
async fn pages_kept_out_of_the_cache_are_not_indexed() {
    let site = SearchSite::start();
    let app = TestServer::builder().start().await;
    let gallery = site.url("blog.localhost", "/posts/gallery");
    let (status, body) = app.scrape(json!({"url": gallery, "storeInCache": false})).await;
    assert_eq!(status, 200, "{body}");
    // Pages are indexed in the order they come: once a later page is found, the gallery
    // would have been too.
    let (status, body) = app.scrape(json!({"url": site.url("docs.localhost", "/guide/configure")})).await;
    assert_eq!(status, 200, "{body}");
    wait_for("the later page in the index", Duration::from_secs(20), || async {
        (!urls(&search(&app, json!({"query": "configuring"})).await, "web").is_empty()).then_some(())
    })
    .await;
    let none = search(&app, json!({"query": "wallabies"})).await;
    assert_eq!(none["data"]["web"], json!([]), "{none}");
}

#[tokio::test]
async fn bad_requests_name_the_field_or_operator() {
    let app = TestServer::builder().start().await;
    for (body, named) in [
        (json!({}), "`query`"),
        (json!({"query": "x".repeat(501)}), "`query`"),
        (json!({"query": "a", "limit": 0}), "`limit`"),
        (json!({"query": "a", "limit": 101}), "`limit`"),
        (json!({"query": "site:"}), "`site:`"),
        (json!({"query": "imagesize:huge"}), "`imagesize:`"),
        (json!({"query": "a", "sources": ["video"]}), "`sources`"),
        (json!({"query": "a", "categories": ["sports"]}), "`categories`"),
        (json!({"query": "a", "includeDomains": ["a.com"], "excludeDomains": ["b.com"]}), "`excludeDomains`"),
        (json!({"query": "a", "includeDomains": ["https://a.com/x"]}), "`includeDomains`"),
        (json!({"query": "a", "tbs": "qdr:x"}), "`tbs`"),
        (json!({"query": "a", "country": "USA"}), "`country`"),
        (json!({"query": "a", "timeout": 5}), "`timeout`"),
        (json!({"query": "a", "unknownField": 1}), "unknownField"),
    ] {
        let got = app.request(reqwest::Method::POST, "/v2/search", Some(&body)).await;
        let message = assert_error(&got, 400, "BAD_REQUEST");
        assert!(message.contains(named), "{body}: {message}");
    }
    let got = app
        .request(reqwest::Method::POST, "/v2/search", Some(&json!({"query": "a", "enterprise": ["zdr"]})))
        .await;
    assert_error(&got, 403, "FORBIDDEN");
}

#[tokio::test]
async fn searxng_is_paged_to_the_limit_and_filtered() {
    let searx = FakeSearxng::start(Mode::Pages);
    let url = searx.url.clone();
    let app = TestServer::builder()
        .settings(move |s| {
            s.search.providers = vec!["searxng".into()];
            s.search.searxng_url = url;
        })
        .start()
        .await;
    let answer =
        search(&app, json!({"query": "rust crawler", "limit": 15, "tbs": "qdr:w", "country": "DE"})).await;
    let web = urls(&answer, "web");
    assert_eq!(web.len(), 15, "{answer}");
    assert_eq!(answer["data"]["web"][0]["title"], "Result 0 for rust crawler");
    assert_eq!(answer["data"]["web"][14]["position"], 15);
    let asked = searx.asked();
    assert_eq!(asked.len(), 2, "two pages of ten for fifteen: {asked:?}");
    let param = |i: usize, name: &str| asked[i].iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!((param(0, "pageno"), param(1, "pageno")), (Some("1".into()), Some("2".into())));
    assert_eq!(param(0, "format").as_deref(), Some("json"));
    assert_eq!(param(0, "time_range").as_deref(), Some("week"));
    assert_eq!(param(0, "language").as_deref(), Some("de-DE"));
    // A free-text location stands for its country.
    search(&app, json!({"query": "rust crawler", "location": "São Paulo, Brazil"})).await;
    let asked = searx.asked();
    let last = asked.last().expect("asked");
    let language = last.iter().find(|(k, _)| k == "language").map(|(_, v)| v.as_str());
    assert_eq!(language, Some("pt-BR"), "{last:?}");

    let filtered =
        search(&app, json!({"query": "rust", "limit": 5, "excludeDomains": ["example.com"]})).await;
    let filtered = urls(&filtered, "web");
    assert_eq!(filtered.len(), 5);
    assert!(filtered.iter().all(|u| u.starts_with("https://docs.example.org/")), "{filtered:?}");

    let images = search(&app, json!({"query": "cats", "sources": ["images"], "limit": 3})).await;
    let first = &images["data"]["images"][0];
    assert_eq!(
        (first["imageWidth"].as_u64(), first["imageHeight"].as_u64()),
        (Some(640), Some(480)),
        "{images}"
    );
    assert!(first["imageUrl"].as_str().is_some_and(|u| u.ends_with("/img/0.jpg")));
}

#[tokio::test]
async fn a_failing_or_late_provider_falls_through_with_a_warning() {
    let site = SearchSite::start();
    for (mode, says) in [(Mode::Failing, "HTTP 500"), (Mode::Late(Duration::from_secs(3)), "in time")] {
        let searx = FakeSearxng::start(mode);
        let url = searx.url.clone();
        let app = TestServer::builder()
            .settings(move |s| {
                s.search.providers = vec!["searxng".into(), "local".into()];
                s.search.searxng_url = url;
                s.search.provider_timeout_ms = 500;
            })
            .start()
            .await;
        let (status, body) = app.scrape(json!({"url": site.url("docs.localhost", "/guide/configure")})).await;
        assert_eq!(status, 200, "{body}");
        let answer = wait_for("the local result", Duration::from_secs(20), || async {
            let answer = search(&app, json!({"query": "configuring quokka"})).await;
            (!urls(&answer, "web").is_empty()).then_some(answer)
        })
        .await;
        assert_eq!(paths(&answer, "web"), ["docs.localhost/guide/configure"]);
        let warning = answer["warning"].as_str().unwrap_or_default();
        assert!(warning.contains("searxng") && warning.contains(says), "{warning}");
    }
}

/// `ferrocrawl index rebuild` makes the index again from the page cache, and
/// `ferrocrawl search` answers from it on the command line.
#[tokio::test]
async fn the_index_is_rebuilt_from_the_cache_and_searched_from_the_command_line() {
    let site = SearchSite::start();
    let app = indexed(&site).await;
    let data = app.stop();
    let dir = data.path().to_str().expect("utf8").to_owned();
    std::fs::remove_dir_all(data.path().join("search")).expect("remove the index");
    let run = |args: &[&str]| {
        let out = crate::common::process::run(args, &[]);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let before = run(&["search", "quokka", "--data", &dir]);
    assert_eq!(before, "", "no index, no local results");
    let rebuilt = run(&["index", "rebuild", "--data", &dir]);
    assert_eq!(rebuilt.trim(), format!("indexed {} pages", site.urls().len()), "{rebuilt}");
    let found = run(&["search", "quokka install cargo", "--limit", "3", "--data", &dir]);
    let first = found.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!("{}\tInstalling the Quokka toolkit", site.url("docs.localhost", "/guide/install")),
        "{found}"
    );
    let out = crate::common::process::run(&["search", "site:", "--data", &dir], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("site:"));

    // Other sources, and JSON as the API's `data`.
    let images = run(&["search", "wallaby", "--sources", "images", "--data", &dir]);
    let image = format!(
        "{}\t{}\ta wallaby at dawn",
        site.url("blog.localhost", "/img/wallaby.jpg"),
        site.url("blog.localhost", "/posts/gallery")
    );
    assert_eq!(images.lines().next(), Some(image.as_str()), "{images}");
    let both = run(&["search", "quokka", "--sources", "news,web", "--limit", "1", "--data", &dir]);
    let sources: Vec<&str> = both.lines().filter_map(|l| l.split('\t').next()).collect();
    assert_eq!(sources, ["news", "web"], "{both}");
    let json = run(&["search", "quokka", "--sources", "news", "--json", "--data", &dir]);
    let data: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let news = data["news"].as_array().expect("news");
    let release = news.iter().find(|n| n["url"].as_str().is_some_and(|u| u.ends_with("/posts/release")));
    assert_eq!(release.map(|r| r["date"].clone()), Some(json!("2026-11-20T10:00:00.000Z")), "{data}");
    assert_eq!(data.get("web"), None, "{data}");
    let out = crate::common::process::run(&["search", "quokka", "--sources", "videos", "--data", &dir], &[]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("videos"));
}

/// The index survives `kill -9`: what was committed is found after a restart, the
/// restarted server takes the index's writer again and indexes new pages, and a page
/// scraped just before a kill (held for the index, not yet committed) is indexed after
/// the next start.
#[tokio::test]
async fn the_index_survives_kill_9() {
    use crate::common::process::Binary;
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let site = SearchSite::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let call = |base: String, key: String, path: &'static str, body: Value| {
        let client = client.clone();
        async move {
            let resp =
                client.post(format!("{base}{path}")).bearer_auth(key).json(&body).send().await.expect("post");
            crate::common::decode(resp).await
        }
    };
    let found = |base: String, key: String, query: &'static str| {
        let call = &call;
        async move {
            let (status, answer) = call(base, key, "/v2/search", json!({"query": query})).await;
            assert_eq!(status, 200, "{answer}");
            paths(&answer, "web")
        }
    };
    // Scrapes `url` through the server at `base` and waits until `query` finds it.
    let scraped_and_found = |base: String, key: String, url: String, query: &'static str| {
        let (call, found) = (&call, &found);
        async move {
            let (status, body) = call(base.clone(), key.clone(), "/v2/scrape", json!({"url": url})).await;
            assert_eq!(status, 200, "{body}");
            wait_for("the page in the index", Duration::from_secs(20), || async {
                (!found(base.clone(), key.clone(), query).await.is_empty()).then_some(())
            })
            .await;
        }
    };
    let server = Binary::serve(dir.path(), &[]);
    let key = std::fs::read_to_string(dir.path().join("api-key")).expect("key").trim().to_owned();
    let configure = site.url("docs.localhost", "/guide/configure");
    scraped_and_found(server.base.clone(), key.clone(), configure, "configuring").await;
    server.kill9();

    let server = Binary::serve(dir.path(), &[]);
    assert_eq!(
        found(server.base.clone(), key.clone(), "configuring").await,
        ["docs.localhost/guide/configure"]
    );
    // The restarted server took the writer again.
    let gallery = site.url("blog.localhost", "/posts/gallery");
    scraped_and_found(server.base.clone(), key.clone(), gallery, "wallabies").await;
    server.kill9();

    // A page held for the index (noted in the store) and not yet committed when the process
    // is killed: its note brings it into the index at the next start. The commit is put
    // off for an hour (a setting of debug builds), so the kill comes before it, once the
    // note and the page are on the disk.
    let server = Binary::serve(dir.path(), &[("TEST_FERROCRAWL_INDEX_COMMIT_AFTER_MS", "3600000")]);
    let old = site.url("blog.localhost", "/posts/old");
    let (status, body) = call(server.base.clone(), key.clone(), "/v2/scrape", json!({"url": old})).await;
    assert_eq!(status, 200, "{body}");
    let cache_key = ferrocrawl::scrape::cache::key(
        &url::Url::parse(&old).expect("url"),
        &ferrocrawl::model::ScrapeOptions::default(),
    );
    wait_for("the page and its note for the index on the disk", Duration::from_secs(20), || async {
        let disk = server.disk_now();
        let cached = disk.store.cache.get(cache_key).expect("read the cache").is_some();
        // What a start of the copy does first: held pages wait in the backlog.
        disk.store.index_backlog.requeue_held().expect("requeue the held pages");
        let waiting = disk.store.index_backlog.after(None, 100).expect("read the backlog");
        (cached && waiting.iter().any(|(_, key)| *key == cache_key)).then_some(())
    })
    .await;
    assert!(
        found(server.base.clone(), key.clone(), "announced").await.is_empty(),
        "the page must not be committed before the kill"
    );
    server.kill9();
    let server = Binary::serve(dir.path(), &[]);
    wait_for("the page scraped before the kill in the index", Duration::from_secs(20), || async {
        let paths = found(server.base.clone(), key.clone(), "announced").await;
        (paths == ["blog.localhost/posts/old"]).then_some(())
    })
    .await;
}

/// A graceful stop commits what the indexer still held: a page scraped just before the
/// stop is searchable afterwards.
#[tokio::test]
async fn a_graceful_stop_keeps_the_last_pages_searchable() {
    let site = SearchSite::start();
    let app = TestServer::builder().start().await;
    let (status, body) = app.scrape(json!({"url": site.url("docs.localhost", "/guide/configure")})).await;
    assert_eq!(status, 200, "{body}");
    let data = app.stop();
    let dir = data.path().to_str().expect("utf8").to_owned();
    let out = crate::common::process::run(&["search", "configuring", "--data", &dir], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.starts_with(&site.url("docs.localhost", "/guide/configure")), "{found}");
}

/// An uploaded file is found by the team that uploaded it, and by no other.
#[tokio::test]
async fn uploaded_files_are_found_by_their_team_only() {
    let app = TestServer::builder().key("other", "other-key").start().await;
    let html = b"<html><head><title>Quarterly wombat census</title></head><body><main><h1>Quarterly wombat census</h1><p>The zanzibarquokka tally rose again this quarter, the census notes, and every burrow was counted twice.</p></main></body></html>";
    let (status, parsed) =
        crate::parse::upload(&app, &[("file", Some("census.html"), Some("text/html"), &html[..])]).await;
    assert_eq!(status, 200, "{parsed}");
    let id = parsed["data"]["metadata"]["scrapeId"].as_str().expect("id").to_owned();
    let query = json!({"query": "zanzibarquokka census"});
    let mine = wait_for("the upload in the index", Duration::from_secs(20), || async {
        let answer = search(&app, query.clone()).await;
        (!urls(&answer, "web").is_empty()).then_some(answer)
    })
    .await;
    assert_eq!(urls(&mine, "web"), [format!("file:///{id}/census.html")], "{mine}");
    assert_eq!(mine["data"]["web"][0]["title"], "Quarterly wombat census");
    let (status, theirs) =
        app.request_as("other-key", reqwest::Method::POST, "/v2/search", Some(&query)).await;
    assert_eq!(status, 200, "{theirs}");
    assert_eq!(theirs["data"]["web"], json!([]), "another team never sees it: {theirs}");
}

/// With room for one page's text in the index queue, the pages scraped beside it wait as
/// their page-cache keys and are converted again when the indexer gets to them: none is
/// left out of the index.
#[tokio::test]
async fn pages_beyond_the_index_queue_are_indexed_later() {
    let site = SearchSite::start();
    let app = TestServer::builder().settings(|s| s.search.index_queue = 1).start().await;
    let scrapes = site.urls().into_iter().map(|url| {
        let app = &app;
        async move { app.scrape(json!({"url": url})).await }
    });
    for (status, body) in futures::future::join_all(scrapes).await {
        assert_eq!(status, 200, "{body}");
    }
    wait_for("every page in the index", Duration::from_secs(30), || async {
        let found = urls(&search(&app, json!({"query": "quokka", "limit": 20})).await, "web");
        (found.len() >= 5).then_some(())
    })
    .await;
}

/// Pages the index had yet to take when the server stopped (their cache keys in the
/// store's backlog) are indexed at the next start, and leave the backlog once committed.
#[tokio::test]
async fn pages_left_in_the_backlog_are_indexed_at_the_next_start() {
    let site = SearchSite::start();
    let (install, gallery) =
        (site.url("docs.localhost", "/guide/install"), site.url("blog.localhost", "/posts/gallery"));
    let app = TestServer::builder().start().await;
    assert_eq!(app.scrape(json!({"url": install})).await.0, 200);
    wait_for("the first page in the index", Duration::from_secs(20), || async {
        let found = urls(&search(&app, json!({"query": "quokka"})).await, "web");
        found.contains(&install).then_some(())
    })
    .await;
    // A page stored while the index is off: in the page cache, not in the index.
    let app = TestServer::builder_on(app.stop()).settings(|s| s.search.index = false).start().await;
    assert_eq!(app.scrape(json!({"url": gallery})).await.0, 200);
    let data = app.stop();
    {
        let store = ferrocrawl::store::Store::open(data.path()).expect("open the store");
        let key = ferrocrawl::scrape::cache::key(
            &url::Url::parse(&gallery).expect("url"),
            &ferrocrawl::model::ScrapeOptions::default(),
        );
        assert!(store.cache.get(key).expect("read the cache").is_some(), "the page is cached under this key");
        store.index_backlog.push(key).expect("left in the backlog");
        store.flush().expect("flush");
    }
    let app = TestServer::builder_on(data).start().await;
    wait_for("the page left in the backlog in the index", Duration::from_secs(20), || async {
        let found = urls(&search(&app, json!({"query": "wallabies"})).await, "web");
        found.contains(&gallery).then_some(())
    })
    .await;
    let found = urls(&search(&app, json!({"query": "quokka"})).await, "web");
    assert_eq!(found, [install], "the index was not made again from the whole cache");
    // The commit made it searchable; the entry is gone once it has.
    let data = app.stop();
    let store = ferrocrawl::store::Store::open(data.path()).expect("open the store");
    assert_eq!(store.index_backlog.waiting(), 0, "the committed page left the backlog");
}
