//! Replay contexts of scrapes: the URL and options a scrape ran with, kept as long as its
//! result, so an interact session can re-create the page in the same state. Zero-data-
//! retention scrapes write none; the service remembers only their ids, in memory.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::{JobId, ScrapeOptions, TeamId, time};

/// What an interact session needs to re-create a scrape's page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReplayRecord {
    team: String,
    expires_ms: u64,
    url: String,
    /// The options as JSON (their shape may grow; JSON keeps old records readable).
    pub(super) options_json: Vec<u8>,
}

codec::records!(ReplayRecord => 1);

/// A scrape's replay context.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Owner.
    pub team: String,
    /// The scraped URL.
    pub url: String,
    /// The options it ran with.
    pub options: ScrapeOptions,
}

/// Typed access to the replays tree.
#[derive(Debug, Clone)]
pub struct ReplayStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl ReplayStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Keeps the context of scrape `id` for `ttl_ms`.
    pub fn put(
        &self,
        id: JobId,
        team: &TeamId,
        url: &str,
        options: &ScrapeOptions,
        ttl_ms: u64,
    ) -> Result<()> {
        let record = ReplayRecord {
            team: team.as_str().to_owned(),
            expires_ms: time::now_ms().saturating_add(ttl_ms),
            url: url.to_owned(),
            options_json: serde_json::to_vec(options)?,
        };
        self.tree.insert(id.as_bytes(), codec::encode(&record)?)?;
        Ok(())
    }

    /// The context of scrape `id` (any team's: the caller decides between 403 and 404).
    pub fn get(&self, id: JobId) -> Result<Option<Replay>> {
        let Some(record) = self.q.get::<ReplayRecord>(&self.tree, id.as_bytes())? else {
            return Ok(None);
        };
        if record.expires_ms <= time::now_ms() {
            return Ok(None);
        }
        let options = serde_json::from_slice(&record.options_json)?;
        Ok(Some(Replay { team: record.team, url: record.url, options }))
    }

    /// Deletes contexts that expired before `now_ms`; returns how many.
    pub fn purge_expired(&self, now_ms: u64) -> Result<usize> {
        self.q.purge::<ReplayRecord>(&self.tree, |record| record.expires_ms <= now_ms)
    }
}

/// Ids of recent zero-data-retention scrapes and their teams, in memory only (bounded):
/// an interact request for one gets "replay context unavailable" rather than "not found".
#[derive(Debug, Default)]
pub struct UnreplayableIds {
    order: std::sync::Mutex<std::collections::VecDeque<(JobId, String)>>,
}

impl UnreplayableIds {
    /// How many ids are remembered.
    const CAPACITY: usize = 10_000;

    /// Remembers `id` of `team`.
    pub fn remember(&self, id: JobId, team: &TeamId) {
        let mut order = self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if order.len() == Self::CAPACITY {
            order.pop_front();
        }
        order.push_back((id, team.as_str().to_owned()));
    }

    /// The team of a remembered id.
    pub fn team_of(&self, id: JobId) -> Option<String> {
        let order = self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        order.iter().rev().find(|(i, _)| *i == id).map(|(_, team)| team.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn contexts_round_trip_and_expire() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let team = TeamId::parse("a").expect("team");
        let options = ScrapeOptions { wait_for_ms: 250, mobile: true, ..Default::default() };
        let id = JobId::new();
        store.replays.put(id, &team, "http://a.test/", &options, 60_000).expect("put");
        let replay = store.replays.get(id).expect("get").expect("present");
        assert_eq!((replay.team.as_str(), replay.url.as_str()), ("a", "http://a.test/"));
        assert_eq!(replay.options, options);
        let old = JobId::new();
        store.replays.put(old, &team, "http://a.test/", &options, 0).expect("put");
        assert!(store.replays.get(old).expect("get").is_none());
        assert_eq!(store.replays.purge_expired(time::now_ms()).expect("purge"), 1);
    }
}
