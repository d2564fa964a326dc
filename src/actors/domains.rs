//! `DomainSupervisor`: owns the [`Domain`] actors, one per site, and is the only way to
//! reach them (origin → actor). A site actor that exits when idle, or fails, is forgotten
//! and started afresh on the next lookup. A job's cancel goes to every site actor and is
//! remembered for a while, so a site actor started later refuses that job's requests too.

use std::collections::HashMap;
use std::time::Instant;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort, SupervisionEvent};
use url::Url;

use super::Services;
use super::domain::{self, Domain, DomainArgs, DomainMsg};
use crate::model::JobId;

/// Messages of the [`DomainSupervisor`].
#[derive(Debug)]
pub enum DomainsMsg {
    /// The actor of a site (`scheme://host:port`), started when needed.
    Lookup(Url, RpcReplyPort<Result<ActorRef<DomainMsg>, String>>),
    /// Forward a job's cancellation to every site.
    CancelJob(JobId),
    /// Number of live site actors.
    Count(RpcReplyPort<usize>),
    /// Another node takes the site (`scheme://host:port/`): answered once this node's actor
    /// of it, if any, has let it go ([`DomainMsg::Release`]).
    Release(String, RpcReplyPort<()>),
}

/// Mutable state of the [`DomainSupervisor`].
#[derive(Debug)]
pub struct DomainsState {
    services: Services,
    by_origin: HashMap<String, ActorRef<DomainMsg>>,
    by_actor: HashMap<ActorId, String>,
    cancelled: HashMap<JobId, Instant>,
}

/// The supervisor of site actors.
#[derive(Debug)]
pub struct DomainSupervisor;

/// The origin of a URL, the identity of its site actor.
pub fn origin_of(url: &Url) -> Option<Url> {
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    let host =
        if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_owned() };
    Url::parse(&format!("{}://{}:{}/", url.scheme(), host, port)).ok()
}

impl Actor for DomainSupervisor {
    type Msg = DomainsMsg;
    type State = DomainsState;
    type Arguments = Services;

    async fn pre_start(
        &self,
        _: ActorRef<DomainsMsg>,
        services: Services,
    ) -> Result<DomainsState, ActorProcessingErr> {
        Ok(DomainsState {
            services,
            by_origin: HashMap::new(),
            by_actor: HashMap::new(),
            cancelled: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<DomainsMsg>,
        msg: DomainsMsg,
        state: &mut DomainsState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            DomainsMsg::Lookup(origin, reply) => {
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
                let args = DomainArgs {
                    origin,
                    services: state.services.clone(),
                    cancelled: state.cancelled.clone(),
                };
                match Actor::spawn_linked(None, Domain, args, myself.get_cell()).await {
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
            DomainsMsg::CancelJob(job) => {
                domain::remember_cancel(&mut state.cancelled, job);
                for actor in state.by_origin.values() {
                    let _ = actor.cast(DomainMsg::Cancel(job));
                }
            }
            DomainsMsg::Count(reply) => {
                let _ = reply.send(state.by_origin.len());
            }
            DomainsMsg::Release(origin, reply) => match state.by_origin.get(&origin) {
                Some(actor) => {
                    let actor = actor.clone();
                    // Answered when the actor's running requests end; the supervisor goes on.
                    tokio::spawn(async move {
                        let _ = actor.call(DomainMsg::Release, None).await;
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
        _: ActorRef<DomainsMsg>,
        event: SupervisionEvent,
        state: &mut DomainsState,
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
fn leaving(actor: &ActorRef<DomainMsg>) -> bool {
    actor.get_status() >= ActorStatus::Draining
}

/// How the error begins that a request to a node's site actors gets when they are gone
/// (the node is stopping, or its tree failed): never the page's own failure.
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

/// Whether `outcome`, answered by a page's site's node, is that node's site actors being
/// gone rather than the page failing: builds before `Runtime::fetch_here` held such
/// requests answered them so during a graceful stop, and the page belongs to the site's
/// next owner.
pub(crate) fn cut_short_by_its_node(outcome: &super::domain::FetchOutcome) -> bool {
    matches!(outcome, super::domain::FetchOutcome::Failed { error, .. }
        if [gone::SUPERVISOR, gone::ACTOR, gone::STOPPED, gone::ROOT].iter().any(|g| error.contains(g)))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_stopped_nodes_answers_are_told_from_a_pages_failures() {
        use super::super::domain::FetchOutcome;
        let failed = |error: &str| FetchOutcome::Failed { code: "UNKNOWN_ERROR".into(), error: error.into() };
        // As builds before this one answered, and as this one words them.
        for error in [
            "site supervisor unavailable: Err(SendErr)",
            "actor system: root supervisor unreachable: Err(SenderError)",
            "site actor stopped before answering",
            &format!("{}: closed", gone::ACTOR),
        ] {
            assert!(cut_short_by_its_node(&failed(error)), "{error}");
        }
        for error in ["connection refused", "timed out after 30000 ms"] {
            assert!(!cut_short_by_its_node(&failed(error)), "{error}");
        }
        assert!(!cut_short_by_its_node(&FetchOutcome::Blocked));
    }
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
