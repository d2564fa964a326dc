//! The actor that feeds the local index, off the pages' hot path.
//!
//! A stored page is offered through an [`IndexHandle`]: a message to the [`Indexer`], never
//! a wait. At most `search.index_queue` pages wait at once; beyond that a page is not
//! indexed (counted in `search_index_dropped_total`; `ferrocrawl index rebuild` recovers
//! it), so a crawl never slows down for the index. The actor gathers pages into batches
//! and writes each batch and commits it in one go on the blocking pool: at most
//! [`BATCH`] pages, or what came within [`FLUSH_AFTER`] of the first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::index::{IndexedPage, SearchIndex};

/// Most pages written and committed together.
pub const BATCH: usize = 1024;
/// Longest a page waits for its batch's commit.
pub const FLUSH_AFTER: Duration = Duration::from_millis(500);

/// Messages of [`Indexer`].
#[derive(Debug)]
pub enum IndexMsg {
    /// A page to index.
    Add(Box<IndexedPage>),
    /// Writes the batch gathered so far.
    Flush,
    /// Removes pages fetched before this time (epoch ms).
    Prune(i64),
}

/// The indexer actor.
#[derive(Debug)]
pub struct Indexer;

/// State of [`Indexer`].
#[derive(Debug)]
pub struct IndexerState {
    index: Arc<SearchIndex>,
    batch: Vec<IndexedPage>,
    flush_scheduled: bool,
    waiting: Arc<AtomicUsize>,
}

impl Actor for Indexer {
    type Msg = IndexMsg;
    type State = IndexerState;
    type Arguments = (Arc<SearchIndex>, Arc<AtomicUsize>);

    async fn pre_start(
        &self,
        _: ActorRef<IndexMsg>,
        (index, waiting): Self::Arguments,
    ) -> Result<IndexerState, ActorProcessingErr> {
        Ok(IndexerState { index, batch: Vec::new(), flush_scheduled: false, waiting })
    }

    async fn post_stop(
        &self,
        _: ActorRef<IndexMsg>,
        state: &mut IndexerState,
    ) -> Result<(), ActorProcessingErr> {
        flush(state).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<IndexMsg>,
        msg: IndexMsg,
        state: &mut IndexerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            IndexMsg::Add(page) => {
                state.batch.push(*page);
                if state.batch.len() >= BATCH {
                    flush(state).await;
                } else if !state.flush_scheduled {
                    state.flush_scheduled = true;
                    myself.send_after(FLUSH_AFTER, || IndexMsg::Flush);
                }
            }
            IndexMsg::Flush => {
                state.flush_scheduled = false;
                flush(state).await;
            }
            IndexMsg::Prune(cutoff_ms) => {
                flush(state).await;
                let index = Arc::clone(&state.index);
                match tokio::task::spawn_blocking(move || index.prune(cutoff_ms)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "pruning the search index failed"),
                    Err(e) => tracing::warn!(error = %e, "pruning the search index failed"),
                }
            }
        }
        Ok(())
    }
}

/// Writes and commits the gathered batch.
async fn flush(state: &mut IndexerState) {
    if state.batch.is_empty() {
        return;
    }
    let batch = std::mem::take(&mut state.batch);
    let count = batch.len();
    let index = Arc::clone(&state.index);
    let written = tokio::task::spawn_blocking(move || index.add(&batch)).await;
    state.waiting.fetch_sub(count, Ordering::Relaxed);
    match written {
        Ok(Ok(())) => metrics::counter!("search_indexed_pages_total").increment(count as u64),
        Ok(Err(e)) => tracing::warn!(error = %e, pages = count, "pages not indexed"),
        Err(e) => tracing::warn!(error = %e, pages = count, "pages not indexed"),
    }
}

/// Where pages are offered for indexing.
#[derive(Debug, Clone)]
pub struct IndexHandle {
    actor: ActorRef<IndexMsg>,
    waiting: Arc<AtomicUsize>,
    capacity: usize,
    /// The index, for searches.
    pub index: Arc<SearchIndex>,
}

impl IndexHandle {
    /// Starts the indexer over `index`, with at most `capacity` pages waiting.
    pub async fn start(index: Arc<SearchIndex>, capacity: usize) -> Result<Self, ractor::SpawnErr> {
        let waiting = Arc::new(AtomicUsize::new(0));
        let (actor, _) = Actor::spawn(None, Indexer, (Arc::clone(&index), Arc::clone(&waiting))).await?;
        Ok(Self { actor, waiting, capacity: capacity.max(1), index })
    }

    /// Offers `page` for indexing; dropped (and counted) when the queue is full.
    pub fn offer(&self, page: IndexedPage) {
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            metrics::counter!("search_index_dropped_total").increment(1);
            return;
        }
        if self.actor.cast(IndexMsg::Add(Box::new(page))).is_err() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Removes pages fetched before `cutoff_ms`.
    pub fn prune(&self, cutoff_ms: i64) {
        let _ = self.actor.cast(IndexMsg::Prune(cutoff_ms));
    }

    /// Writes what waits now (tests, shutdown).
    pub fn flush(&self) {
        let _ = self.actor.cast(IndexMsg::Flush);
    }

    /// Pages offered and not yet written.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Stops the indexer after it wrote what it had.
    pub fn stop(&self) {
        self.actor.stop(None);
    }
}
