//! Credits and language-model tokens across a cluster. Each node keeps the ledgers of what
//! it charged and used on its own disk; the team's **owner** (rendezvous hashing of the team
//! over the live members, as for its slots and rate) also keeps what every other node last
//! reported of its ledgers, so that a credit check or a token report is one call to the
//! owner instead of one to every node:
//!
//! - a node that charged a team reports its month's total to the team's owner: before it
//!   answers a request whose answer waits for the charge (scrape, map, parse, search; see
//!   [`Teams::charge_reported`]), so the team's next request is checked with it through any
//!   node; within [`REPORT_AFTER`] for work charged in the background (crawl and batch
//!   pages, browser sessions, model jobs). Tokens a team's model calls used here are
//!   reported the same way, within [`REPORT_AFTER`], with their part per API key. A report
//!   holds the total, not the charge, so a report lost or repeated changes nothing; a failed
//!   report is sent again;
//! - a credit check (or a token report) adds this node's own ledger to what the owner
//!   answers: its own ledger and the others' totals as reported. The owner asks a live node
//!   it has not heard from (after a membership change it forgets what the live nodes
//!   reported: they may have reported to another owner meanwhile), and a node of a protocol
//!   older than the ledger's ([`Ledger::since`]) every time (it does not report);
//! - a node that is down is counted as it last reported, so a team cannot overspend by what
//!   it spent through that node, and its tokens stay in the team's report (unless the owner
//!   went down with it: then what that node used is counted again once it is back). The
//!   owner keeps the months of a team's history
//!   ([`crate::store::ledger::HISTORY_MONTHS`]), so a history shows what a node that is
//!   down reported in each of them, and keeps them on disk (`store::reports`), so that
//!   it still counts them after a restart of its own;
//! - a node that cannot reach the owner, or whose owner is of an older protocol, asks every
//!   live node, as before owners kept totals.
//!
//! What the owner knows of background charges lags them by up to [`REPORT_AFTER`] and a
//! call; two checks that close together on two nodes can both pass, as on one node.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use super::Teams;
use super::cluster::{Request, Response, ask, ask_each, peers, team_key};
use crate::cluster::Cluster;
use crate::model::{TeamId, time};
use crate::store::StoreError;
use crate::store::ledger::{Month, history_start, month_of};
use crate::store::reports::{Report, ReportKey, ReportStore};

/// How long after a charge its team's total is reported (charges made meanwhile go in the
/// same report).
pub(super) const REPORT_AFTER: Duration = Duration::from_millis(50);

/// A ledger whose totals each team's owner keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Ledger {
    /// Credits charged.
    Credits,
    /// Language-model tokens used.
    Tokens,
}

impl Ledger {
    /// How reports of this ledger are told apart on disk.
    fn byte(self) -> u8 {
        match self {
            Self::Credits => 0,
            Self::Tokens => 1,
        }
    }

    fn of_byte(byte: u8) -> Option<Self> {
        [Self::Credits, Self::Tokens].into_iter().find(|l| l.byte() == byte)
    }

    /// The first protocol version whose nodes report this ledger's totals to a team's owner
    /// and answer for the others ([`Request::UsedBeyond`], [`Request::TokensBeyond`]).
    pub(super) fn since(self) -> u32 {
        match self {
            Self::Credits => 7,
            Self::Tokens => 11,
        }
    }

    /// What a node is asked for its own total.
    fn own(self, team: &str, month: Month) -> Request {
        match self {
            Self::Credits => Request::Used(team.to_owned(), month),
            Self::Tokens => Request::Tokens(team.to_owned(), month),
        }
    }

    /// What a team's owner is asked for every node's total but the asker's.
    fn beyond(self, team: &str, month: Month) -> Request {
        match self {
            Self::Credits => Request::UsedBeyond(team.to_owned(), month),
            Self::Tokens => Request::TokensBeyond(team.to_owned(), month),
        }
    }

    /// The report of a node's total to the team's owner.
    fn report(self, team: &str, month: Month, tally: Tally) -> Request {
        let (team, total) = (team.to_owned(), tally.total);
        match self {
            Self::Credits => Request::Charged { team, month, total },
            Self::Tokens => {
                Request::TokensUsed { team, month, total, by_key: tally.by_key.into_iter().collect() }
            }
        }
    }

    /// `tally` as the answer to [`Ledger::own`] or [`Ledger::beyond`].
    pub(super) fn answer(self, tally: Tally) -> Response {
        match self {
            Self::Credits => Response::Used(tally.total),
            Self::Tokens => Response::Tokens(tally.total, tally.by_key.into_iter().collect()),
        }
    }
}

/// A total of a ledger, and for tokens its part per API key label.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tally {
    pub total: u64,
    pub by_key: BTreeMap<String, u64>,
}

impl Tally {
    fn add(&mut self, other: &Self) {
        self.total = self.total.saturating_add(other.total);
        for (label, n) in &other.by_key {
            let part = self.by_key.entry(label.clone()).or_default();
            *part = part.saturating_add(*n);
        }
    }

    /// The tally an answer of [`Ledger::own`] or [`Ledger::beyond`] holds.
    fn of(answer: Response) -> Option<Self> {
        match answer {
            Response::Used(total) => Some(Self { total, by_key: BTreeMap::new() }),
            Response::Tokens(total, by_key) => Some(Self { total, by_key: by_key.into_iter().collect() }),
            _ => None,
        }
    }
}

/// Each node's total of one ledger, team and month, as it last reported it (or answered).
type Reports = HashMap<String, Tally>;

/// What a team's owner knows of other nodes' ledgers, and which teams this node has yet
/// to report.
#[derive(Debug, Default)]
pub(super) struct Credits {
    /// Per ledger, team and month: each node's total as it last reported it (or answered).
    totals: Mutex<HashMap<(Ledger, String, Month), Reports>>,
    /// The oldest month kept in `totals` since it was last pruned: older ones are dropped
    /// once, when a month begins, not at every report.
    oldest_kept: AtomicU32,
    /// Teams charged (or whose tokens grew) here since their last report.
    unreported: Mutex<HashSet<(Ledger, String)>>,
    wake: Notify,
    /// Where `totals` is kept on disk (none: in memory only).
    kept: Option<ReportStore>,
}

impl Credits {
    /// The reports `kept` holds of the months of a team's history that ends now, kept there
    /// from now on.
    pub(super) fn kept_in(kept: ReportStore) -> Self {
        let oldest = history_start(month_of(time::now_ms()));
        let mut totals: HashMap<(Ledger, String, Month), Reports> = HashMap::new();
        match kept.since(oldest) {
            Ok(reports) => {
                for (key, report) in reports {
                    let Some(ledger) = Ledger::of_byte(key.ledger) else { continue };
                    let tally = Tally { total: report.total, by_key: report.by_key.into_iter().collect() };
                    totals.entry((ledger, key.team, key.month)).or_default().insert(key.node, tally);
                }
            }
            Err(e) => tracing::warn!(error = %e, "the reports kept as a team's owner are not read"),
        }
        Self {
            totals: Mutex::new(totals),
            oldest_kept: AtomicU32::new(oldest),
            kept: Some(kept),
            ..Self::default()
        }
    }

    /// Keeps `node`'s total for the team's month (the larger of two: totals only grow), on
    /// disk too. Months older than a team's history
    /// ([`crate::store::ledger::HISTORY_MONTHS`]) are dropped.
    pub(super) fn record(&self, ledger: Ledger, team: &str, month: Month, node: &str, tally: Tally) {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        let oldest = history_start(month);
        if self.oldest_kept.fetch_max(oldest, Ordering::Relaxed) < oldest {
            totals.retain(|(_, _, m), _| *m >= oldest);
            self.drop_kept(&[], oldest);
        }
        let known =
            totals.entry((ledger, team.to_owned(), month)).or_default().entry(node.to_owned()).or_default();
        if tally.total < known.total || tally == *known {
            return;
        }
        if let Some(kept) = &self.kept {
            let key =
                ReportKey { ledger: ledger.byte(), team: team.to_owned(), month, node: node.to_owned() };
            let report = Report { total: tally.total, by_key: tally.by_key.clone().into_iter().collect() };
            if let Err(e) = kept.put(&key, &report) {
                tracing::warn!(error = %e, node, team, "a node's report is kept in memory only");
            }
        }
        *known = tally;
    }

    /// Drops the kept reports of `nodes` and of months before `oldest` from the disk.
    fn drop_kept(&self, nodes: &[String], oldest: Month) {
        if let Some(Err(e)) = self.kept.as_ref().map(|kept| kept.drop_where(nodes, oldest)) {
            tracing::warn!(error = %e, "reports no longer wanted are left on disk");
        }
    }

    /// The totals known for the team's month.
    fn known(&self, ledger: Ledger, team: &str, month: Month) -> Reports {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.get(&(ledger, team.to_owned(), month)).cloned().unwrap_or_default()
    }

    /// Forgets what the nodes in `live` reported: after a membership change they may have
    /// reported to another owner. What nodes that are down reported is kept.
    fn forget(&self, live: &[String]) {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        for nodes in totals.values_mut() {
            nodes.retain(|node, _| !live.contains(node));
        }
        self.drop_kept(live, self.oldest_kept.load(Ordering::Relaxed));
    }

    /// Notes that the team's total grew here (it is reported soon).
    pub(super) fn charged(&self, ledger: Ledger, team: &str) {
        let mut unreported = self.unreported.lock().unwrap_or_else(PoisonError::into_inner);
        if unreported.insert((ledger, team.to_owned())) {
            self.wake.notify_one();
        }
    }

    fn take_unreported(&self) -> Vec<(Ledger, String)> {
        let mut unreported = self.unreported.lock().unwrap_or_else(PoisonError::into_inner);
        unreported.drain().collect()
    }
}

impl Teams {
    /// Starts reporting this node's charges and token use to their teams' owners, and
    /// forgetting the reports of live nodes at each membership change.
    pub(super) fn keep_totals(self: &Arc<Self>, cluster: &Cluster) {
        let teams = Arc::clone(self);
        let mut members = cluster.watch();
        tokio::spawn(async move {
            // Reports kept from before a restart, of nodes live now, may be older than what
            // they reported to another owner meanwhile: they are asked again.
            let live = Arc::clone(&members.borrow_and_update());
            teams.credits.forget(&live);
            while members.changed().await.is_ok() {
                let live = Arc::clone(&members.borrow_and_update());
                teams.credits.forget(&live);
            }
        });
        let teams = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                for team in teams.store.tokens.changed().await {
                    teams.credits.charged(Ledger::Tokens, team.as_str());
                }
            }
        });
        let teams = Arc::clone(self);
        let cluster = cluster.clone();
        tokio::spawn(async move {
            loop {
                teams.credits.wake.notified().await;
                tokio::time::sleep(REPORT_AFTER).await;
                let pending = teams.credits.take_unreported();
                let reports = pending.iter().map(|(ledger, team)| teams.report(&cluster, *ledger, team));
                for ((ledger, team), reported) in pending.iter().zip(futures::future::join_all(reports).await)
                {
                    if !reported {
                        teams.credits.charged(*ledger, team);
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
            && !self.report(cluster, Ledger::Credits, team.as_str()).await
        {
            self.credits.charged(Ledger::Credits, team.as_str());
        }
        Ok(())
    }

    /// This node's own total of the team's month in `ledger`.
    pub(super) fn tally(&self, ledger: Ledger, team: &TeamId, month: Month) -> Result<Tally, StoreError> {
        Ok(match ledger {
            Ledger::Credits => Tally { total: self.used(team, month)?, by_key: BTreeMap::new() },
            Ledger::Tokens => {
                let (total, by_key) = self.tokens_used(team, month)?;
                Tally { total, by_key: by_key.into_iter().collect() }
            }
        })
    }

    /// Reports this node's month's total of `team` in `ledger` to the team's owner; false
    /// when the owner should have had it and did not answer.
    async fn report(&self, cluster: &Cluster, ledger: Ledger, team: &str) -> bool {
        let owner = cluster.owner_of(&team_key(team));
        if owner == cluster.name() || cluster.version_of(&owner).is_none_or(|v| v < ledger.since()) {
            return true;
        }
        let Ok(id) = TeamId::parse(team) else { return true };
        let month = month_of(time::now_ms());
        let Ok(tally) = self.tally(ledger, &id, month) else { return false };
        matches!(ask(cluster, &owner, &ledger.report(team, month, tally)).await, Some(Response::Noted))
    }

    /// Credits the team used in `month` on every node (this one alone when it is not part
    /// of a cluster): this node's ledger and what the team's owner knows of the others.
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

    /// The team's total of `month` in `ledger` on every node: this node's ledger and what
    /// the team's owner knows of the others (every live node's answer when the owner cannot
    /// say).
    async fn everywhere(&self, ledger: Ledger, team: &TeamId, month: Month) -> Result<Tally, StoreError> {
        let mut tally = self.tally(ledger, team, month)?;
        let Some(cluster) = self.cluster.get() else { return Ok(tally) };
        let owner = cluster.owner_of(&team_key(team.as_str()));
        if owner == cluster.name() {
            tally.add(&self.beyond(ledger, team, month, cluster.name()).await?);
            return Ok(tally);
        }
        if cluster.version_of(&owner).is_some_and(|v| v >= ledger.since()) {
            let others = ask(cluster, &owner, &ledger.beyond(team.as_str(), month)).await.and_then(Tally::of);
            if let Some(others) = others {
                tally.add(&others);
                return Ok(tally);
            }
            tracing::debug!(node = %owner, "the team's owner did not answer; every node asked");
        }
        tally.add(&self.ledgers_of(cluster, ledger, team, month, &peers(cluster)).await);
        Ok(tally)
    }

    /// The totals `nodes` say the team has in `month` in `ledger`, asked at once; each
    /// answer is kept as that node's total (a node that does not answer is not counted,
    /// and named).
    async fn ledgers_of(
        &self,
        cluster: &Cluster,
        ledger: Ledger,
        team: &TeamId,
        month: Month,
        nodes: &[String],
    ) -> Tally {
        let answers = ask_each(cluster, nodes, &ledger.own(team.as_str(), month)).await;
        let mut sum = Tally::default();
        for (node, answer) in nodes.iter().zip(answers) {
            match answer.and_then(Tally::of) {
                Some(tally) => {
                    sum.add(&tally);
                    self.credits.record(ledger, team.as_str(), month, node, tally);
                }
                None => {
                    tracing::warn!(node = %node, team = %team.as_str(), ?ledger, "a node's total is not counted")
                }
            }
        }
        sum
    }

    /// As the team's owner: the team's total of `month` in `ledger` on every node but
    /// `asker` (whose own ledger the asker reads), this node's from its ledger and the
    /// others' as reported; a live node not heard from is asked now.
    pub(super) async fn beyond(
        &self,
        ledger: Ledger,
        team: &TeamId,
        month: Month,
        asker: &str,
    ) -> Result<Tally, StoreError> {
        let Some(cluster) = self.cluster.get() else { return Ok(Tally::default()) };
        let me = cluster.name();
        let mut sum = if asker == me { Tally::default() } else { self.tally(ledger, team, month)? };
        let known = self.credits.known(ledger, team.as_str(), month);
        let reports = |node: &str| cluster.version_of(node).is_none_or(|v| v >= ledger.since());
        for (node, tally) in &known {
            if node != asker && node != me && reports(node) {
                sum.add(tally);
            }
        }
        let unheard: Vec<String> = peers(cluster)
            .into_iter()
            .filter(|node| node != asker && (!known.contains_key(node) || !reports(node)))
            .collect();
        sum.add(&self.ledgers_of(cluster, ledger, team, month, &unheard).await);
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(total: u64, by_key: &[(&str, u64)]) -> Tally {
        Tally { total, by_key: by_key.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect() }
    }

    #[test]
    fn totals_only_grow_and_live_nodes_are_forgotten_at_a_change() {
        let credits = Credits::default();
        let known = |c: &Credits, month: Month| -> HashMap<String, u64> {
            c.known(Ledger::Credits, "t", month).into_iter().map(|(node, t)| (node, t.total)).collect()
        };
        credits.record(Ledger::Credits, "t", 202_602, "a", tally(5, &[]));
        credits.record(Ledger::Credits, "t", 202_602, "a", tally(3, &[]));
        credits.record(Ledger::Credits, "t", 202_602, "b", tally(7, &[]));
        assert_eq!(known(&credits, 202_602), HashMap::from([("a".into(), 5), ("b".into(), 7)]));
        credits.forget(&["a".to_owned(), "c".to_owned()]);
        assert_eq!(known(&credits, 202_602), HashMap::from([("b".into(), 7)]), "b is down: kept");
        // A year of months is kept, across the turn of the year.
        credits.record(Ledger::Credits, "t", 202_601, "b", tally(2, &[]));
        credits.record(Ledger::Credits, "t", 202_612, "b", tally(4, &[]));
        credits.record(Ledger::Credits, "t", 202_701, "a", tally(1, &[]));
        assert_eq!(known(&credits, 202_612), HashMap::from([("b".into(), 4)]), "December in January");
        assert_eq!(known(&credits, 202_602), HashMap::from([("b".into(), 7)]), "the year's first month");
        assert!(known(&credits, 202_601).is_empty(), "older than a year: dropped");
    }

    #[test]
    fn an_owner_reads_back_what_it_kept_of_nodes_down_and_forgets_live_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(dir.path()).expect("open");
        let month = month_of(time::now_ms());
        let credits = Credits::kept_in(store.reports.clone());
        credits.record(Ledger::Credits, "t", month, "b", tally(5, &[]));
        credits.record(Ledger::Credits, "t", month, "c", tally(2, &[]));
        credits.record(Ledger::Tokens, "t", month, "b", tally(40, &[("k1", 40)]));
        credits.record(Ledger::Credits, "t", history_start(month), "b", tally(7, &[]));
        drop(credits);

        let again = Credits::kept_in(store.reports.clone());
        let credits_of = |c: &Credits, month: Month| -> HashMap<String, u64> {
            c.known(Ledger::Credits, "t", month).into_iter().map(|(node, t)| (node, t.total)).collect()
        };
        assert_eq!(credits_of(&again, month), HashMap::from([("b".into(), 5), ("c".into(), 2)]));
        assert_eq!(again.known(Ledger::Tokens, "t", month)["b"], tally(40, &[("k1", 40)]));
        assert_eq!(credits_of(&again, history_start(month)), HashMap::from([("b".into(), 7)]));
        // c is back: what it reported may be older than what it reported elsewhere since.
        again.forget(&["a".to_owned(), "c".to_owned()]);
        let third = Credits::kept_in(store.reports.clone());
        assert_eq!(credits_of(&third, month), HashMap::from([("b".into(), 5)]), "c forgotten on disk too");
    }

    #[test]
    fn the_two_ledgers_are_kept_apart_and_token_tallies_add_up_per_key() {
        let credits = Credits::default();
        credits.record(Ledger::Credits, "t", 202_610, "a", tally(4, &[]));
        credits.record(Ledger::Tokens, "t", 202_610, "a", tally(300, &[("k1", 200), ("k2", 100)]));
        credits.record(Ledger::Tokens, "t", 202_610, "a", tally(250, &[("k1", 250)]));
        assert_eq!(credits.known(Ledger::Credits, "t", 202_610)["a"], tally(4, &[]));
        let tokens = &credits.known(Ledger::Tokens, "t", 202_610)["a"];
        assert_eq!(tokens, &tally(300, &[("k1", 200), ("k2", 100)]), "a smaller total is an older one");
        let mut sum = tokens.clone();
        sum.add(&tally(50, &[("k2", 20), ("k3", 30)]));
        assert_eq!(sum, tally(350, &[("k1", 200), ("k2", 120), ("k3", 30)]));
    }
}
