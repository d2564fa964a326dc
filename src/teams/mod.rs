//! Team policy at run time: each team's plan (monthly credits, concurrency, request rate)
//! from the configuration and the store, the credit check before work and the charge after
//! it ([`Teams::charge`], the one way credits are charged), the concurrency gate every page
//! fetch passes (scrapes, crawl and batch pages share it; waiters are served in arrival
//! order, so jobs take turns), and the request rate limiter. In a cluster, keys, credits,
//! the concurrency limit and the request rate hold for the cluster as a whole: this module
//! asks the other nodes through [`TeamNodes`], which the layer carrying messages between
//! nodes implements.

mod lease;
mod tally;

pub use lease::{Grant, Lease};
pub use tally::{Ledger, Tally};

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::Settings;
use crate::model::{Code, ErrorCode, TeamId, time};
use crate::store::ledger;
pub use crate::store::ledger::{
    HISTORY_MONTHS, Month, history_start, month_bounds, month_of, previous_month,
};
use crate::store::{Store, StoreError};

/// A team's plan as it applies now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Credits per calendar month; `None` is unlimited.
    pub credits: Option<u64>,
    /// Pages in flight at once.
    pub concurrency: u32,
    /// POST requests per minute (0: no limit).
    pub requests_per_minute: u32,
}

/// Not enough credits.
#[derive(Debug, thiserror::Error)]
pub enum CreditError {
    /// The team has fewer credits than the request needs.
    #[error(
        "Insufficient credits to perform this request: {needed} needed, {remaining} remaining this month"
    )]
    Insufficient {
        /// Credits needed.
        needed: u64,
        /// Credits left.
        remaining: u64,
    },
    /// The ledger could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ErrorCode for CreditError {
    fn code(&self) -> Code {
        match self {
            Self::Insufficient { .. } => Code::PaymentRequired,
            Self::Store(e) => e.code(),
        }
    }
}

/// Permission to fetch one page; dropping it frees the slot (in a cluster, or gives it back
/// to the team's owner when this node holds more than its share).
#[derive(Debug)]
pub struct Admission {
    permit: Option<OwnedSemaphorePermit>,
    lease: Option<Arc<Lease>>,
    /// How long the request waited for a slot, when it had to.
    pub waited: Option<Duration>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let (Some(lease), Some(permit)) = (&self.lease, self.permit.take())
            && lease.take_debt()
        {
            permit.forget();
        }
    }
}

#[derive(Debug)]
struct Gate {
    slots: Arc<Semaphore>,
    size: u32,
    waiting: AtomicUsize,
    /// Pages of the team this node has sent to other nodes to take their slot there and
    /// not yet had back: at most twice the limit, so pages waiting for a slot on a site's
    /// node stay few and never crowd a peer's calls.
    sent: Arc<Semaphore>,
    /// In a cluster: the slots the team's owner granted this node (`slots` holds them).
    lease: Option<Arc<Lease>>,
}

/// How a team's keys, credits, tokens, concurrency and request rate hold across the
/// nodes of a cluster: the other nodes as this node's team policy reaches them.
pub trait TeamNodes: Send + Sync + std::fmt::Debug {
    /// The team of the key with SHA-256 `digest`, when another node knows the key.
    fn key_team(&self, digest: [u8; 32]) -> BoxFuture<'_, Option<TeamId>>;
    /// Counts one POST request of `team` at the team's owner: `None` when that is this
    /// node, or it did not answer (this node's own limiter decides); else `Err` is how long
    /// to wait.
    fn rate<'a>(&'a self, team: &'a TeamId) -> BoxFuture<'a, Option<Result<(), Duration>>>;
    /// The team's pages in flight and waiting on the other live nodes.
    fn load<'a>(&'a self, team: &'a TeamId) -> BoxFuture<'a, (u32, u32)>;
    /// What the team used in `month` in `ledger` on every other node.
    fn used<'a>(
        &'a self,
        ledger: Ledger,
        team: &'a TeamId,
        month: Month,
    ) -> BoxFuture<'a, Result<Tally, StoreError>>;
    /// This node's total of `ledger` for the team grew: the team's owner (and the nodes
    /// that take it over should it go down) hear of it soon.
    fn grew(&self, ledger: Ledger, team: &TeamId);
    /// As [`TeamNodes::grew`] for credits, with the team's owner told before this resolves.
    fn grew_now<'a>(&'a self, team: &'a TeamId) -> BoxFuture<'a, ()>;
    /// Keeps the team's slots on this node supplied by the team's owner (see [`Supply`]).
    fn supply(&self, team: &TeamId, supply: Supply);
}

/// A team's gate on a node of a cluster, as the owner's grants keep it supplied: starts
/// empty, holds what the owner granted, and says what its pages want.
#[derive(Debug, Clone)]
pub struct Supply(Arc<Gate>);

impl Supply {
    /// The team's limit.
    pub fn limit(&self) -> u32 {
        self.0.size
    }

    /// The slots this node holds, and its pages waiting for one.
    pub fn held_and_wanted(&self) -> (u32, u32) {
        let held = self.lease().held.load(Ordering::SeqCst);
        (held, u32::try_from(self.0.waiting.load(Ordering::SeqCst)).unwrap_or(u32::MAX))
    }

    /// Applies the owner's answer to the gate.
    pub fn apply(&self, grant: Grant) {
        self.lease().apply(&self.0.slots, &self.0.waiting, grant);
    }

    /// Resolves when a page starts waiting for a slot (the owner is to be asked at once).
    pub async fn wanted(&self) {
        self.lease().wake.notified().await;
    }

    fn lease(&self) -> &Lease {
        self.0.lease.as_deref().expect("a supplied gate has a lease")
    }
}

/// Run-time team policy.
#[derive(Debug)]
pub struct Teams {
    settings: Arc<Settings>,
    store: Store,
    /// The other nodes, in a cluster.
    nodes: Option<Arc<dyn TeamNodes>>,
    gates: Mutex<HashMap<String, Arc<Gate>>>,
    limiters: Mutex<HashMap<String, Arc<DefaultDirectRateLimiter>>>,
    last_success: Mutex<HashMap<String, u64>>,
}

/// Credits just charged ([`Teams::charge`]): in a cluster the team's owner hears of them
/// within a moment, or, through [`Charged::reported`], before the caller answers.
#[derive(Debug)]
pub struct Charged<'a> {
    /// The team, while its owner is still to hear of the charge (in a cluster).
    untold: Option<(&'a dyn TeamNodes, TeamId)>,
}

impl Charged<'_> {
    /// Resolves once the team's owner has heard of the charge (or did not answer, and hears
    /// of it later): the team's next request, through any node, is checked with it. For a
    /// request whose answer reports what it cost.
    pub async fn reported(mut self) {
        if let Some((nodes, team)) = self.untold.take() {
            nodes.grew_now(&team).await;
        }
    }
}

impl Drop for Charged<'_> {
    fn drop(&mut self) {
        if let Some((nodes, team)) = self.untold.take() {
            nodes.grew(Ledger::Credits, &team);
        }
    }
}

impl Teams {
    /// Team policy over `store` and `settings`, in a cluster with `nodes`.
    pub fn new(settings: Arc<Settings>, store: Store, nodes: Option<Arc<dyn TeamNodes>>) -> Self {
        Self {
            settings,
            store,
            nodes,
            gates: Mutex::new(HashMap::new()),
            limiters: Mutex::new(HashMap::new()),
            last_success: Mutex::new(HashMap::new()),
        }
    }

    /// Records in the team's activity log that it started job `id` at `endpoint`.
    pub fn note_activity(
        &self,
        team: &TeamId,
        endpoint: &str,
        id: crate::model::JobId,
        target: Option<&str>,
    ) -> Result<(), StoreError> {
        self.store.activity.record(team, endpoint, id, time::now_ms(), target)
    }

    /// A page of the team's activity (see `ActivityLog::page`); reads the store, so call
    /// it off the async workers.
    pub fn activity_page(
        &self,
        team: &TeamId,
        endpoint: Option<&str>,
        since_ms: u64,
        before: Option<(u64, crate::model::JobId)>,
        limit: usize,
    ) -> Result<crate::store::activity::ActivityPage, StoreError> {
        self.store.activity.page(team, endpoint, since_ms, before, limit)
    }

    /// The team's plan.
    pub fn plan(&self, team: &TeamId) -> Plan {
        let configured = self.settings.team(team.as_str());
        let stored = self.store.teams.get(team).ok().and_then(|r| r.credits);
        Plan {
            credits: stored.unwrap_or(configured.credits),
            concurrency: configured.concurrency.unwrap_or(self.settings.limits.team_concurrency).max(1),
            requests_per_minute: configured
                .requests_per_minute
                .unwrap_or(self.settings.limits.requests_per_minute),
        }
    }

    /// The team a presented key authenticates as: this node's keys, then the other nodes'.
    pub async fn authenticate(&self, key: &str) -> Result<Option<TeamId>, StoreError> {
        if let Some(team) = self.store.keys.team_of(key)? {
            return Ok(Some(team));
        }
        match &self.nodes {
            Some(nodes) => Ok(nodes.key_team(crate::store::keys::digest_of(key)).await),
            None => Ok(None),
        }
    }

    /// Counts one POST request of the team against its rate, at the team's owner when that
    /// is another node that answers; `Err` is how long to wait.
    pub async fn check_rate_everywhere(&self, team: &TeamId) -> Result<(), Duration> {
        if let Some(nodes) = &self.nodes
            && let Some(answer) = nodes.rate(team).await
        {
            return answer;
        }
        self.check_rate(team)
    }

    /// The team's pages in flight and waiting on every live node, and its limit: what
    /// `/v2/team/queue-status` shows behind a load balancer, whichever node answers.
    pub async fn load_everywhere(&self, team: &TeamId) -> (u32, u32, u32) {
        let (active, waiting, limit) = self.load(team);
        let Some(nodes) = &self.nodes else { return (active, waiting, limit) };
        let (a, w) = nodes.load(team).await;
        (active.saturating_add(a), waiting.saturating_add(w), limit)
    }

    /// Credits the team used in `month` on every node (this one alone when it is not part
    /// of a cluster).
    pub async fn used_everywhere(&self, team: &TeamId, month: Month) -> Result<u64, StoreError> {
        Ok(self.everywhere(Ledger::Credits, team, month).await?.total)
    }

    /// Language-model tokens the team used in `month` on every node, as credits are
    /// counted: the total and the use per key label.
    pub async fn tokens_everywhere(
        &self,
        team: &TeamId,
        month: Month,
    ) -> Result<(u64, Vec<(String, u64)>), StoreError> {
        let tally = self.everywhere(Ledger::Tokens, team, month).await?;
        Ok((tally.total, tally.by_key.into_iter().collect()))
    }

    /// The team's total of `month` in `ledger`: this node's ledger and the other nodes'.
    async fn everywhere(&self, ledger: Ledger, team: &TeamId, month: Month) -> Result<Tally, StoreError> {
        let mut tally = ledger.tally(&self.store, team, month)?;
        if let Some(nodes) = &self.nodes {
            tally.add(&nodes.used(ledger, team, month).await?);
        }
        Ok(tally)
    }

    /// Credits left this month (on every node of a cluster); `None` is unlimited.
    pub async fn remaining(&self, team: &TeamId) -> Result<Option<u64>, StoreError> {
        let Some(plan) = self.plan(team).credits else { return Ok(None) };
        let used = self.used_everywhere(team, ledger::month_of(time::now_ms())).await?;
        Ok(Some(plan.saturating_sub(used)))
    }

    /// Fails with 402 unless `needed` credits are left.
    pub async fn require(&self, team: &TeamId, needed: u64) -> Result<(), CreditError> {
        match self.remaining(team).await? {
            Some(remaining) if remaining < needed => Err(CreditError::Insufficient { needed, remaining }),
            _ => Ok(()),
        }
    }

    /// Charges `credits` to the team now (work that cost credits succeeded): the one way
    /// credits are charged. It is in this node's ledger when this returns; in a cluster the
    /// team's owner hears of it within a moment, or, for a request whose answer reports
    /// what it cost, before the answer ([`Charged::reported`]).
    pub fn charge(&self, team: &TeamId, credits: u64) -> Result<Charged<'_>, StoreError> {
        if credits > 0 {
            metrics::counter!("credits_charged_total").increment(credits);
            let mut last = self.last_success.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            last.insert(team.as_str().to_owned(), time::now_ms());
        }
        self.store.ledger.charge(team, credits, time::now_ms())?;
        let untold = self.nodes.as_deref().filter(|_| credits > 0).map(|nodes| (nodes, team.clone()));
        Ok(Charged { untold })
    }

    /// When work of the team last succeeded (since this process started).
    pub fn last_success_ms(&self, team: &TeamId) -> Option<u64> {
        let last = self.last_success.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        last.get(team.as_str()).copied()
    }

    /// The team's gate, made on first use: on a single node it holds the team's whole
    /// limit; in a cluster it starts empty and the team's owner keeps it supplied.
    fn gate(&self, team: &TeamId) -> Arc<Gate> {
        let size = self.plan(team).concurrency;
        let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let gate = gates.entry(team.as_str().to_owned()).or_insert_with(|| {
            let clustered = self.nodes.is_some();
            let gate = Arc::new(Gate {
                slots: Arc::new(Semaphore::new(if clustered { 0 } else { size as usize })),
                size,
                waiting: AtomicUsize::new(0),
                sent: Arc::new(Semaphore::new(2 * size.max(1) as usize)),
                lease: clustered.then(Arc::default),
            });
            if let Some(nodes) = &self.nodes {
                nodes.supply(team, Supply(Arc::clone(&gate)));
            }
            gate
        });
        Arc::clone(gate)
    }

    /// Waits until this node has fewer than twice the team's limit of its pages out on
    /// other nodes for a slot there; the permit is held until the page is back.
    pub async fn send_elsewhere(&self, team: &TeamId) -> OwnedSemaphorePermit {
        let sent = Arc::clone(&self.gate(team).sent);
        // The semaphore is never closed.
        sent.acquire_owned().await.expect("team gates are never closed")
    }

    /// Waits for one of the team's slots.
    pub async fn admit(&self, team: &TeamId) -> Admission {
        let gate = self.gate(team);
        let lease = gate.lease.clone();
        if let Ok(permit) = Arc::clone(&gate.slots).try_acquire_owned() {
            return Admission { permit: Some(permit), lease, waited: None };
        }
        let started = Instant::now();
        let before = gate.waiting.fetch_add(1, Ordering::SeqCst);
        if let Some(lease) = &lease
            && before == 0
        {
            // Ask the team's owner for slots now rather than at the next report.
            lease.wake.notify_one();
        }
        let permit = Arc::clone(&gate.slots).acquire_owned().await;
        gate.waiting.fetch_sub(1, Ordering::SeqCst);
        // The semaphore is never closed.
        let permit = permit.expect("team gates are never closed");
        Admission { permit: Some(permit), lease, waited: Some(started.elapsed()) }
    }

    /// (pages in flight, pages waiting, limit) for the team, on this node.
    pub fn load(&self, team: &TeamId) -> (u32, u32, u32) {
        let size = self.plan(team).concurrency;
        let gate =
            self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(team.as_str()).cloned();
        let Some(gate) = gate else { return (0, 0, size) };
        let owned = match &gate.lease {
            Some(lease) => lease.held.load(Ordering::SeqCst),
            None => gate.size,
        };
        let active = owned.saturating_sub(u32::try_from(gate.slots.available_permits()).unwrap_or(u32::MAX));
        (active, gate.waiting.load(Ordering::SeqCst) as u32, gate.size)
    }

    /// Counts one POST request; `Err` is how long to wait when over the team's rate.
    pub fn check_rate(&self, team: &TeamId) -> Result<(), Duration> {
        let Some(per_minute) = NonZeroU32::new(self.plan(team).requests_per_minute) else { return Ok(()) };
        let limiter = {
            let mut limiters = self.limiters.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(
                limiters
                    .entry(team.as_str().to_owned())
                    .or_insert_with(|| Arc::new(RateLimiter::direct(Quota::per_minute(per_minute)))),
            )
        };
        limiter.check().map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

/// How a key is named in usage reports: its first three and last six characters
/// (`fc-…a1b2c3`), enough to tell a team's keys apart without revealing them.
pub fn key_label(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    if chars.len() <= 12 {
        return format!("…{}", chars.iter().skip(chars.len().saturating_sub(4)).collect::<String>());
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 6..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TeamSettings;

    fn teams(configure: impl FnOnce(&mut Settings)) -> (tempfile::TempDir, Teams) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut settings = Settings::defaults_with_data_dir(dir.path());
        configure(&mut settings);
        let store = Store::open(dir.path()).expect("store");
        (dir, Teams::new(Arc::new(settings), store, None))
    }

    #[tokio::test]
    async fn credits_are_checked_and_charged() {
        let (_dir, teams) = teams(|s| {
            s.teams.insert("small".into(), TeamSettings { credits: Some(3), ..Default::default() });
        });
        let small = TeamId::parse("small").expect("team");
        assert_eq!(teams.remaining(&small).await.expect("r"), Some(3));
        teams.require(&small, 3).await.expect("enough");
        teams.charge(&small, 2).expect("charge");
        assert!(matches!(
            teams.require(&small, 2).await,
            Err(CreditError::Insufficient { needed: 2, remaining: 1 })
        ));
        let default = TeamId::parse("default").expect("team");
        assert_eq!(teams.remaining(&default).await.expect("r"), None, "unlimited by default");
        teams.store.teams.set_credits(&small, None).expect("set");
        assert_eq!(teams.remaining(&small).await.expect("r"), None, "the stored plan wins");
    }

    #[tokio::test]
    async fn pages_out_on_other_nodes_stay_under_twice_the_limit() {
        let (_dir, teams) = teams(|s| s.limits.team_concurrency = 2);
        let team = TeamId::parse("t").expect("team");
        let mut out = Vec::new();
        for _ in 0..4 {
            out.push(teams.send_elsewhere(&team).await);
        }
        let fifth = tokio::time::timeout(Duration::from_millis(50), teams.send_elsewhere(&team));
        assert!(fifth.await.is_err(), "a fifth page waits");
        out.pop();
        let fifth = tokio::time::timeout(Duration::from_millis(50), teams.send_elsewhere(&team));
        assert!(fifth.await.is_ok(), "and goes once one is back");
        assert_eq!(teams.load(&team), (0, 0, 2), "none of them holds a slot here");
    }

    #[tokio::test]
    async fn the_gate_admits_up_to_the_limit() {
        let (_dir, teams) = teams(|s| s.limits.team_concurrency = 2);
        let team = TeamId::parse("t").expect("team");
        let a = teams.admit(&team).await;
        let b = teams.admit(&team).await;
        assert!(a.waited.is_none() && b.waited.is_none());
        assert_eq!(teams.load(&team), (2, 0, 2));
        let teams = Arc::new(teams);
        let asked = std::time::Instant::now();
        let waiter = {
            let teams = Arc::clone(&teams);
            let team = team.clone();
            tokio::spawn(async move { teams.admit(&team).await.waited })
        };
        // The third request queues behind the two admitted ones.
        let deadline = asked + Duration::from_secs(10);
        while teams.load(&team) != (2, 1, 2) {
            assert!(
                std::time::Instant::now() < deadline,
                "the third request never queued: {:?}",
                teams.load(&team)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(a);
        let waited = waiter.await.expect("join").expect("it waited");
        assert!(waited > Duration::ZERO && waited <= asked.elapsed(), "{waited:?}");
        drop(b);
    }

    #[test]
    fn the_request_rate_is_limited_per_team() {
        let (_dir, teams) = teams(|s| s.limits.requests_per_minute = 2);
        let (a, b) = (TeamId::parse("a").expect("t"), TeamId::parse("b").expect("t"));
        assert!(teams.check_rate(&a).is_ok() && teams.check_rate(&a).is_ok());
        let wait = teams.check_rate(&a).unwrap_err();
        assert!(wait > Duration::from_secs(1) && wait <= Duration::from_secs(30), "{wait:?}");
        assert!(teams.check_rate(&b).is_ok(), "teams do not share a budget");
    }
}
