//! What the language-model features cost outside the model.
//!
//! 1. Input tokens per page on set A (cl100k): the raw HTML, the whole page as Markdown,
//!    the main content as Markdown (what the formats send), and that text after the cut at
//!    the default `llm.max_input_tokens` (less the prompt's reserve): median and p95.
//! 2. Overhead per call: `Llm::structured` with a schema against a loopback server that
//!    answers a fixed completion at once, over set A's main-content pages: the page cut
//!    and wrapped, the request written, sent and read, the answer parsed and validated, the
//!    tokens recorded. Everything but the model's own thinking; median and p95 per call,
//!    alone and with its page's preparation added (`tokens::cut_off_worker`, as the server
//!    prepares a page): cold (nothing remembered by the token counter) and warm (after
//!    other pages of the set). Calls and preparation run in tasks of the runtime, as the
//!    server's do.
//!
//! `cargo bench --bench llm` (pages: see `common/pages.rs`, set A by default); under
//! `cargo test` (no `--bench`) five pages and one round, as a smoke test of the harness.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use ferrocrawl::extract::{ExtractOptions, Wanted, extract};
use ferrocrawl::llm::{Llm, LlmSettings, Payer, openai::OpenAi, prompts, tokens};
use ferrocrawl::model::TeamId;
use serde_json::json;

#[path = "common/pages.rs"]
mod pages;

fn quantiles(mut values: Vec<f64>) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

fn markdown(html: &str, main_only: bool) -> String {
    let url = url::Url::parse("http://fakehost/test/page.html").expect("url");
    let options = ExtractOptions { only_main_content: main_only, ..ExtractOptions::default() };
    let wanted = Wanted { markdown: true, html: false, links: false, images: false };
    extract(html, &url, &options, wanted).markdown.unwrap_or_default()
}

/// A chat-completions server that answers every call at once with the same JSON.
fn instant_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            HttpServer::new(|| {
                App::new().route(
                    "/v1/chat/completions",
                    web::post().to(|_: web::Bytes| async {
                        HttpResponse::Ok().json(json!({"choices": [{"message": {"content": "{\"title\": \"A page\", \"price\": 12.5}"}}],
                            "usage": {"prompt_tokens": 1000, "completion_tokens": 12}}))
                    }),
                )
            })
            .workers(1)
            .listen(listener)
            .expect("listen")
            .run()
            .await
            .expect("serve");
        });
    });
    url
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let mut pages = pages::load();
    if !full {
        pages.truncate(5);
    }
    assert!(!pages.is_empty(), "no pages to measure");
    let settings = LlmSettings::default();
    let limit = settings.max_input_tokens - 1_000;
    let mains: Vec<String> = pages.iter().map(|html| markdown(html, true)).collect();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("rt");
    // Preparation timed before anything else is counted, as the server prepares a page:
    // from a task of the runtime, the count on its blocking pool. Cold: every page in turn
    // from a start with nothing remembered (the first pages a server sees). Warm: each half
    // of the set after the other half was prepared (a server that has seen other pages,
    // never these).
    async fn prepare(text: String, limit: usize) -> (String, f64) {
        let started = Instant::now();
        let (kept, _) = tokens::cut_off_worker(text, limit).await;
        let page = prompts::page("http://fakehost/test/page.html", Some("A page"), &kept);
        (page, started.elapsed().as_secs_f64() * 1000.0)
    }
    tokens::count("the vocabulary's set built");
    let timed = mains.clone();
    let (texts, cold_ms, warm_ms) = runtime
        .block_on(runtime.spawn(async move {
            let mains = timed;
            let (mut texts, mut cold_ms) = (Vec::new(), Vec::new());
            for text in &mains {
                let (page, ms) = prepare(text.clone(), limit).await;
                texts.push(page);
                cold_ms.push(ms);
            }
            let half = mains.len() / 2;
            let mut warm_ms = vec![0.0; mains.len()];
            for (seen, timed) in [(half..mains.len(), 0..half), (0..half, half..mains.len())] {
                tokens::forget();
                for text in &mains[seen] {
                    prepare(text.clone(), limit).await;
                }
                for page in timed {
                    warm_ms[page] = prepare(mains[page].clone(), limit).await.1;
                }
            }
            (texts, cold_ms, warm_ms)
        }))
        .expect("prepared");
    tokens::forget();
    let one_pass_ms: Vec<f64> = mains
        .iter()
        .map(|text| {
            let started = Instant::now();
            std::hint::black_box(tokens::cut(text, limit));
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let (median, p95) = quantiles(one_pass_ms);
    println!("cut in one pass on the calling thread, cold (for reference): {median:.3} / {p95:.3} ms");
    for (text, prepared) in mains.iter().zip(&texts) {
        let in_one_pass =
            prompts::page("http://fakehost/test/page.html", Some("A page"), tokens::cut(text, limit).0);
        assert_eq!(&in_one_pass, prepared, "a page cut in halves differs from one cut in one pass");
    }
    // The same texts counted whole, by ours from a cold start and by `bpe-openai`'s own
    // count (regular-expression pre-splitting, every piece encoded), in one run.
    let bytes: usize = mains.iter().map(String::len).sum();
    for round in 0..3 {
        tokens::forget();
        let started = Instant::now();
        let ours: usize = mains.iter().map(|text| tokens::count(text)).sum();
        let ours_s = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let theirs: usize = mains.iter().map(|text| bpe_openai::cl100k_base().count(text.as_str())).sum();
        let theirs_s = started.elapsed().as_secs_f64();
        assert_eq!(ours, theirs, "token counts differ");
        println!(
            "whole count of the main-content Markdown (round {round}, {} tokens): ours {:.1} MB/s, bpe-openai {:.1} MB/s",
            ours,
            bytes as f64 / ours_s / 1e6,
            bytes as f64 / theirs_s / 1e6
        );
    }
    let (mut raw, mut whole, mut main_text, mut sent) = (vec![], vec![], vec![], vec![]);
    for (html, text) in pages.iter().zip(&mains) {
        raw.push(tokens::count(html) as f64);
        whole.push(tokens::count(&markdown(html, false)) as f64);
        main_text.push(tokens::count(text) as f64);
        sent.push(tokens::count(tokens::cut(text, limit).0) as f64);
    }
    println!("set A: {} pages, tokens per page (cl100k), median / p95:", pages.len());
    for (name, values) in [
        ("raw HTML", raw),
        ("whole page Markdown", whole),
        ("main content Markdown", main_text),
        ("sent (cut at 11 000)", sent),
    ] {
        let (median, p95) = quantiles(values);
        println!("  {name:<24} {median:>8.0} / {p95:>8.0}");
    }
    for (name, values) in [("cold", &cold_ms), ("warm", &warm_ms)] {
        let (median, p95) = quantiles(values.clone());
        println!("cut and wrap per page, {name}: {median:.3} / {p95:.3} ms");
    }

    ferrocrawl::scrape::engine::http::install_crypto_provider();
    let settings = LlmSettings { base_url: instant_server(), model: "m".into(), ..LlmSettings::default() };
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ferrocrawl::store::Store::open(dir.path()).expect("store");
    let llm = Llm::with_model(&settings, Arc::new(OpenAi::new(&settings).expect("client")), store);
    let payer = Payer { team: TeamId::parse("bench").expect("team"), key: None };
    let schema = json!({"type": "object", "properties": {"title": {"type": "string"}, "price": {"type": "number"}}, "required": ["title"]});
    let rounds = if full { 5 } else { 2 };
    // Calls made from a task of the runtime, as the server makes them (a thread outside the
    // runtime waiting on each call would add a wake-up of that thread to every call).
    let calls = async move {
        std::thread::sleep(Duration::from_millis(200));
        let mut out = Vec::new();
        for round in 0..rounds {
            for (page, text) in texts.iter().enumerate() {
                let started = Instant::now();
                let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                let found = llm
                    .structured(&payer, prompts::EXTRACT, text, Some(&schema), deadline)
                    .await
                    .expect("call");
                assert_eq!(found.value["title"], "A page");
                if round > 0 {
                    out.push((page, started.elapsed().as_secs_f64() * 1000.0));
                }
            }
        }
        out
    };
    let per_call: Vec<(usize, f64)> = runtime.block_on(runtime.spawn(calls)).expect("calls");
    let (median, p95) = quantiles(per_call.iter().map(|&(_, ms)| ms).collect());
    println!("structured call outside the model ({} calls): {median:.3} / {p95:.3} ms", per_call.len());
    // What one call costs outside the model with its page's preparation charged to it.
    for (name, prepared) in [("cold", &cold_ms), ("warm", &warm_ms)] {
        let (median, p95) = quantiles(per_call.iter().map(|&(page, ms)| ms + prepared[page]).collect());
        println!("call with its page's preparation ({name}): {median:.3} / {p95:.3} ms");
    }
}
