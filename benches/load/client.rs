//! The load test's client (`benches/load/run.sh` starts the sites and the server, then
//! this): starts the crawls and the batch, then CLIENTS concurrent clients scrape for
//! SECONDS (cache hits of a few hot pages and fresh fetches of unique URLs), while the
//! server's resident memory and open file descriptors are sampled every second. Then it
//! waits for every job, checks that each crawl returned every reachable page exactly once,
//! and prints the figures as Markdown.
//!
//! `cargo bench --bench load -- --base URL --key KEY --pid PID --crawl URL... --batch-site
//! URL --scrape-site URL [--clients 200] [--seconds 180] [--pages N] [--zdr]` (`--zdr`:
//! the scrapes store nothing); without `--base`
//! (as under `cargo test`) it only prints this usage. With several `--base` (the nodes of a
//! cluster) the clients and jobs take them in turn; with several `--pid` the memory and
//! descriptors are summed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[derive(Debug, Default)]
struct Args {
    bases: Vec<String>,
    key: String,
    pids: Vec<u32>,
    crawls: Vec<String>,
    batch_site: String,
    scrape_site: String,
    clients: usize,
    seconds: u64,
    pages: usize,
    /// Scrapes ask for zero data retention (nothing of them is stored).
    zdr: bool,
}

fn args() -> Option<Args> {
    let mut a = Args { clients: 200, seconds: 180, pages: 300, ..Args::default() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match flag.as_str() {
            "--base" => a.bases.push(value()),
            "--key" => a.key = value(),
            "--pid" => a.pids.extend(value().parse::<u32>().ok()),
            "--crawl" => a.crawls.push(value()),
            "--batch-site" => a.batch_site = value(),
            "--scrape-site" => a.scrape_site = value(),
            "--clients" => a.clients = value().parse().unwrap_or(200),
            "--seconds" => a.seconds = value().parse().unwrap_or(180),
            "--pages" => a.pages = value().parse().unwrap_or(300),
            "--zdr" => a.zdr = true,
            _ => {}
        }
    }
    (!a.bases.is_empty()).then_some(a)
}

impl Args {
    /// The API the `n`th client or job uses.
    fn base(&self, n: usize) -> &str {
        &self.bases[n % self.bases.len()]
    }
}

/// Latencies (ms) and statuses of one kind of request.
#[derive(Debug, Default)]
struct Tally {
    ms: Vec<f64>,
    statuses: BTreeMap<String, u64>,
}

/// (resident bytes, open fds) of the server's processes now, summed.
fn sample(pids: &[u32]) -> (u64, usize) {
    pids.iter().map(|pid| sample_one(*pid)).fold((0, 0), |(r, f), (rss, fds)| (r + rss, f + fds))
}

fn sample_one(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0);
    (rss, fds)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn call(
    client: &reqwest::Client,
    a: &Args,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let url = if path.starts_with("http") { path.to_owned() } else { format!("{base}{path}") };
    let mut request = client.request(method, url).bearer_auth(&a.key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    match request.send().await {
        Ok(resp) => resp.json().await.unwrap_or(Value::Null),
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// Waits for the job at `path` (read through `base`) and returns (status, every document's
/// source URL and status).
async fn finish(client: &reqwest::Client, a: &Args, base: &str, path: &str) -> (String, Vec<(String, u64)>) {
    let done = loop {
        let status = call(client, a, base, reqwest::Method::GET, path, None).await;
        if status["status"] != "scraping" {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let mut docs: Vec<Value> = done["data"].as_array().cloned().unwrap_or_default();
    let mut next = done["next"].as_str().map(str::to_owned);
    while let Some(url) = next {
        let page = call(client, a, base, reqwest::Method::GET, &url, None).await;
        docs.extend(page["data"].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().map(str::to_owned);
    }
    let pages = docs
        .iter()
        .map(|d| {
            let meta = &d["metadata"];
            (
                meta["sourceURL"].as_str().unwrap_or_default().to_owned(),
                meta["statusCode"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    (done["status"].as_str().unwrap_or("?").to_owned(), pages)
}

async fn client_loop(
    a: Arc<Args>,
    n: usize,
    until: Instant,
    tallies: Arc<Mutex<BTreeMap<&'static str, Tally>>>,
) {
    let client =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(60)).build().expect("client");
    let mut i = 0u64;
    while Instant::now() < until {
        i += 1;
        // Seven in ten scrapes ask for one of 20 hot pages (cache hits once fetched), the
        // rest for a URL never asked before (a fetch from the site).
        let (kind, url) = if i % 10 < 7 {
            ("cached scrape", format!("{}/?hot={}", a.scrape_site, (n as u64 + i) % 20))
        } else {
            ("fresh scrape", format!("{}/?fresh={n}-{i}", a.scrape_site))
        };
        let started = Instant::now();
        let sent = client
            .post(format!("{}/v2/scrape", a.base(n)))
            .bearer_auth(&a.key)
            .json(&json!({"url": url, "formats": ["markdown"], "zeroDataRetention": a.zdr}))
            .send()
            .await;
        let outcome = match sent {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                let cache = body["data"]["metadata"]["cacheState"].as_str().unwrap_or("-").to_owned();
                if kind == "cached scrape" && status == 200 && cache != "hit" {
                    format!("{status} (cache {cache})")
                } else {
                    status.to_string()
                }
            }
            Err(e) if e.is_connect() => "connection error".to_owned(),
            Err(e) if e.is_timeout() => "timeout".to_owned(),
            Err(_) => "other error".to_owned(),
        };
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut t = tallies.lock().expect("tallies");
        let tally = t.entry(kind).or_default();
        tally.ms.push(ms);
        *tally.statuses.entry(outcome).or_default() += 1;
    }
}

#[tokio::main]
async fn main() {
    let Some(a) = args() else {
        println!("usage: see benches/load/run.sh (nothing to do without --base)");
        return;
    };
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let a = Arc::new(a);
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let (rss0, fds0) = sample(&a.pids);
    let mut jobs = Vec::new();
    for (n, url) in a.crawls.iter().enumerate() {
        let body = json!({"url": url, "limit": 100000, "sitemap": "skip", "scrapeOptions": {"formats": ["markdown"]}});
        let started = call(&client, &a, a.base(n), reqwest::Method::POST, "/v2/crawl", Some(body)).await;
        let path = format!("/v2/crawl/{}", started["id"].as_str().expect("crawl id"));
        jobs.push(("crawl", url.clone(), a.base(n).to_owned(), path));
    }
    let urls: Vec<String> = (0..200).map(|i| format!("{}/?batch={i}", a.batch_site)).collect();
    let base = a.base(a.crawls.len()).to_owned();
    let started =
        call(&client, &a, &base, reqwest::Method::POST, "/v2/batch/scrape", Some(json!({"urls": urls})))
            .await;
    let path = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("batch id"));
    jobs.push(("batch", a.batch_site.clone(), base, path));

    let tallies = Arc::new(Mutex::new(BTreeMap::new()));
    let until = Instant::now() + Duration::from_secs(a.seconds);
    let began = Instant::now();
    let workers: Vec<_> = (0..a.clients)
        .map(|n| tokio::spawn(client_loop(Arc::clone(&a), n, until, Arc::clone(&tallies))))
        .collect();
    let (mut rss_peak, mut fds_peak) = (rss0, fds0);
    let mut timeline = Vec::new();
    let mut tick = 0u64;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(1)).await;
        tick += 1;
        let (rss, fds) = sample(&a.pids);
        rss_peak = rss_peak.max(rss);
        fds_peak = fds_peak.max(fds);
        if tick.is_multiple_of(30) {
            timeline.push(format!("{tick} s: {} MiB", rss >> 20));
        }
    }
    for w in workers {
        let _ = w.await;
    }
    let elapsed = began.elapsed().as_secs_f64();

    println!("| kind | requests | per s | p50 ms | p99 ms | max ms | outcomes |");
    println!("|---|---|---|---|---|---|---|");
    for (kind, tally) in tallies.lock().expect("tallies").iter_mut() {
        tally.ms.sort_by(f64::total_cmp);
        let outcomes: Vec<String> = tally.statuses.iter().map(|(s, n)| format!("{s}: {n}")).collect();
        println!(
            "| {kind} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {} |",
            tally.ms.len(),
            tally.ms.len() as f64 / elapsed,
            percentile(&tally.ms, 0.5),
            percentile(&tally.ms, 0.99),
            tally.ms.last().copied().unwrap_or(f64::NAN),
            outcomes.join(", ")
        );
    }
    println!();
    println!("| job | status | documents | distinct URLs | pages with 200 |");
    println!("|---|---|---|---|---|");
    let mut all_ok = true;
    for (kind, url, base, path) in &jobs {
        let (status, pages) = finish(&client, &a, base, path).await;
        let distinct: BTreeSet<&String> = pages.iter().map(|(u, _)| u).collect();
        let ok200 = pages.iter().filter(|(_, s)| *s == 200).count();
        let expected = if *kind == "crawl" { a.pages } else { 200 };
        // A crawl also returns the URL variants a site links (query strings are kept by
        // default, as Firecrawl does), each once: at least every reachable page.
        all_ok &= status == "completed" && distinct.len() == pages.len() && ok200 >= expected;
        println!(
            "| {kind} {url} | {status} | {} | {} | {ok200} of {expected} |",
            pages.len(),
            distinct.len()
        );
    }
    // Idle connections close (the fetch pool keeps one idle for 90 s) and the server's own
    // pools settle: wait up to two minutes for the descriptors to come back.
    drop(client);
    let settle = Instant::now();
    let (mut rss_end, mut fds_end) = sample(&a.pids);
    while fds_end > fds0 + 2 && settle.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        (rss_end, fds_end) = sample(&a.pids);
    }
    let settled_after = settle.elapsed().as_secs();
    println!();
    println!("| server | start | peak | end |");
    println!("|---|---|---|---|");
    println!("| resident memory MiB | {} | {} | {} |", rss0 >> 20, rss_peak >> 20, rss_end >> 20);
    println!("| open file descriptors | {fds0} | {fds_peak} | {fds_end} (after {settled_after} s) |");
    println!();
    println!("resident memory during the load: {}", timeline.join(", "));
    println!();
    println!("every job complete with each page once: {}", if all_ok { "yes" } else { "NO" });
}
