//! The whole page pipeline on arbitrary bytes: content-type sniffing, charset decoding,
//! extraction and every format a scrape can ask for (Markdown, cleaned and raw HTML,
//! links, images, attributes, branding). The first byte picks the options and the
//! declared content type; the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/pathological/pages.rs"]
#[allow(dead_code)]
mod pages;

const CONTENT_TYPES: [Option<&str>; 4] =
    [Some("text/html"), None, Some("text/html; charset=windows-1251"), Some("application/xhtml+xml")];

fuzz_target!(|data: &[u8]| {
    let Some((&switches, body)) = data.split_first() else { return };
    let mut options = pages::every_format();
    options.formats.branding = switches & 0x10 != 0;
    options.formats.attributes.push(("meta[name]".into(), "content".into()));
    options.only_main_content = switches & 1 != 0;
    options.remove_base64_images = switches & 2 != 0;
    options.block_ads = switches & 4 != 0;
    if switches & 8 != 0 {
        options.include_tags = vec!["main".into(), "article p".into()];
        options.exclude_tags = vec!["nav".into(), ".ad".into()];
    }
    let content_type = CONTENT_TYPES[usize::from(switches >> 5) % CONTENT_TYPES.len()];
    let _ = pages::build_page(body, content_type, &options);
});
