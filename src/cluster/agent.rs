//! Each node's agent: the actor other nodes talk to, and the keeper of this node's view of
//! the cluster. It joins the process group [`GROUP`], which ractor_cluster keeps in sync
//! across connected nodes, and on every heartbeat:
//!
//! - greets agents it has not met (a `Hello` that also checks the protocol version: a node
//!   of another version is disconnected, and both sides log the two versions);
//! - pings the ones it knows, each call bounded by a timeout, so a hung peer (SIGSTOP, a
//!   cut network) is noticed even though its TCP session stays open: ractor_cluster itself
//!   has no timeout-based disconnect;
//! - marks a peer silent for `down_after` as down, drops its session, and stops placing
//!   work on it; redials seeds and known peers that are not connected, so a node that comes
//!   back rejoins by itself, and dials the nodes its peers named in their hello answers (the
//!   way nodes meet: ractor_cluster's own transitive dialling is off, since it could neither
//!   use TLS nor the node's own source address).
//!
//! Requests of the layers above arrive as `Frame::App` and run on their own task, so a slow
//! request never holds up pings.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use ractor::rpc::CallResult;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef};
use ractor_cluster::node::{NodeEventSubscription, NodeServerSessionInformation};
use ractor_cluster::{NodeServerMessage, NodeSessionMessage};

use super::Handler;
use super::batch::{Batches, lock};
use super::tls::DialError;
use super::wire::{AgentMsg, Frame, OpenError, OwnedReply as Reply, Versions, open, seal_as};

/// The process group every node's agent joins.
pub(crate) const GROUP: &str = "ferrocrawl.agents";
/// Redial disconnected peers and seeds every this many heartbeats.
const REDIAL_EVERY: u64 = 4;
/// A connection not authenticated this long after it opened is closed (ractor_cluster has
/// no time limit on authentication: a connection that never speaks, or stops half-way,
/// would keep its session and socket for good).
const UNAUTHENTICATED_FOR: Duration = Duration::from_secs(10);

/// Sessions opened and not authenticated yet, by node id: their actor and when they opened.
type Opened = HashMap<u64, (ActorRef<NodeSessionMessage>, Instant)>;

/// [`Opened`], kept up to date by [`Opening`], the node server's event subscription.
pub(crate) type Unauthenticated = std::sync::Mutex<Opened>;

/// Tells [`Unauthenticated`] of the sessions the node server opens, authenticates and ends,
/// and the [`Batches`] of the sessions that end (the calls that went through them are lost).
pub(crate) struct Opening(pub Arc<Unauthenticated>, pub Arc<Batches>);

impl Opening {
    fn update(&self, change: impl FnOnce(&mut Opened)) {
        change(&mut self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    }
}

impl NodeEventSubscription for Opening {
    fn node_session_opened(&self, ses: NodeServerSessionInformation) {
        self.update(|open| {
            open.insert(ses.node_id, (ses.actor, Instant::now()));
        });
    }

    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        self.update(|open| {
            open.remove(&ses.node_id);
        });
        self.1.session_ended(ses.node_id);
    }

    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        self.update(|open| {
            open.remove(&ses.node_id);
        });
    }
}

/// A peer as this node knows it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    /// Its cluster address.
    pub address: String,
    /// Its agent.
    pub actor: ActorRef<AgentMsg>,
    /// When it last answered.
    pub last_heard: Instant,
    /// Whether it is a live member.
    pub up: bool,
    /// Down, and its address refused a connection since: its process is not running (see
    /// [`super::quorum`]). Cleared when it answers again, not when its port opens (as
    /// [`Shared::refused`] is): a restarted node listens a moment before it answers, and
    /// counting it silent meanwhile would put the survivors of a kill and a freeze in the
    /// minority for that moment.
    pub stopped: bool,
    /// The protocol version it and this node speak to each other: the older of theirs.
    pub version: u32,
    /// The addresses of the members it counted live at its latest answer.
    pub hears: Vec<String>,
}

/// What the agent and the [`super::Cluster`] handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub name: String,
    pub address: String,
    pub seeds: Vec<String>,
    pub heartbeat: Duration,
    pub down_after: Duration,
    /// Only the side of a split holding most of the members fetches (see [`super::quorum`]).
    pub keep_majority: bool,
    pub peers: RwLock<BTreeMap<String, Peer>>,
    pub handlers: RwLock<HashMap<u8, Arc<dyn Handler>>>,
    pub node_server: ActorRef<NodeServerMessage>,
    /// How this node opens connections (plain or TLS).
    pub dialer: super::tls::Dialer,
    /// Addresses whose latest dial was refused (nothing listened there).
    pub refused: std::sync::Mutex<HashSet<String>>,
    /// When this node last answered each peer's ping or hello: the peer counts this node
    /// as answering (and so may fetch its own sites) until `down_after` past that answer's
    /// arrival (see [`super::Cluster::quiet`]).
    pub answered: std::sync::Mutex<HashMap<String, Instant>>,
    /// Addresses of nodes the peers know, to dial when not connected.
    pub heard_of: RwLock<std::collections::BTreeSet<String>>,
    /// Addresses of the members an operator said are gone for good ([`forget`]), until a
    /// node answers from one again; kept on disk in `book` (read at start).
    pub forgotten: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Where `forgotten` is kept on disk (this node's data directory).
    pub book: crate::store::members::ForgottenMembers,
    /// Live members (this node included), sorted; changes are announced.
    pub live: tokio::sync::watch::Sender<Arc<Vec<String>>>,
    /// The protocol versions this node speaks.
    pub versions: Versions,
    /// Whether this node stands aside from a partial cut ([`super::quorum::stands_aside`]),
    /// as of the latest judgement (each heartbeat and answer; a member found stopped in
    /// between counts at the next, which keeps this node aside that much longer at most).
    pub aside: std::sync::atomic::AtomicBool,
    /// When this process last ran its heartbeat, and when it last woke from a pause.
    pub wake: std::sync::Mutex<Wake>,
    /// Sessions opened and not authenticated yet.
    pub unauthenticated: Arc<Unauthenticated>,
    /// Calls to peers and answers to theirs, many to a message.
    pub batches: Arc<Batches>,
}

/// Pauses of this process seen from its heartbeat. A run more than half of `down_after`
/// after the one before means the process did not run meanwhile (SIGSTOP, a starved or
/// suspended machine): its peers' silence over that time is its own, not theirs. So a
/// woken node does not judge its peers down for it (each gets `down_after` from the wake to
/// answer), and it is out of touch for a while ([`super::Cluster::in_touch`]). Half, not
/// all of it: the peers count their silence from this node's last answer, which may come
/// a ping interval or more before its last run, so a pause a little shorter than
/// `down_after` can already have them judge it down.
#[derive(Debug)]
pub(crate) struct Wake {
    /// The latest heartbeat (or judgement) this process ran.
    last_run: Instant,
    /// When it last found it had been paused.
    woke_at: Option<Instant>,
}

impl Wake {
    pub(crate) fn new() -> Self {
        Self { last_run: Instant::now(), woke_at: None }
    }

    /// Notes that the process runs at `now`: the pause before it, when it was one (longer
    /// than half of `down_after`), and when the process last woke.
    fn note(&mut self, now: Instant, down_after: Duration) -> (Option<Duration>, Option<Instant>) {
        let paused = now.saturating_duration_since(self.last_run);
        let pause = (paused > down_after / 2).then_some(paused);
        if pause.is_some() {
            self.woke_at = Some(now);
        }
        self.last_run = self.last_run.max(now);
        (pause, self.woke_at)
    }
}

/// Notes that the process runs at `now`, and returns when it last woke from a pause
/// (`now` itself when it has just found one).
pub(crate) fn woke_at(shared: &Shared, now: Instant) -> Option<Instant> {
    let mut wake = shared.wake.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (pause, woke) = wake.note(now, shared.down_after);
    if let Some(paused) = pause {
        tracing::warn!(
            paused_ms = paused.as_millis() as u64,
            "this process did not run for over half of down_after_ms (frozen or starved): out of touch until the members answer again"
        );
    }
    woke
}

impl std::fmt::Debug for dyn Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handler")
    }
}

/// What a greeting or a ping found out.
#[derive(Debug)]
pub(crate) enum Heard {
    /// A newly seen agent answered its hello (or not): its name, address, the addresses of
    /// its live peers, and the version it answered in.
    Hello { actor: ActorRef<AgentMsg>, answer: Result<(String, String, Vec<String>, u32), CallError> },
    /// A known peer answered its ping (or not), naming the members it hears.
    Pong { name: String, ok: bool, hears: Option<Vec<String>> },
}

pub(crate) struct Agent;

pub(crate) struct AgentState {
    shared: Arc<Shared>,
    /// Agents being greeted, by actor id.
    greeting: HashSet<ActorId>,
    /// Peers being pinged.
    pinging: HashSet<String>,
    /// Agents that were refused (another protocol version), by actor id.
    refused: HashSet<ActorId>,
    ticks: u64,
}

impl std::fmt::Debug for AgentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentState").field("ticks", &self.ticks).finish()
    }
}

impl Actor for Agent {
    type Msg = AgentMsg;
    type State = AgentState;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        myself: ActorRef<AgentMsg>,
        shared: Arc<Shared>,
    ) -> Result<AgentState, ActorProcessingErr> {
        ractor::pg::join(GROUP.to_owned(), vec![myself.get_cell()]);
        myself.send_interval(shared.heartbeat, || AgentMsg::Tick);
        Ok(AgentState {
            shared,
            greeting: HashSet::new(),
            pinging: HashSet::new(),
            refused: HashSet::new(),
            ticks: 0,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<AgentMsg>,
        msg: AgentMsg,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AgentMsg::Call(bytes, reply) => answer(&state.shared, bytes, reply),
            AgentMsg::Cast(bytes) => match open::<Frame>(&bytes, state.shared.versions) {
                Ok((from, Frame::Requests(items), _)) => {
                    state.shared.batches.requests(&state.shared, from, items);
                }
                Ok(_) => tracing::debug!("a message between nodes that is not a batch came as a cast"),
                Err(e) => tracing::warn!(error = %e, "unreadable message from another node"),
            },
            AgentMsg::Tick => tick(&myself, state).await,
            AgentMsg::Heard(heard) => heard_from(state, heard).await,
        }
        Ok(())
    }
}

/// Answers a call from another node.
fn answer(shared: &Arc<Shared>, bytes: Vec<u8>, reply: ractor::RpcReplyPort<Vec<u8>>) {
    // Answered in the version the call came in (the older node's, between two versions).
    let (from, frame, version) = match open::<Frame>(&bytes, shared.versions) {
        Ok(opened) => opened,
        Err(e) => {
            if let OpenError::Version { .. } = e {
                tracing::error!(error = %e, "refusing a node of another protocol version");
            }
            // Answered in our version, so the caller can see which one it is.
            let _ = reply.send(seal_as(shared.versions.own, &shared.name, &Reply::Pong));
            return;
        }
    };
    if matches!(frame, Frame::Hello { .. } | Frame::Ping)
        && let Ok(mut answered) = shared.answered.lock()
    {
        answered.insert(from.clone(), Instant::now());
    }
    match frame {
        Frame::Hello { .. } => {
            let peers = live_addresses(shared).into_iter().collect();
            let hello = Reply::Hello { address: shared.address.clone(), peers };
            let _ = reply.send(seal_as(version, &shared.name, &hello));
        }
        Frame::Ping => {
            let _ = reply.send(seal_as(version, &shared.name, &Reply::Pong));
        }
        Frame::Collect => shared.batches.collected(&shared.name, &from, version, reply),
        Frame::Requests(items) => {
            // Sent as a cast by this build; as a call, acknowledged at once all the same.
            shared.batches.requests(shared, from, items);
            let _ = reply.send(seal_as(version, &shared.name, &Reply::Pong));
        }
        Frame::App { channel, body } => {
            let shared = Arc::clone(shared);
            let handler = shared.handlers.read().ok().and_then(|h| h.get(&channel).cloned());
            tokio::spawn(async move {
                let result = match handler {
                    Some(handler) => handler.handle(from, body).await,
                    None => Err(format!("nothing serves channel {channel} on this node yet")),
                };
                let answer = Reply::App(result.map(serde_bytes::ByteBuf::from));
                let _ = reply.send(seal_as(version, &shared.name, &answer));
            });
        }
    }
}

/// Why a call to another node's agent got no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The node answered in a protocol version this node does not speak.
    #[error(transparent)]
    Refused(OpenError),
    /// No answer, or none that could be read.
    #[error("{0}")]
    Silent(String),
}

/// Sends `frame` to `actor` in protocol version `version` and opens the answer: the
/// sender, the version it answered in, and the reply.
pub(crate) async fn call(
    shared: &Shared,
    version: u32,
    actor: &ActorRef<AgentMsg>,
    frame: &Frame,
    timeout: Duration,
) -> Result<(String, u32, Reply), CallError> {
    let answer =
        call_sealed(&shared.name, version, actor, frame, timeout).await.map_err(CallError::Silent)?;
    match open::<Reply>(&answer, shared.versions) {
        Ok((from, reply, v)) => Ok((from, v, reply)),
        Err(e @ OpenError::Version { .. }) => Err(CallError::Refused(e)),
        Err(e) => Err(CallError::Silent(e.to_string())),
    }
}

/// Sends `frame` to `actor` in protocol version `version`; the answer as it came (an
/// envelope holding a reply).
pub(crate) async fn call_sealed(
    name: &str,
    version: u32,
    actor: &ActorRef<AgentMsg>,
    frame: &Frame,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let sealed = seal_as(version, name, frame);
    match actor.call(|port| AgentMsg::Call(sealed, port), Some(timeout)).await {
        Ok(CallResult::Success(bytes)) => Ok(bytes),
        Ok(CallResult::Timeout) => Err(format!("no answer within {} ms", timeout.as_millis())),
        Ok(CallResult::SenderError) => Err("the node dropped the call".to_owned()),
        Err(e) => Err(format!("the node is unreachable: {e}")),
    }
}

async fn tick(myself: &ActorRef<AgentMsg>, state: &mut AgentState) {
    state.ticks += 1;
    woke_at(&state.shared, Instant::now());
    let shared = Arc::clone(&state.shared);
    shared.batches.tick(&shared.name, shared.heartbeat, 2 * shared.down_after + shared.heartbeat);
    let known: HashSet<ActorId> =
        shared.peers.read().map(|p| p.values().map(|peer| peer.actor.get_id()).collect()).unwrap_or_default();
    for cell in ractor::pg::get_members(&GROUP.to_owned()) {
        let id = cell.get_id();
        if id.is_local() || known.contains(&id) || state.refused.contains(&id) || !state.greeting.insert(id) {
            continue;
        }
        let actor = ActorRef::<AgentMsg>::from(cell);
        let (shared, me) = (Arc::clone(&shared), myself.clone());
        tokio::spawn(async move {
            let frame = Frame::Hello { address: shared.address.clone() };
            let mut version = shared.versions.own;
            let answer = loop {
                match call(&shared, version, &actor, &frame, shared.down_after).await {
                    Ok((name, v, Reply::Hello { address, peers })) => break Ok((name, address, peers, v)),
                    // A node of an older version refuses a hello it cannot read, answering in
                    // its own version: greet it again in that one when this node speaks it.
                    Ok((_, v, Reply::Pong)) if v < version && shared.versions.speaks(v) => version = v,
                    Ok(_) => break Err(CallError::Silent("unexpected answer to hello".to_owned())),
                    Err(e) => break Err(e),
                }
            };
            let _ = me.cast(AgentMsg::Heard(Heard::Hello { actor, answer }));
        });
    }
    let peers: Vec<(String, ActorRef<AgentMsg>, u32)> = shared
        .peers
        .read()
        .map(|p| p.iter().map(|(n, peer)| (n.clone(), peer.actor.clone(), peer.version)).collect())
        .unwrap_or_default();
    for (name, actor, version) in peers {
        if !state.pinging.insert(name.clone()) {
            continue;
        }
        let (shared, me) = (Arc::clone(&shared), myself.clone());
        tokio::spawn(async move {
            // A hello, answered by every version, whose answer names the members the peer
            // hears (see `quorum::stands_aside`).
            let hello = Frame::Hello { address: shared.address.clone() };
            let (ok, hears) = match call(&shared, version, &actor, &hello, shared.down_after).await {
                Ok((_, _, Reply::Hello { peers, .. })) => (true, Some(peers)),
                Ok((_, _, Reply::Pong)) => (true, None),
                _ => (false, None),
            };
            let _ = me.cast(AgentMsg::Heard(Heard::Pong { name, ok, hears }));
        });
    }
    judge(&shared).await;
    if state.ticks % REDIAL_EVERY == 1 {
        redial(&shared).await;
        close_unauthenticated(&shared);
    }
}

async fn heard_from(state: &mut AgentState, heard: Heard) {
    let shared = Arc::clone(&state.shared);
    match heard {
        Heard::Hello { actor, answer } => {
            state.greeting.remove(&actor.get_id());
            match answer {
                Ok((name, address, known, version)) if name != shared.name => {
                    tracing::info!(node = %name, %address, protocol = version, "met a node of the cluster");
                    unforget(&shared, &address);
                    let hears = known.clone();
                    // The nodes it knows that this node has neither met nor heard of are
                    // dialled now (a member met already has a session: a second one would
                    // make ractor_cluster close one of the two, and the calls on it).
                    let met: HashSet<String> = shared
                        .peers
                        .read()
                        .map(|p| p.values().map(|peer| peer.address.clone()).collect())
                        .unwrap_or_default();
                    let new: Vec<String> = match shared.heard_of.write() {
                        Ok(mut heard_of) => known
                            .into_iter()
                            .filter(|a| {
                                *a != shared.address && heard_of.insert(a.clone()) && !met.contains(a)
                            })
                            .collect(),
                        Err(_) => Vec::new(),
                    };
                    for address in new {
                        dial(&shared, address);
                    }
                    if let Ok(mut peers) = shared.peers.write() {
                        let peer = Peer {
                            hears,
                            address,
                            actor,
                            last_heard: Instant::now(),
                            up: false,
                            stopped: false,
                            version,
                        };
                        peers.insert(name, peer);
                    }
                    judge(&shared).await;
                }
                Ok((name, ..)) => {
                    tracing::error!(node = %name, "another node uses this node's name; ignoring it")
                }
                Err(CallError::Refused(e)) => {
                    tracing::error!(error = %e, "refusing a node of another protocol version; disconnecting it");
                    state.refused.insert(actor.get_id());
                    disconnect(&shared, actor.get_id().node()).await;
                }
                Err(e) => tracing::debug!(error = %e, "a node did not answer its hello yet"),
            }
        }
        Heard::Pong { name, ok, hears } => {
            state.pinging.remove(&name);
            if ok
                && let Ok(mut peers) = shared.peers.write()
                && let Some(peer) = peers.get_mut(&name)
            {
                peer.last_heard = Instant::now();
                if let Some(hears) = hears {
                    peer.hears = hears;
                }
            }
            judge(&shared).await;
        }
    }
}

/// Updates who is up and announces the live members when they change.
async fn judge(shared: &Arc<Shared>) {
    let now = Instant::now();
    // Silence during this process's own pause is not held against a peer.
    let woke = woke_at(shared, now);
    let mut went_down = Vec::new();
    let live = {
        let Ok(mut peers) = shared.peers.write() else { return };
        for (name, peer) in peers.iter_mut() {
            let heard = woke.map_or(peer.last_heard, |at| peer.last_heard.max(at));
            let up = now.duration_since(heard) <= shared.down_after;
            if up != peer.up {
                if up {
                    tracing::info!(node = %name, "node is a live member");
                } else {
                    tracing::warn!(node = %name, silent_ms = now.duration_since(peer.last_heard).as_millis() as u64,
                        "node stopped answering; it is out of the cluster");
                    went_down.push((peer.actor.get_id().node(), peer.address.clone()));
                }
                peer.up = up;
                peer.stopped &= !up;
            }
        }
        let mut live: Vec<String> = peers.iter().filter(|(_, p)| p.up).map(|(n, _)| n.clone()).collect();
        live.push(shared.name.clone());
        live.sort();
        // Judged here, where what it reads changes (members up and down, what they hear),
        // not at each request's write.
        note_aside(shared, &peers);
        live
    };
    shared.live.send_if_modified(|current| {
        let changed = **current != live;
        if changed {
            *current = Arc::new(live);
        }
        changed
    });
    for (node, address) in went_down {
        disconnect(shared, node).await;
        // Dialled at once: a refused connection tells a stopped node from a silent one.
        dial(shared, address);
    }
}

/// Why a member was not forgotten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotForgotten {
    /// No member of that name.
    #[error("no member named `{0}`")]
    Unknown(String),
    /// The member is live.
    #[error("member `{0}` is live; only a member that is down can be forgotten")]
    Live(String),
    /// This node itself.
    #[error("node `{0}` cannot forget itself")]
    Itself(String),
}

/// Forgets member `name`, which is down and, as the operator says, gone for good: it no
/// longer counts among the members that may be running ([`super::quorum`]), and this node
/// stops dialling it (a seed is still dialled). Should it come back, it joins again as any
/// node does, met through a seed or dialling its own.
pub(crate) fn forget(shared: &Shared, name: &str) -> Result<(), NotForgotten> {
    if name == shared.name {
        return Err(NotForgotten::Itself(name.to_owned()));
    }
    let address = {
        let mut peers = shared.peers.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        match peers.get(name) {
            None => return Err(NotForgotten::Unknown(name.to_owned())),
            Some(peer) if peer.up => return Err(NotForgotten::Live(name.to_owned())),
            Some(_) => peers.remove(name).map(|peer| peer.address).unwrap_or_default(),
        }
    };
    tracing::warn!(node = %name, %address, "member forgotten: it no longer counts among the cluster's members");
    if let Ok(mut heard_of) = shared.heard_of.write() {
        heard_of.remove(&address);
    }
    lock(&shared.answered).remove(name);
    let mut forgotten = lock(&shared.forgotten);
    forgotten.insert(address);
    keep(shared, &forgotten);
    drop(forgotten);
    // What it changes (the side that fetches) is judged at once, not at the next heartbeat.
    if let Ok(peers) = shared.peers.read() {
        note_aside(shared, &peers);
    }
    Ok(())
}

/// A node answered from `address`: not forgotten any more, here and on disk.
fn unforget(shared: &Shared, address: &str) {
    let mut forgotten = lock(&shared.forgotten);
    if forgotten.remove(address) {
        keep(shared, &forgotten);
    }
}

/// Writes the forgotten addresses to disk (rare: an operator's call, or a forgotten node
/// back), so a restart of this node still leaves them out.
fn keep(shared: &Shared, forgotten: &std::collections::BTreeSet<String>) {
    if let Err(e) = shared.book.save(forgotten) {
        tracing::warn!(error = %e, "the forgotten members could not be written to disk; a restart counts them again");
    }
}

/// Notes whether this node stands aside from a partial cut, with `peers` as they are now
/// ([`super::quorum::stands_aside`]).
fn note_aside(shared: &Shared, peers: &BTreeMap<String, Peer>) {
    let seen = peers.iter().map(|(name, p)| super::quorum::Seen::of(name, p));
    shared.aside.store(super::quorum::stands_aside(&shared.name, seen), std::sync::atomic::Ordering::Relaxed);
}

/// Drops the session with node `node_id` (a hung peer keeps its TCP session open).
async fn disconnect(shared: &Shared, node_id: u64) {
    if let Ok(CallResult::Success(sessions)) =
        shared.node_server.call(NodeServerMessage::GetSessions, Some(Duration::from_secs(1))).await
        && let Some(session) = sessions.get(&node_id)
    {
        session.actor.stop(Some("peer stopped answering".into()));
    }
}

/// Closes the sessions not authenticated within [`UNAUTHENTICATED_FOR`] of opening.
fn close_unauthenticated(shared: &Shared) {
    let now = Instant::now();
    let late: Vec<ActorRef<NodeSessionMessage>> = {
        let mut open = shared.unauthenticated.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let late: Vec<u64> = open
            .iter()
            .filter(|(_, (_, since))| now.duration_since(*since) >= UNAUTHENTICATED_FOR)
            .map(|(id, _)| *id)
            .collect();
        late.iter().filter_map(|id| open.remove(id)).map(|(actor, _)| actor).collect()
    };
    for actor in late {
        tracing::warn!(
            session = %actor.get_id(),
            within_s = UNAUTHENTICATED_FOR.as_secs(),
            "a cluster connection did not authenticate in time after opening; closing it"
        );
        actor.stop(Some("not authenticated in time".into()));
    }
}

/// The cluster addresses of the peers that are live members now.
fn live_addresses(shared: &Shared) -> HashSet<String> {
    let Ok(peers) = shared.peers.read() else { return HashSet::new() };
    peers.values().filter(|p| p.up).map(|p| p.address.clone()).collect()
}

/// The addresses this node has a session with: each session's far end, and the cluster
/// address its peer gave when it authenticated. `None` when the node server does not answer.
pub(crate) async fn in_session(server: &ActorRef<NodeServerMessage>) -> Option<HashSet<String>> {
    match server.call(NodeServerMessage::GetSessions, Some(Duration::from_secs(1))).await {
        Ok(CallResult::Success(sessions)) => Some(
            sessions
                .into_values()
                .flat_map(|s| [Some(s.peer_addr), s.peer_name.map(|name| name.connection_string)])
                .flatten()
                .collect(),
        ),
        _ => None,
    }
}

/// Dials the seeds and known peers that are not connected now.
async fn redial(shared: &Arc<Shared>) {
    let Some(connected) = in_session(&shared.node_server).await else { return };
    let up = live_addresses(shared);
    let mut targets: Vec<String> = shared.seeds.clone();
    if let Ok(peers) = shared.peers.read() {
        targets.extend(peers.values().map(|p| p.address.clone()));
    }
    if let Ok(heard_of) = shared.heard_of.read() {
        targets.extend(heard_of.iter().cloned());
    }
    targets.sort();
    targets.dedup();
    for target in targets {
        if target == shared.address || up.contains(&target) || connected.contains(&target) {
            continue;
        }
        dial(shared, target);
    }
}

/// Dials `address` on a task of its own.
fn dial(shared: &Arc<Shared>, address: String) {
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let result = shared.dialer.dial(&shared.node_server, &address).await;
        dialled(&shared, &address, &result);
        if let Err(e) = result {
            tracing::debug!(peer = %address, error = %e, "could not reach a cluster peer yet");
        }
    });
}

/// Notes what a dial of `address` found. Refused, nothing listens there: the peers at that
/// address that are down are not running ([`Peer::stopped`]), and the address counts as
/// refusing until a dial of it is not refused (opened, or silent: it may be running).
pub(crate) fn dialled(shared: &Shared, address: &str, result: &Result<(), DialError>) {
    let refused = matches!(result, Err(DialError::Refused));
    if let Ok(mut addresses) = shared.refused.lock() {
        if refused {
            addresses.insert(address.to_owned());
        } else {
            addresses.remove(address);
        }
    }
    if !refused {
        return;
    }
    let Ok(mut peers) = shared.peers.write() else { return };
    for (name, peer) in peers.iter_mut().filter(|(_, p)| p.address == address && !p.up && !p.stopped) {
        tracing::info!(node = %name, %address, "nothing listens at a down node's address: it is not running");
        peer.stopped = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_run_is_a_pause_and_marks_the_wake() {
        let down_after = Duration::from_secs(2);
        let start = Instant::now();
        let mut wake = Wake { last_run: start, woke_at: None };
        assert_eq!(wake.note(start + Duration::from_millis(500), down_after), (None, None));
        // Over half of down_after: the peers may already count this node as down.
        let early = start + Duration::from_millis(1_700);
        assert_eq!(wake.note(early, down_after), (Some(Duration::from_millis(1_200)), Some(early)));
        let mut wake = Wake { last_run: start + Duration::from_millis(500), woke_at: None };
        // Five seconds without running: a pause, woken now.
        let woke = start + Duration::from_millis(5_500);
        assert_eq!(wake.note(woke, down_after), (Some(Duration::from_secs(5)), Some(woke)));
        // Running on: the wake is remembered, no new pause.
        assert_eq!(wake.note(woke + Duration::from_millis(200), down_after), (None, Some(woke)));
        // A run noted late by another task (an earlier instant) moves nothing back.
        assert_eq!(wake.note(woke, down_after), (None, Some(woke)));
    }
}
