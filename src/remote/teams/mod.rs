//! Teams across the cluster. Each node keeps its own keys and its own ledger of the credits
//! charged through it; this module makes them one, both sides of the `Teams` channel:
//!
//! - **keys**: a key this node does not know is looked up on the live peers (by its digest,
//!   never the key itself); a found key is remembered, so an API key valid on one node is
//!   valid on all, and works on the others from then on even while its node is down;
//! - **credits**: what a team used this month is the sum of every node's ledger, kept by
//!   the team's owner from the totals each node reports (see [`credits`]), so a team with
//!   100 credits cannot spend 300 through three nodes; the language-model tokens a team
//!   used are kept and summed the same way, for its token report;
//! - **concurrency**: the team's owner (rendezvous hashing over the live members) grants
//!   each node a share of the team's slots (see [`slots`]); pages use them locally;
//! - **request rate**: a POST counts against the limiter of the team's owner, asked for each
//!   request; while the owner does not answer, this node's own limiter decides (so a team
//!   may briefly have the rate on each node);
//! - **browser profiles**: each profile is kept by one node (rendezvous hashing of the team
//!   and profile name), which every node reads it from and saves it to ([`ProfilesOnNodes`]).
//!
//! [`TeamsOnNodes`] is the asking side (the team policy's [`TeamNodes`]), [`TeamsHandler`]
//! the answering side.

mod credits;
mod ledgers;
mod slots;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::messages::teams::{Request, Response};
use crate::cluster::{Channel, Cluster};
use crate::model::TeamId;
use crate::scrape::profiles::ProfileKeeper;
use crate::store::ledger::Month;
use crate::store::profiles::ProfileState;
use crate::store::{Store, StoreError};
use crate::teams::{Ledger, Supply, Tally, TeamNodes, Teams};
use credits::{Credits, Heard};

/// How long a call to a peer about a team may take.
const TIMEOUT: Duration = Duration::from_secs(2);
/// How long an unknown key stays unknown before peers are asked again.
const UNKNOWN_FOR: Duration = Duration::from_secs(5);
/// Keys remembered at most (found on peers, or unknown everywhere).
const REMEMBERED: usize = 10_000;

/// Keys looked up on peers: found (the team) or not found (when).
#[derive(Debug, Default)]
struct KeyMemory {
    found: Mutex<HashMap<[u8; 32], TeamId>>,
    unknown: Mutex<HashMap<[u8; 32], Instant>>,
}

fn remember<V>(map: &mut HashMap<[u8; 32], V>, digest: [u8; 32], value: V) {
    if map.len() >= REMEMBERED {
        map.clear();
    }
    map.insert(digest, value);
}

/// `request` asked of `node` on the `Teams` channel: its answer, `None` when there is none.
async fn ask(cluster: &Cluster, node: &str, request: &Request) -> Option<Response> {
    let answer = cluster.call(node, Channel::Teams, super::messages::encode(request), TIMEOUT).await.ok()?;
    super::messages::decode(&answer).ok()
}

/// `request` asked of each of `nodes` at once: their answers, in order.
async fn ask_each(cluster: &Cluster, nodes: &[String], request: &Request) -> Vec<Option<Response>> {
    futures::future::join_all(nodes.iter().map(|node| ask(cluster, node, request))).await
}

/// The key placing a team's owner among the members.
fn team_key(team: &str) -> String {
    format!("team:{team}")
}

/// The other nodes' part in this node's team policy.
#[derive(Debug)]
pub struct TeamsOnNodes {
    cluster: Cluster,
    store: Store,
    keys: KeyMemory,
    /// What this node heard of other nodes' ledgers, and what it has yet to report.
    credits: Credits,
    /// The slots of the teams this node owns.
    pools: Arc<slots::Pools>,
}

impl TeamsOnNodes {
    /// The other nodes of `cluster` for the team policy over `store`; starts reporting this
    /// node's totals to the teams' owners.
    pub fn start(cluster: Cluster, store: Store) -> Arc<Self> {
        let credits = Credits::kept_in(store.reports.clone());
        let nodes =
            Arc::new(Self { cluster, store, keys: KeyMemory::default(), credits, pools: Arc::default() });
        nodes.keep_totals();
        nodes
    }

    /// The live members but this node.
    fn peers(&self) -> Vec<String> {
        self.cluster.live().iter().filter(|n| *n != self.cluster.name()).cloned().collect()
    }
}

impl TeamNodes for TeamsOnNodes {
    fn key_team(&self, digest: [u8; 32]) -> BoxFuture<'_, Option<TeamId>> {
        Box::pin(async move {
            if let Some(team) = self.keys.found.lock().ok().and_then(|found| found.get(&digest).cloned()) {
                return Some(team);
            }
            let unknown_since =
                self.keys.unknown.lock().ok().and_then(|unknown| unknown.get(&digest).copied());
            if unknown_since.is_some_and(|at| at.elapsed() < UNKNOWN_FOR) {
                return None;
            }
            let answers = ask_each(&self.cluster, &self.peers(), &Request::KeyTeam(digest)).await;
            let team = answers.into_iter().find_map(|answer| match answer {
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
            team
        })
    }

    fn rate<'a>(&'a self, team: &'a TeamId) -> BoxFuture<'a, Option<Result<(), Duration>>> {
        Box::pin(async move {
            let owner = self.cluster.owner_of(&team_key(team.as_str()));
            if owner == self.cluster.name() {
                return None;
            }
            match ask(&self.cluster, &owner, &Request::Rate(team.as_str().to_owned())).await {
                Some(Response::Rate(None)) => Some(Ok(())),
                Some(Response::Rate(Some(ms))) => Some(Err(Duration::from_millis(ms))),
                _ => {
                    tracing::debug!(node = %owner, "the team's owner did not answer; rate checked here");
                    None
                }
            }
        })
    }

    fn load<'a>(&'a self, team: &'a TeamId) -> BoxFuture<'a, (u32, u32)> {
        Box::pin(async move {
            let peers = self.peers();
            let answers = ask_each(&self.cluster, &peers, &Request::Load(team.as_str().to_owned())).await;
            let (mut active, mut waiting) = (0u32, 0u32);
            for (node, answer) in peers.iter().zip(answers) {
                match answer {
                    Some(Response::Load(a, w)) => {
                        active = active.saturating_add(a);
                        waiting = waiting.saturating_add(w);
                    }
                    _ => tracing::debug!(node = %node, team = %team.as_str(), "a node's load is not counted"),
                }
            }
            (active, waiting)
        })
    }

    fn used<'a>(
        &'a self,
        ledger: Ledger,
        team: &'a TeamId,
        month: Month,
    ) -> BoxFuture<'a, Result<Tally, StoreError>> {
        Box::pin(self.used_elsewhere(ledger, team, month))
    }

    fn grew(&self, ledger: Ledger, team: &TeamId) {
        self.credits.charged(ledger, team.as_str());
    }

    fn grew_now<'a>(&'a self, team: &'a TeamId) -> BoxFuture<'a, ()> {
        Box::pin(self.credits_grew_now(team))
    }

    fn supply(&self, team: &TeamId, supply: Supply) {
        let keeping = slots::keep_supplied(
            self.cluster.clone(),
            Arc::clone(&self.pools),
            team.as_str().to_owned(),
            supply,
        );
        tokio::spawn(keeping);
    }
}

/// Answers the peers' questions about teams, with this node's team policy.
#[derive(Debug)]
pub struct TeamsHandler {
    teams: Arc<Teams>,
    nodes: Arc<TeamsOnNodes>,
}

impl TeamsHandler {
    /// Answers with `teams`, whose other nodes are `nodes`.
    pub fn new(teams: Arc<Teams>, nodes: Arc<TeamsOnNodes>) -> Arc<Self> {
        Arc::new(Self { teams, nodes })
    }

    async fn answer(&self, from: String, request: Request) -> Result<Response, String> {
        let (teams, nodes, store) = (&self.teams, &self.nodes, &self.nodes.store);
        let team = |name: &str| TeamId::parse(name).map_err(|e| e.clone());
        Ok(match request {
            Request::KeyTeam(digest) => Response::KeyTeam(
                store.keys.team_of_digest(&digest).map_err(|e| e.to_string())?.map(|t| t.as_str().to_owned()),
            ),
            Request::Tokens(t, month) => own(store, Ledger::Tokens, &team(&t)?, month)?,
            Request::Used(t, month) => own(store, Ledger::Credits, &team(&t)?, month)?,
            Request::Slots { team: t, held, want } => {
                let limit = teams.plan(&team(&t)?).concurrency;
                Response::Slots(nodes.pools.report(&t, limit, &nodes.cluster.live(), &from, held, want))
            }
            Request::Profile { team: t, name } => {
                Response::Profile(store.profiles.get(&team(&t)?, &name).map_err(|e| e.to_string())?)
            }
            Request::SaveProfile { team: t, name, state } => {
                store.profiles.put(&team(&t)?, &name, &state).map_err(|e| e.to_string())?;
                Response::Saved
            }
            Request::Charged { team, month, total } => {
                let tally = Tally { total, by_key: BTreeMap::new() };
                nodes.credits.record(Ledger::Credits, &team, month, &from, tally, Heard::Reported);
                Response::Noted
            }
            Request::TokensUsed { team, month, total, by_key } => {
                let tally = Tally { total, by_key: by_key.into_iter().collect() };
                nodes.credits.record(Ledger::Tokens, &team, month, &from, tally, Heard::Reported);
                Response::Noted
            }
            Request::Relayed(reports) => {
                nodes.credits.relayed(reports);
                Response::Noted
            }
            Request::UsedBeyond(t, month) => beyond(nodes, Ledger::Credits, &team(&t)?, month, &from).await?,
            Request::TokensBeyond(t, month) => {
                beyond(nodes, Ledger::Tokens, &team(&t)?, month, &from).await?
            }
            Request::Load(t) => {
                let (active, waiting, _) = teams.load(&team(&t)?);
                Response::Load(active, waiting)
            }
            Request::Rate(t) => {
                let wait = teams.check_rate(&team(&t)?).err();
                Response::Rate(wait.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)))
            }
        })
    }
}

/// This node's own total of `team`'s month in `ledger`, as an answer.
fn own(store: &Store, ledger: Ledger, team: &TeamId, month: Month) -> Result<Response, String> {
    Ok(ledgers::answer(ledger, ledger.tally(store, team, month).map_err(|e| e.to_string())?))
}

/// As `team`'s owner: its total of `month` in `ledger` on every node but `asker`, as an
/// answer.
async fn beyond(
    nodes: &TeamsOnNodes,
    ledger: Ledger,
    team: &TeamId,
    month: Month,
    asker: &str,
) -> Result<Response, String> {
    Ok(ledgers::answer(ledger, nodes.beyond(ledger, team, month, asker).await.map_err(|e| e.to_string())?))
}

impl crate::cluster::Handler for TeamsHandler {
    fn handle(&self, from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let this = Self { teams: Arc::clone(&self.teams), nodes: Arc::clone(&self.nodes) };
        Box::pin(async move {
            let request: Request = super::messages::decode(&request)?;
            let response = this.answer(from, request).await?;
            Ok(super::messages::encode(&response))
        })
    }
}

/// Browser profiles kept across the cluster: each by the node rendezvous hashing picks for
/// its team and name, read from and saved to there (here when that is this node).
#[derive(Debug)]
pub struct ProfilesOnNodes {
    cluster: Cluster,
    store: Store,
}

impl ProfilesOnNodes {
    /// The profiles of `cluster`'s nodes, this node's in `store`.
    pub fn new(cluster: Cluster, store: Store) -> Self {
        Self { cluster, store }
    }

    /// The keeper of the team's profile `name`, when that is another node.
    fn keeper(&self, team: &TeamId, name: &str) -> Option<String> {
        let owner = self.cluster.owner_of(&format!("profile:{}/{name}", team.as_str()));
        (owner != self.cluster.name()).then_some(owner)
    }
}

impl ProfileKeeper for ProfilesOnNodes {
    fn get<'a>(
        &'a self,
        team: &'a TeamId,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ProfileState>, String>> {
        Box::pin(async move {
            let Some(node) = self.keeper(team, name) else {
                return self.store.profiles.get(team, name).map_err(|e| e.to_string());
            };
            let request = Request::Profile { team: team.as_str().to_owned(), name: name.to_owned() };
            match ask(&self.cluster, &node, &request).await {
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
            let Some(node) = self.keeper(team, name) else {
                return self.store.profiles.put(team, name, state).map_err(|e| e.to_string());
            };
            let (team, name, state) = (team.as_str().to_owned(), name.to_owned(), state.clone());
            match ask(&self.cluster, &node, &Request::SaveProfile { team, name, state }).await {
                Some(Response::Saved) => Ok(()),
                _ => Err(format!("node `{node}`")),
            }
        })
    }
}
