//! Browser sessions as the store remembers them: who owns each, when it was made and, once
//! it ended, how long it ran and what it cost. The live session itself (its tab and actor)
//! exists only in memory; this record is what lets a destroyed session answer 410 (and be
//! listed as destroyed) after a restart, and what marks a session that was live when the
//! server stopped as destroyed when it starts again.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::TeamId;

/// One session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Owner.
    pub team: String,
    /// When it was made (ms since the epoch).
    pub created_ms: u64,
    /// Last activity known to the store (ms since the epoch).
    pub last_activity_ms: u64,
    /// Whether the live view streams (as asked at creation).
    pub stream_web_view: bool,
    /// Token of its read-only live view (useless once it ended).
    pub view_token: String,
    /// Token of its interactive live view.
    pub control_token: String,
    /// When it ended; `None` while it lives.
    pub ended_ms: Option<u64>,
    /// How long it ran (set when it ended).
    pub duration_ms: u64,
    /// Credits billed for it (set when it ended).
    pub credits: u64,
    /// An agent prompt ran in it (billed at the agent's rate, also when a crash ended it).
    pub prompted: bool,
}

codec::records!(SessionRecord => 2);

/// Typed access to the `browser_sessions` tree.
#[derive(Debug, Clone)]
pub struct SessionStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl SessionStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Writes the record of session `id`.
    pub fn put(&self, id: &str, record: &SessionRecord) -> Result<()> {
        self.tree.insert(id.as_bytes(), codec::encode(record)?)?;
        Ok(())
    }

    /// Writes the record of session `id` and waits until it is on disk (a session made must
    /// be known after a crash, to be billed).
    pub async fn put_durable(&self, id: &str, record: &SessionRecord) -> Result<()> {
        self.put(id, record)?;
        super::flush_off_worker(&self.tree).await
    }

    /// The record of session `id`.
    pub fn get(&self, id: &str) -> Result<Option<SessionRecord>> {
        self.q.get::<SessionRecord>(&self.tree, id.as_bytes())
    }

    /// Every session of `team` (any team with `None`), by id.
    pub fn all(&self, team: Option<&TeamId>) -> Result<Vec<(String, SessionRecord)>> {
        let mut out = Vec::new();
        for entry in self.tree.iter() {
            let (key, bytes) = entry?;
            if let Some(record) = self.q.read::<SessionRecord>(&self.tree, &key, &bytes)?
                && team.is_none_or(|t| record.team == t.as_str())
            {
                out.push((String::from_utf8_lossy(&key).into_owned(), record));
            }
        }
        Ok(out)
    }

    /// Marks every session still recorded as live destroyed at `now_ms` (their browsers
    /// went with the process that ran them), with the credits `bill` names for each (known
    /// only to the caller), and forgets those that ended before `forget_before_ms`.
    /// Returns the sessions marked, as now recorded: the caller charges their teams. The
    /// mark is written before any charge, so a crash between the two leaves a session
    /// unbilled, never billed twice.
    pub fn settle(
        &self,
        now_ms: u64,
        forget_before_ms: u64,
        bill: impl Fn(&SessionRecord) -> u64,
    ) -> Result<Vec<(String, SessionRecord)>> {
        let mut marked = Vec::new();
        for (id, mut record) in self.all(None)? {
            match record.ended_ms {
                Some(ended) if ended < forget_before_ms => {
                    self.tree.remove(id.as_bytes())?;
                }
                Some(_) => {}
                None => {
                    record.ended_ms = Some(now_ms);
                    record.duration_ms = record.last_activity_ms.saturating_sub(record.created_ms);
                    record.credits = bill(&record);
                    self.put(&id, &record)?;
                    marked.push((id, record));
                }
            }
        }
        self.tree.flush()?;
        Ok(marked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn live_sessions_are_marked_destroyed_and_billed_and_old_ones_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let live = SessionRecord {
            team: "a".into(),
            created_ms: 1_000,
            last_activity_ms: 4_000,
            stream_web_view: true,
            view_token: "v".into(),
            control_token: "c".into(),
            ended_ms: None,
            duration_ms: 0,
            credits: 0,
            prompted: false,
        };
        let old = SessionRecord { ended_ms: Some(2_000), team: "b".into(), ..live.clone() };
        store.browser_sessions.put("live", &live).expect("put");
        store.browser_sessions.put("old", &old).expect("put");
        let marked = store.browser_sessions.settle(10_000, 5_000, |r| r.duration_ms / 1_000).expect("settle");
        assert_eq!(marked.iter().map(|(id, r)| (id.as_str(), r.credits)).collect::<Vec<_>>(), [("live", 3)]);
        let marked = store.browser_sessions.get("live").expect("get").expect("kept");
        assert_eq!((marked.ended_ms, marked.duration_ms, marked.credits), (Some(10_000), 3_000, 3));
        assert_eq!(store.browser_sessions.get("old").expect("get"), None);
        let team = TeamId::parse("a").expect("team");
        assert_eq!(store.browser_sessions.all(Some(&team)).expect("all").len(), 1);
    }
}
