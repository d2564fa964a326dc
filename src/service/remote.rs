//! This node's answers to other nodes' requests (`actors::remote` defines them): pages of
//! sites it owns, fetched through its site actors, and jobs it owns, read, listed or
//! cancelled through the job service.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::read::StoredDocument;
use super::{ActiveJob, JobError, JobErrors, JobPage, JobService, Paging};
use crate::actors::domain::FetchOutcome;
use crate::actors::remote::{Request, Response, StoredPage, decode, encode};
use crate::model::{Code, ErrorCode, TeamId};

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

fn failed(e: &(impl ErrorCode + std::fmt::Display)) -> Response {
    let code = e.code();
    Response::Failed { status: code.status(), code: code.as_str().to_owned(), message: e.to_string() }
}

/// The answer, or the other node's error as a [`JobError`].
pub(super) fn ok(response: Response) -> Result<Response, JobError> {
    match response {
        Response::Failed { status, code, message } => {
            Err(JobError::Remote(RemoteError::new(status, &code, message)))
        }
        other => Ok(other),
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

    async fn answer(&self, from: String, request: Request) -> Result<Response, JobError> {
        let team = |name: &str| TeamId::parse(name).map_err(|_| JobError::NotFound);
        let jobs = &self.jobs;
        let held = matches!(request, Request::TurnHeld(_));
        // The page takes its team's slot here (see `remote::fetch_on_owner`).
        let admit = matches!(request, Request::FetchAdmitted(_));
        Ok(match request {
            Request::Counts => Response::Counts(jobs.runtime().counts().await),
            Request::Fetch(task) | Request::FetchAdmitted(task) => {
                let internal = |e: serde_json::Error| JobError::Internal(e.to_string());
                match jobs.runtime().fetch_here(*task, admit).await {
                    FetchOutcome::Page { document, links } => {
                        Response::Stored(Box::new(StoredPage::of(&document, links).map_err(internal)?))
                    }
                    outcome => Response::Fetched(serde_json::to_vec(&outcome).map_err(internal)?),
                }
            }
            Request::Sitemaps(origin) => match jobs.runtime().sitemaps_here(&origin).await {
                Some(list) => Response::Sitemaps(list),
                None => Response::moved(),
            },
            Request::Document { job, url } => match jobs.runtime().document_here(job, &url).await {
                crate::actors::domain::DocumentOutcome::Moved => Response::moved(),
                outcome => Response::Document(outcome),
            },
            Request::CancelJob(id) => {
                jobs.runtime().cancel_here(id).await;
                Response::Done
            }
            Request::Release(origin) => {
                // Let go only to a member: to a node this one still counts as down (back from
                // a cut, not met again yet), this node would still own the site in its own
                // view and start a new actor of it at its next request, beside the claimer's.
                if let Some(cluster) = &jobs.runtime().services().cluster {
                    let member = cluster.until_not(|live| !live.contains(&from));
                    let _ = tokio::time::timeout(crate::actors::remote::RELEASE_TIMEOUT, member).await;
                }
                jobs.runtime().release_here(&origin).await;
                Response::Done
            }
            Request::Turn(url) | Request::TurnHeld(url) => {
                // The site's actor here lends a turn of its pace (none while this node is out
                // of touch: the site may be another node's by now), and with `TurnHeld` a
                // place among its requests in flight, kept until the hop's answer is in; with
                // no actor here, nothing else sends the site requests from this node.
                let url = url::Url::parse(&url).map_err(|e| JobError::Internal(e.to_string()))?;
                let scope = jobs.runtime().services().scraper.engine().pace_scope();
                match url.host_str().and_then(|host| crate::scrape::engine::pace::of_host(scope, host)) {
                    Some(pace) => {
                        let lending = pace.lend_turn(&url, held).await;
                        if !pace.may_write() {
                            return Err(JobError::Internal(
                                "out of touch with the cluster: no turn lent".into(),
                            ));
                        }
                        if held {
                            Response::Lent(crate::actors::remote::keep_lent(lending))
                        } else {
                            Response::Done
                        }
                    }
                    None => Response::Done,
                }
            }
            Request::Return(id) => {
                crate::actors::remote::give_back(id);
                Response::Done
            }
            Request::Written(id) => {
                crate::actors::remote::written(id);
                Response::Done
            }
            Request::Forget(name) => {
                // A member this node never met (or forgot already) is not counted here either.
                match jobs.runtime().services().cluster.as_ref().map(|c| c.forget(&name)) {
                    Some(Err(refused)) if !matches!(refused, crate::cluster::NotForgotten::Unknown(_)) => {
                        failed(&refused)
                    }
                    _ => Response::Done,
                }
            }
            Request::Cached(key) => {
                let cache = &jobs.runtime().services().store.cache;
                let page = crate::store::CacheKey::from_bytes(&key).map(|key| cache.get(key)).transpose();
                Response::CachedPage(
                    page.map_err(|e| JobError::Internal(e.to_string()))?.flatten().map(Box::new),
                )
            }
            Request::Cache { key, page } => {
                let store = jobs.runtime().services().store.clone();
                if let Some(key) =
                    crate::store::CacheKey::from_bytes(&key).filter(|_| !store.space.is_short())
                {
                    // Off the async workers: a page's body can be megabytes.
                    let put = tokio::task::spawn_blocking(move || store.cache.put(key, &page)).await;
                    put.map_err(|e| JobError::Internal(e.to_string()))?
                        .map_err(|e| JobError::Internal(e.to_string()))?;
                }
                Response::Done
            }
            Request::Page { team: t, id, kind, paging: (skip, limit, max_bytes) } => {
                let JobPage { job, counts, documents } =
                    jobs.local_page(&team(&t)?, id, kind, Paging { skip, limit, max_bytes }).await?;
                let documents = documents.iter().map(|d| serde_bytes::ByteBuf::from(d.as_bytes())).collect();
                Response::Page { job: Box::new(job), counts, documents }
            }
            Request::Errors { team: t, id, kind } => {
                let JobErrors { failed, robots_blocked } = jobs.local_errors(&team(&t)?, id, kind).await?;
                Response::Errors { failed, robots_blocked }
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
    fn handle(&self, from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let this = self.clone();
        Box::pin(async move {
            let request: Request = decode(&request)?;
            let response = this.answer(from, request).await.unwrap_or_else(|e| failed(&e));
            Ok(encode(&response))
        })
    }
}

/// Turns a remote page answer into a [`JobPage`].
pub(super) fn page_of(response: Response) -> Result<JobPage, JobError> {
    match ok(response)? {
        Response::Page { job, counts, documents } => Ok(JobPage {
            job: *job,
            counts,
            documents: documents.into_iter().map(|d| StoredDocument::from(d.into_vec())).collect(),
        }),
        _ => Err(JobError::Internal("unexpected answer from the owning node".into())),
    }
}

/// Turns a remote active-jobs answer into the list.
pub(super) fn active_of(response: Response) -> Result<Vec<ActiveJob>, JobError> {
    match ok(response)? {
        Response::Active(list) => Ok(list.into_iter().map(|(id, job)| ActiveJob { id, job }).collect()),
        _ => Err(JobError::Internal("unexpected answer from another node".into())),
    }
}

/// Turns a remote errors answer into the list.
pub(super) fn errors_of(response: Response) -> Result<JobErrors, JobError> {
    match ok(response)? {
        Response::Errors { failed, robots_blocked } => Ok(JobErrors { failed, robots_blocked }),
        _ => Err(JobError::Internal("unexpected answer from the owning node".into())),
    }
}
