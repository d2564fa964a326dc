//! Search (`POST /v2/search`, spec §4.7): the request as the providers see it, the results
//! they give, and the chain that asks them in the configured order.
//!
//! - [`query`]: the query's words and operators;
//! - [`index`]: the local tantivy index of every stored page;
//! - [`indexer`]: the actor that feeds it off the pages' hot path;
//! - [`page`]: what the index keeps of a scraped page;
//! - [`local`]: the `local` provider, answering from that index;
//! - [`searxng`]: the `searxng` provider, a self-hosted SearXNG's JSON API.
//!
//! The index is made again from the page cache by `crate::scrape::reindex`.
//!
//! A provider is anything behind [`Provider`]: another web search API is one more module
//! implementing it and one more name in `search.providers` ([`providers`]).

pub mod backlog;
pub mod docs;
mod files;
pub mod index;
pub mod indexer;
pub mod local;
pub mod location;
pub mod page;
pub mod query;
pub mod searxng;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::config::Settings;

/// The index's directory in the data directory.
pub const INDEX_DIR: &str = "search";
pub use index::{IndexedImage, IndexedPage, SearchIndex};
pub use query::Query;

/// Which result lists a request wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Web pages.
    Web,
    /// Images.
    Images,
    /// News (articles with a date).
    News,
}

impl Source {
    /// The source `name` (`web`, `images`, `news`) names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "web" => Some(Self::Web),
            "images" => Some(Self::Images),
            "news" => Some(Self::News),
            _ => None,
        }
    }
}

/// A category filter (`categories`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// Code hosting: repositories, code, issues, docs.
    Github,
    /// Academic and research sites.
    Research,
    /// PDF files.
    Pdf,
}

impl Category {
    /// The name results carry in `category`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Github => "github",
            Self::Research => "research",
            Self::Pdf => "pdf",
        }
    }

    /// Hosts of the category (none for `pdf`, a file type).
    pub fn hosts(self) -> &'static [&'static str] {
        match self {
            Self::Github => &["github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "sourceforge.net"],
            Self::Research => &[
                "arxiv.org",
                "doi.org",
                "scholar.google.com",
                "semanticscholar.org",
                "researchgate.net",
                "acm.org",
                "ieee.org",
                "springer.com",
                "nature.com",
                "sciencedirect.com",
                "ncbi.nlm.nih.gov",
                "biorxiv.org",
                "openreview.net",
                "jstor.org",
            ],
            Self::Pdf => &[],
        }
    }

    /// Whether a result at `url` of file type `file_type` is of this category.
    pub fn matches(self, url: &str, file_type: &str) -> bool {
        match self {
            Self::Pdf => {
                file_type == "pdf"
                    || url.to_ascii_lowercase().split('?').next().is_some_and(|p| p.ends_with(".pdf"))
            }
            _ => {
                url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase)).is_some_and(
                    |host| self.hosts().iter().any(|h| host == *h || host.ends_with(&format!(".{h}"))),
                )
            }
        }
    }
}

/// The time filter (`tbs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tbs {
    /// Results dated at or after (epoch ms).
    pub since_ms: Option<i64>,
    /// Results dated at or before (epoch ms).
    pub until_ms: Option<i64>,
    /// Newest first instead of by relevance.
    pub by_date: bool,
    /// The `qdr:` letter, for providers that take a time range by name (h, d, w, m, y).
    pub range: Option<char>,
}

/// A validated search request, as every provider sees it.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query as sent.
    pub raw: String,
    /// Its words and operators.
    pub query: Query,
    /// Results per source.
    pub limit: usize,
    /// The result lists wanted.
    pub sources: Vec<Source>,
    /// Category filters (any of them).
    pub categories: Vec<Category>,
    /// Only these hosts (and their subdomains).
    pub include_domains: Vec<String>,
    /// Never these hosts.
    pub exclude_domains: Vec<String>,
    /// Time filter.
    pub tbs: Tbs,
    /// Preferred language (`en`, `de`…), from `lang` or the country.
    pub language: String,
    /// ISO country code, lowercased.
    pub country: String,
    /// Free-text location.
    pub location: Option<String>,
    /// Safe search asked.
    pub safe: bool,
    /// The team asking: besides web pages, the local index finds its uploaded files.
    pub team: Option<String>,
}

impl SearchRequest {
    /// A plain request for `limit` web results of `raw` (already parsed as `query`), with no
    /// filter, time range or location.
    pub fn web(raw: String, query: Query, limit: usize) -> Self {
        Self {
            raw,
            query,
            limit,
            sources: vec![Source::Web],
            categories: Vec::new(),
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
            tbs: Tbs::default(),
            language: String::new(),
            country: String::new(),
            location: None,
            safe: false,
            team: None,
        }
    }
}

/// A web result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WebResult {
    /// Page URL.
    pub url: String,
    /// Title.
    pub title: String,
    /// Description or snippet.
    pub description: String,
    /// The category it matched, when categories were asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

/// An image result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageResult {
    /// Alt text or the page's title.
    pub title: String,
    /// The image.
    pub image_url: String,
    /// Width, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_width: Option<u32>,
    /// Height, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_height: Option<u32>,
    /// The page showing it.
    pub url: String,
}

/// A news result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewsResult {
    /// Title.
    pub title: String,
    /// Snippet.
    pub snippet: String,
    /// Article URL.
    pub url: String,
    /// Publication date (ISO 8601), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Lead image, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
}

impl SearchRequest {
    /// A request with the API's defaults: `limit` web results for `raw`, in English.
    pub fn simple(raw: &str, limit: usize, sources: &[Source]) -> Result<Self, String> {
        Ok(Self {
            raw: raw.to_owned(),
            query: query::parse(raw)?,
            limit,
            sources: sources.to_vec(),
            categories: Vec::new(),
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
            tbs: Tbs::default(),
            language: "en".to_owned(),
            country: "us".to_owned(),
            location: None,
            safe: false,
            team: None,
        })
    }
}

/// What a provider found, per source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// Web results, best first.
    pub web: Vec<WebResult>,
    /// Image results.
    pub images: Vec<ImageResult>,
    /// News results.
    pub news: Vec<NewsResult>,
}

impl Found {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.web.is_empty() && self.images.is_empty() && self.news.is_empty()
    }
}

/// A search backend.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// Its name in `search.providers` and in warnings.
    fn name(&self) -> &'static str;
    /// Whether it searches the web (a job's `enableWebSearch` asks these), not only the
    /// pages this server has read.
    fn reaches_web(&self) -> bool {
        true
    }
    /// Results for `request`, or why there are none.
    fn search<'a>(&'a self, request: &'a SearchRequest) -> BoxFuture<'a, Result<Found, String>>;
}

/// The providers `search.providers` names, in order (names are checked at start-up).
pub fn providers(settings: &Settings, index: Option<Arc<SearchIndex>>) -> Vec<Arc<dyn Provider>> {
    settings
        .search
        .providers
        .iter()
        .filter_map(|name| -> Option<Arc<dyn Provider>> {
            match name.as_str() {
                "local" => Some(Arc::new(local::Local::new(index.clone()?))),
                "searxng" => Some(Arc::new(searxng::SearXng::new(settings).ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// Asks `providers` in order: the first with results answers; one that fails is named in
/// the warnings and the next is asked.
pub async fn run(providers: &[Arc<dyn Provider>], request: &SearchRequest) -> (Found, Vec<String>) {
    let mut warnings = Vec::new();
    for provider in providers {
        match provider.search(request).await {
            Ok(found) if !found.is_empty() => return (found, warnings),
            Ok(_) => {}
            Err(why) => warnings.push(format!("The {} search provider failed: {why}.", provider.name())),
        }
    }
    if providers.is_empty() {
        warnings.push("No search provider is configured (search.providers).".to_owned());
    }
    (Found::default(), warnings)
}
