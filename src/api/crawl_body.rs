//! The crawl request (`POST /v2/crawl`) as clients send it, and its validation into
//! [`CrawlOptions`]: scope regexes must compile, robots.txt overrides need the enterprise
//! plan, scrape options are validated like a scrape's (named under `scrapeOptions.`).

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::body;
use super::error::ApiError;
use super::options::{Caller, ScrapeOptionsBody};
use crate::crawl::scope::{self, ScopeOptions};
use crate::model::crawl::DEFAULT_CRAWL_LIMIT;
use crate::model::{Code, CrawlOptions, SitemapMode};

/// Longest crawl `delay` in seconds.
pub const MAX_DELAY_SECS: f64 = 60.0;

/// A crawl request on the wire (besides `url`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = CrawlOptions)]
pub struct CrawlBody {
    /// Natural-language crawl instructions, turned into crawl options by the language model
    /// (options given explicitly win); needs `llm.base_url`.
    pub prompt: Option<String>,
    /// Regexes on the URL path; matching URLs are not crawled.
    pub exclude_paths: Option<Vec<String>>,
    /// Regexes on the URL path; only matching URLs are crawled.
    pub include_paths: Option<Vec<String>>,
    /// Link hops from the start page (start and sitemap pages are depth 0).
    #[schema(minimum = 0)]
    pub max_discovery_depth: Option<u32>,
    /// `skip`, `include` (default) or `only`.
    pub sitemap: Option<String>,
    /// Treat URLs that differ only in their query as one page.
    pub ignore_query_parameters: Option<bool>,
    /// Match include/exclude patterns against the full URL.
    #[serde(rename = "regexOnFullURL")]
    pub regex_on_full_url: Option<bool>,
    /// Most pages to crawl (default 10000).
    #[schema(minimum = 1)]
    pub limit: Option<u64>,
    /// Follow links outside the start URL's path.
    pub crawl_entire_domain: Option<bool>,
    /// Follow links to other sites.
    pub allow_external_links: Option<bool>,
    /// Follow links to subdomains.
    pub allow_subdomains: Option<bool>,
    /// Ignore robots.txt (enterprise plan).
    pub ignore_robots_txt: Option<bool>,
    /// Agent matched against robots.txt (enterprise plan).
    pub robots_user_agent: Option<String>,
    /// Seconds between page fetches; forces one fetch at a time.
    #[schema(minimum = 0, maximum = 60)]
    pub delay: Option<f64>,
    /// Most pages fetched at once for this crawl.
    #[schema(minimum = 1)]
    pub max_concurrency: Option<u32>,
    /// Collapse www/non-www, http/https, trailing slash and index-file variants (default true).
    #[serde(rename = "deduplicateSimilarURLs")]
    pub deduplicate_similar_urls: Option<bool>,
    /// Where to send events: a URL or `{url, headers, metadata, events}`.
    #[schema(value_type = Option<Object>)]
    pub webhook: Option<Value>,
    /// Scrape options applied to every page.
    #[schema(value_type = Option<Object>)]
    pub scrape_options: Option<Value>,
    /// Keep nothing on disk for this crawl (team permission).
    pub zero_data_retention: Option<bool>,
    /// Client label sent by the SDKs.
    pub origin: Option<String>,
    /// Integration label sent by the SDKs.
    pub integration: Option<String>,
}

/// Parses and validates a crawl body (the `url` already removed).
pub fn parse(map: Map<String, Value>, caller: Caller<'_>) -> Result<CrawlOptions, ApiError> {
    let body: CrawlBody = body::typed(Value::Object(map), "")?;
    body.validate(caller)
}

impl CrawlBody {
    fn validate(self, caller: Caller<'_>) -> Result<CrawlOptions, ApiError> {
        if self.prompt.as_deref().is_some_and(|p| !p.is_empty()) {
            return Err(ApiError::not_available("prompt", super::formats::NO_MODEL));
        }
        if (self.ignore_robots_txt == Some(true) || self.robots_user_agent.is_some())
            && !caller.flags.enterprise
        {
            let field =
                if self.ignore_robots_txt == Some(true) { "ignoreRobotsTxt" } else { "robotsUserAgent" };
            return Err(ApiError::new(
                Code::Forbidden,
                format!(
                    "`{field}` is available on enterprise plans only; ask the operator to set teams.{}.enterprise",
                    caller.team
                ),
            ));
        }
        if self.robots_user_agent.as_ref().is_some_and(|a| a.trim().is_empty() || a.len() > 256) {
            return Err(ApiError::bad_request("`robotsUserAgent` must be 1 to 256 characters"));
        }
        let limit = self.limit.unwrap_or(DEFAULT_CRAWL_LIMIT);
        if limit == 0 {
            return Err(ApiError::bad_request("`limit` must be at least 1"));
        }
        if self.max_concurrency == Some(0) {
            return Err(ApiError::bad_request("`maxConcurrency` must be at least 1"));
        }
        let delay_ms = delay_ms_of(self.delay)?;
        let sitemap = sitemap_mode(self.sitemap.as_deref())?;
        let (include_paths, exclude_paths) = path_patterns(self.include_paths, self.exclude_paths)?;
        let scrape = match self.scrape_options {
            None | Some(Value::Null) => ScrapeOptionsBody::default().validate(caller, "scrapeOptions.")?,
            Some(Value::Object(mut map)) => {
                body::reject_unknown(
                    &mut map,
                    &[body::field_names::<ScrapeOptionsBody>()],
                    "scrapeOptions.",
                )?;
                ScrapeOptionsBody::from_map(map, "scrapeOptions.")?.validate(caller, "scrapeOptions.")?
            }
            Some(_) => return Err(ApiError::bad_request("`scrapeOptions` must be an object")),
        };
        let webhook = self.webhook.filter(|w| !w.is_null()).map(|w| super::webhook::parse(&w)).transpose()?;
        let zero_data_retention = self.zero_data_retention.unwrap_or(false);
        if zero_data_retention && !caller.flags.zero_data_retention {
            return Err(ApiError::new(
                Code::Forbidden,
                format!("`zeroDataRetention` is not enabled for team `{}`", caller.team),
            ));
        }
        let mut scrape = scrape;
        scrape.zero_data_retention |= zero_data_retention;
        Ok(CrawlOptions {
            include_paths,
            exclude_paths,
            max_discovery_depth: self.max_discovery_depth,
            sitemap,
            ignore_query_parameters: self.ignore_query_parameters.unwrap_or(false),
            deduplicate_similar_urls: self.deduplicate_similar_urls.unwrap_or(true),
            regex_on_full_url: self.regex_on_full_url.unwrap_or(false),
            limit,
            crawl_entire_domain: self.crawl_entire_domain.unwrap_or(false),
            allow_external_links: self.allow_external_links.unwrap_or(false),
            allow_subdomains: self.allow_subdomains.unwrap_or(false),
            ignore_robots_txt: self.ignore_robots_txt.unwrap_or(false),
            robots_user_agent: self.robots_user_agent,
            delay_ms,
            max_concurrency: self.max_concurrency,
            scrape,
            webhook,
        })
    }
}

/// A crawl's `delay` (seconds, at most [`MAX_DELAY_SECS`]) in milliseconds.
pub fn delay_ms_of(delay: Option<f64>) -> Result<Option<u64>, ApiError> {
    match delay {
        None => Ok(None),
        Some(d) if d.is_finite() && (0.0..=MAX_DELAY_SECS).contains(&d) => {
            Ok(Some((d * 1000.0).round() as u64))
        }
        Some(_) => {
            Err(ApiError::bad_request(format!("`delay` must be between 0 and {MAX_DELAY_SECS} seconds")))
        }
    }
}

/// `sitemap`: skip, include (the default) or only.
pub fn sitemap_mode(value: Option<&str>) -> Result<SitemapMode, ApiError> {
    match value {
        None | Some("include") => Ok(SitemapMode::Include),
        Some("skip") => Ok(SitemapMode::Skip),
        Some("only") => Ok(SitemapMode::Only),
        Some(other) => {
            Err(ApiError::bad_request(format!("`sitemap` must be skip, include or only (got `{other}`)")))
        }
    }
}

/// `includePaths` and `excludePaths`, checked to compile.
pub fn path_patterns(
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
) -> Result<(Vec<String>, Vec<String>), ApiError> {
    let options = ScopeOptions {
        include_paths: include.unwrap_or_default(),
        exclude_paths: exclude.unwrap_or_default(),
        ..Default::default()
    };
    scope::validate_patterns(&options).map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((options.include_paths, options.exclude_paths))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TeamSettings;
    use serde_json::json;

    fn parse_as(v: Value, flags: TeamSettings) -> Result<CrawlOptions, ApiError> {
        let Value::Object(map) = v else { panic!("object") };
        parse(map, Caller { team: "t", flags: &flags, model: false, key: "" })
    }

    fn p(v: Value) -> Result<CrawlOptions, ApiError> {
        parse_as(v, TeamSettings::default())
    }

    #[test]
    fn defaults() {
        let o = p(json!({})).expect("ok");
        assert_eq!(o.limit, 10_000);
        assert_eq!(o.sitemap, SitemapMode::Include);
        assert!(o.deduplicate_similar_urls && o.scrape.formats.markdown);
    }

    #[test]
    fn bad_regexes_and_values_are_named() {
        let err = p(json!({"includePaths": ["^/ok", "(bad"]})).unwrap_err();
        assert!(err.message().contains("`includePaths[1]`"), "{}", err.message());
        assert!(p(json!({"sitemap": "sometimes"})).unwrap_err().message().contains("`sitemap`"));
        assert!(p(json!({"limit": 0})).unwrap_err().message().contains("`limit`"));
        assert!(p(json!({"delay": 61})).unwrap_err().message().contains("`delay`"));
        let err = p(json!({"scrapeOptions": {"timeout": 5}})).unwrap_err();
        assert!(err.message().contains("`scrapeOptions.timeout`"), "{}", err.message());
        let err = p(json!({"scrapeOptions": {"bogus": 1}})).unwrap_err();
        assert!(err.message().contains("`scrapeOptions.bogus`"), "{}", err.message());
    }

    #[test]
    fn robots_overrides_need_enterprise() {
        assert_eq!(p(json!({"ignoreRobotsTxt": true})).unwrap_err().code(), Code::Forbidden);
        assert_eq!(p(json!({"robotsUserAgent": "x"})).unwrap_err().code(), Code::Forbidden);
        let enterprise = TeamSettings { enterprise: true, ..Default::default() };
        assert!(parse_as(json!({"ignoreRobotsTxt": true}), enterprise).expect("ok").ignore_robots_txt);
    }

    #[test]
    fn delay_and_prompt() {
        assert_eq!(p(json!({"delay": 1.5})).expect("ok").delay_ms, Some(1500));
        assert_eq!(p(json!({"prompt": "blog posts"})).unwrap_err().code(), Code::FeatureNotAvailable);
    }

    #[test]
    fn webhooks_are_checked() {
        assert!(p(json!({"webhook": "http://hooks.example.com/x"})).expect("ok").webhook.is_some());
        assert!(p(json!({"webhook": {"url": "ftp://x"}})).unwrap_err().message().contains("`webhook.url`"));
    }
}
