//! The token ledger: language-model tokens used per team and calendar month (UTC), in
//! total and per API key (by the key's label, never the key). Additions are atomic, like
//! the credit ledger's. The ledger also notes which teams' use grew since it was last
//! asked ([`TokenLedger::changed`]), so a cluster node can report the new totals.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::Result;
use super::ledger::{Month, add_to, month_of};
use super::quarantine::Quarantine;
use crate::model::TeamId;

/// Typed access to the `token_ledger` tree.
#[derive(Debug, Clone)]
pub struct TokenLedger {
    tree: sled::Tree,
    q: Quarantine,
    grown: Arc<Grown>,
}

/// Teams whose use grew since [`TokenLedger::changed`] last took them.
#[derive(Debug, Default)]
struct Grown {
    teams: Mutex<BTreeSet<TeamId>>,
    wake: Notify,
}

/// `team \0 month \0 label`; the team's total has an empty label.
fn key(team: &TeamId, month: Month, label: &str) -> Vec<u8> {
    let mut k = prefix(team, month);
    k.extend_from_slice(label.as_bytes());
    k
}

fn prefix(team: &TeamId, month: Month) -> Vec<u8> {
    let mut k = team.as_str().as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&month.to_be_bytes());
    k.push(0);
    k
}

impl TokenLedger {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q, grown: Arc::default() }
    }

    /// The teams whose use grew since the last call, once there is at least one.
    pub async fn changed(&self) -> Vec<TeamId> {
        loop {
            let notified = self.grown.wake.notified();
            let teams = std::mem::take(&mut *self.grown.teams.lock().unwrap_or_else(PoisonError::into_inner));
            if !teams.is_empty() {
                return teams.into_iter().collect();
            }
            notified.await;
        }
    }

    /// Adds `tokens` to the team's use in the month of `at_ms`, and to the key's when the
    /// key's label is known.
    pub fn add(&self, team: &TeamId, key_label: Option<&str>, tokens: u64, at_ms: u64) -> Result<()> {
        if tokens == 0 {
            return Ok(());
        }
        let month = month_of(at_ms);
        add_to(&self.tree, &self.q, &key(team, month, ""), tokens)?;
        if let Some(label) = key_label.filter(|l| !l.is_empty()) {
            add_to(&self.tree, &self.q, &key(team, month, label), tokens)?;
        }
        self.grown.teams.lock().unwrap_or_else(PoisonError::into_inner).insert(team.clone());
        self.grown.wake.notify_one();
        Ok(())
    }

    /// Tokens the team used in `month`.
    pub fn used(&self, team: &TeamId, month: Month) -> Result<u64> {
        Ok(self.q.get::<u64>(&self.tree, &key(team, month, ""))?.unwrap_or(0))
    }

    /// Tokens each key of the team used in `month`, by key label.
    pub fn by_key(&self, team: &TeamId, month: Month) -> Result<Vec<(String, u64)>> {
        let prefix = prefix(team, month);
        let mut out = Vec::new();
        for entry in self.tree.scan_prefix(&prefix) {
            let (k, bytes) = entry?;
            let label = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
            if label.is_empty() {
                continue;
            }
            if let Some(n) = self.q.read::<u64>(&self.tree, &k, &bytes)? {
                out.push((label, n));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn tokens_add_up_per_team_month_and_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (a, b) = (TeamId::parse("a").expect("t"), TeamId::parse("b").expect("t"));
        let now = 1_795_478_400_000;
        store.tokens.add(&a, Some("fc-…111111"), 100, now).expect("add");
        store.tokens.add(&a, Some("fc-…222222"), 30, now).expect("add");
        store.tokens.add(&a, None, 5, now).expect("add");
        store.tokens.add(&b, Some("fc-…333333"), 7, now).expect("add");
        assert_eq!(store.tokens.used(&a, 202611).expect("used"), 135);
        assert_eq!(store.tokens.used(&b, 202611).expect("used"), 7);
        assert_eq!(
            store.tokens.by_key(&a, 202611).expect("by key"),
            [("fc-…111111".to_owned(), 100), ("fc-…222222".to_owned(), 30)]
        );
        assert_eq!(store.tokens.used(&a, 202610).expect("used"), 0);
    }

    #[tokio::test]
    async fn the_teams_whose_use_grew_are_told_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (a, b) = (TeamId::parse("a").expect("t"), TeamId::parse("b").expect("t"));
        store.tokens.add(&b, None, 3, 1_795_478_400_000).expect("add");
        store.tokens.add(&a, None, 0, 1_795_478_400_000).expect("nothing used");
        store.tokens.add(&a, Some("fc-…111111"), 2, 1_795_478_400_000).expect("add");
        store.tokens.add(&b, None, 1, 1_795_478_400_000).expect("add");
        assert_eq!(store.tokens.changed().await, [a.clone(), b]);
        let later = tokio::time::timeout(std::time::Duration::from_millis(50), store.tokens.changed()).await;
        assert!(later.is_err(), "nothing grew since: {later:?}");
        store.tokens.add(&a, None, 1, 1_795_478_400_000).expect("add");
        assert_eq!(store.tokens.changed().await, [a]);
    }
}
