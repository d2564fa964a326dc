//! robots.txt as a crawl reads it: rules for two agents, crawl delays and sitemaps.
#![no_main]

use ferrocrawl::crawl::robots::RobotsTxt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut robots = RobotsTxt::from_response(200, data.to_vec());
    let urls = ["https://example.com/", "https://example.com/private/x?y=1", "https://example.com/%E2%82%AC/a*b$"];
    for agent in ["ferrocrawl", "FirecrawlAgent"] {
        for u in urls {
            let url = url::Url::parse(u).expect("url");
            let _ = robots.allowed(agent, &url);
        }
        let _ = robots.crawl_delay(agent);
    }
    let _ = robots.sitemaps();
});
