//! `Root`: starts the supervisors and restarts any that fails, publishing their current
//! references (a watch the runtime reads, no message to the root per call) so callers
//! never hold a stale one. Restarts follow Erlang's intensity and
//! period: each waits longer than the last (from [`FIRST_BACKOFF`], doubling, up to
//! [`MAX_BACKOFF`]), and a supervisor that fails more than [`MAX_RESTARTS`] times within
//! [`RESTART_PERIOD`] is not restarted again: the root fails, which stops the server (its
//! service manager starts it anew) instead of looping on the same error.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::Services;
use super::browser::{BrowserMsg, BrowserSupervisor};
use super::janitor::{Janitor, JanitorArgs, JanitorMsg};
use super::jobs::{JobSupervisor, JobsArgs, JobsMsg};
use super::sites::{SiteSupervisor, SitesMsg};
use super::webhook::{WebhookDispatcher, WebhookMsg};

/// The supervisors' current references.
#[derive(Debug, Clone)]
pub struct Supervisors {
    /// Jobs.
    pub jobs: ActorRef<JobsMsg>,
    /// Sites.
    pub sites: ActorRef<SitesMsg>,
    /// Clean-up.
    pub janitor: ActorRef<JanitorMsg>,
    /// Webhook delivery.
    pub webhooks: ActorRef<WebhookMsg>,
    /// The browser pool and interact sessions.
    pub browser: ActorRef<BrowserMsg>,
}

/// Restarts of one supervisor allowed within [`RESTART_PERIOD`].
pub const MAX_RESTARTS: usize = 5;
/// The window in which restarts are counted.
pub const RESTART_PERIOD: Duration = Duration::from_secs(60);
/// Wait before the first restart.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest the root waits for its supervisors to stop.
const CHILDREN_STOP_WAIT: Duration = Duration::from_secs(10);
/// Longest wait before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The root's children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Child {
    /// The job supervisor.
    Jobs,
    /// The site supervisor.
    Sites,
    /// The janitor.
    Janitor,
    /// The webhook dispatcher.
    Webhooks,
    /// The browser supervisor.
    Browser,
}

/// Messages of [`Root`].
#[derive(Debug)]
pub enum RootMsg {
    /// Start a failed child again (after its back-off).
    Restart(Child),
}

/// Where the root publishes the supervisors' current references (`None` until started).
pub type Published = tokio::sync::watch::Sender<Option<Supervisors>>;

/// Mutable state of [`Root`].
#[derive(Debug)]
pub struct RootState {
    services: Services,
    current: Supervisors,
    published: Published,
    /// Recent failures of each child.
    failures: HashMap<Child, VecDeque<Instant>>,
}

/// The wait before the `n`th restart within the period (1-based).
pub fn backoff(n: usize) -> Duration {
    let factor = 1u32 << (n.saturating_sub(1)).min(16);
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// The top of the tree.
#[derive(Debug)]
pub struct Root;

async fn spawn_sites(
    root: &ActorRef<RootMsg>,
    services: &Services,
) -> Result<ActorRef<SitesMsg>, ActorProcessingErr> {
    Ok(Actor::spawn_linked(None, SiteSupervisor, services.clone(), root.get_cell()).await?.0)
}

async fn spawn_jobs(
    root: &ActorRef<RootMsg>,
    services: &Services,
    sites: &ActorRef<SitesMsg>,
) -> Result<ActorRef<JobsMsg>, ActorProcessingErr> {
    let sites = super::sites::Sites::new(sites.clone(), services.elsewhere.clone());
    let args = JobsArgs { services: services.clone(), sites };
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
    type Arguments = (Services, Published);

    async fn pre_start(
        &self,
        myself: ActorRef<RootMsg>,
        (services, published): (Services, Published),
    ) -> Result<RootState, ActorProcessingErr> {
        let sites = spawn_sites(&myself, &services).await?;
        let jobs = spawn_jobs(&myself, &services, &sites).await?;
        let janitor = spawn_janitor(&myself, &services, &jobs).await?;
        let webhooks = spawn_webhooks(&myself, &services).await?;
        let browser = spawn_browser(&myself, &services).await?;
        let current = Supervisors { jobs, sites, janitor, webhooks, browser };
        published.send_replace(Some(current.clone()));
        Ok(RootState { services, current, published, failures: HashMap::new() })
    }

    /// The supervisors' own stops run before the root's ends, so a caller of
    /// `stop_and_wait` on the root gets back a tree that has finished stopping (the
    /// browser supervisor, among others, closes its browsers there).
    async fn post_stop(
        &self,
        myself: ActorRef<RootMsg>,
        _: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        myself.stop_children_and_wait(Some("shutting down".into()), Some(CHILDREN_STOP_WAIT)).await;
        // Those that have not stopped by then are left behind (what they had not written is
        // done again at the next start, as after a crash), and named.
        let mut left = Vec::new();
        for child in myself.get_children() {
            still_running(&child, &mut left);
        }
        if !left.is_empty() {
            tracing::warn!(
                actors = %left.join(", "),
                "actors still running {} s after the stop; stopping without them",
                CHILDREN_STOP_WAIT.as_secs()
            );
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<RootMsg>,
        msg: RootMsg,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RootMsg::Restart(child) => {
                restart(&myself, state, child).await?;
                state.published.send_replace(Some(state.current.clone()));
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
        let current = &state.current;
        let child = if id == current.sites.get_id() {
            Child::Sites
        } else if id == current.jobs.get_id() {
            Child::Jobs
        } else if id == current.webhooks.get_id() {
            Child::Webhooks
        } else if id == current.browser.get_id() {
            Child::Browser
        } else if id == current.janitor.get_id() {
            Child::Janitor
        } else {
            return Ok(());
        };
        let now = Instant::now();
        let recent = state.failures.entry(child).or_default();
        recent.push_back(now);
        while recent.front().is_some_and(|&t| now.duration_since(t) > RESTART_PERIOD) {
            recent.pop_front();
        }
        let count = recent.len();
        if count > MAX_RESTARTS {
            tracing::error!(?child, error = %err, failures = count, period_secs = RESTART_PERIOD.as_secs(),
                "supervisor keeps failing; giving up and stopping the actor tree");
            return Err(
                format!("{child:?} supervisor failed {count} times in {RESTART_PERIOD:?}: {err}").into()
            );
        }
        let wait = backoff(count);
        tracing::error!(?child, error = %err, failures = count, restart_in_ms = wait.as_millis() as u64,
            "supervisor failed; restarting it");
        myself.send_after(wait, move || RootMsg::Restart(child));
        Ok(())
    }
}

/// Starts `child` again with fresh references.
async fn restart(
    myself: &ActorRef<RootMsg>,
    state: &mut RootState,
    child: Child,
) -> Result<(), ActorProcessingErr> {
    let services = state.services.clone();
    let current = &mut state.current;
    match child {
        Child::Sites => {
            current.sites = spawn_sites(myself, &services).await?;
            // Jobs hold the old reference: restart them too; they resume from the store.
            current.jobs.stop(Some("site supervisor restarted".into()));
            current.jobs = spawn_jobs(myself, &services, &current.sites).await?;
        }
        Child::Jobs => current.jobs = spawn_jobs(myself, &services, &current.sites).await?,
        Child::Webhooks => current.webhooks = spawn_webhooks(myself, &services).await?,
        // Its interact sessions are lost.
        Child::Browser => current.browser = spawn_browser(myself, &services).await?,
        Child::Janitor => current.janitor = spawn_janitor(myself, &services, &current.jobs).await?,
    }
    Ok(())
}

/// The actors under `cell` (itself included) that have not stopped: id, and name if any.
fn still_running(cell: &ractor::ActorCell, left: &mut Vec<String>) {
    if cell.get_status() != ractor::ActorStatus::Stopped {
        left.push(match cell.get_name() {
            Some(name) => format!("{} ({name}, {:?})", cell.get_id(), cell.get_status()),
            None => format!("{} ({:?})", cell.get_id(), cell.get_status()),
        });
    }
    for child in cell.get_children() {
        still_running(&child, left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off_up_to_a_cap() {
        assert_eq!(backoff(1), FIRST_BACKOFF);
        assert_eq!(backoff(2), FIRST_BACKOFF * 2);
        assert_eq!(backoff(4), FIRST_BACKOFF * 8);
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
