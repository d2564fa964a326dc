//! Upgrades lose nothing: the data directory of every earlier release (a frozen fixture in
//! `tests/fixtures/datadir/` each, with the script that made it) opens with this build,
//! which upgrades it in place and finishes its jobs; an upgrade killed half-way resumes.
//! The fixtures were crawled from a site on 127.0.0.1:39781 with a webhook receiver on
//! 127.0.0.1:39782 (stored in the jobs), so these tests serve the same pages there. Each
//! server runs with its clock set to a minute after its fixture was made
//! (`TEST_FERROCRAWL_NOW_MS`), so what is kept for a day (a model job, a destroyed browser
//! session) is checked whatever day the tests run.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

use crate::common::process::{Binary, run};
use crate::common::{ActixThread, Receiver, decode, wait_for};

const R010: &[u8] = include_bytes!("../fixtures/datadir/0.1.0.tar.gz");
const R010_FACTS: &str = include_str!("../fixtures/datadir/0.1.0.json");
const R020: &[u8] = include_bytes!("../fixtures/datadir/0.2.0.tar.gz");
const R020_PEER: &[u8] = include_bytes!("../fixtures/datadir/0.2.0-peer.tar.gz");
const R020_FACTS: &str = include_str!("../fixtures/datadir/0.2.0.json");
const R030: &[u8] = include_bytes!("../fixtures/datadir/0.3.0.tar.gz");
const R030_PEER: &[u8] = include_bytes!("../fixtures/datadir/0.3.0-peer.tar.gz");
const R030_FACTS: &str = include_str!("../fixtures/datadir/0.3.0.json");

/// The fixture site's pages (as `tests/fixtures/datadir/site.py` serves them).
async fn fixture_page(req: HttpRequest) -> HttpResponse {
    if req.path() == "/big/0" {
        let paragraphs: String = (0..2500)
            .map(|i| format!("<p>Paragraph {i} of the big page, kept in the page cache of the fixture.</p>"))
            .collect();
        return HttpResponse::Ok().content_type("text/html; charset=utf-8").body(format!(
            "<!DOCTYPE html><html><head><title>Big</title></head><body><main><article><h1>Big page</h1>\
             {paragraphs}</article></main></body></html>"
        ));
    }
    let parts: Vec<&str> = req.path().trim_matches('/').split('/').collect();
    let page = match parts.as_slice() {
        [kind @ ("fast" | "slow"), n] => n.parse::<usize>().ok().filter(|n| *n < 40).map(|n| (*kind, n)),
        _ => None,
    };
    let Some((kind, n)) = page else {
        return HttpResponse::NotFound().content_type("text/html").body("<p>no such page</p>");
    };
    let title = format!("{}{}", kind[..1].to_uppercase(), &kind[1..]);
    let links: String = [n + 1, n + 2]
        .into_iter()
        .filter(|k| *k < 40)
        .map(|k| format!("<li><a href=\"/{kind}/{k}\">{kind} {k}</a></li>"))
        .collect();
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(format!(
        "<!DOCTYPE html><html><head><title>{title} {n}</title></head><body><main><article><h1>{title} page {n}</h1>\
         <p>Page {n} of the {kind} pages, written once and kept as a fixture of the stored format.</p>\
         </article></main><nav><ul>{links}</ul></nav></body></html>"
    ))
}

/// Binds one of the fixtures' fixed addresses; fails clearly when something else keeps it.
/// The ports lie in the kernel's range for outgoing connections, so another test's
/// connection may hold one for a while: the bind is tried again for up to 30 s.
fn bind_fixed(addr: &str) -> TcpListener {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match TcpListener::bind(addr) {
            Ok(listener) => return listener,
            Err(e) if std::time::Instant::now() >= deadline => {
                panic!("the upgrade tests need {addr} (the fixtures' address): {e}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn unpack(archive: &[u8], into: &Path) {
    tar::Archive::new(flate2::read::GzDecoder::new(archive)).unpack(into).expect("unpack the fixture");
}

async fn get(base: &str, key: &str, path: &str) -> (u16, Value) {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    decode(client.get(format!("{base}{path}")).bearer_auth(key).send().await.expect("get")).await
}

async fn post(base: &str, key: &str, path: &str, body: Value) -> (u16, Value) {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    decode(client.post(format!("{base}{path}")).bearer_auth(key).json(&body).send().await.expect("post"))
        .await
}

/// Every document of a job, following `next`.
async fn documents(base: &str, key: &str, path: &str) -> (Value, Vec<Value>) {
    let (status, first) = get(base, key, path).await;
    assert_eq!(status, 200, "{first}");
    let mut docs = first["data"].as_array().cloned().unwrap_or_default();
    let mut next = first["next"].as_str().map(str::to_owned);
    while let Some(url) = next {
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let (_, page) = decode(client.get(&url).bearer_auth(key).send().await.expect("next")).await;
        docs.extend(page["data"].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().map(str::to_owned);
    }
    (first, docs)
}

fn sources(docs: &[Value]) -> Vec<String> {
    let mut out: Vec<String> =
        docs.iter().map(|d| d["metadata"]["sourceURL"].as_str().expect("sourceURL").to_owned()).collect();
    out.sort();
    out
}

fn strings(value: &Value) -> Vec<String> {
    let mut out: Vec<String> =
        value.as_array().expect("list").iter().map(|v| v.as_str().expect("string").to_owned()).collect();
    out.sort();
    out
}

/// When what the fixture made with id `id` was made (a version-7 UUID carries its time).
fn made_ms(id: &str) -> u64 {
    let stamp = uuid::Uuid::parse_str(id).ok().and_then(|id| id.get_timestamp()).expect("a version-7 id");
    let (secs, nanos) = stamp.to_unix();
    secs * 1000 + u64::from(nanos) / 1_000_000
}

/// The setting of a server's clock to a minute after its fixture (`facts`) was made.
fn clock_of(facts: &Value) -> (&'static str, String) {
    let made = made_ms(facts["crawl"]["id"].as_str().expect("id"));
    ("TEST_FERROCRAWL_NOW_MS", (made + 60_000).to_string())
}

/// The fixtures' fixed addresses are shared by the tests of this module: one at a time.
static FIXED_ADDRESSES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_data_directory_of_release_0_1_0_opens_and_finishes_its_jobs() {
    opens_and_finishes_its_jobs(R010, R010_FACTS).await;
}

#[tokio::test]
async fn a_data_directory_of_release_0_2_0_and_its_peer_keep_what_a_teams_owner_was_reported() {
    owner_counts_what_the_other_node_reported(R020, R020_PEER, R020_FACTS).await;
}

#[tokio::test]
async fn a_data_directory_of_release_0_3_0_and_its_peer_keep_what_a_teams_owner_was_reported() {
    owner_counts_what_the_other_node_reported(R030, R030_PEER, R030_FACTS).await;
}

/// Opens the fixture `archive` and its peer's, and checks that the team's owner among the
/// two, as a node of the cluster alone, counts what the other node reported (it is down).
async fn owner_counts_what_the_other_node_reported(archive: &[u8], peer_archive: &[u8], facts: &str) {
    let a = opens_and_finishes_its_jobs(archive, facts).await;
    let facts: Value = serde_json::from_str(facts).expect("facts");
    let clock = clock_of(&facts);
    let peer = tempfile::tempdir().expect("tempdir");
    unpack(peer_archive, peer.path());
    let owner = crate::cluster::owner_of(&["a", "b"], "team:default");
    let (dir, other) = if owner == "a" { (a.path(), "b") } else { (peer.path(), "a") };
    let key = facts["api_key"].as_str().expect("key");
    // The owner's own ledger, then the owner as a node of the cluster, alone: the other node
    // is down, and counts as it last reported.
    let alone = Binary::serve(dir, &[(clock.0, clock.1.as_str())]);
    let own = usage(&alone, key).await;
    alone.terminate();
    let listen = format!(
        "127.0.0.1:{}",
        TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port()
    );
    let secret = facts["cluster"]["secret"].as_str().expect("secret");
    let node = Binary::serve_with(
        dir,
        &["--cluster-listen", &listen],
        &[
            ("FERROCRAWL_CLUSTER__NODE_NAME", owner.as_str()),
            ("FERROCRAWL_CLUSTER__SECRET", secret),
            (clock.0, clock.1.as_str()),
        ],
    );
    let with_reports = usage(&node, key).await;
    let reported = &facts["cluster"]["nodes"][other];
    let expected =
        (reported["credits"].as_u64().expect("credits"), reported["tokens"].as_u64().expect("tokens"));
    assert_eq!(
        (with_reports.0 - own.0, with_reports.1 - own.1),
        expected,
        "node {owner}, the team's owner, counts what node {other} reported ({own:?} alone)"
    );
}

#[tokio::test]
async fn a_data_directory_of_release_0_2_0_still_leaves_out_the_member_it_forgot() {
    leaves_out_the_member_it_forgot(R020, R020_FACTS).await;
}

#[tokio::test]
async fn a_data_directory_of_release_0_3_0_still_leaves_out_the_member_it_forgot() {
    leaves_out_the_member_it_forgot(R030, R030_FACTS).await;
}

/// Opens the fixture `archive` of a node that forgot another, and checks that it starts
/// fetching alone beside the forgotten member's silent address.
async fn leaves_out_the_member_it_forgot(archive: &[u8], facts: &str) {
    let a = opens_and_finishes_its_jobs(archive, facts).await;
    let facts: Value = serde_json::from_str(facts).expect("facts");
    let clock = clock_of(&facts);
    let forgotten = strings(&facts["cluster"]["forgotten"]);
    assert_eq!(forgotten.len(), 1, "{facts}");
    let _one_at_a_time = FIXED_ADDRESSES.lock().await;
    // Node a starts alone with the forgotten b as its only seed, where something accepts
    // connections and never answers (b's machine frozen or cut off, not refusing): a member
    // it counted, a would wait for it; forgotten, a fetches alone.
    let _silent = bind_fixed(&forgotten[0]);
    let listen = format!(
        "127.0.0.1:{}",
        TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port()
    );
    let secret = facts["cluster"]["secret"].as_str().expect("secret");
    let node = Binary::serve_with(
        a.path(),
        &["--cluster-listen", &listen, "--join", &forgotten[0]],
        &[
            ("FERROCRAWL_CLUSTER__NODE_NAME", "a"),
            ("FERROCRAWL_CLUSTER__SECRET", secret),
            (clock.0, &clock.1),
        ],
    );
    let key = facts["api_key"].as_str().expect("key");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, view) = get(&node.base, key, "/v2/cluster").await;
        assert_eq!(status, 200, "{view}");
        if view["majority"] == true && view["inTouch"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "a counts the member it forgot: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A node's usage history of the default team: credits and tokens over every month shown.
async fn usage(node: &Binary, key: &str) -> (u64, u64) {
    let sum = |history: &Value, field: &str| -> u64 {
        history["periods"].as_array().expect("periods").iter().filter_map(|p| p[field].as_u64()).sum()
    };
    let (status, credits) = get(&node.base, key, "/v2/team/credit-usage/historical").await;
    assert_eq!(status, 200, "{credits}");
    let (_, tokens) = get(&node.base, key, "/v2/team/token-usage/historical").await;
    (sum(&credits, "creditsUsed"), sum(&tokens, "tokensUsed"))
}

/// Opens a copy of `archive`, a frozen data directory that `facts` describes, and checks
/// that nothing it holds was lost; the directory is handed back.
async fn opens_and_finishes_its_jobs(archive: &[u8], facts: &str) -> tempfile::TempDir {
    let _one_at_a_time = FIXED_ADDRESSES.lock().await;
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let facts: Value = serde_json::from_str(facts).expect("facts");
    let dir = tempfile::tempdir().expect("tempdir");
    unpack(archive, dir.path());
    let _site = ActixThread::spawn(bind_fixed("127.0.0.1:39781"), 2, |cfg| {
        cfg.default_service(web::to(fixture_page));
    });
    let hooks = Receiver::start_on(bind_fixed("127.0.0.1:39782"));
    let clock = clock_of(&facts);
    let server = Binary::serve(dir.path(), &[(clock.0, clock.1.as_str())]);
    let (base, key) = (server.base.clone(), facts["api_key"].as_str().expect("key").to_owned());

    // The stored key authenticates; the finished jobs have every page.
    let crawl = format!("/v2/crawl/{}", facts["crawl"]["id"].as_str().expect("id"));
    let (status, docs) = documents(&base, &key, &crawl).await;
    assert_eq!(
        (status["status"].as_str(), status["completed"].as_u64()),
        (Some("completed"), Some(10)),
        "{status}"
    );
    assert_eq!(sources(&docs), strings(&facts["crawl"]["pages"]));
    assert!(
        docs.iter()
            .all(|d| d["markdown"].as_str().is_some_and(|m| m.contains("fixture of the stored format")))
    );
    let batch = format!("/v2/batch/scrape/{}", facts["batch"]["id"].as_str().expect("id"));
    let (status, docs) = documents(&base, &key, &batch).await;
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(sources(&docs), strings(&facts["batch"]["pages"]));

    // The events that waited in the outbox are delivered: started, 3 pages, completed.
    let events = hooks.wait_for(5, Duration::from_secs(60)).await;
    let hooked = facts["webhook_crawl"]["id"].as_str().expect("id");
    assert!(
        events.iter().all(|e| e.body["id"] == hooked),
        "{:?}",
        events.iter().map(|e| &e.body).collect::<Vec<_>>()
    );
    let kinds: Vec<&str> = events.iter().map(|e| e.body["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds.first(), Some(&"crawl.started"));
    assert_eq!(kinds.iter().filter(|k| **k == "crawl.page").count(), 3, "{kinds:?}");
    assert!(kinds.contains(&"crawl.completed"), "{kinds:?}");

    // The crawl stopped half-way finishes, every page exactly once.
    let slow = format!("/v2/crawl/{}", facts["interrupted_crawl"]["id"].as_str().expect("id"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, status) = get(&base, &key, &slow).await;
        if status["status"] != "scraping" {
            assert_eq!(status["status"], "completed", "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "the interrupted crawl did not finish: {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, docs) = documents(&base, &key, &slow).await;
    let landed = sources(&docs);
    assert_eq!(landed.iter().collect::<BTreeSet<_>>().len(), landed.len(), "a page twice: {landed:?}");
    assert_eq!(landed, strings(&facts["interrupted_crawl"]["pages"]));
    assert_eq!(status["completed"].as_u64(), Some(40));

    // The idempotency key is still taken.
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let resp = client
        .post(format!("{base}/v2/crawl"))
        .bearer_auth(&key)
        .header("x-idempotency-key", facts["crawl"]["idempotency_key"].as_str().expect("idem"))
        .json(&serde_json::json!({"url": "http://127.0.0.1:39781/fast/0"}))
        .send()
        .await
        .expect("post");
    assert_eq!(decode(resp).await.0, 409);

    // A page cached whole (from release 0.2.0 on, a large body is kept in parts) is read
    // back whole.
    if let Some(cached) = facts.get("cached_page") {
        let asked =
            serde_json::json!({"url": cached["url"], "formats": ["markdown"], "maxAge": 315_360_000_000u64});
        let (status, body) = post(&base, &key, "/v2/scrape", asked).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"]["metadata"]["cacheState"], "hit", "{}", body["data"]["metadata"]);
        let markdown = body["data"]["markdown"].as_str().expect("markdown");
        assert_eq!(Some(markdown.split_whitespace().count() as u64), cached["markdown_words"].as_u64());
        assert!(markdown.contains("Paragraph 2499 of the big page"), "the last part is there");
        // Cached before this build had a search index: the server indexes it by itself.
        wait_for("the cached page in the search index", Duration::from_secs(30), || async {
            let query = serde_json::json!({"query": "\"Paragraph 2499 of the big page\""});
            let (status, answer) = post(&base, &key, "/v2/search", query).await;
            assert_eq!(status, 200, "{answer}");
            (answer["data"]["web"][0]["url"] == cached["url"]).then_some(())
        })
        .await;
    }
    // From release 0.2.0 on: an extract job, the tokens it used, and browser sessions
    // (ended, one of them by this start when it was live as the fixture's server stopped).
    if let Some(extract) = facts.get("extract") {
        let id = extract["id"].as_str().expect("id");
        // A model job is kept a day after it was accepted: the fixture's day, by the clock.
        let (status, job) = get(&base, &key, &format!("/v2/extract/{id}")).await;
        assert_eq!((status, &job["status"]), (200, &Value::from("completed")), "{job}");
        assert_eq!(job["data"], extract["data"], "{job}");
        // The tokens stay in their month.
        let (_, usage) = get(&base, &key, "/v2/team/token-usage/historical").await;
        let periods = usage["periods"].as_array().expect("periods");
        let used: u64 = periods.iter().filter_map(|p| p["tokensUsed"].as_u64()).sum();
        assert_eq!(Some(used), facts["tokens_used"].as_u64(), "{usage}");
        let (_, listed) = get(&base, &key, "/v2/browser?status=destroyed").await;
        let sessions = &facts["browser_sessions"];
        // A destroyed session is remembered (410) for a day after it ended: the one deleted
        // when the fixture was made ended within seconds of its start; the one live when it
        // stopped ends at this start, or ended at the fixture's server's own stop.
        for which in ["deleted", "live_at_stop"] {
            let id = sessions[which].as_str().expect("session id");
            assert!(
                listed.to_string().contains(id),
                "the {which} session {id} is listed as destroyed: {listed}"
            );
            let (status, _) =
                post(&base, &key, &format!("/v2/browser/{id}/execute"), serde_json::json!({"code": "1"}))
                    .await;
            assert_eq!(status, 410, "the {which} session is remembered as destroyed");
        }
    }
    server.terminate();

    let checked = run(&["store", "check", "--data", dir.path().to_str().expect("utf8")], &[]);
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stdout));
    dir
}

/// The upgrade of a data directory killed half-way (the process aborts after its first
/// batch, as a kill -9 would stop it) completes on the next start, with nothing lost.
#[tokio::test]
async fn an_upgrade_killed_half_way_completes_on_the_next_start() {
    let facts: Value = serde_json::from_str(R010_FACTS).expect("0.1.0.json");
    let dir = tempfile::tempdir().expect("tempdir");
    unpack(R010, dir.path());
    let data = dir.path().to_str().expect("utf8");
    let killed = run(&["store", "check", "--data", data], &[("TEST_FERROCRAWL_FAILPOINT_MIGRATION", "1")]);
    assert!(!killed.status.success(), "the failpoint stopped the upgrade");
    assert!(
        String::from_utf8_lossy(&killed.stderr).contains("failpoint"),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
    let resumed = run(&["store", "check", "--data", data], &[]);
    let out = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{out}\n{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(out.contains("every record decodes"), "{out}");

    let _one_at_a_time = FIXED_ADDRESSES.lock().await;
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let clock = clock_of(&facts);
    let server = Binary::serve(dir.path(), &[(clock.0, clock.1.as_str())]);
    let key = facts["api_key"].as_str().expect("key");
    let crawl = format!("/v2/crawl/{}", facts["crawl"]["id"].as_str().expect("id"));
    let (status, docs) = documents(&server.base, key, &crawl).await;
    assert_eq!(status["completed"].as_u64(), Some(10), "{status}");
    assert_eq!(sources(&docs), strings(&facts["crawl"]["pages"]));
}
