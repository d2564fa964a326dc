//! `Root`: starts the three supervisors and restarts any that fails, handing out their
//! current references so callers never hold a stale one.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use super::Services;
use super::browser::{BrowserMsg, BrowserSupervisor};
use super::domains::{DomainSupervisor, DomainsMsg};
use super::janitor::{Janitor, JanitorArgs, JanitorMsg};
use super::jobs::{JobSupervisor, JobsArgs, JobsMsg};
use super::webhook::{WebhookDispatcher, WebhookMsg};

/// The supervisors' current references.
#[derive(Debug, Clone)]
pub struct Supervisors {
    /// Jobs.
    pub jobs: ActorRef<JobsMsg>,
    /// Sites.
    pub domains: ActorRef<DomainsMsg>,
    /// Clean-up.
    pub janitor: ActorRef<JanitorMsg>,
    /// Webhook delivery.
    pub webhooks: ActorRef<WebhookMsg>,
    /// The browser pool and interact sessions.
    pub browser: ActorRef<BrowserMsg>,
}

/// Messages of [`Root`].
#[derive(Debug)]
pub enum RootMsg {
    /// The supervisors' references.
    Supervisors(RpcReplyPort<Supervisors>),
}

/// Mutable state of [`Root`].
#[derive(Debug)]
pub struct RootState {
    services: Services,
    current: Supervisors,
}

/// The top of the tree.
#[derive(Debug)]
pub struct Root;

async fn spawn_domains(
    root: &ActorRef<RootMsg>,
    services: &Services,
) -> Result<ActorRef<DomainsMsg>, ActorProcessingErr> {
    Ok(Actor::spawn_linked(None, DomainSupervisor, services.clone(), root.get_cell()).await?.0)
}

async fn spawn_jobs(
    root: &ActorRef<RootMsg>,
    services: &Services,
    domains: &ActorRef<DomainsMsg>,
) -> Result<ActorRef<JobsMsg>, ActorProcessingErr> {
    let args = JobsArgs { services: services.clone(), domains: domains.clone() };
    Ok(Actor::spawn_linked(None, JobSupervisor, args, root.get_cell()).await?.0)
}

async fn spawn_janitor(
    root: &ActorRef<RootMsg>,
    services: &Services,
    jobs: &ActorRef<JobsMsg>,
) -> Result<ActorRef<JanitorMsg>, ActorProcessingErr> {
    let args = JanitorArgs { services: services.clone(), jobs: jobs.clone() };
    Ok(Actor::spawn_linked(None, Janitor, args, root.get_cell()).await?.0)
}

async fn spawn_webhooks(
    root: &ActorRef<RootMsg>,
    services: &Services,
) -> Result<ActorRef<WebhookMsg>, ActorProcessingErr> {
    Ok(Actor::spawn_linked(None, WebhookDispatcher, services.clone(), root.get_cell()).await?.0)
}

async fn spawn_browser(
    root: &ActorRef<RootMsg>,
    services: &Services,
) -> Result<ActorRef<BrowserMsg>, ActorProcessingErr> {
    Ok(Actor::spawn_linked(None, BrowserSupervisor, services.clone(), root.get_cell()).await?.0)
}

impl Actor for Root {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = Services;

    async fn pre_start(
        &self,
        myself: ActorRef<RootMsg>,
        services: Services,
    ) -> Result<RootState, ActorProcessingErr> {
        let domains = spawn_domains(&myself, &services).await?;
        let jobs = spawn_jobs(&myself, &services, &domains).await?;
        let janitor = spawn_janitor(&myself, &services, &jobs).await?;
        let webhooks = spawn_webhooks(&myself, &services).await?;
        let browser = spawn_browser(&myself, &services).await?;
        Ok(RootState { services, current: Supervisors { jobs, domains, janitor, webhooks, browser } })
    }

    async fn handle(
        &self,
        _: ActorRef<RootMsg>,
        msg: RootMsg,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RootMsg::Supervisors(reply) => {
                let _ = reply.send(state.current.clone());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RootMsg>,
        event: SupervisionEvent,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        let SupervisionEvent::ActorFailed(cell, err) = event else {
            return Ok(());
        };
        let id = cell.get_id();
        let services = state.services.clone();
        if id == state.current.domains.get_id() {
            tracing::error!(error = %err, "site supervisor failed; restarting it");
            state.current.domains = spawn_domains(&myself, &services).await?;
            // Jobs hold the old reference: restart them too; they resume from the store.
            state.current.jobs.stop(Some("site supervisor restarted".into()));
            state.current.jobs = spawn_jobs(&myself, &services, &state.current.domains).await?;
        } else if id == state.current.jobs.get_id() {
            tracing::error!(error = %err, "job supervisor failed; restarting it");
            state.current.jobs = spawn_jobs(&myself, &services, &state.current.domains).await?;
        } else if id == state.current.webhooks.get_id() {
            tracing::error!(error = %err, "webhook dispatcher failed; restarting it");
            state.current.webhooks = spawn_webhooks(&myself, &services).await?;
        } else if id == state.current.browser.get_id() {
            tracing::error!(error = %err, "browser supervisor failed; restarting it (its sessions are lost)");
            state.current.browser = spawn_browser(&myself, &services).await?;
        } else if id == state.current.janitor.get_id() {
            tracing::error!(error = %err, "janitor failed; restarting it");
            state.current.janitor = spawn_janitor(&myself, &services, &state.current.jobs).await?;
        }
        Ok(())
    }
}
