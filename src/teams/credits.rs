//! Credits across a cluster. Each node keeps the ledger of the credits charged through it
//! on its own disk; the team's **owner** (rendezvous hashing of the team over the live
//! members, as for its slots and rate) also keeps what every other node last reported of
//! its ledger, so that a credit check is one call to the owner instead of one to every node:
//!
//! - a node that charged a team reports its month's total to the team's owner: before it
//!   answers a request whose answer waits for the charge (scrape, map, parse, search; see
//!   [`Teams::charge_reported`]), so the team's next request is checked with it through any
//!   node; within [`REPORT_AFTER`] for work charged in the background (crawl and batch
//!   pages, browser sessions, model jobs). A report holds the total, not the charge, so a
//!   report lost or repeated changes nothing; a failed report is sent again;
//! - a credit check adds this node's own ledger to what the owner answers: its own ledger
//!   and the others' totals as reported. The owner asks a live node it has not heard from
//!   (after a membership change it forgets what the live nodes reported: they may have
//!   reported to another owner meanwhile), and a node of a protocol older than
//!   [`REPORTS_SINCE`] every time (it does not report);
//! - a node that is down is counted as it last reported, so a team cannot overspend by what
//!   it spent through that node (unless the owner went down with it: then what that node
//!   spent is counted again once it is back);
//! - a node that cannot reach the owner, or whose owner is of an older protocol, asks every
//!   live node, as before owners kept totals.
//!
//! What the owner knows of background charges lags them by up to [`REPORT_AFTER`] and a
//! call; two checks that close together on two nodes can both pass, as on one node.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use super::Teams;
use super::cluster::{Request, Response, ask, ask_each, peers, team_key};
use crate::cluster::Cluster;
use crate::model::{TeamId, time};
use crate::store::StoreError;
use crate::store::ledger::{Month, month_of};

/// How long after a charge its team's total is reported (charges made meanwhile go in the
/// same report).
pub(super) const REPORT_AFTER: Duration = Duration::from_millis(50);
/// The first protocol version whose nodes report their totals and answer
/// [`Request::UsedBeyond`].
pub(super) const REPORTS_SINCE: u32 = 7;

/// What a team's owner knows of other nodes' ledgers, and which teams this node has yet
/// to report.
#[derive(Debug, Default)]
pub(super) struct Credits {
    /// Per team and month: each node's total as it last reported it (or answered).
    totals: Mutex<HashMap<(String, Month), HashMap<String, u64>>>,
    /// Teams charged here since their last report.
    unreported: Mutex<HashSet<String>>,
    wake: Notify,
}

impl Credits {
    /// Keeps `node`'s total for the team's month (the larger of two: totals only grow).
    /// Months before the previous one are dropped.
    pub(super) fn record(&self, team: &str, month: Month, node: &str, total: u64) {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.retain(|(_, m), _| m + 1 >= month);
        let known = totals.entry((team.to_owned(), month)).or_default().entry(node.to_owned()).or_default();
        *known = (*known).max(total);
    }

    /// The totals known for the team's month.
    fn known(&self, team: &str, month: Month) -> HashMap<String, u64> {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.get(&(team.to_owned(), month)).cloned().unwrap_or_default()
    }

    /// Forgets what the nodes in `live` reported: after a membership change they may have
    /// reported to another owner. What nodes that are down reported is kept.
    fn forget(&self, live: &[String]) {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        for nodes in totals.values_mut() {
            nodes.retain(|node, _| !live.contains(node));
        }
    }

    /// Notes that the team was charged here (its total is reported soon).
    pub(super) fn charged(&self, team: &str) {
        let mut unreported = self.unreported.lock().unwrap_or_else(PoisonError::into_inner);
        if unreported.insert(team.to_owned()) {
            self.wake.notify_one();
        }
    }

    fn take_unreported(&self) -> Vec<String> {
        let mut unreported = self.unreported.lock().unwrap_or_else(PoisonError::into_inner);
        unreported.drain().collect()
    }
}

impl Teams {
    /// Starts reporting this node's charges to their teams' owners, and forgetting the
    /// reports of live nodes at each membership change.
    pub(super) fn keep_credits(self: &Arc<Self>, cluster: &Cluster) {
        let teams = Arc::clone(self);
        let mut members = cluster.watch();
        tokio::spawn(async move {
            while members.changed().await.is_ok() {
                let live = Arc::clone(&members.borrow_and_update());
                teams.credits.forget(&live);
            }
        });
        let teams = Arc::clone(self);
        let cluster = cluster.clone();
        tokio::spawn(async move {
            loop {
                teams.credits.wake.notified().await;
                tokio::time::sleep(REPORT_AFTER).await;
                let pending = teams.credits.take_unreported();
                let reports = pending.iter().map(|team| teams.report(&cluster, team));
                for (team, reported) in pending.iter().zip(futures::future::join_all(reports).await) {
                    if !reported {
                        teams.credits.charged(team);
                    }
                }
            }
        });
    }

    /// [`Teams::charge`], and in a cluster the team's owner told before this returns (so
    /// that the team's next request, through any node, is checked with this charge
    /// counted; when the owner does not answer the report is sent again later).
    pub async fn charge_reported(&self, team: &TeamId, credits: u64) -> Result<(), StoreError> {
        self.write_charge(team, credits)?;
        if let Some(cluster) = self.cluster.get().filter(|_| credits > 0)
            && !self.report(cluster, team.as_str()).await
        {
            self.credits.charged(team.as_str());
        }
        Ok(())
    }

    /// Reports this node's month's total of `team` to the team's owner; false when the
    /// owner should have had it and did not answer.
    async fn report(&self, cluster: &Cluster, team: &str) -> bool {
        let owner = cluster.owner_of(&team_key(team));
        if owner == cluster.name() || cluster.version_of(&owner).is_none_or(|v| v < REPORTS_SINCE) {
            return true;
        }
        let Ok(id) = TeamId::parse(team) else { return true };
        let month = month_of(time::now_ms());
        let Ok(total) = self.used(&id, month) else { return false };
        let request = Request::Charged { team: team.to_owned(), month, total };
        matches!(ask(cluster, &owner, &request).await, Some(Response::Noted))
    }

    /// Credits the team used in `month` on every node (this one alone when it is not part
    /// of a cluster): this node's ledger and what the team's owner knows of the others.
    pub async fn used_everywhere(&self, team: &TeamId, month: Month) -> Result<u64, StoreError> {
        let mine = self.used(team, month)?;
        let Some(cluster) = self.cluster.get() else { return Ok(mine) };
        let owner = cluster.owner_of(&team_key(team.as_str()));
        if owner == cluster.name() {
            return Ok(mine.saturating_add(self.used_beyond(team, month, cluster.name()).await?));
        }
        if cluster.version_of(&owner).is_some_and(|v| v >= REPORTS_SINCE) {
            let request = Request::UsedBeyond(team.as_str().to_owned(), month);
            if let Some(Response::Used(others)) = ask(cluster, &owner, &request).await {
                return Ok(mine.saturating_add(others));
            }
            tracing::debug!(node = %owner, "the team's owner did not answer; every node asked");
        }
        Ok(mine.saturating_add(self.ledgers_of(cluster, team, month, &peers(cluster)).await))
    }

    /// The credits `nodes` say the team used in `month`, asked at once; each answer is kept
    /// as that node's total (a node that does not answer is not counted, and named).
    async fn ledgers_of(&self, cluster: &Cluster, team: &TeamId, month: Month, nodes: &[String]) -> u64 {
        let answers = ask_each(cluster, nodes, &Request::Used(team.as_str().to_owned(), month)).await;
        let mut used = 0u64;
        for (node, answer) in nodes.iter().zip(answers) {
            match answer {
                Some(Response::Used(n)) => {
                    used = used.saturating_add(n);
                    self.credits.record(team.as_str(), month, node, n);
                }
                _ => {
                    tracing::warn!(node = %node, team = %team.as_str(), "a node's credit use is not counted")
                }
            }
        }
        used
    }

    /// As the team's owner: the credits the team used in `month` on every node but
    /// `asker` (whose own ledger the asker reads), this node's from its ledger and the
    /// others' as reported; a live node not heard from is asked now.
    pub(super) async fn used_beyond(
        &self,
        team: &TeamId,
        month: Month,
        asker: &str,
    ) -> Result<u64, StoreError> {
        let Some(cluster) = self.cluster.get() else { return Ok(0) };
        let me = cluster.name();
        let mut used = if asker == me { 0 } else { self.used(team, month)? };
        let known = self.credits.known(team.as_str(), month);
        let reports = |node: &str| cluster.version_of(node).is_none_or(|v| v >= REPORTS_SINCE);
        let mut unheard = Vec::new();
        for (node, total) in &known {
            if node != asker && node != me && reports(node) {
                used = used.saturating_add(*total);
            }
        }
        for node in peers(cluster) {
            if node != asker && (!known.contains_key(&node) || !reports(&node)) {
                unheard.push(node);
            }
        }
        used = used.saturating_add(self.ledgers_of(cluster, team, month, &unheard).await);
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_only_grow_and_live_nodes_are_forgotten_at_a_change() {
        let credits = Credits::default();
        credits.record("t", 10, "a", 5);
        credits.record("t", 10, "a", 3);
        credits.record("t", 10, "b", 7);
        assert_eq!(credits.known("t", 10), HashMap::from([("a".into(), 5), ("b".into(), 7)]));
        credits.forget(&["a".to_owned(), "c".to_owned()]);
        assert_eq!(credits.known("t", 10), HashMap::from([("b".into(), 7)]), "b is down: kept");
        credits.record("t", 12, "a", 1);
        assert!(credits.known("t", 10).is_empty(), "months before the previous one are dropped");
    }
}
