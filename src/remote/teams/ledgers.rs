//! Credits and tokens across the cluster, the flows (see [`super::credits`] for the rules):
//! this node's totals reported to each team's owner and next owners, what nodes that are
//! down reported passed on at each membership change, a team's use on the other nodes
//! asked of its owner, and the owner's answer.

use std::collections::HashMap;
use std::sync::Arc;

use super::credits::{Heard, REPORT_AFTER, To};
use super::{Request, Response, TeamsOnNodes, ask, ask_each, team_key};
use crate::model::{TeamId, time};
use crate::store::StoreError;
use crate::store::ledger::{Month, month_of};
use crate::store::reports::{Report, ReportKey};
use crate::teams::{Ledger, Tally};

/// What a node is asked for its own total of `ledger`.
fn own_request(ledger: Ledger, team: &str, month: Month) -> Request {
    match ledger {
        Ledger::Credits => Request::Used(team.to_owned(), month),
        Ledger::Tokens => Request::Tokens(team.to_owned(), month),
    }
}

/// What a team's owner is asked for every node's total of `ledger` but the asker's.
fn beyond_request(ledger: Ledger, team: &str, month: Month) -> Request {
    match ledger {
        Ledger::Credits => Request::UsedBeyond(team.to_owned(), month),
        Ledger::Tokens => Request::TokensBeyond(team.to_owned(), month),
    }
}

/// The report of a node's total of `ledger` to the team's owner (or its next owners).
fn report_request(ledger: Ledger, team: &str, month: Month, tally: Tally) -> Request {
    let (team, total) = (team.to_owned(), tally.total);
    match ledger {
        Ledger::Credits => Request::Charged { team, month, total },
        Ledger::Tokens => {
            Request::TokensUsed { team, month, total, by_key: tally.by_key.into_iter().collect() }
        }
    }
}

/// `tally` as the answer to [`own_request`] or [`beyond_request`].
pub(super) fn answer(ledger: Ledger, tally: Tally) -> Response {
    match ledger {
        Ledger::Credits => Response::Used(tally.total),
        Ledger::Tokens => Response::Tokens(tally.total, tally.by_key.into_iter().collect()),
    }
}

/// The tally an answer of [`own_request`] or [`beyond_request`] holds.
fn tally_of(answer: Response) -> Option<Tally> {
    match answer {
        Response::Used(total) => Some(Tally { total, by_key: Default::default() }),
        Response::Tokens(total, by_key) => Some(Tally { total, by_key: by_key.into_iter().collect() }),
        _ => None,
    }
}

impl TeamsOnNodes {
    /// Starts reporting this node's charges and token use to their teams' owners, and
    /// forgetting the reports of live nodes at each membership change.
    pub(super) fn keep_totals(self: &Arc<Self>) {
        let nodes = Arc::clone(self);
        let mut members = self.cluster.watch();
        tokio::spawn(async move {
            // Reports kept from before a restart, of nodes live now, may be older than what
            // they reported to another node meanwhile: they are asked again. What nodes that
            // are down reported here goes on to their teams' owners and next owners, which
            // may not have heard it (they were down then, or have just joined).
            // The passing on runs beside the next change's doubt, which it must not hold up
            // (a receiver that hangs takes a call's timeout).
            let mut live = Arc::clone(&members.borrow_and_update());
            loop {
                nodes.credits.doubt(&live);
                let (relaying, now) = (Arc::clone(&nodes), Arc::clone(&live));
                tokio::spawn(async move { relaying.relay_down(&now).await });
                if members.changed().await.is_err() {
                    break;
                }
                live = Arc::clone(&members.borrow_and_update());
            }
        });
        let nodes = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                for team in nodes.store.tokens.changed().await {
                    nodes.credits.charged(Ledger::Tokens, team.as_str());
                }
            }
        });
        let nodes = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                nodes.credits.wake.notified().await;
                tokio::time::sleep(REPORT_AFTER).await;
                let pending = nodes.credits.take_unreported();
                let reports = pending.iter().map(|((ledger, team), to)| nodes.report(*ledger, team, *to));
                for (((ledger, team), _), missed) in
                    pending.iter().zip(futures::future::join_all(reports).await)
                {
                    if missed != To::default() {
                        nodes.credits.unreported_to(*ledger, team, missed);
                    }
                }
            }
        });
    }

    /// Passes on what nodes not in `live` reported here to their teams' owners and next
    /// owners (not this node), one message to each. Best effort: a node that misses it is
    /// passed it again at the next change.
    async fn relay_down(&self, live: &[String]) {
        let cluster = &self.cluster;
        let mut to: HashMap<String, Vec<(ReportKey, Report)>> = HashMap::new();
        for heard in self.credits.heard_of_down(live, cluster.name()) {
            let key = team_key(&heard.0.team);
            let owners = std::iter::once(cluster.owner_of(&key)).chain(cluster.next_owners_of(&key));
            for node in owners {
                if node != cluster.name() && cluster.version_of(&node).is_some() {
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

    /// The team's credits grew here: its owner is told now, before this resolves (when the
    /// owner does not answer the report is sent again later); the next owners' copies go
    /// within [`REPORT_AFTER`], so a next owner that hangs does not hold the caller.
    pub(super) async fn credits_grew_now(&self, team: &TeamId) {
        let missed = self.report(Ledger::Credits, team.as_str(), To::OWNER).await;
        self.credits.unreported_to(Ledger::Credits, team.as_str(), missed.and(To::NEXT_OWNERS));
    }

    /// Reports this node's month's total of `team` in `ledger` to the team's owner, its
    /// next owners (see [`crate::cluster::Cluster::next_owners_of`]) or all of them (`to`),
    /// at once; what was missed: those that should have had it and did not answer (the
    /// next owners missed when one of them did: a report is a total, so a repeat changes
    /// nothing).
    async fn report(&self, ledger: Ledger, team: &str, to: To) -> To {
        let cluster = &self.cluster;
        let key = team_key(team);
        let takes = |node: &String| node != cluster.name() && cluster.version_of(node).is_some();
        let owner = to.owner.then(|| cluster.owner_of(&key)).filter(takes);
        let next = if to.next_owners { cluster.next_owners_of(&key) } else { Vec::new() };
        let next: Vec<String> = next.into_iter().filter(takes).collect();
        let Ok(id) = TeamId::parse(team) else { return To::default() };
        if owner.is_none() && next.is_empty() {
            return To::default();
        }
        let month = month_of(time::now_ms());
        let Ok(tally) = ledger.tally(&self.store, &id, month) else { return to };
        let request = &report_request(ledger, team, month, tally);
        let heard =
            |node: String| async move { matches!(ask(cluster, &node, request).await, Some(Response::Noted)) };
        let owner_heard = futures::future::OptionFuture::from(owner.map(heard));
        let next_heard = futures::future::join_all(next.into_iter().map(heard));
        let (owner_heard, next_heard) = futures::future::join(owner_heard, next_heard).await;
        To { owner: owner_heard == Some(false), next_owners: next_heard.contains(&false) }
    }

    /// The team's total of `month` in `ledger` on every node but this one: what the team's
    /// owner knows of them (every live node's answer when the owner cannot say).
    pub(super) async fn used_elsewhere(
        &self,
        ledger: Ledger,
        team: &TeamId,
        month: Month,
    ) -> Result<Tally, StoreError> {
        let cluster = &self.cluster;
        let owner = cluster.owner_of(&team_key(team.as_str()));
        if owner == cluster.name() {
            return self.beyond(ledger, team, month, cluster.name()).await;
        }
        let others =
            ask(cluster, &owner, &beyond_request(ledger, team.as_str(), month)).await.and_then(tally_of);
        if let Some(others) = others {
            return Ok(others);
        }
        tracing::debug!(node = %owner, "the team's owner did not answer; every node asked");
        let mut tally = self.ledgers_of(ledger, team, month, &self.peers()).await;
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
    async fn ledgers_of(&self, ledger: Ledger, team: &TeamId, month: Month, nodes: &[String]) -> Tally {
        let answers = ask_each(&self.cluster, nodes, &own_request(ledger, team.as_str(), month)).await;
        let mut sum = Tally::default();
        for (node, answer) in nodes.iter().zip(answers) {
            match answer.and_then(tally_of) {
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
        let me = self.cluster.name();
        let mut sum = if asker == me { Tally::default() } else { ledger.tally(&self.store, team, month)? };
        let known = self.credits.known(ledger, team.as_str(), month);
        let live = self.cluster.live();
        // A live node is counted as heard since the last membership change, or asked; one
        // that is down, as last heard.
        let settled =
            |node: &str, known: &super::credits::Known| known.current || !live.iter().any(|m| m == node);
        for (node, known) in &known {
            if node != asker && node != me && settled(node, known) {
                sum.add(&known.tally);
            }
        }
        let unheard: Vec<String> = self
            .peers()
            .into_iter()
            .filter(|node| node != asker && known.get(node).is_none_or(|k| !settled(node, k)))
            .collect();
        sum.add(&self.ledgers_of(ledger, team, month, &unheard).await);
        Ok(sum)
    }
}
