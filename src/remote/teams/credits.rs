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
//!   [`crate::teams::Charged::reported`]), so the team's next request is checked with it through any
//!   node, and the copies within [`REPORT_AFTER`] (a next owner that hangs holds no
//!   answer); all within [`REPORT_AFTER`] for work charged in the background (crawl and
//!   batch pages, browser sessions, model jobs). Tokens a team's model calls used here are
//!   reported the same way, within [`REPORT_AFTER`], with their part per API key. A report
//!   holds the total, not the charge, so a report lost or repeated changes nothing; a
//!   failed report is sent again;
//! - a credit check (or a token report) adds this node's own ledger to what the owner
//!   answers: its own ledger and the others' totals as reported. The owner asks a live node
//!   it has not heard from since the last membership change (the node may have reported to
//!   another owner meanwhile);
//! - a node that is down, or that does not answer, is counted as last heard, so a team
//!   cannot overspend by what it spent through that node, and its tokens stay in the team's
//!   report. Every node keeps what it heard, on disk too (`store::reports`), for the months
//!   of a team's history ([`crate::store::ledger::HISTORY_MONTHS`]): an owner that restarts
//!   still counts what a node that is down spent, and when the owner goes down with a node
//!   that spent, the next owner has that node's copy (and should the next owner go down
//!   too, at once, the node after it has both the owner's and the spender's). At every
//!   membership change each node passes on what nodes that are down reported to it to those
//!   teams' owners and next owners (`ledgers::relay_down`), which take it where larger than
//!   what they know and nothing was heard from the node itself since the change: an owner
//!   that was down when a node reported, or a node that joined and outranks the owner, has
//!   it too, and when the owner and then its next owner go down, the next owner has passed
//!   the owner's report on to the node taking over. Left open: the owner and both its next
//!   owners going down at once (within one membership change) loses what only they knew
//!   until one is back (a node that comes back is asked again);
//! - a node that cannot reach the owner asks every live node, and counts a node that is
//!   down as it last heard of it.
//!
//! What the owner knows of background charges lags them by up to [`REPORT_AFTER`] and a
//! call; two checks that close together on two nodes can both pass, as on one node.
//!
//! This module keeps what a node heard ([`Credits`]); `ledgers` sends and answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::model::time;
use crate::store::ledger::{Month, history_start, month_of};
use crate::store::reports::{Report, ReportKey, ReportStore};
use crate::teams::{Ledger, Tally};

/// How long after a charge its team's total is reported (charges made meanwhile go in the
/// same report).
pub(super) const REPORT_AFTER: Duration = Duration::from_millis(50);

/// To whom a node's total goes: the team's owner, its next owners, or all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct To {
    /// The team's owner.
    pub owner: bool,
    /// The team's next owners (see [`Cluster::next_owners_of`]).
    pub next_owners: bool,
}

impl To {
    pub(super) const OWNER: Self = Self { owner: true, next_owners: false };
    pub(super) const NEXT_OWNERS: Self = Self { owner: false, next_owners: true };
    pub(super) const ALL: Self = Self { owner: true, next_owners: true };

    /// Both `self`'s and `other`'s.
    pub(super) fn and(self, other: Self) -> Self {
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
    /// (`Request::Relayed`): it counts only when larger than what is known and nothing was
    /// heard from the node itself since the last membership change.
    Relayed,
}

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
    pub(super) wake: Notify,
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
    pub(super) fn known(&self, ledger: Ledger, team: &str, month: Month) -> Reports {
        let totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.get(&(ledger, team.to_owned(), month)).cloned().unwrap_or_default()
    }

    /// What `node` was last heard to hold of the team's month, if anything.
    pub(super) fn known_of(&self, ledger: Ledger, team: &str, month: Month, node: &str) -> Option<Tally> {
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
    pub(super) fn heard_of_down(&self, live: &[String], me: &str) -> Vec<(ReportKey, Report)> {
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
    pub(super) fn doubt(&self, live: &[String]) {
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
    pub(super) fn unreported_to(&self, ledger: Ledger, team: &str, to: To) {
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

    pub(super) fn take_unreported(&self) -> Vec<((Ledger, String), To)> {
        let mut unreported = self.unreported.lock().unwrap_or_else(PoisonError::into_inner);
        unreported.drain().collect()
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
    fn the_two_ledgers_are_kept_apart() {
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
    }
}
