//! The browser engine with real Chromium against the fixture site: pages built by scripts
//! (requested and detected), screenshots served as owner-only files, device and locale
//! emulation seen by the page, ad blocking, the address policy for everything the page
//! loads, certificates checked only when `skipTlsVerification` is off, and recovery from a
//! crashed browser.

use serde_json::{Value, json};

use crate::common::{FixtureSite, KEY, TestServer};

async fn scrape(app: &TestServer, body: Value) -> (u16, Value) {
    app.request(reqwest::Method::POST, "/v2/scrape", Some(&body)).await
}

fn markdown(body: &Value) -> &str {
    body["data"]["markdown"].as_str().unwrap_or_default()
}

/// Width and height from a PNG's header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    (be(16), be(20))
}

async fn download(url: &str, key: &str) -> (u16, Vec<u8>) {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let response = client.get(url).bearer_auth(key).send().await.expect("download");
    (response.status().as_u16(), response.bytes().await.expect("bytes").to_vec())
}

#[tokio::test]
async fn script_content_is_rendered_when_asked_and_when_detected() {
    let site = FixtureSite::start();
    let app = TestServer::builder().start().await;
    let (status, plain) = scrape(&app, json!({"url": site.url("/js/late"), "maxAge": 0})).await;
    assert_eq!(status, 200, "{plain}");
    // A late script on an otherwise static page is not a shell: without waitFor the page is as served.
    assert!(markdown(&plain).contains("village hall"), "{plain}");
    assert!(!markdown(&plain).contains("harvest festival"), "{plain}");
    assert_eq!(plain["data"]["metadata"]["engine"], "http");

    let (status, waited) = scrape(&app, json!({"url": site.url("/js/late"), "waitFor": 1000})).await;
    assert_eq!(status, 200, "{waited}");
    assert!(markdown(&waited).contains("harvest festival"), "{waited}");
    assert_eq!(waited["data"]["metadata"]["engine"], "chromium");
    assert_eq!(waited["data"]["metadata"]["statusCode"], 200);

    let (status, shell) = scrape(&app, json!({"url": site.url("/js/shell")})).await;
    assert_eq!(status, 200, "{shell}");
    assert!(markdown(&shell).contains("sixteen hours of light"), "the app shell was rendered: {shell}");
    assert_eq!(shell["data"]["metadata"]["engine"], "chromium");
    assert_eq!(site.hits("/api/content"), 1, "the page's own request went out once");

    let (_, article) = scrape(&app, json!({"url": site.url("/article")})).await;
    assert_eq!(article["data"]["metadata"]["engine"], "http", "static pages stay on HTTP");
}

/// Served HTML with a real header, menu and banner around a "Loading..." app root is not a
/// shell by its bytes; its extracted content is a placeholder, so it is rendered.
#[tokio::test]
async fn a_loading_placeholder_behind_a_static_header_is_rendered() {
    let site = FixtureSite::start();
    let app = TestServer::builder().start().await;
    let (status, body) = scrape(&app, json!({"url": site.url("/js/headed-shell")})).await;
    assert_eq!(status, 200, "{body}");
    let md = markdown(&body);
    assert!(md.contains("Twelve heirloom varieties"), "the script's content: {body}");
    assert!(!md.contains("Loading..."), "{md}");
    assert_eq!(body["data"]["metadata"]["engine"], "chromium");
    // The rendered page is what the cache keeps: a second scrape renders nothing again.
    let (_, again) = scrape(&app, json!({"url": site.url("/js/headed-shell")})).await;
    assert_eq!(again["data"]["metadata"]["cacheState"], "hit", "{again}");
    assert_eq!(again["data"]["metadata"]["engine"], "chromium");
    assert!(markdown(&again).contains("Twelve heirloom varieties"));
    assert_eq!(site.hits("/js/headed-shell"), 2, "one HTTP fetch and one render, then the cache");

    let off = TestServer::builder().settings(|s| s.browser.auto_render = false).start().await;
    let (_, served) = scrape(&off, json!({"url": site.url("/js/headed-shell"), "maxAge": 0})).await;
    assert_eq!(served["data"]["metadata"]["engine"], "http", "auto_render off keeps the served page");
    assert_eq!(markdown(&served).trim(), "Loading...", "{served}");
}

#[tokio::test]
async fn screenshots_are_files_of_the_right_size_for_their_team_only() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-key").start().await;
    let (status, body) = scrape(
        &app,
        json!({"url": site.url("/article"), "formats": ["markdown", {"type": "screenshot", "viewport": {"width": 800, "height": 600}}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let url = body["data"]["screenshot"].as_str().expect("screenshot URL");
    assert!(url.starts_with(&app.base) && url.contains("/v2/files/"), "{url}");
    let (status, png) = download(url, KEY).await;
    assert_eq!(status, 200);
    assert_eq!(png_size(&png), (800, 600));
    // Without its signature, the file is its team's only.
    let bare = url.split('?').next().expect("path");
    assert_eq!(download(bare, KEY).await.0, 200, "the owner's key opens it");
    assert_eq!(download(bare, "other-key").await.0, 404, "another team cannot read the file");

    let (_, full) = scrape(
        &app,
        json!({"url": site.url("/js/interactive"), "formats": [{"type": "screenshot", "fullPage": true}]}),
    )
    .await;
    let (_, png) = download(full["data"]["screenshot"].as_str().expect("url"), KEY).await;
    let (width, height) = png_size(&png);
    assert_eq!(width, 1920, "desktop viewport");
    assert!(height > 3000, "the whole page: {height}");
}

/// A GET without any key.
async fn open(url: &str) -> (u16, Vec<u8>) {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let response = client.get(url).send().await.expect("open");
    (response.status().as_u16(), response.bytes().await.expect("bytes").to_vec())
}

/// Screenshot links open as they are, like Firecrawl's: signed, expiring, no key needed;
/// a changed or expired link and anything unsigned without a key are refused, with no
/// content.
#[tokio::test]
async fn screenshot_links_open_without_a_key_until_they_expire() {
    let site = FixtureSite::start();
    let app = TestServer::builder()
        .settings(|s| {
            // Long enough for both screenshots and every check below on a busy machine (two
            // browser scrapes at once with the rest of the suite took over 6 s once).
            s.storage.result_ttl_secs = 30;
            s.crawl.job_ttl_secs = 30;
        })
        .start()
        .await;
    let shot = |body: &Value| body["data"]["screenshot"].as_str().expect("screenshot URL").to_owned();
    let (_, first) = scrape(&app, json!({"url": site.url("/article"), "formats": ["screenshot"]})).await;
    let (_, second) = scrape(&app, json!({"url": site.url("/js/styled"), "formats": ["screenshot"]})).await;
    let (first, second) = (shot(&first), shot(&second));
    let (status, png) = open(&first).await;
    assert_eq!(status, 200, "a returned link opens without a key");
    assert_eq!(&png[..4], b"\x89PNG");

    let signature_of = |url: &str| url.split("signature=").nth(1).expect("signature").to_owned();
    let mut tampered = signature_of(&first);
    let last = if tampered.ends_with('0') { "1" } else { "0" };
    tampered.replace_range(tampered.len() - 1.., last);
    let (path, _) = first.split_once('?').expect("query");
    let (_, second_query) = second.split_once('?').expect("query");
    let forged = [
        format!("{}signature={tampered}", first.split("signature=").next().expect("prefix")),
        format!("{path}?{second_query}"),
        first.replace("expires=", "expires=9"),
    ];
    for url in &forged {
        let (status, body) = open(url).await;
        assert_eq!(status, 403, "{url}");
        assert!(!body.starts_with(b"\x89PNG"), "no content for {url}");
    }
    assert_eq!(open(path).await.0, 401, "unsigned and without a key");
    assert_eq!(open(&format!("{}/v2/files/", app.base)).await.0, 404, "nothing lists files");

    // Both the file and its link expire with the result (30 s here).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let (status, _) = open(&first).await;
        if status == 404 {
            break;
        }
        assert_eq!(status, 200);
        assert!(std::time::Instant::now() < deadline, "the link never expired");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn every_action_type_runs_and_reports_its_results() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let actions = json!([
        {"type": "wait", "milliseconds": 50},
        {"type": "wait", "selector": "#late"},
        {"type": "click", "selector": "#more"},
        {"type": "click", "selector": ".tick", "all": true},
        {"type": "click", "selector": "#search"},
        {"type": "write", "text": "tomatoes"},
        {"type": "press", "key": "Enter"},
        {"type": "scroll", "direction": "down"},
        {"type": "screenshot"},
        {"type": "scrape"},
        {"type": "executeJavascript", "script": "return document.querySelectorAll('.tick').length + document.querySelectorAll('#list li').length"},
        {"type": "pdf"}
    ]);
    let (status, body) = scrape(&app, json!({"url": site.url("/js/interactive"), "actions": actions})).await;
    assert_eq!(status, 200, "{body}");
    let page = markdown(&body);
    assert!(page.contains("Loaded item 1") && page.contains("Late element"), "{page}");
    assert!(page.contains("Searched for tomatoes"), "typing and Enter reached the input: {page}");
    assert!(page.contains("Scrolled to"), "{page}");
    let results = &body["data"]["actions"];
    let snapshot = results["scrapes"][0]["html"].as_str().expect("scrape action html");
    assert_eq!(snapshot.matches(">ticked<").count(), 2, "both buttons were clicked");
    assert_eq!(results["javascriptReturns"][0], json!({"type": "number", "value": 3}));
    let shot = results["screenshots"][0].as_str().expect("screenshot URL");
    let (status, png) = download(shot, KEY).await;
    assert_eq!((status, png_size(&png)), (200, (1920, 1080)));
    let pdf = results["pdfs"][0].as_str().expect("pdf URL");
    let (status, bytes) = download(pdf, KEY).await;
    assert_eq!(status, 200);
    assert!(bytes.starts_with(b"%PDF"), "a PDF file");

    let (status, failed) = scrape(
        &app,
        json!({"url": site.url("/js/interactive"), "actions": [{"type": "wait", "milliseconds": 10}, {"type": "click", "selector": "#missing"}]}),
    )
    .await;
    assert_eq!((status, failed["code"].as_str()), (400, Some("SCRAPE_ACTION_ERROR")), "{failed}");
    assert!(failed["error"].as_str().unwrap_or_default().contains("actions[1]"), "{failed}");
    let (status, thrown) =
        scrape(&app, json!({"url": site.url("/js/interactive"), "actions": [{"type": "executeJavascript", "script": "throw new Error('boom')"}]})).await;
    assert_eq!(status, 400, "{thrown}");
    assert!(thrown["error"].as_str().unwrap_or_default().contains("boom"), "{thrown}");
}

#[tokio::test]
async fn the_page_sees_the_emulated_device_locale_and_cookies() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, desktop) = scrape(&app, json!({"url": site.url("/js/probe"), "waitFor": 100})).await;
    assert_eq!(status, 200, "{desktop}");
    let text = markdown(&desktop);
    assert!(text.contains("width=1920") && text.contains("mobileua=false"), "{text}");
    let (_, phone) = scrape(
        &app,
        json!({
            "url": site.url("/js/probe"),
            "mobile": true,
            "location": {"country": "JP", "languages": ["ja-JP"]},
            "headers": {"Cookie": "garden=allotment"}
        }),
    )
    .await;
    let text = markdown(&phone);
    assert_eq!(phone["data"]["metadata"]["statusCode"], 200, "{phone}");
    for seen in ["lang=ja-JP", "tz=Asia/Tokyo", "screen=390", "mobileua=true", "cookie=garden=allotment"] {
        assert!(text.contains(seen), "{seen} in {text}");
    }
    assert!(!text.contains("touch=0"), "touch is emulated: {text}");
}

#[tokio::test]
async fn block_ads_stops_ad_scripts_and_hides_banners() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (_, plain) =
        scrape(&app, json!({"url": site.url("/js/ads"), "waitFor": 200, "blockAds": false})).await;
    assert!(markdown(&plain).contains("BUY CHEAP WIDGETS"), "{plain}");
    let ad_hits = site.hits("/pagead/show_ads.js");
    let (_, blocked) = scrape(&app, json!({"url": site.url("/js/ads"), "waitFor": 200})).await;
    let text = markdown(&blocked);
    assert!(text.contains("Sunny with a light breeze"), "{text}");
    assert!(!text.contains("BUY CHEAP WIDGETS") && !text.contains("We value your privacy"), "{text}");
    assert_eq!(site.hits("/pagead/show_ads.js"), ad_hits, "the ad script was never requested");
}

#[tokio::test]
async fn branding_reads_the_computed_styles() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = scrape(&app, json!({"url": site.url("/js/styled"), "formats": ["branding"]})).await;
    assert_eq!(status, 200, "{body}");
    let brand = &body["data"]["branding"];
    let text = brand.to_string().to_ascii_lowercase();
    assert!(text.contains("#2e7d32"), "primary colour: {brand}");
    assert!(text.contains("georgia") && text.contains("trebuchet ms"), "fonts: {brand}");
    assert!(text.contains("acme-logo.png"), "logo: {brand}");
    assert!(text.contains("favicon-acme.png") && text.contains("og-acme.png"), "images: {brand}");
    assert!(text.contains("8px"), "button radius: {brand}");
}

#[tokio::test]
async fn profiles_keep_cookies_and_storage_only_when_saved() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-key").start().await;
    let visit =
        |save: bool| json!({"url": site.url("/js/memory"), "profile": {"name": "shop", "saveChanges": save}});
    let (_, first) = scrape(&app, visit(false)).await;
    assert!(markdown(&first).contains("first visit"), "{first}");
    let (_, second) = scrape(&app, visit(true)).await;
    assert!(markdown(&second).contains("first visit"), "nothing was saved by the first: {second}");
    let (_, third) = scrape(&app, visit(false)).await;
    assert!(markdown(&third).contains("returning visitor, theme dark"), "{third}");
    let (_, theirs) =
        app.request_as("other-key", reqwest::Method::POST, "/v2/scrape", Some(&visit(false))).await;
    assert!(markdown(&theirs).contains("first visit"), "profiles are per team: {theirs}");
}

#[tokio::test]
async fn subresources_obey_the_address_policy() {
    let site = FixtureSite::start();
    let app = TestServer::builder()
        .settings(|s| {
            s.security.allow_private_targets = false;
            s.security.allowed_private_hosts = vec!["127.0.0.1".into()];
        })
        .start()
        .await;
    // The page's host is allowed; what it loads from another loopback name is not.
    let (status, body) = scrape(&app, json!({"url": site.url("/js/leak"), "waitFor": 300})).await;
    assert_eq!(status, 200, "{body}");
    assert!(markdown(&body).contains("refused"), "{body}");
    assert_eq!(site.hits("/api/content"), 0, "the private resource was never requested");
    let blocked_page = site.url("/js/leak").replace("127.0.0.1", "localhost");
    let (status, body) = scrape(&app, json!({"url": blocked_page, "waitFor": 100})).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("URL_BLOCKED")), "{body}");
}

#[tokio::test]
async fn a_crashed_browser_is_replaced() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, _) = scrape(&app, json!({"url": site.url("/js/late"), "waitFor": 10})).await;
    assert_eq!(status, 200);
    let data = app.data_dir();
    let flags = browser_command_lines(&data).join(" ");
    for flag in
        ["--headless", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
    {
        assert!(flags.split(' ').any(|f| f == flag), "{flag} in {flags}");
    }
    assert!(!flags.contains("----"), "{flags}");
    let killed = kill_browsers_of(&data);
    assert!(killed > 0, "a Chromium process of this server was running");
    let (status, body) = scrape(&app, json!({"url": site.url("/js/late"), "waitFor": 400})).await;
    assert_eq!(status, 200, "{body}");
    assert!(markdown(&body).contains("harvest festival"), "{body}");

    // Killed in the middle of a render: the work is tried again on a new browser.
    let slow = scrape(&app, json!({"url": site.url("/js/late"), "waitFor": 2500}));
    let loaded_before = site.hits("/js/late");
    let killer = async {
        // The render is under way once the browser has loaded the page (it then waits 2.5 s).
        let limit = std::time::Duration::from_secs(20);
        crate::common::wait_for("the render loads the page", limit, || async {
            (site.hits("/js/late") > loaded_before).then_some(())
        })
        .await;
        kill_browsers_of(&data)
    };
    let ((status, body), killed) = tokio::join!(slow, killer);
    assert!(killed > 0, "the browser was running during the render");
    assert_eq!(status, 200, "{body}");
    assert!(markdown(&body).contains("harvest festival"), "{body}");

    // The killed browsers' helpers outlived them; once those are gone too, the profiles are
    // removed: only the running browser's is left, and it stays left.
    let limit = std::time::Duration::from_secs(15);
    crate::common::wait_for("the killed browsers' profiles removed", limit, || async {
        (profile_dirs(&data).len() == browsers_of(&data).len()).then_some(())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(profile_dirs(&data).len(), browsers_of(&data).len(), "no profile made again by a helper");
}

/// The browser profile directories under the data directory `data`.
pub(crate) fn profile_dirs(data: &std::path::Path) -> Vec<std::path::PathBuf> {
    let entries = std::fs::read_dir(data.join("chromium")).map(|d| d.flatten().collect::<Vec<_>>());
    let paths = entries.unwrap_or_default().into_iter().map(|e| e.path());
    paths
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("profile-")))
        .collect()
}

/// Process ids and command lines (arguments joined by spaces) of the main Chromium
/// processes whose command line names `data`.
pub(crate) fn browsers_of(data: &std::path::Path) -> Vec<(i32, String)> {
    let marker = data.to_string_lossy().into_owned();
    processes().into_iter().filter(|p| is_browser_of(p, &marker)).map(|p| (p.pid, p.cmdline)).collect()
}

/// Process ids of the Chromium renderers of the server on `data`: a reused tab keeps its
/// renderer, a fresh one starts another.
pub(crate) fn renderers_of(data: &std::path::Path) -> std::collections::BTreeSet<i32> {
    helpers_of(data).into_iter().filter(|p| p.cmdline.contains("--type=renderer")).map(|p| p.pid).collect()
}

/// Process ids of every helper process (zygotes, renderers, GPU, network) of the browsers of
/// the server on `data`.
pub(crate) fn helper_pids_of(data: &std::path::Path) -> Vec<i32> {
    helpers_of(data).into_iter().map(|p| p.pid).collect()
}

/// A process as `/proc` shows it.
struct Process {
    pid: i32,
    parent: i32,
    cmdline: String,
}

fn processes() -> Vec<Process> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The parent is the second field after the command name, which ends with ')'.
        let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        found.push(Process { pid, parent: parent.unwrap_or(0), cmdline });
    }
    found
}

/// A main Chromium process (no `--type=`) whose command line names the data directory.
fn is_browser_of(process: &Process, marker: &str) -> bool {
    let cmdline = &process.cmdline;
    cmdline.contains("chrom") && cmdline.contains(marker) && !cmdline.contains("--type=")
}

/// The helper processes (zygotes, renderers, GPU, network) below the browsers of the server
/// on `data`: their command lines need not name the data directory.
fn helpers_of(data: &std::path::Path) -> Vec<Process> {
    let marker = data.to_string_lossy().into_owned();
    let all = processes();
    let mut below: std::collections::BTreeSet<i32> =
        all.iter().filter(|p| is_browser_of(p, &marker)).map(|p| p.pid).collect();
    loop {
        let more: Vec<i32> = all
            .iter()
            .filter(|p| below.contains(&p.parent) && !below.contains(&p.pid))
            .map(|p| p.pid)
            .collect();
        if more.is_empty() {
            break;
        }
        below.extend(more);
    }
    all.into_iter().filter(|p| below.contains(&p.pid) && p.cmdline.contains("--type=")).collect()
}

fn browser_command_lines(data: &std::path::Path) -> Vec<String> {
    browsers_of(data).into_iter().map(|(_, cmdline)| cmdline).collect()
}

/// Kills (SIGKILL) the Chromium processes whose command line names `data` and returns how
/// many, once each has stopped running (a zombie or gone): a signalled process can still run
/// for a moment after its command line reads empty.
pub(crate) fn kill_browsers_of(data: &std::path::Path) -> usize {
    let mut killed = Vec::new();
    for (raw, _) in browsers_of(data) {
        if let Some(pid) = rustix::process::Pid::from_raw(raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            killed.push(raw);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while killed.iter().any(|pid| still_running(*pid)) {
        assert!(std::time::Instant::now() < deadline, "killed browsers still run: {killed:?}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed.len()
}

/// Whether process `pid` runs: present in /proc and neither a zombie nor dead.
pub(crate) fn still_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

#[tokio::test]
async fn the_browser_checks_certificates_only_when_asked() {
    let tls = crate::common::TlsSite::start();
    let app = TestServer::start().await;
    let (status, body) = scrape(&app, json!({"url": tls.url, "waitFor": 10})).await;
    assert_eq!(status, 200, "skipTlsVerification defaults to true: {body}");
    assert_eq!(body["data"]["metadata"]["engine"], "chromium", "{body}");
    assert!(markdown(&body).contains("Secret garden"), "{body}");
    let (status, body) =
        scrape(&app, json!({"url": tls.url, "waitFor": 10, "skipTlsVerification": false})).await;
    assert_ne!(status, 200, "a self-signed certificate fails a checking render: {body}");
}

#[tokio::test]
async fn rendered_pages_go_through_the_enhanced_proxy_when_asked() {
    let site = FixtureSite::start();
    let proxy = crate::common::ProxyServer::start();
    let url = proxy.url.clone();
    let app = TestServer::builder().settings(move |s| s.proxy.enhanced_url = url).start().await;
    let (status, body) =
        scrape(&app, json!({"url": site.url("/article"), "waitFor": 10, "proxy": "enhanced"})).await;
    assert_eq!(status, 200, "{body}");
    let meta = &body["data"]["metadata"];
    assert_eq!(
        (meta["engine"].as_str(), meta["proxyUsed"].as_str()),
        (Some("chromium"), Some("stealth")),
        "{body}"
    );
    assert!(
        markdown(&body).contains("Served through the proxy"),
        "the browser's page came through the proxy: {body}"
    );
    assert_eq!(site.hits("/article"), 0, "nothing went to the site directly");

    let before = proxy.requests();
    let (status, body) = scrape(&app, json!({"url": site.url("/article"), "waitFor": 10, "maxAge": 0})).await;
    assert_eq!(status, 200, "{body}");
    assert!(markdown(&body).contains("tomato"), "{body}");
    assert_eq!(proxy.requests(), before, "a basic render goes direct");
}

/// Chromium makes a Unix socket under its temporary directory, whose path has a length
/// limit: a server whose data directory has a long path still renders.
#[tokio::test]
async fn a_data_directory_with_a_long_path_still_renders() {
    let site = FixtureSite::start();
    let data = tempfile::Builder::new()
        .prefix("a-data-directory-whose-path-is-longer-than-a-unix-socket-path-may-be-")
        .tempdir()
        .expect("tempdir");
    let app = TestServer::builder_on(data).start().await;
    let (status, body) = scrape(&app, json!({"url": site.url("/js/late"), "waitFor": 10})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["metadata"]["engine"], "chromium", "{body}");
}

/// Where Debian's headless shell is not installed, the server drives the full `chromium`
/// (the same source built with its desktop window): a detected app shell is rendered and a
/// screenshot taken.
#[tokio::test]
async fn the_full_chromium_renders_when_the_shell_is_not_there() {
    let site = FixtureSite::start();
    // The command the server falls back to (`chromium` on the PATH, Debian's script that
    // execs the browser).
    let full = |s: &mut ferrocrawl::config::Settings| s.browser.executable = "/usr/bin/chromium".into();
    let app = TestServer::builder().settings(full).start().await;
    let (status, shell) = scrape(&app, json!({"url": site.url("/js/shell"), "maxAge": 0})).await;
    assert_eq!(status, 200, "{shell}");
    assert!(markdown(&shell).contains("sixteen hours of light"), "the app shell was rendered: {shell}");
    assert_eq!(shell["data"]["metadata"]["engine"], "chromium");
    let browsers = browsers_of(&app.data_dir());
    assert!(!browsers.is_empty(), "a browser of this server runs");
    for (_, command) in &browsers {
        assert!(command.starts_with("/usr/lib/chromium/chromium "), "the full browser runs: {command}");
    }
    let formats = json!(["markdown", {"type": "screenshot", "viewport": {"width": 640, "height": 480}}]);
    let (status, shot) = scrape(&app, json!({"url": site.url("/article"), "formats": formats})).await;
    assert_eq!(status, 200, "{shot}");
    let (status, png) = download(shot["data"]["screenshot"].as_str().expect("screenshot URL"), KEY).await;
    assert_eq!((status, png_size(&png)), (200, (640, 480)));
}
