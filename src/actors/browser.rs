//! `BrowserSupervisor` owns the Chromium pool's lifecycle (dead browsers replaced between
//! requests, every browser stopped on shutdown) and the interact sessions: one linked
//! `BrowserSession` actor per scrape job, each owning its tab and running its code one
//! request at a time. The supervisor keeps the session table (live and destroyed, by scrape
//! id, session id and live-view token), closes idle sessions, bills a session when it ends,
//! and marks a session destroyed when its actor dies.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::time::Instant;

use super::Services;
use crate::model::{JobId, TeamId, time};
use crate::scrape::engine::browser::Tab;
use crate::sessions::code::{self, CodeOutcome, Language};
use crate::sessions::{self, Ended, Found, LiveAccess, SessionKey, SessionView};

/// How often idle sessions and dead browsers are looked for.
const TICK: Duration = Duration::from_secs(1);
/// How long a destroyed session is remembered (answering 410).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

/// A tab brought to a scrape's page state, to become a session.
#[derive(Debug)]
pub struct Opened {
    /// Owner.
    pub team: TeamId,
    /// The scrape job.
    pub scrape_id: JobId,
    /// The tab.
    pub tab: Tab,
    /// Profile to save when the session ends (the scrape's, when it had `saveChanges`).
    pub save_profile: Option<String>,
}

/// Why a tab could not become a session.
#[derive(Debug, Clone)]
pub enum AdoptError {
    /// The maximum of concurrent sessions is reached.
    Limit,
}

/// Messages of [`BrowserSupervisor`].
#[derive(Debug)]
pub enum BrowserMsg {
    /// The session of a scrape job and its owner, if there is one.
    Find(JobId, RpcReplyPort<Option<(String, Found)>>),
    /// How many sessions are live.
    Live(RpcReplyPort<usize>),
    /// Makes a session of a prepared tab (or returns the one a concurrent request made).
    Adopt(Box<Opened>, RpcReplyPort<Result<SessionView, AdoptError>>),
    /// Ends a session of `team`; `None` when the team has no such live session.
    End(SessionKey, TeamId, RpcReplyPort<Option<Ended>>),
    /// What a live-view token grants, while its session lives.
    Access(String, RpcReplyPort<Option<LiveAccess>>),
    /// Marks activity on a session (its idle clock restarts).
    Touch(JobId),
    /// Periodic upkeep.
    Tick,
}

struct Entry {
    team: TeamId,
    view: SessionView,
    page: chromiumoxide::Page,
    started: Instant,
    last_activity: Arc<AtomicU64>,
    ended: Option<(Ended, Instant)>,
}

/// State of [`BrowserSupervisor`].
pub struct BrowserState {
    services: Services,
    sessions: HashMap<JobId, Entry>,
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

    /// Ends the session of `scrape_id`: stops its actor, bills it, remembers it as destroyed.
    fn end(&mut self, scrape_id: JobId, why: &str) -> Option<Ended> {
        let entry = self.sessions.get_mut(&scrape_id).filter(|e| e.ended.is_none())?;
        let duration_ms = u64::try_from(entry.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let ended = Ended { duration_ms, credits: sessions::credits_for(duration_ms) };
        entry.ended = Some((ended, Instant::now()));
        entry.view.actor.stop(Some(why.to_owned()));
        if let Err(e) = self.services.teams.charge(&entry.team, ended.credits) {
            tracing::error!(error = %e, "billing a browser session failed");
        }
        tracing::info!(scrape = %scrape_id, duration_ms, credits = ended.credits, why, "browser session ended");
        Some(ended)
    }

    fn find_by_session(&self, session_id: &str) -> Option<JobId> {
        self.sessions.iter().find(|(_, e)| e.view.session_id == session_id).map(|(id, _)| *id)
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
        Ok(BrowserState { services, sessions: HashMap::new() })
    }

    async fn post_stop(
        &self,
        _: ActorRef<BrowserMsg>,
        state: &mut BrowserState,
    ) -> Result<(), ActorProcessingErr> {
        let live: Vec<JobId> =
            state.sessions.iter().filter(|(_, e)| e.ended.is_none()).map(|(id, _)| *id).collect();
        for id in live {
            state.end(id, "the server is stopping");
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
            BrowserMsg::Find(id, reply) => {
                let found = state.sessions.get(&id).map(|e| {
                    let found =
                        if e.ended.is_some() { Found::Destroyed } else { Found::Active(e.view.clone()) };
                    (e.team.as_str().to_owned(), found)
                });
                let _ = reply.send(found);
            }
            BrowserMsg::Live(reply) => {
                let _ = reply.send(state.live());
            }
            BrowserMsg::Adopt(opened, reply) => {
                let answer = adopt(&myself, state, *opened).await;
                let _ = reply.send(answer);
            }
            BrowserMsg::End(key, team, reply) => {
                let id = match key {
                    SessionKey::Scrape(id) => Some(id),
                    SessionKey::Session(session) => state.find_by_session(&session),
                };
                let owned = id.filter(|id| state.sessions.get(id).is_some_and(|e| e.team == team));
                let _ = reply.send(owned.and_then(|id| state.end(id, "deleted by its owner")));
            }
            BrowserMsg::Access(token, reply) => {
                let access = state.sessions.values().filter(|e| e.ended.is_none()).find_map(|e| {
                    let interactive = e.view.control_token == token;
                    (interactive || e.view.view_token == token)
                        .then(|| LiveAccess { page: e.page.clone(), interactive })
                });
                let _ = reply.send(access);
            }
            BrowserMsg::Touch(id) => {
                if let Some(entry) = state.sessions.get(&id) {
                    entry.last_activity.store(time::now_ms(), Ordering::SeqCst);
                }
            }
            BrowserMsg::Tick => {
                state.services.scraper.browser().heal().await;
                let settings = &state.services.settings.browser;
                let idle_ms = settings.session_idle_secs.saturating_mul(1000);
                let max_life = Duration::from_secs(settings.session_max_secs);
                let now = time::now_ms();
                let mut done = Vec::new();
                for (id, e) in state.sessions.iter().filter(|(_, e)| e.ended.is_none()) {
                    if now.saturating_sub(e.last_activity.load(Ordering::SeqCst)) >= idle_ms {
                        done.push((*id, "idle"));
                    } else if e.started.elapsed() >= max_life {
                        done.push((*id, "at its maximum lifetime"));
                    }
                }
                for (id, why) in done {
                    state.end(id, why);
                }
                state.sessions.retain(|_, e| e.ended.is_none_or(|(_, at)| at.elapsed() < FORGET_AFTER));
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
        let id =
            state.sessions.iter().find(|(_, e)| e.view.actor.get_id() == cell.get_id()).map(|(id, _)| *id);
        if let Some(id) = id {
            state.end(id, &format!("its actor {why}"));
        }
        Ok(())
    }
}

async fn adopt(
    myself: &ActorRef<BrowserMsg>,
    state: &mut BrowserState,
    opened: Opened,
) -> Result<SessionView, AdoptError> {
    if let Some(entry) = state.sessions.get(&opened.scrape_id).filter(|e| e.ended.is_none()) {
        // A concurrent first request made the session already: use it.
        let view = entry.view.clone();
        opened.tab.close().await;
        return Ok(view);
    }
    if state.live() >= state.services.settings.browser.max_sessions {
        opened.tab.close().await;
        return Err(AdoptError::Limit);
    }
    let page = opened.tab.page().clone();
    let last_activity = Arc::new(AtomicU64::new(time::now_ms()));
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
        session_id: uuid::Uuid::now_v7().to_string(),
        scrape_id: opened.scrape_id,
        actor,
        view_token: sessions::token(),
        control_token: sessions::token(),
    };
    let entry = Entry {
        team: opened.team,
        view: view.clone(),
        page,
        started: Instant::now(),
        last_activity,
        ended: None,
    };
    state.sessions.insert(opened.scrape_id, entry);
    Ok(view)
}

/// Messages of [`BrowserSession`].
#[derive(Debug)]
pub enum SessionMsg {
    /// Runs code against the page.
    Execute {
        /// The code.
        code: String,
        /// Its language.
        language: Language,
        /// Its time limit.
        timeout: Duration,
        /// The outcome; an error when the browser died (the session ends).
        reply: RpcReplyPort<Result<CodeOutcome, String>>,
    },
}

/// What a session starts with.
#[derive(Debug)]
pub struct SessionArgs {
    services: Services,
    team: TeamId,
    tab: Tab,
    save_profile: Option<String>,
}

/// One interact session: owns its tab.
#[derive(Debug)]
pub struct BrowserSession;

impl Actor for BrowserSession {
    type Msg = SessionMsg;
    type State = SessionArgs;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        _: ActorRef<SessionMsg>,
        args: SessionArgs,
    ) -> Result<SessionArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn post_stop(
        &self,
        _: ActorRef<SessionMsg>,
        state: &mut SessionArgs,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(name) = &state.save_profile {
            let profiles = &state.services.store.profiles;
            let base = profiles.get(&state.team, name).ok().flatten();
            match state.tab.snapshot_profile(base.as_ref()).await {
                Ok(snapshot) => {
                    if let Err(e) = profiles.put(&state.team, name, &snapshot) {
                        tracing::warn!(error = %e, "saving a session's profile failed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "reading a session's profile failed"),
            }
        }
        state.tab.dispose().await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SessionMsg>,
        msg: SessionMsg,
        state: &mut SessionArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SessionMsg::Execute { code, language, timeout, reply } => {
                let tab = &state.tab;
                let work = async {
                    match language {
                        Language::Node => code::run_node(tab.page(), &code, timeout).await,
                        other => {
                            let url = tab.page().url().await.ok().flatten().unwrap_or_default();
                            code::run_process(other, &code, &tab.devtools_url(), &url, timeout).await
                        }
                    }
                };
                let outcome = tokio::select! {
                    outcome = work => Ok(outcome),
                    () = tab.browser_died() => Err("the session's browser died".to_owned()),
                };
                if outcome.is_err() {
                    myself.stop(Some("its browser died".into()));
                }
                let _ = reply.send(outcome);
            }
        }
        Ok(())
    }
}
