//! Where a job request goes: a job lives on the node that accepted it, and its id carries
//! that node's tag. On a single node, or for a job of this node, the request is answered
//! here; for another node's job it is sent there; when that node is not a live member the
//! answer is `NODE_UNAVAILABLE` naming it (the job resumes when the node comes back with
//! its data directory).

use std::time::Duration;

use super::remote;
use super::{ActiveJob, JobError, JobErrors, JobPage, JobService, Paging};
use crate::actors::remote::{Request, Response, decode, encode};
use crate::cluster::{Channel, ClusterError, Holder};
use crate::model::{JobId, JobKind, TeamId};

/// How long a request to another node may take.
const REMOTE_TIMEOUT: Duration = Duration::from_secs(30);

enum Route {
    Here,
    There(String),
}

impl JobService {
    /// A new job id, tagged with this node when it is part of a cluster.
    pub fn new_id(&self) -> JobId {
        self.runtime.services().new_id()
    }

    fn route(&self, id: JobId) -> Result<Route, JobError> {
        let Some(cluster) = &self.runtime.services().cluster else { return Ok(Route::Here) };
        match cluster.holder_of_tag(id.tag()) {
            Holder::Here => Ok(Route::Here),
            Holder::There(node) => Ok(Route::There(node)),
            Holder::Down(node) => Err(JobError::NodeUnavailable(node)),
        }
    }

    async fn ask(&self, node: &str, request: &Request) -> Result<Response, JobError> {
        let Some(cluster) = &self.runtime.services().cluster else {
            return Err(JobError::NodeUnavailable(node.to_owned()));
        };
        let answer = cluster.call(node, Channel::Jobs, encode(request), REMOTE_TIMEOUT).await.map_err(
            |e| match e {
                ClusterError::Call { reason, .. } => JobError::Internal(format!("node `{node}`: {reason}")),
                _ => JobError::NodeUnavailable(node.to_owned()),
            },
        )?;
        decode(&answer).map_err(JobError::Internal)
    }

    /// The team's job `id` of `kind`, wherever it lives.
    pub async fn find(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<super::Job, JobError> {
        match self.route(id)? {
            Route::Here => self.local_find(team, id, kind).await,
            Route::There(_) => {
                Ok(self.page(team, id, kind, Paging { skip: 0, limit: 1, max_bytes: 1 }).await?.job)
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
            Route::There(node) => {
                let paging = (paging.skip, paging.limit, paging.max_bytes);
                let request = Request::Page { team: team.as_str().to_owned(), id, kind, paging };
                remote::page_of(self.ask(&node, &request).await?)
            }
        }
    }

    /// The team's job's failed pages and robots-blocked URLs, wherever it lives.
    pub async fn errors(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<JobErrors, JobError> {
        match self.route(id)? {
            Route::Here => self.local_errors(team, id, kind).await,
            Route::There(node) => {
                let request = Request::Errors { team: team.as_str().to_owned(), id, kind };
                remote::errors_of(self.ask(&node, &request).await?)
            }
        }
    }

    /// Cancels a running job of the team, wherever it lives.
    pub async fn cancel(&self, team: &TeamId, id: JobId, kind: JobKind) -> Result<(), JobError> {
        match self.route(id)? {
            Route::Here => self.local_cancel(team, id, kind).await,
            Route::There(node) => {
                let request = Request::Cancel { team: team.as_str().to_owned(), id, kind };
                remote::ok(self.ask(&node, &request).await?).map(drop)
            }
        }
    }

    /// The team's running jobs of `kind` on every live node (nodes that do not answer are
    /// left out).
    pub async fn active(&self, team: &TeamId, kind: JobKind) -> Result<Vec<ActiveJob>, JobError> {
        let mut all = self.local_active(team, kind).await?;
        let Some(cluster) = &self.runtime.services().cluster else { return Ok(all) };
        let others: Vec<String> = cluster.live().iter().filter(|n| *n != cluster.name()).cloned().collect();
        let request = Request::Active { team: team.as_str().to_owned(), kind };
        let answers = futures::future::join_all(others.iter().map(|node| self.ask(node, &request))).await;
        for (node, answer) in others.iter().zip(answers) {
            match answer.and_then(remote::active_of) {
                Ok(list) => all.extend(list),
                Err(e) => tracing::warn!(node = %node, error = %e, "a node's active jobs are left out"),
            }
        }
        Ok(all)
    }
}
