//! The actor tree (ractor) that runs asynchronous work:
//!
//! ```text
//! Root
//!  ├─ JobSupervisor ── CrawlJob(id) ...   one per running crawl or batch; resumed from the store
//!  ├─ SiteSupervisor ── Site(origin) ...  robots.txt, politeness, fetching; exits when idle
//!  ├─ WebhookDispatcher                   signed, retried, in-order delivery from the outbox
//!  ├─ BrowserSupervisor ── BrowserSession(scrape) ...  Chromium pool upkeep; interact sessions
//!  └─ Janitor                             expiry of jobs, results, files and cached pages
//! ```
//!
//! The root restarts a supervisor that fails; supervisors restart their children. Job state
//! lives in the store, so a restarted actor (or a restarted server) resumes where the last
//! one stopped. [`Runtime`] is the handle the API and the CLI use. In a cluster the actors
//! reach other nodes only through [`elsewhere::Elsewhere`], which the layer above implements.

pub mod browser;
pub mod crawl_job;
pub mod discovery;
pub mod elsewhere;
pub mod events;
pub mod fetch;
pub mod janitor;
pub mod jobs;
pub mod map;
pub mod root;
mod settle;
pub mod site;
pub mod sites;
pub mod stored;
pub mod tap;
pub mod webhook;

use std::sync::{Arc, OnceLock};

use ractor::rpc::CallResult;
use ractor::{Actor, ActorRef};

use crate::config::Settings;
use crate::model::{JobId, TeamId};
use crate::scrape::Scraper;
use crate::store::jobs::{EntrySource, JobRecord};
use crate::store::{JobStore, Store, StoreError};
use root::{Root, RootMsg, Supervisors};

// With ractor's `cluster` feature every message type says whether it can cross nodes.
// These stay in their process: messages between nodes go through the cluster module's
// own versioned wire type.
macro_rules! local_messages {
    ($($ty:ty),+ $(,)?) => { $(impl ractor::Message for $ty {})+ };
}
local_messages!(
    browser::BrowserMsg,
    browser::SessionMsg,
    crawl_job::CrawlJobMsg,
    site::SiteMsg,
    sites::SitesMsg,
    janitor::JanitorMsg,
    jobs::JobsMsg,
    root::RootMsg,
    webhook::WebhookMsg,
    crate::search::indexer::IndexMsg,
);

/// What every actor may use.
#[derive(Debug, Clone)]
pub struct Services {
    /// The page pipeline.
    pub scraper: Scraper,
    /// Persistence.
    pub store: Store,
    /// Settings.
    pub settings: Arc<Settings>,
    /// Rung when webhook events were queued, so the dispatcher delivers at once.
    pub webhooks: Arc<tokio::sync::Notify>,
    /// Team plans, credits and limits.
    pub teams: Arc<crate::teams::Teams>,
    /// Jobs whose pages go straight to a reader in this process (the command line).
    pub taps: tap::Taps,
    /// This node's place in a cluster, when it is part of one.
    pub cluster: Option<crate::cluster::Cluster>,
    /// How the site actors reach the other nodes of the cluster, when there is one.
    pub elsewhere: Option<Arc<dyn elsewhere::Elsewhere>>,
    /// Where interact `python` and `bash` code runs, when the settings allow them.
    pub sandbox: Option<crate::process::sandbox::Sandbox>,
    volatile: Arc<OnceLock<JobStore>>,
}

impl Services {
    /// A new id for a job, a scrape or a browser session: tagged with this node when it is
    /// part of a cluster, so any node can tell where what it names lives.
    pub fn new_id(&self) -> JobId {
        match &self.cluster {
            Some(cluster) => JobId::tagged(cluster.tag()),
            None => JobId::new(),
        }
    }

    /// Services over `store`, with `teams`' policy.
    pub fn new(
        scraper: Scraper,
        store: Store,
        settings: Arc<Settings>,
        teams: Arc<crate::teams::Teams>,
    ) -> Self {
        Self {
            scraper,
            store,
            settings,
            webhooks: Arc::new(tokio::sync::Notify::new()),
            teams,
            taps: tap::Taps::default(),
            cluster: None,
            elsewhere: None,
            sandbox: None,
            volatile: Arc::new(OnceLock::new()),
        }
    }

    /// These services with `sandbox` for interact code outside the page.
    pub fn with_sandbox(mut self, sandbox: Option<crate::process::sandbox::Sandbox>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// These services on a node of `cluster`, whose site actors reach the other nodes
    /// through `elsewhere`.
    pub fn in_cluster(
        mut self,
        cluster: crate::cluster::Cluster,
        elsewhere: Arc<dyn elsewhere::Elsewhere>,
    ) -> Self {
        self.cluster = Some(cluster);
        self.elsewhere = Some(elsewhere);
        self
    }

    /// The memory-only job store used by zero-data-retention jobs (opened on first use; it
    /// lives in shared memory and vanishes with the process).
    pub fn volatile_jobs(&self) -> Result<JobStore, StoreError> {
        if let Some(store) = self.volatile.get() {
            return Ok(store.clone());
        }
        let store = crate::store::memory_jobs()?;
        Ok(self.volatile.get_or_init(|| store).clone())
    }

    /// The memory-only job store if it was ever opened.
    pub fn volatile_jobs_if_open(&self) -> Option<JobStore> {
        self.volatile.get().cloned()
    }

    /// The store holding job `id` and its record.
    pub fn find_job(&self, id: JobId) -> Result<Option<(JobStore, JobRecord)>, StoreError> {
        if let Some(record) = self.store.jobs.record(id)? {
            return Ok(Some((self.store.jobs.clone(), record)));
        }
        match self.volatile_jobs_if_open() {
            Some(volatile) => Ok(volatile.record(id)?.map(|r| (volatile, r))),
            None => Ok(None),
        }
    }
}

/// Why the actor system could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// An actor could not be spawned or reached.
    #[error("actor system: {0}")]
    Actors(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl crate::model::ErrorCode for RuntimeError {
    fn code(&self) -> crate::model::Code {
        match self {
            Self::Actors(_) => crate::model::Code::Unavailable,
            Self::Store(e) => e.code(),
        }
    }
}

/// How much a node holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeCounts {
    /// Live site actors.
    pub sites: usize,
    /// Running job actors.
    pub jobs: usize,
    /// Interact sessions.
    pub sessions: usize,
}

/// Handle on the running actor tree.
#[derive(Debug, Clone)]
pub struct Runtime {
    services: Services,
    root: ActorRef<RootMsg>,
    /// The supervisors' current references, as the root publishes them.
    current: tokio::sync::watch::Receiver<Option<Supervisors>>,
    /// Becomes true when the root has stopped (shut down, or gave up on a failing child).
    ended: tokio::sync::watch::Receiver<bool>,
    /// Becomes true as [`Runtime::shutdown`] begins, before any actor stops.
    stopping: Arc<tokio::sync::watch::Sender<bool>>,
    /// Held while a long list of URLs is written: such writes go one at a time, so that
    /// many large batches submitted at once raise memory by about one batch's worth.
    bulk_writes: Arc<tokio::sync::Semaphore>,
}

/// A list of URLs this long waits for the bulk-write permit.
const BULK_URLS: usize = 10_000;

impl Runtime {
    /// Starts the tree; unfinished jobs resume at once.
    pub async fn start(services: Services) -> Result<Self, RuntimeError> {
        let (published, current) = tokio::sync::watch::channel(None);
        let (root, handle) = Actor::spawn(None, Root, (services.clone(), published))
            .await
            .map_err(|e| RuntimeError::Actors(e.to_string()))?;
        let (tell, ended) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let _ = handle.await;
            let _ = tell.send(true);
        });
        Ok(Self {
            services,
            root,
            current,
            ended,
            stopping: Arc::new(tokio::sync::watch::Sender::new(false)),
            bulk_writes: Arc::new(tokio::sync::Semaphore::new(1)),
        })
    }

    /// Resolves when the actor tree has stopped: after [`Runtime::shutdown`], or when the
    /// root gave up restarting a failing supervisor (the server then stops too).
    pub async fn ended(&self) {
        let mut ended = self.ended.clone();
        let _ = ended.wait_for(|&done| done).await;
    }

    /// Resolves once [`Runtime::shutdown`] has begun: work the actors do not hold (an
    /// extract or agent job) stops there, before the parts it uses go away, and runs again
    /// on the next start.
    pub async fn stopping(&self) {
        let mut stopping = self.stopping.subscribe();
        let _ = stopping.wait_for(|&stop| stop).await;
    }

    /// The shared services.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// The site actors, here and (in a cluster) on the other nodes: what jobs, maps and
    /// the answers to other nodes' requests send pages to. An error once the tree stopped.
    pub async fn sites(&self) -> Result<sites::Sites, RuntimeError> {
        let supervisors = self.supervisors().await?;
        Ok(sites::Sites::new(supervisors.sites, self.services.elsewhere.clone()))
    }

    /// The supervisors' current references (read, not asked of the root: every API call
    /// and every page another node sends here needs them). An error once the tree stopped.
    pub(crate) async fn supervisors(&self) -> Result<Supervisors, RuntimeError> {
        let status = self.root.get_status();
        if matches!(status, ractor::ActorStatus::Stopping | ractor::ActorStatus::Stopped) {
            return Err(RuntimeError::Actors(format!("{}: {status:?}", sites::gone::ROOT)));
        }
        self.current
            .borrow()
            .clone()
            .ok_or_else(|| RuntimeError::Actors("the actor tree has not started".into()))
    }

    /// Stores a new job with its first URLs and starts it.
    pub async fn submit(
        &self,
        id: JobId,
        record: &JobRecord,
        first: Box<dyn EntrySource>,
        volatile: bool,
    ) -> Result<(), RuntimeError> {
        let jobs = if volatile { self.services.volatile_jobs()? } else { self.services.store.jobs.clone() };
        let started = events::started(&jobs, id, record)?;
        // One transaction over all the first URLs (a batch can bring 100 000): off the
        // async workers.
        let (store, record) = (jobs.clone(), record.clone());
        let _permit = self.bulk_permit(first.count()).await;
        tokio::task::spawn_blocking(move || store.create(id, &record, first.entries(), started.as_ref()))
            .await
            .map_err(|e| RuntimeError::Actors(e.to_string()))??;
        self.services.webhooks.notify_one();
        if !volatile {
            jobs.flush().await?;
        }
        self.run_job(id, volatile).await
    }

    /// A permit to write `count` URLs, when that many need one.
    async fn bulk_permit(&self, count: usize) -> Option<tokio::sync::SemaphorePermit<'_>> {
        if count < BULK_URLS {
            return None;
        }
        self.bulk_writes.acquire().await.ok()
    }

    async fn run_job(&self, id: JobId, volatile: bool) -> Result<(), RuntimeError> {
        let supervisors = self.supervisors().await?;
        supervisors
            .jobs
            .cast(jobs::JobsMsg::Start(id, volatile))
            .map_err(|e| RuntimeError::Actors(e.to_string()))
    }

    /// Adds URLs to a batch (reopening it when it had finished) and makes sure it runs.
    pub async fn append(&self, id: JobId, entries: Box<dyn EntrySource>) -> Result<usize, RuntimeError> {
        let Some((jobs, _)) = self.services.find_job(id)? else { return Ok(0) };
        let store = jobs.clone();
        let _permit = self.bulk_permit(entries.count()).await;
        let added = tokio::task::spawn_blocking(move || store.append(id, entries.entries()))
            .await
            .map_err(|e| RuntimeError::Actors(e.to_string()))??;
        let volatile = self.services.store.jobs.record(id)?.is_none();
        if !volatile {
            jobs.flush().await?;
        }
        self.run_job(id, volatile).await?;
        Ok(added)
    }

    /// Cancels a running job of `team`. Returns the record as it was before, or `None` when
    /// the team has no such job.
    pub async fn cancel(&self, id: JobId, team: &TeamId) -> Result<Option<JobRecord>, RuntimeError> {
        let Some((jobs, record)) = self.services.find_job(id)? else {
            return Ok(None);
        };
        if record.team != team.as_str() {
            return Ok(None);
        }
        if !record.status.is_terminal() {
            events::end(&jobs, id, crate::model::JobStatus::Cancelled, None)?;
            self.services.webhooks.notify_one();
            let supervisors = self.supervisors().await?;
            let _ = supervisors.jobs.cast(jobs::JobsMsg::Cancel(id));
            sites::Sites::new(supervisors.sites, self.services.elsewhere.clone()).cancel(id);
        }
        Ok(Some(record))
    }

    /// Ids of the job actors running now.
    pub async fn running(&self) -> Result<Vec<JobId>, RuntimeError> {
        let supervisors = self.supervisors().await?;
        match supervisors.jobs.call(jobs::JobsMsg::Running, None).await {
            Ok(CallResult::Success(ids)) => Ok(ids),
            other => Err(RuntimeError::Actors(format!("job supervisor unreachable: {other:?}"))),
        }
    }

    /// Sends `msg` (built around a reply port) to the browser supervisor and waits.
    pub async fn browser_call<T: Send + 'static>(
        &self,
        msg: impl FnOnce(ractor::RpcReplyPort<T>) -> browser::BrowserMsg,
    ) -> Result<T, RuntimeError> {
        let supervisors = self.supervisors().await?;
        match supervisors.browser.call(msg, None).await {
            Ok(CallResult::Success(value)) => Ok(value),
            Ok(CallResult::Timeout) => Err(RuntimeError::Actors("browser supervisor timed out".into())),
            Ok(CallResult::SenderError) => {
                Err(RuntimeError::Actors("browser supervisor dropped the call".into()))
            }
            Err(e) => Err(RuntimeError::Actors(format!("browser supervisor unreachable: {e}"))),
        }
    }

    /// Tells the browser supervisor something.
    pub async fn browser_cast(&self, msg: browser::BrowserMsg) -> Result<(), RuntimeError> {
        let supervisors = self.supervisors().await?;
        supervisors.browser.cast(msg).map_err(|e| RuntimeError::Actors(e.to_string()))
    }

    /// How much this node holds: live site actors, running jobs, interact sessions.
    pub async fn counts(&self) -> NodeCounts {
        let Ok(supervisors) = self.supervisors().await else { return NodeCounts::default() };
        fn got<T, E>(answer: Result<CallResult<T>, E>) -> Option<T> {
            match answer {
                Ok(CallResult::Success(value)) => Some(value),
                _ => None,
            }
        }
        let timeout = Some(std::time::Duration::from_secs(2));
        let sites = sites::Sites::new(supervisors.sites.clone(), None);
        NodeCounts {
            sites: sites.count(std::time::Duration::from_secs(2)).await.unwrap_or(0),
            jobs: got(supervisors.jobs.call(jobs::JobsMsg::Running, timeout).await)
                .map_or(0, |ids| ids.len()),
            sessions: got(supervisors.browser.call(browser::BrowserMsg::Live, timeout).await).unwrap_or(0),
        }
    }

    /// The jobs running on this node, and the pages waiting or in flight in them (their
    /// frontiers).
    pub async fn jobs_and_frontier(&self) -> (usize, u64) {
        let Ok(supervisors) = self.supervisors().await else { return (0, 0) };
        let timeout = Some(std::time::Duration::from_secs(2));
        let Ok(CallResult::Success(ids)) = supervisors.jobs.call(jobs::JobsMsg::Running, timeout).await
        else {
            return (0, 0);
        };
        let (running, store) = (ids.len(), self.services().store.jobs.clone());
        let pending = tokio::task::spawn_blocking(move || {
            ids.into_iter().filter_map(|id| store.counters(id).ok()).map(|c| c.pending()).sum()
        });
        (running, pending.await.unwrap_or(0))
    }

    /// Whether [`Runtime::shutdown`] has begun.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Stops every actor (running jobs resume on the next start).
    pub async fn shutdown(&self) {
        self.stopping.send_replace(true);
        let _ = self.root.stop_and_wait(Some("shutting down".into()), None).await;
    }
}

#[cfg(test)]
mod tests;
