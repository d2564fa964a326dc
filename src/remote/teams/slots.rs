//! A team's concurrency limit across a cluster. The team's pages in flight on all nodes
//! together stay within its limit:
//!
//! - one node, the team's **owner** (rendezvous hashing of the team's name over the live
//!   members, like sites), keeps a [`Pool`]: how many slots each node holds;
//! - every other node holds slots **granted** by the owner and uses them locally like the
//!   single node's gate (no message per page). A node whose pages wait asks the owner for
//!   more; a node with slots it does not use gives them back; each node reports what it
//!   holds every [`SYNC`] while it holds or wants any;
//! - the owner grants only from what no node holds, so the sum never exceeds the limit;
//!   when several nodes want slots, each is asked to keep at most an equal share (a node
//!   over its share gives back slots as its pages finish), so no node starves another; the
//!   shares add up to the limit, the slots an equal division leaves over going round;
//! - a node judged down holds nothing any more; a new owner (the old one left) learns what
//!   each node holds from their next reports and grants nothing for [`SETTLE`] after it
//!   starts keeping the team, so its first grants cannot exceed the limit. A pool nobody
//!   reported to for that long starts afresh the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Request, Response, ask, team_key};
use crate::cluster::Cluster;
use crate::teams::{Grant, Supply};

/// How often a node holding or wanting a team's slots reports to the team's owner.
const SYNC: Duration = Duration::from_millis(100);
/// How long a new pool grants nothing, so every holder has reported first.
const SETTLE: Duration = Duration::from_millis(300);
/// How long the slots left over by an equal division stay with the same busy nodes.
const ROTATE: Duration = Duration::from_secs(1);

/// The owner's record of one team's slots.
#[derive(Debug)]
pub(super) struct Pool {
    held: HashMap<String, u32>,
    wanted: HashMap<String, u32>,
    born: Instant,
    last_report: Instant,
}

impl Pool {
    fn new() -> Self {
        let now = Instant::now();
        Self { held: HashMap::new(), wanted: HashMap::new(), born: now, last_report: now }
    }

    /// Node `node` holds `held` slots and has `want` pages waiting; `live` are the live
    /// members (the others hold nothing any more).
    fn report(&mut self, limit: u32, live: &[String], node: &str, held: u32, want: u32) -> Grant {
        // Holders report every SYNC: a pool nobody reported to for longer is out of date
        // (the team was idle, or another node owned it meanwhile), and starts afresh.
        if self.last_report.elapsed() > SETTLE {
            *self = Self::new();
        }
        self.last_report = Instant::now();
        self.held.retain(|n, _| live.contains(n));
        self.wanted.retain(|n, _| live.contains(n));
        self.held.insert(node.to_owned(), held);
        if want > 0 {
            self.wanted.insert(node.to_owned(), want);
        } else {
            self.wanted.remove(node);
        }
        if live.len() > 1 && self.born.elapsed() < SETTLE {
            return Grant { grant: 0, keep: limit.max(held) };
        }
        let others_want = self.wanted.keys().any(|n| n != node);
        let keep = if others_want { self.share(limit, live, node) } else { limit };
        let used: u32 = self.held.values().sum();
        let free = limit.saturating_sub(used);
        let grant = want.min(free).min(keep.saturating_sub(held));
        if grant > 0 {
            *self.held.entry(node.to_owned()).or_default() += grant;
        }
        Grant { grant, keep }
    }

    /// Node `node`'s share of `limit` among the nodes that hold or want slots: an equal
    /// part, and one more for as many of them as the division leaves over. The extra slots
    /// go round the busy nodes, moving on every [`ROTATE`], so the shares always add up to
    /// the limit and, with fewer slots than busy nodes, each node has its turn.
    fn share(&self, limit: u32, live: &[String], node: &str) -> u32 {
        let mut busy: Vec<&String> = live
            .iter()
            .filter(|n| self.held.get(*n).is_some_and(|h| *h > 0) || self.wanted.contains_key(*n))
            .collect();
        busy.sort_unstable();
        let count = u32::try_from(busy.len()).unwrap_or(u32::MAX).max(1);
        let Some(place) = busy.iter().position(|n| *n == node) else { return limit / count };
        let place = u32::try_from(place).unwrap_or(0);
        let turn = u32::try_from(self.born.elapsed().as_millis() / ROTATE.as_millis()).unwrap_or(0) % count;
        let extra = (place + count - turn) % count < limit % count;
        limit / count + u32::from(extra)
    }
}

/// The pools of the teams this node owns.
#[derive(Debug, Default)]
pub(super) struct Pools(Mutex<HashMap<String, Pool>>);

impl Pools {
    /// Answers node `node`'s report on `team` (limit `limit`).
    pub(super) fn report(
        &self,
        team: &str,
        limit: u32,
        live: &[String],
        node: &str,
        held: u32,
        want: u32,
    ) -> Grant {
        let mut pools = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pools.entry(team.to_owned()).or_insert_with(Pool::new).report(limit, live, node, held, want)
    }
}

/// Keeps this node's lease of a team's slots: reports to the team's owner every [`SYNC`]
/// while it holds or wants any (once more after it gave everything back), and applies the
/// owner's answer to the team's gate.
pub(super) async fn keep_supplied(cluster: Cluster, pools: Arc<Pools>, team: String, supply: Supply) {
    let mut reported_idle = false;
    loop {
        let (held, want) = supply.held_and_wanted();
        if held == 0 && want == 0 && reported_idle {
            supply.wanted().await;
            continue;
        }
        reported_idle = held == 0 && want == 0;
        let owner = cluster.owner_of(&team_key(&team));
        let answer = if owner == cluster.name() {
            let live = cluster.live();
            Some(pools.report(&team, supply.limit(), &live, &owner, held, want))
        } else {
            match ask(&cluster, &owner, &Request::Slots { team: team.clone(), held, want }).await {
                Some(Response::Slots(grant)) => Some(grant),
                _ => None,
            }
        };
        if let Some(answer) = answer {
            supply.apply(answer);
        }
        tokio::select! {
            () = tokio::time::sleep(SYNC) => {}
            () = supply.wanted() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn grants_never_exceed_the_limit_and_are_shared_when_contended() {
        let mut pool = Pool::new();
        pool.born -= SETTLE;
        let members = live(&["a", "b"]);
        // a alone wants many: it may have them all.
        assert_eq!(pool.report(4, &members, "a", 0, 10), Grant { grant: 4, keep: 4 });
        // b wants some: none is free, and a is asked to keep half.
        assert_eq!(pool.report(4, &members, "b", 0, 3), Grant { grant: 0, keep: 2 });
        assert_eq!(pool.report(4, &members, "a", 4, 10), Grant { grant: 0, keep: 2 });
        // a gave two back: b gets them, up to its share.
        assert_eq!(pool.report(4, &members, "a", 2, 10), Grant { grant: 0, keep: 2 });
        assert_eq!(pool.report(4, &members, "b", 0, 3), Grant { grant: 2, keep: 2 });
        // a node judged down holds nothing: its slots are free again.
        assert_eq!(pool.report(4, &live(&["b"]), "b", 2, 3), Grant { grant: 2, keep: 4 });
    }

    #[test]
    fn shares_add_up_to_the_limit_and_leftover_slots_go_round() {
        let mut pool = Pool::new();
        pool.born -= SETTLE;
        let members = live(&["a", "b", "c"]);
        // Every node reports wanting slots, then each one's share is read.
        let keeps = |pool: &mut Pool, limit| -> Vec<u32> {
            for n in ["a", "b", "c"] {
                pool.report(limit, &members, n, 0, 9);
            }
            ["a", "b", "c"].iter().map(|n| pool.report(limit, &members, n, 0, 9).keep).collect()
        };
        // 5 slots, 3 nodes all waiting: 2 + 2 + 1, not 1 each with 2 slots unused.
        let five = keeps(&mut pool, 5);
        assert_eq!(five.iter().sum::<u32>(), 5, "{five:?}");
        assert!(five.iter().all(|k| (1..=2).contains(k)), "{five:?}");
        // 2 slots, 3 nodes: each second another node has the turn without one.
        let mut without = std::collections::BTreeSet::new();
        for _ in 0..3 {
            let two = keeps(&mut pool, 2);
            assert_eq!(two.iter().sum::<u32>(), 2, "{two:?}");
            without.insert(two.iter().position(|k| *k == 0).expect("one node waits its turn"));
            pool.born -= ROTATE;
        }
        assert_eq!(without.len(), 3, "every node gets its turn");
    }

    #[test]
    fn a_new_pool_waits_for_the_holders_reports() {
        let mut pool = Pool::new();
        let members = live(&["a", "b"]);
        assert_eq!(pool.report(2, &members, "a", 0, 1).grant, 0);
        assert_eq!(pool.report(2, &members, "b", 2, 1).grant, 0, "b already holds the limit");
        pool.born -= SETTLE;
        assert_eq!(pool.report(2, &members, "a", 0, 1).grant, 0, "nothing is free");
        assert_eq!(pool.report(2, &live(&["a"]), "a", 0, 1).grant, 1);
    }
}
