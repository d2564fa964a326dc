//! Where a job request goes: a job lives on the node that accepted it, and its id carries
//! that node's tag. On a single node, or for a job of this node, the request is answered
//! here; for another node's job it is sent there ([`JobNodes`], which the layer carrying
//! messages between nodes implements); when that node is not a live member the answer is
//! `NODE_UNAVAILABLE` naming it (the job resumes when the node comes back with its data
//! directory).

use futures::future::BoxFuture;

use super::{ActiveJob, JobError, JobErrors, JobPage, JobService, Paging};
use crate::cluster::Holder;
use crate::model::{Code, ErrorCode, JobId, JobKind, TeamId};

/// A node's name, and its answer or why it gave none.
pub type NodeAnswer<T> = (String, Result<T, JobError>);

/// A team's job of a kind on another node.
#[derive(Debug, Clone, Copy)]
pub struct JobAt<'a> {
    /// The node that owns it.
    pub node: &'a str,
    /// The team asking.
    pub team: &'a TeamId,
    /// The job.
    pub id: JobId,
    /// Crawl or batch.
    pub kind: JobKind,
}

/// How the job service reaches the node that owns a job, when that is another node.
pub trait JobNodes: Send + Sync + std::fmt::Debug {
    /// `job`, with its counts and a page of its documents.
    fn page<'a>(&'a self, job: JobAt<'a>, paging: Paging) -> BoxFuture<'a, Result<JobPage, JobError>>;
    /// The failed pages and robots-blocked URLs of `job`.
    fn errors<'a>(&'a self, job: JobAt<'a>) -> BoxFuture<'a, Result<JobErrors, JobError>>;
    /// Cancels `job`.
    fn cancel<'a>(&'a self, job: JobAt<'a>) -> BoxFuture<'a, Result<(), JobError>>;
    /// The team's running jobs of `kind` on every other live node, by node (a node that
    /// does not answer is named with its error).
    fn active<'a>(
        &'a self,
        team: &'a TeamId,
        kind: JobKind,
    ) -> BoxFuture<'a, Vec<NodeAnswer<Vec<ActiveJob>>>>;
}

/// An error from another node, as it answered.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RemoteError {
    code: Code,
    message: String,
}

impl RemoteError {
    /// The error another node answered with `status`, `code` and `message` (a code this
    /// build does not know, or with another status, is [`Code::Unknown`]).
    pub fn new(status: u16, code: &str, message: String) -> Self {
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

enum Route<'a> {
    Here,
    There(&'a dyn JobNodes, String),
}

impl JobService {
    /// A new job id, tagged with this node when it is part of a cluster.
    pub fn new_id(&self) -> JobId {
        self.runtime.services().new_id()
    }

    fn route(&self, id: JobId) -> Result<Route<'_>, JobError> {
        let (Some(cluster), Some(nodes)) = (&self.runtime.services().cluster, &self.nodes) else {
            return Ok(Route::Here);
        };
        match cluster.holder_of_tag(id.tag()) {
            Holder::Here => Ok(Route::Here),
            Holder::There(node) => Ok(Route::There(nodes.as_ref(), node)),
            Holder::Down(node) => Err(JobError::NodeUnavailable(node)),
        }
    }

    /// The team's job `id` of `kind`, wherever it lives.
    pub async fn find(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<super::Job, JobError> {
        match self.route(id)? {
            Route::Here => self.local_find(team, id, kind).await,
            Route::There(nodes, node) => {
                let job = JobAt { node: &node, team, id, kind };
                Ok(nodes.page(job, Paging { skip: 0, limit: 1, max_bytes: 1 }).await?.job)
            }
        }
    }

    /// The team's job with its counts and a page of its documents, wherever it lives.
    pub async fn page(
        &self,
        team: &TeamId,
        id: JobId,
        kind: JobKind,
        paging: Paging,
    ) -> Result<JobPage, JobError> {
        match self.route(id)? {
            Route::Here => self.local_page(team, id, kind, paging).await,
            Route::There(nodes, node) => nodes.page(JobAt { node: &node, team, id, kind }, paging).await,
        }
    }

    /// The team's job's failed pages and robots-blocked URLs, wherever it lives.
    pub async fn errors(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<JobErrors, JobError> {
        match self.route(id)? {
            Route::Here => self.local_errors(team, id, kind).await,
            Route::There(nodes, node) => nodes.errors(JobAt { node: &node, team, id, kind }).await,
        }
    }

    /// Cancels a running job of the team, wherever it lives.
    pub async fn cancel(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<(), JobError> {
        match self.route(id)? {
            Route::Here => self.local_cancel(team, id, kind).await,
            Route::There(nodes, node) => nodes.cancel(JobAt { node: &node, team, id, kind }).await,
        }
    }

    /// The team's running jobs of `kind` on every live node (nodes that do not answer are
    /// left out).
    pub async fn active(&self, team: &TeamId, kind: JobKind) -> Result<Vec<ActiveJob>, JobError> {
        let mut all = self.local_active(team, kind).await?;
        let Some(nodes) = &self.nodes else { return Ok(all) };
        for (node, answer) in nodes.active(team, kind).await {
            match answer {
                Ok(list) => all.extend(list),
                Err(e) => tracing::warn!(node = %node, error = %e, "a node's active jobs are left out"),
            }
        }
        Ok(all)
    }
}
