//! The browser's room of the actor tree. `BrowserSupervisor` owns the Chromium pool's
//! lifecycle (dead browsers replaced between requests, every browser stopped on shutdown)
//! and the interact sessions: one linked [`BrowserSession`](session::BrowserSession) actor
//! per session, which owns its tab and is the only thing that drives it (code runs, live-view
//! frames and input are messages to it). The supervisor keeps the session table (live and
//! destroyed, by session id, by the scrapes that use the session, and by live-view token),
//! closes idle sessions, bills a session when it ends, and marks a session destroyed when its
//! actor dies.
//!
//! - [`registry`]: what the API shares with the actors about sessions;
//! - [`session`]: the session actor;
//! - [`cdp`]: the guard on a session's DevTools connection, [`cdp_bridge`] the connection
//!   carried through it;
//! - [`code`]: running a caller's code against a page, [`devtools_door`] the sandboxed
//!   code's way to it;
//! - [`live`]: the live view's page, frames and input;
//! - [`screencast`]: the live view's stream of frames.

pub mod cdp;
pub mod cdp_bridge;
pub mod cdp_scope;
pub mod code;
pub mod devtools_door;
pub mod live;
pub mod registry;
pub mod screencast;
pub mod session;

use std::collections::HashMap;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort, SupervisionEvent};
use tokio::time::Instant;

use super::Services;
use crate::model::{JobId, TeamId, time};
use crate::scrape::engine::browser::Tab;
use crate::scrape::engine::browser::launch::Liveness;
use crate::store::browser_sessions::SessionRecord;
pub use registry::{Ended, Found, Limits, Listed, LiveAccess, SessionKey, SessionView};
pub use session::{BrowserSession, SessionArgs, SessionMsg};

/// How often idle sessions and dead browsers are looked for.
const TICK: Duration = Duration::from_secs(1);
/// How long a destroyed session is remembered (answering 410).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

/// A tab brought to a scrape's page state, to become a session.
#[derive(Debug)]
pub struct Opened {
    /// Owner.
    pub team: TeamId,
    /// The scrape job; for a session made without a scrape (`POST /v2/browser`), the
    /// session's own id, which it then takes.
    pub scrape_id: JobId,
    /// Made without a scrape.
    pub standalone: bool,
    /// The tab.
    pub tab: Tab,
    /// Profile to save when the session ends (the scrape's, when it had `saveChanges`).
    pub save_profile: Option<String>,
    /// Its lifetimes and live view, where the request set them.
    pub limits: Limits,
}

/// Why a tab could not become a session.
#[derive(Debug, Clone)]
pub enum AdoptError {
    /// The maximum of concurrent sessions is reached.
    Limit,
}

/// Why a named session cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UseError {
    /// No such session of the team.
    NotFound,
    /// The team's session, destroyed.
    Destroyed,
}

/// Messages of [`BrowserSupervisor`].
#[derive(Debug)]
pub enum BrowserMsg {
    /// The session a scrape job uses, or a session by id, with its owner, if there is one.
    Find(SessionKey, RpcReplyPort<Option<(String, Found)>>),
    /// How many sessions are live.
    Live(RpcReplyPort<usize>),
    /// The team's sessions, live and destroyed (those of the last day), newest first.
    List(TeamId, RpcReplyPort<Vec<Listed>>),
    /// Makes a session of a prepared tab (or returns the one a concurrent request made).
    Adopt(Box<Opened>, RpcReplyPort<Result<SessionView, AdoptError>>),
    /// Uses the team's live session `session` for scrape `scrape`: it becomes the scrape's
    /// session too when the scrape has no live one of its own.
    Use {
        /// The session's id.
        session: String,
        /// The scrape asking.
        scrape: JobId,
        /// The caller's team.
        team: TeamId,
        /// The session, or why it cannot be used.
        reply: RpcReplyPort<Result<SessionView, UseError>>,
    },
    /// Ends a session of `team`; `None` when the team has no such live session.
    End(SessionKey, TeamId, RpcReplyPort<Option<Ended>>),
    /// What a live-view token grants, while its session lives.
    Access(String, RpcReplyPort<Option<LiveAccess>>),
    /// Marks activity on a session, by id (its idle clock restarts).
    Touch(String),
    /// The session ran an agent `prompt`: it is billed at the agent's rate.
    Prompted(String),
    /// Scrape `scrape` (of this node) uses session `session`, which lives on another node.
    BindElsewhere {
        /// The scrape.
        scrape: JobId,
        /// The other node's session.
        session: String,
    },
    /// The session on another node that a scrape of this node uses, if any.
    Elsewhere(JobId, RpcReplyPort<Option<String>>),
    /// Periodic upkeep.
    Tick,
}

struct Entry {
    team: TeamId,
    view: SessionView,
    browser: Liveness,
    started: Instant,
    created_ms: u64,
    /// Longest life, and longest time without a request.
    ttl: Duration,
    idle: Duration,
    stream_web_view: bool,
    last_activity_ms: u64,
    /// An agent prompt ran in it.
    prompted: bool,
    ended: Option<(Ended, Instant)>,
}

impl Entry {
    /// What the store keeps of it (ended by the caller when it ended).
    fn record(&self) -> SessionRecord {
        let (duration_ms, credits) = self.ended.map_or((0, 0), |(e, _)| (e.duration_ms, e.credits));
        SessionRecord {
            team: self.team.as_str().to_owned(),
            created_ms: self.created_ms,
            last_activity_ms: self.last_activity_ms,
            stream_web_view: self.stream_web_view,
            view_token: self.view.view_token.clone(),
            control_token: self.view.control_token.clone(),
            ended_ms: None,
            duration_ms,
            credits,
            prompted: self.prompted,
        }
    }

    fn listed(&self, id: &str) -> Listed {
        Listed {
            id: id.to_owned(),
            active: self.ended.is_none(),
            view_token: self.view.view_token.clone(),
            control_token: self.view.control_token.clone(),
            stream_web_view: self.stream_web_view,
            created_ms: self.created_ms,
            last_activity_ms: self.last_activity_ms,
        }
    }
}

/// State of [`BrowserSupervisor`].
pub struct BrowserState {
    services: Services,
    /// By session id.
    sessions: HashMap<String, Entry>,
    /// The session each scrape uses, by scrape id.
    by_scrape: HashMap<JobId, String>,
    /// Scrapes of this node using a session of another node (`existingSessionId`), with
    /// when they were bound; forgotten after a session's longest life.
    elsewhere: HashMap<JobId, (String, Instant)>,
}

impl std::fmt::Debug for BrowserState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserState").field("sessions", &self.sessions.len()).finish_non_exhaustive()
    }
}

/// Owner of the pool and the sessions.
#[derive(Debug)]
pub struct BrowserSupervisor;

impl BrowserState {
    fn live(&self) -> usize {
        self.sessions.values().filter(|e| e.ended.is_none()).count()
    }

    /// The stored record of a session this process does not hold (one from before a restart).
    fn stored(&self, id: &str) -> Option<SessionRecord> {
        self.services.store.browser_sessions.get(id).ok().flatten()
    }

    /// The team's sessions: those held here, and the destroyed ones the store remembers.
    fn list(&self, team: &TeamId) -> Vec<Listed> {
        let mut out: Vec<Listed> =
            self.sessions.iter().filter(|(_, e)| &e.team == team).map(|(id, e)| e.listed(id)).collect();
        for (id, record) in self.services.store.browser_sessions.all(Some(team)).unwrap_or_default() {
            if !self.sessions.contains_key(&id) && record.ended_ms.is_some() {
                out.push(Listed {
                    id,
                    active: false,
                    view_token: record.view_token,
                    control_token: record.control_token,
                    stream_web_view: record.stream_web_view,
                    created_ms: record.created_ms,
                    last_activity_ms: record.last_activity_ms,
                });
            }
        }
        out.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then_with(|| a.id.cmp(&b.id)));
        out
    }

    /// The id of the session `key` names.
    fn resolve(&self, key: &SessionKey) -> Option<String> {
        match key {
            SessionKey::Scrape(id) => self.by_scrape.get(id).cloned(),
            SessionKey::Session(session) => self.sessions.contains_key(session).then(|| session.clone()),
        }
    }

    /// The live session a scrape uses.
    fn live_of_scrape(&self, scrape: JobId) -> Option<&Entry> {
        let session = self.by_scrape.get(&scrape)?;
        self.sessions.get(session).filter(|e| e.ended.is_none())
    }

    /// Ends session `session` if its actor has stopped, or is stopping, and it is not
    /// ended yet: the actor's supervision event may still be on its way (its stop can take
    /// seconds, closing a tab of a browser that died), and a request meanwhile must find
    /// the session destroyed, not try it again.
    fn end_if_stopped(&mut self, session: &str) {
        let stopped = self.sessions.get(session).is_some_and(|e| {
            e.ended.is_none()
                && matches!(e.view.actor.get_status(), ActorStatus::Stopping | ActorStatus::Stopped)
        });
        if stopped {
            self.end(session, "its actor stopped");
        }
    }

    /// Ends session `session`: stops its actor (which closes its tab), bills it, remembers it
    /// as destroyed.
    fn end(&mut self, session: &str, why: &str) -> Option<Ended> {
        let entry = self.sessions.get_mut(session).filter(|e| e.ended.is_none())?;
        let duration_ms = u64::try_from(entry.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let actor_running = matches!(
            entry.view.actor.get_status(),
            ActorStatus::Starting | ActorStatus::Running | ActorStatus::Upgrading
        );
        // The actor closes the tab when it stops; with its browser gone there is no tab left.
        let cleanup_queued = actor_running && entry.browser.is_alive();
        let credits = registry::credits_for(duration_ms, entry.prompted);
        let ended = Ended { duration_ms, credits, cleanup_queued };
        entry.ended = Some((ended, Instant::now()));
        entry.view.actor.stop(Some(why.to_owned()));
        let mut record = entry.record();
        record.ended_ms = Some(time::now_ms());
        if let Err(e) = self.services.store.browser_sessions.put(session, &record) {
            tracing::error!(error = %e, session, "recording a browser session's end failed");
        }
        if let Err(e) = self.services.teams.charge(&entry.team, ended.credits) {
            tracing::error!(error = %e, "billing a browser session failed");
        }
        tracing::info!(
            session, scrape = %entry.view.scrape_id, duration_ms, credits = ended.credits, cleanup_queued, why,
            "browser session ended"
        );
        Some(ended)
    }
}

/// Sessions that were live when the server stopped without ending them (killed, crashed)
/// are destroyed now and billed for the time the store saw them used, at the agent's rate
/// when a prompt ran in one.
fn settle_sessions(services: &Services, now: u64, forget_before: u64) {
    let bill = |record: &SessionRecord| registry::credits_for(record.duration_ms, record.prompted);
    let marked = match services.store.browser_sessions.settle(now, forget_before, bill) {
        Ok(marked) => marked,
        Err(e) => return tracing::error!(error = %e, "reading the browser sessions failed"),
    };
    for (session, record) in &marked {
        let Ok(team) = TeamId::parse(&record.team) else { continue };
        if let Err(e) = services.teams.charge(&team, record.credits) {
            tracing::error!(error = %e, session, "billing a browser session failed");
        }
    }
    if !marked.is_empty() {
        tracing::info!(
            sessions = marked.len(),
            "browser sessions live when the server stopped are destroyed and billed"
        );
    }
}

impl Actor for BrowserSupervisor {
    type Msg = BrowserMsg;
    type State = BrowserState;
    type Arguments = Services;

    async fn pre_start(
        &self,
        myself: ActorRef<BrowserMsg>,
        services: Services,
    ) -> Result<BrowserState, ActorProcessingErr> {
        myself.send_interval(TICK, || BrowserMsg::Tick);
        let now = time::now_ms();
        let forget_before = now.saturating_sub(u64::try_from(FORGET_AFTER.as_millis()).unwrap_or(u64::MAX));
        settle_sessions(&services, now, forget_before);
        Ok(BrowserState {
            services,
            sessions: HashMap::new(),
            by_scrape: HashMap::new(),
            elsewhere: HashMap::new(),
        })
    }

    async fn post_stop(
        &self,
        _: ActorRef<BrowserMsg>,
        state: &mut BrowserState,
    ) -> Result<(), ActorProcessingErr> {
        let live: Vec<String> =
            state.sessions.iter().filter(|(_, e)| e.ended.is_none()).map(|(id, _)| id.clone()).collect();
        for id in live {
            state.end(&id, "the server is stopping");
        }
        state.services.scraper.browser().shutdown().await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<BrowserMsg>,
        msg: BrowserMsg,
        state: &mut BrowserState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            BrowserMsg::Find(key, reply) => {
                let id = state.resolve(&key);
                if let Some(id) = &id {
                    state.end_if_stopped(id);
                }
                let found = id.and_then(|id| state.sessions.get(&id)).map(|e| {
                    let found =
                        if e.ended.is_some() { Found::Destroyed } else { Found::Active(e.view.clone()) };
                    (e.team.as_str().to_owned(), found)
                });
                let found = found.or_else(|| match &key {
                    SessionKey::Session(id) => state.stored(id).map(|r| (r.team, Found::Destroyed)),
                    SessionKey::Scrape(_) => None,
                });
                let _ = reply.send(found);
            }
            BrowserMsg::Live(reply) => {
                let _ = reply.send(state.live());
            }
            BrowserMsg::List(team, reply) => {
                let _ = reply.send(state.list(&team));
            }
            BrowserMsg::Adopt(opened, reply) => {
                let answer = adopt(&myself, state, *opened).await;
                let _ = reply.send(answer);
            }
            BrowserMsg::Use { session, scrape, team, reply } => {
                state.end_if_stopped(&session);
                let answer = match state.sessions.get(&session).filter(|e| e.team == team) {
                    None if state.stored(&session).is_some_and(|r| r.team == team.as_str()) => {
                        Err(UseError::Destroyed)
                    }
                    None => Err(UseError::NotFound),
                    Some(e) if e.ended.is_some() => Err(UseError::Destroyed),
                    Some(e) => Ok(e.view.clone()),
                };
                if answer.is_ok() && state.live_of_scrape(scrape).is_none() {
                    state.by_scrape.insert(scrape, session);
                }
                let _ = reply.send(answer);
            }
            BrowserMsg::End(key, team, reply) => {
                let owned =
                    state.resolve(&key).filter(|id| state.sessions.get(id).is_some_and(|e| e.team == team));
                let _ = reply.send(owned.and_then(|id| state.end(&id, "deleted by its owner")));
            }
            BrowserMsg::Access(token, reply) => {
                let access = state.sessions.values().filter(|e| e.ended.is_none()).find_map(|e| {
                    let interactive = e.view.control_token == token;
                    (interactive || e.view.view_token == token).then(|| LiveAccess {
                        session: e.view.actor.clone(),
                        interactive,
                        stream: e.stream_web_view,
                    })
                });
                let _ = reply.send(access);
            }
            BrowserMsg::BindElsewhere { scrape, session } => {
                state.elsewhere.insert(scrape, (session, Instant::now()));
            }
            BrowserMsg::Elsewhere(scrape, reply) => {
                let _ = reply.send(state.elsewhere.get(&scrape).map(|(session, _)| session.clone()));
            }
            BrowserMsg::Touch(session) => {
                if let Some(entry) = state.sessions.get_mut(&session).filter(|e| e.ended.is_none()) {
                    entry.last_activity_ms = time::now_ms();
                    // Kept in the store too: a session ended by a crash is listed with its time
                    // up to its last request (see `SessionStore::settle`).
                    if let Err(e) = state.services.store.browser_sessions.put(&session, &entry.record()) {
                        tracing::warn!(error = %e, session, "recording a browser session's activity failed");
                    }
                }
            }
            BrowserMsg::Prompted(session) => {
                if let Some(entry) = state.sessions.get_mut(&session).filter(|e| !e.prompted) {
                    entry.prompted = true;
                    // Flushed at once (the prompt's model calls take far longer): a crash
                    // during the prompt still bills the session at the agent's rate at the
                    // next start.
                    if entry.ended.is_none()
                        && let Err(e) =
                            state.services.store.browser_sessions.put_durable(&session, &entry.record()).await
                    {
                        tracing::warn!(error = %e, session, "recording a browser session's prompt failed");
                    }
                }
            }
            BrowserMsg::Tick => {
                state.services.scraper.browser().heal().await;
                let max_life = Duration::from_secs(state.services.settings.browser.session_max_secs);
                let now = time::now_ms();
                let mut done = Vec::new();
                for (id, e) in state.sessions.iter().filter(|(_, e)| e.ended.is_none()) {
                    let idle_ms = u64::try_from(e.idle.as_millis()).unwrap_or(u64::MAX);
                    if now.saturating_sub(e.last_activity_ms) >= idle_ms {
                        done.push((id.clone(), "idle"));
                    } else if e.started.elapsed() >= e.ttl {
                        done.push((id.clone(), "at its maximum lifetime"));
                    }
                }
                for (id, why) in done {
                    state.end(&id, why);
                }
                state.sessions.retain(|_, e| e.ended.is_none_or(|(_, at)| at.elapsed() < FORGET_AFTER));
                let sessions = &state.sessions;
                state.by_scrape.retain(|_, session| sessions.contains_key(session));
                state.elsewhere.retain(|_, (_, at)| at.elapsed() < max_life);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<BrowserMsg>,
        event: SupervisionEvent,
        state: &mut BrowserState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, format!("failed: {err}")),
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, "stopped".to_owned()),
            _ => return Ok(()),
        };
        let id = state
            .sessions
            .iter()
            .find(|(_, e)| e.view.actor.get_id() == cell.get_id())
            .map(|(id, _)| id.clone());
        if let Some(id) = id {
            state.end(&id, &format!("its actor {why}"));
        }
        Ok(())
    }
}

async fn adopt(
    myself: &ActorRef<BrowserMsg>,
    state: &mut BrowserState,
    opened: Opened,
) -> Result<SessionView, AdoptError> {
    if let Some(entry) = state.live_of_scrape(opened.scrape_id) {
        // A concurrent first request made the session already: use it.
        let view = entry.view.clone();
        opened.tab.close().await;
        return Ok(view);
    }
    if state.live() >= state.services.settings.browser.max_sessions {
        opened.tab.close().await;
        return Err(AdoptError::Limit);
    }
    let browser = opened.tab.liveness();
    let args = SessionArgs {
        services: state.services.clone(),
        team: opened.team.clone(),
        tab: opened.tab,
        save_profile: opened.save_profile,
    };
    let (actor, _) = match Actor::spawn_linked(None, BrowserSession, args, myself.get_cell()).await {
        Ok(spawned) => spawned,
        Err(e) => {
            tracing::error!(error = %e, "starting a browser session failed");
            return Err(AdoptError::Limit);
        }
    };
    let view = SessionView {
        session_id: if opened.standalone {
            opened.scrape_id.to_string()
        } else {
            state.services.new_id().to_string()
        },
        scrape_id: opened.scrape_id,
        actor,
        view_token: registry::token(state.services.cluster.as_ref().map(crate::cluster::Cluster::tag)),
        control_token: registry::token(state.services.cluster.as_ref().map(crate::cluster::Cluster::tag)),
    };
    let settings = &state.services.settings.browser;
    let now = time::now_ms();
    let entry = Entry {
        team: opened.team,
        view: view.clone(),
        browser,
        started: Instant::now(),
        created_ms: now,
        ttl: opened.limits.ttl.unwrap_or(Duration::from_secs(settings.session_max_secs)),
        idle: opened.limits.idle.unwrap_or(Duration::from_secs(settings.session_idle_secs)),
        stream_web_view: opened.limits.stream_web_view,
        last_activity_ms: now,
        prompted: false,
        ended: None,
    };
    if let Err(e) = state.services.store.browser_sessions.put_durable(&view.session_id, &entry.record()).await
    {
        tracing::error!(error = %e, "recording a browser session failed");
    }
    state.by_scrape.insert(opened.scrape_id, view.session_id.clone());
    state.sessions.insert(view.session_id.clone(), entry);
    Ok(view)
}
