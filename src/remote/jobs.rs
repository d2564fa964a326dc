//! Jobs across the cluster, the asking side: a job lives on the node that accepted it, so
//! reading, cancelling or listing another node's job is a request to that node
//! ([`JobsOnNodes`], the cluster's [`JobNodes`]). The answering side is [`super::answer`].

use std::time::Duration;

use futures::future::BoxFuture;

use super::messages::jobs::{Request, Response};
use super::messages::{decode, encode};
use crate::cluster::{Channel, Cluster, ClusterError};
use crate::model::{JobKind, TeamId};
use crate::service::{
    ActiveJob, JobAt, JobError, JobErrors, JobNodes, JobPage, NodeAnswer, Paging, RemoteError, StoredDocument,
};

/// How long a request to another node may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The other nodes' jobs, as this node's job service reaches them.
#[derive(Debug, Clone)]
pub struct JobsOnNodes(pub Cluster);

impl JobsOnNodes {
    /// `request` answered by `node`: its answer, or its error.
    async fn ask(&self, node: &str, request: &Request) -> Result<Response, JobError> {
        let answer =
            self.0.call(node, Channel::Jobs, encode(request), TIMEOUT).await.map_err(|e| match e {
                ClusterError::Call { reason, .. } => JobError::Internal(format!("node `{node}`: {reason}")),
                _ => JobError::NodeUnavailable(node.to_owned()),
            })?;
        match decode(&answer).map_err(JobError::Internal)? {
            Response::Failed { status, code, message } => {
                Err(RemoteError::new(status, &code, message).into())
            }
            answer => Ok(answer),
        }
    }
}

/// An answer of the kind asked for was not given.
fn unexpected(node: &str) -> JobError {
    JobError::Internal(format!("unexpected answer from node `{node}`"))
}

fn team_of(team: &TeamId) -> String {
    team.as_str().to_owned()
}

impl JobNodes for JobsOnNodes {
    fn page<'a>(&'a self, job: JobAt<'a>, paging: Paging) -> BoxFuture<'a, Result<JobPage, JobError>> {
        Box::pin(async move {
            let JobAt { node, team, id, kind } = job;
            let paging = (paging.skip, paging.limit, paging.max_bytes);
            match self.ask(node, &Request::Page { team: team_of(team), id, kind, paging }).await? {
                Response::Page { job, counts, documents } => Ok(JobPage {
                    job: *job,
                    counts,
                    documents: documents.into_iter().map(|d| StoredDocument::from(d.into_vec())).collect(),
                }),
                _ => Err(unexpected(node)),
            }
        })
    }

    fn errors<'a>(&'a self, job: JobAt<'a>) -> BoxFuture<'a, Result<JobErrors, JobError>> {
        Box::pin(async move {
            let JobAt { node, team, id, kind } = job;
            match self.ask(node, &Request::Errors { team: team_of(team), id, kind }).await? {
                Response::Errors { failed, robots_blocked } => Ok(JobErrors { failed, robots_blocked }),
                _ => Err(unexpected(node)),
            }
        })
    }

    fn cancel<'a>(&'a self, job: JobAt<'a>) -> BoxFuture<'a, Result<(), JobError>> {
        let JobAt { node, team, id, kind } = job;
        Box::pin(
            async move { self.ask(node, &Request::Cancel { team: team_of(team), id, kind }).await.map(drop) },
        )
    }

    fn active<'a>(
        &'a self,
        team: &'a TeamId,
        kind: JobKind,
    ) -> BoxFuture<'a, Vec<NodeAnswer<Vec<ActiveJob>>>> {
        Box::pin(async move {
            let others: Vec<String> = self.0.live().iter().filter(|n| *n != self.0.name()).cloned().collect();
            let request = Request::Active { team: team_of(team), kind };
            let answers = futures::future::join_all(others.iter().map(|node| self.ask(node, &request))).await;
            others
                .into_iter()
                .zip(answers)
                .map(|(node, answer)| {
                    let list = answer.and_then(|answer| match answer {
                        Response::Active(list) => {
                            Ok(list.into_iter().map(|(id, job)| ActiveJob { id, job }).collect())
                        }
                        _ => Err(unexpected(&node)),
                    });
                    (node, list)
                })
                .collect()
        })
    }
}
