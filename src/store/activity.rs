//! The team activity log (spec §4.11): one record per job a team started — id, endpoint,
//! time and target (none for zero-data-retention work) — kept for a day. Keys are the team,
//! then time and id, so a team's records read newest first with a reverse range scan, and a
//! page boundary is just a key.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::{JobId, TeamId};

/// One activity record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityRecord {
    /// Job id (retrieve the result with the endpoint's GET route).
    pub id: String,
    /// `scrape`, `crawl`, `batch_scrape`, `map`, ...
    pub endpoint: String,
    /// When it started (epoch ms).
    pub created_ms: u64,
    /// What it worked on; `None` for zero-data-retention work.
    pub target: Option<String>,
}

/// A page of records, newest first, and where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityPage {
    /// The records.
    pub records: Vec<ActivityRecord>,
    /// Position after the last record, when more remain.
    pub next: Option<(u64, JobId)>,
}

codec::records!(ActivityRecord => 1);

/// Typed access to the `activity` tree.
#[derive(Debug, Clone)]
pub struct ActivityLog {
    tree: sled::Tree,
    q: Quarantine,
}

fn prefix(team: &TeamId) -> Vec<u8> {
    let mut k = team.as_str().as_bytes().to_vec();
    k.push(0);
    k
}

fn key(team: &TeamId, at_ms: u64, id: JobId) -> Vec<u8> {
    let mut k = prefix(team);
    k.extend_from_slice(&at_ms.to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

impl ActivityLog {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Records that `team` started job `id` at `endpoint`.
    pub fn record(
        &self,
        team: &TeamId,
        endpoint: &str,
        id: JobId,
        at_ms: u64,
        target: Option<&str>,
    ) -> Result<()> {
        let record = ActivityRecord {
            id: id.to_string(),
            endpoint: endpoint.to_owned(),
            created_ms: at_ms,
            target: target.map(str::to_owned),
        };
        self.tree.insert(key(team, at_ms, id), codec::encode(&record)?)?;
        Ok(())
    }

    /// Up to `limit` records of `team` newer than `since_ms`, newest first, starting below
    /// `before` (a previous page's `next`), optionally only of `endpoint`.
    pub fn page(
        &self,
        team: &TeamId,
        endpoint: Option<&str>,
        since_ms: u64,
        before: Option<(u64, JobId)>,
        limit: usize,
    ) -> Result<ActivityPage> {
        let lo = key(team, since_ms, JobId::nil());
        let hi = match before {
            Some((at, id)) => key(team, at, id),
            None => {
                let mut k = prefix(team);
                k.extend_from_slice(&[0xff; 24]);
                k
            }
        };
        let mut records = Vec::new();
        let mut next = None;
        for item in self.tree.range(lo..hi).rev() {
            let (k, value) = item?;
            let Some(record) = self.q.read::<ActivityRecord>(&self.tree, &k, &value)? else { continue };
            if endpoint.is_some_and(|e| e != record.endpoint) {
                continue;
            }
            if records.len() == limit {
                let last: &ActivityRecord = records.last().expect("limit is at least 1");
                next = JobId::parse(&last.id).map(|id| (last.created_ms, id));
                break;
            }
            records.push(record);
        }
        Ok(ActivityPage { records, next })
    }

    /// Deletes records older than `cutoff_ms`; returns how many.
    pub fn purge_older_than(&self, cutoff_ms: u64) -> Result<usize> {
        self.q.purge::<ActivityRecord>(&self.tree, |r| r.created_ms < cutoff_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn pages_newest_first_with_filter_and_cursor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (a, b) = (TeamId::parse("a").expect("t"), TeamId::parse("b").expect("t"));
        let ids: Vec<JobId> = (0..5).map(|_| JobId::new()).collect();
        for (i, id) in ids.iter().enumerate() {
            let endpoint = if i % 2 == 0 { "scrape" } else { "crawl" };
            store
                .activity
                .record(&a, endpoint, *id, 1_000 + i as u64, Some("http://x.test/"))
                .expect("record");
        }
        store.activity.record(&b, "scrape", JobId::new(), 1_002, None).expect("record");
        let first = store.activity.page(&a, None, 0, None, 2).expect("page");
        assert_eq!(first.records.iter().map(|r| r.created_ms).collect::<Vec<_>>(), vec![1_004, 1_003]);
        let second = store.activity.page(&a, None, 0, first.next, 2).expect("page");
        assert_eq!(second.records.iter().map(|r| r.created_ms).collect::<Vec<_>>(), vec![1_002, 1_001]);
        let last = store.activity.page(&a, None, 0, second.next, 2).expect("page");
        assert_eq!((last.records.len(), last.next), (1, None));
        let scrapes = store.activity.page(&a, Some("scrape"), 0, None, 10).expect("page");
        assert_eq!(scrapes.records.len(), 3);
        let recent = store.activity.page(&a, None, 1_003, None, 10).expect("page");
        assert_eq!(recent.records.len(), 2, "older records are outside the window");
        assert_eq!(store.activity.purge_older_than(1_002).expect("purge"), 2);
    }
}
