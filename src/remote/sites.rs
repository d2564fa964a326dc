//! Sites across the cluster, the asking side: how this node's jobs and site actors reach the
//! sites other nodes own ([`SiteNodes`], the cluster's [`Elsewhere`]). A site's pages are
//! fetched on the node that owns the site (its politeness actor lives there); a page whose
//! node leaves while it is on its way is sent again to the site's next owner, so no page is
//! lost with a node. The answering side is [`super::answer`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use url::Url;

use super::ask;
use super::compat::{self, Feature, Peer};
use super::messages::jobs::{Request, Response};
use super::messages::{decode, encode};
use crate::actors::elsewhere::Elsewhere;
use crate::actors::fetch::{DocumentOutcome, FetchOutcome, FetchTask};
use crate::cluster::{Channel, Cluster, ClusterError};
use crate::model::{Code, JobId};
use crate::teams::Teams;

/// How long a page may take on the node that owns its site (waiting for the site's turn
/// included).
const FETCH_TIMEOUT: Duration = Duration::from_secs(900);
/// Times a page is sent again after its site's node failed.
const MAX_RESENDS: usize = 30;
/// How long a site's node may take over a sitemap or robots.txt question.
const SITE_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a node may take to let a site go: it waits to count the claimer as a member,
/// and its running requests end within their own timeouts; a node that takes longer is
/// judged gone for this purpose.
pub(super) const RELEASE_TIMEOUT: Duration = Duration::from_secs(120);

/// The other nodes' sites, as this node's site actors and jobs reach them.
#[derive(Debug, Clone)]
pub struct SiteNodes(pub Cluster);

impl SiteNodes {
    /// The live member that owns site `origin`, when it is another node.
    fn owner(&self, origin: &Url) -> Option<String> {
        let owner = self.0.site_owner(origin.as_str());
        (owner != self.0.name()).then_some(owner)
    }

    /// Asks the node that owns a site `request` about it; `None` when it did not answer.
    async fn ask_site(&self, owner: &str, request: &Request) -> Option<Response> {
        ask(&self.0, owner, request, SITE_TIMEOUT)
            .await
            .inspect_err(|e| tracing::warn!(node = %owner, error = %e, "a site's node did not answer"))
            .ok()
    }
}

impl Elsewhere for SiteNodes {
    fn fetch<'a>(
        &'a self,
        origin: &'a Url,
        task: &'a mut FetchTask,
        teams: Option<&'a Arc<Teams>>,
    ) -> BoxFuture<'a, Option<FetchOutcome>> {
        Box::pin(fetch_on_owner(&self.0, origin.as_str(), task, teams))
    }

    fn sitemaps<'a>(&'a self, origin: &'a Url) -> BoxFuture<'a, Option<Option<Vec<String>>>> {
        Box::pin(async move {
            let owner = self.owner(origin)?;
            let answer = self.ask_site(&owner, &Request::Sitemaps(origin.to_string())).await;
            Some(match answer {
                Some(Response::Sitemaps(list)) => Some(list),
                Some(answer) if answer.is_moved() => None,
                Some(_) => Some(Vec::new()),
                None => None,
            })
        })
    }

    fn document<'a>(
        &'a self,
        job: JobId,
        url: &'a Url,
        origin: &'a Url,
    ) -> BoxFuture<'a, Option<Option<DocumentOutcome>>> {
        Box::pin(async move {
            let owner = self.owner(origin)?;
            let answer = self.ask_site(&owner, &Request::Document { job, url: url.to_string() }).await;
            Some(match answer {
                Some(Response::Document(outcome)) => Some(outcome),
                Some(answer) if answer.is_moved() => None,
                Some(answer) => Some(DocumentOutcome::Failed(format!(
                    "unexpected answer from node `{owner}`: {answer:?}"
                ))),
                None => None,
            })
        })
    }

    fn cancel(&self, job: JobId) {
        let cluster = self.0.clone();
        tokio::spawn(async move {
            let request = encode(&Request::CancelJob(job));
            for node in cluster.live().iter().filter(|n| *n != cluster.name()) {
                if let Err(e) =
                    cluster.call(node, Channel::Jobs, request.clone(), Duration::from_secs(5)).await
                {
                    tracing::debug!(node = %node, error = %e, "cancel not delivered to a node");
                }
            }
        });
    }

    fn claim<'a>(&'a self, origin: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(claim_site(&self.0, origin))
    }

    fn turns(&self) -> crate::scrape::engine::pace::Elsewhere {
        super::turns::borrowed(self.0.clone())
    }
}

/// Fetches `task` on the node that owns `site`, when that is another node; `None` when this
/// node owns it (the caller fetches it here). A page whose owner leaves while it is on its
/// way, or whose owner could not take it (its site actors stopping or starting again), is
/// sent again to the site's next owner.
///
/// With `teams` the page holds one of its team's slots on the site's node, which takes it
/// as the page arrives and frees it when the response is in (this node keeps at most twice
/// the team's limit of such pages out: [`Teams::send_elsewhere`]).
async fn fetch_on_owner(
    cluster: &Cluster,
    site: &str,
    task: &mut FetchTask,
    teams: Option<&Arc<Teams>>,
) -> Option<FetchOutcome> {
    let mut last_error = String::new();
    for _ in 0..MAX_RESENDS {
        if cluster.owns_site(site) {
            return None;
        }
        let owner = cluster.site_owner(site);
        // A place among the team's pages out on other nodes, held while the page is out.
        let (request, sent) = match teams {
            Some(teams) => {
                (Request::FetchAdmitted(Box::new(task.clone())), Some(teams.send_elsewhere(&task.team).await))
            }
            None => (Request::Fetch(Box::new(task.clone())), None),
        };
        let answer = cluster.call(&owner, Channel::Jobs, encode(&request), FETCH_TIMEOUT).await;
        drop(sent);
        let not_taken = match answer.map_err(|e| e.to_string()).and_then(|bytes| decode::<Response>(&bytes)) {
            Ok(answer) => match fetched(&owner, answer) {
                FetchOutcome::NotTaken(reason) => reason,
                outcome => return Some(outcome),
            },
            Err(e) => {
                tracing::warn!(site, node = %owner, error = %e, "a page's site node failed; sending it again");
                last_error = e;
                until_members_change(cluster).await;
                continue;
            }
        };
        // The node is stopping (or its actors restart): the page goes to the site's next owner.
        tracing::warn!(site, node = %owner, reason = %not_taken, "a page's site node did not take it; sending it again");
        last_error = not_taken;
        until_members_change(cluster).await;
    }
    Some(FetchOutcome::Failed { code: Code::Unknown, error: last_error })
}

/// The outcome `owner` answered for a page: `NotTaken` when its site actors did not take
/// it (which a node of the previous release says in words).
fn fetched(owner: &str, answer: Response) -> FetchOutcome {
    let failed = |error| FetchOutcome::Failed { code: Code::Unknown, error };
    match answer {
        Response::Stored(page) => FetchOutcome::Stored(page),
        Response::Fetched(json) => match serde_json::from_slice(&json) {
            Ok(FetchOutcome::Failed { error, .. }) if compat::previous::not_taken(&error) => {
                FetchOutcome::NotTaken(error)
            }
            Ok(outcome) => outcome,
            Err(e) => failed(format!("unreadable page from node `{owner}`: {e}")),
        },
        Response::NotTaken(reason) => FetchOutcome::NotTaken(reason),
        other => failed(format!("unexpected answer from node `{owner}`: {other:?}")),
    }
}

/// Waits for the membership to change (a failed node judged down), or a second.
async fn until_members_change(cluster: &Cluster) {
    let mut watch = cluster.watch();
    watch.borrow_and_update();
    let _ = tokio::time::timeout(Duration::from_secs(1), watch.changed()).await;
}

/// A page not taken by this node's site actors, as a node speaking `peer`'s version reads it.
pub(super) fn not_taken_answer(peer: Option<Peer>, reason: String) -> Response {
    if peer.is_some_and(|peer| peer.supports(Feature::NotTakenAnswered)) {
        return Response::NotTaken(reason);
    }
    let outcome =
        FetchOutcome::Failed { code: Code::Unknown, error: compat::previous::not_taken_message(&reason) };
    Response::Fetched(serde_json::to_vec(&outcome).unwrap_or_default())
}

/// Asks every other live node to let site `origin` go, and returns once each has, has
/// failed to answer, or was judged down meanwhile (a frozen node may still finish a request
/// it had started when it wakes: the one case the limit can be exceeded, by the requests it
/// had in flight).
async fn claim_site(cluster: &Cluster, origin: &str) {
    // Only over the whole membership (see `Cluster::settled`), and once a member cut off
    // has stopped fetching (see `Cluster::quiet`).
    cluster.settled().await;
    cluster.quiet().await;
    let request = encode(&Request::Release(origin.to_owned()));
    let mut asks = tokio::task::JoinSet::new();
    for node in cluster.live().iter().filter(|n| *n != cluster.name()) {
        let (cluster, node, request) = (cluster.clone(), node.clone(), request.clone());
        asks.spawn(async move {
            // A node judged down meanwhile (killed, frozen) is not waited for any longer.
            let gone = cluster.until_not(|live| live.contains(&node));
            tokio::select! {
                () = ask_release(&cluster, &node, request) => {}
                () = gone => tracing::debug!(node = %node, "a node left before letting a site go"),
            }
        });
    }
    while asks.join_next().await.is_some() {}
}

/// Asks live node `node` to let a site go (`request`), until it says it has, answers that
/// it cannot, or [`RELEASE_TIMEOUT`] has passed. A call lost on its way is asked again: two
/// nodes that dial each other at once (as when a cut heals) get two sessions, and
/// ractor_cluster closes one, with the calls on it, while the node stays a member.
async fn ask_release(cluster: &Cluster, node: &str, request: Vec<u8>) {
    let deadline = Instant::now() + RELEASE_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match cluster.call(node, Channel::Jobs, request.clone(), left).await {
            Ok(_) => return,
            Err(ClusterError::Unreachable { .. } | ClusterError::Unavailable(_))
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => {
                tracing::debug!(node = %node, error = %e, "a node did not say it let a site go");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_not_taken_is_told_to_each_release_as_it_reads_it() {
        let reason = || "site actor stopped before answering".to_owned();
        // To a node of this release, as such; to one of the previous, in its words.
        let ours = not_taken_answer(Some(Peer::speaking(compat::PROTOCOL)), reason());
        assert!(matches!(&ours, Response::NotTaken(r) if *r == reason()), "{ours:?}");
        let previous = not_taken_answer(Some(Peer::speaking(compat::PREVIOUS)), reason());
        assert!(matches!(previous, Response::Fetched(_)), "{previous:?}");
        // Either way the asker sends the page again, and a page's own failure is kept.
        for answer in [ours, previous] {
            assert!(matches!(fetched("n2", answer), FetchOutcome::NotTaken(_)));
        }
        let own =
            FetchOutcome::Failed { code: Code::ScrapeTimeout, error: "timed out after 30000 ms".into() };
        let answer = Response::Fetched(serde_json::to_vec(&own).expect("json"));
        assert!(matches!(fetched("n2", answer), FetchOutcome::Failed { code: Code::ScrapeTimeout, .. }));
    }
}
