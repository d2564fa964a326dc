//! The official Firecrawl SDKs work against the server: Python (`firecrawl-py`) for scrape,
//! crawl, map, search, browser sessions, the language-model formats and the nodes of a
//! cluster; JavaScript (`@mendable/firecrawl-js`) for search. The test command installs the SDKs; a missing SDK
//! fails its test rather than skipping it.

use std::process::Command;

use crate::common::openai::{Behaviour, FakeModel};
use crate::common::searchsite::SearchSite;
use crate::common::{CrawlSite, FixtureSite, KEY, TestServer};

/// Interpreter with `firecrawl-py` installed (`SDK_PYTHON`, else the one the test script
/// prepares under `target/`, else `python3`).
fn python() -> String {
    if let Ok(p) = std::env::var("SDK_PYTHON") {
        return p;
    }
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/target/sdk-venv/bin/python");
    if std::path::Path::new(venv).exists() { venv.to_owned() } else { "python3".to_owned() }
}

/// Runs `script` with the server's URL and key and the site's base URL.
async fn run_script(script: &'static str, base: String, site_url: String, expect: &str) {
    run_with(python(), Vec::new(), script, base, site_url, expect).await;
}

/// Runs the Node.js `script` with the modules the test command installs under
/// `target/sdk-node`.
async fn run_node(script: &'static str, base: String, site_url: String, expect: &str) {
    let modules = concat!(env!("CARGO_MANIFEST_DIR"), "/target/sdk-node/node_modules");
    run_with("node".into(), vec![("NODE_PATH", modules.to_owned())], script, base, site_url, expect).await;
}

/// Runs `script` with `program`, the server's URL and key and the site's base URL (and
/// `env`, which may set others or replace those); it must succeed and print `expect`.
async fn run_with(
    program: String,
    env: Vec<(&'static str, String)>,
    script: &'static str,
    base: String,
    site_url: String,
    expect: &str,
) {
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .arg(script)
            .env("SDK_API_URL", base)
            .env("SDK_API_KEY", KEY)
            .env("SDK_SITE", site_url)
            .env("NO_PROXY", "*")
            .envs(env)
            .output()
    })
    .await
    .expect("join")
    .expect("run the SDK check (install its interpreter with the README's test command)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK check failed (the README's test command installs the SDKs):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(expect), "{stdout}");
}

#[tokio::test]
async fn python_sdk_scrapes_through_the_server() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_scrape.py");
    run_script(script, app.base.clone(), site.url(""), "sdk ok").await;
}

#[tokio::test]
async fn python_sdk_drives_browser_sessions() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_browser.py");
    run_script(script, app.base.clone(), site.url(""), "sdk browser ok").await;
}

#[tokio::test]
async fn python_sdk_uses_the_language_model_formats() {
    let site = FixtureSite::start();
    let model = FakeModel::start(Behaviour::default());
    let app = model.server().start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_llm.py");
    run_script(script, app.base.clone(), site.url(""), "sdk llm ok").await;
}

#[tokio::test]
async fn python_sdk_crawls_and_maps_through_the_server() {
    let site = CrawlSite::start(20);
    let app = TestServer::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_crawl.py");
    run_script(script, app.base.clone(), site.url(""), "sdk crawl ok").await;
}

/// The Python SDK against a three-node cluster, a client per node: a crawl or batch
/// started through one node is polled and paged (`next`), listed, read for errors and
/// cancelled through the others.
#[tokio::test]
async fn python_sdk_uses_any_node_of_a_cluster() {
    let site = CrawlSite::start(20);
    let nodes = crate::cluster::three_nodes(&[], &[]).await;
    let urls: Vec<&str> = nodes.iter().map(crate::cluster::Node::base).collect();
    let env = vec![("SDK_API_URLS", urls.join(" ")), ("SDK_API_KEY", nodes[0].key.clone())];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_cluster.py");
    run_with(python(), env, script, urls[0].to_owned(), site.url(""), "sdk cluster ok").await;
}

#[tokio::test]
async fn python_sdk_searches_the_servers_index() {
    let site = SearchSite::start();
    let app = TestServer::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_search.py");
    run_script(script, app.base.clone(), site.url("docs.localhost", ""), "sdk search ok").await;
}

/// The JavaScript SDK (`@mendable/firecrawl-js`, which the test command installs under
/// `target/sdk-node`) searches the same way.
#[tokio::test]
async fn javascript_sdk_searches_the_servers_index() {
    let site = SearchSite::start();
    let app = TestServer::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_search.js");
    run_node(script, app.base.clone(), site.url("docs.localhost", ""), "sdk search ok").await;
}

/// Playwright's `connectOverCDP` on a browser session's `cdpUrl` (playwright-core, which
/// the test command installs under `target/sdk-node`): the session's page only, new pages in
/// its context, file URLs refused, the session left running after disconnecting.
#[tokio::test]
async fn playwright_drives_a_browser_session_over_its_cdp_url() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/check_playwright.js");
    run_node(script, app.base.clone(), site.url(""), "playwright ok").await;
}
