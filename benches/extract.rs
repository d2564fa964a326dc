//! Throughput of the whole extraction pipeline (Markdown + HTML + links + metadata,
//! default options) over a folder of saved pages, reported in bytes of input HTML.
//!
//! Pages: see `common/pages.rs` (set A, else the test fixtures).
//!
//! Two references beside it: parsing alone (html5ever building `scraper`'s tree, as the
//! pipeline parses) and html5ever's tokenizer alone (no tree at all), the floor any
//! pipeline built on this parser stands on.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferrocrawl::extract::{ExtractOptions, Wanted, extract};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};

#[path = "common/pages.rs"]
mod pages;

/// The allocator the `ferrocrawl` binary runs with (tuned as it tunes it), so the pipeline
/// is timed as it runs.
#[global_allocator]
static ALLOCATOR: ferrocrawl::process::alloc::Allocator = ferrocrawl::process::alloc::Allocator::new();

fn bench_extract(c: &mut Criterion) {
    ferrocrawl::process::alloc::tune_memory();
    let pages = pages::load();
    assert!(!pages.is_empty(), "no pages to benchmark");
    let bytes: usize = pages.iter().map(String::len).sum();
    let url = url::Url::parse("http://fakehost/test/page.html").expect("static URL");
    let opts = ExtractOptions::default();
    let wanted = Wanted { markdown: true, html: true, links: true, images: false };
    let mut group = c.benchmark_group("extract");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function(format!("pipeline/{}_pages", pages.len()), |b| {
        b.iter(|| {
            for page in &pages {
                black_box(extract(black_box(page), &url, &opts, wanted));
            }
        })
    });
    group.bench_function(format!("parse_only/{}_pages", pages.len()), |b| {
        b.iter(|| {
            for page in &pages {
                black_box(scraper::Html::parse_document(black_box(page)));
            }
        })
    });
    group.bench_function(format!("tokenize_only/{}_pages", pages.len()), |b| {
        b.iter(|| {
            for page in &pages {
                black_box(tokenize(black_box(page)));
            }
        })
    });
    group.finish();
}

/// Counts the tags of a page: the tokenizer's work and nothing after it.
struct TagCount(std::cell::Cell<usize>);

impl TokenSink for TagCount {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        if matches!(token, Token::TagToken(_)) {
            self.0.set(self.0.get() + 1);
        }
        TokenSinkResult::Continue
    }
}

fn tokenize(page: &str) -> usize {
    let tokenizer = Tokenizer::new(TagCount(std::cell::Cell::new(0)), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(page));
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    tokenizer.sink.0.get()
}

criterion_group!(benches, bench_extract);
criterion_main!(benches);
