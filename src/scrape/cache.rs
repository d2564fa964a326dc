//! Cache policy of a scrape: the key of a page (canonical URL plus the request variant that
//! changes what the server sends) and whether a cached copy of a given age may be served.

use url::Url;

use crate::model::ScrapeOptions;
use crate::store::page_cache::CacheKey;
use crate::store::{CachedPage, PageCache};

/// The canonical form of a URL for caching: no fragment, lowercase scheme and host,
/// default port dropped (the url crate already normalises those), query kept as sent.
pub fn canonical(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string()
}

/// The cache key of `url` fetched with `options`.
pub fn key(url: &Url, options: &ScrapeOptions) -> CacheKey {
    PageCache::key(&canonical(url), &variant(options))
}

/// A stable description of the request properties that change the response.
fn variant(options: &ScrapeOptions) -> String {
    let device = if options.mobile { "mobile" } else { "desktop" };
    let (country, languages) = match &options.location {
        Some(loc) => (loc.country.as_deref().unwrap_or(""), loc.languages.join(",")),
        None => ("", String::new()),
    };
    // A caller who asks for certificate verification must not get a page that was
    // fetched without it.
    let tls = if options.skip_tls_verification { "any-tls" } else { "verified-tls" };
    // A page rendered on request (with its own wait) differs from one fetched over HTTP, and
    // a rendered page's DOM differs with ad blocking (blocked scripts never ran).
    let engine =
        if options.prefers_browser() { format!("browser-{}", options.wait_for_ms) } else { "auto".into() };
    let ads = if options.block_ads { "no-ads" } else { "ads" };
    format!("v1|{device}|{country}|{languages}|{tls}|{engine}|{ads}")
}

/// Whether `page`, fetched at `page.fetched_ms`, may answer a request made at `now_ms`.
pub fn is_usable(page: &CachedPage, options: &ScrapeOptions, now_ms: u64) -> bool {
    let age = now_ms.saturating_sub(page.fetched_ms);
    match options.min_age_ms {
        // minAge: cache only, the copy must be at least this old ("1" accepts any copy).
        Some(min_age) => age >= min_age,
        None => options.max_age_ms > 0 && age <= options.max_age_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Location;

    fn page(fetched_ms: u64) -> CachedPage {
        CachedPage {
            final_url: "http://a.test/".into(),
            status: 200,
            content_type: None,
            body: Vec::new(),
            fetched_ms,
            via_proxy: false,
            rendered: false,
        }
    }

    #[test]
    fn fragments_do_not_split_the_cache() {
        let a = Url::parse("http://A.test:80/p?q=1#top").expect("url");
        let b = Url::parse("http://a.test/p?q=1").expect("url");
        let o = ScrapeOptions::default();
        assert_eq!(key(&a, &o), key(&b, &o));
    }

    #[test]
    fn device_and_language_split_the_cache() {
        let u = Url::parse("http://a.test/").expect("url");
        let desktop = ScrapeOptions::default();
        let mobile = ScrapeOptions { mobile: true, ..Default::default() };
        let german = ScrapeOptions {
            location: Some(Location { country: Some("de".into()), languages: vec!["de-DE".into()] }),
            ..Default::default()
        };
        assert_ne!(key(&u, &desktop), key(&u, &mobile));
        assert_ne!(key(&u, &desktop), key(&u, &german));
        let verified = ScrapeOptions { skip_tls_verification: false, ..Default::default() };
        assert_ne!(key(&u, &desktop), key(&u, &verified));
    }

    #[test]
    fn age_rules() {
        let fresh = ScrapeOptions { max_age_ms: 1000, ..Default::default() };
        assert!(is_usable(&page(10_000), &fresh, 10_500));
        assert!(!is_usable(&page(10_000), &fresh, 11_001));
        let never = ScrapeOptions { max_age_ms: 0, ..Default::default() };
        assert!(!is_usable(&page(10_000), &never, 10_000));
        let min = ScrapeOptions { min_age_ms: Some(1), max_age_ms: 5, ..Default::default() };
        assert!(is_usable(&page(0), &min, 1_000_000));
        let older = ScrapeOptions { min_age_ms: Some(5_000), ..Default::default() };
        assert!(!is_usable(&page(10_000), &older, 12_000));
    }
}
