//! `blockAds`: requests to well-known ad and tracking hosts (and ad-script paths on any
//! host) are blocked before they leave the browser, and common cookie-consent banners are
//! hidden with a style sheet added to every document.

use chromiumoxide::cdp::browser_protocol::network::BlockPattern;

/// Ad, tracker and consent-manager hosts (their subdomains included).
const HOSTS: &[&str] = &[
    "doubleclick.net",
    "googlesyndication.com",
    "googleadservices.com",
    "googletagservices.com",
    "googletagmanager.com",
    "google-analytics.com",
    "adservice.google.com",
    "amazon-adsystem.com",
    "adnxs.com",
    "adsrvr.org",
    "advertising.com",
    "criteo.com",
    "criteo.net",
    "taboola.com",
    "outbrain.com",
    "pubmatic.com",
    "rubiconproject.com",
    "openx.net",
    "casalemedia.com",
    "moatads.com",
    "scorecardresearch.com",
    "quantserve.com",
    "hotjar.com",
    "segment.io",
    "mixpanel.com",
    "facebook.net",
    "connect.facebook.net",
    "ads-twitter.com",
    "ads.linkedin.com",
    "bat.bing.com",
    "yandex.ru/metrika",
    "mc.yandex.ru",
    "media.net",
    "zedo.com",
    "adform.net",
    "smartadserver.com",
    "teads.tv",
    "yieldmo.com",
    "sharethrough.com",
    "onetrust.com",
    "cookielaw.org",
    "cookiebot.com",
    "consensu.org",
    "trustarc.com",
    "quantcast.com",
];

/// Ad-script paths blocked on any host.
const PATHS: &[&str] = &["/pagead/*", "/adsbygoogle.js", "/ads.js", "/gpt.js", "/prebid*.js", "/adframe*"];

/// URL patterns (URLPattern syntax) for `Network.setBlockedURLs`.
pub fn patterns() -> Vec<BlockPattern> {
    let mut patterns = Vec::with_capacity(HOSTS.len() * 2 + PATHS.len());
    for host in HOSTS {
        let (host, path) = host.split_once('/').map_or((*host, "*"), |(h, p)| (h, p));
        let path = if path == "*" { "/*".to_owned() } else { format!("/{path}*") };
        // `:*`: any port (a pattern without one matches only the scheme's default port).
        patterns.push(BlockPattern::new(format!("*://{host}:*{path}"), true));
        patterns.push(BlockPattern::new(format!("*://*.{host}:*{path}"), true));
    }
    for path in PATHS {
        patterns.push(BlockPattern::new(format!("*://*:*{path}"), true));
    }
    patterns
}

/// Selectors of common consent banners and their overlays.
const BANNERS: &str = "#onetrust-consent-sdk, #onetrust-banner-sdk, #CybotCookiebotDialog, #cookiebanner, \
    #cookie-banner, #cookie-notice, #cookie-consent, #cookieConsent, #gdpr-banner, #consent-banner, \
    .cc-window, .cc-banner, .cookie-banner, .cookie-notice, .cookie-consent, .cookies-banner, \
    .gdpr-banner, .consent-banner, .qc-cmp2-container, .fc-consent-root, .truste_overlay, \
    [aria-label=cookieconsent], [id^=sp_message_container], [class*=cookie-banner], \
    [id*=cookie-banner], [class*=CookieConsent]";

/// Added to every document: hides the banners as soon as they appear.
pub fn hide_banners_script() -> String {
    format!(
        "(() => {{ const add = () => {{ const s = document.createElement('style'); \
         s.textContent = `{BANNERS} {{ display: none !important; }}`; \
         (document.head || document.documentElement).appendChild(s); }}; \
         if (document.documentElement) add(); else document.addEventListener('DOMContentLoaded', add); }})();"
    )
}

/// Run before capturing content: removes the banners so their text stays out of the result.
pub fn remove_banners_script() -> String {
    format!("document.querySelectorAll(`{BANNERS}`).forEach((e) => e.remove())")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_cover_the_domain_and_its_subdomains() {
        let all: Vec<String> = patterns().into_iter().map(|p| p.url_pattern).collect();
        assert!(all.contains(&"*://doubleclick.net:*/*".to_owned()));
        assert!(all.contains(&"*://*.doubleclick.net:*/*".to_owned()));
        assert!(all.contains(&"*://*.yandex.ru:*/metrika*".to_owned()));
        assert!(all.contains(&"*://*:*/pagead/*".to_owned()));
    }
}
