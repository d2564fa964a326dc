//! What nodes of a cluster ask each other: the cluster module carries bytes; this module
//! says what they mean. A site's pages are fetched on the node that owns the site (its
//! politeness actor lives there), and a job lives on the node that accepted it (its id
//! carries that node's tag), so reading, cancelling or listing it from another node is a
//! request too. Each request and answer is a serde enum, postcard-encoded inside the
//! cluster's versioned envelope; errors cross as their HTTP status, code and message. The
//! job service answers them (`service::remote`).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cluster::Channel;

use super::NodeCounts;
use super::domain::{FetchOutcome, FetchTask};
use crate::model::{JobId, JobKind};
use crate::scrape::engine::pace::{self, Lending, Slot};
use crate::scrape::shared_cache::PageKeeper;
use crate::store::CacheKey;
use crate::store::jobs::{Counters, ErrorEntry, JobRecord};
use futures::future::BoxFuture;

/// What one node asks another.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// How much the node holds.
    Counts,
    /// Fetch a page of a site this node owns (through its politeness actor).
    Fetch(Box<FetchTask>),
    /// A job was cancelled: the site actors drop its pages.
    CancelJob(JobId),
    /// The sitemaps robots.txt names, of a site this node owns (its origin).
    Sitemaps(String),
    /// Read a document as-is (a sitemap) through the actor of a site this node owns.
    Document {
        /// The job asking.
        job: JobId,
        /// The document.
        url: String,
    },
    /// A job of the team with a page of its documents.
    Page {
        /// The team.
        team: String,
        /// The job.
        id: JobId,
        /// Crawl or batch.
        kind: JobKind,
        /// Documents to skip, at most, and bytes at most.
        paging: (u64, usize, usize),
    },
    /// A job's failed pages.
    Errors {
        /// The team.
        team: String,
        /// The job.
        id: JobId,
        /// Crawl or batch.
        kind: JobKind,
    },
    /// Cancel a job.
    Cancel {
        /// The team.
        team: String,
        /// The job.
        id: JobId,
        /// Crawl or batch.
        kind: JobKind,
    },
    /// The team's running jobs of a kind on that node.
    Active {
        /// The team.
        team: String,
        /// Crawl or batch.
        kind: JobKind,
    },
    /// Let a site (its origin) go: the asking node's actor of it is about to start. Answered
    /// once this node's actor of the site has no request running and has stopped.
    Release(String),
    /// A turn of the pace of a site this node owns, for a request to this URL (a redirect
    /// hop the asking node sends there). Answered `Done` when the request may go out.
    Turn(String),
    /// [`Request::Turn`] with a place among the site's requests in flight, held for the
    /// asking node until it sends [`Request::Return`] (protocol version 6). Answered
    /// `Lent(id)`, or `Done` when this node has no actor of the site.
    TurnHeld(String),
    /// The hop that lent place `id` has its answer: the place is free again.
    Return(u64),
    /// [`Request::Fetch`], the page holding one of its team's concurrency slots on this
    /// node while its request is out (protocol version 10, [`ADMITS_SINCE`]).
    FetchAdmitted(Box<FetchTask>),
    /// The hop that lent turn `id` (with [`Request::TurnHeld`]) has its request written:
    /// the turn counts as taken now, and the site's own requests need not wait for the
    /// hop's answer (protocol version 12, [`WRITES_SINCE`]). The place stays lent until
    /// [`Request::Return`].
    Written(u64),
    /// Forget the member of this name, gone for good (protocol version 13,
    /// [`FORGETS_SINCE`]). Answered `Done` (also when this node does not know it), or
    /// `Failed` when this node counts it as live.
    Forget(String),
    /// The page cached under this key, of a site this node owns (protocol version 13,
    /// [`CACHES_SINCE`]). Answered `CachedPage`.
    Cached([u8; 32]),
    /// Cache this page under this key, of a site this node owns (protocol version 13).
    /// Answered `Done`.
    Cache {
        /// The cache key.
        key: [u8; 32],
        /// The page.
        page: Box<crate::store::CachedPage>,
    },
}

/// The protocol version from which a node forgets a member when asked ([`Request::Forget`]).
pub const FORGETS_SINCE: u32 = 13;

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// See [`Request::Counts`].
    Counts(NodeCounts),
    /// See [`Request::Fetch`]: the outcome as JSON (a result document is a JSON shape, with
    /// fields left out when empty, which a positional encoding cannot carry).
    Fetched(#[serde(with = "serde_bytes")] Vec<u8>),
    /// See [`Request::Sitemaps`].
    Sitemaps(Vec<String>),
    /// See [`Request::Document`].
    Document(super::domain::DocumentOutcome),
    /// See [`Request::Page`].
    Page {
        /// The job.
        job: Box<JobRecord>,
        /// Its counts.
        counts: Counters,
        /// Documents (JSON).
        documents: Vec<serde_bytes::ByteBuf>,
    },
    /// See [`Request::Errors`].
    Errors {
        /// Pages that failed.
        failed: Vec<ErrorEntry>,
        /// URLs robots.txt kept the job from.
        robots_blocked: Vec<String>,
    },
    /// Done.
    Done,
    /// See [`Request::Active`].
    Active(Vec<(JobId, JobRecord)>),
    /// The request failed there.
    Failed {
        /// HTTP status.
        status: u16,
        /// Error code.
        code: String,
        /// Message.
        message: String,
    },
    /// See [`Request::Fetch`], when the outcome is a page: its document in the stored form,
    /// which the job's node stores as it is.
    Stored(Box<StoredPage>),
    /// See [`Request::TurnHeld`]: the turn is had, and the place lent is `id`.
    Lent(u64),
    /// See [`Request::Cached`].
    CachedPage(Option<Box<crate::store::CachedPage>>),
}

/// The code of [`Response::moved`].
const SITE_MOVED: &str = "SITE_MOVED";

impl Response {
    /// The answer to a request for a site's sitemaps or documents when this node's actor of
    /// the site let it go to another node first: the asker asks the site's owner. A node
    /// that does not know the code takes it for a failure, as it took the empty answer
    /// nodes gave before.
    pub fn moved() -> Self {
        Self::Failed {
            status: 421,
            code: SITE_MOVED.into(),
            message: "the site moved to another node".into(),
        }
    }

    /// Whether this is [`Response::moved`].
    pub fn is_moved(&self) -> bool {
        matches!(self, Self::Failed { code, .. } if code == SITE_MOVED)
    }
}

/// A page fetched on the node of its site, as the job's node needs it: the document
/// already serialized the way the store keeps it (so the job's node neither reads nor
/// writes it again), and the few fields settling the page looks at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredPage {
    /// The result document, as stored (JSON).
    pub document: super::carried::DocumentBytes,
    /// Its `metadata.url` (where the page landed).
    pub url: String,
    /// Its `metadata.creditsUsed`.
    pub credits: u32,
    /// Whether it carries change tracking (which a sitemap-only page hides).
    pub tracked: bool,
    /// Absolute links of the page.
    pub links: super::carried::PageLinks,
}

impl StoredPage {
    /// The page of `document` and `links`.
    pub fn of(document: &crate::model::Document, links: Vec<String>) -> Result<Self, serde_json::Error> {
        Ok(Self {
            document: super::carried::DocumentBytes::Written(super::settle::stored_form(document)?),
            url: document.metadata.url.clone(),
            credits: document.metadata.credits_used,
            tracked: document.change_tracking.is_some(),
            links: super::carried::PageLinks::Each(links),
        })
    }
}

impl FetchOutcome {
    /// This outcome with a stored page read back into its document.
    pub fn parsed(self) -> Self {
        match self {
            Self::Stored(page) => match serde_json::from_slice(&page.document) {
                Ok(document) => Self::Page { document: Box::new(document), links: page.links.into_vec() },
                Err(e) => {
                    Self::Failed { code: "UNKNOWN_ERROR".into(), error: format!("unreadable page: {e}") }
                }
            },
            other => other,
        }
    }
}

/// Encodes a request or an answer.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    crate::cluster::to_bytes(value)
}

/// Decodes a request or an answer.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable request or answer: {e}"))
}

/// How long a page may take on the node that owns its site (waiting for the site's turn
/// included).
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);
/// Times a page is sent again after its site's node failed.
const MAX_RESENDS: usize = 30;

/// The protocol version from which a page sent to its site's node takes its team's slot
/// there ([`Request::FetchAdmitted`]).
const ADMITS_SINCE: u32 = 10;

/// Fetches `task` on the node that owns `site`, when that is another node; `None` when this
/// node owns it (the caller fetches it here). A page whose owner leaves while it is on its
/// way is sent again to the site's next owner, so no page is lost with a node.
///
/// With `teams` the page holds one of its team's slots while its request is out: on the
/// site's node, which takes it as the page arrives and frees it when the response is in
/// (this node keeps at most twice the team's limit of such pages out:
/// [`crate::teams::Teams::send_elsewhere`]); on this node, from sending the page to its
/// return, when the site's node is older.
pub(crate) async fn fetch_on_owner(
    cluster: &crate::cluster::Cluster,
    site: &str,
    task: &mut FetchTask,
    teams: Option<&std::sync::Arc<crate::teams::Teams>>,
) -> Option<FetchOutcome> {
    let mut last_error = String::new();
    for _ in 0..MAX_RESENDS {
        if cluster.owns_site(site) {
            return None;
        }
        let owner = cluster.site_owner(site);
        let there = cluster.version_of(&owner).is_some_and(|v| v >= ADMITS_SINCE);
        // What the page holds while it is out: a place among the team's pages out on other
        // nodes, or (to an older node) a slot of its team here.
        let (request, sent, admission) = match teams {
            Some(teams) if there => {
                let sent = teams.send_elsewhere(&task.team).await;
                (Request::FetchAdmitted(Box::new(task.clone())), Some(sent), None)
            }
            Some(teams) => {
                let admission = super::crawl_job::admit(teams, task).await;
                (Request::Fetch(Box::new(task.clone())), None, Some(admission))
            }
            None => (Request::Fetch(Box::new(task.clone())), None, None),
        };
        let answer = cluster.call(&owner, Channel::Jobs, encode(&request), FETCH_TIMEOUT).await;
        drop((sent, admission));
        match answer {
            Ok(bytes) => match decode::<Response>(&bytes) {
                Ok(Response::Stored(page)) => return Some(FetchOutcome::Stored(page)),
                Ok(Response::Fetched(json)) => {
                    let outcome = serde_json::from_slice(&json).unwrap_or_else(|e| FetchOutcome::Failed {
                        code: "UNKNOWN_ERROR".into(),
                        error: format!("unreadable page from node `{owner}`: {e}"),
                    });
                    if !super::domains::cut_short_by_its_node(&outcome) {
                        return Some(outcome);
                    }
                    // An older node's graceful stop: the page is sent again, as after a lost node.
                    tracing::warn!(site, node = %owner, ?outcome, "a page's site node is stopping; sending it again");
                    last_error = format!("{outcome:?}");
                    until_members_change(cluster).await;
                }
                Ok(other) => {
                    let error = format!("unexpected answer from node `{owner}`: {other:?}");
                    return Some(FetchOutcome::Failed { code: "UNKNOWN_ERROR".into(), error });
                }
                Err(e) => return Some(FetchOutcome::Failed { code: "UNKNOWN_ERROR".into(), error: e }),
            },
            Err(e) => {
                tracing::warn!(site, node = %owner, error = %e, "a page's site node failed; sending it again");
                last_error = e.to_string();
                until_members_change(cluster).await;
            }
        }
    }
    Some(FetchOutcome::Failed { code: "UNKNOWN_ERROR".into(), error: last_error })
}

/// Waits for the membership to change (a failed node judged down), or a second.
async fn until_members_change(cluster: &crate::cluster::Cluster) {
    let mut watch = cluster.watch();
    watch.borrow_and_update();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), watch.changed()).await;
}

/// Longest a node may take to let a site go: it waits to count the claimer as a member,
/// and its running requests end within their own timeouts; a node that takes longer is
/// judged gone for this purpose.
pub(crate) const RELEASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Asks every other live node to let site `origin` go, and returns once each has, has
/// failed to answer (a node of an older version), or was judged down meanwhile (a frozen
/// node may still finish a request it had started when it wakes: the one case the limit
/// can be exceeded, by the requests it had in flight).
pub(crate) async fn claim_site(cluster: &crate::cluster::Cluster, origin: &str) {
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
async fn ask_release(cluster: &crate::cluster::Cluster, node: &str, request: Vec<u8>) {
    let deadline = std::time::Instant::now() + RELEASE_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match cluster.call(node, Channel::Jobs, request.clone(), left).await {
            Ok(_) => return,
            Err(
                crate::cluster::ClusterError::Unreachable { .. }
                | crate::cluster::ClusterError::Unavailable(_),
            ) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Err(e) => {
                tracing::debug!(node = %node, error = %e, "a node did not say it let a site go");
                return;
            }
        }
    }
}

/// The protocol version that brought [`Request::Turn`].
const TURNS_SINCE: u32 = 5;
/// The protocol version that brought [`Request::TurnHeld`] (places lent with turns).
const PLACES_SINCE: u32 = 6;
/// The protocol version that brought [`Request::Written`] (a lent turn given back as the
/// hop's request is written).
const WRITES_SINCE: u32 = 12;

/// A lent turn is used when its answer came within this long of asking: the lender holds
/// its site's own requests for the hop at most [`crate::scrape::engine::pace::LENT_HOLD`],
/// and the other half is left for the write. A later one is given back and asked for
/// again, up to [`TURN_ASKS`] times.
const TURN_ANSWERED_WITHIN: std::time::Duration =
    std::time::Duration::from_millis(crate::scrape::engine::pace::LENT_HOLD.as_millis() as u64 / 2);
/// Times a redirect hop asks for a turn before its page is sent back to be fetched again.
const TURN_ASKS: usize = 5;

/// Longest a place lent to another node's hop is held without its return (the node may
/// have gone): the site has one place fewer until then.
const LENT_FOR_AT_MOST: std::time::Duration = std::time::Duration::from_secs(60);

/// Places and turns of this node's sites lent to other nodes' redirect hops: the last id
/// given, and each lending by id.
#[derive(Default)]
struct Lent {
    last_id: u64,
    places: HashMap<u64, Lending>,
}

static LENT: std::sync::LazyLock<std::sync::Mutex<Lent>> = std::sync::LazyLock::new(Default::default);

/// Keeps `lending` (another node's hop's place and turn) until the place is returned
/// ([`give_back`]) or [`LENT_FOR_AT_MOST`] passes, and the turn until then or until the
/// hop's request is written ([`written`]); its id.
pub(crate) fn keep_lent(lending: Lending) -> u64 {
    let id = {
        let mut lent = LENT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lent.last_id += 1;
        let id = lent.last_id;
        lent.places.insert(id, lending);
        id
    };
    // Given back by then in any case (the other node may have gone).
    tokio::spawn(async move {
        tokio::time::sleep(LENT_FOR_AT_MOST).await;
        give_back(id);
    });
    id
}

/// The hop that held lent place `id` has its answer.
pub(crate) fn give_back(id: u64) {
    let lending = LENT.lock().unwrap_or_else(std::sync::PoisonError::into_inner).places.remove(&id);
    drop(lending);
}

/// The hop that holds lent place `id` has its request written: its turn is given back.
pub(crate) fn written(id: u64) {
    let turn = LENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .places
        .get_mut(&id)
        .map(|lending| std::mem::replace(&mut lending.turn, Slot::free()));
    drop(turn);
}

/// A place another node lent this node's hop: returned when dropped.
struct BorrowedPlace {
    cluster: crate::cluster::Cluster,
    node: String,
    id: u64,
}

impl BorrowedPlace {
    /// Tells the lender `request` about the lent place (best effort: what it lent frees
    /// itself in time).
    fn tell(&self, request: &Request) {
        let (cluster, node, request) = (self.cluster.clone(), self.node.clone(), encode(request));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let timeout = std::time::Duration::from_secs(5);
                if let Err(e) = cluster.call_alone(&node, Channel::Jobs, request, timeout).await {
                    tracing::debug!(node = %node, error = %e, "a lender was not told of its lent turn (it frees itself)");
                }
            });
        }
    }
}

impl Drop for BorrowedPlace {
    fn drop(&mut self) {
        self.tell(&Request::Return(self.id));
    }
}

/// Longest a redirect hop waits for the turn another node lends (a site with a long
/// crawl-delay and many requests waiting may take this long).
const TURN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// How a site actor's redirect hops get their turn at sites other nodes own
/// (`Pace::elsewhere`): the owner of the hop's site lends one from its actor's pace. A turn
/// not had stops the hop (the page goes back to be fetched again rather than reach a site
/// unspaced): the owner did not answer, refused (it was out of touch), or stopped being the
/// site's owner before the turn came (it left the members, frozen or gone: the site has
/// another owner by then, whose pace the lent turn knows nothing of).
pub(crate) fn turns_elsewhere(cluster: crate::cluster::Cluster) -> crate::scrape::engine::pace::Elsewhere {
    std::sync::Arc::new(move |url: &url::Url| {
        let site = super::domains::origin_of(url)?.to_string();
        if cluster.owns_site(&site) {
            return None;
        }
        let (cluster, owner) = (cluster.clone(), cluster.site_owner(&site));
        // A node of an older protocol version (mid-upgrade) lends no turns: the hop goes as
        // it did between nodes of that version, unspaced by the other site's pace.
        let version = cluster.version_of(&owner)?;
        if version < TURNS_SINCE {
            return None;
        }
        // A node of version 5 lends the turn only (no place among the site's requests).
        let held = version >= PLACES_SINCE;
        let request =
            encode(&if held { Request::TurnHeld(url.to_string()) } else { Request::Turn(url.to_string()) });
        Some(Box::pin(async move {
            for _ in 0..TURN_ASKS {
                let asked = std::time::Instant::now();
                let moved =
                    cluster.until_not(|live| cluster.site_owner_among(live, &site) == Some(owner.as_str()));
                let lent = tokio::select! {
                    answer = cluster.call_alone(&owner, Channel::Jobs, request.clone(), TURN_TIMEOUT) => match answer {
                        Ok(bytes) => match decode::<Response>(&bytes) {
                            Ok(Response::Done) => Some(pace::Borrowed::new(Slot::free(), None)),
                            Ok(Response::Lent(id)) => {
                                let place = Arc::new(BorrowedPlace { cluster: cluster.clone(), node: owner.clone(), id });
                                // From version 12 the lender hears when the hop is written.
                                let told = Arc::clone(&place);
                                let on_write = (version >= WRITES_SINCE)
                                    .then(|| Box::new(move || told.tell(&Request::Written(id))) as pace::OnWrite);
                                Some(pace::Borrowed::new(Slot::holding(place), on_write))
                            }
                            _ => None,
                        },
                        Err(e) => {
                            tracing::warn!(node = %owner, error = %e, "no turn for a redirect hop to a site of another node");
                            None
                        }
                    },
                    () = moved => None,
                };
                let lent = lent.filter(|_| cluster.site_owner(&site) == owner && cluster.in_touch())?;
                // The turn counts from when it was lent: an answer that took too long to
                // come leaves too little of it for the write (the lender's next request
                // may be close behind). It is given back, and asked for again.
                if asked.elapsed() <= TURN_ANSWERED_WITHIN {
                    return Some(lent);
                }
                tracing::debug!(node = %owner, "a lent turn came too late to use; asking again");
            }
            None
        }))
    })
}

/// Tells every other live node that job `id` was cancelled, so their site actors drop its
/// pages (best effort: a node that misses it finishes the pages it holds; their results are
/// discarded by the cancelled job).
pub(crate) fn broadcast_cancel(cluster: &crate::cluster::Cluster, id: JobId) {
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let request = encode(&Request::CancelJob(id));
        for node in cluster.live().iter().filter(|n| *n != cluster.name()) {
            if let Err(e) =
                cluster.call(node, Channel::Jobs, request.clone(), std::time::Duration::from_secs(5)).await
            {
                tracing::debug!(node = %node, error = %e, "cancel not delivered to a node");
            }
        }
    });
}

/// How long a site's node may take over a sitemap or robots.txt question.
const SITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Asks `node` `request`, waiting `timeout` at most, and reads its answer.
pub async fn ask(
    cluster: &crate::cluster::Cluster,
    node: &str,
    request: &Request,
    timeout: std::time::Duration,
) -> Result<Response, String> {
    let answer =
        cluster.call(node, Channel::Jobs, encode(request), timeout).await.map_err(|e| e.to_string())?;
    decode(&answer)
}

/// Asks the node that owns a site `request` about it; `None` when it did not answer.
pub(crate) async fn ask_site(
    cluster: &crate::cluster::Cluster,
    owner: &str,
    request: &Request,
) -> Option<Response> {
    ask(cluster, owner, request, SITE_TIMEOUT)
        .await
        .inspect_err(|e| tracing::warn!(node = %owner, error = %e, "a site's node did not answer"))
        .ok()
}

/// The protocol version from which a node keeps the cached pages of its sites for the
/// others ([`Request::Cached`], [`Request::Cache`]).
pub const CACHES_SINCE: u32 = 13;
/// How long a site's node may take over a cached page; then this node's own cache serves
/// (a frozen node holds a scrape that long at most, until it is judged down).
const CACHE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The cluster's [`PageKeeper`]: each page is cached on the node that owns its site (a
/// node older than [`CACHES_SINCE`] keeps none for the others: pages of its sites are
/// cached where they are fetched, as before).
#[derive(Debug)]
pub struct SiteCaches(pub crate::cluster::Cluster);

impl SiteCaches {
    /// The node that keeps the cached pages of `url`'s site, when it is another one.
    fn keeper(&self, url: &url::Url) -> Option<String> {
        let origin = super::domains::origin_of(url)?;
        let owner = self.0.site_owner(origin.as_str());
        let speaks = self.0.version_of(&owner).is_some_and(|v| v >= CACHES_SINCE);
        (owner != self.0.name() && speaks).then_some(owner)
    }
}

impl PageKeeper for SiteCaches {
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        key: CacheKey,
    ) -> Option<BoxFuture<'a, Result<Option<crate::store::CachedPage>, String>>> {
        let node = self.keeper(url)?;
        Some(Box::pin(async move {
            match ask(&self.0, &node, &Request::Cached(*key.as_bytes()), CACHE_TIMEOUT).await? {
                Response::CachedPage(page) => Ok(page.map(|page| *page)),
                other => Err(format!("unexpected answer from node `{node}`: {other:?}")),
            }
        }))
    }

    fn put(
        &self,
        url: &url::Url,
        key: CacheKey,
        page: crate::store::CachedPage,
    ) -> Option<BoxFuture<'static, Result<(), String>>> {
        let node = self.keeper(url)?;
        let cluster = self.0.clone();
        Some(Box::pin(async move {
            let request = Request::Cache { key: *key.as_bytes(), page: Box::new(page) };
            match ask(&cluster, &node, &request, CACHE_TIMEOUT).await? {
                Response::Done => Ok(()),
                other => Err(format!("unexpected answer from node `{node}`: {other:?}")),
            }
        }))
    }
}
