//! Teams across a cluster. Each node keeps its own keys and its own ledger of the credits
//! charged through it; the cluster makes them one:
//!
//! - **keys**: a key this node does not know is looked up on the live peers (by its digest,
//!   never the key itself); a found key is remembered, so an API key valid on one node is
//!   valid on all, and works on the others from then on even while its node is down;
//! - **credits**: what a team used this month is the sum of every node's ledger, kept by
//!   the team's owner from the totals each node reports (see [`super::credits`]), so a
//!   team with 100 credits cannot spend 300 through three nodes; the language-model tokens
//!   a team used are kept and summed the same way, for its token report.
//! - **concurrency**: the team's owner (rendezvous hashing over the live members) grants
//!   each node a share of the team's slots (see [`super::slots`]); pages use them locally.
//! - **request rate**: a POST counts against the limiter of the team's owner, asked for each
//!   request; while the owner does not answer, this node's own limiter decides (so a team
//!   may briefly have the rate on each node).
//! - **browser profiles**: each profile is kept by one node (rendezvous hashing of the team
//!   and profile name), which every node reads it from and saves it to ([`Profiles`]).
//!
//! Requests travel on the cluster's `Teams` channel, postcard-encoded.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::Teams;
use super::credits::{Heard, Ledger, Tally};
use super::slots::{Grant, SYNC};
use crate::cluster::{Channel, Cluster};
use crate::model::TeamId;
use crate::scrape::profiles::ProfileKeeper;
use crate::store::ledger::Month;
use crate::store::profiles::ProfileState;
use crate::store::reports::{Report, ReportKey};

/// How long a call to a peer about a team may take.
const TIMEOUT: Duration = Duration::from_secs(2);
/// How long an unknown key stays unknown before peers are asked again.
const UNKNOWN_FOR: Duration = Duration::from_secs(5);
/// Keys remembered at most (found on peers, or unknown everywhere).
const REMEMBERED: usize = 10_000;

/// What nodes ask each other about teams.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum Request {
    /// Whose is the key with this digest?
    KeyTeam([u8; 32]),
    /// Credits the team used in the month through this node.
    Used(String, Month),
    /// Language-model tokens the team used in the month through this node.
    Tokens(String, Month),
    /// The sender holds `held` of the team's slots and has `want` pages waiting (to the
    /// team's owner).
    Slots {
        /// The team.
        team: String,
        /// Slots the sender holds.
        held: u32,
        /// Pages waiting on the sender.
        want: u32,
    },
    /// Count one POST request of the team (to the team's owner).
    Rate(String),
    /// The team's saved profile (to the profile's keeper).
    Profile {
        /// The team.
        team: String,
        /// The profile's name.
        name: String,
    },
    /// Save the team's profile (to the profile's keeper).
    SaveProfile {
        /// The team.
        team: String,
        /// The profile's name.
        name: String,
        /// What it holds now.
        state: ProfileState,
    },
    /// The sender's ledger holds `total` credits of the team for the month (to the team's
    /// owner; protocol version 7).
    Charged {
        /// The team.
        team: String,
        /// The month.
        month: Month,
        /// The sender's total.
        total: u64,
    },
    /// Credits the team used in the month on every node but the sender (to the team's
    /// owner; protocol version 7).
    UsedBeyond(String, Month),
    /// The team's pages in flight and waiting on this node (protocol version 10).
    Load(String),
    /// The sender's token ledger holds `total` tokens of the team for the month, `by_key`
    /// per key label (to the team's owner; protocol version 11).
    TokensUsed {
        /// The team.
        team: String,
        /// The month.
        month: Month,
        /// The sender's total.
        total: u64,
        /// Its part per key label.
        by_key: Vec<(String, u64)>,
    },
    /// Tokens the team used in the month on every node but the sender (to the team's
    /// owner; protocol version 11).
    TokensBeyond(String, Month),
    /// What the sender last heard nodes that are down report of their ledgers (each as the
    /// sender keeps it on disk), passed on to each team's owner and next owners at a
    /// membership change (protocol version 12, [`super::credits::RELAYS_SINCE`]).
    Relayed(Vec<(ReportKey, Report)>),
}

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum Response {
    /// The key's team, if this node has the key.
    KeyTeam(Option<String>),
    /// See [`Request::Used`].
    Used(u64),
    /// See [`Request::Tokens`] and [`Request::TokensBeyond`]: the total and the use per
    /// key label.
    Tokens(u64, Vec<(String, u64)>),
    /// See [`Request::Slots`].
    Slots(Grant),
    /// See [`Request::Rate`]: `None` when allowed, else how long to wait (ms).
    Rate(Option<u64>),
    /// See [`Request::Profile`].
    Profile(Option<ProfileState>),
    /// See [`Request::SaveProfile`].
    Saved,
    /// See [`Request::Charged`], [`Request::TokensUsed`] and [`Request::Relayed`].
    Noted,
    /// See [`Request::Load`]: pages in flight, pages waiting.
    Load(u32, u32),
}

/// Keys looked up on peers: found (the team) or not found (when).
#[derive(Debug, Default)]
pub(super) struct KeyMemory {
    found: Mutex<HashMap<[u8; 32], TeamId>>,
    unknown: Mutex<HashMap<[u8; 32], Instant>>,
}

fn remember<V>(map: &mut HashMap<[u8; 32], V>, digest: [u8; 32], value: V) {
    if map.len() >= REMEMBERED {
        map.clear();
    }
    map.insert(digest, value);
}

pub(super) async fn ask(cluster: &Cluster, node: &str, request: &Request) -> Option<Response> {
    let bytes = postcard::to_allocvec(request).ok()?;
    let answer = cluster.call(node, Channel::Teams, bytes, TIMEOUT).await.ok()?;
    postcard::from_bytes(&answer).ok()
}

/// `request` asked of each of `nodes` at once: their answers, in order.
pub(super) async fn ask_each(
    cluster: &Cluster,
    nodes: &[String],
    request: &Request,
) -> Vec<Option<Response>> {
    futures::future::join_all(nodes.iter().map(|node| ask(cluster, node, request))).await
}

/// The protocol version that brought [`Request::Load`].
const LOAD_SINCE: u32 = 10;

/// The key placing a team's owner among the members.
pub(super) fn team_key(team: &str) -> String {
    format!("team:{team}")
}

/// Keeps this node's lease of a team's slots: reports to the team's owner every
/// [`SYNC`] while it holds or wants any (once more after it gave everything back), and
/// applies the owner's answer to the team's gate.
pub(super) struct LeaseKeeper {
    pub cluster: Cluster,
    pub pools: Arc<super::slots::Pools>,
    pub team: String,
    pub gate: Arc<super::Gate>,
}

impl LeaseKeeper {
    pub(super) async fn run(self) {
        use std::sync::atomic::Ordering;
        let Some(lease) = self.gate.lease.clone() else { return };
        let mut reported_idle = false;
        loop {
            let held = lease.held.load(Ordering::SeqCst);
            let want = u32::try_from(self.gate.waiting.load(Ordering::SeqCst)).unwrap_or(u32::MAX);
            if held == 0 && want == 0 && reported_idle {
                lease.wake.notified().await;
                continue;
            }
            reported_idle = held == 0 && want == 0;
            let owner = self.cluster.owner_of(&team_key(&self.team));
            let answer = if owner == self.cluster.name() {
                let live = self.cluster.live();
                Some(self.pools.report(&self.team, self.gate.size, &live, &owner, held, want))
            } else {
                let request = Request::Slots { team: self.team.clone(), held, want };
                match ask(&self.cluster, &owner, &request).await {
                    Some(Response::Slots(grant)) => Some(grant),
                    _ => None,
                }
            };
            if let Some(answer) = answer {
                lease.apply(&self.gate.slots, &self.gate.waiting, answer);
            }
            tokio::select! {
                () = tokio::time::sleep(SYNC) => {}
                () = lease.wake.notified() => {}
            }
        }
    }
}

pub(super) fn peers(cluster: &Cluster) -> Vec<String> {
    cluster.live().iter().filter(|n| *n != cluster.name()).cloned().collect()
}

impl Teams {
    /// Joins the cluster: answers the peers' questions about teams, and asks them.
    pub fn join_cluster(self: &Arc<Self>, cluster: Cluster) {
        cluster.serve(Channel::Teams, Arc::new(TeamsHandler(Arc::clone(self))));
        self.keep_totals(&cluster);
        let _ = self.cluster.set(cluster);
    }

    /// The team a presented key authenticates as: this node's keys, then the peers'.
    pub async fn authenticate(&self, key: &str) -> Result<Option<TeamId>, crate::store::StoreError> {
        if let Some(team) = self.store.keys.team_of(key)? {
            return Ok(Some(team));
        }
        let Some(cluster) = self.cluster.get() else { return Ok(None) };
        let digest = crate::store::keys::digest_of(key);
        if let Some(team) = self.keys.found.lock().ok().and_then(|found| found.get(&digest).cloned()) {
            return Ok(Some(team));
        }
        let unknown_since = self.keys.unknown.lock().ok().and_then(|unknown| unknown.get(&digest).copied());
        if unknown_since.is_some_and(|at| at.elapsed() < UNKNOWN_FOR) {
            return Ok(None);
        }
        let asks = peers(cluster);
        let request = Request::KeyTeam(digest);
        let team = ask_each(cluster, &asks, &request).await.into_iter().find_map(|answer| match answer {
            Some(Response::KeyTeam(Some(team))) => TeamId::parse(&team).ok(),
            _ => None,
        });
        match &team {
            Some(team) => {
                if let Ok(mut found) = self.keys.found.lock() {
                    remember(&mut found, digest, team.clone());
                }
            }
            None => {
                if let Ok(mut unknown) = self.keys.unknown.lock() {
                    remember(&mut unknown, digest, Instant::now());
                }
            }
        }
        Ok(team)
    }

    /// Counts one POST request of the team against its rate, at the team's owner when that
    /// is another node that answers; `Err` is how long to wait.
    pub async fn check_rate_everywhere(&self, team: &TeamId) -> Result<(), Duration> {
        if let Some(cluster) = self.cluster.get() {
            let owner = cluster.owner_of(&team_key(team.as_str()));
            if owner != cluster.name() {
                match ask(cluster, &owner, &Request::Rate(team.as_str().to_owned())).await {
                    Some(Response::Rate(None)) => return Ok(()),
                    Some(Response::Rate(Some(ms))) => return Err(Duration::from_millis(ms)),
                    _ => tracing::debug!(node = %owner, "the team's owner did not answer; rate checked here"),
                }
            }
        }
        self.check_rate(team)
    }

    /// The team's pages in flight and waiting on every live node, and its limit: what
    /// `/v2/team/queue-status` shows behind a load balancer, whichever node answers. A node
    /// older than protocol version 10 cannot say and is not counted.
    pub async fn load_everywhere(&self, team: &TeamId) -> (u32, u32, u32) {
        let (mut active, mut waiting, limit) = self.load(team);
        let Some(cluster) = self.cluster.get() else { return (active, waiting, limit) };
        let asks: Vec<String> = peers(cluster)
            .into_iter()
            .filter(|node| cluster.version_of(node).is_some_and(|v| v >= LOAD_SINCE))
            .collect();
        let answers = ask_each(cluster, &asks, &Request::Load(team.as_str().to_owned())).await;
        for (node, answer) in asks.iter().zip(answers) {
            match answer {
                Some(Response::Load(a, w)) => {
                    active = active.saturating_add(a);
                    waiting = waiting.saturating_add(w);
                }
                _ => tracing::debug!(node = %node, team = %team.as_str(), "a node's load is not counted"),
            }
        }
        (active, waiting, limit)
    }
}

/// Answers the peers' questions about teams.
struct TeamsHandler(Arc<Teams>);

impl crate::cluster::Handler for TeamsHandler {
    fn handle(&self, from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let teams = Arc::clone(&self.0);
        Box::pin(async move {
            let request: Request = postcard::from_bytes(&request).map_err(|e| e.to_string())?;
            let response = match request {
                Request::KeyTeam(digest) => Response::KeyTeam(
                    teams
                        .store
                        .keys
                        .team_of_digest(&digest)
                        .map_err(|e| e.to_string())?
                        .map(|t| t.as_str().to_owned()),
                ),
                Request::Tokens(team, month) => own(&teams, Ledger::Tokens, &team, month)?,
                Request::Used(team, month) => own(&teams, Ledger::Credits, &team, month)?,
                Request::Slots { team, held, want } => {
                    let id = TeamId::parse(&team).map_err(|e| e.clone())?;
                    let limit = teams.plan(&id).concurrency;
                    let live = teams.cluster.get().map(Cluster::live).unwrap_or_default();
                    Response::Slots(teams.pools.report(&team, limit, &live, &from, held, want))
                }
                Request::Profile { team, name } => {
                    let team = TeamId::parse(&team).map_err(|e| e.clone())?;
                    Response::Profile(teams.store.profiles.get(&team, &name).map_err(|e| e.to_string())?)
                }
                Request::SaveProfile { team, name, state } => {
                    let team = TeamId::parse(&team).map_err(|e| e.clone())?;
                    teams.store.profiles.put(&team, &name, &state).map_err(|e| e.to_string())?;
                    Response::Saved
                }
                Request::Charged { team, month, total } => {
                    let tally = Tally { total, by_key: BTreeMap::new() };
                    teams.credits.record(Ledger::Credits, &team, month, &from, tally, Heard::Reported);
                    Response::Noted
                }
                Request::TokensUsed { team, month, total, by_key } => {
                    let tally = Tally { total, by_key: by_key.into_iter().collect() };
                    teams.credits.record(Ledger::Tokens, &team, month, &from, tally, Heard::Reported);
                    Response::Noted
                }
                Request::Relayed(reports) => {
                    teams.credits.relayed(reports);
                    Response::Noted
                }
                Request::UsedBeyond(team, month) => {
                    beyond(&teams, Ledger::Credits, &team, month, &from).await?
                }
                Request::TokensBeyond(team, month) => {
                    beyond(&teams, Ledger::Tokens, &team, month, &from).await?
                }
                Request::Load(team) => {
                    let team = TeamId::parse(&team).map_err(|e| e.clone())?;
                    let (active, waiting, _) = teams.load(&team);
                    Response::Load(active, waiting)
                }
                Request::Rate(team) => {
                    let team = TeamId::parse(&team).map_err(|e| e.clone())?;
                    let wait = teams.check_rate(&team).err();
                    Response::Rate(wait.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)))
                }
            };
            postcard::to_allocvec(&response).map_err(|e| e.to_string())
        })
    }
}

/// This node's own total of `team`'s month in `ledger`, as an answer.
fn own(teams: &Teams, ledger: Ledger, team: &str, month: Month) -> Result<Response, String> {
    let team = TeamId::parse(team).map_err(|e| e.clone())?;
    Ok(ledger.answer(teams.tally(ledger, &team, month).map_err(|e| e.to_string())?))
}

/// As `team`'s owner: its total of `month` in `ledger` on every node but `asker`, as an
/// answer.
async fn beyond(
    teams: &Teams,
    ledger: Ledger,
    team: &str,
    month: Month,
    asker: &str,
) -> Result<Response, String> {
    let team = TeamId::parse(team).map_err(|e| e.clone())?;
    Ok(ledger.answer(teams.beyond(ledger, &team, month, asker).await.map_err(|e| e.to_string())?))
}

/// Browser profiles kept across the cluster: each by the node rendezvous hashing picks for
/// its team and name, read from and saved to there (here when that is this node).
#[derive(Debug)]
pub struct Profiles(pub Arc<Teams>);

impl Profiles {
    /// The keeper of the team's profile `name`, when that is another node.
    fn keeper(&self, team: &TeamId, name: &str) -> Option<(&Cluster, String)> {
        let cluster = self.0.cluster.get()?;
        let owner = cluster.owner_of(&format!("profile:{}/{name}", team.as_str()));
        (owner != cluster.name()).then_some((cluster, owner))
    }
}

impl ProfileKeeper for Profiles {
    fn get<'a>(
        &'a self,
        team: &'a TeamId,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ProfileState>, String>> {
        Box::pin(async move {
            let Some((cluster, node)) = self.keeper(team, name) else {
                return self.0.store.profiles.get(team, name).map_err(|e| e.to_string());
            };
            let request = Request::Profile { team: team.as_str().to_owned(), name: name.to_owned() };
            match ask(cluster, &node, &request).await {
                Some(Response::Profile(state)) => Ok(state),
                _ => Err(format!("node `{node}`")),
            }
        })
    }

    fn put<'a>(
        &'a self,
        team: &'a TeamId,
        name: &'a str,
        state: &'a ProfileState,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let Some((cluster, node)) = self.keeper(team, name) else {
                return self.0.store.profiles.put(team, name, state).map_err(|e| e.to_string());
            };
            let (team, name, state) = (team.as_str().to_owned(), name.to_owned(), state.clone());
            match ask(cluster, &node, &Request::SaveProfile { team, name, state }).await {
                Some(Response::Saved) => Ok(()),
                _ => Err(format!("node `{node}`")),
            }
        })
    }
}
