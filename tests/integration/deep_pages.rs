//! Machine-made pages: tens of thousands of nested or unclosed elements are answered with
//! their text, and a scrape cut by its deadline stops its work (the server's own CPU time
//! shows it).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

use crate::common::process::Binary;
use crate::common::{ActixThread, TestServer};

/// A page of `depth` levels of `kind`, level `i` holding the word `w{i}`.
fn deep_page(kind: &str, depth: usize) -> String {
    let (open, close) = match kind {
        "div" => ("<div>", "</div>"),
        "ul" => ("<ul><li>", "</li></ul>"),
        "table" => ("<table><tr><td>", "</td></tr></table>"),
        // Never closed.
        _ => ("<b><i>", ""),
    };
    let mut page = String::from("<!doctype html><html><head><title>Deep</title></head><body>");
    for i in 0..depth {
        page.push_str(open);
        page.push_str(&format!("w{i} "));
    }
    page.push_str(&close.repeat(depth));
    page.push_str("</body></html>");
    page
}

/// A long page of ordinary paragraphs with links: heavy to convert, in proportion to its size.
fn long_page(paragraphs: usize) -> String {
    let mut page = String::from("<!doctype html><html><head><title>Long</title></head><body><article>");
    for i in 0..paragraphs {
        page.push_str(&format!(
            "<p>Paragraph {i} says something about <a href=\"/p/{i}\">page {i}</a>, with <em>emphasis</em> and more words.</p>"
        ));
    }
    page.push_str("</article></body></html>");
    page
}

async fn serve(req: HttpRequest) -> HttpResponse {
    let parts: Vec<&str> = req.path().trim_start_matches('/').split('/').collect();
    let body = match parts.as_slice() {
        ["deep", kind, depth] => deep_page(kind, depth.parse().unwrap_or(10)),
        ["long", paragraphs] => long_page(paragraphs.parse().unwrap_or(10)),
        _ => return HttpResponse::NotFound().finish(),
    };
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(body)
}

/// The fixture site: `/deep/{kind}/{depth}` and `/long/{paragraphs}`.
fn site() -> (ActixThread, String) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
    let site = ActixThread::spawn(listener, 1, |cfg| {
        cfg.default_service(web::to(serve));
    });
    (site, base)
}

/// The distinct `wN` words of a Markdown text.
fn words(markdown: &str) -> usize {
    let mut found: Vec<&str> = markdown
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() > 1 && w.starts_with('w') && w[1..].bytes().all(|b| b.is_ascii_digit()))
        .collect();
    found.sort_unstable();
    found.dedup();
    found.len()
}

#[tokio::test]
async fn deep_pages_answer_with_all_their_text() {
    let (_site, base) = site();
    let server = TestServer::start().await;
    for (kind, depth) in [("div", 200_000), ("ul", 64_000), ("table", 64_000), ("inline", 200_000)] {
        let (status, reply) = server
            .scrape(json!({"url": format!("{base}/deep/{kind}/{depth}"), "onlyMainContent": false, "timeout": 60000}))
            .await;
        assert_eq!(status, 200, "{kind} at depth {depth}: {reply}");
        let markdown = reply["data"]["markdown"].as_str().expect("markdown");
        assert_eq!(words(markdown), depth, "{kind} at depth {depth}: every level's text is kept");
        // The main-content filter answers too, with the innermost text at least.
        let (status, reply) =
            server.scrape(json!({"url": format!("{base}/deep/{kind}/{depth}"), "timeout": 60000})).await;
        assert_eq!(status, 200, "{kind} at depth {depth}, main content: {reply}");
        let markdown = reply["data"]["markdown"].as_str().expect("markdown");
        assert!(
            markdown.contains(&format!("w{}", depth - 1)),
            "{kind}: {}",
            &markdown[..markdown.len().min(300)]
        );
    }
}

/// CPU time (user + system) the process has used, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')').expect("stat format").1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // SAFETY: sysconf only reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// Conversion threads of the server that are running or waiting for a core now. The heavy
/// lane runs in the idle scheduling class, so on a machine busy with other work its thread
/// can be ready to convert yet get no CPU: its state still says so.
fn converting_threads(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let name = stat.split_once('(').and_then(|(_, r)| r.rsplit_once(')')).map_or("", |(n, _)| n);
            let state = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next());
            name.starts_with("ferrocrawl-") && state == Some("R")
        })
        .count()
}

/// The CPU time the server uses in 3 s, starting two seconds after now: the time a cut
/// conversion has to notice it, on a heavy-input thread of the idle scheduling class that
/// a machine busy with the other tests lets run only now and then.
async fn cpu_used_after(server: &Binary) -> Duration {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = cpu_time(server.pid());
    tokio::time::sleep(Duration::from_secs(3)).await;
    cpu_time(server.pid()) - before
}

/// The real binary on a fresh data directory, its key, and a client.
fn binary() -> (Binary, tempfile::TempDir, String, reqwest::Client) {
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let data = tempfile::tempdir().expect("tempdir");
    let server = Binary::serve(data.path(), &[]);
    let key = std::fs::read_to_string(data.path().join("api-key")).expect("key").trim().to_owned();
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    (server, data, key, client)
}

#[tokio::test]
async fn a_scrape_cut_by_its_deadline_stops_its_work() {
    let (_site, base) = site();
    let (server, _data, key, client) = binary();
    // About 20 MB of paragraphs: converting it takes the debug build far longer than the
    // deadline of 2 s, while fetching it from loopback takes a fraction of that.
    let url = format!("{base}/long/180000");
    let started = Instant::now();
    let reply = client
        .post(format!("{}/v2/scrape", server.base))
        .bearer_auth(&key)
        .json(&json!({"url": url, "timeout": 2000, "formats": ["markdown", "html", "links"]}))
        .send()
        .await
        .expect("scrape");
    assert_eq!(
        reply.status().as_u16(),
        408,
        "the deadline answers: {}",
        reply.text().await.unwrap_or_default()
    );
    assert!(started.elapsed() < Duration::from_secs(15), "answered at the deadline, not after the work");
    // The work is cut at its next check: soon after the answer the server is idle.
    let used = cpu_used_after(&server).await;
    assert!(
        used < Duration::from_millis(600),
        "the server used {used:?} of CPU in the 3 s after the deadline"
    );
    server.kill9();
}

#[tokio::test]
async fn a_cancelled_batch_stops_converting_its_pages() {
    let (_site, base) = site();
    let (server, _data, key, client) = binary();
    let urls: Vec<String> = (0..2).map(|i| format!("{base}/long/{}", 180_000 + i)).collect();
    let started: serde_json::Value = client
        .post(format!("{}/v2/batch/scrape", server.base))
        .bearer_auth(&key)
        // Not cached: writing a 20 MB page to the cache is work of its own, queued on the
        // same heavy-input thread, and not what this test measures.
        .json(&json!({"urls": urls, "timeout": 120000, "storeInCache": false}))
        .send()
        .await
        .expect("batch")
        .json()
        .await
        .expect("json");
    let id = started["id"].as_str().expect("batch id");
    // Both pages are fetched from loopback within a moment and then convert for many seconds.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let busy = cpu_time(server.pid());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let converting =
        cpu_time(server.pid()) - busy > Duration::from_millis(200) || converting_threads(server.pid()) > 0;
    assert!(converting, "the pages are converting");
    let cancelled = client
        .delete(format!("{}/v2/batch/scrape/{id}", server.base))
        .bearer_auth(&key)
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancelled.status().as_u16(), 200);
    let used = cpu_used_after(&server).await;
    assert!(used < Duration::from_millis(600), "the server used {used:?} of CPU in the 3 s after the cancel");
    assert_eq!(converting_threads(server.pid()), 0, "no conversion left waiting for a core");
    server.kill9();
}
