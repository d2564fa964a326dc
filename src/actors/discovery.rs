//! Sitemap discovery for a crawl (or a map), run as a task beside the job: the sitemaps
//! robots.txt names (asked of the site actor, which has read it), `/sitemap.xml`, and nested
//! sitemap indexes, up to a bounded number of documents. Every sitemap is requested of its
//! site's actor like a page, so it keeps the site's spacing (`crawl.domain_min_interval_ms`,
//! Crawl-delay) and concurrency cap; when the job is cancelled the site actors refuse its
//! requests and discovery stops (the job also aborts the task). The URLs go back to the job,
//! which filters them through the crawl's scope like any other link.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::task::JoinHandle;
use url::Url;

use super::crawl_job::CrawlJobMsg;
use super::domain::{DocumentOutcome, DomainMsg};
use super::domains::{DomainsMsg, origin_of};
use crate::crawl::sitemap;
use crate::model::JobId;

/// Most sitemap documents read per crawl.
const MAX_SITEMAPS: usize = 50;
/// Time allowed per sitemap document.
const SITEMAP_TIMEOUT: Duration = Duration::from_secs(15);

/// Whether a start URL is itself a sitemap.
pub fn is_sitemap_url(url: &Url) -> bool {
    let path = url.path().to_ascii_lowercase();
    path.ends_with(".xml") || path.ends_with(".xml.gz")
}

/// Starts discovery for job `id`; the job receives `Discovered` and then `DiscoveryDone`,
/// or nothing when it was cancelled meanwhile.
pub fn spawn(job: &ActorRef<CrawlJobMsg>, id: JobId, sites: Sites, start: Url, limit: u64) -> JoinHandle<()> {
    let job = job.clone();
    tokio::spawn(async move {
        let Some(urls) = discover(&sites, id, &start, limit).await else { return };
        if !urls.is_empty() {
            let _ = job.cast(CrawlJobMsg::Discovered(urls));
        }
        let _ = job.cast(CrawlJobMsg::DiscoveryDone);
    })
}

/// Where a site's actor is: this node's site supervisor, and the cluster that may place the
/// site on another node.
#[derive(Debug, Clone)]
pub struct Sites {
    /// This node's site supervisor.
    pub domains: ActorRef<DomainsMsg>,
    /// The cluster, when this node is part of one.
    pub cluster: Option<crate::cluster::Cluster>,
}

impl Sites {
    /// The node that owns `origin`, when it is another one.
    fn elsewhere(&self, origin: &Url) -> Option<(&crate::cluster::Cluster, String)> {
        let cluster = self.cluster.as_ref()?;
        let owner = cluster.site_owner(origin.as_str());
        (owner != cluster.name()).then_some((cluster, owner))
    }
}

/// The sitemaps robots.txt of `origin` names, asked of the site's actor wherever it lives;
/// when the site moves to another node meanwhile, or its node is lost, asked of its next
/// owner.
pub(crate) async fn robots_sitemaps(sites: &Sites, origin: &Url) -> Vec<String> {
    following_moves(sites, origin, |elsewhere| async move {
        let Some((cluster, owner)) = elsewhere else {
            return local_sitemaps(&sites.domains, origin).await;
        };
        let request = super::remote::Request::Sitemaps(origin.to_string());
        match super::remote::ask_site(cluster, &owner, &request).await? {
            super::remote::Response::Sitemaps(list) => Some(list),
            answer if answer.is_moved() => None,
            _ => Some(Vec::new()),
        }
    })
    .await
    .unwrap_or_default()
}

/// Asks `ask` (given the site's owner when that is another node) until it answers other
/// than `None` (the site moved to another node, or its node did not answer), at most
/// [`super::crawl_job::MOVES`] times.
async fn following_moves<'s, T, F, Fut>(sites: &'s Sites, origin: &Url, mut ask: F) -> Option<T>
where
    F: FnMut(Option<(&'s crate::cluster::Cluster, String)>) -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for attempt in 1..=super::crawl_job::MOVES {
        if let Some(answer) = ask(sites.elsewhere(origin)).await {
            return Some(answer);
        }
        // Sites move only in a cluster.
        sites.cluster.as_ref()?;
        super::crawl_job::pause_after_move(attempt).await;
    }
    None
}

/// The sitemaps robots.txt of `origin` names, from this node's actor of the site; `None`
/// when the actor let the site go to another node.
pub(crate) async fn local_sitemaps(domains: &ActorRef<DomainsMsg>, origin: &Url) -> Option<Vec<String>> {
    let Ok(CallResult::Success(Ok(site))) =
        domains.call(|r| DomainsMsg::Lookup(origin.clone(), r), None).await
    else {
        return Some(Vec::new());
    };
    match site.call(DomainMsg::Sitemaps, Some(Duration::from_secs(20))).await {
        Ok(CallResult::Success(list)) => list,
        _ => Some(Vec::new()),
    }
}

/// The page URLs of `start`'s sitemaps (or of `start`, itself a sitemap), at most `limit`;
/// `None` when job `job` was cancelled.
pub(crate) async fn discover(sites: &Sites, job: JobId, start: &Url, limit: u64) -> Option<Vec<String>> {
    let mut queue: VecDeque<String> = VecDeque::new();
    if is_sitemap_url(start) {
        queue.push_back(start.to_string());
    } else if let Some(origin) = origin_of(start) {
        queue.extend(robots_sitemaps(sites, &origin).await);
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
        let body = match fetch(sites, job, &url).await {
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

/// Reads one sitemap through its site's actor, wherever it lives (the site's next owner
/// when it moves meanwhile or its node is lost).
async fn fetch(sites: &Sites, job: JobId, url: &Url) -> DocumentOutcome {
    let Some(origin) = origin_of(url) else {
        return DocumentOutcome::Failed(format!("{url} has no site"));
    };
    let origin = &origin;
    let outcome = following_moves(sites, origin, |elsewhere| async move {
        let Some((cluster, owner)) = elsewhere else {
            let outcome = local_document(&sites.domains, job, url, origin).await;
            return (!matches!(outcome, DocumentOutcome::Moved)).then_some(outcome);
        };
        let request = super::remote::Request::Document { job, url: url.to_string() };
        match super::remote::ask_site(cluster, &owner, &request).await? {
            super::remote::Response::Document(outcome) => Some(outcome),
            answer if answer.is_moved() => None,
            answer => {
                Some(DocumentOutcome::Failed(format!("unexpected answer from node `{owner}`: {answer:?}")))
            }
        }
    })
    .await;
    outcome.unwrap_or_else(|| DocumentOutcome::Failed(format!("the node of {origin} did not answer")))
}

/// Reads one sitemap through this node's actor of its site; a site actor that went away is
/// looked up again.
pub(crate) async fn local_document(
    domains: &ActorRef<DomainsMsg>,
    job: JobId,
    url: &Url,
    origin: &Url,
) -> DocumentOutcome {
    let timeout_ms = u64::try_from(SITEMAP_TIMEOUT.as_millis()).unwrap_or(u64::MAX);
    let mut last_error = String::new();
    for _ in 0..3 {
        let site = match domains.call(|reply| DomainsMsg::Lookup(origin.clone(), reply), None).await {
            Ok(CallResult::Success(Ok(site))) => site,
            Ok(CallResult::Success(Err(e))) => return DocumentOutcome::Failed(e),
            other => {
                last_error = format!("{}: {other:?}", super::domains::gone::SUPERVISOR);
                continue;
            }
        };
        let (reply, answer) = ractor::concurrency::oneshot();
        let message = DomainMsg::FetchDocument { job, url: url.to_string(), timeout_ms, reply: reply.into() };
        if let Err(e) = site.cast(message) {
            last_error = format!("{}: {e}", super::domains::gone::ACTOR);
            continue;
        }
        match answer.await {
            Ok(outcome) => return outcome,
            // The site actor stopped (idle exit or failure) before answering.
            Err(_) => last_error = super::domains::gone::STOPPED.to_owned(),
        }
    }
    DocumentOutcome::Failed(last_error)
}
