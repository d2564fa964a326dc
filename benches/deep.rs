//! Time of the whole extraction pipeline on machine-made deep pages: nested `<div>`,
//! nested `<ul><li>`, nested tables and unclosed inline elements, at depths from 1 000
//! to 200 000. Every level carries one word of text; the run checks that every word
//! reaches the Markdown, and prints milliseconds per page and per thousand levels, which
//! stays flat when the pipeline is linear in depth.
//!
//! Then the pathological pages of the tests (`tests/pathological`): 200 000 nested
//! elements, a 30 MB text node, 500 000 siblings, an element with 100 000 attributes,
//! through the whole page pipeline with every format, timed against the 1 s bar; and how
//! long each goes on once its result is no longer awaited (the cancellation flag raised at
//! a tenth, three tenths… of its run, as a cancelled job or a passed deadline raises it):
//! the longest of five.
//!
//! `cargo bench --bench deep` runs every depth; under `cargo test` (no `--bench`) only the
//! smallest depths run, as a smoke test of the harness.

use std::time::Instant;

use ferrocrawl::extract::{ExtractOptions, Wanted, extract};

#[path = "../tests/pathological/pages.rs"]
mod pages;

/// One page of `depth` levels of the given shape, each level holding the word `wN`.
fn page(kind: &str, depth: usize) -> String {
    let mut s = String::with_capacity(depth * 24);
    s.push_str("<!doctype html><html><head><title>deep</title></head><body><main>");
    for i in 0..depth {
        match kind {
            "div" => s.push_str(&format!("<div>w{i} ")),
            "ul" => s.push_str(&format!("<ul><li>w{i} ")),
            "table" => s.push_str(&format!("<table><tr><td>w{i} ")),
            "inline" => s.push_str(&format!("<b><i>w{i} ")),
            _ => unreachable!("unknown page kind {kind}"),
        }
    }
    for _ in 0..depth {
        match kind {
            "div" => s.push_str("</div>"),
            "ul" => s.push_str("</li></ul>"),
            "table" => s.push_str("</td></tr></table>"),
            // Unclosed: the inline elements are never ended.
            _ => {}
        }
    }
    s.push_str("</main></body></html>");
    s
}

/// Median milliseconds of `runs` extractions, and the Markdown of the last one.
fn time(html: &str, opts: &ExtractOptions, runs: usize) -> (f64, String) {
    let url = url::Url::parse("http://fakehost/deep.html").expect("static URL");
    let wanted = Wanted { markdown: true, html: true, links: true, images: false };
    let mut times = Vec::with_capacity(runs);
    let mut markdown = String::new();
    for _ in 0..runs {
        let start = Instant::now();
        let out = extract(html, &url, opts, wanted);
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        markdown = out.markdown.unwrap_or_default();
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], markdown)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let depths: &[usize] = if full { &[1_000, 4_000, 16_000, 64_000, 200_000] } else { &[1_000, 2_000] };
    let main_content = ExtractOptions::default();
    let whole_page = ExtractOptions { only_main_content: false, ..ExtractOptions::default() };
    println!(
        "{:<8} {:>8} {:>10} {:>10} {:>10} {:>14} {:>8}",
        "page", "depth", "bytes", "main ms", "page ms", "ms/1k levels", "words"
    );
    for kind in ["div", "ul", "table", "inline"] {
        for &depth in depths {
            let html = page(kind, depth);
            let runs = if depth <= 16_000 { 5 } else { 3 };
            let (main_ms, _) = time(&html, &main_content, runs);
            let (page_ms, md) = time(&html, &whole_page, runs);
            let mut words = md
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| w.starts_with('w') && w[1..].bytes().all(|b| b.is_ascii_digit()))
                .collect::<Vec<_>>();
            words.sort_unstable();
            words.dedup();
            println!(
                "{kind:<8} {depth:>8} {:>10} {main_ms:>10.1} {page_ms:>10.1} {:>14.2} {:>8}",
                html.len(),
                main_ms * 1000.0 / depth as f64,
                words.len()
            );
            assert_eq!(
                words.len(),
                depth,
                "{kind} at depth {depth}: every level's word reaches the Markdown"
            );
        }
    }
    if full {
        pathological();
    }
}

/// Median milliseconds of the whole pipeline (every format) over each pathological page,
/// and the longest it ran on after its cancellation flag was raised.
fn pathological() {
    let options = pages::every_format();
    println!("\n{:<12} {:>10} {:>10} {:>18}", "page", "bytes", "median ms", "ms after cancel");
    let cases = [
        ("nested", pages::nested(200_000)),
        ("text node", pages::text_node(30 << 20)),
        ("siblings", pages::siblings(500_000)),
        ("attributes", pages::attributes(100_000)),
    ];
    for (name, html) in &cases {
        let mut times: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                pages::build_page(html.as_bytes(), Some("text/html"), &options).expect("document");
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let whole = std::time::Duration::from_secs_f64(times[1] / 1000.0);
        let after = [0.1, 0.3, 0.5, 0.7, 0.9]
            .into_iter()
            .map(|share| ran_on_after_cancel(html, &options, whole.mul_f64(share)))
            .fold(0.0, f64::max);
        println!("{name:<12} {:>10} {:>10.0} {after:>18.1}", html.len(), times[1]);
    }
}

/// Milliseconds the pipeline ran on over `html` after its cancellation flag was raised
/// `at` into the run.
fn ran_on_after_cancel(
    html: &str,
    options: &ferrocrawl::model::ScrapeOptions,
    at: std::time::Duration,
) -> f64 {
    use ferrocrawl::process::cancel;
    let flag = cancel::Flag::default();
    let armed = flag.arm();
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(at);
        let raised = Instant::now();
        drop(armed);
        raised
    });
    let _ = cancel::run(&flag, || pages::build_page(html.as_bytes(), Some("text/html"), options));
    let ended = Instant::now();
    let raised = raiser.join().expect("the raising thread");
    ended.saturating_duration_since(raised).as_secs_f64() * 1000.0
}
