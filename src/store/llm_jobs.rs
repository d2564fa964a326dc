//! Extract and agent jobs (`POST /v2/extract`, `POST /v2/agent`): the request, its state
//! and its result, kept by the node that accepted the job until it expires. A job found
//! `processing` when the server starts is run again from its request (its pages are
//! fetched and extracted anew), so accepted work survives a restart or `kill -9`.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::{JobId, TeamId, time};

/// One job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmJobRecord {
    /// `extract` or `agent`.
    pub kind: String,
    /// Owner.
    pub team: String,
    /// The label of the API key that started it.
    pub key: Option<String>,
    /// The request, as JSON.
    pub request_json: Vec<u8>,
    /// `processing`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The merged result, as JSON (empty until completed).
    pub result_json: Vec<u8>,
    /// Why it failed.
    pub error: Option<String>,
    /// For each top-level field of the result (`data` when it is not an object), the pages
    /// that gave it a value.
    pub sources: Vec<(String, Vec<String>)>,
    /// Warnings gathered on the way.
    pub warnings: Vec<String>,
    /// When it was accepted.
    pub created_ms: u64,
    /// When it stops being served.
    pub expires_ms: u64,
    /// Credits charged.
    pub credits: u64,
    /// Language-model tokens used.
    pub tokens: u64,
}

codec::records!(LlmJobRecord => 1);

/// Typed access to the `model_jobs` tree.
#[derive(Debug, Clone)]
pub struct LlmJobStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl LlmJobStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Writes `record` under `id`, durably (the job was accepted).
    pub fn put(&self, id: JobId, record: &LlmJobRecord) -> Result<()> {
        self.tree.insert(id.as_bytes(), codec::encode(record)?)?;
        self.tree.flush()?;
        Ok(())
    }

    /// The job `id` of `team` (any team with `None`), unless it expired.
    pub fn get(&self, id: JobId, team: Option<&TeamId>) -> Result<Option<LlmJobRecord>> {
        let record = self.q.get::<LlmJobRecord>(&self.tree, id.as_bytes())?;
        Ok(record.filter(|r| team.is_none_or(|t| r.team == t.as_str()) && r.expires_ms > time::now_ms()))
    }

    /// Jobs still `processing`, to run again at start.
    pub fn unfinished(&self) -> Result<Vec<(JobId, LlmJobRecord)>> {
        let mut out = Vec::new();
        for entry in self.tree.iter() {
            let (key, bytes) = entry?;
            let Some(id) = JobId::from_bytes(&key) else { continue };
            if let Some(record) = self.q.read::<LlmJobRecord>(&self.tree, &key, &bytes)?
                && record.status == "processing"
            {
                out.push((id, record));
            }
        }
        Ok(out)
    }

    /// Deletes jobs that expired before `now_ms`; returns how many.
    pub fn purge_expired(&self, now_ms: u64) -> Result<usize> {
        self.q.purge::<LlmJobRecord>(&self.tree, |record| record.expires_ms <= now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn jobs_are_kept_per_team_and_found_unfinished() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let team = TeamId::parse("a").expect("team");
        let id = JobId::new();
        let now = time::now_ms();
        let record = LlmJobRecord {
            kind: "extract".into(),
            team: "a".into(),
            key: None,
            request_json: b"{}".to_vec(),
            status: "processing".into(),
            result_json: Vec::new(),
            error: None,
            sources: Vec::new(),
            warnings: Vec::new(),
            created_ms: now,
            expires_ms: now + 60_000,
            credits: 0,
            tokens: 0,
        };
        store.llm_jobs.put(id, &record).expect("put");
        assert_eq!(store.llm_jobs.get(id, Some(&team)).expect("get"), Some(record.clone()));
        assert_eq!(store.llm_jobs.get(id, Some(&TeamId::parse("b").expect("team"))).expect("get"), None);
        assert_eq!(store.llm_jobs.unfinished().expect("unfinished").len(), 1);
        store.llm_jobs.put(id, &LlmJobRecord { status: "completed".into(), ..record }).expect("put");
        assert!(store.llm_jobs.unfinished().expect("unfinished").is_empty());
        assert_eq!(store.llm_jobs.purge_expired(now + 120_000).expect("purge"), 1);
    }
}
