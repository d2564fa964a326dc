//! The answering side of the `Jobs` channel: this node's answers to other nodes' requests
//! about sites it owns (pages fetched through its site actors, sitemaps, turns, letting a
//! site go, cached pages) and jobs it owns (read, listed or cancelled through the job
//! service).
//!
//! A request for one of this node's sites that its stop cuts short (its site actors gone,
//! or it arrived after the stop began) is not the page's failure: it is held unanswered, so
//! the asker's call fails when this node's session ends, as for a node that died, and the
//! page goes to the site's next owner once the others have judged this node down (the
//! site's spacing kept across the move).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::compat::Peer;
use super::messages::jobs::{Request, Response};
use super::messages::{decode, encode};
use crate::actors::Runtime;
use crate::actors::fetch::{DocumentOutcome, FetchOutcome};
use crate::actors::stored::StoredPage;
use crate::model::TeamId;
use crate::service::{JobError, JobErrors, JobPage, JobService, Paging};
use crate::store::CacheKey;

/// Answers other nodes' requests on the `Jobs` channel with this node's job service and
/// actors.
#[derive(Debug, Clone)]
pub struct JobsHandler {
    jobs: JobService,
}

impl JobsHandler {
    /// A handler over `jobs`.
    pub fn new(jobs: JobService) -> Arc<Self> {
        Arc::new(Self { jobs })
    }

    fn runtime(&self) -> &Runtime {
        self.jobs.runtime()
    }

    async fn answer(&self, from: String, request: Request) -> Result<Response, JobError> {
        let team = |name: &str| TeamId::parse(name).map_err(|_| JobError::NotFound);
        let runtime = self.runtime();
        let services = runtime.services();
        let internal = |e: &dyn std::fmt::Display| JobError::Internal(e.to_string());
        Ok(match request {
            Request::Counts => Response::Counts(runtime.counts().await),
            Request::Fetch(task) => self.fetch(&from, *task, false).await.map_err(|e| internal(&e))?,
            // The page takes its team's slot here (see `sites::fetch_on_owner`).
            Request::FetchAdmitted(task) => self.fetch(&from, *task, true).await.map_err(|e| internal(&e))?,
            Request::Sitemaps(origin) => {
                held_while_stopping(runtime).await;
                let origin = url::Url::parse(&origin).map_err(|e| internal(&e))?;
                let found = match runtime.sites().await {
                    Ok(sites) => sites.here().sitemaps(&origin).await,
                    Err(_) => Some(Vec::new()),
                };
                // None found may be the stop's doing.
                if found.as_ref().is_none_or(Vec::is_empty) {
                    held_while_stopping(runtime).await;
                }
                found.map_or_else(Response::moved, Response::Sitemaps)
            }
            Request::Document { job, url } => {
                held_while_stopping(runtime).await;
                let outcome = match (runtime.sites().await, url::Url::parse(&url)) {
                    (Ok(sites), Ok(url)) => sites.here().document(job, &url).await,
                    _ => DocumentOutcome::Failed(format!("cannot read {url} here")),
                };
                match outcome {
                    DocumentOutcome::Moved => Response::moved(),
                    DocumentOutcome::Failed(_) => {
                        held_while_stopping(runtime).await;
                        Response::Document(outcome)
                    }
                    outcome => Response::Document(outcome),
                }
            }
            Request::CancelJob(id) => {
                if let Ok(sites) = runtime.sites().await {
                    sites.here().cancel(id);
                }
                Response::Done
            }
            Request::Release(origin) => {
                // Let go only to a member: to a node this one still counts as down (back from
                // a cut, not met again yet), this node would still own the site in its own
                // view and start a new actor of it at its next request, beside the claimer's.
                if let Some(cluster) = &services.cluster {
                    let member = cluster.until_not(|live| !live.contains(&from));
                    let _ = tokio::time::timeout(super::sites::RELEASE_TIMEOUT, member).await;
                }
                if let Ok(sites) = runtime.sites().await {
                    sites.release(&origin).await;
                }
                Response::Done
            }
            Request::Turn(_) => {
                return Err(internal(&"a turn without its place is lent to no node of a version spoken"));
            }
            Request::TurnHeld(url) => super::turns::lend(services.scraper.engine().pace_scope(), &url)
                .await
                .map_err(|e| internal(&e))?,
            Request::Return(id) => {
                super::turns::give_back(id);
                Response::Done
            }
            Request::Written(id) => {
                super::turns::written(id);
                Response::Done
            }
            Request::Forget(name) => {
                // A member this node never met (or forgot already) is not counted here either.
                match services.cluster.as_ref().map(|c| c.forget(&name)) {
                    Some(Err(refused)) if !matches!(refused, crate::cluster::NotForgotten::Unknown(_)) => {
                        Response::failed(&refused)
                    }
                    _ => Response::Done,
                }
            }
            Request::Cached(key) => {
                let cache = &services.store.cache;
                let page = CacheKey::from_bytes(&key).map(|key| cache.get(key)).transpose();
                Response::CachedPage(page.map_err(|e| internal(&e))?.flatten().map(Box::new))
            }
            Request::Cache { key, page } => {
                let store = services.store.clone();
                if let Some(key) = CacheKey::from_bytes(&key).filter(|_| !store.space.is_short()) {
                    // Off the async workers: a page's body can be megabytes.
                    let put = tokio::task::spawn_blocking(move || store.cache.put(key, &page)).await;
                    put.map_err(|e| internal(&e))?.map_err(|e| internal(&e))?;
                }
                Response::Done
            }
            Request::Page { team: t, id, kind, paging: (skip, limit, max_bytes) } => {
                let JobPage { job, counts, documents } =
                    self.jobs.local_page(&team(&t)?, id, kind, Paging { skip, limit, max_bytes }).await?;
                let documents = documents.iter().map(|d| serde_bytes::ByteBuf::from(d.as_bytes())).collect();
                Response::Page { job: Box::new(job), counts, documents }
            }
            Request::Errors { team: t, id, kind } => {
                let JobErrors { failed, robots_blocked } =
                    self.jobs.local_errors(&team(&t)?, id, kind).await?;
                Response::Errors { failed, robots_blocked }
            }
            Request::Cancel { team: t, id, kind } => {
                self.jobs.local_cancel(&team(&t)?, id, kind).await?;
                Response::Done
            }
            Request::Active { team: t, kind } => Response::Active(
                self.jobs.local_active(&team(&t)?, kind).await?.into_iter().map(|a| (a.id, a.job)).collect(),
            ),
        })
    }

    /// A page of a site this node owns, fetched through its actor here (with `admit`, the
    /// page takes its team's slot here while its request is out), for node `from`.
    async fn fetch(
        &self,
        from: &str,
        task: crate::actors::fetch::FetchTask,
        admit: bool,
    ) -> Result<Response, serde_json::Error> {
        let runtime = self.runtime();
        held_while_stopping(runtime).await;
        let teams = admit.then(|| &runtime.services().teams);
        let outcome = match runtime.sites().await {
            Ok(sites) => sites.here().fetch(task, teams, || {}).await,
            Err(e) => FetchOutcome::NotTaken(e.to_string()),
        };
        if matches!(outcome, FetchOutcome::Failed { .. } | FetchOutcome::NotTaken(_)) {
            held_while_stopping(runtime).await;
        }
        Ok(match outcome {
            FetchOutcome::Page { document, links } => {
                Response::Stored(Box::new(StoredPage::of(&document, links)?))
            }
            FetchOutcome::NotTaken(reason) => {
                let peer = runtime.services().cluster.as_ref().and_then(|cluster| Peer::of(cluster, from));
                super::sites::not_taken_answer(peer, reason)
            }
            outcome => Response::Fetched(serde_json::to_vec(&outcome)?),
        })
    }
}

/// Never resolves once this node is stopping; at once otherwise (see the module's doc).
async fn held_while_stopping(runtime: &Runtime) {
    if runtime.is_stopping() {
        std::future::pending::<()>().await;
    }
}

impl crate::cluster::Handler for JobsHandler {
    fn handle(&self, from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let this = self.clone();
        Box::pin(async move {
            let request: Request = decode(&request)?;
            let response = this.answer(from, request).await.unwrap_or_else(|e| Response::failed(&e));
            Ok(encode(&response))
        })
    }
}
