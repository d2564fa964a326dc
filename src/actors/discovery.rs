//! Sitemap discovery for a crawl (or a map), run as a task beside the job: the sitemaps
//! robots.txt names (asked of the site actor, which has read it), `/sitemap.xml`, and nested
//! sitemap indexes, up to a bounded number of documents. Every sitemap is requested of its
//! site's actor like a page, so it keeps the site's spacing (`crawl.domain_min_interval_ms`,
//! Crawl-delay) and concurrency cap; when the job is cancelled the site actors refuse its
//! requests and discovery stops (the job also aborts the task). The URLs go back to the job,
//! which filters them through the crawl's scope like any other link.

use std::collections::{HashSet, VecDeque};

use url::Url;

use super::fetch::DocumentOutcome;
use super::sites::{Sites, origin_of};
use crate::crawl::sitemap;
use crate::model::JobId;

/// Most sitemap documents read per crawl.
const MAX_SITEMAPS: usize = 50;

/// Whether a start URL is itself a sitemap.
pub fn is_sitemap_url(url: &Url) -> bool {
    let path = url.path().to_ascii_lowercase();
    path.ends_with(".xml") || path.ends_with(".xml.gz")
}

/// The page URLs of `start`'s sitemaps (or of `start`, itself a sitemap), at most `limit`;
/// `None` when job `job` was cancelled.
pub async fn discover(sites: &Sites, job: JobId, start: &Url, limit: u64) -> Option<Vec<String>> {
    let mut queue: VecDeque<String> = VecDeque::new();
    if is_sitemap_url(start) {
        queue.push_back(start.to_string());
    } else if let Some(origin) = origin_of(start) {
        queue.extend(sites.sitemaps(&origin).await.unwrap_or_default());
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
        let body = match sites.document(job, &url).await {
            DocumentOutcome::Fetched { status, body } if (200..300).contains(&status) => body,
            DocumentOutcome::Cancelled => return None,
            _ => continue,
        };
        match tokio::task::spawn_blocking(move || sitemap::parse(&body)).await {
            Ok(Ok(found)) => {
                pages.extend(found.pages);
                queue.extend(found.sitemaps);
            }
            Ok(Err(e)) => tracing::debug!(sitemap = %url, error = %e, "unreadable sitemap"),
            Err(_) => {}
        }
    }
    pages.truncate(cap);
    Some(pages)
}
