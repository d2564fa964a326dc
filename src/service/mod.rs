//! The job service: the one place where crawls and batches are started, read and
//! cancelled, called by the HTTP API and the command line alike. It owns what every
//! caller must get the same way: credits (checked before any work; a crawl's limit shrinks
//! to what the team has left), idempotency keys, the job's record and first URLs, the
//! `started` event, the team's activity log, and the reading of a job's stored state off the
//! async workers. When nodes form a cluster, this is where a request is routed to the node
//! that owns the job ([`JobNodes`]).
//!
//! Handlers parse and authorize, call one method here, and shape the answer; they never
//! read the store themselves.

pub mod llm_jobs;
mod read;
mod route;

use url::Url;

use crate::actors::Runtime;
use crate::actors::discovery::is_sitemap_url;
use crate::crawl::keys::{self, KeyRules};
use crate::model::{
    Code, CrawlOptions, ErrorCode, JobId, JobKind, JobStatus, ScrapeOptions, SitemapMode, TeamId, time,
};
use crate::store::StoreError;
use crate::store::jobs::{EntrySource, JobRecord, NewEntry, QueueEntry};
use crate::teams::CreditError;

pub use read::{ActiveJob, JobCounts, JobErrors, JobPage, Paging, StoredDocument};
pub use route::{JobAt, JobNodes, NodeAnswer, RemoteError};

/// A job's stored description (kind, team, options, status, times).
pub type Job = JobRecord;
/// A URL to add to a job, with its identity in the job's seen-set.
pub type JobUrl = NewEntry;
/// The URLs of a new batch or an addition to one, read as they are queued.
pub use crate::store::jobs::EntrySource as JobUrls;

/// Why a job request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// No such job for this team (or of this kind).
    #[error("Job not found")]
    NotFound,
    /// The job's record does not decode with this build; it is held in quarantine.
    #[error(
        "This job's stored record could not be read by this build and is held in quarantine; the operator can list it with `ferrocrawl store check`"
    )]
    Quarantined,
    /// The idempotency key was used before.
    #[error("Idempotency key already used")]
    IdempotencyKeyUsed,
    /// The job already ended.
    #[error("{0} is already completed")]
    Finished(&'static str),
    /// Not enough credits.
    #[error(transparent)]
    Credits(#[from] CreditError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The actor tree could not take the job.
    #[error(transparent)]
    Runtime(#[from] crate::actors::RuntimeError),
    /// A worker thread died.
    #[error("internal error: {0}")]
    Internal(String),
    /// The node that owns the job is not a live member of the cluster now.
    #[error("The job lives on node `{0}`, which is not available now; it resumes when the node is back")]
    NodeUnavailable(String),
    /// The node that owns the job answered with an error.
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

impl ErrorCode for JobError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::Quarantined => Code::RecordQuarantined,
            Self::IdempotencyKeyUsed | Self::Finished(_) => Code::Conflict,
            Self::Credits(e) => e.code(),
            Self::Store(e) => e.code(),
            Self::Runtime(e) => e.code(),
            Self::Internal(_) => Code::Unknown,
            Self::NodeUnavailable(_) => Code::NodeUnavailable,
            Self::Remote(e) => e.code(),
        }
    }
}

/// Display name of a job kind.
pub fn display_name(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Crawl => "Crawl",
        JobKind::Batch => "Batch scrape",
    }
}

/// A crawl to start.
#[derive(Debug, Clone)]
pub struct NewCrawl {
    /// The team.
    pub team: TeamId,
    /// The start URL (a sitemap URL starts from the sitemap alone).
    pub url: Url,
    /// Validated options.
    pub options: CrawlOptions,
    /// `x-idempotency-key`, when given.
    pub idempotency_key: Option<String>,
}

/// A batch to start, or URLs to add to one.
#[derive(Debug)]
pub struct NewBatch {
    /// The team.
    pub team: TeamId,
    /// The URLs (see [`batch_url`]), read as they are queued.
    pub urls: Box<dyn EntrySource>,
    /// How many different URLs `urls` holds.
    pub count: usize,
    /// The first of them.
    pub first_url: String,
    /// Options for every page.
    pub scrape: ScrapeOptions,
    /// Where to send the job's events.
    pub webhook: Option<crate::model::WebhookSpec>,
    /// Most pages in flight for this batch.
    pub max_concurrency: Option<u32>,
    /// Add to this batch of the team instead of starting one.
    pub append_to: Option<JobId>,
}

/// A batch URL with its identity (exact URL, fragment dropped).
pub fn batch_url(url: &Url) -> JobUrl {
    let rules = KeyRules { ignore_query: false, similar: false };
    let url = keys::normalize(url, rules);
    NewEntry { key: keys::key(&url, rules), entry: QueueEntry { url: url.to_string(), depth: 0 } }
}

/// A started job.
#[derive(Debug, Clone)]
pub struct Started {
    /// Its id.
    pub id: JobId,
    /// The URL it started from (crawl) or its first URL (batch).
    pub url: String,
}

/// Starts, reads and cancels jobs.
#[derive(Debug, Clone)]
pub struct JobService {
    runtime: Runtime,
    /// The other nodes that own jobs, in a cluster.
    nodes: Option<std::sync::Arc<dyn JobNodes>>,
}

impl JobService {
    /// The service over a running actor tree.
    pub fn new(runtime: Runtime) -> Self {
        Self { runtime, nodes: None }
    }

    /// The service on a node of a cluster, reaching the jobs of other nodes through `nodes`.
    pub fn in_cluster(runtime: Runtime, nodes: std::sync::Arc<dyn JobNodes>) -> Self {
        Self { runtime, nodes: Some(nodes) }
    }

    /// The actor tree.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The record of a job starting now.
    fn record(&self, kind: JobKind, team: &TeamId, url: String, options: CrawlOptions) -> JobRecord {
        let now = time::now_ms();
        let ttl_ms = self.runtime.services().settings.crawl.job_ttl_secs.saturating_mul(1000);
        JobRecord {
            kind,
            team: team.as_str().to_owned(),
            url,
            options,
            status: JobStatus::Scraping,
            created_ms: now,
            expires_ms: now.saturating_add(ttl_ms),
            finished_ms: None,
            error: None,
        }
    }

    /// Starts a crawl.
    pub async fn start_crawl(&self, request: NewCrawl) -> Result<Started, JobError> {
        self.start_crawl_as(self.new_id(), request).await
    }

    /// Starts a crawl with a given id (the command line opens the job's page tap first).
    pub async fn start_crawl_as(&self, id: JobId, request: NewCrawl) -> Result<Started, JobError> {
        let NewCrawl { team, url, mut options, idempotency_key } = request;
        let services = self.runtime.services();
        // A job that could not be stored is refused, not half-started.
        services.store.space.ensure()?;
        // Out of credits: refused before any work; fewer credits than the limit: the limit
        // shrinks. One look at the team's use (in a cluster, a question to every node).
        if let Some(remaining) = services.teams.remaining(&team).await? {
            if remaining == 0 {
                return Err(crate::teams::CreditError::Insufficient { needed: 1, remaining }.into());
            }
            options.limit = options.limit.min(remaining);
        }
        if let Some(key) = &idempotency_key
            && services.store.idempotency.claim(&team, key, id)?.is_some()
        {
            return Err(JobError::IdempotencyKeyUsed);
        }
        let rules = KeyRules {
            ignore_query: options.ignore_query_parameters,
            similar: options.deduplicate_similar_urls,
        };
        let start = keys::normalize(&url, rules);
        let first = if is_sitemap_url(&start) {
            Vec::new()
        } else {
            vec![NewEntry {
                key: keys::key(&start, rules),
                entry: QueueEntry { url: start.to_string(), depth: 0 },
            }]
        };
        let volatile = options.scrape.zero_data_retention;
        let record = self.record(JobKind::Crawl, &team, start.to_string(), options);
        self.runtime.submit(id, &record, Box::new(first), volatile).await?;
        self.note(&team, "crawl", id, (!volatile).then_some(record.url.as_str()))?;
        metrics::counter!("jobs_started_total", "kind" => JobKind::Crawl.label()).increment(1);
        if volatile {
            tracing::info!(job = %id, "crawl started (zero data retention)");
        } else {
            tracing::info!(job = %id, url = %record.url, "crawl started");
        }
        Ok(Started { id, url: record.url })
    }

    /// Starts a batch, or adds its URLs to an existing batch of the team.
    pub async fn start_batch(&self, request: NewBatch) -> Result<Started, JobError> {
        let NewBatch { team, urls, count, first_url, scrape, webhook, max_concurrency, append_to } = request;
        let services = self.runtime.services();
        services.store.space.ensure()?;
        services.teams.require(&team, count as u64).await?;
        if let Some(existing) = append_to {
            self.find(&team, existing, JobKind::Batch).await?;
            self.runtime.append(existing, urls).await?;
            return Ok(Started { id: existing, url: first_url });
        }
        let volatile = scrape.zero_data_retention;
        let options = CrawlOptions {
            limit: count as u64,
            sitemap: SitemapMode::Skip,
            max_concurrency,
            scrape,
            webhook,
            ..CrawlOptions::default()
        };
        let record = self.record(JobKind::Batch, &team, first_url, options);
        let id = self.new_id();
        self.runtime.submit(id, &record, urls, volatile).await?;
        self.note(&team, "batch_scrape", id, (!volatile).then_some(record.url.as_str()))?;
        metrics::counter!("jobs_started_total", "kind" => JobKind::Batch.label()).increment(1);
        tracing::info!(job = %id, urls = count, "batch scrape started");
        Ok(Started { id, url: record.url })
    }

    /// Cancels a running job of the team on this node (another node's request for a job of
    /// this node); a completed or failed one is a conflict.
    pub async fn local_cancel(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<(), JobError> {
        let job = self.local_find(team, id, kind).await?;
        if matches!(job.status, JobStatus::Completed | JobStatus::Failed) {
            return Err(JobError::Finished(display_name(kind)));
        }
        self.runtime.cancel(id, team).await?;
        Ok(())
    }

    fn note(&self, team: &TeamId, endpoint: &str, id: JobId, target: Option<&str>) -> Result<(), JobError> {
        Ok(self.runtime.services().teams.note_activity(team, endpoint, id, target)?)
    }
}
