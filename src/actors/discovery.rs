//! Sitemap discovery for a crawl, run as a task beside the job: the sitemaps robots.txt
//! names (asked of the site actor, which has read it), `/sitemap.xml`, and nested sitemap
//! indexes, up to a bounded number of documents. The URLs go back to the job, which filters
//! them through the crawl's scope like any other link.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use url::Url;

use super::Services;
use super::crawl_job::CrawlJobMsg;
use super::domain::DomainMsg;
use super::domains::{DomainsMsg, origin_of};
use crate::crawl::sitemap;

/// Most sitemap documents read per crawl.
const MAX_SITEMAPS: usize = 50;
/// Time allowed per sitemap document.
const SITEMAP_TIMEOUT: Duration = Duration::from_secs(15);

/// Whether a start URL is itself a sitemap.
pub fn is_sitemap_url(url: &Url) -> bool {
    let path = url.path().to_ascii_lowercase();
    path.ends_with(".xml") || path.ends_with(".xml.gz")
}

/// Starts discovery; the job receives `Discovered` and then `DiscoveryDone`.
pub fn spawn(
    job: &ActorRef<CrawlJobMsg>,
    services: &Services,
    domains: &ActorRef<DomainsMsg>,
    start: Url,
    limit: u64,
) {
    let job = job.clone();
    let services = services.clone();
    let domains = domains.clone();
    tokio::spawn(async move {
        let urls = discover(&services, &domains, &start, limit).await;
        if !urls.is_empty() {
            let _ = job.cast(CrawlJobMsg::Discovered(urls));
        }
        let _ = job.cast(CrawlJobMsg::DiscoveryDone);
    });
}

async fn robots_sitemaps(domains: &ActorRef<DomainsMsg>, origin: &Url) -> Vec<String> {
    let Ok(CallResult::Success(Ok(site))) =
        domains.call(|r| DomainsMsg::Lookup(origin.clone(), r), None).await
    else {
        return Vec::new();
    };
    match site.call(DomainMsg::Sitemaps, Some(Duration::from_secs(20))).await {
        Ok(CallResult::Success(list)) => list,
        _ => Vec::new(),
    }
}

pub(crate) async fn discover(
    services: &Services,
    domains: &ActorRef<DomainsMsg>,
    start: &Url,
    limit: u64,
) -> Vec<String> {
    let mut queue: VecDeque<String> = VecDeque::new();
    if is_sitemap_url(start) {
        queue.push_back(start.to_string());
    } else if let Some(origin) = origin_of(start) {
        queue.extend(robots_sitemaps(domains, &origin).await);
        if let Ok(default) = origin.join("/sitemap.xml") {
            queue.push_back(default.to_string());
        }
    }
    let mut read = HashSet::new();
    let mut pages = Vec::new();
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    while let Some(next) = queue.pop_front() {
        if read.len() >= MAX_SITEMAPS || pages.len() >= cap {
            break;
        }
        if !read.insert(next.clone()) {
            continue;
        }
        let Ok(url) = Url::parse(&next) else { continue };
        let fetched = match services.scraper.fetch_raw(&url, SITEMAP_TIMEOUT).await {
            Ok(f) if (200..300).contains(&f.status) => f,
            _ => continue,
        };
        match tokio::task::spawn_blocking(move || sitemap::parse(&fetched.body)).await {
            Ok(Ok(found)) => {
                pages.extend(found.pages);
                queue.extend(found.sitemaps);
            }
            Ok(Err(e)) => tracing::debug!(sitemap = %url, error = %e, "unreadable sitemap"),
            Err(_) => {}
        }
    }
    pages.truncate(cap);
    pages
}
