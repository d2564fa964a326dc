//! Pages the search index has yet to take, kept as their page-cache keys: the indexer's
//! backlog beyond the pages it holds with their text (`search.index_queue`). Kept here, the
//! backlog costs no memory however far a crawl runs ahead of the index, and survives a stop
//! or a kill: the next start indexes what was left.
//!
//! Pages the indexer holds with their text are kept here too, in a tree of their own
//! (`index_held`), until their commit: a kill before it leaves them there, and the next
//! start moves them to the backlog.
//!
//! Layout of both trees (fixed, not versioned): key = a sequence number (8 bytes,
//! big-endian, from sled's id generator, so oldest first), value = the page's 32-byte cache
//! key. An entry is removed once the index has committed the page built from it; one read
//! again after a crash is indexed again, which replaces the page's earlier entry.
//! Both trees are additive: the store's schema version is unchanged, and a previous release
//! opens the data directory and ignores them (what they hold is indexed once this release
//! runs again).

use super::Result;
use super::page_cache::CacheKey;

/// Where an entry sits in the backlog.
pub type Position = [u8; 8];

/// Typed access to the `index_backlog` tree.
#[derive(Debug, Clone)]
pub struct IndexBacklog {
    db: sled::Db,
    tree: sled::Tree,
    held: sled::Tree,
}

impl IndexBacklog {
    pub(super) fn new(db: sled::Db, tree: sled::Tree, held: sled::Tree) -> Self {
        Self { db, tree, held }
    }

    /// Adds a page to index later.
    pub fn push(&self, key: CacheKey) -> Result<()> {
        self.insert(&self.tree, key).map(drop)
    }

    fn insert(&self, tree: &sled::Tree, key: CacheKey) -> Result<Position> {
        let position = self.db.generate_id()?.to_be_bytes();
        tree.insert(position, key.as_bytes())?;
        Ok(position)
    }

    /// Notes a page the indexer holds with its text, until [`IndexBacklog::release`].
    pub fn hold(&self, key: CacheKey) -> Result<Position> {
        self.insert(&self.held, key)
    }

    /// Forgets held pages (committed, or with nothing to index).
    pub fn release(&self, positions: &[Position]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for position in positions {
            batch.remove(&position[..]);
        }
        self.held.apply_batch(batch)?;
        Ok(())
    }

    /// Moves the pages still held (by a run that ended before their commit) to the
    /// backlog; returns how many.
    pub fn requeue_held(&self) -> Result<usize> {
        let mut moved = 0;
        for item in self.held.iter() {
            let (position, key) = item?;
            if let Some(key) = CacheKey::from_bytes(&key) {
                self.push(key)?;
                moved += 1;
            }
            self.held.remove(position)?;
        }
        Ok(moved)
    }

    /// Up to `n` entries after `after` (from the oldest when `None`), oldest first.
    pub fn after(&self, after: Option<Position>, n: usize) -> Result<Vec<(Position, CacheKey)>> {
        let from = match after {
            Some(p) => std::ops::Bound::Excluded(p),
            None => std::ops::Bound::Unbounded,
        };
        let mut entries = Vec::with_capacity(n.min(1024));
        for item in self.tree.range::<Position, _>((from, std::ops::Bound::Unbounded)).take(n) {
            let (position, key) = item?;
            // Entries of another layout (none are written) are skipped, not fatal.
            if let (Ok(position), Some(key)) = (Position::try_from(&position[..]), CacheKey::from_bytes(&key))
            {
                entries.push((position, key));
            }
        }
        Ok(entries)
    }

    /// Removes every entry up to and including `through`.
    pub fn remove_through(&self, through: Position) -> Result<()> {
        let mut batch = sled::Batch::default();
        for item in self.tree.range(..=through) {
            batch.remove(item?.0);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Removes every entry (a rebuild indexes every cached page anyway).
    pub fn clear(&self) -> Result<()> {
        self.tree.clear()?;
        self.held.clear()?;
        Ok(())
    }

    /// How many entries wait (counts them: for a start, not for every page).
    pub fn waiting(&self) -> usize {
        self.tree.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::page_cache::PageCache;

    /// Cache keys of `n` pages.
    fn keys(n: usize) -> Vec<CacheKey> {
        (0..n).map(|n| PageCache::key(&format!("http://site.test/{n}"), "desktop")).collect()
    }

    /// The cache keys of read entries.
    fn keys_of(entries: &[(Position, CacheKey)]) -> Vec<CacheKey> {
        entries.iter().map(|e| e.1).collect()
    }

    /// Entries come back oldest first from where the last read ended, stay until removed,
    /// and are still there after the store is opened again.
    #[test]
    fn entries_are_read_in_order_and_kept_until_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let keys = keys(5);
        {
            let store = Store::open(dir.path()).expect("open");
            for key in &keys {
                store.index_backlog.push(*key).expect("push");
            }
            let first = store.index_backlog.after(None, 2).expect("read");
            assert_eq!(keys_of(&first), keys[..2]);
            let rest = store.index_backlog.after(Some(first[1].0), 10).expect("read");
            assert_eq!(keys_of(&rest), keys[2..]);
            store.index_backlog.remove_through(first[1].0).expect("remove");
            assert_eq!(store.index_backlog.waiting(), 3);
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("open again");
        let left = store.index_backlog.after(None, 10).expect("read");
        assert_eq!(keys_of(&left), keys[2..]);
        store.index_backlog.push(keys[0]).expect("push after a restart");
        let last = store.index_backlog.after(Some(left[2].0), 10).expect("read");
        assert_eq!(keys_of(&last), [keys[0]], "a new entry comes after the old ones");
    }

    /// Held pages released are gone; those still held at the next start move to the
    /// backlog, once.
    #[test]
    fn pages_held_at_a_stop_move_to_the_backlog() {
        let dir = tempfile::tempdir().expect("tempdir");
        let keys = keys(3);
        let store = Store::open(dir.path()).expect("open");
        let held: Vec<_> = keys.iter().map(|key| store.index_backlog.hold(*key).expect("hold")).collect();
        store.index_backlog.release(&held[..1]).expect("release");
        assert_eq!(store.index_backlog.waiting(), 0, "held pages are not in the backlog");
        assert_eq!(store.index_backlog.requeue_held().expect("requeue"), 2);
        let queued = store.index_backlog.after(None, 10).expect("read");
        assert_eq!(keys_of(&queued), keys[1..]);
        assert_eq!(store.index_backlog.requeue_held().expect("requeue"), 0, "moved once");
    }
}
