//! The indexer's backlog: pages to index once no page with its text waits. Pages of the
//! page cache wait in the store as their cache keys ([`IndexBacklog`]), so the backlog costs
//! no memory however far a crawl runs ahead of the index, and what is left at a stop or a
//! kill is indexed at the next start. Entries that cannot be built again from the store
//! (uploads) wait in memory with their text.
//!
//! Stored entries are read in order from a cursor, and removed from the store only once the
//! index has committed what was built from them; so are the notes of pages held with their
//! text ([`IndexBacklog::hold`]), which a start after a kill moves to the backlog.

use std::collections::VecDeque;
use std::sync::Arc;

use super::index::IndexedPage;
use crate::store::index_backlog::{IndexBacklog, Position};
use crate::store::page_cache::CacheKey;

/// Builds a page's entry from its cache key; `None` when there is nothing to index.
pub type Builder = Arc<dyn Fn(CacheKey) -> Option<IndexedPage> + Send + Sync>;

/// An entry waiting in memory: a way to build it.
pub struct Later(pub Box<dyn FnOnce() -> Option<IndexedPage> + Send + Sync>);

impl std::fmt::Debug for Later {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Later")
    }
}

/// The backlog, as the indexer keeps it.
pub struct Backlog {
    memory: VecDeque<Later>,
    stored: IndexBacklog,
    build: Builder,
    /// Stored entries not yet taken (counted at the start, then kept up to date).
    stored_waiting: usize,
    /// The last stored entry taken.
    cursor: Option<Position>,
    /// The last stored entry whose page was written and not yet committed.
    written_through: Option<Position>,
    /// Held pages written and not yet committed.
    written_held: Vec<Position>,
}

impl std::fmt::Debug for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backlog").field("waiting", &self.len()).finish_non_exhaustive()
    }
}

/// Entries taken to be built and written.
pub struct Taken {
    memory: Vec<Later>,
    keys: Vec<CacheKey>,
    build: Builder,
    /// The last stored entry among them.
    pub through: Option<Position>,
}

impl std::fmt::Debug for Taken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taken").field("entries", &self.len()).finish_non_exhaustive()
    }
}

impl Taken {
    /// How many entries were taken.
    pub fn len(&self) -> usize {
        self.memory.len() + self.keys.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Builds the entries (converting cached pages again: the writing thread's work).
    pub fn build(self) -> Vec<IndexedPage> {
        let Self { memory, keys, build, .. } = self;
        let built = memory.into_iter().filter_map(|Later(build)| build());
        built.chain(keys.into_iter().filter_map(|key| build(key))).collect()
    }
}

impl Backlog {
    /// The backlog kept in `stored`, its entries built with `build`.
    pub fn new(stored: IndexBacklog, build: Builder) -> Self {
        let stored_waiting = stored.waiting();
        Self {
            memory: VecDeque::new(),
            stored,
            build,
            stored_waiting,
            cursor: None,
            written_through: None,
            written_held: Vec::new(),
        }
    }

    /// Entries waiting.
    pub fn len(&self) -> usize {
        self.memory.len() + self.stored_waiting
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries waiting in memory (lost at a stop).
    pub fn in_memory(&self) -> usize {
        self.memory.len()
    }

    /// An entry that waits in memory.
    pub fn push(&mut self, later: Later) {
        self.memory.push_back(later);
    }

    /// An entry was stored.
    pub fn stored_one(&mut self) {
        self.stored_waiting += 1;
    }

    /// Takes up to `n` entries, those in memory first.
    pub fn take(&mut self, n: usize) -> Taken {
        let memory: Vec<Later> = self.memory.drain(..n.min(self.memory.len())).collect();
        let wanted = n - memory.len();
        let stored = match wanted {
            0 => Vec::new(),
            _ => self.stored.after(self.cursor, wanted).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the search index's backlog could not be read");
                Vec::new()
            }),
        };
        if stored.len() < wanted {
            // None beyond: entries whose news is still on its way were taken already.
            self.stored_waiting = 0;
        } else {
            self.stored_waiting = self.stored_waiting.saturating_sub(stored.len());
        }
        let through = stored.last().map(|(position, _)| *position);
        if through.is_some() {
            self.cursor = through;
        }
        let keys = stored.into_iter().map(|(_, key)| key).collect();
        Taken { memory, keys, build: Arc::clone(&self.build), through }
    }

    /// The pages of entries up to `through` were written to the index.
    pub fn written(&mut self, through: Option<Position>) {
        if through.is_some() {
            self.written_through = through;
        }
    }

    /// Held pages (at these places in the store) were written to the index.
    pub fn written_held(&mut self, held: Vec<Position>) {
        self.written_held.extend(held);
    }

    /// What was written is committed: its stored entries go.
    pub fn committed(&mut self) {
        let held = std::mem::take(&mut self.written_held);
        let removed = self.stored.release(&held).and_then(|()| match self.written_through.take() {
            Some(through) => self.stored.remove_through(through),
            None => Ok(()),
        });
        if let Err(e) = removed {
            tracing::warn!(error = %e, "committed pages stay in the search index's backlog (indexed again at the next start)");
        }
    }

    /// A commit failed: stored entries not yet removed are read again.
    pub fn commit_failed(&mut self) {
        // Held pages stay noted in the store: the next start indexes them.
        self.written_held.clear();
        self.written_through = None;
        self.cursor = None;
        self.stored_waiting = self.stored.waiting();
    }
}
