//! The search benchmark's client (`benches/search/run.sh index` crawls the site into a
//! server and then runs this): known-item relevance, filters that must never be broken,
//! and query latency and rate through `POST /v2/search`, printed as Markdown.
//!
//! - Relevance: for SAMPLES random pages of the generated site, a query of the three words
//!   of the page's article text that are rarest in the index (document frequency read from
//!   the index itself) must return that page first (target ≥ 90 %) and in the top 3 (≥ 98 %).
//! - Filters: `site:HOST/SECTION`, `intitle:WORD` and `filetype:html` queries whose every
//!   result is checked against the operator.
//! - Speed: 1-word, 3-word, "phrase" and operator queries, each class 300 queries one after
//!   the other (latency p50/p99), then 8 clients for 10 s (queries/s).
//!
//! `cargo bench --bench search -- --base URL --key KEY --index DIR --site DIR --site-url URL
//! [--samples 500]`; without `--base` (as under `cargo test`) it prints this usage.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ferrocrawl::search::SearchIndex;
use serde_json::{Value, json};
use tantivy::Term;

#[derive(Debug, Default)]
struct Args {
    base: String,
    key: String,
    index: PathBuf,
    site: PathBuf,
    site_url: String,
    samples: usize,
}

fn args() -> Option<Args> {
    let mut a = Args { samples: 500, ..Args::default() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match flag.as_str() {
            "--base" => a.base = value(),
            "--key" => a.key = value(),
            "--index" => a.index = value().into(),
            "--site" => a.site = value().into(),
            "--site-url" => a.site_url = value(),
            "--samples" => a.samples = value().parse().unwrap_or(500),
            _ => {}
        }
    }
    (!a.base.is_empty()).then_some(a)
}

/// A small deterministic generator (xorshift), so runs pick the same pages.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The site's pages: (URL, file).
fn pages(site: &Path, site_url: &str) -> Vec<(String, PathBuf)> {
    let www = site.join("www");
    let mut out = Vec::new();
    let mut stack = vec![www.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let rel = path.strip_prefix(&www).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                let url = match rel.strip_suffix("index.html") {
                    Some(dir) => format!("{site_url}/{dir}"),
                    None => format!("{site_url}/{rel}"),
                };
                out.push((url, path));
            }
        }
    }
    out.sort();
    out
}

/// The words of the page's article (between `<article` and `</article>`, tags dropped).
fn article_words(file: &Path) -> Vec<String> {
    let html = std::fs::read_to_string(file).unwrap_or_default();
    let body = match (html.find("<article"), html.find("</article>")) {
        (Some(a), Some(b)) if a < b => &html[a..b],
        _ => html.as_str(),
    };
    let mut text = String::with_capacity(body.len());
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase).collect()
}

struct Client {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Client {
    async fn search(&self, body: &Value) -> Value {
        let resp = self
            .http
            .post(format!("{}/v2/search", self.base))
            .bearer_auth(&self.key)
            .json(body)
            .send()
            .await
            .expect("search");
        resp.json().await.expect("json")
    }
}

fn web(answer: &Value) -> Vec<(String, String)> {
    answer["data"]["web"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| {
                    (
                        i["url"].as_str().unwrap_or_default().to_owned(),
                        i["title"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let Some(args) = args() else {
        println!(
            "usage: cargo bench --bench search -- --base URL --key KEY --index DIR --site DIR --site-url URL [--samples N]"
        );
        return;
    };
    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let index = SearchIndex::open_read_only(&args.index).expect("open the index");
    let text = index.fields.text;
    let searcher_df = |word: &str| -> u64 { index.doc_freq(&Term::from_field_text(text, word)).unwrap_or(0) };
    let client = Arc::new(Client {
        http: reqwest::Client::builder().no_proxy().build().expect("client"),
        base: args.base.clone(),
        key: args.key.clone(),
    });
    let all = pages(&args.site, args.site_url.trim_end_matches('/'));
    println!("index: {} pages", index.pages());
    let mut rng = Rng(0x5eed_1234_abcd_ef01);

    // Known-item relevance.
    let (mut first, mut top3, mut asked) = (0, 0, 0);
    let mut misses = Vec::new();
    for _ in 0..args.samples {
        let (url, file) = &all[rng.below(all.len())];
        let mut words = article_words(file);
        words.sort();
        words.dedup();
        let mut rare: Vec<(u64, String)> =
            words.into_iter().map(|w| (searcher_df(&w), w)).filter(|(df, _)| *df > 0).collect();
        rare.sort();
        if rare.len() < 3 {
            continue;
        }
        let query = rare[..3].iter().map(|(_, w)| w.as_str()).collect::<Vec<_>>().join(" ");
        let found = web(&client.search(&json!({"query": query, "limit": 3})).await);
        asked += 1;
        match found.iter().position(|(u, _)| u == url) {
            Some(0) => {
                first += 1;
                top3 += 1;
            }
            Some(_) => top3 += 1,
            None => misses.push((query, url.clone())),
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / asked.max(1) as f64;
    println!(
        "\n| known-item queries | first | top 3 |\n|---|---|---|\n| {asked} | {:.1} % | {:.1} % |",
        pct(first),
        pct(top3)
    );
    for (query, url) in misses.iter().take(5) {
        println!("missed: `{query}` for {url}");
    }

    // Filters never broken.
    let sections: Vec<String> = {
        let mut s: Vec<String> = all
            .iter()
            .filter_map(|(u, _)| u.strip_prefix(&args.site_url).and_then(|p| p.split('/').nth(1)))
            .filter(|section| !section.is_empty() && !section.ends_with(".html"))
            .map(str::to_owned)
            .collect();
        s.sort();
        s.dedup();
        s
    };
    let host = args.site_url.split("://").nth(1).unwrap_or_default().to_owned();
    let common: Vec<String> = {
        let (_, file) = &all[0];
        let mut w = article_words(file);
        w.sort();
        w.dedup();
        w.into_iter().take(40).collect()
    };
    let (mut checked, mut broken) = (0, 0);
    let mut examples: Vec<String> = Vec::new();
    let mut note = |ok: bool, what: String, broken: &mut usize| {
        if !ok {
            *broken += 1;
            if examples.len() < 5 {
                examples.push(what);
            }
        }
    };
    for word in common.iter().take(20) {
        for section in sections.iter().take(6) {
            let answer =
                client.search(&json!({"query": format!("{word} site:{host}/{section}"), "limit": 20})).await;
            for (u, _) in web(&answer) {
                checked += 1;
                let ok = u.starts_with(&format!("{}/{section}/", args.site_url));
                note(ok, format!("site:{host}/{section} gave {u}"), &mut broken);
            }
        }
        let answer = client.search(&json!({"query": format!("intitle:{word}"), "limit": 20})).await;
        for (_, title) in web(&answer) {
            checked += 1;
            let words: Vec<String> =
                title.split(|c: char| !c.is_alphanumeric()).map(str::to_lowercase).collect();
            note(words.contains(word), format!("intitle:{word} gave {title}"), &mut broken);
        }
        let answer = client.search(&json!({"query": format!("{word} filetype:pdf"), "limit": 20})).await;
        for (u, _) in web(&answer) {
            note(false, format!("filetype:pdf gave {u}"), &mut broken); // the site has no PDF
        }
        let answer = client.search(&json!({"query": format!("{word} filetype:html"), "limit": 20})).await;
        for (u, _) in web(&answer) {
            checked += 1;
            // Served as HTML: no other extension (a path without one is a page too).
            let path = u.split(['?', '#']).next().unwrap_or_default();
            let last = path.rsplit('/').next().unwrap_or_default();
            let ok = !last.contains('.') || last.ends_with(".html");
            note(ok, format!("filetype:html gave {u}"), &mut broken);
        }
    }
    println!("\n| filter results checked | breaking their filter |\n|---|---|\n| {checked} | {broken} |");
    for example in &examples {
        println!("broken: {example}");
    }

    // Speed: query classes.
    let mut vocabulary: Vec<String> = Vec::new();
    let mut phrases: Vec<String> = Vec::new();
    for _ in 0..200 {
        let (_, file) = &all[rng.below(all.len())];
        let words = article_words(file);
        if words.len() > 10 {
            let at = rng.below(words.len() - 2);
            phrases.push(format!("\"{} {}\"", words[at], words[at + 1]));
            vocabulary.extend(words.into_iter().take(30));
        }
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for w in &vocabulary {
        *counts.entry(w.as_str()).or_default() += 1;
    }
    let vocab: Vec<&str> = counts.keys().copied().collect();
    let mut classes: Vec<(&str, Vec<String>)> = vec![
        ("1 word", Vec::new()),
        ("3 words", Vec::new()),
        ("phrase", Vec::new()),
        ("operators", Vec::new()),
    ];
    for i in 0..300 {
        let w = |rng: &mut Rng| vocab[rng.below(vocab.len())].to_owned();
        classes[0].1.push(w(&mut rng));
        classes[1].1.push(format!("{} {} {}", w(&mut rng), w(&mut rng), w(&mut rng)));
        classes[2].1.push(phrases[i % phrases.len()].clone());
        let section = &sections[rng.below(sections.len())];
        classes[3].1.push(format!("{} site:{host}/{section} -{} inurl:{section}", w(&mut rng), w(&mut rng)));
    }
    println!("\n| query class | p50 ms | p99 ms | queries/s (8 clients) |\n|---|---|---|---|");
    for (name, queries) in &classes {
        let mut took = Vec::with_capacity(queries.len());
        for q in queries {
            let start = Instant::now();
            client.search(&json!({"query": q, "limit": 10})).await;
            took.push(start.elapsed());
        }
        took.sort();
        let done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let queries = Arc::new(queries.clone());
        let mut tasks = Vec::new();
        for c in 0..8 {
            let (client, done, stop, queries) =
                (Arc::clone(&client), Arc::clone(&done), Arc::clone(&stop), Arc::clone(&queries));
            tasks.push(tokio::spawn(async move {
                let mut i = c;
                while !stop.load(Ordering::Relaxed) {
                    client.search(&json!({"query": queries[i % queries.len()], "limit": 10})).await;
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 8;
                }
            }));
        }
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(10)).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            let _ = t.await;
        }
        let rate = done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
        println!("| {name} | {:.2} | {:.2} | {rate:.0} |", percentile(&took, 0.5), percentile(&took, 0.99));
    }
}
