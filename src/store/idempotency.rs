//! Idempotency keys (`x-idempotency-key`): the first request with a key claims it for its
//! job; a repeat is refused, so a retried POST cannot start the same crawl twice.

use super::{Result, codec};
use crate::model::{JobId, TeamId};

/// Typed access to the `idempotency` tree.
#[derive(Debug, Clone)]
pub struct IdempotencyStore {
    tree: sled::Tree,
}

impl IdempotencyStore {
    pub(super) fn new(tree: sled::Tree) -> Self {
        Self { tree }
    }

    /// Claims `key` for `job`; returns the job that claimed it first when it was taken.
    pub fn claim(&self, team: &TeamId, key: &str, job: JobId) -> Result<Option<JobId>> {
        let k = codec::digest(&[b"idempotency", team.as_str().as_bytes(), key.as_bytes()]);
        match self.tree.compare_and_swap(k, None as Option<&[u8]>, Some(&job.as_bytes()[..]))? {
            Ok(()) => Ok(None),
            Err(current) => Ok(current.current.and_then(|v| JobId::from_bytes(&v))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_key_is_claimed_once_per_team() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let a = TeamId::parse("a").expect("team");
        let b = TeamId::parse("b").expect("team");
        let first = JobId::new();
        assert_eq!(store.idempotency.claim(&a, "k1", first).expect("claim"), None);
        assert_eq!(store.idempotency.claim(&a, "k1", JobId::new()).expect("claim"), Some(first));
        assert_eq!(store.idempotency.claim(&b, "k1", JobId::new()).expect("claim"), None);
    }
}
