//! Reading jobs: a team's job by id (or why it cannot be read), a page of its documents
//! with its counts, its failed pages, and the team's running crawls. Every store read runs
//! on the blocking pool, never on an async worker.

use super::{Job, JobError, JobService};
use crate::model::{JobId, JobKind, JobStatus, TeamId};
use crate::store::JobStore;
use crate::store::jobs::{Counters, ErrorEntry, trees};

/// A job's progress counts.
pub type JobCounts = Counters;

/// A finished page's document as stored (JSON), read here or on the job's node.
#[derive(Debug, Clone)]
pub enum StoredDocument {
    /// Read from this node's store.
    Local(sled::IVec),
    /// Received from the node that owns the job.
    Remote(Vec<u8>),
}

impl StoredDocument {
    /// The document's JSON.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Local(bytes) => bytes,
            Self::Remote(bytes) => bytes,
        }
    }
}

impl From<Vec<u8>> for StoredDocument {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Remote(bytes)
    }
}

/// Which documents to read.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    /// Documents to skip.
    pub skip: u64,
    /// Most documents.
    pub limit: usize,
    /// Stop once this many bytes are read (always at least one document).
    pub max_bytes: usize,
}

/// A job with a page of its documents.
#[derive(Debug, Clone)]
pub struct JobPage {
    /// The job.
    pub job: Job,
    /// Its counts.
    pub counts: JobCounts,
    /// The page of documents, in the order they finished.
    pub documents: Vec<StoredDocument>,
}

/// A job's failures.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JobErrors {
    /// Pages that failed.
    pub failed: Vec<ErrorEntry>,
    /// URLs robots.txt kept the job from.
    pub robots_blocked: Vec<String>,
}

/// A running job of a team.
#[derive(Debug, Clone)]
pub struct ActiveJob {
    /// Its id.
    pub id: JobId,
    /// The job.
    pub job: Job,
}

pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, JobError> + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| JobError::Internal(e.to_string()))?
}

impl JobService {
    /// The team's job `id` of `kind`, with the store holding it.
    async fn locate(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<(JobStore, Job), JobError> {
        let services = self.runtime.services().clone();
        let team = team.as_str().to_owned();
        blocking(move || match services.find_job(id)? {
            Some((jobs, job)) if job.team == team && job.kind == kind => Ok((jobs, job)),
            Some(_) => Err(JobError::NotFound),
            None if services.store.quarantine.holds(trees::JOBS, id.as_bytes())? => {
                Err(JobError::Quarantined)
            }
            None => Err(JobError::NotFound),
        })
        .await
    }

    /// The team's job `id` of `kind` on this node.
    pub(super) async fn local_find(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<Job, JobError> {
        Ok(self.locate(team, id, kind).await?.1)
    }

    /// The team's job on this node, with its counts and a page of its documents.
    pub async fn local_page(
        &self,
        team: &TeamId,
        id: JobId,
        kind: JobKind,
        paging: Paging,
    ) -> Result<JobPage, JobError> {
        let (jobs, job) = self.locate(team, id, kind).await?;
        blocking(move || {
            let counts = jobs.counters(id)?;
            let documents = jobs
                .pages(id, paging.skip, paging.limit, paging.max_bytes)?
                .into_iter()
                .map(StoredDocument::Local)
                .collect();
            Ok(JobPage { job, counts, documents })
        })
        .await
    }

    /// The failed pages and robots-blocked URLs of the team's job on this node.
    pub async fn local_errors(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<JobErrors, JobError> {
        let (jobs, _) = self.locate(team, id, kind).await?;
        blocking(move || {
            let (failed, robots_blocked) = jobs.errors(id)?;
            Ok(JobErrors { failed, robots_blocked })
        })
        .await
    }

    /// The team's running jobs of `kind` on this node.
    pub async fn local_active(&self, team: &TeamId, kind: JobKind) -> Result<Vec<ActiveJob>, JobError> {
        let services = self.runtime.services().clone();
        let team = team.as_str().to_owned();
        blocking(move || {
            let mut stores = vec![services.store.jobs.clone()];
            stores.extend(services.volatile_jobs_if_open());
            let mut out = Vec::new();
            for jobs in stores {
                for (id, job) in jobs.all()? {
                    if job.team == team && job.kind == kind && job.status == JobStatus::Scraping {
                        out.push(ActiveJob { id, job });
                    }
                }
            }
            Ok(out)
        })
        .await
    }
}
