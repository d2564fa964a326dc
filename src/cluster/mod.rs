//! Nodes joined into one service, on ractor_cluster: its `NodeServer` (one per node) owns the
//! cluster port, authenticates peers with the shared secret (Erlang's cookie handshake) and
//! keeps process groups in sync; nothing here is a membership or consensus protocol of our
//! own. On top of it this module keeps:
//!
//! - the **live members** (the agent's heartbeat, see `agent`), the one thing placement needs;
//! - **placement** by key over the live members (rendezvous hashing, [`place`]): the node that
//!   owns a site runs its politeness actor;
//! - **calls** to another node's handler with a timeout and a bound on calls in flight per
//!   peer (ractor_cluster's outbound buffers are unbounded, so we never queue without limit),
//!   in a versioned envelope ([`wire`]) of a version both nodes speak (the versions are the
//!   caller's to give: [`Versions`]).
//!
//! The layers above decide what the requests mean ([`Handler`]); this module knows bytes.

mod agent;
mod batch;
pub mod place;
mod quorum;
mod tls;
mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use ractor::{Actor, ActorRef};
use ractor_cluster::node::NodeConnectionMode;
use ractor_cluster::{NodeServer, NodeServerMessage};

use crate::config::ClusterSettings;
pub use agent::NotForgotten;
pub use wire::{OpenError, Versions, to_bytes};

impl crate::model::ErrorCode for NotForgotten {
    fn code(&self) -> crate::model::Code {
        match self {
            Self::Unknown(_) => crate::model::Code::NotFound,
            Self::Live(_) | Self::Itself(_) => crate::model::Code::Conflict,
        }
    }
}

/// How many members after a key's owner are its next owners (see
/// [`Cluster::next_owners_of`]): what is reported to a team's owner is copied to them, so
/// it survives the owner and all but one of them going down at once.
pub const NEXT_OWNERS: usize = 2;

/// Most calls in flight from this node to one peer.
const MAX_CALLS_PER_PEER: usize = 1024;

/// Which layer a request between nodes is for; each registers its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Channel {
    /// Jobs and sites.
    Jobs = 1,
    /// Teams: keys, credits, concurrency, profiles.
    Teams = 2,
    /// API requests for a browser session or a scrape's page state held by another node.
    Http = 3,
    /// DevTools connections and screen streams of a browser session another node holds.
    Tunnel = 4,
}

/// Handles requests other nodes send to this one.
pub trait Handler: Send + Sync + 'static {
    /// Answers `request` from node `from`.
    fn handle(&self, from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>>;
}

/// Why the cluster could not start or a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The settings are not usable.
    #[error("cluster settings: {0}")]
    Settings(String),
    /// The node server could not start.
    #[error("the cluster port could not open: {0}")]
    Start(String),
    /// The node is not a live member.
    #[error("node `{0}` is not available")]
    Unavailable(String),
    /// The node did not answer the call (it may be down, frozen or cut off).
    #[error("node `{node}` did not answer: {reason}")]
    Unreachable {
        /// The node.
        node: String,
        /// What happened.
        reason: String,
    },
    /// The call failed on the other node, or could not be sent.
    #[error("call to node `{node}` failed: {reason}")]
    Call {
        /// The node.
        node: String,
        /// What happened.
        reason: String,
    },
}

/// The host part of a `host:port` address.
fn host_of(address: &str) -> &str {
    address.rsplit_once(':').map_or(address, |(host, _)| host)
}

/// A node's answer to a call: the bytes its handler returned, read in place from the
/// message that carried them.
#[derive(Debug)]
pub struct Answer {
    sealed: Arc<Vec<u8>>,
    body: std::ops::Range<usize>,
}

impl std::ops::Deref for Answer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.sealed[self.body.clone()]
    }
}

/// Where what a tagged id names lives (see [`Cluster::holder_of_tag`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// This node.
    Here,
    /// Another live member.
    There(String),
    /// A member that is down now.
    Down(String),
}

/// A member as `GET /v2/cluster` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberView {
    /// Node name.
    pub name: String,
    /// Cluster address.
    pub address: String,
    /// `self`, `up`, `down` (silent), or `stopped` (down, and its address refuses
    /// connections: not running).
    pub state: &'static str,
    /// Milliseconds since it last answered (0 for this node).
    pub last_heard_ms: u64,
    /// The protocol version it and this node speak to each other (this node's own for it).
    pub protocol_version: u32,
}

/// Handle on this node's place in the cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    shared: Arc<agent::Shared>,
    live: tokio::sync::watch::Receiver<Arc<Vec<String>>>,
    agent: ActorRef<wire::AgentMsg>,
    server: ActorRef<NodeServerMessage>,
    call_slots: Arc<RwLock<BTreeMap<String, Arc<tokio::sync::Semaphore>>>>,
    traffic: Arc<Traffic>,
    /// When this node started: its view of the members is whole only some time later.
    started: Instant,
}

/// Requests this node sent to others, and their bytes (requests and answers).
#[derive(Debug, Default)]
struct Traffic {
    calls: std::sync::atomic::AtomicU64,
    /// Calls sent in a message of their own ([`Cluster::call_alone`]); the agent's hellos
    /// and pings are not counted.
    single: std::sync::atomic::AtomicU64,
    bytes_out: std::sync::atomic::AtomicU64,
    bytes_in: std::sync::atomic::AtomicU64,
}

/// What this node has sent to other nodes and received back since it started.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficView {
    /// Requests sent.
    pub calls: u64,
    /// Messages that carried them: request batches and collections of answers (each with
    /// its reply), and calls sent alone.
    pub messages: u64,
    /// Bytes of the requests.
    pub bytes_out: u64,
    /// Bytes of the answers.
    pub bytes_in: u64,
}

impl Cluster {
    /// Opens the cluster port and starts this node's agent, speaking `versions` of the
    /// protocol; joins the seeds. `book` keeps the members an operator forgot across restarts.
    pub async fn start(
        settings: &ClusterSettings,
        book: crate::store::members::ForgottenMembers,
        versions: Versions,
    ) -> Result<Self, ClusterError> {
        let cookie = settings.cookie().map_err(|e| ClusterError::Settings(e.to_string()))?;
        let listen: std::net::SocketAddr = settings
            .listen
            .trim()
            .parse()
            .map_err(|e| ClusterError::Settings(format!("cluster.listen: {e}")))?;
        let address = settings.reachable_at();
        let host = host_of(&address).to_owned();
        let name = settings.name();
        let (acceptor, dialer) = tls::load(settings)?;
        // Every connection this node opens goes through its dialer (TLS, and the source
        // address it listens on): ractor_cluster's own transitive dialling (plain TCP, from
        // any address) is off, and this node's agent meets the peers it hears of (`agent`).
        let mode = NodeConnectionMode::Isolated;
        // With TLS this node accepts on the cluster port itself (`tls::accept`: handshakes
        // bounded in time); the node server's own listener, still TLS, is left on a port of
        // the loopback interface that nothing dials.
        let (tls_listener, port, ip, incoming) = match &acceptor {
            Some(acceptor) => {
                let listener = tokio::net::TcpListener::bind(listen)
                    .await
                    .map_err(|e| ClusterError::Start(format!("cluster.listen {listen}: {e}")))?;
                let incoming = ractor_cluster::IncomingEncryptionMode::Tls(acceptor.clone());
                (Some(listener), 0, std::net::IpAddr::from([127, 0, 0, 1]), Some(incoming))
            }
            None => (None, listen.port(), listen.ip(), None),
        };
        let server = NodeServer::new(port, cookie, name.clone(), host, incoming, Some(mode))
            .with_listen_addr(ip)
            .with_max_inbound_frame_size(settings.max_message_bytes);
        let (server, _) =
            Actor::spawn(None, server, ()).await.map_err(|e| ClusterError::Start(e.to_string()))?;
        // Subscribed before this node accepts on its own (with TLS), so no session is missed.
        let unauthenticated = Arc::new(agent::Unauthenticated::default());
        let batches = Arc::new(batch::Batches::new(settings.max_message_bytes as usize / 4));
        let opening = Box::new(agent::Opening(Arc::clone(&unauthenticated), Arc::clone(&batches)));
        let _ = server.cast(NodeServerMessage::SubscribeToEvents {
            id: "ferrocrawl.opening".into(),
            subscription: opening,
        });
        if let (Some(listener), Some(acceptor)) = (tls_listener, acceptor) {
            tls::accept(listener, acceptor, server.clone());
        }
        let (live_tx, live) = tokio::sync::watch::channel(Arc::new(vec![name.clone()]));
        let forgotten = book.load().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the forgotten members could not be read; none are left out");
            Vec::new()
        });
        if !forgotten.is_empty() {
            tracing::info!(members = ?forgotten, "members forgotten before this start are still left out");
        }
        let forgotten = forgotten.into_iter().collect();
        let shared = Arc::new(agent::Shared {
            name: name.clone(),
            address: address.clone(),
            seeds: settings.seeds.clone(),
            heartbeat: Duration::from_millis(settings.heartbeat_ms),
            down_after: Duration::from_millis(settings.down_after_ms),
            keep_majority: settings.keep_majority,
            peers: RwLock::new(BTreeMap::new()),
            handlers: RwLock::default(),
            node_server: server.clone(),
            dialer: dialer.clone(),
            refused: std::sync::Mutex::default(),
            answered: std::sync::Mutex::default(),
            heard_of: RwLock::default(),
            forgotten: std::sync::Mutex::new(forgotten),
            book,
            live: live_tx,
            versions,
            aside: std::sync::atomic::AtomicBool::new(false),
            wake: std::sync::Mutex::new(agent::Wake::new()),
            unauthenticated,
            batches,
        });
        let (agent, _) = Actor::spawn(None, agent::Agent, Arc::clone(&shared))
            .await
            .map_err(|e| ClusterError::Start(e.to_string()))?;
        for seed in &settings.seeds {
            let result = dialer.dial(&server, seed.as_str()).await;
            agent::dialled(&shared, seed, &result);
            if let Err(e) = result {
                tracing::warn!(seed = %seed, error = %e, "cluster seed not reachable yet; will retry");
            }
        }
        tracing::info!(node = %name, %address, protocol = versions.own, "cluster port open");
        let started = Instant::now();
        Ok(Self { shared, live, agent, server, call_slots: Arc::default(), traffic: Arc::default(), started })
    }

    /// Sets who answers other nodes' requests on `channel`.
    pub fn serve(&self, channel: Channel, handler: Arc<dyn Handler>) {
        if let Ok(mut handlers) = self.shared.handlers.write() {
            handlers.insert(channel as u8, handler);
        }
    }

    /// The protocol versions this node speaks.
    pub fn versions(&self) -> Versions {
        self.shared.versions
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The live members (this node included), sorted.
    pub fn live(&self) -> Arc<Vec<String>> {
        Arc::clone(&self.live.borrow())
    }

    /// Resolves once `holds` is false of the live members (at once when it is now).
    pub async fn until_not(&self, holds: impl Fn(&[String]) -> bool) {
        let mut members = self.live.clone();
        while holds(&members.borrow_and_update()) {
            if members.changed().await.is_err() {
                return;
            }
        }
    }

    /// Resolves when the live members change.
    pub async fn changed(&mut self) {
        let _ = self.live.changed().await;
    }

    /// A receiver of the live members, for watchers.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<Arc<Vec<String>>> {
        self.live.clone()
    }

    /// Whether every member this node counts as live answered it lately (within
    /// `down_after_ms`), and (with `cluster.keep_majority`) this node is on the side of the
    /// cluster that fetches ([`quorum`]). Not so for a moment after this process was frozen
    /// or starved: its view of the members is then out of date (the others may have judged
    /// it down and taken its sites) until the next pings are answered; nor while it sees
    /// fewer than half of the members that may be running (cut off from them, the others
    /// have its sites).
    ///
    /// After such a pause (see `agent::Wake`) the node stays out of touch for `down_after_ms`
    /// and until every member it counts as live has answered since: by then the others,
    /// which judged it down meanwhile, have heard from it again and count it as a member,
    /// so its sites are not fetched by two nodes that each think them theirs.
    pub fn in_touch(&self) -> bool {
        let now = Instant::now();
        let woke = agent::woke_at(&self.shared, now);
        if woke.is_some_and(|at| now.duration_since(at) < self.shared.down_after) {
            return false;
        }
        let Ok(peers) = self.shared.peers.read() else { return false };
        let answered = peers.values().filter(|p| p.up).all(|p| {
            now.duration_since(p.last_heard) <= self.shared.down_after
                && woke.is_none_or(|at| p.last_heard >= at)
        });
        answered && self.may_fetch(&peers)
    }

    /// The cluster addresses of the members an operator forgot (kept on disk), sorted:
    /// they no longer count among the members that may be running until one answers.
    pub fn forgotten(&self) -> Vec<String> {
        batch::lock(&self.shared.forgotten).iter().cloned().collect()
    }

    /// Whether this node is on the side of the cluster that fetches: with
    /// `cluster.keep_majority`, it sees more than half of the members that may be running,
    /// and does not stand aside from a partial cut (see [`quorum`]); always without it.
    /// `GET /v2/cluster` shows it as `majority`.
    pub fn majority(&self) -> bool {
        self.shared.peers.read().is_ok_and(|peers| self.may_fetch(&peers))
    }

    fn may_fetch(&self, peers: &BTreeMap<String, agent::Peer>) -> bool {
        !self.shared.keep_majority || self.on_majority_side(peers)
    }

    /// Whether this node, with `peers` as it sees them, is on the side that fetches. Before
    /// it has met any member, only when none of its seeds may be running (each refused a
    /// connection): a node started while cut off from its cluster does not fetch alone.
    fn on_majority_side(&self, peers: &BTreeMap<String, agent::Peer>) -> bool {
        if peers.is_empty() {
            let Ok(refused) = self.shared.refused.lock() else { return false };
            let Ok(forgotten) = self.shared.forgotten.lock() else { return false };
            let mut seeds = self.shared.seeds.iter().filter(|s| **s != self.shared.address);
            return seeds.all(|seed| refused.contains(seed) || forgotten.contains(seed));
        }
        let seen = peers.iter().map(|(name, p)| quorum::Seen::of(name, p));
        quorum::holds(&self.shared.name, seen)
            && !self.shared.aside.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Resolves once this node has been up for `down_after_ms`: by then it has met every
    /// member its seeds and their peers name (or judged them down), so a site it places
    /// and claims is placed over the whole membership. A node that claimed sooner, over the
    /// few members it had met, could take a site whose owner in the full view goes on
    /// fetching it (measured as requests from two nodes at once when a node rejoins).
    pub async fn settled(&self) {
        tokio::time::sleep_until((self.started + self.shared.down_after).into()).await;
    }

    /// Resolves once no member that fell silent may still be fetching. A member cut off
    /// from this node keeps fetching its own sites until it has not heard this node for
    /// `down_after_ms`, which can be up to a ping interval after this node judged it down
    /// and took its sites; so a site taken over waits, before its first request, until
    /// `down_after_ms` and a heartbeat past this node's last answer to each silent member.
    /// A stopped member ([`agent::Peer::stopped`]: killed, its address refuses) holds
    /// nothing, also when found stopped during the wait.
    pub async fn quiet(&self) {
        loop {
            let until = {
                let peers = self.shared.peers.read().map(|p| {
                    p.iter().filter(|(_, peer)| !peer.up && !peer.stopped).map(|(n, _)| n.clone()).collect()
                });
                let silent: Vec<String> = peers.unwrap_or_default();
                let answered = self
                    .shared
                    .answered
                    .lock()
                    .map(|a| silent.iter().filter_map(|n| a.get(n).copied()).max());
                answered.ok().flatten().map(|at| at + self.shared.down_after + self.shared.heartbeat)
            };
            let now = Instant::now();
            match until {
                // Checked again in a while: a member found stopped meanwhile holds nothing.
                Some(until) if until > now => {
                    tokio::time::sleep((until - now).min(Duration::from_millis(50))).await
                }
                _ => return,
            }
        }
    }

    /// Forgets member `name`, down and gone for good (its machine will not come back):
    /// it no longer counts among the members that may be running, so the survivors of a
    /// cluster that lost most of its machines fetch again. Every other live member is to be
    /// told as well (`DELETE /v2/cluster/members/{name}` does). Forgetting a member that
    /// still runs, cut off, lets both sides of the cut fetch.
    pub fn forget(&self, name: &str) -> Result<(), agent::NotForgotten> {
        agent::forget(&self.shared, name)
    }

    /// The key placing site `origin` (its host; see [`place::site_key`]).
    pub fn site_key<'o>(&self, origin: &'o str) -> &'o str {
        place::site_key(origin)
    }

    /// The live member that owns site `origin`, among `live`.
    pub fn site_owner_among<'m>(&self, live: &'m [String], origin: &str) -> Option<&'m str> {
        place::owner(live, self.site_key(origin))
    }

    /// Whether this node is the live member that owns site `origin`.
    pub fn owns_site(&self, origin: &str) -> bool {
        self.owns(self.site_key(origin))
    }

    /// The live member that owns site `origin`.
    pub fn site_owner(&self, origin: &str) -> String {
        self.owner_of(self.site_key(origin))
    }

    /// Whether this node is the live member that owns `key`.
    pub fn owns(&self, key: &str) -> bool {
        let live = self.live();
        place::owner(&live, key).is_none_or(|owner| owner == self.name())
    }

    /// The live member that owns `key`.
    pub fn owner_of(&self, key: &str) -> String {
        let live = self.live();
        place::owner(&live, key).unwrap_or(self.name()).to_owned()
    }

    /// The live members that take `key` over should its owner go down, were this node to go
    /// down with it: the [`NEXT_OWNERS`] after the owner in `key`'s order, never this node
    /// nor the owner (fewer when fewer others are live). Should the owner and the first of
    /// them go down at once, the second takes `key` over (or this node, if it comes first).
    pub fn next_owners_of(&self, key: &str) -> Vec<String> {
        place::next_owners(&self.live(), key, self.name(), NEXT_OWNERS)
    }

    /// The tag job ids made on this node carry.
    pub fn tag(&self) -> u32 {
        place::tag_of(self.name())
    }

    /// Which node holds what an id carrying `tag` names (a job, a scrape, a browser
    /// session): this one, another live member, or a member that is down. An id no known
    /// node tagged (made before clustering, or by no node at all) is looked up here.
    pub fn holder_of_tag(&self, tag: u32) -> Holder {
        if tag == self.tag() {
            return Holder::Here;
        }
        let Ok(peers) = self.shared.peers.read() else { return Holder::Here };
        match peers.iter().find(|(name, _)| place::tag_of(name) == tag) {
            Some((name, peer)) if peer.up => Holder::There(name.clone()),
            Some((name, _)) => Holder::Down(name.clone()),
            None => Holder::Here,
        }
    }

    /// Every node this one knows, with its state.
    pub fn members(&self) -> Vec<MemberView> {
        let now = Instant::now();
        let mut out = vec![MemberView {
            name: self.shared.name.clone(),
            address: self.shared.address.clone(),
            state: "self",
            last_heard_ms: 0,
            protocol_version: self.shared.versions.own,
        }];
        if let Ok(peers) = self.shared.peers.read() {
            out.extend(peers.iter().map(|(name, p)| MemberView {
                name: name.clone(),
                address: p.address.clone(),
                state: match (p.up, p.stopped) {
                    (true, _) => "up",
                    (false, true) => "stopped",
                    (false, false) => "down",
                },
                last_heard_ms: now.duration_since(p.last_heard).as_millis() as u64,
                protocol_version: p.version,
            }));
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The protocol version this node and live member `node` speak to each other (the
    /// older of their two), when it is one.
    pub fn version_of(&self, node: &str) -> Option<u32> {
        if node == self.name() {
            return Some(self.shared.versions.own);
        }
        let peers = self.shared.peers.read().ok()?;
        peers.get(node).filter(|p| p.up).map(|p| p.version)
    }

    /// What this node sent to other nodes and received back since it started.
    pub fn traffic(&self) -> TrafficView {
        use std::sync::atomic::Ordering::Relaxed;
        TrafficView {
            calls: self.traffic.calls.load(Relaxed),
            messages: self.traffic.single.load(Relaxed) + self.shared.batches.messages.load(Relaxed),
            bytes_out: self.traffic.bytes_out.load(Relaxed),
            bytes_in: self.traffic.bytes_in.load(Relaxed),
        }
    }

    /// Sends `request` to node `node`'s handler and waits up to `timeout` for the answer
    /// (with other calls in a message, see `batch`, when the node takes batches).
    pub async fn call(
        &self,
        node: &str,
        channel: Channel,
        request: Vec<u8>,
        timeout: Duration,
    ) -> Result<Answer, ClusterError> {
        self.call_as(node, channel, request, timeout, true).await
    }

    /// [`Self::call`] in a message of its own, for a request whose answer is needed at once:
    /// a turn of a site's pace lent by another node counts from when it is lent, so its
    /// answer does not wait for a batch's spacing.
    pub async fn call_alone(
        &self,
        node: &str,
        channel: Channel,
        request: Vec<u8>,
        timeout: Duration,
    ) -> Result<Answer, ClusterError> {
        self.call_as(node, channel, request, timeout, false).await
    }

    async fn call_as(
        &self,
        node: &str,
        channel: Channel,
        request: Vec<u8>,
        timeout: Duration,
        batched: bool,
    ) -> Result<Answer, ClusterError> {
        let (actor, version) = {
            let peers = self.shared.peers.read().map_err(|_| ClusterError::Unavailable(node.to_owned()))?;
            match peers.get(node) {
                Some(peer) if peer.up => (peer.actor.clone(), peer.version),
                _ => return Err(ClusterError::Unavailable(node.to_owned())),
            }
        };
        let slots = {
            let mut all = self.call_slots.write().map_err(|_| ClusterError::Unavailable(node.to_owned()))?;
            Arc::clone(
                all.entry(node.to_owned())
                    .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(MAX_CALLS_PER_PEER))),
            )
        };
        let failed = |reason: String| ClusterError::Call { node: node.to_owned(), reason };
        let _slot = tokio::time::timeout(timeout, slots.acquire_owned())
            .await
            .map_err(|_| failed("too many calls in flight to this node".into()))?
            .map_err(|_| failed("closed".into()))?;
        {
            use std::sync::atomic::Ordering::Relaxed;
            self.traffic.calls.fetch_add(1, Relaxed);
            self.traffic.bytes_out.fetch_add(request.len() as u64, Relaxed);
        }
        let answer = if batched {
            self.call_batched(node, &actor, version, channel, request, timeout).await?
        } else {
            self.traffic.single.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let frame = wire::Frame::App { channel: channel as u8, body: request };
            let sealed = agent::call_sealed(self.name(), version, &actor, &frame, timeout)
                .await
                .map_err(|reason| ClusterError::Unreachable { node: node.to_owned(), reason })?;
            // The answer's bytes are read where they lie in the message, not copied out.
            let body = match wire::open::<wire::Reply<&serde_bytes::Bytes>>(&sealed, self.shared.versions) {
                Ok((_, wire::Reply::App(Ok(bytes)), _)) => wire::range_in(&sealed, bytes),
                Ok((_, wire::Reply::App(Err(reason)), _)) => return Err(failed(reason)),
                Ok(_) => return Err(failed("unexpected answer".into())),
                Err(e) => {
                    return Err(ClusterError::Unreachable { node: node.to_owned(), reason: e.to_string() });
                }
            };
            Answer { sealed: Arc::new(sealed), body }
        };
        self.traffic.bytes_in.fetch_add(answer.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(answer)
    }

    /// [`Self::call`] in a batch (see `batch`).
    async fn call_batched(
        &self,
        node: &str,
        actor: &ActorRef<wire::AgentMsg>,
        version: u32,
        channel: Channel,
        request: Vec<u8>,
        timeout: Duration,
    ) -> Result<Answer, ClusterError> {
        let batches = &self.shared.batches;
        let (id, answer) = batches.call(&self.shared, node, actor, version, channel as u8, request);
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(Ok((sealed, body)))) => Ok(Answer { sealed, body }),
            Ok(Ok(Err(reason))) => Err(ClusterError::Call { node: node.to_owned(), reason }),
            Ok(Err(_)) => Err(ClusterError::Unreachable {
                node: node.to_owned(),
                reason: "the node dropped the call (its session ended or it did not answer)".into(),
            }),
            Err(_) => {
                batches.forget(node, id);
                Err(ClusterError::Unreachable {
                    node: node.to_owned(),
                    reason: format!("no answer within {} ms", timeout.as_millis()),
                })
            }
        }
    }

    /// Leaves the cluster: the agent and the node server stop.
    pub async fn stop(&self) {
        self.agent.stop(None);
        let _ = self.server.stop_and_wait(None, Some(Duration::from_secs(5))).await;
    }
}
