//! `Site`: one actor per site (scheme, host, port), shared by every job that touches the
//! site, and the only way a job requests anything of it: pages, and documents read as they
//! are (sitemaps). It reads robots.txt once, keeps at most `crawl.domain_concurrency`
//! requests in flight, spaces requests by the larger of the configured interval and
//! robots.txt's Crawl-delay (as they start, and again as each request and redirect hop
//! leaves: [`crate::scrape::engine::pace`]), backs off when the site answers 429/503
//! (honouring Retry-After and retrying the request), and exits after a while without work.
//! A cancelled job's waiting requests are dropped, its running ones stopped, and requests
//! it sends after the cancel are refused. Fetches run in tasks that report back by message,
//! so the actor never blocks. Its messages carry serde types so the actor can later live on
//! another node.
//!
//! In a cluster a site has one actor at a time, on the node that owns the site. When
//! members change the site moves, and its new actor starts no request before the old one
//! let go: it asks every other live node to release the site ([`super::elsewhere::Elsewhere::claim`]), and a
//! node releasing it stops starting requests, answers its waiting ones
//! [`FetchOutcome::Moved`] (their askers send them to the new owner), answers once its
//! running requests end, and stops. So the site's limits hold across the move.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::task::JoinHandle;
use url::Url;

use super::Services;
use super::fetch::{DocumentOutcome, FetchOutcome, FetchTask};
use crate::crawl::robots::RobotsTxt;
use crate::model::{Code, ErrorCode, JobId};
use crate::scrape::engine::{FetchError, PACE, Pace};
use crate::scrape::{ScrapeError, ScrapeJob};

/// Messages of a [`Site`].
#[derive(Debug)]
pub enum SiteMsg {
    /// Fetch a page and answer when done.
    Fetch {
        /// The page.
        task: Box<FetchTask>,
        /// Told once the response is in and the site's slot is free again; the page is
        /// then being converted, which is CPU work that holds no connection.
        retrieved: Option<RpcReplyPort<()>>,
        /// The outcome.
        reply: RpcReplyPort<FetchOutcome>,
    },
    /// Read a document as it is (a sitemap), within the site's limits like a page; not
    /// subject to robots.txt rules (robots.txt itself names sitemaps).
    FetchDocument {
        /// The job asking.
        job: JobId,
        /// The URL.
        url: String,
        /// Time allowed for the request once it starts.
        timeout_ms: u64,
        /// The outcome.
        reply: RpcReplyPort<DocumentOutcome>,
    },
    /// The site's sitemap URLs from robots.txt (after it is read); `None` when the actor let
    /// the site go to another node first (ask the site's owner).
    Sitemaps(RpcReplyPort<Option<Vec<String>>>),
    /// Drop a job's waiting requests (answered `Cancelled`), stop its running ones (their
    /// askers see the reply port close) and refuse its later ones.
    Cancel(JobId),
    /// The robots.txt read stopped before its request went out (this node was out of
    /// touch with its cluster): it is read again at the next dispatch.
    RobotsInterrupted,
    /// robots.txt was fetched (status 0: it could not be).
    RobotsLoaded {
        /// HTTP status.
        status: u16,
        /// Body bytes.
        body: Vec<u8>,
    },
    /// A fetch task ended; `retry` hands a page back to be tried again later.
    Finished {
        /// The task's token.
        token: u64,
        /// Ask the site to slow down for this long.
        backoff: Option<Duration>,
        /// The page to retry, when the site asked us to wait.
        retry: Option<Waiting>,
    },
    /// Time to start more fetches.
    Wake,
    /// Exit when still idle.
    IdleCheck,
    /// Another node's actor of this site wants it: stop starting requests, answer the
    /// waiting ones `Moved`, answer this once the running ones end, then stop.
    Release(RpcReplyPort<()>),
    /// Every other node let the site go (or could not answer): requests may start.
    Claimed,
}

/// A request waiting for a slot.
#[derive(Debug)]
pub struct Waiting {
    job: JobId,
    work: Work,
    attempts: u32,
}

/// What a waiting request is.
#[derive(Debug)]
enum Work {
    Page { task: Box<FetchTask>, retrieved: Option<RpcReplyPort<()>>, reply: RpcReplyPort<FetchOutcome> },
    Document { url: String, timeout: Duration, reply: RpcReplyPort<DocumentOutcome> },
}

impl Work {
    /// The asker stopped waiting for the answer.
    fn abandoned(&self) -> bool {
        match self {
            Self::Page { reply, .. } => reply.is_closed(),
            Self::Document { reply, .. } => reply.is_closed(),
        }
    }

    /// Answers the asker that the site moved to another node.
    fn moved(self) {
        match self {
            Self::Page { reply, .. } => {
                let _ = reply.send(FetchOutcome::Moved);
            }
            Self::Document { reply, .. } => {
                let _ = reply.send(DocumentOutcome::Moved);
            }
        }
    }

    fn cancelled(self) {
        match self {
            Self::Page { reply, .. } => {
                let _ = reply.send(FetchOutcome::Cancelled);
            }
            Self::Document { reply, .. } => {
                let _ = reply.send(DocumentOutcome::Cancelled);
            }
        }
    }
}

/// Arguments of a [`Site`].
#[derive(Debug, Clone)]
pub struct SiteArgs {
    /// `scheme://host:port`
    pub origin: Url,
    /// Shared services.
    pub services: Services,
    /// Jobs cancelled lately (and when), whose requests are refused.
    pub cancelled: HashMap<JobId, Instant>,
}

enum Robots {
    NotLoaded,
    Loading,
    Ready(RobotsTxt),
}

/// Mutable state of a [`Site`].
pub struct SiteState {
    origin: Url,
    services: Services,
    robots: Robots,
    waiting: VecDeque<Waiting>,
    cancelled: HashMap<JobId, Instant>,
    sitemap_waiters: Vec<RpcReplyPort<Option<Vec<String>>>>,
    running: HashMap<u64, (JobId, JoinHandle<()>)>,
    next_token: u64,
    next_slot: Instant,
    /// The site's interval (robots.txt may widen it), checked again as each request
    /// leaves (redirect hops too).
    pace: Arc<Pace>,
    wake_at: Option<Instant>,
    last_active: Instant,
    backoff_streak: u32,
    idle_check_pending: bool,
    /// Waiting for other nodes to let the site go before the first request.
    claiming: bool,
    /// Letting the site go: who to answer once the running requests end.
    releasing: Option<Vec<RpcReplyPort<()>>>,
    /// This node lost touch with the members while the actor ran (see `pump`).
    out_of_touch: bool,
    /// The members the last claim asked (empty outside a cluster).
    claimed_with: std::sync::Arc<Vec<String>>,
}

impl std::fmt::Debug for SiteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiteState")
            .field("origin", &self.origin.as_str())
            .field("waiting", &self.waiting.len())
            .field("running", &self.running.len())
            .finish()
    }
}

/// The per-site actor.
#[derive(Debug)]
pub struct Site;

impl Actor for Site {
    type Msg = SiteMsg;
    type State = SiteState;
    type Arguments = SiteArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SiteMsg>,
        args: SiteArgs,
    ) -> Result<SiteState, ActorProcessingErr> {
        let interval = Duration::from_millis(args.services.settings.crawl.domain_min_interval_ms);
        let margin = Duration::from_millis(args.services.settings.crawl.domain_interval_margin_ms);
        let scope = args.services.scraper.engine().pace_scope();
        let pace = Pace::of_site(scope, args.origin.host_str().unwrap_or_default(), interval, margin);
        pace.limit(args.services.settings.crawl.domain_concurrency as usize);
        let cluster = args.services.cluster.clone();
        if let (Some(cluster), Some(elsewhere)) = (&cluster, &args.services.elsewhere) {
            let in_touch = cluster.clone();
            pace.guard(Arc::new(move || in_touch.in_touch()));
            pace.elsewhere(elsewhere.turns());
            claim(&myself, elsewhere, &args.origin);
        }
        Ok(SiteState {
            origin: args.origin,
            services: args.services,
            robots: Robots::NotLoaded,
            waiting: VecDeque::new(),
            cancelled: args.cancelled,
            sitemap_waiters: Vec::new(),
            running: HashMap::new(),
            next_token: 0,
            next_slot: Instant::now(),
            pace,
            wake_at: None,
            last_active: Instant::now(),
            backoff_streak: 0,
            idle_check_pending: false,
            claiming: cluster.is_some(),
            releasing: None,
            out_of_touch: false,
            claimed_with: cluster.as_ref().map(|c| c.live()).unwrap_or_default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SiteMsg>,
        msg: SiteMsg,
        state: &mut SiteState,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(msg, SiteMsg::Wake | SiteMsg::IdleCheck) {
            state.last_active = Instant::now();
        }
        match msg {
            SiteMsg::Fetch { task, retrieved, reply } => {
                let job = task.job;
                let work = Work::Page { task, retrieved, reply };
                queue(state, Waiting { job, work, attempts: 0 });
            }
            SiteMsg::FetchDocument { job, url, timeout_ms, reply } => {
                let work = Work::Document { url, timeout: Duration::from_millis(timeout_ms), reply };
                queue(state, Waiting { job, work, attempts: 0 });
            }
            SiteMsg::Sitemaps(reply) => match &mut state.robots {
                Robots::Ready(robots) => {
                    let _ = reply.send(Some(robots.sitemaps()));
                }
                _ => state.sitemap_waiters.push(reply),
            },
            SiteMsg::Cancel(job) => cancel(state, job),
            SiteMsg::RobotsInterrupted => state.robots = Robots::NotLoaded,
            SiteMsg::RobotsLoaded { status, body } => {
                let mut robots = RobotsTxt::from_response(status, body);
                if let Some(delay) = robots.crawl_delay(&state.services.settings.crawl.robots_agent) {
                    state.pace.widen(delay);
                }
                for waiter in state.sitemap_waiters.drain(..) {
                    let _ = waiter.send(Some(robots.sitemaps()));
                }
                state.robots = Robots::Ready(robots);
            }
            SiteMsg::Finished { token, backoff, retry } => {
                state.running.remove(&token);
                match backoff {
                    Some(wait) => {
                        state.backoff_streak += 1;
                        state.next_slot = state.next_slot.max(Instant::now() + wait);
                    }
                    None => state.backoff_streak = 0,
                }
                if let Some(waiting) = retry {
                    state.waiting.push_front(waiting);
                }
                if state.releasing.is_some() {
                    release(&myself, state);
                    return Ok(());
                }
            }
            SiteMsg::Release(reply) => {
                state.releasing.get_or_insert_with(Vec::new).push(reply);
                release(&myself, state);
                return Ok(());
            }
            SiteMsg::Claimed => state.claiming = false,
            SiteMsg::Wake => state.wake_at = None,
            SiteMsg::IdleCheck => {
                state.idle_check_pending = false;
                let idle = Duration::from_secs(state.services.settings.crawl.domain_idle_secs);
                let quiet =
                    state.waiting.is_empty() && state.running.is_empty() && state.sitemap_waiters.is_empty();
                if quiet && state.last_active.elapsed() >= idle {
                    myself.stop(Some("idle".into()));
                    return Ok(());
                }
            }
        }
        pump(&myself, state);
        Ok(())
    }

    async fn post_stop(&self, _: ActorRef<SiteMsg>, state: &mut SiteState) -> Result<(), ActorProcessingErr> {
        for (_, (_, handle)) in state.running.drain() {
            handle.abort();
        }
        Ok(())
    }
}

/// Asks the other nodes to let the site go, then tells the actor ([`SiteMsg::Claimed`]).
fn claim(myself: &ActorRef<SiteMsg>, elsewhere: &Arc<dyn super::elsewhere::Elsewhere>, origin: &Url) {
    let (myself, elsewhere, origin) = (myself.clone(), Arc::clone(elsewhere), origin.to_string());
    tokio::spawn(async move {
        elsewhere.claim(&origin).await;
        let _ = myself.cast(SiteMsg::Claimed);
    });
}

/// Lets the site go (see [`SiteMsg::Release`]): the waiting requests and sitemap askers
/// are answered `Moved` at once; the askers are answered, and the actor stops, once none is running.
fn release(myself: &ActorRef<SiteMsg>, state: &mut SiteState) {
    for waiting in state.waiting.drain(..) {
        waiting.work.moved();
    }
    for waiter in state.sitemap_waiters.drain(..) {
        let _ = waiter.send(None);
    }
    if state.running.is_empty() {
        for reply in state.releasing.take().unwrap_or_default() {
            let _ = reply.send(());
        }
        myself.stop(Some("released to another node".into()));
    }
}

/// Adds a request to the queue, or refuses it at once when its job was cancelled or the
/// site is being let go.
fn queue(state: &mut SiteState, waiting: Waiting) {
    if state.cancelled.contains_key(&waiting.job) {
        waiting.work.cancelled();
    } else if state.releasing.is_some() {
        waiting.work.moved();
    } else {
        state.waiting.push_back(waiting);
    }
}

/// How long a cancelled job's requests are refused: longer than any request of it can
/// still be on its way.
pub const CANCEL_MEMORY: Duration = Duration::from_secs(600);

/// Remembers that `job` was cancelled, forgetting cancels older than [`CANCEL_MEMORY`].
pub fn remember_cancel(cancelled: &mut HashMap<JobId, Instant>, job: JobId) {
    cancelled.retain(|_, at| at.elapsed() < CANCEL_MEMORY);
    cancelled.insert(job, Instant::now());
}

fn cancel(state: &mut SiteState, job: JobId) {
    remember_cancel(&mut state.cancelled, job);
    let (drop, keep): (Vec<Waiting>, Vec<Waiting>) = state.waiting.drain(..).partition(|w| w.job == job);
    state.waiting = keep.into();
    for waiting in drop {
        waiting.work.cancelled();
    }
    state.running.retain(|_, (owner, handle)| {
        if *owner == job {
            handle.abort();
            false
        } else {
            true
        }
    });
}

/// Starts what the limits allow and arranges to be woken for the rest.
fn pump(myself: &ActorRef<SiteMsg>, state: &mut SiteState) {
    if state.claiming || state.releasing.is_some() {
        return;
    }
    if let (Some(cluster), Some(elsewhere)) = (&state.services.cluster, &state.services.elsewhere) {
        // A site that another node owns now (members changed) is let go here too, not only
        // when that node's actor asks: none of its requests starts here any more.
        if !cluster.owns_site(state.origin.as_str()) {
            state.releasing = Some(Vec::new());
            release(myself, state);
            return;
        }
        // Out of touch (this process was frozen or starved): the others may have taken the
        // site meanwhile. Nothing starts until the members answer again; then the site is
        // claimed afresh, as by a new actor.
        if !cluster.in_touch() {
            state.out_of_touch = true;
            if state.wake_at.is_none() {
                let wait = Duration::from_millis(100);
                state.wake_at = Some(Instant::now() + wait);
                myself.send_after(wait, || SiteMsg::Wake);
            }
            return;
        }
        // Claimed afresh also when a member appeared that the last claim did not ask (this
        // node met it since: it may be fetching the site on an older view).
        let live = cluster.live();
        let new_member = live.iter().any(|m| !state.claimed_with.contains(m));
        if std::mem::take(&mut state.out_of_touch) || new_member {
            state.claiming = true;
            state.claimed_with = live;
            claim(myself, elsewhere, &state.origin);
            return;
        }
    }
    let agent = state.services.settings.crawl.robots_agent.clone();
    let cap = state.services.settings.crawl.domain_concurrency as usize;
    let robots = match &mut state.robots {
        Robots::Ready(robots) => robots,
        Robots::Loading => return,
        Robots::NotLoaded => {
            if state.waiting.is_empty() && state.sitemap_waiters.is_empty() {
                schedule_idle(myself, state);
                return;
            }
            state.robots = Robots::Loading;
            load_robots(myself, state);
            return;
        }
    };
    while state.running.len() < cap {
        let Some(waiting) = state.waiting.pop_front() else {
            break;
        };
        if waiting.work.abandoned() {
            continue;
        }
        let waiting = match waiting.work {
            Work::Page { task, reply, .. }
                if task.respect_robots
                    && !Url::parse(&task.url).is_ok_and(|u| {
                        robots.allowed(task.robots_agent.as_deref().unwrap_or(&agent), &u)
                    }) =>
            {
                let _ = reply.send(FetchOutcome::Blocked);
                continue;
            }
            _ => waiting,
        };
        let now = Instant::now();
        if now < state.next_slot {
            state.waiting.push_front(waiting);
            let at = state.next_slot;
            if state.wake_at.is_none_or(|w| w > at) {
                state.wake_at = Some(at);
                myself.send_after(at - now, || SiteMsg::Wake);
            }
            return;
        }
        let interval = state.pace.interval();
        if !interval.is_zero() {
            state.next_slot = now + interval;
        }
        let token = state.next_token;
        state.next_token += 1;
        let job = waiting.job;
        let handle =
            spawn_for_site(&state.pace, fetch(myself.clone(), state.services.clone(), token, waiting));
        state.running.insert(token, (job, handle));
    }
    if state.waiting.is_empty() && state.running.is_empty() {
        schedule_idle(myself, state);
    }
}

fn schedule_idle(myself: &ActorRef<SiteMsg>, state: &mut SiteState) {
    if state.idle_check_pending {
        return;
    }
    state.idle_check_pending = true;
    let idle = Duration::from_secs(state.services.settings.crawl.domain_idle_secs);
    myself.send_after(idle, || SiteMsg::IdleCheck);
}

fn load_robots(myself: &ActorRef<SiteMsg>, state: &SiteState) {
    let Ok(url) = state.origin.join("/robots.txt") else {
        let _ = myself.cast(SiteMsg::RobotsLoaded { status: 0, body: Vec::new() });
        return;
    };
    let scraper = state.services.scraper.clone();
    let myself = myself.clone();
    spawn_for_site(&state.pace, async move {
        let (status, body) = match scraper.fetch_raw(&url, Duration::from_secs(8)).await {
            // Out of touch with the members before the request went out: read again at a
            // later dispatch, never taken as a site without robots.txt.
            Err(ScrapeError::Fetch(FetchError::Interrupted)) => {
                tokio::time::sleep(ROBOTS_AGAIN_AFTER).await;
                let _ = myself.cast(SiteMsg::RobotsInterrupted);
                return;
            }
            Ok(fetched) => (fetched.status, fetched.body),
            Err(e) => {
                tracing::debug!(%url, error = %e, "robots.txt unavailable; everything allowed");
                (0, Vec::new())
            }
        };
        let _ = myself.cast(SiteMsg::RobotsLoaded { status, body });
    });
}

/// How long a robots.txt read stopped by the pace's guard ([`Pace::guard`]) waits before the actor may try
/// again.
const ROBOTS_AGAIN_AFTER: Duration = Duration::from_millis(200);

/// Spawns work that sends requests to the site, at its pace. In a cluster each request,
/// first or redirect hop, goes out only while this node is in touch with the members
/// (the pace's guard, asked as the request leaves and again as it is written): a process
/// frozen (SIGSTOP, starved) mid-fetch wakes while the other nodes may have taken the site.
fn spawn_for_site(
    pace: &Arc<Pace>,
    work: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(PACE.scope(Arc::clone(pace), work))
}

/// Exponential pause when a 429/503 came without Retry-After: 1 s, 2 s, 4 s … 60 s.
fn default_backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.min(6)).min(Duration::from_secs(60))
}

/// One request in its slot: how it reports back to the site actor.
struct Slot {
    myself: ActorRef<SiteMsg>,
    services: Services,
    token: u64,
    job: JobId,
    attempts: u32,
}

impl Slot {
    /// Frees the slot, asking the site to slow down for `backoff`.
    fn free(&self, backoff: Option<Duration>) {
        let _ = self.myself.cast(SiteMsg::Finished { token: self.token, backoff, retry: None });
    }

    /// Frees the slot and hands `work` back to the actor as it was, to be started again.
    fn give_back(self, work: Work) {
        let retry = Waiting { job: self.job, work, attempts: self.attempts };
        let _ = self.myself.cast(SiteMsg::Finished { token: self.token, backoff: None, retry: Some(retry) });
    }

    /// Frees the slot after a 429/503 and hands `work` back to be tried again, unless it
    /// has had all its attempts; then `work` is returned to be answered as it is.
    fn retry(&self, wait: Option<Duration>, work: Work) -> Option<Work> {
        let wait = wait.unwrap_or_else(|| default_backoff(self.attempts));
        if self.attempts + 1 < self.services.settings.crawl.max_attempts {
            let retry = Waiting { job: self.job, work, attempts: self.attempts + 1 };
            let _ = self.myself.cast(SiteMsg::Finished {
                token: self.token,
                backoff: Some(wait),
                retry: Some(retry),
            });
            return None;
        }
        self.free(Some(wait));
        Some(work)
    }
}

/// Runs one request and reports back: a page or a document.
async fn fetch(myself: ActorRef<SiteMsg>, services: Services, token: u64, waiting: Waiting) {
    // A process frozen (SIGSTOP, starved) after starting this task wakes with it still to
    // run, while the other nodes may have taken the site meanwhile: when this node is out
    // of touch with the members, the request goes back to the actor, which starts nothing
    // until it has claimed the site again.
    if services.cluster.as_ref().is_some_and(|cluster| !cluster.in_touch()) {
        let _ = myself.cast(SiteMsg::Finished { token, backoff: None, retry: Some(waiting) });
        return;
    }
    let Waiting { job, work, attempts } = waiting;
    let slot = Slot { myself, services, token, job, attempts };
    match work {
        Work::Page { task, retrieved, reply } => fetch_page(slot, task, retrieved, reply).await,
        Work::Document { url, timeout, reply } => fetch_document(slot, url, timeout, reply).await,
    }
}

/// Reads a document as it is; a 429/503 is retried like a page.
/// Resolves once the asker has stopped waiting for `reply`.
async fn abandoned<T>(reply: &RpcReplyPort<T>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    while !reply.is_closed() {
        tick.tick().await;
    }
}

async fn fetch_document(slot: Slot, url: String, timeout: Duration, reply: RpcReplyPort<DocumentOutcome>) {
    let fetched = match Url::parse(&url) {
        Ok(parsed) => match slot.services.scraper.fetch_raw(&parsed, timeout).await {
            // Out of touch before the request went out (see `fetch_page`): back to the
            // actor, which claims the site again or hands the document on.
            Err(ScrapeError::Fetch(FetchError::Interrupted)) => {
                slot.give_back(Work::Document { url, timeout, reply });
                return;
            }
            fetched => fetched.map_err(|e| e.to_string()),
        },
        Err(e) => Err(format!("invalid URL: {e}")),
    };
    let outcome = match fetched {
        Ok(f) if matches!(f.status, 429 | 503) => {
            // Out of attempts, the 429/503 is the answer.
            if let Some(Work::Document { reply, .. }) =
                slot.retry(f.retry_after, Work::Document { url, timeout, reply })
            {
                let _ = reply.send(DocumentOutcome::Fetched { status: f.status, body: f.body });
            }
            return;
        }
        Ok(f) => {
            slot.free(None);
            DocumentOutcome::Fetched { status: f.status, body: f.body }
        }
        Err(e) => {
            slot.free(None);
            DocumentOutcome::Failed(e)
        }
    };
    let _ = reply.send(outcome);
}

/// Fetches one page. The site's slot is given back as soon as the response is in (or the
/// fetch failed); converting the page happens after, outside the site's limits.
async fn fetch_page(
    slot: Slot,
    task: Box<FetchTask>,
    retrieved: Option<RpcReplyPort<()>>,
    reply: RpcReplyPort<FetchOutcome>,
) {
    let url = match Url::parse(&task.url) {
        Ok(url) => url,
        Err(e) => {
            slot.free(None);
            let error = format!("invalid URL: {e}");
            let _ = reply.send(FetchOutcome::Failed { code: Code::BadRequest, error });
            return;
        }
    };
    let job = ScrapeJob {
        id: task.scrape_id,
        team: task.team.clone(),
        source_url: task.url.clone(),
        url,
        options: task.options.clone(),
        queued_ms: task.queued_ms,
    };
    let services = slot.services.clone();
    let page = services.scraper.retrieve(&job).await;
    // The node lost touch with the members before the request (or a redirect hop) went
    // out: another node may fetch the site by now, so the page goes to the site's owner.
    if matches!(page, Err(ScrapeError::Fetch(FetchError::Interrupted))) {
        slot.free(None);
        let _ = reply.send(FetchOutcome::Moved);
        return;
    }
    let (task, retrieved, reply) = match &page {
        Ok(fetched) if matches!(fetched.status(), 429 | 503) => {
            // Out of attempts, the 429/503 page is the result.
            match slot.retry(fetched.retry_after(), Work::Page { task, retrieved, reply }) {
                Some(Work::Page { task, retrieved, reply }) => (task, retrieved, reply),
                _ => return,
            }
        }
        _ => {
            slot.free(None);
            (task, retrieved, reply)
        }
    };
    if let Some(port) = retrieved {
        let _ = port.send(());
    }
    // The site's slot is free again; the conversion belongs to the asker alone, and stops
    // when it stops waiting (its job cancelled, its deadline passed).
    let converted = match page {
        Ok(page) => tokio::select! {
            converted = services.scraper.convert(&job, page, task.discover) => converted,
            () = abandoned(&reply) => return,
        },
        Err(e) => Err(e),
    };
    let outcome = match converted {
        Ok(page) => FetchOutcome::Page { document: Box::new(page.document), links: page.links },
        Err(e) => FetchOutcome::Failed { code: e.code(), error: e.to_string() },
    };
    let _ = reply.send(outcome);
}
