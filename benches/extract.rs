//! Throughput of the whole extraction pipeline (Markdown + HTML + links + metadata,
//! default options) over a folder of saved pages, reported in bytes of input HTML.
//!
//! Pages come from `BENCH_PAGES` (a folder of `<name>/source.html`),
//! default `../shared/datasets/extraction-A/pages` relative to the crate root, and
//! fall back to the test fixtures when that folder is absent.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferrocrawl::extract::{ExtractOptions, Wanted, extract};

fn load_pages() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("BENCH_PAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/datasets/extraction-A/pages"));
    let mut pages = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("source.html"))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for p in paths {
            if let Ok(bytes) = std::fs::read(&p) {
                pages.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    if pages.is_empty() {
        let fixtures = root.join("tests/fixtures/extract");
        if let Ok(entries) = std::fs::read_dir(&fixtures) {
            let mut paths: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "html"))
                .collect();
            paths.sort();
            for p in paths {
                if let Ok(text) = std::fs::read_to_string(&p) {
                    pages.push(text);
                }
            }
        }
    }
    pages
}

fn bench_extract(c: &mut Criterion) {
    let pages = load_pages();
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
