//! Validated crawl and map options, and the lifecycle of an asynchronous job. Plain data,
//! persisted with the job so a restarted server resumes it unchanged.

use serde::{Deserialize, Serialize};

use super::ScrapeOptions;
use super::webhook::WebhookSpec;

/// Default page limit of a crawl (spec §4.3).
pub const DEFAULT_CRAWL_LIMIT: u64 = 10_000;
/// Default link limit of a map.
pub const DEFAULT_MAP_LIMIT: usize = 5_000;
/// Largest link limit of a map.
pub const MAX_MAP_LIMIT: usize = 100_000;

/// How a crawl uses sitemaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum SitemapMode {
    /// Ignore sitemaps.
    Skip,
    /// Sitemap URLs and followed links.
    #[default]
    Include,
    /// Sitemap URLs and the start URL only; no link following.
    Only,
}

/// Everything a crawl was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrawlOptions {
    /// Regexes a URL must match one of.
    pub include_paths: Vec<String>,
    /// Regexes that exclude a URL.
    pub exclude_paths: Vec<String>,
    /// Link hops from the start page; `None` is unlimited.
    pub max_discovery_depth: Option<u32>,
    /// Sitemap use.
    pub sitemap: SitemapMode,
    /// Treat URLs differing only in the query as one.
    pub ignore_query_parameters: bool,
    /// Collapse www/scheme/trailing-slash/index variants.
    pub deduplicate_similar_urls: bool,
    /// Match patterns on the full URL.
    pub regex_on_full_url: bool,
    /// Most pages to crawl.
    pub limit: u64,
    /// Follow links outside the start path.
    pub crawl_entire_domain: bool,
    /// Follow links to other sites.
    pub allow_external_links: bool,
    /// Follow links to subdomains.
    pub allow_subdomains: bool,
    /// Skip robots.txt.
    pub ignore_robots_txt: bool,
    /// User agent matched against robots.txt instead of ours.
    pub robots_user_agent: Option<String>,
    /// Pause between page fetches in milliseconds (forces one fetch at a time).
    pub delay_ms: Option<u64>,
    /// Most fetches in flight for this crawl.
    pub max_concurrency: Option<u32>,
    /// Options applied to every page.
    pub scrape: ScrapeOptions,
    /// Where to send the job's events.
    pub webhook: Option<WebhookSpec>,
}

impl Default for CrawlOptions {
    fn default() -> Self {
        Self {
            include_paths: Vec::new(),
            exclude_paths: Vec::new(),
            max_discovery_depth: None,
            sitemap: SitemapMode::Include,
            ignore_query_parameters: false,
            deduplicate_similar_urls: true,
            regex_on_full_url: false,
            limit: DEFAULT_CRAWL_LIMIT,
            crawl_entire_domain: false,
            allow_external_links: false,
            allow_subdomains: false,
            ignore_robots_txt: false,
            robots_user_agent: None,
            delay_ms: None,
            max_concurrency: None,
            scrape: ScrapeOptions::default(),
            webhook: None,
        }
    }
}

/// Crawl or batch scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobKind {
    /// A crawl from one URL.
    Crawl,
    /// A batch of given URLs.
    Batch,
}

impl JobKind {
    /// `crawl` or `batch`: the kind as metrics and logs name it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Crawl => "crawl",
            Self::Batch => "batch",
        }
    }
}

/// Where an asynchronous job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobStatus {
    /// Work remains.
    Scraping,
    /// Everything reachable was done.
    Completed,
    /// The job could not start.
    Failed,
    /// The caller cancelled it.
    Cancelled,
}

impl JobStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scraping => "scraping",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the job will not change any more.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Scraping)
    }
}

/// What a map was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapOptions {
    /// Keep links whose URL or title contains these words, best matches first.
    pub search: Option<String>,
    /// Sitemap use.
    pub sitemap: SitemapMode,
    /// Keep subdomains of the site.
    pub include_subdomains: bool,
    /// Drop query strings.
    pub ignore_query_parameters: bool,
    /// Keep only links under the start URL's path.
    pub filter_by_path: bool,
    /// Keep links to other sites too.
    pub allow_external_links: bool,
    /// Regexes a link must match one of.
    pub include_paths: Vec<String>,
    /// Regexes that drop a link.
    pub exclude_paths: Vec<String>,
    /// Match the regexes on the full URL.
    pub regex_on_full_url: bool,
    /// Collapse www/scheme/trailing-slash/index variants.
    pub deduplicate_similar_urls: bool,
    /// Most links returned.
    pub limit: usize,
    /// Time budget in milliseconds.
    pub timeout_ms: u64,
    /// How the pages are fetched.
    pub scrape: ScrapeOptions,
}

impl MapOptions {
    /// A map of a whole site under the start URL's path: sitemaps included, subdomains
    /// kept, query strings and near-duplicate URLs collapsed, at most `limit` links.
    pub fn site(limit: usize, timeout_ms: u64, scrape: ScrapeOptions) -> Self {
        Self {
            search: None,
            sitemap: SitemapMode::Include,
            include_subdomains: true,
            ignore_query_parameters: true,
            filter_by_path: true,
            limit,
            timeout_ms,
            scrape,
            allow_external_links: false,
            include_paths: Vec::new(),
            exclude_paths: Vec::new(),
            regex_on_full_url: false,
            deduplicate_similar_urls: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawl_options_survive_postcard() {
        let o = CrawlOptions {
            include_paths: vec!["^/blog".into()],
            max_discovery_depth: Some(2),
            delay_ms: Some(1500),
            webhook: Some(WebhookSpec { url: "http://h.test".into(), ..Default::default() }),
            ..Default::default()
        };
        let bytes = postcard::to_allocvec(&o).expect("encode");
        assert_eq!(postcard::from_bytes::<CrawlOptions>(&bytes).expect("decode"), o);
    }
}
