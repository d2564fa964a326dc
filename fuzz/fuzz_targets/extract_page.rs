//! The whole page pipeline on arbitrary bytes: content-type sniffing, charset decoding,
//! extraction and every format a scrape can ask for (Markdown, cleaned and raw HTML,
//! links, images, attributes, branding). The first byte picks the options and the
//! declared content type; the rest is the body.
#![no_main]

use ferrocrawl::model::ScrapeOptions;
use ferrocrawl::scrape::document::{PageInput, build};
use libfuzzer_sys::fuzz_target;

const CONTENT_TYPES: [Option<&str>; 4] =
    [Some("text/html"), None, Some("text/html; charset=windows-1251"), Some("application/xhtml+xml")];

fuzz_target!(|data: &[u8]| {
    let Some((&switches, body)) = data.split_first() else { return };
    let mut options = ScrapeOptions::default();
    let formats = &mut options.formats;
    formats.markdown = true;
    formats.html = true;
    formats.raw_html = true;
    formats.links = true;
    formats.images = true;
    formats.branding = switches & 0x10 != 0;
    formats.attributes = vec![("a".into(), "href".into()), ("meta[name]".into(), "content".into())];
    options.only_main_content = switches & 1 != 0;
    options.remove_base64_images = switches & 2 != 0;
    options.block_ads = switches & 4 != 0;
    if switches & 8 != 0 {
        options.include_tags = vec!["main".into(), "article p".into()];
        options.exclude_tags = vec!["nav".into(), ".ad".into()];
    }
    let url = url::Url::parse("https://example.com/docs/page.html").expect("url");
    let page = PageInput {
        source_url: url.as_str(),
        final_url: &url,
        status: 200,
        content_type: CONTENT_TYPES[usize::from(switches >> 5) % CONTENT_TYPES.len()],
        body,
    };
    let _ = build(&page, &options, true, &ferrocrawl::documents::Limits::default());
});
