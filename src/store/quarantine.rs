//! Records that do not decode are never deleted: they move, with the tree and key they came
//! from and the decoding error, to the `quarantine` tree, in one atomic step. The server
//! logs each at error level and counts them; `ferrocrawl store check` lists them. A record
//! that fails to decode therefore costs only what it belonged to (one job, one cached page),
//! never the service or the other records beside it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::ConflictableTransactionError;

use super::codec::{self, CodecError, Record};
use super::{Result, StoreError};
use crate::model::time;

/// A record held in quarantine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedRecord {
    /// The tree it was read from.
    pub tree: String,
    /// Its key there.
    pub key: Vec<u8>,
    /// Why it did not decode.
    pub error: String,
    /// When it was moved (epoch ms).
    pub at_ms: u64,
    /// The stored bytes, untouched.
    pub bytes: Vec<u8>,
}

codec::records!(QuarantinedRecord => 1);

/// The quarantine of one database.
#[derive(Debug, Clone)]
pub struct Quarantine {
    tree: sled::Tree,
    held: Arc<AtomicU64>,
}

fn tree_name(tree: &sled::Tree) -> String {
    String::from_utf8_lossy(&tree.name()).into_owned()
}

fn quarantine_key(tree: &str, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(tree.len() + 1 + key.len());
    k.extend_from_slice(tree.as_bytes());
    k.push(0);
    k.extend_from_slice(key);
    k
}

/// The quarantine entry of `key` of `tree`: the tree's name, the entry's key and its record.
fn entry(
    tree: &sled::Tree,
    key: &[u8],
    bytes: &[u8],
    error: &CodecError,
) -> Result<(String, Vec<u8>, Vec<u8>)> {
    let name = tree_name(tree);
    let record = QuarantinedRecord {
        tree: name.clone(),
        key: key.to_vec(),
        error: error.to_string(),
        at_ms: time::now_ms(),
        bytes: bytes.to_vec(),
    };
    let qkey = quarantine_key(&name, key);
    Ok((name, qkey, codec::encode(&record)?))
}

impl Quarantine {
    pub(super) fn new(tree: sled::Tree) -> Self {
        Self { tree, held: Arc::default() }
    }

    /// Moves `key` of `tree`, whose value failed to decode with `error`, into quarantine.
    /// Nothing happens when the value changed in the meantime (it is someone else's now).
    pub(crate) fn hold(&self, tree: &sled::Tree, key: &[u8], bytes: &[u8], error: &CodecError) -> Result<()> {
        let (name, qkey, encoded) = entry(tree, key, bytes, error)?;
        let moved: std::result::Result<bool, sled::transaction::TransactionError<StoreError>> =
            (tree, &self.tree).transaction(|(source, held)| {
                if source.get(key)?.as_deref() != Some(bytes) {
                    return Ok(false);
                }
                source.remove(key)?;
                held.insert(qkey.as_slice(), encoded.as_slice())?;
                Ok::<_, ConflictableTransactionError<StoreError>>(true)
            });
        let moved = moved.map_err(|e| match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => StoreError::Db(e),
        })?;
        if moved {
            self.report(&name, key, error);
        }
        Ok(())
    }

    /// Keeps a copy of `bytes`, a value of `key` in `tree` that no longer is there (it was
    /// just replaced) and did not decode.
    pub(crate) fn keep(&self, tree: &sled::Tree, key: &[u8], bytes: &[u8], error: &CodecError) -> Result<()> {
        let (name, qkey, encoded) = entry(tree, key, bytes, error)?;
        self.tree.insert(qkey, encoded)?;
        self.report(&name, key, error);
        Ok(())
    }

    fn report(&self, tree: &str, key: &[u8], error: &CodecError) {
        let count = self.held.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::error!(
            tree = %tree,
            key = %hex::encode(key),
            error = %error,
            quarantined_since_start = count,
            "a stored record does not decode; moved to quarantine (see `ferrocrawl store check`)"
        );
    }

    /// Decodes `bytes` (the value of `key` in `tree`), or moves it to quarantine and
    /// answers `None`.
    pub(crate) fn read<T: Record>(&self, tree: &sled::Tree, key: &[u8], bytes: &[u8]) -> Result<Option<T>> {
        match codec::decode(bytes) {
            Ok(value) => Ok(Some(value)),
            Err(e) => {
                self.hold(tree, key, bytes, &e)?;
                Ok(None)
            }
        }
    }

    /// The value of `key` in `tree`, decoded, or `None` when absent or quarantined now.
    pub(crate) fn get<T: Record>(&self, tree: &sled::Tree, key: &[u8]) -> Result<Option<T>> {
        match tree.get(key)? {
            Some(bytes) => self.read(tree, key, &bytes),
            None => Ok(None),
        }
    }

    /// Removes the records of `tree` that `expired` says are gone (quarantining those that
    /// do not decode); returns how many were removed.
    pub(crate) fn purge<T: Record>(&self, tree: &sled::Tree, expired: impl Fn(&T) -> bool) -> Result<usize> {
        let mut removed = 0;
        for item in tree.iter() {
            let (key, value) = item?;
            if let Some(record) = self.read::<T>(tree, &key, &value)?
                && expired(&record)
                && tree.remove(&key)?.is_some()
            {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Whether the record at `key` of the tree named `tree` is in quarantine.
    pub fn holds(&self, tree: &str, key: &[u8]) -> Result<bool> {
        Ok(self.tree.contains_key(quarantine_key(tree, key))?)
    }

    /// Every quarantined record.
    pub fn list(&self) -> Result<Vec<QuarantinedRecord>> {
        let mut out = Vec::new();
        for item in self.tree.iter() {
            let (_, value) = item?;
            out.push(codec::decode(&value)?);
        }
        Ok(out)
    }

    /// Records this process moved to quarantine since it started.
    pub fn held_since_start(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{JobId, JobStatus, TeamId};
    use crate::store::Store;
    use crate::store::jobs::{JobKind, JobRecord, trees};

    fn job(team: &str) -> JobRecord {
        JobRecord {
            kind: JobKind::Batch,
            team: team.into(),
            url: "http://a.test/".into(),
            options: Default::default(),
            status: JobStatus::Scraping,
            created_ms: 1,
            expires_ms: u64::MAX,
            finished_ms: None,
            error: None,
        }
    }

    /// A job record that does not decode fails that job only: it moves to quarantine with
    /// its bytes, the other jobs read on, and nothing is deleted.
    #[test]
    fn an_unreadable_record_is_held_not_deleted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (good, bad) = (JobId::new(), JobId::new());
        store.jobs.create(good, &job("a"), [], None).expect("good");
        store.jobs.create(bad, &job("a"), [], None).expect("bad");
        let damaged = [0xFC, 2, 0xFF, 0xFF, 0xFF];
        store.db.open_tree(trees::JOBS).expect("jobs").insert(bad.as_bytes(), &damaged[..]).expect("damage");

        let all = store.jobs.all().expect("the sweep goes on");
        assert_eq!(all.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![good]);
        assert_eq!(store.jobs.record(bad).expect("read"), None);
        let held = store.quarantine.list().expect("list");
        assert_eq!(held.len(), 1);
        assert_eq!((held[0].tree.as_str(), held[0].key.as_slice()), (trees::JOBS, &bad.as_bytes()[..]));
        assert_eq!(held[0].bytes, damaged, "the bytes are kept as they were");
        assert!(store.quarantine.holds(trees::JOBS, bad.as_bytes()).expect("holds"));
        assert_eq!(store.quarantine.held_since_start(), 1);
        let report = crate::store::check::run(&store).expect("check");
        assert!(!report.is_clean() && report.failures.is_empty(), "listed, not unreadable");
        // The team's other data is untouched.
        assert!(store.teams.get(&TeamId::parse("a").expect("team")).is_ok());
    }
}
