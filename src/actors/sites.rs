//! The site actors and how jobs reach them. [`SiteSupervisor`] owns the [`Site`] actors,
//! one per site, and is the only way to them (origin → actor): a site actor that exits when
//! idle, or fails, is forgotten and started afresh on the next lookup; a job's cancel goes
//! to every site actor and is remembered for a while, so a site actor started later refuses
//! that job's requests too.
//!
//! [`Sites`] is the handle jobs, maps and sitemap discovery use: it sends a page (or a
//! sitemap, or robots.txt's sitemap question) to its site's actor wherever it lives. In a
//! cluster a site's actor lives on the node that owns the site; this module reaches the
//! other nodes only through [`Elsewhere`], which the layer that carries messages between
//! nodes implements (`remote`). A request another node sends here is answered through
//! [`Sites::here`], the same handle without the other nodes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::rpc::CallResult;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort, SupervisionEvent};
use url::Url;

use super::Services;
use super::elsewhere::Elsewhere;
use super::fetch::{DocumentOutcome, FetchOutcome, FetchTask};
use super::site::{self, Site, SiteArgs, SiteMsg};
use crate::model::{Code, JobId};
use crate::teams::{Admission, Teams};

/// Messages of the [`SiteSupervisor`].
#[derive(Debug)]
pub enum SitesMsg {
    /// The actor of a site (`scheme://host:port`), started when needed.
    Lookup(Url, RpcReplyPort<Result<ActorRef<SiteMsg>, String>>),
    /// Forward a job's cancellation to every site.
    CancelJob(JobId),
    /// Number of live site actors.
    Count(RpcReplyPort<usize>),
    /// Another node takes the site (`scheme://host:port/`): answered once this node's actor
    /// of it, if any, has let it go ([`SiteMsg::Release`]).
    Release(String, RpcReplyPort<()>),
}

/// Mutable state of the [`SiteSupervisor`].
#[derive(Debug)]
pub struct SitesState {
    services: Services,
    by_origin: HashMap<String, ActorRef<SiteMsg>>,
    by_actor: HashMap<ActorId, String>,
    cancelled: HashMap<JobId, Instant>,
}

/// The supervisor of site actors.
#[derive(Debug)]
pub struct SiteSupervisor;

/// The origin of a URL, the identity of its site actor.
pub fn origin_of(url: &Url) -> Option<Url> {
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    let host =
        if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_owned() };
    Url::parse(&format!("{}://{}:{}/", url.scheme(), host, port)).ok()
}

impl Actor for SiteSupervisor {
    type Msg = SitesMsg;
    type State = SitesState;
    type Arguments = Services;

    async fn pre_start(
        &self,
        _: ActorRef<SitesMsg>,
        services: Services,
    ) -> Result<SitesState, ActorProcessingErr> {
        Ok(SitesState {
            services,
            by_origin: HashMap::new(),
            by_actor: HashMap::new(),
            cancelled: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SitesMsg>,
        msg: SitesMsg,
        state: &mut SitesState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SitesMsg::Lookup(origin, reply) => {
                let key = origin.to_string();
                if let Some(actor) = state.by_origin.get(&key) {
                    if !leaving(actor) {
                        let _ = reply.send(Ok(actor.clone()));
                        return Ok(());
                    }
                    // An actor that stopped (idle, let go to another node, failed) is heard
                    // of here a moment later: until then a request sent to it is lost, so the
                    // site's next actor starts now (`by_actor` still names the old one).
                    state.by_origin.remove(&key);
                }
                let args =
                    SiteArgs { origin, services: state.services.clone(), cancelled: state.cancelled.clone() };
                match Actor::spawn_linked(None, Site, args, myself.get_cell()).await {
                    Ok((actor, _)) => {
                        state.by_actor.insert(actor.get_id(), key.clone());
                        state.by_origin.insert(key, actor.clone());
                        let _ = reply.send(Ok(actor));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(format!("could not start the site actor: {e}")));
                    }
                }
            }
            SitesMsg::CancelJob(job) => {
                site::remember_cancel(&mut state.cancelled, job);
                for actor in state.by_origin.values() {
                    let _ = actor.cast(SiteMsg::Cancel(job));
                }
            }
            SitesMsg::Count(reply) => {
                let _ = reply.send(state.by_origin.len());
            }
            SitesMsg::Release(origin, reply) => match state.by_origin.get(&origin) {
                Some(actor) => {
                    let actor = actor.clone();
                    // Answered when the actor's running requests end; the supervisor goes on.
                    tokio::spawn(async move {
                        let _ = actor.call(SiteMsg::Release, None).await;
                        let _ = reply.send(());
                    });
                }
                None => {
                    let _ = reply.send(());
                }
            },
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<SitesMsg>,
        event: SupervisionEvent,
        state: &mut SitesState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err)),
            _ => return Ok(()),
        };
        if let Some(origin) = state.by_actor.remove(&cell.get_id()) {
            if let Some(err) = failure {
                tracing::error!(%origin, error = %err, "site actor failed; a new one starts on the next request");
            }
            // Unless a lookup already started the site's next actor.
            if state.by_origin.get(&origin).is_some_and(|actor| actor.get_id() == cell.get_id()) {
                state.by_origin.remove(&origin);
            }
        }
        Ok(())
    }
}

/// Whether a site actor has stopped or is stopping: ractor refuses it messages from then on.
fn leaving(actor: &ActorRef<SiteMsg>) -> bool {
    actor.get_status() >= ActorStatus::Draining
}

/// Why a page or a document was not taken by this node's site actors (never the page's own
/// failure: the site's actors are stopping, or starting again after a failure).
pub(crate) mod gone {
    /// The site supervisor did not answer a lookup.
    pub(crate) const SUPERVISOR: &str = "site supervisor unavailable";
    /// The site's actor did not take the request.
    pub(crate) const ACTOR: &str = "site actor unavailable";
    /// The site's actor stopped with the request.
    pub(crate) const STOPPED: &str = "site actor stopped before answering";
    /// The actor tree itself is gone (within a `RuntimeError`'s message).
    pub(crate) const ROOT: &str = "root supervisor unreachable";
}

/// Times a page (or a sitemap) follows its site from node to node before it is given up.
pub(crate) const MOVES: usize = 30;

/// The pause before asking a site's owner again after the `attempt`th answer that the site
/// moved: the nodes' views of the members differ for a heartbeat or two while they change.
async fn pause_after_move(attempt: usize) {
    tokio::time::sleep(Duration::from_millis((50 * attempt as u64).min(500))).await;
}

/// Time allowed per sitemap document.
const SITEMAP_TIMEOUT: Duration = Duration::from_secs(15);

/// Where a site's actor is: this node's site supervisor, and the other nodes of the cluster
/// this node is part of, which may own the site.
#[derive(Debug, Clone)]
pub struct Sites {
    supervisor: ActorRef<SitesMsg>,
    elsewhere: Option<Arc<dyn Elsewhere>>,
    /// Answering another node's request: what this node's site actors answer goes back as
    /// it is, `NotTaken` and `Moved` included (the asker sends the page on).
    for_another_node: bool,
}

impl Sites {
    /// The site actors under `supervisor`, and the other nodes' through `elsewhere`.
    pub(crate) fn new(supervisor: ActorRef<SitesMsg>, elsewhere: Option<Arc<dyn Elsewhere>>) -> Self {
        Self { supervisor, elsewhere, for_another_node: false }
    }

    /// This node's site actors alone: what another node's request for a site it takes this
    /// node to own is answered with (a site this node let go answers `Moved`).
    pub fn here(&self) -> Self {
        Self { supervisor: self.supervisor.clone(), elsewhere: None, for_another_node: true }
    }

    /// Sends a page to its site's actor and waits for the outcome, calling `on_retrieved`
    /// when the response is in; a site actor that went away is looked up again, and a page
    /// answered `Moved` (the site's actor, here or on another node, let the site go while
    /// the page waited) is sent to the site's owner again, which may be this node. A page
    /// this node's site actors did not take (`NotTaken`: they stop with the node, or start
    /// again after a failure) is sent again after a pause too: a job stopping with the node
    /// stops waiting for it, and the page, still queued, is fetched when the job resumes.
    ///
    /// With `teams`, the page holds one of its team's concurrency slots while its request
    /// is out ([`Teams::admit`], from before it is queued at the site until its response is
    /// in), taken on the node that sends the request.
    pub async fn fetch(
        &self,
        mut task: FetchTask,
        teams: Option<&Arc<Teams>>,
        mut on_retrieved: impl FnMut(),
    ) -> FetchOutcome {
        let Some(origin) = Url::parse(&task.url).ok().as_ref().and_then(origin_of) else {
            return FetchOutcome::Failed {
                code: Code::BadRequest,
                error: format!("invalid URL {}", task.url),
            };
        };
        for attempt in 1..=MOVES {
            let elsewhere = match &self.elsewhere {
                Some(nodes) => nodes.fetch(&origin, &mut task, teams).await,
                None => None,
            };
            let outcome = match elsewhere {
                Some(outcome) => {
                    if !matches!(outcome, FetchOutcome::Moved) {
                        on_retrieved();
                    }
                    outcome
                }
                None => {
                    let mut admission = match teams {
                        Some(teams) => Some(admit(teams, &mut task).await),
                        None => None,
                    };
                    let mut retrieved = || {
                        admission.take();
                        on_retrieved();
                    };
                    self.fetch_here(&origin, &task, &mut retrieved).await
                }
            };
            let again = match &outcome {
                FetchOutcome::Moved => self.elsewhere.is_some(),
                FetchOutcome::NotTaken(_) => !self.for_another_node && attempt < MOVES,
                _ => false,
            };
            if !again {
                return outcome;
            }
            pause_after_move(attempt).await;
        }
        FetchOutcome::Moved
    }

    /// Sends a page to this node's actor of its site (`origin`) and waits for the outcome.
    async fn fetch_here(
        &self,
        origin: &Url,
        task: &FetchTask,
        on_retrieved: &mut impl FnMut(),
    ) -> FetchOutcome {
        let mut not_taken = String::new();
        for _ in 0..3 {
            let site = match self.lookup(origin).await {
                Ok(Ok(site)) => site,
                Ok(Err(e)) => return FetchOutcome::Failed { code: Code::Unknown, error: e },
                Err(e) => {
                    not_taken = e;
                    continue;
                }
            };
            let (retrieved, on_response) = ractor::concurrency::oneshot();
            let (reply, on_outcome) = ractor::concurrency::oneshot();
            let message = SiteMsg::Fetch {
                task: Box::new(task.clone()),
                retrieved: Some(retrieved.into()),
                reply: reply.into(),
            };
            if let Err(e) = site.cast(message) {
                not_taken = format!("{}: {e}", gone::ACTOR);
                continue;
            }
            if on_response.await.is_ok() {
                on_retrieved();
            }
            match on_outcome.await {
                Ok(outcome) => return outcome,
                // The site actor stopped (idle exit or failure) before answering.
                Err(_) => not_taken = gone::STOPPED.to_owned(),
            }
        }
        FetchOutcome::NotTaken(not_taken)
    }

    /// The actor of site `origin` on this node, started when needed: `Err` when the
    /// supervisor did not answer, `Ok(Err)` when the actor could not start.
    async fn lookup(&self, origin: &Url) -> Result<Result<ActorRef<SiteMsg>, String>, String> {
        match self.supervisor.call(|reply| SitesMsg::Lookup(origin.clone(), reply), None).await {
            Ok(CallResult::Success(found)) => Ok(found),
            other => Err(format!("{}: {other:?}", gone::SUPERVISOR)),
        }
    }

    /// The sitemaps robots.txt of `origin` names, asked of the site's actor wherever it
    /// lives (its next owner when the site moves meanwhile, or its node is lost); `None`
    /// when the site moved and no other node can be asked, or nobody answered.
    pub async fn sitemaps(&self, origin: &Url) -> Option<Vec<String>> {
        for attempt in 1..=MOVES {
            let elsewhere = match &self.elsewhere {
                Some(nodes) => nodes.sitemaps(origin).await,
                None => None,
            };
            let found = match elsewhere {
                Some(answered) => answered,
                None => self.sitemaps_here(origin).await,
            };
            if found.is_some() || self.elsewhere.is_none() {
                return found;
            }
            pause_after_move(attempt).await;
        }
        None
    }

    /// The sitemaps robots.txt of `origin` names, from this node's actor of the site;
    /// `None` when the actor let the site go to another node.
    async fn sitemaps_here(&self, origin: &Url) -> Option<Vec<String>> {
        let Ok(Ok(site)) = self.lookup(origin).await else { return Some(Vec::new()) };
        match site.call(SiteMsg::Sitemaps, Some(Duration::from_secs(20))).await {
            Ok(CallResult::Success(list)) => list,
            _ => Some(Vec::new()),
        }
    }

    /// Document `url` (a sitemap) of job `job`, read through its site's actor wherever it
    /// lives, as for [`Sites::sitemaps`]; `Moved` when the site moved and no other node can
    /// be asked.
    pub async fn document(&self, job: JobId, url: &Url) -> DocumentOutcome {
        let Some(origin) = origin_of(url) else {
            return DocumentOutcome::Failed(format!("{url} has no site"));
        };
        for attempt in 1..=MOVES {
            let elsewhere = match &self.elsewhere {
                Some(nodes) => nodes.document(job, url, &origin).await,
                None => None,
            };
            let outcome = match elsewhere {
                Some(Some(outcome)) => return outcome,
                Some(None) => None,
                None => Some(self.document_here(job, url, &origin).await),
            };
            match outcome {
                Some(DocumentOutcome::Moved) | None if self.elsewhere.is_some() => {}
                Some(outcome) => return outcome,
                None => break,
            }
            pause_after_move(attempt).await;
        }
        DocumentOutcome::Failed(format!("the node of {origin} did not answer"))
    }

    /// Reads one document through this node's actor of its site; a site actor that went
    /// away is looked up again.
    async fn document_here(&self, job: JobId, url: &Url, origin: &Url) -> DocumentOutcome {
        let timeout_ms = u64::try_from(SITEMAP_TIMEOUT.as_millis()).unwrap_or(u64::MAX);
        let mut last_error = String::new();
        for _ in 0..3 {
            let site = match self.lookup(origin).await {
                Ok(Ok(site)) => site,
                Ok(Err(e)) => return DocumentOutcome::Failed(e),
                Err(e) => {
                    last_error = e;
                    continue;
                }
            };
            let (reply, answer) = ractor::concurrency::oneshot();
            let message =
                SiteMsg::FetchDocument { job, url: url.to_string(), timeout_ms, reply: reply.into() };
            if let Err(e) = site.cast(message) {
                last_error = format!("{}: {e}", gone::ACTOR);
                continue;
            }
            match answer.await {
                Ok(outcome) => return outcome,
                // The site actor stopped (idle exit or failure) before answering.
                Err(_) => last_error = gone::STOPPED.to_owned(),
            }
        }
        DocumentOutcome::Failed(last_error)
    }

    /// Job `job` was cancelled: its requests are dropped by every site actor, here and on
    /// the other nodes.
    pub fn cancel(&self, job: JobId) {
        let _ = self.supervisor.cast(SitesMsg::CancelJob(job));
        if let Some(nodes) = &self.elsewhere {
            nodes.cancel(job);
        }
    }

    /// Lets another node take site `origin`: resolves once this node's actor of it, if any,
    /// has no request running and has stopped.
    pub async fn release(&self, origin: &str) {
        let _ = self.supervisor.call(|reply| SitesMsg::Release(origin.to_owned(), reply), None).await;
    }

    /// The number of live site actors on this node (`None` when the supervisor does not
    /// answer within `timeout`).
    pub async fn count(&self, timeout: Duration) -> Option<usize> {
        match self.supervisor.call(SitesMsg::Count, Some(timeout)).await {
            Ok(CallResult::Success(n)) => Some(n),
            _ => None,
        }
    }
}

/// Waits for one of the page's team's slots, and notes in `task` how long it waited.
pub(crate) async fn admit(teams: &Teams, task: &mut FetchTask) -> Admission {
    let admission = teams.admit(&task.team).await;
    task.queued_ms = admission.waited.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX));
    admission
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_identify_sites() {
        let o = |s: &str| origin_of(&Url::parse(s).expect("url")).expect("origin").to_string();
        assert_eq!(o("https://Example.com/a/b?c"), "https://example.com/");
        assert_eq!(o("http://example.com:8080/x"), "http://example.com:8080/");
        assert_ne!(o("http://example.com/"), o("https://example.com/"));
        assert_eq!(o("http://[::1]:81/"), "http://[::1]:81/");
    }
}
