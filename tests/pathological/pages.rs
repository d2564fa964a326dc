//! Machine-made pathological pages: very deep nesting, one huge text node, very many
//! siblings, one element with very many attributes. Each carries marker words (`wN`) so
//! a check can tell that the content survived. And the whole page pipeline with every
//! format, as these pages go through it. Shared by the tests, `benches/deep.rs` and the
//! page fuzz target.

use ferrocrawl::model::ScrapeOptions;
use ferrocrawl::scrape::document::{BuildError, Built, PageInput, build};

/// Scrape options asking for every page format: Markdown, cleaned and raw HTML, links,
/// images and an attribute, of the whole page.
pub fn every_format() -> ScrapeOptions {
    let mut options = ScrapeOptions { only_main_content: false, ..ScrapeOptions::default() };
    let formats = &mut options.formats;
    (formats.markdown, formats.html, formats.raw_html, formats.links, formats.images) =
        (true, true, true, true, true);
    formats.attributes = vec![("a".into(), "href".into())];
    options
}

/// Builds `body`, answered with status 200 and `content_type` at a fixed URL, into a
/// document as a scrape with `options` would (page links discovered too).
pub fn build_page(
    body: &[u8],
    content_type: Option<&str>,
    options: &ScrapeOptions,
) -> Result<Built, BuildError> {
    let url = url::Url::parse("https://example.com/docs/page.html").expect("url");
    let page = PageInput { source_url: url.as_str(), final_url: &url, status: 200, content_type, body };
    build(&page, options, true, &ferrocrawl::documents::Limits::default())
}

/// 200 000 nested `<div>`s, one word each.
pub fn nested(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 20);
    s.push_str("<!doctype html><html><head><title>nested</title></head><body><main>");
    for i in 0..depth {
        s.push_str("<div>w");
        s.push_str(&i.to_string());
        s.push(' ');
    }
    s.push_str(&"</div>".repeat(depth));
    s.push_str("</main></body></html>");
    s
}

/// One text node of about `bytes` bytes: words of prose, with `wfirst` and `wlast`
/// at its two ends.
pub fn text_node(bytes: usize) -> String {
    let filler = "lorem ipsum dolor sit amet consectetur adipiscing elit ";
    let mut s = String::with_capacity(bytes + 200);
    s.push_str("<!doctype html><html><head><title>text</title></head><body><article><p>wfirst ");
    while s.len() < bytes {
        s.push_str(filler);
    }
    s.push_str("wlast</p></article></body></html>");
    s
}

/// `count` sibling paragraphs, one word each.
pub fn siblings(count: usize) -> String {
    let mut s = String::with_capacity(count * 16);
    s.push_str("<!doctype html><html><head><title>siblings</title></head><body><main>");
    for i in 0..count {
        s.push_str("<p>w");
        s.push_str(&i.to_string());
        s.push_str("</p>");
    }
    s.push_str("</main></body></html>");
    s
}

/// One element with `count` attributes (and a link and an image among them), holding the
/// word `wtext`.
pub fn attributes(count: usize) -> String {
    let mut s = String::with_capacity(count * 20);
    s.push_str("<!doctype html><html><head><title>attributes</title></head><body><main><a href=\"/x\" ");
    for i in 0..count {
        s.push_str("data-a");
        s.push_str(&i.to_string());
        s.push_str("=\"v");
        s.push_str(&i.to_string());
        s.push_str("\" ");
    }
    s.push_str(">wtext</a></main></body></html>");
    s
}
