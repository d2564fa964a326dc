//! Faults an operator meets: the data disk fills up (new work refused with 503
//! `STORAGE_UNAVAILABLE`, scrapes still answered, running jobs paused, nothing committed
//! lost, all resumed once space is back), SIGTERM in the middle of crawls (a quick exit and
//! every crawl finished after the restart, each page once), a stop that cuts off a request
//! running longer than its grace period, and a second server started on
//! a data directory in use (refused, saying why), and a server killed with -9 (its Chromium
//! processes end with it, and its browser sessions are billed when it starts again).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::crawlsite::CHAIN_LEN;
use crate::common::openai::{Behaviour, FakeModel};
use crate::common::process::{Binary, run};
use crate::common::{CrawlSite, assert_error, decode, wait_for};

/// A small tmpfs mounted on a fresh directory (unmounted when dropped).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(mib: u64) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let size = format!("size={mib}m");
        let out =
            as_root(&["mount", "-t", "tmpfs", "-o", &size, "tmpfs", dir.path().to_str().expect("utf8")]);
        assert!(
            out.status.success(),
            "this test mounts a small tmpfs as the data disk, as root or with sudo: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if !rustix::process::geteuid().is_root() {
            as_root(&[
                "chown",
                &rustix::process::geteuid().as_raw().to_string(),
                dir.path().to_str().expect("utf8"),
            ]);
        }
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes free on it.
    fn free(&self) -> u64 {
        let stat = rustix::fs::statvfs(self.path()).expect("statvfs");
        stat.f_bavail * stat.f_frsize
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        as_root(&["umount", "-l", self.dir.path().to_str().expect("utf8")]);
    }
}

/// Runs `command` as root: directly when the tests run as root, else through `sudo -n`.
fn as_root(command: &[&str]) -> std::process::Output {
    let mut cmd = if rustix::process::geteuid().is_root() {
        Command::new(command[0])
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("-n").arg(command[0]);
        sudo
    };
    cmd.args(&command[1..]).output().expect("run as root")
}

/// A client for one server and key.
struct Api {
    base: String,
    key: String,
    client: reqwest::Client,
}

impl Api {
    fn of(server: &Binary, data: &Path) -> Self {
        ferrocrawl::scrape::engine::http::install_crypto_provider();
        let key = std::fs::read_to_string(data.join("api-key")).expect("key").trim().to_owned();
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        Self { base: server.base.clone(), key, client }
    }

    async fn call(&self, method: reqwest::Method, path_or_url: &str, body: Option<Value>) -> (u16, Value) {
        let url = if path_or_url.starts_with("http") {
            path_or_url.to_owned()
        } else {
            format!("{}{path_or_url}", self.base)
        };
        let mut request = self.client.request(method, url).bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        decode(request.send().await.expect("request")).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path_or_url: &str) -> Value {
        let (status, body) = self.call(reqwest::Method::GET, path_or_url, None).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// The job's final status and the source URL of every document (all pages of `next`).
    async fn finished(&self, path: &str, limit: Duration) -> (Value, Vec<String>) {
        let done = wait_for("the job to end", limit, || async {
            let status = self.get(path).await;
            (status["status"] != "scraping").then_some(status)
        })
        .await;
        let mut docs: Vec<Value> = done["data"].as_array().cloned().unwrap_or_default();
        let mut next = done["next"].as_str().map(str::to_owned);
        while let Some(url) = next {
            let page = self.get(&url).await;
            docs.extend(page["data"].as_array().cloned().unwrap_or_default());
            next = page["next"].as_str().map(str::to_owned);
        }
        let sources =
            docs.iter().map(|d| d["metadata"]["sourceURL"].as_str().expect("source").to_owned()).collect();
        (done, sources)
    }
}

/// The chain crawl's pages, once each.
fn chain_pages(site: &CrawlSite) -> BTreeSet<String> {
    (0..CHAIN_LEN + 2).map(|n| site.url(&format!("/chain/{n}"))).collect()
}

fn assert_each_once(sources: &[String], expected: &BTreeSet<String>) {
    let unique: BTreeSet<String> = sources.iter().cloned().collect();
    assert_eq!(unique.len(), sources.len(), "a page came back twice: {sources:?}");
    assert_eq!(&unique, expected);
}

/// Fills the disk until `leave` bytes are free.
fn fill(disk: &Tmpfs, leave: u64) -> PathBuf {
    let filler = disk.path().join("filler");
    let size = disk.free().saturating_sub(leave);
    let file = std::fs::File::create(&filler).expect("filler");
    // Written, not only sized: tmpfs counts the pages a file holds.
    let chunk = vec![0x5a_u8; 1 << 20];
    let mut writer = std::io::BufWriter::new(file);
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        std::io::Write::write_all(&mut writer, &chunk[..n]).expect("fill");
        left -= n as u64;
    }
    std::io::Write::flush(&mut writer).expect("flush");
    filler
}

#[tokio::test]
async fn a_full_data_disk_refuses_new_jobs_keeps_answering_and_recovers() {
    let site = CrawlSite::start(30);
    let disk = Tmpfs::mount(96);
    let data = disk.path().join("data");
    let env = [("FERROCRAWL_STORAGE__MIN_FREE_MB", "24"), ("FERROCRAWL_STORAGE__CACHE_MB", "8")];
    let server = Binary::serve(&data, &env);
    let api = Api::of(&server, &data);

    // Committed before the disk fills.
    let (status, started) =
        api.post("/v2/batch/scrape", json!({"urls": [site.url("/chain/0"), site.url("/chain/1")]})).await;
    assert_eq!(status, 200, "{started}");
    let batch = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"));
    let (before, _) = api.finished(&batch, Duration::from_secs(30)).await;
    assert_eq!(before["status"], "completed", "{before}");
    // A crawl running when it fills.
    let (status, started) =
        api.post("/v2/crawl", json!({"url": site.url("/chain/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 1})).await;
    assert_eq!(status, 200, "{started}");
    let crawl = format!("/v2/crawl/{}", started["id"].as_str().expect("id"));
    wait_for("the crawl to get going", Duration::from_secs(30), || async {
        (api.get(&crawl).await["completed"].as_u64() >= Some(5)).then_some(())
    })
    .await;

    assert_eq!(api.call(reqwest::Method::GET, "/ready", None).await, (200, json!({"status": "ready"})));
    let filler = fill(&disk, 16 << 20);
    // New jobs are refused, naming the setting.
    let refused = wait_for("new jobs refused", Duration::from_secs(10), || async {
        let got = api.post("/v2/crawl", json!({"url": site.url("/chain/0")})).await;
        (got.0 == 503).then_some(got)
    })
    .await;
    let message = assert_error(&refused, 503, "STORAGE_UNAVAILABLE");
    assert!(message.contains("storage.min_free_mb"), "{message}");
    let batch_refused = api.post("/v2/batch/scrape", json!({"urls": [site.url("/chain/5")]})).await;
    assert_error(&batch_refused, 503, "STORAGE_UNAVAILABLE");
    // Scrapes still answer, saying their result was not kept.
    let (status, scraped) = api.post("/v2/scrape", json!({"url": site.url("/chain/3")})).await;
    assert_eq!(status, 200, "{scraped}");
    assert!(scraped["data"]["markdown"].as_str().is_some_and(|m| !m.is_empty()), "{scraped}");
    assert!(scraped["data"]["warning"].as_str().is_some_and(|w| w.contains("not stored")), "{scraped}");
    // The running crawl holds still.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let paused = api.get(&crawl).await["completed"].as_u64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = api.get(&crawl).await;
    assert_eq!(
        (still["status"].as_str(), still["completed"].as_u64()),
        (Some("scraping"), paused),
        "{still}"
    );
    // What was committed is all there.
    let kept = api.get(&batch).await;
    assert_eq!((kept["status"].as_str(), kept["completed"].as_u64()), (Some("completed"), Some(2)), "{kept}");
    assert_eq!(kept["data"], before["data"]);
    let text = api
        .client
        .get(format!("{}/metrics", api.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(text.lines().any(|l| l == "store_short_of_space 1"), "{text}");
    // A load balancer that asks `/ready` sends new work elsewhere meanwhile.
    let (status, readiness) = api.call(reqwest::Method::GET, "/ready", None).await;
    assert_eq!((status, readiness["status"].as_str()), (503, Some("unready")), "{readiness}");
    assert!(
        readiness["reasons"][0].as_str().is_some_and(|r| r.contains("storage.min_free_mb")),
        "{readiness}"
    );

    // Space back: the crawl finishes with every page once, and new work is taken again.
    std::fs::remove_file(filler).expect("free the disk");
    let (done, sources) = api.finished(&crawl, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_each_once(&sources, &chain_pages(&site));
    let (status, started) = api.post("/v2/batch/scrape", json!({"urls": [site.url("/chain/7")]})).await;
    assert_eq!(status, 200, "{started}");
    let (after, _) = api
        .finished(
            &format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id")),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(after["completed"].as_u64(), Some(1), "{after}");
    assert_eq!(api.call(reqwest::Method::GET, "/ready", None).await, (200, json!({"status": "ready"})));
    let (status, _) = server.terminate();
    assert!(status.success());
}

#[tokio::test]
async fn sigterm_in_the_middle_of_crawls_exits_quickly_and_every_crawl_resumes() {
    let site = CrawlSite::start(40);
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[]);
    let api = Api::of(&server, dir.path());
    let mut crawls = Vec::new();
    for _ in 0..3 {
        let body = json!({"url": site.url("/chain/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 2});
        let (status, started) = api.post("/v2/crawl", body).await;
        assert_eq!(status, 200, "{started}");
        crawls.push(format!("/v2/crawl/{}", started["id"].as_str().expect("id")));
    }
    wait_for("every crawl under way", Duration::from_secs(30), || async {
        for crawl in &crawls {
            if api.get(crawl).await["completed"].as_u64() < Some(3) {
                return None;
            }
        }
        Some(())
    })
    .await;

    for crawl in &crawls {
        let status = api.get(crawl).await;
        assert_eq!(status["status"], "scraping", "every crawl must still run when stopped: {status}");
    }
    let asked = Instant::now();
    let (status, log) = server.terminate();
    let took = asked.elapsed();
    assert!(status.success(), "{log}");
    assert!(took < Duration::from_secs(10), "SIGTERM took {took:?} to end the server: {log}");

    let server = Binary::serve(dir.path(), &[]);
    let api = Api::of(&server, dir.path());
    for crawl in &crawls {
        let (done, sources) = api.finished(crawl, Duration::from_secs(60)).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_each_once(&sources, &chain_pages(&site));
    }
    server.terminate();
}

/// A stop waits for running requests only as long as `server.shutdown_grace_secs` allows:
/// a scrape of a page that answers after 40 s does not hold the process (the default, 30 s,
/// would), so a supervisor's own grace period (docker stop's 10 s) can be kept.
#[tokio::test]
async fn a_stop_waits_for_running_requests_only_as_long_as_the_setting_allows() {
    let site = CrawlSite::start(40_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[("FERROCRAWL_SERVER__SHUTDOWN_GRACE_SECS", "1")]);
    let api = Api::of(&server, dir.path());
    let scrape = {
        let (client, url) = (api.client.clone(), format!("{}/v2/scrape", api.base));
        let body = json!({"url": site.url("/"), "timeout": 60_000});
        let key = api.key.clone();
        tokio::spawn(async move { client.post(url).bearer_auth(key).json(&body).send().await })
    };
    wait_for("the scrape's request at the site", Duration::from_secs(20), || async {
        (!site.requests().is_empty()).then_some(())
    })
    .await;
    let asked = Instant::now();
    let (status, log) = server.terminate();
    let took = asked.elapsed();
    assert!(status.success(), "{log}");
    assert!(took < Duration::from_secs(20), "the stop waited {took:?} for a 40 s page: {log}");
    assert!(scrape.await.expect("task").is_err(), "the running scrape is cut off at the stop");
}

#[tokio::test]
async fn a_second_server_on_a_data_directory_in_use_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = Binary::serve(dir.path(), &[]);
    let data = dir.path().to_str().expect("utf8");
    let second = run(&["serve", "--port", "0", "--data", data], &[]);
    let log = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second server started on the same data: {log}");
    assert!(log.contains("in use by another ferrocrawl process"), "{log}");
    // The first one is unharmed.
    let api = Api::of(&first, dir.path());
    let (status, _) = api.call(reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 200);
    first.terminate();
}

#[tokio::test]
async fn a_killed_server_takes_its_browsers_with_it() {
    let site = crate::common::FixtureSite::start();
    let dir = tempfile::tempdir().expect("tempdir");
    // The server's temporary directory: the browser must leave nothing there.
    let tmp = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[("TMPDIR", tmp.path().to_str().expect("utf8"))]);
    let api = Api::of(&server, dir.path());
    let (status, body) = api.post("/v2/scrape", json!({"url": site.url("/js/late"), "waitFor": 10})).await;
    assert_eq!(status, 200, "{body}");
    let browsers = crate::browser::browsers_of(dir.path());
    assert!(!browsers.is_empty(), "the scrape started a Chromium of this server");
    let helpers = crate::browser::helper_pids_of(dir.path());
    assert!(!helpers.is_empty(), "the browser runs its pages in helper processes");

    server.kill9();
    // Nothing was left to stop them: they end because their parent did, and their helpers
    // with them.
    wait_for("the browsers to end with the server", Duration::from_secs(15), || async {
        crate::browser::browsers_of(dir.path()).is_empty().then_some(())
    })
    .await;
    wait_for("the browsers' helpers to end", Duration::from_secs(15), || async {
        (!helpers.iter().any(|pid| crate::browser::still_running(*pid))).then_some(())
    })
    .await;
    let left: Vec<_> =
        std::fs::read_dir(tmp.path()).expect("list").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the browser left files in the temporary directory: {left:?}");
}

#[tokio::test]
async fn a_stopped_server_leaves_no_browser_profile_behind() {
    let site = crate::common::FixtureSite::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &[]);
    let api = Api::of(&server, dir.path());
    let body = json!({"url": site.url("/js/late"), "waitFor": 10, "maxAge": 0});
    let scrapes = (0..3).map(|_| api.post("/v2/scrape", body.clone()));
    for (status, body) in futures::future::join_all(scrapes).await {
        assert_eq!(status, 200, "{body}");
    }
    let profiles = || crate::browser::profile_dirs(dir.path());
    assert!(!profiles().is_empty(), "the scrapes ran in a browser of this server");

    let (status, log) = server.terminate();
    assert!(status.success(), "{log}");
    assert!(crate::browser::browsers_of(dir.path()).is_empty(), "a browser outlived the server");
    // A browser killed rather than closed has its helpers write into its profile directory
    // after it was removed; give them the time they took.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(profiles(), Vec::<std::path::PathBuf>::new(), "profile directories left behind");
}

/// Credits the team used this month, as `/v2/team/credit-usage/historical` reports them.
async fn credits_used(api: &Api) -> u64 {
    let usage = api.get("/v2/team/credit-usage/historical").await;
    usage["periods"].as_array().expect("periods").iter().filter_map(|p| p["creditsUsed"].as_u64()).sum()
}

/// Sessions live when the server is killed are ended and billed at its next start, once:
/// a plain one the least a session costs, one an agent prompt ran in at the agent's rate.
#[tokio::test]
async fn browser_sessions_cut_short_by_a_kill_are_billed_at_the_next_start() {
    let site = crate::common::FixtureSite::start();
    let model = FakeModel::start(Behaviour::default());
    let url = model.url();
    let env = [("FERROCRAWL_LLM__BASE_URL", url.as_str()), ("FERROCRAWL_LLM__MODEL", "test-model")];
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(dir.path(), &env);
    let api = Api::of(&server, dir.path());
    let (status, made) = api.post("/v2/browser", json!({})).await;
    assert_eq!(status, 200, "{made}");
    let id = made["id"].as_str().expect("id").to_owned();
    let (status, page) =
        api.post("/v2/scrape", json!({"url": site.url("/js/interactive"), "formats": ["markdown"]})).await;
    assert_eq!(status, 200, "{page}");
    let scrape = page["data"]["metadata"]["scrapeId"].as_str().expect("scrapeId").to_owned();
    let prompt = json!({"prompt": "Search the page for quokka and tell me what it says", "timeout": 60});
    let (status, done) = api.post(&format!("/v2/scrape/{scrape}/interact"), prompt).await;
    assert_eq!((status, &done["output"]), (200, &json!("Searched for quokka")), "{done}");
    let before = credits_used(&api).await;
    server.kill9();

    // Nothing ended the sessions; the next start does, and bills each for under a minute:
    // 2 for the plain one, 7 for the one the agent worked in.
    let server = Binary::serve(dir.path(), &env);
    let api = Api::of(&server, dir.path());
    let (status, gone) = api.post(&format!("/v2/browser/{id}/execute"), json!({"code": "1"})).await;
    assert_eq!(status, 410, "{gone}");
    assert_eq!(credits_used(&api).await, before + 2 + 7, "the killed sessions' minimum charges");
    // Billed once: a later start finds them ended.
    server.terminate();
    let server = Binary::serve(dir.path(), &env);
    let api = Api::of(&server, dir.path());
    assert_eq!(credits_used(&api).await, before + 2 + 7, "billed once");
    server.terminate();
}
