//! The real binary: first-start key bootstrap, `keys create`, configuration errors and
//! `teams credits` and `teams secret`, environment overrides, graceful shutdown with data flushed, quiet logs for lockdown and
//! zero-data-retention requests, `extract` and `parse`.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::common::crawlsite::HUB_LEN;
use crate::common::process::{Binary, run};
use crate::common::{FixtureSite, decode};

async fn call(
    base: &str,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut req = client.request(method, format!("{base}{path}")).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    decode(req.send().await.expect("request")).await
}

const SOME_ID: &str = "/v2/scrape/0190b4a2-7c3e-7000-8000-000000000000";

#[tokio::test]
async fn first_start_creates_prints_and_saves_a_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[]);
    let key_file = dir.path().join("api-key");
    let saved = std::fs::read_to_string(&key_file).expect("api-key written").trim().to_owned();
    assert!(saved.starts_with("fc-"), "{saved}");
    let mode = std::fs::metadata(&key_file).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(server.stdout().contains(&saved), "the key is printed once: {}", server.stdout());
    let (status, _) = call(&server.base, &saved, reqwest::Method::GET, SOME_ID, None).await;
    assert_eq!(status, 404, "the printed key authenticates");
    let (status, _) = call(&server.base, "fc-guess", reqwest::Method::GET, SOME_ID, None).await;
    assert_eq!(status, 401);
    let (code, _) = server.terminate();
    assert!(code.success());
    let again = Binary::serve(dir.path(), &[]);
    assert!(!again.stdout().contains("Created API key"), "no second key: {}", again.stdout());
}

#[tokio::test]
async fn keys_create_adds_team_keys_while_the_server_is_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf8");
    let out = run(&["keys", "create", "--team", "ops", "--key", "ops-secret-123", "--data", data], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ops-secret-123");
    let out = run(&["keys", "create", "--team", "research", "--data", data], &[]);
    let generated = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(generated.starts_with("fc-") && generated.len() == 35, "{generated}");
    let out = run(&["keys", "create", "--team", "bad team", "--data", data], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("team name"));
    let out = run(&["teams", "credits", "--team", "ops", "--plan", "3", "--data", data], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["teams", "credits", "--team", "ops", "--plan", "lots", "--data", data], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--plan"), "the bad flag is named");
    let secret = |extra: &[&str]| {
        let mut args = vec!["teams", "secret", "--team", "ops", "--data", data];
        args.extend_from_slice(extra);
        let out = run(&args, &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let first = secret(&[]);
    assert!(first.starts_with("whsec-"), "{first}");
    assert_eq!(secret(&[]), first, "the team keeps its secret");
    let rotated = secret(&["--rotate"]);
    assert!(rotated.starts_with("whsec-") && rotated != first);
    assert_eq!(secret(&["--secret", "my-own-signing-secret"]), "my-own-signing-secret");
    assert_eq!(secret(&[]), "my-own-signing-secret");

    let server = Binary::serve(dir.path(), &[]);
    assert!(!dir.path().join("api-key").exists(), "keys existed, so no bootstrap key");
    for key in ["ops-secret-123", generated.as_str()] {
        let (status, _) = call(&server.base, key, reqwest::Method::GET, SOME_ID, None).await;
        assert_eq!(status, 404, "{key} authenticates");
    }
    let (_, usage) =
        call(&server.base, "ops-secret-123", reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(
        (usage["data"]["remainingCredits"].as_u64(), usage["data"]["planCredits"].as_u64()),
        (Some(3), Some(3))
    );
    let (_, usage) =
        call(&server.base, &generated, reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(usage["data"]["planCredits"], Value::Null, "other teams keep their plan: {usage}");
    let out = run(&["keys", "create", "--team", "late", "--data", data], &[]);
    assert!(!out.status.success(), "the data directory is locked while serving");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("in use"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn configuration_errors_stop_start_up_and_env_overrides_apply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let data = data.to_str().expect("utf8");
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[scrape]\nmax_redirectz = 3\n").expect("write");
    let out = run(&["serve", "--port", "0", "--data", data, "--config", file.to_str().expect("utf8")], &[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("max_redirectz"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out =
        run(&["serve", "--port", "0", "--data", data], &[("FERROCRAWL_SECURITY__ALLOW_EVERYTHING", "true")]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("allow_everything"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out =
        run(&["serve", "--port", "0", "--data", data], &[("FERROCRAWL_PROXY__ENHANCED_URL", "ftp://x")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("proxy.enhanced_url"));

    let site = FixtureSite::start();
    let dir2 = tempfile::tempdir().expect("tempdir");
    let out = run(
        &[
            "keys",
            "create",
            "--team",
            "default",
            "--key",
            "config-test-key",
            "--data",
            dir2.path().to_str().expect("utf8"),
        ],
        &[],
    );
    assert!(out.status.success());
    let server = Binary::serve(dir2.path(), &[("FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS", "false")]);
    let (status, body) = call(
        &server.base,
        "config-test-key",
        reqwest::Method::POST,
        "/v2/scrape",
        Some(json!({"url": site.url("/article")})),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("URL_BLOCKED")),
        "env var wins over the test default"
    );
}

#[tokio::test]
async fn graceful_shutdown_keeps_stored_results() {
    let site = FixtureSite::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[]);
    let key = std::fs::read_to_string(dir.path().join("api-key")).expect("key").trim().to_owned();
    let (status, body) = call(
        &server.base,
        &key,
        reqwest::Method::POST,
        "/v2/scrape",
        Some(json!({"url": site.url("/article")})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let id = body["data"]["metadata"]["scrapeId"].as_str().expect("id").to_owned();
    let (code, log) = server.terminate();
    assert!(code.success(), "{log}");
    assert!(log.contains("data flushed"), "{log}");
    let server = Binary::serve(dir.path(), &[]);
    let (status, stored) =
        call(&server.base, &key, reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["data"]["markdown"], body["data"]["markdown"]);
}

#[tokio::test]
async fn lockdown_and_zero_retention_urls_never_reach_the_log() {
    let site = FixtureSite::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[("RUST_LOG", "debug")]);
    let key = std::fs::read_to_string(dir.path().join("api-key")).expect("key").trim().to_owned();
    let post = |body: Value| call(&server.base, &key, reqwest::Method::POST, "/v2/scrape", Some(body));
    let (status, _) = post(json!({"url": site.url("/notes.txt?visible-marker")})).await;
    assert_eq!(status, 200);
    let (status, body) = post(json!({"url": site.url("/article?lockdown-secret"), "lockdown": true})).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("SCRAPE_LOCKDOWN_CACHE_MISS")));
    let (status, _) = post(json!({"url": site.url("/article?zdr-secret"), "zeroDataRetention": true})).await;
    assert_eq!(status, 200);
    let (_, log) = server.terminate();
    assert!(
        log.contains("visible-marker"),
        "ordinary scrapes are logged, so the check below means something: {log}"
    );
    assert!(!log.contains("lockdown-secret"), "lockdown URL logged: {log}");
    assert!(!log.contains("zdr-secret"), "zero-data-retention URL logged: {log}");
}

#[test]
fn extract_prints_markdown_of_a_local_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("page.html");
    std::fs::write(&file, crate::common::site::ARTICLE).expect("write");
    let out =
        run(&["extract", file.to_str().expect("utf8"), "--url", "https://garden.example/tips/tomatoes"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("# Growing Tomatoes at Home") && !md.contains("Popular posts"), "{md}");
    assert!(md.contains("[soil guide](https://garden.example/guides/soil)"), "{md}");
}

#[test]
fn parse_prints_markdown_of_a_local_document() {
    use ferrocrawl::documents::samples::{self, PdfText};
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.pdf");
    let page = vec![
        PdfText { x: 72.0, y: 700.0, size: 20.0, text: "Bee keeping".into() },
        PdfText { x: 72.0, y: 660.0, size: 11.0, text: "Check the hives every nine days in May.".into() },
    ];
    std::fs::write(&file, samples::pdf(&[page], "Bees", "")).expect("write");
    let out = run(&["parse", file.to_str().expect("utf8")], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("# Bee keeping\n\nCheck the hives every nine days in May."), "{md}");
    let blank = dir.path().join("scan.pdf");
    std::fs::write(&blank, samples::pdf(&[Vec::new()], "", "")).expect("write");
    let out = run(&["parse", blank.to_str().expect("utf8")], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no text layer"));
    let bad = dir.path().join("broken.docx");
    std::fs::write(&bad, b"PK\x03\x04 cut").expect("write");
    let out = run(&["parse", bad.to_str().expect("utf8")], &[]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("DOCX"));
}

#[test]
fn crawl_and_map_commands_write_what_they_find() {
    let site = crate::common::CrawlSite::start(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let out_str = out.to_str().expect("utf8");
    let start = site.url("/");
    let result = run(
        &["crawl", &start, "--allow-private", "--quiet", "--out", out_str, "--exclude", "^/docs/a/"],
        &[],
    );
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let stdout = String::from_utf8_lossy(&result.stdout);
    // The default crawl's 13 pages minus /docs/a/deep and /docs/a/deep/deeper.
    assert!(stdout.contains("pages=11 failed=1 robots_blocked=2"), "{stdout}");
    let index = std::fs::read_to_string(out.join("index.jsonl")).expect("index");
    let lines: Vec<serde_json::Value> =
        index.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), 11);
    let urls: std::collections::HashSet<&str> = lines.iter().filter_map(|l| l["url"].as_str()).collect();
    assert_eq!(urls.len(), 11, "each page is written once");
    for line in &lines {
        let file = out.join(line["file"].as_str().expect("file"));
        let markdown = std::fs::read_to_string(&file).expect("markdown file");
        assert!(!markdown.is_empty() || line["statusCode"] == 404, "{line}");
    }
    assert!(lines.iter().any(|l| l["title"] == "Orphan"), "sitemap pages are crawled");
    assert_eq!(site.hits("/private/secret"), 0);
    let without_bar =
        run(&["crawl", &start, "--allow-private", "--quiet", "--out", out_str, "--limit", "2"], &[]);
    assert!(String::from_utf8_lossy(&without_bar.stdout).contains("pages=2 "));
    let blocked = run(&["crawl", &start, "--quiet", "--out", out_str], &[]);
    assert!(
        String::from_utf8_lossy(&blocked.stdout).contains("pages=0 failed=1 "),
        "loopback needs --allow-private"
    );

    // Redirects onto pages that are also linked directly: each page written once.
    let hub = site.url("/hub/0");
    let hubs = dir.path().join("hubs");
    let hubs_str = hubs.to_str().expect("utf8");
    let args = ["crawl", &hub, "--allow-private", "--quiet", "--entire-domain", "--include", "^/(hub|go)/"];
    let result = run(&[&args[..], &["--out", hubs_str]].concat(), &[]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains(&format!("pages={HUB_LEN} ")), "{stdout}");
    let index = std::fs::read_to_string(hubs.join("index.jsonl")).expect("index");
    let landed: std::collections::HashSet<String> = index
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["url"]
                .as_str()
                .expect("url")
                .to_owned()
        })
        .collect();
    assert_eq!(landed.len(), HUB_LEN, "one file per landing URL");
    assert_eq!(index.lines().count(), HUB_LEN);

    let mapped = run(&["map", &start, "--allow-private", "--search", "blog"], &[]);
    assert!(mapped.status.success(), "{}", String::from_utf8_lossy(&mapped.stderr));
    let lines: Vec<String> = String::from_utf8_lossy(&mapped.stdout).lines().map(str::to_owned).collect();
    assert_eq!(lines, vec![site.url("/blog/"), site.url("/blog/post-1")]);
}

#[test]
fn crawl_store_is_temporary_unless_data_names_one() {
    let site = crate::common::CrawlSite::start(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let out = dir.path().join("out");
    let out_str = out.to_str().expect("utf8");
    let start = site.url("/");
    let args = ["crawl", &start, "--allow-private", "--quiet", "--out", out_str, "--limit", "3"];
    let result = run(&args, &[("TMPDIR", tmp.to_str().expect("utf8"))]);
    assert!(String::from_utf8_lossy(&result.stdout).contains("pages=3 "), "{result:?}");
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("read tmp").collect();
    assert!(left.is_empty(), "the temporary store is deleted at the end: {left:?}");

    let data = dir.path().join("data");
    let data_str = data.to_str().expect("utf8");
    let result = run(&[&args[..], &["--data", data_str]].concat(), &[]);
    assert!(String::from_utf8_lossy(&result.stdout).contains("pages=3 "), "{result:?}");
    let db = std::fs::metadata(data.join("db").join("db")).expect("the named store is kept");
    assert!(db.len() > 0);
    // A named store keeps the documents too, not only the files written out.
    let store = ferrocrawl::store::Store::open(&data).expect("reopen the named store");
    let jobs = store.jobs.all().expect("jobs");
    assert_eq!(jobs.len(), 1, "one crawl: {jobs:?}");
    let pages = store.jobs.pages(jobs[0].0, 0, 10, usize::MAX).expect("pages");
    assert_eq!(pages.len(), 3);
    for (page, file) in pages.iter().zip(["000001.md", "000002.md", "000003.md"]) {
        let doc: serde_json::Value = serde_json::from_slice(page).expect("stored JSON");
        let written = std::fs::read_to_string(out.join(file)).expect("markdown file");
        assert_eq!(doc["markdown"].as_str(), Some(written.as_str()), "{file} is the stored page");
    }
}
