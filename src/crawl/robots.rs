//! robots.txt as a crawl uses it: fetched once per host, kept as bytes, and evaluated per
//! user agent (a crawl may match rules for a custom agent). A missing file (4xx) or one
//! that could not be fetched allows everything, as Firecrawl does.

use std::collections::HashMap;
use std::time::Duration;

use texting_robots::Robot;
use url::Url;

/// Largest robots.txt read; Google stops at 500 KiB too.
pub const MAX_ROBOTS_BYTES: usize = 512 * 1024;

/// A host's robots.txt.
#[derive(Debug, Default)]
pub struct RobotsTxt {
    body: Option<Vec<u8>>,
    parsed: HashMap<String, Option<Robot>>,
}

impl RobotsTxt {
    /// No rules: everything is allowed.
    pub fn allow_all() -> Self {
        Self::default()
    }

    /// From a fetch: a 2xx body is parsed; anything else allows everything.
    pub fn from_response(status: u16, mut body: Vec<u8>) -> Self {
        if !(200..300).contains(&status) {
            return Self::allow_all();
        }
        body.truncate(MAX_ROBOTS_BYTES);
        Self { body: Some(body), parsed: HashMap::new() }
    }

    fn robot(&mut self, agent: &str) -> Option<&Robot> {
        let body = self.body.as_deref()?;
        self.parsed.entry(agent.to_ascii_lowercase()).or_insert_with(|| Robot::new(agent, body).ok()).as_ref()
    }

    /// Whether `agent` may fetch `url`.
    pub fn allowed(&mut self, agent: &str, url: &Url) -> bool {
        self.robot(agent).is_none_or(|r| r.allowed(url.as_str()))
    }

    /// The `Crawl-delay` for `agent`, if any (capped at one minute).
    pub fn crawl_delay(&mut self, agent: &str) -> Option<Duration> {
        let seconds = self.robot(agent)?.delay?;
        (seconds.is_finite() && seconds > 0.0).then(|| Duration::from_secs_f32(seconds.min(60.0)))
    }

    /// `Sitemap:` lines.
    pub fn sitemaps(&mut self) -> Vec<String> {
        self.robot("*").map(|r| r.sitemaps.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TXT: &[u8] = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: special\nDisallow: /\n\nSitemap: http://a.test/sitemap.xml\n";

    fn u(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn rules_apply_per_agent() {
        let mut robots = RobotsTxt::from_response(200, TXT.to_vec());
        assert!(!robots.allowed("ferrocrawl", &u("http://a.test/private/x")));
        assert!(robots.allowed("ferrocrawl", &u("http://a.test/public")));
        assert!(!robots.allowed("Special", &u("http://a.test/public")));
        assert_eq!(robots.crawl_delay("ferrocrawl"), Some(Duration::from_secs(2)));
        assert_eq!(robots.sitemaps(), vec!["http://a.test/sitemap.xml".to_owned()]);
    }

    #[test]
    fn missing_or_failed_files_allow_everything() {
        let mut robots = RobotsTxt::from_response(404, b"Disallow: /".to_vec());
        assert!(robots.allowed("ferrocrawl", &u("http://a.test/anything")));
        assert_eq!(robots.crawl_delay("ferrocrawl"), None);
        assert!(RobotsTxt::allow_all().sitemaps().is_empty());
    }
}
