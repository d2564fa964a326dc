//! Site map (`POST /v2/map`): a site's URLs without scraping them — the start page's links
//! and the sitemaps' URLs (each requested of its site's actor, so politeness holds), filtered
//! to the site (and its subdomains when asked), de-duplicated, optionally ranked by a search
//! phrase, and cut to the limit. A map that runs out of time cancels its requests.

use std::collections::HashSet;
use std::time::Duration;

use url::Url;

use super::Runtime;
use super::fetch::{FetchOutcome, FetchTask};
use super::sites::Sites;
use crate::crawl::keys::{self, KeyRules};
use crate::crawl::scope::{Scope, ScopeOptions};
use crate::model::{Code, ErrorCode, JobId, MapOptions, SitemapMode, TeamId};

/// One mapped URL.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MapLink {
    /// The URL.
    pub url: String,
    /// Page title, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Page description, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Why a map failed.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The time budget ran out.
    #[error("the map did not finish within {0} ms")]
    Timeout(u64),
    /// The include/exclude patterns do not compile.
    #[error("{0}")]
    Pattern(String),
    /// The actor tree is unavailable.
    #[error("{0}")]
    Unavailable(String),
}

impl ErrorCode for MapError {
    fn code(&self) -> Code {
        match self {
            Self::Timeout(_) => Code::MapTimeout,
            Self::Pattern(_) => Code::BadRequest,
            Self::Unavailable(_) => Code::Unavailable,
        }
    }
}

/// Maps the site of `start`.
pub async fn map(
    runtime: &Runtime,
    team: &TeamId,
    start: &Url,
    options: &MapOptions,
) -> Result<Vec<MapLink>, MapError> {
    let ms = options.timeout_ms;
    // The site actors know the map's requests by this id.
    let job = JobId::new();
    let collected =
        tokio::time::timeout(Duration::from_millis(ms), collect(runtime, team, job, start, options)).await;
    if collected.is_err()
        && let Ok(sites) = runtime.sites().await
    {
        sites.cancel(job);
    }
    collected.map_err(|_| MapError::Timeout(ms))?
}

async fn collect(
    runtime: &Runtime,
    team: &TeamId,
    job: JobId,
    start: &Url,
    options: &MapOptions,
) -> Result<Vec<MapLink>, MapError> {
    let scope = Scope::new(
        start,
        ScopeOptions {
            include_paths: options.include_paths.clone(),
            exclude_paths: options.exclude_paths.clone(),
            regex_on_full_url: options.regex_on_full_url,
            crawl_entire_domain: !options.filter_by_path,
            allow_external_links: options.allow_external_links,
            allow_subdomains: options.include_subdomains,
        },
    )
    .map_err(|e| MapError::Pattern(e.to_string()))?;
    let sites = runtime.sites().await.map_err(|e| MapError::Unavailable(e.to_string()))?;
    let mut found: Vec<MapLink> = Vec::new();
    if options.sitemap != SitemapMode::Only {
        found.extend(start_page(&sites, team, job, start, options).await);
    }
    if options.sitemap != SitemapMode::Skip {
        let limit = options.limit as u64;
        let urls = super::discovery::discover(&sites, job, start, limit).await.unwrap_or_default();
        found.extend(urls.into_iter().map(|url| MapLink { url, title: None, description: None }));
    }
    let rules =
        KeyRules { ignore_query: options.ignore_query_parameters, similar: options.deduplicate_similar_urls };
    let mut seen = HashSet::new();
    let mut links = Vec::new();
    for link in found {
        let Ok(url) = Url::parse(&link.url) else { continue };
        let url = keys::normalize(&url, rules);
        if scope.check(&url).is_err() || !seen.insert(keys::key(&url, rules)) {
            continue;
        }
        links.push(MapLink { url: url.to_string(), ..link });
    }
    if let Some(search) = options.search.as_deref() {
        links = rank(links, search);
    }
    links.truncate(options.limit);
    Ok(links)
}

/// The start page itself (with its title) and its links.
async fn start_page(
    sites: &Sites,
    team: &TeamId,
    job: JobId,
    start: &Url,
    options: &MapOptions,
) -> Vec<MapLink> {
    let task = FetchTask {
        job,
        team: team.clone(),
        scrape_id: JobId::new(),
        url: start.to_string(),
        options: options.scrape.clone(),
        respect_robots: false,
        robots_agent: None,
        discover: true,
        queued_ms: None,
    };
    match sites.fetch(task, None, || {}).await.parsed() {
        FetchOutcome::Page { document, links } => {
            let meta = document.metadata;
            let mut out =
                vec![MapLink { url: meta.url.clone(), title: meta.title, description: meta.description }];
            out.extend(links.into_iter().map(|url| MapLink { url, title: None, description: None }));
            out
        }
        _ => Vec::new(),
    }
}

/// Links mentioning the search words, most words first (ties keep their order).
fn rank(links: Vec<MapLink>, search: &str) -> Vec<MapLink> {
    let words: Vec<String> = search.split_whitespace().map(str::to_lowercase).collect();
    if words.is_empty() {
        return links;
    }
    let mut scored: Vec<(usize, MapLink)> = links
        .into_iter()
        .filter_map(|link| {
            let hay = format!("{} {}", link.url, link.title.as_deref().unwrap_or_default()).to_lowercase();
            let score = words.iter().filter(|w| hay.contains(w.as_str())).count();
            (score > 0).then_some((score, link))
        })
        .collect();
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored.into_iter().map(|(_, link)| link).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(url: &str, title: Option<&str>) -> MapLink {
        MapLink { url: url.into(), title: title.map(Into::into), description: None }
    }

    #[test]
    fn search_keeps_and_ranks_matches() {
        let links = vec![
            link("http://a.test/about", None),
            link("http://a.test/blog/rust", None),
            link("http://a.test/blog/rust-actors", Some("Actors in Rust")),
            link("http://a.test/blog/go", None),
        ];
        let ranked = rank(links, "Rust actors");
        let urls: Vec<&str> = ranked.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(urls, vec!["http://a.test/blog/rust-actors", "http://a.test/blog/rust"]);
    }
}
