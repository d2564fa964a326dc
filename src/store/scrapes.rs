//! Stored scrape results, retrievable by id by their own team until they expire.
//! Keys are the 16 bytes of the UUIDv7 id, so the tree is ordered by creation time.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::{Document, JobId, TeamId, time};

/// One stored result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScrapeRecord {
    /// Owner.
    pub team: String,
    /// When it was stored.
    pub created_ms: u64,
    /// When it stops being served.
    pub expires_ms: u64,
    /// The result document as JSON.
    pub document_json: Vec<u8>,
}

codec::records!(ScrapeRecord => 1);

/// Typed access to the `scrapes` tree.
#[derive(Debug, Clone)]
pub struct ScrapeStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl ScrapeStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Stores `document` under `id` for `team`, kept for `ttl_ms`.
    pub fn put(&self, id: JobId, team: &TeamId, document: &Document, ttl_ms: u64) -> Result<()> {
        let now = time::now_ms();
        let record = ScrapeRecord {
            team: team.as_str().to_owned(),
            created_ms: now,
            expires_ms: now.saturating_add(ttl_ms),
            document_json: serde_json::to_vec(document)?,
        };
        self.tree.insert(id.as_bytes(), codec::encode(&record)?)?;
        Ok(())
    }

    /// The document stored under `id`, when it belongs to `team` and has not expired.
    pub fn get(&self, id: JobId, team: &TeamId) -> Result<Option<Document>> {
        let Some(record) = self.q.get::<ScrapeRecord>(&self.tree, id.as_bytes())? else {
            return Ok(None);
        };
        if record.team != team.as_str() || record.expires_ms <= time::now_ms() {
            return Ok(None);
        }
        Ok(Some(serde_json::from_slice(&record.document_json)?))
    }

    /// Deletes results that expired before `now_ms`; returns how many.
    pub fn purge_expired(&self, now_ms: u64) -> Result<usize> {
        self.q.purge::<ScrapeRecord>(&self.tree, |record| record.expires_ms <= now_ms)
    }

    /// Number of stored results (expired ones included until removed).
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn results_are_private_to_their_team_and_expire() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let a = TeamId::parse("a").expect("team");
        let b = TeamId::parse("b").expect("team");
        let doc = Document { markdown: Some("hello".into()), ..Default::default() };
        let id = JobId::new();
        store.scrapes.put(id, &a, &doc, 60_000).expect("put");
        assert_eq!(store.scrapes.get(id, &a).expect("get"), Some(doc.clone()));
        assert_eq!(store.scrapes.get(id, &b).expect("get"), None);
        assert_eq!(store.scrapes.get(JobId::new(), &a).expect("get"), None);
        let old = JobId::new();
        store.scrapes.put(old, &a, &doc, 0).expect("put");
        assert_eq!(store.scrapes.get(old, &a).expect("get"), None);
        assert_eq!(store.scrapes.purge_expired(time::now_ms()).expect("purge"), 1);
        assert_eq!(store.scrapes.len(), 1);
    }
}
