//! Requests between nodes of a cluster, as this node answers them: the cluster module
//! carries bytes; this module says what they mean. A job lives on the node that accepted it
//! (its id carries that node's tag), so reading, cancelling or listing it from another node
//! is a request here. Each request and answer is a serde enum, postcard-encoded inside the
//! cluster's versioned envelope; errors cross as their HTTP status, code and message.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::read::{JobCounts, StoredDocument};
use super::{ActiveJob, Job, JobError, JobErrors, JobPage, JobService, Paging};
use crate::actors::NodeCounts;
use crate::model::{Code, ErrorCode, JobId, JobKind, TeamId};

/// What one node asks another.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// How much the node holds.
    Counts,
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
}

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// See [`Request::Counts`].
    Counts(NodeCounts),
    /// See [`Request::Page`].
    Page {
        /// The job.
        job: Box<Job>,
        /// Its counts.
        counts: JobCounts,
        /// Documents (JSON).
        documents: Vec<Vec<u8>>,
    },
    /// See [`Request::Errors`].
    Errors(JobErrors),
    /// Done.
    Done,
    /// See [`Request::Active`].
    Active(Vec<(JobId, Job)>),
    /// The request failed there.
    Failed {
        /// HTTP status.
        status: u16,
        /// Error code.
        code: String,
        /// Message.
        message: String,
    },
}

/// Encodes a request or an answer.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).unwrap_or_default()
}

/// Decodes a request or an answer.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable request or answer: {e}"))
}

/// An error from another node, as it answered.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RemoteError {
    code: Code,
    message: String,
}

impl RemoteError {
    fn new(status: u16, code: &str, message: String) -> Self {
        let code = Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == code && c.status() == status)
            .unwrap_or(Code::Unknown);
        Self { code, message }
    }
}

impl ErrorCode for RemoteError {
    fn code(&self) -> Code {
        self.code
    }
}

fn failed(e: &JobError) -> Response {
    let code = e.code();
    Response::Failed { status: code.status(), code: code.as_str().to_owned(), message: e.to_string() }
}

impl Response {
    /// The answer, or the other node's error as a [`JobError`].
    pub(super) fn ok(self) -> Result<Self, JobError> {
        match self {
            Self::Failed { status, code, message } => {
                Err(JobError::Remote(RemoteError::new(status, &code, message)))
            }
            other => Ok(other),
        }
    }
}

/// Answers other nodes' requests with this node's job service and actors.
#[derive(Debug, Clone)]
pub struct RemoteHandler {
    jobs: JobService,
}

impl RemoteHandler {
    /// A handler over `jobs`.
    pub fn new(jobs: JobService) -> Arc<Self> {
        Arc::new(Self { jobs })
    }

    async fn answer(&self, request: Request) -> Result<Response, JobError> {
        let team = |name: &str| TeamId::parse(name).map_err(|_| JobError::NotFound);
        let jobs = &self.jobs;
        Ok(match request {
            Request::Counts => Response::Counts(jobs.runtime().counts().await),
            Request::Page { team: t, id, kind, paging: (skip, limit, max_bytes) } => {
                let JobPage { job, counts, documents } =
                    jobs.local_page(&team(&t)?, id, kind, Paging { skip, limit, max_bytes }).await?;
                let documents = documents.iter().map(|d| d.as_bytes().to_vec()).collect();
                Response::Page { job: Box::new(job), counts, documents }
            }
            Request::Errors { team: t, id, kind } => {
                Response::Errors(jobs.local_errors(&team(&t)?, id, kind).await?)
            }
            Request::Cancel { team: t, id, kind } => {
                jobs.local_cancel(&team(&t)?, id, kind).await?;
                Response::Done
            }
            Request::Active { team: t, kind } => Response::Active(
                jobs.local_active(&team(&t)?, kind).await?.into_iter().map(|a| (a.id, a.job)).collect(),
            ),
        })
    }
}

impl crate::cluster::Handler for RemoteHandler {
    fn handle(&self, _from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let this = self.clone();
        Box::pin(async move {
            let request: Request = decode(&request)?;
            let response = this.answer(request).await.unwrap_or_else(|e| failed(&e));
            Ok(encode(&response))
        })
    }
}

/// Turns a remote page answer into a [`JobPage`].
pub(super) fn page_of(response: Response) -> Result<JobPage, JobError> {
    match response.ok()? {
        Response::Page { job, counts, documents } => Ok(JobPage {
            job: *job,
            counts,
            documents: documents.into_iter().map(StoredDocument::from).collect(),
        }),
        _ => Err(JobError::Internal("unexpected answer from the owning node".into())),
    }
}

/// Turns a remote active-jobs answer into the list.
pub(super) fn active_of(response: Response) -> Result<Vec<ActiveJob>, JobError> {
    match response.ok()? {
        Response::Active(list) => Ok(list.into_iter().map(|(id, job)| ActiveJob { id, job }).collect()),
        _ => Err(JobError::Internal("unexpected answer from another node".into())),
    }
}

/// Turns a remote errors answer into the list.
pub(super) fn errors_of(response: Response) -> Result<JobErrors, JobError> {
    match response.ok()? {
        Response::Errors(errors) => Ok(errors),
        _ => Err(JobError::Internal("unexpected answer from the owning node".into())),
    }
}
