//! Throughput of the whole extraction pipeline (Markdown + HTML + links + metadata,
//! default options) over a folder of saved pages, reported in bytes of input HTML.
//!
//! Pages: see `common/pages.rs` (set A, else the test fixtures).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferrocrawl::extract::{ExtractOptions, Wanted, extract};

#[path = "common/pages.rs"]
mod pages;

fn bench_extract(c: &mut Criterion) {
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
    group.finish();
}

criterion_group!(benches, bench_extract);
criterion_main!(benches);
