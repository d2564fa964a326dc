//! Pathological pages through the whole page pipeline (every format a scrape can ask
//! for): 200 000 nested elements, a 30 MB text node, 500 000 siblings and an element with
//! 100 000 attributes. Each must come through whole, with the memory it takes bounded
//! (peak heap growth counted by this binary's allocator, under 512 MiB) and without
//! running away in time: a generous limit catches work that grows with the square of the
//! input. The times themselves are measured by `cargo bench --bench deep`.

mod pages;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let out = unsafe { System.realloc(ptr, layout, new_size) };
        if !out.is_null() {
            if new_size >= layout.size() {
                let live =
                    LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        out
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One page at a time, so that one page's peak is its own.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Most heap a page may add while it goes through the pipeline.
const MEMORY_BOUND: usize = 512 << 20;
/// Far above what any of these pages takes in a debug build; only a blow-up reaches it.
const TIME_BOUND: Duration = Duration::from_secs(120);

/// Runs the whole pipeline over `html` with every format; returns the Markdown and the
/// number of links, after checking the time and memory bounds.
fn through_pipeline(name: &str, html: &str) -> (String, usize) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let options = pages::every_format();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let started = Instant::now();
    let built = pages::build_page(html.as_bytes(), Some("text/html"), &options).expect("a document");
    let took = started.elapsed();
    let grew = PEAK.load(Ordering::Relaxed) - before;
    eprintln!("{name}: {} bytes in, {took:?}, heap grew by {} MiB at most", html.len(), grew >> 20);
    assert!(grew < MEMORY_BOUND, "{name}: the pipeline took {} MiB", grew >> 20);
    assert!(took < TIME_BOUND, "{name}: the pipeline took {took:?}");
    let document = built.document;
    assert!(document.html.is_some() && document.raw_html.is_some(), "{name}: every format");
    (document.markdown.expect("markdown"), document.links.map_or(0, |l| l.len()))
}

/// The distinct marker words (`wN`, `wfirst`…) in `markdown`.
fn markers(markdown: &str) -> std::collections::BTreeSet<&str> {
    markdown
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            w.len() > 1 && w.starts_with('w') && (w[1..].bytes().all(|b| b.is_ascii_digit()) || w.len() > 4)
        })
        .collect()
}

#[test]
fn two_hundred_thousand_nested_elements() {
    let (markdown, _) = through_pipeline("nested", &pages::nested(200_000));
    assert_eq!(markers(&markdown).len(), 200_000, "every level's word is kept");
}

#[test]
fn a_thirty_megabyte_text_node() {
    let html = pages::text_node(30 << 20);
    let (markdown, _) = through_pipeline("text node", &html);
    assert!(markdown.len() > 29 << 20, "the text is kept whole: {} bytes", markdown.len());
    assert!(markdown.trim_start().starts_with("wfirst") && markdown.trim_end().ends_with("wlast"));
}

#[test]
fn five_hundred_thousand_siblings() {
    let (markdown, _) = through_pipeline("siblings", &pages::siblings(500_000));
    assert_eq!(markers(&markdown).len(), 500_000, "every sibling's word is kept");
}

#[test]
fn an_element_with_a_hundred_thousand_attributes() {
    let (markdown, links) = through_pipeline("attributes", &pages::attributes(100_000));
    assert!(markdown.contains("wtext"), "{}", &markdown[..markdown.len().min(300)]);
    assert_eq!(links, 1, "its link is found");
}
