//! Team policy at run time: each team's plan (monthly credits, concurrency, request rate)
//! from the configuration and the store, the credit check before work and the charge after
//! it, the concurrency gate every page fetch passes (scrapes, crawl and batch pages share
//! it; waiters are served in arrival order, so jobs take turns), and the request rate
//! limiter. In a cluster, keys, credits, the concurrency limit and the request rate hold
//! for the cluster as a whole ([`cluster`], [`credits`], [`slots`]).

mod cluster;
pub use cluster::Profiles;
mod credits;
mod slots;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    lease: Option<Arc<slots::Lease>>,
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
    lease: Option<Arc<slots::Lease>>,
}

/// Run-time team policy.
#[derive(Debug)]
pub struct Teams {
    settings: Arc<Settings>,
    store: Store,
    cluster: std::sync::OnceLock<crate::cluster::Cluster>,
    keys: cluster::KeyMemory,
    credits: credits::Credits,
    gates: Mutex<HashMap<String, Arc<Gate>>>,
    pools: Arc<slots::Pools>,
    limiters: Mutex<HashMap<String, Arc<DefaultDirectRateLimiter>>>,
    last_success: Mutex<HashMap<String, u64>>,
}

impl Teams {
    /// Team policy over `store` and `settings`.
    pub fn new(settings: Arc<Settings>, store: Store) -> Self {
        let credits = credits::Credits::kept_in(store.reports.clone());
        Self {
            settings,
            store,
            cluster: std::sync::OnceLock::new(),
            keys: cluster::KeyMemory::default(),
            credits,
            gates: Mutex::new(HashMap::new()),
            pools: Arc::default(),
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

    /// Credits used this month.
    pub fn used(&self, team: &TeamId, month: Month) -> Result<u64, StoreError> {
        self.store.ledger.used(team, month)
    }

    /// Language-model tokens used in `month` through this node: in total, and per key label.
    pub fn tokens_used(&self, team: &TeamId, month: Month) -> Result<(u64, Vec<(String, u64)>), StoreError> {
        Ok((self.store.tokens.used(team, month)?, self.store.tokens.by_key(team, month)?))
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

    /// Records `credits` used now (work that cost credits succeeded). In a cluster the
    /// team's owner hears of it within [`credits::REPORT_AFTER`]; a request whose answer
    /// waits for its charge uses [`Teams::charge_reported`] instead.
    pub fn charge(&self, team: &TeamId, credits: u64) -> Result<(), StoreError> {
        self.write_charge(team, credits)?;
        if credits > 0 && self.cluster.get().is_some() {
            self.credits.charged(credits::Ledger::Credits, team.as_str());
        }
        Ok(())
    }

    /// The charge in this node's ledger.
    fn write_charge(&self, team: &TeamId, credits: u64) -> Result<(), StoreError> {
        if credits > 0 {
            metrics::counter!("credits_charged_total").increment(credits);
            let mut last = self.last_success.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            last.insert(team.as_str().to_owned(), time::now_ms());
        }
        self.store.ledger.charge(team, credits, time::now_ms())
    }

    /// When work of the team last succeeded (since this process started).
    pub fn last_success_ms(&self, team: &TeamId) -> Option<u64> {
        let last = self.last_success.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        last.get(team.as_str()).copied()
    }

    /// The team's gate, made on first use: on a single node it holds the team's whole
    /// limit; in a cluster it starts empty and a task keeps it supplied by the team's owner.
    fn gate(&self, team: &TeamId) -> Arc<Gate> {
        let size = self.plan(team).concurrency;
        let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let gate = gates.entry(team.as_str().to_owned()).or_insert_with(|| {
            let cluster = self.cluster.get().cloned();
            let gate = Arc::new(Gate {
                slots: Arc::new(Semaphore::new(if cluster.is_some() { 0 } else { size as usize })),
                size,
                waiting: AtomicUsize::new(0),
                sent: Arc::new(Semaphore::new(2 * size.max(1) as usize)),
                lease: cluster.is_some().then(Arc::default),
            });
            if let Some(cluster) = cluster {
                let lease = cluster::LeaseKeeper {
                    cluster,
                    pools: Arc::clone(&self.pools),
                    team: team.as_str().to_owned(),
                    gate: Arc::clone(&gate),
                };
                tokio::spawn(lease.run());
            }
            gate
        });
        Arc::clone(gate)
    }

    /// Waits until this node has fewer than twice the team's limit of its pages out on
    /// other nodes for a slot there (see `actors::remote::fetch_on_owner`); the permit is
    /// held until the page is back.
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
        (dir, Teams::new(Arc::new(settings), store))
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
