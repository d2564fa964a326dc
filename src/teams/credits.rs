//! Credits and language-model tokens across a cluster. Each node keeps the ledgers of what
//! it charged and used on its own disk; the team's **owner** (rendezvous hashing of the team
//! over the live members, as for its slots and rate) also keeps what every other node last
//! reported of its ledgers, so that a credit check or a token report is one call to the
//! owner instead of one to every node:
//!
//! - a node that charged a team reports its month's total to the team's owner, and a copy
//!   to each of the team's two **next owners** (the nodes that take the team over should
//!   the owner, or the owner and the first of them, go down with the reporting node; see
//!   [`Cluster::next_owners_of`]; the owner itself reports to them too): before it answers
//!   a request whose answer waits for the charge (scrape, map, parse, search; see
//!   [`Teams::charge_reported`]), so the team's next request is checked with it through any
//!   node, and the copies within [`REPORT_AFTER`] (a next owner that hangs holds no
//!   answer); all within [`REPORT_AFTER`] for work charged in the background (crawl and
//!   batch pages, browser sessions, model jobs). Tokens a team's model calls used here are
//!   reported the same way, within [`REPORT_AFTER`], with their part per API key. A report
//!   holds the total, not the charge, so a report lost or repeated changes nothing; a
//!   failed report is sent again;
//! - a credit check (or a token report) adds this node's own ledger to what the owner
//!   answers: its own ledger and the others' totals as reported. The owner asks a live node
//!   it has not heard from since the last membership change (the node may have reported to
//!   another owner meanwhile), and a node of a protocol older than the ledger's
//!   ([`Ledger::since`]) every time (it does not report);
//! - a node that is down, or that does not answer, is counted as last heard, so a team
//!   cannot overspend by what it spent through that node, and its tokens stay in the team's
//!   report. Every node keeps what it heard, on disk too (`store::reports`), for the months
//!   of a team's history ([`crate::store::ledger::HISTORY_MONTHS`]): an owner that restarts
//!   still counts what a node that is down spent, and when the owner goes down with a node
//!   that spent, the next owner has that node's copy (and should the next owner go down
//!   too, at once, the node after it has both the owner's and the spender's). At every
//!   membership change each node passes on what nodes that are down reported to it to those
//!   teams' owners and next owners ([`Teams::relay_down`]), which take it where larger than
//!   what they know and nothing was heard from the node itself since the change: an owner
//!   that was down when a node reported, or a node that joined and outranks the owner, has
//!   it too, and when the owner and then its next owner go down, the next owner has passed
//!   the owner's report on to the node taking over. Left open: the owner and both its next
//!   owners going down at once (within one membership change) loses what only they knew
//!   until one is back (a node that comes back is asked again);
//! - a node that cannot reach the owner, or whose owner is of an older protocol, asks every
//!   live node, as before owners kept totals, and counts a node that is down as it last
//!   heard of it.
//!
//! What the owner knows of background charges lags them by up to [`REPORT_AFTER`] and a
//! call; two checks that close together on two nodes can both pass, as on one node.

use std::collections::{BTreeMap, HashMap};
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

    /// The report of a node's total to the team's owner (or its next owners).
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
    /// The tally of a report as kept on disk and passed on between nodes.
    fn of_report(report: Report) -> Self {
        Self { total: report.total, by_key: report.by_key.into_iter().collect() }
    }

    /// This tally as a report.
    fn report(&self) -> Report {
        Report { total: self.total, by_key: self.by_key.clone().into_iter().collect() }
    }

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

/// To whom a node's total goes: the team's owner, its next owners, or all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct To {
    /// The team's owner.
    pub owner: bool,
    /// The team's next owners (see [`Cluster::next_owners_of`]).
    pub next_owners: bool,
}

impl To {
    const OWNER: Self = Self { owner: true, next_owners: false };
    const NEXT_OWNERS: Self = Self { owner: false, next_owners: true };
    const ALL: Self = Self { owner: true, next_owners: true };

    /// Both `self`'s and `other`'s.
    fn and(self, other: Self) -> Self {
        Self { owner: self.owner || other.owner, next_owners: self.next_owners || other.next_owners }
    }
}

/// How a node's total was heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Heard {
    /// The node reported it (reports may arrive out of order: the larger total is the later).
    Reported,
    /// The node answered when asked (its word, as of now).
    Answered,
    /// Another node passed on what the node, down by then, had reported to it
    /// ([`Request::Relayed`]): it counts only when larger than what is known and nothing was
    /// heard from the node itself since the last membership change.
    Relayed,
}

/// The protocol version from which nodes pass on what nodes that are down reported to
/// them ([`Request::Relayed`]).
pub(super) const RELAYS_SINCE: u32 = 12;

/// A node's total as last heard, and whether it was heard since the last membership change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Known {
    /// The total.
    pub tally: Tally,
    /// Heard since the last membership change (else read back from disk, or from before:
    /// a node that is live may have reported more to another node since).
    pub current: bool,
}

/// Each node's total of one ledger, team and month, as last heard.
type Reports = HashMap<String, Known>;

/// What a team's owner knows of other nodes' ledgers, and which teams this node has yet
/// to report.
#[derive(Debug, Default)]
pub(super) struct Credits {
    /// Per ledger, team and month: each node's total as it last reported it (or answered).
    totals: Mutex<HashMap<(Ledger, String, Month), Reports>>,
    /// The oldest month kept in `totals` since it was last pruned: older ones are dropped
    /// once, when a month begins, not at every report.
    oldest_kept: AtomicU32,
    /// Teams charged (or whose tokens grew) here since their last report, and to whom it
    /// is still to go.
    unreported: Mutex<HashMap<(Ledger, String), To>>,
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
                    let known = Known { tally: Tally::of_report(report), current: false };
                    totals.entry((ledger, key.team, key.month)).or_default().insert(key.node, known);
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

    /// Keeps `node`'s total for the team's month, on disk too: the larger of two reports
    /// (totals only grow), but a node's answer, or its first report since a membership
    /// change, as it is (a node whose data directory was replaced starts again from
    /// nothing). Months older than a team's history
    /// ([`crate::store::ledger::HISTORY_MONTHS`]) are dropped.
    pub(super) fn record(
        &self,
        ledger: Ledger,
        team: &str,
        month: Month,
        node: &str,
        tally: Tally,
        heard: Heard,
    ) {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        let oldest = history_start(month);
        if self.oldest_kept.fetch_max(oldest, Ordering::Relaxed) < oldest {
            totals.retain(|(_, _, m), _| *m >= oldest);
            self.drop_kept(oldest);
        }
        let known =
            totals.entry((ledger, team.to_owned(), month)).or_default().entry(node.to_owned()).or_default();
        match heard {
            Heard::Relayed if known.current || tally.total <= known.tally.total => return,
            Heard::Reported if known.current && tally.total < known.tally.total => return,
            Heard::Relayed => {}
            Heard::Reported | Heard::Answered => known.current = true,
        }
        if tally == known.tally {
            return;
        }
        if let Some(kept) = &self.kept {
            let key =
                ReportKey { ledger: ledger.byte(), team: team.to_owned(), month, node: node.to_owned() };
            if let Err(e) = kept.put(&key, &tally.report()) {
                tracing::warn!(error = %e, node, team, "a node's report is kept in memory only");
            }
        }
        known.tally = tally;
    }

    /// Drops the kept reports of months before `oldest` from the disk.
    fn drop_kept(&self, oldest: Month) {
        if let Some(Err(e)) = self.kept.as_ref().map(|kept| kept.drop_before(oldest)) {
            tracing::warn!(error = %e, "reports no longer wanted are left on disk");
        }
    }

    /// The totals known for the team's month.
    fn known(&self, ledger: Ledger, team: &str, month: Month) -> Reports {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.get(&(ledger, team.to_owned(), month)).cloned().unwrap_or_default()
    }

    /// What `node` was last heard to hold of the team's month, if anything.
    fn known_of(&self, ledger: Ledger, team: &str, month: Month, node: &str) -> Option<Tally> {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        Some(totals.get(&(ledger, team.to_owned(), month))?.get(node)?.tally.clone())
    }

    /// Keeps what another node passed on of nodes that are down ([`Heard::Relayed`]).
    pub(super) fn relayed(&self, reports: Vec<(ReportKey, Report)>) {
        for (key, report) in reports {
            let Some(ledger) = Ledger::of_byte(key.ledger) else { continue };
            let tally = Tally::of_report(report);
            self.record(ledger, &key.team, key.month, &key.node, tally, Heard::Relayed);
        }
    }

    /// What this node last heard each node not in `live` (but this one, `me`) report, of
    /// the months still kept.
    fn heard_of_down(&self, live: &[String], me: &str) -> Vec<(ReportKey, Report)> {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        let mut down = Vec::new();
        for ((ledger, team, month), reports) in totals.iter() {
            for (node, known) in reports {
                if node != me && !live.contains(node) && known.tally.total > 0 {
                    let key = ReportKey {
                        ledger: ledger.byte(),
                        team: team.clone(),
                        month: *month,
                        node: node.clone(),
                    };
                    down.push((key, known.tally.report()));
                }
            }
        }
        down
    }

    /// After a membership change: what the nodes in `live` reported may be older than what
    /// they reported to another node since, so they are asked again before it counts. It is
    /// kept meanwhile: should such a node go down first, it counts as last heard.
    fn doubt(&self, live: &[String]) {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        for (node, known) in totals.values_mut().flat_map(HashMap::iter_mut) {
            if live.contains(node) {
                known.current = false;
            }
        }
    }

    /// Notes that the team's total grew here (it is reported soon, to the owner and the
    /// next owners).
    pub(super) fn charged(&self, ledger: Ledger, team: &str) {
        self.unreported_to(ledger, team, To::ALL);
    }

    /// Notes that the team's total is still to be reported to `to`.
    fn unreported_to(&self, ledger: Ledger, team: &str, to: To) {
        if to == To::default() {
            return;
        }
        let mut unreported = self.unreported.lock().unwrap_or_else(PoisonError::into_inner);
        let pending = unreported.entry((ledger, team.to_owned())).or_default();
        let was = *pending;
        *pending = pending.and(to);
        if was == To::default() {
            self.wake.notify_one();
        }
    }

    fn take_unreported(&self) -> Vec<((Ledger, String), To)> {
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
        let cluster_of_members = cluster.clone();
        tokio::spawn(async move {
            // Reports kept from before a restart, of nodes live now, may be older than what
            // they reported to another node meanwhile: they are asked again. What nodes that
            // are down reported here goes on to their teams' owners and next owners, which
            // may not have heard it (they were down then, or have just joined).
            // The passing on runs beside the next change's doubt, which it must not hold up
            // (a receiver that hangs takes a call's timeout).
            let mut live = Arc::clone(&members.borrow_and_update());
            loop {
                teams.credits.doubt(&live);
                let (relaying, cluster, now) =
                    (Arc::clone(&teams), cluster_of_members.clone(), Arc::clone(&live));
                tokio::spawn(async move { relaying.relay_down(&cluster, &now).await });
                if members.changed().await.is_err() {
                    break;
                }
                live = Arc::clone(&members.borrow_and_update());
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
                let reports =
                    pending.iter().map(|((ledger, team), to)| teams.report(&cluster, *ledger, team, *to));
                for (((ledger, team), _), missed) in
                    pending.iter().zip(futures::future::join_all(reports).await)
                {
                    if missed != To::default() {
                        teams.credits.unreported_to(*ledger, team, missed);
                    }
                }
            }
        });
    }

    /// Passes on what nodes not in `live` reported here to their teams' owners and next
    /// owners (of protocol version [`RELAYS_SINCE`] or later; not this node), one message
    /// to each. Best effort: a node that misses it is passed it again at the next change.
    async fn relay_down(&self, cluster: &Cluster, live: &[String]) {
        let mut to: HashMap<String, Vec<(ReportKey, Report)>> = HashMap::new();
        for heard in self.credits.heard_of_down(live, cluster.name()) {
            let key = team_key(&heard.0.team);
            let owners = std::iter::once(cluster.owner_of(&key)).chain(cluster.next_owners_of(&key));
            for node in owners {
                if node != cluster.name() && cluster.version_of(&node).is_some_and(|v| v >= RELAYS_SINCE) {
                    to.entry(node).or_default().push(heard.clone());
                }
            }
        }
        let sends = to.into_iter().map(|(node, reports)| async move {
            if !matches!(ask(cluster, &node, &Request::Relayed(reports)).await, Some(Response::Noted)) {
                tracing::debug!(node = %node, "what nodes that are down reported was not passed on");
            }
        });
        futures::future::join_all(sends).await;
    }

    /// [`Teams::charge`], and in a cluster the team's owner told before this returns (so
    /// that the team's next request, through any node, is checked with this charge
    /// counted; when the owner does not answer the report is sent again later). The next
    /// owners' copies go within [`REPORT_AFTER`]: a next owner that hangs does not hold
    /// the answer.
    pub async fn charge_reported(&self, team: &TeamId, credits: u64) -> Result<(), StoreError> {
        self.write_charge(team, credits)?;
        if let Some(cluster) = self.cluster.get().filter(|_| credits > 0) {
            let missed = self.report(cluster, Ledger::Credits, team.as_str(), To::OWNER).await;
            self.credits.unreported_to(Ledger::Credits, team.as_str(), missed.and(To::NEXT_OWNERS));
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

    /// Reports this node's month's total of `team` in `ledger` to the team's owner, its
    /// next owners (see [`Cluster::next_owners_of`]) or all of them (`to`), at once; what
    /// was missed: those that should have had it and did not answer (the next owners
    /// missed when one of them did: a report is a total, so a repeat changes nothing).
    async fn report(&self, cluster: &Cluster, ledger: Ledger, team: &str, to: To) -> To {
        let key = team_key(team);
        let takes = |node: &String| {
            node != cluster.name() && cluster.version_of(node).is_some_and(|v| v >= ledger.since())
        };
        let owner = to.owner.then(|| cluster.owner_of(&key)).filter(takes);
        let next = if to.next_owners { cluster.next_owners_of(&key) } else { Vec::new() };
        let next: Vec<String> = next.into_iter().filter(takes).collect();
        let Ok(id) = TeamId::parse(team) else { return To::default() };
        if owner.is_none() && next.is_empty() {
            return To::default();
        }
        let month = month_of(time::now_ms());
        let Ok(tally) = self.tally(ledger, &id, month) else { return to };
        let request = &ledger.report(team, month, tally);
        let heard =
            |node: String| async move { matches!(ask(cluster, &node, request).await, Some(Response::Noted)) };
        let owner_heard = futures::future::OptionFuture::from(owner.map(heard));
        let next_heard = futures::future::join_all(next.into_iter().map(heard));
        let (owner_heard, next_heard) = futures::future::join(owner_heard, next_heard).await;
        To { owner: owner_heard == Some(false), next_owners: next_heard.contains(&false) }
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
        // The nodes that are down, as this node last heard of them (as a next owner, or as
        // an owner before): the owner asked here did not say.
        let live = cluster.live();
        for (node, known) in self.credits.known(ledger, team.as_str(), month) {
            if !live.contains(&node) && node != cluster.name() {
                tally.add(&known.tally);
            }
        }
        Ok(tally)
    }

    /// The totals `nodes` say the team has in `month` in `ledger`, asked at once; each
    /// answer is kept as that node's total (a node that does not answer is counted as last
    /// heard, or not at all when never heard; either way named in the log).
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
                    self.credits.record(ledger, team.as_str(), month, node, tally, Heard::Answered);
                }
                None => match self.credits.known_of(ledger, team.as_str(), month, node) {
                    Some(kept) => {
                        tracing::warn!(node = %node, team = %team.as_str(), ?ledger, "a node's total is counted as last heard");
                        sum.add(&kept);
                    }
                    None => {
                        tracing::warn!(node = %node, team = %team.as_str(), ?ledger, "a node's total is not counted")
                    }
                },
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
        let live = cluster.live();
        let reports = |node: &str| cluster.version_of(node).is_none_or(|v| v >= ledger.since());
        // A live node is counted as heard since the last membership change, or asked; one
        // that is down, as last heard.
        let settled = |node: &str, known: &Known| known.current || !live.iter().any(|m| m == node);
        for (node, known) in &known {
            if node != asker && node != me && reports(node) && settled(node, known) {
                sum.add(&known.tally);
            }
        }
        let unheard: Vec<String> = peers(cluster)
            .into_iter()
            .filter(|node| {
                node != asker && (!reports(node) || known.get(node).is_none_or(|k| !settled(node, k)))
            })
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

    /// Each node's total as `credits` knows it, and whether it was heard since the last
    /// membership change.
    fn totals(credits: &Credits, month: Month) -> HashMap<String, (u64, bool)> {
        credits
            .known(Ledger::Credits, "t", month)
            .into_iter()
            .map(|(node, k)| (node, (k.tally.total, k.current)))
            .collect()
    }

    fn record(credits: &Credits, month: Month, node: &str, total: u64, heard: Heard) {
        credits.record(Ledger::Credits, "t", month, node, tally(total, &[]), heard);
    }

    #[test]
    fn reported_totals_only_grow_until_a_membership_change_and_answers_stand() {
        let credits = Credits::default();
        record(&credits, 202_602, "a", 5, Heard::Reported);
        record(&credits, 202_602, "a", 3, Heard::Reported);
        record(&credits, 202_602, "b", 7, Heard::Reported);
        let both = HashMap::from([("a".into(), (5, true)), ("b".into(), (7, true))]);
        assert_eq!(totals(&credits, 202_602), both, "a smaller report is an older one");
        credits.doubt(&["a".to_owned(), "c".to_owned()]);
        let a_doubted = HashMap::from([("a".into(), (5, false)), ("b".into(), (7, true))]);
        assert_eq!(totals(&credits, 202_602), a_doubted, "a is live: asked again, kept meanwhile");
        assert_eq!(credits.known_of(Ledger::Credits, "t", 202_602, "a"), Some(tally(5, &[])));
        // Its first report since the change stands as it is (its disk may be a new one).
        record(&credits, 202_602, "a", 2, Heard::Reported);
        record(&credits, 202_602, "a", 1, Heard::Reported);
        assert_eq!(totals(&credits, 202_602)["a"], (2, true));
        // What a node answers stands as it is.
        record(&credits, 202_602, "b", 4, Heard::Answered);
        assert_eq!(totals(&credits, 202_602)["b"], (4, true));
        // A year of months is kept, across the turn of the year.
        record(&credits, 202_601, "b", 2, Heard::Reported);
        record(&credits, 202_612, "b", 4, Heard::Reported);
        record(&credits, 202_701, "a", 1, Heard::Reported);
        assert_eq!(
            totals(&credits, 202_612),
            HashMap::from([("b".into(), (4, true))]),
            "December in January"
        );
        assert_eq!(totals(&credits, 202_602)["b"], (4, true), "the year's first month");
        assert!(totals(&credits, 202_601).is_empty(), "older than a year: dropped");
    }

    #[test]
    fn what_is_passed_on_of_down_nodes_only_grows_and_yields_to_their_own_word() {
        let credits = Credits::default();
        let relay = |node: &str, total: u64| {
            let key = ReportKey {
                ledger: Ledger::Credits.byte(),
                team: "t".into(),
                month: 202_602,
                node: node.into(),
            };
            (key, Report { total, by_key: Vec::new() })
        };
        // Unknown nodes: taken, but not as heard from the node itself.
        credits.relayed(vec![relay("a", 3), relay("b", 4)]);
        let taken = HashMap::from([("a".into(), (3, false)), ("b".into(), (4, false))]);
        assert_eq!(totals(&credits, 202_602), taken);
        // Smaller or equal: older.
        credits.relayed(vec![relay("a", 2), relay("b", 4)]);
        assert_eq!(totals(&credits, 202_602), taken);
        credits.relayed(vec![relay("a", 6)]);
        assert_eq!(totals(&credits, 202_602)["a"], (6, false), "larger: later");
        // Heard from the node itself since the last membership change: that stands.
        record(&credits, 202_602, "b", 1, Heard::Answered);
        credits.relayed(vec![relay("b", 9)]);
        assert_eq!(totals(&credits, 202_602)["b"], (1, true));
        // What is known of nodes down, and only of them, is passed on.
        let mut down = credits.heard_of_down(&["a".to_owned(), "me".to_owned()], "me");
        down.sort_by(|x, y| x.0.node.cmp(&y.0.node));
        assert_eq!(down, vec![relay("b", 1)]);
    }

    #[test]
    fn a_node_reads_back_what_it_kept_as_heard_before() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(dir.path()).expect("open");
        let month = month_of(time::now_ms());
        let credits = Credits::kept_in(store.reports.clone());
        record(&credits, month, "b", 5, Heard::Reported);
        record(&credits, month, "c", 2, Heard::Answered);
        credits.record(Ledger::Tokens, "t", month, "b", tally(40, &[("k1", 40)]), Heard::Reported);
        record(&credits, history_start(month), "b", 7, Heard::Reported);
        record(&credits, history_start(month) - 1, "b", 9, Heard::Reported);
        drop(credits);

        let again = Credits::kept_in(store.reports.clone());
        let read_back = HashMap::from([("b".into(), (5, false)), ("c".into(), (2, false))]);
        assert_eq!(totals(&again, month), read_back, "heard before the restart: asked again if live");
        assert_eq!(again.known(Ledger::Tokens, "t", month)["b"].tally, tally(40, &[("k1", 40)]));
        assert_eq!(totals(&again, history_start(month)), HashMap::from([("b".into(), (7, false))]));
        assert!(totals(&again, history_start(month) - 1).is_empty(), "older than the history");
        // c answers less than it reported (its data directory was replaced): that stands,
        // on disk too.
        record(&again, month, "c", 1, Heard::Answered);
        let third = Credits::kept_in(store.reports.clone());
        assert_eq!(totals(&third, month)["c"], (1, false));
    }

    #[test]
    fn what_is_still_to_be_reported_adds_up_per_team_until_taken() {
        let credits = Credits::default();
        credits.unreported_to(Ledger::Credits, "t", To::default());
        assert!(credits.take_unreported().is_empty(), "nothing to report is not queued");
        credits.unreported_to(Ledger::Credits, "t", To::NEXT_OWNERS);
        credits.unreported_to(Ledger::Tokens, "t", To::NEXT_OWNERS);
        credits.charged(Ledger::Credits, "t");
        let mut taken = credits.take_unreported();
        taken.sort_by_key(|((ledger, _), _)| ledger.byte());
        let t = || "t".to_owned();
        assert_eq!(taken, vec![((Ledger::Credits, t()), To::ALL), ((Ledger::Tokens, t()), To::NEXT_OWNERS)]);
        assert!(credits.take_unreported().is_empty());
        assert_eq!(To::OWNER.and(To::NEXT_OWNERS), To::ALL);
    }

    #[test]
    fn the_two_ledgers_are_kept_apart_and_token_tallies_add_up_per_key() {
        let credits = Credits::default();
        record(&credits, 202_610, "a", 4, Heard::Reported);
        let tokens = |total, by_key| {
            credits.record(Ledger::Tokens, "t", 202_610, "a", tally(total, by_key), Heard::Reported)
        };
        tokens(300, &[("k1", 200), ("k2", 100)]);
        tokens(250, &[("k1", 250)]);
        assert_eq!(credits.known(Ledger::Credits, "t", 202_610)["a"].tally, tally(4, &[]));
        let tokens = &credits.known(Ledger::Tokens, "t", 202_610)["a"].tally;
        assert_eq!(tokens, &tally(300, &[("k1", 200), ("k2", 100)]), "a smaller total is an older one");
        let mut sum = tokens.clone();
        sum.add(&tally(50, &[("k2", 20), ("k3", 30)]));
        assert_eq!(sum, tally(350, &[("k1", 200), ("k2", 120), ("k3", 30)]));
    }
}
