//! `BrowserSession`: one interact session, owning its tab. Everything that touches the
//! session's page goes through this actor: code runs one request at a time, in arrival order,
//! in a task of the actor (so a long run does not hold up the live view), while live-view
//! frames and input are served beside it, input in arrival order. When its browser dies
//! during a run the session stops; when it stops, it abandons the run in progress (its
//! subprocesses are killed), saves its profile when asked to, and closes its tab.

use std::collections::VecDeque;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::task::JoinHandle;

use super::code::{self, CodeOutcome, Language};
use super::live::{self, Input, InputError};
use super::screencast::Screencast;
use crate::actors::Services;
use crate::model::TeamId;
use crate::scrape::engine::browser::Tab;

/// Longest a frame or an input may take.
const LIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Messages of [`BrowserSession`].
#[derive(Debug)]
pub enum SessionMsg {
    /// Runs code against the page (after the runs asked for before it).
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
    /// Where the page's DevTools connections go (for the guarded `cdpUrl`).
    Endpoint(RpcReplyPort<crate::scrape::engine::browser::tab::DevTools>),
    /// The page's screen now, as JPEG.
    Frame(RpcReplyPort<Result<Vec<u8>, String>>),
    /// A viewer of the screen as a stream of JPEG frames (the screencast starts if needed).
    Watch(RpcReplyPort<Result<tokio::sync::broadcast::Receiver<bytes::Bytes>, String>>),
    /// Input from the interactive live view.
    Input(Input, RpcReplyPort<Result<(), InputError>>),
    /// The run in progress ended (sent by the run's task).
    Ran {
        /// Its browser died during it.
        browser_died: bool,
    },
}

/// What a session starts with.
#[derive(Debug)]
pub struct SessionArgs {
    pub(super) services: Services,
    pub(super) team: TeamId,
    pub(super) tab: Tab,
    pub(super) save_profile: Option<String>,
}

/// A run waiting for the one before it.
#[derive(Debug)]
struct Run {
    code: String,
    language: Language,
    timeout: Duration,
    reply: RpcReplyPort<Result<CodeOutcome, String>>,
}

/// State of [`BrowserSession`].
#[derive(Debug)]
pub struct SessionState {
    args: SessionArgs,
    waiting: VecDeque<Run>,
    running: Option<JoinHandle<()>>,
    /// The screen's stream, while someone watches.
    screencast: Option<Screencast>,
}

/// One interact session: owns its tab.
#[derive(Debug)]
pub struct BrowserSession;

impl Actor for BrowserSession {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        _: ActorRef<SessionMsg>,
        args: SessionArgs,
    ) -> Result<SessionState, ActorProcessingErr> {
        Ok(SessionState { args, waiting: VecDeque::new(), running: None, screencast: None })
    }

    async fn post_stop(
        &self,
        _: ActorRef<SessionMsg>,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        // The callers of abandoned runs see their reply ports close.
        if let Some(run) = state.running.take() {
            run.abort();
        }
        state.waiting.clear();
        state.screencast = None;
        let args = &mut state.args;
        if let Some(name) = &args.save_profile
            && args.tab.browser_alive()
        {
            let profiles = &args.services.store.profiles;
            let base = profiles.get(&args.team, name).ok().flatten();
            match args.tab.snapshot_profile(base.as_ref()).await {
                Ok(snapshot) => {
                    if let Err(e) = profiles.put(&args.team, name, &snapshot) {
                        tracing::warn!(error = %e, "saving a session's profile failed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "reading a session's profile failed"),
            }
        }
        args.tab.dispose().await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SessionMsg>,
        msg: SessionMsg,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SessionMsg::Execute { code, language, timeout, reply } => {
                state.waiting.push_back(Run { code, language, timeout, reply });
            }
            SessionMsg::Ran { browser_died } => {
                state.running = None;
                if browser_died {
                    myself.stop(Some("its browser died".into()));
                    return Ok(());
                }
            }
            SessionMsg::Endpoint(reply) => {
                let _ = reply.send(state.args.tab.devtools());
            }
            SessionMsg::Frame(reply) => {
                let page = state.args.tab.page().clone();
                let liveness = state.args.tab.liveness();
                tokio::spawn(async move {
                    let frame = tokio::select! {
                        frame = tokio::time::timeout(LIVE_TIMEOUT, live::frame(&page)) => {
                            frame.unwrap_or_else(|_| Err("the browser did not answer in time".into()))
                        }
                        () = liveness.died() => Err("the session's browser died".into()),
                    };
                    let _ = reply.send(frame);
                });
            }
            SessionMsg::Watch(reply) => {
                let watching = state.screencast.as_ref().and_then(Screencast::watch);
                let answer = match watching {
                    Some(receiver) => Ok(receiver),
                    None => match Screencast::start(state.args.tab.page()).await {
                        Ok((screencast, receiver)) => {
                            state.screencast = Some(screencast);
                            Ok(receiver)
                        }
                        Err(e) => Err(e),
                    },
                };
                let _ = reply.send(answer);
            }
            SessionMsg::Input(input, reply) => {
                // Handled here, not in a task, so that input reaches the page in order.
                let tab = &state.args.tab;
                let sent = tokio::select! {
                    sent = tokio::time::timeout(LIVE_TIMEOUT, live::forward(tab.page(), &input)) => {
                        sent.unwrap_or_else(|_| Err(InputError::Browser("the browser did not answer in time".into())))
                    }
                    () = tab.browser_died() => Err(InputError::Browser("the session's browser died".into())),
                };
                let _ = reply.send(sent);
            }
        }
        start_next(&myself, state);
        Ok(())
    }
}

/// Starts the next waiting run when none is in progress.
fn start_next(myself: &ActorRef<SessionMsg>, state: &mut SessionState) {
    if state.running.is_some() {
        return;
    }
    // A run whose caller gave up (its request timed out or went away) is skipped.
    while state.waiting.front().is_some_and(|run| run.reply.is_closed()) {
        state.waiting.pop_front();
    }
    let Some(Run { code, language, timeout, reply }) = state.waiting.pop_front() else { return };
    let tab = &state.args.tab;
    let page = tab.page().clone();
    let liveness = tab.liveness();
    let devtools = tab.devtools().page;
    let sandbox = state.args.services.sandbox.clone();
    let myself = myself.clone();
    state.running = Some(tokio::spawn(async move {
        let work = async {
            match language {
                Language::Node => code::run_node(&page, &code, timeout).await,
                other => {
                    let url = page.url().await.ok().flatten().unwrap_or_default();
                    code::run_process(sandbox.as_ref(), other, &code, &devtools, &url, timeout).await
                }
            }
        };
        let outcome = tokio::select! {
            outcome = work => Ok(outcome),
            () = liveness.died() => Err("the session's browser died".to_owned()),
        };
        let browser_died = outcome.is_err();
        let _ = reply.send(outcome);
        let _ = myself.cast(SessionMsg::Ran { browser_died });
    }));
}
