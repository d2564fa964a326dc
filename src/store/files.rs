//! Files ferrocrawl serves under `/v2/files/{id}`: screenshots and PDFs made by the browser,
//! readable by their team only until they expire with the result that links them.
//! Keys are the 16 bytes of a UUIDv7, so the tree is ordered by creation time.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::{JobId, TeamId, time};

/// One stored file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredFile {
    /// Owner.
    pub team: String,
    /// Media type.
    pub mime: String,
    /// When it stops being served (epoch ms).
    pub expires_ms: u64,
    /// Contents.
    pub bytes: Vec<u8>,
}

codec::records!(StoredFile => 1);

/// Typed access to the files tree.
#[derive(Debug, Clone)]
pub struct FileStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl FileStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Stores `bytes` for `team` until `expires_ms` (epoch ms); returns the new file's id.
    pub fn put(&self, team: &TeamId, mime: &str, bytes: Vec<u8>, expires_ms: u64) -> Result<JobId> {
        let id = JobId::new();
        let file = StoredFile { team: team.as_str().to_owned(), mime: mime.to_owned(), expires_ms, bytes };
        self.tree.insert(id.as_bytes(), codec::encode(&file)?)?;
        Ok(id)
    }

    /// The file, when it exists and has not expired (whoever owns it).
    pub fn get(&self, id: JobId) -> Result<Option<StoredFile>> {
        let Some(file) = self.q.get::<StoredFile>(&self.tree, id.as_bytes())? else { return Ok(None) };
        Ok((file.expires_ms > time::now_ms()).then_some(file))
    }

    /// Deletes files that expired before `now_ms`; returns how many.
    pub fn purge_expired(&self, now_ms: u64) -> Result<usize> {
        self.q.purge::<StoredFile>(&self.tree, |record| record.expires_ms <= now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn files_expire() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path()).expect("store");
        let team = TeamId::parse("a").expect("team");
        let live = store.files.put(&team, "image/png", vec![1, 2], time::now_ms() + 60_000).expect("put");
        let gone = store.files.put(&team, "image/png", vec![3], time::now_ms()).expect("put");
        assert_eq!(store.files.get(live).expect("get").map(|f| f.bytes), Some(vec![1, 2]));
        assert!(store.files.get(gone).expect("get").is_none());
        assert_eq!(store.files.purge_expired(time::now_ms() + 1).expect("purge"), 1);
    }
}
