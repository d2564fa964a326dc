//! What other nodes of a cluster reported of their ledgers to this node as a team's owner
//! (`teams::credits`): per ledger (credits or tokens), team, month and node, the node's
//! total and, for tokens, its part per API key label. Kept on disk so that an owner that
//! restarts still counts what a node that is down now spent (the team's credit limit holds)
//! and still shows it in a usage history.

use serde::{Deserialize, Serialize};

use super::ledger::Month;
use super::quarantine::Quarantine;
use super::{Result, codec};

/// One node's total of a ledger, team and month, as it reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The total.
    pub total: u64,
    /// For tokens: the total per API key label.
    pub by_key: Vec<(String, u64)>,
}

codec::records!(Report => 1);

/// Where a report belongs (also passed on between nodes as it is, see
/// `teams::credits`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReportKey {
    /// The ledger: 0 for credits, 1 for tokens.
    pub ledger: u8,
    /// The team.
    pub team: String,
    /// The month.
    pub month: Month,
    /// The node that reported.
    pub node: String,
}

impl ReportKey {
    /// `ledger team \0 month node`, so that one month's reports sort together.
    fn bytes(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.team.len() + self.node.len() + 6);
        k.push(self.ledger);
        k.extend_from_slice(self.team.as_bytes());
        k.push(0);
        k.extend_from_slice(&self.month.to_be_bytes());
        k.extend_from_slice(self.node.as_bytes());
        k
    }

    fn parse(bytes: &[u8]) -> Option<Self> {
        let (&ledger, rest) = bytes.split_first()?;
        let zero = rest.iter().position(|b| *b == 0)?;
        let (team, rest) = (&rest[..zero], &rest[zero + 1..]);
        let month = Month::from_be_bytes(rest.get(..4)?.try_into().ok()?);
        Some(Self {
            ledger,
            team: String::from_utf8(team.to_vec()).ok()?,
            month,
            node: String::from_utf8(rest[4..].to_vec()).ok()?,
        })
    }
}

/// Typed access to the `team_reports` tree.
#[derive(Debug, Clone)]
pub struct ReportStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl ReportStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Keeps `report` (replacing the one it grew from).
    pub fn put(&self, key: &ReportKey, report: &Report) -> Result<()> {
        self.tree.insert(key.bytes(), codec::encode(report)?)?;
        Ok(())
    }

    /// Every report kept of `oldest` and later months (a report that does not decode is
    /// quarantined and left out).
    pub fn since(&self, oldest: Month) -> Result<Vec<(ReportKey, Report)>> {
        let mut out = Vec::new();
        for entry in self.tree.iter() {
            let (k, bytes) = entry?;
            let Some(key) = ReportKey::parse(&k).filter(|key| key.month >= oldest) else { continue };
            if let Some(report) = self.q.read::<Report>(&self.tree, &k, &bytes)? {
                out.push((key, report));
            }
        }
        Ok(out)
    }

    /// Drops the reports of months before `oldest`.
    pub fn drop_before(&self, oldest: Month) -> Result<()> {
        for entry in self.tree.iter().keys() {
            let k = entry?;
            let stale = ReportKey::parse(&k).is_none_or(|key| key.month < oldest);
            if stale {
                self.tree.remove(k)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn key(ledger: u8, team: &str, month: Month, node: &str) -> ReportKey {
        ReportKey { ledger, team: team.into(), month, node: node.into() }
    }

    #[test]
    fn reports_are_kept_read_back_and_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let tokens =
            Report { total: 30, by_key: vec![("fc-…111111".into(), 20), ("fc-…222222".into(), 10)] };
        store.reports.put(&key(0, "t", 202_611, "b"), &Report { total: 3, by_key: vec![] }).expect("put");
        store.reports.put(&key(0, "t", 202_611, "b"), &Report { total: 5, by_key: vec![] }).expect("put");
        store.reports.put(&key(1, "t", 202_611, "b"), &tokens).expect("put");
        store.reports.put(&key(0, "t", 202_511, "c"), &Report { total: 9, by_key: vec![] }).expect("put");
        store
            .reports
            .put(&key(0, "team-2", 202_610, "node-c"), &Report { total: 1, by_key: vec![] })
            .expect("put");
        drop(store);

        let store = Store::open(dir.path()).expect("open again");
        let mut kept = store.reports.since(202_512).expect("since");
        kept.sort_by_key(|(k, _)| k.bytes());
        assert_eq!(
            kept,
            vec![
                (key(0, "t", 202_611, "b"), Report { total: 5, by_key: vec![] }),
                (key(0, "team-2", 202_610, "node-c"), Report { total: 1, by_key: vec![] }),
                (key(1, "t", 202_611, "b"), tokens.clone()),
            ],
            "a month older than the history is left out; the last report of each is kept"
        );
        store.reports.drop_before(202_611).expect("drop");
        let mut kept = store.reports.since(0).expect("since");
        kept.sort_by_key(|(k, _)| k.bytes());
        assert_eq!(
            kept,
            vec![
                (key(0, "t", 202_611, "b"), Report { total: 5, by_key: vec![] }),
                (key(1, "t", 202_611, "b"), tokens),
            ],
            "months before the oldest are dropped"
        );
    }
}
