//! Sitemaps and sitemap indexes (XML, gzipped or plain text), as discovery reads them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ferrocrawl::crawl::sitemap::parse(data);
});
