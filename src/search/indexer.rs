//! The actor that feeds the local index, off the pages' hot path.
//!
//! A stored page is offered through an [`IndexHandle`]: a message to the [`Indexer`], never
//! a wait. At most `search.index_queue` pages are held at once with their text, counted
//! until they are committed (tantivy's writer queues up to 10 000 handed-over documents of
//! its own before indexing them, so pages handed over still hold their text); beyond that
//! a page's cache key goes to the backlog in the store ([`super::backlog`]), and the
//! indexer builds and writes those entries (converting the cached pages again) once no
//! page with its text waits (`search_index_backlog` on `/metrics`). So a crawl never slows
//! down for the index, the memory pages wait in stays bounded however far the indexer
//! falls behind, and no page is left out: what the backlog holds at a stop or a kill, and
//! the pages held with their text that a kill left uncommitted, are indexed at the next
//! start.
//!
//! The actor gathers pages into batches and hands each to the index's writer: at most
//! [`BATCH`] pages, or what came within [`FLUSH_AFTER`] of the first. What was handed over
//! becomes searchable at the next commit, at most [`COMMIT_AFTER`] later, or at once when
//! as many pages as the queue holds are uncommitted: commits are what make segments, and
//! fewer segments mean less merging. All writing (the documents built, handed over,
//! committed) happens on a thread of its own in the idle scheduling class, like tantivy's
//! threads ([`super::index`]): indexing takes the CPU the crawl leaves.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::backlog::{Backlog, Builder, Later};
use super::index::{IndexedPage, SearchIndex};
use crate::process::priority::{self, Priority};
use crate::store::index_backlog::{IndexBacklog, Position};
use crate::store::page_cache::CacheKey;

/// Work for the writing thread.
type Job = Box<dyn FnOnce() + Send>;

/// Most pages handed to the writer together.
pub const BATCH: usize = 256;
/// Longest a page waits for its batch.
pub const FLUSH_AFTER: Duration = Duration::from_millis(200);
/// Longest a handed-over page waits to become searchable.
pub const COMMIT_AFTER: Duration = Duration::from_secs(2);

/// [`COMMIT_AFTER`], or in debug builds the milliseconds of
/// `TEST_FERROCRAWL_INDEX_COMMIT_AFTER_MS`, so that a test can kill the process between a
/// page's hand-over and its commit.
fn commit_after() -> Duration {
    static AFTER: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *AFTER.get_or_init(|| {
        let test = std::env::var("TEST_FERROCRAWL_INDEX_COMMIT_AFTER_MS").ok().and_then(|v| v.parse().ok());
        test.filter(|_| cfg!(debug_assertions)).map_or(COMMIT_AFTER, Duration::from_millis)
    })
}

/// Longest a graceful stop waits for the last commit. The writing thread runs in the idle
/// class, so on a busy machine it may get no CPU at all; what it has not committed by then
/// is indexed at the next start (the pages' notes in the store go only with the commit).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Messages of [`Indexer`].
#[derive(Debug)]
pub enum IndexMsg {
    /// A page to index, and where the store notes it is held (none for uploads).
    Add(Box<IndexedPage>, Option<Position>),
    /// A page to index when no page with its text waits, kept in memory.
    Later(Later),
    /// A page's cache key was stored in the backlog.
    Stored,
    /// Builds and writes waiting [`IndexMsg::Later`] pages, when no other page waits.
    Drain,
    /// Writes the batch gathered so far.
    Flush,
    /// Commits what was written.
    Commit,
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
    /// Where the store notes the gathered pages as held.
    held: Vec<Position>,
    flush_scheduled: bool,
    /// Pages written since the last commit (a commit is scheduled while there are).
    uncommitted: usize,
    /// Pages held with their text: offered, gathered, or written and not yet committed.
    waiting: Arc<AtomicUsize>,
    /// Most pages held with their text.
    capacity: usize,
    writer: std::sync::mpsc::Sender<Job>,
    /// Pages waiting as a way to build their entries, oldest first.
    backlog: Backlog,
    drain_scheduled: bool,
}

impl Actor for Indexer {
    type Msg = IndexMsg;
    type State = IndexerState;
    type Arguments = (Arc<SearchIndex>, Arc<AtomicUsize>, usize, Backlog);

    async fn pre_start(
        &self,
        _: ActorRef<IndexMsg>,
        (index, waiting, capacity, backlog): Self::Arguments,
    ) -> Result<IndexerState, ActorProcessingErr> {
        let writer = writing_thread()?;
        Ok(IndexerState {
            index,
            batch: Vec::new(),
            held: Vec::new(),
            flush_scheduled: false,
            uncommitted: 0,
            waiting,
            capacity,
            writer,
            backlog,
            drain_scheduled: false,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<IndexMsg>,
        state: &mut IndexerState,
    ) -> Result<(), ActorProcessingErr> {
        // What the last run left.
        if !state.backlog.is_empty() {
            tracing::info!(
                pages = state.backlog.len(),
                "indexing the pages the search index had yet to take"
            );
        }
        metrics::gauge!("search_index_backlog").set(state.backlog.len() as f64);
        schedule_drain(&myself, state);
        Ok(())
    }

    async fn post_stop(
        &self,
        _: ActorRef<IndexMsg>,
        state: &mut IndexerState,
    ) -> Result<(), ActorProcessingErr> {
        flush(state).await;
        commit(state).await;
        if state.backlog.in_memory() > 0 {
            tracing::warn!(
                pages = state.backlog.in_memory(),
                "uploaded pages left out of the search index at the stop; `ferrocrawl index rebuild` adds them"
            );
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<IndexMsg>,
        msg: IndexMsg,
        state: &mut IndexerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            IndexMsg::Add(page, held) => {
                state.batch.push(*page);
                state.held.extend(held);
                if state.batch.len() >= BATCH {
                    flush_and_schedule(&myself, state).await;
                } else if !state.flush_scheduled {
                    state.flush_scheduled = true;
                    myself.send_after(FLUSH_AFTER, || IndexMsg::Flush);
                }
            }
            IndexMsg::Flush => {
                state.flush_scheduled = false;
                flush_and_schedule(&myself, state).await;
            }
            IndexMsg::Later(page) => {
                state.backlog.push(page);
                metrics::gauge!("search_index_backlog").set(state.backlog.len() as f64);
                schedule_drain(&myself, state);
            }
            IndexMsg::Stored => {
                state.backlog.stored_one();
                metrics::gauge!("search_index_backlog").set(state.backlog.len() as f64);
                schedule_drain(&myself, state);
            }
            IndexMsg::Drain => {
                state.drain_scheduled = false;
                // Pages with their text first, and room for the built ones' texts.
                if !state.batch.is_empty() || room(state) == 0 {
                    schedule_drain(&myself, state);
                } else {
                    drain(&myself, state).await;
                }
            }
            IndexMsg::Commit => commit(state).await,
            IndexMsg::Prune(cutoff_ms) => {
                flush(state).await;
                commit(state).await;
                let index = Arc::clone(&state.index);
                if let Some(Err(e)) = on_writer(state, move || index.prune(cutoff_ms)).await {
                    tracing::warn!(error = %e, "pruning the search index failed");
                }
            }
        }
        Ok(())
    }
}

fn schedule_drain(myself: &ActorRef<IndexMsg>, state: &mut IndexerState) {
    if !state.drain_scheduled && !state.backlog.is_empty() {
        state.drain_scheduled = true;
        myself.send_after(FLUSH_AFTER, || IndexMsg::Drain);
    }
}

/// How many more pages may be held with their text.
fn room(state: &IndexerState) -> usize {
    state.capacity.saturating_sub(state.waiting.load(Ordering::Relaxed))
}

/// Builds and writes up to [`BATCH`] waiting pages on the writing thread (building an entry
/// converts the cached page again: work of the idle class, like the writing), as many as
/// there is room for among the pages held with their text, then goes on while more wait.
async fn drain(myself: &ActorRef<IndexMsg>, state: &mut IndexerState) {
    let taken = state.backlog.take(BATCH.min(room(state)));
    let (take, through) = (taken.len(), taken.through);
    state.waiting.fetch_add(take, Ordering::Relaxed);
    metrics::gauge!("search_index_backlog").set(state.backlog.len() as f64);
    let index = Arc::clone(&state.index);
    let written = on_writer(state, move || {
        let pages = taken.build();
        index.add(&pages).map(|()| pages.len())
    })
    .await;
    match written {
        Some(Ok(count)) => {
            // Entries with nothing to index hold nothing.
            state.waiting.fetch_sub(take - count, Ordering::Relaxed);
            state.backlog.written(through);
            let before = state.uncommitted;
            state.uncommitted += count;
            after_writing(myself, before, state).await;
        }
        Some(Err(e)) => {
            state.waiting.fetch_sub(take, Ordering::Relaxed);
            tracing::warn!(error = %e, pages = take, "pages not indexed");
        }
        None => {
            state.waiting.fetch_sub(take, Ordering::Relaxed);
            tracing::warn!(pages = take, "pages not indexed: the writing thread stopped");
        }
    }
    if !state.backlog.is_empty() && !state.drain_scheduled {
        state.drain_scheduled = true;
        let _ = myself.cast(IndexMsg::Drain);
    }
}

/// Hands the gathered batch to the writer, then commits or schedules a commit.
async fn flush_and_schedule(myself: &ActorRef<IndexMsg>, state: &mut IndexerState) {
    let before = state.uncommitted;
    flush(state).await;
    after_writing(myself, before, state).await;
}

/// Commits at once when as many pages as the queue holds are uncommitted (their texts are
/// held until then), else schedules a commit when pages were written and none was pending
/// (`before` written pages uncommitted before them).
async fn after_writing(myself: &ActorRef<IndexMsg>, before: usize, state: &mut IndexerState) {
    if state.uncommitted >= state.capacity {
        commit(state).await;
    } else if before == 0 && state.uncommitted > 0 {
        myself.send_after(commit_after(), || IndexMsg::Commit);
    }
}

/// Hands the gathered batch to the writer (its pages held until the commit).
async fn flush(state: &mut IndexerState) {
    if state.batch.is_empty() {
        return;
    }
    let batch = std::mem::take(&mut state.batch);
    let held = std::mem::take(&mut state.held);
    let count = batch.len();
    let index = Arc::clone(&state.index);
    let written = on_writer(state, move || index.add(&batch)).await;
    match written {
        Some(Ok(())) => {
            state.uncommitted += count;
            state.backlog.written_held(held);
            return;
        }
        Some(Err(e)) => tracing::warn!(error = %e, pages = count, "pages not indexed"),
        None => tracing::warn!(pages = count, "pages not indexed: the writing thread stopped"),
    }
    state.waiting.fetch_sub(count, Ordering::Relaxed);
}

/// Makes what was handed over searchable, and lets go of the pages' texts.
async fn commit(state: &mut IndexerState) {
    if state.uncommitted == 0 {
        return;
    }
    let count = std::mem::take(&mut state.uncommitted);
    let index = Arc::clone(&state.index);
    let committed = on_writer(state, move || index.commit()).await;
    state.waiting.fetch_sub(count, Ordering::Relaxed);
    match committed {
        Some(Ok(())) => {
            state.backlog.committed();
            metrics::counter!("search_indexed_pages_total").increment(count as u64);
        }
        Some(Err(e)) => {
            state.backlog.commit_failed();
            tracing::warn!(error = %e, pages = count, "the search index's commit failed");
        }
        None => tracing::warn!(pages = count, "the search index's commit failed: the writing thread stopped"),
    }
}

/// Starts the thread that writes to the index, in the idle scheduling class; it ends when
/// the indexer (its only sender) is gone.
fn writing_thread() -> std::io::Result<std::sync::mpsc::Sender<Job>> {
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    std::thread::Builder::new().name("ferrocrawl-index".to_owned()).spawn(move || {
        priority::lower(Priority::Idle);
        for job in queue {
            job();
        }
    })?;
    Ok(jobs)
}

/// Runs `work` on the writing thread; `None` when that thread is gone.
async fn on_writer<T: Send + 'static>(
    state: &IndexerState,
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (done, answer) = tokio::sync::oneshot::channel();
    state.writer.send(Box::new(move || drop(done.send(work())))).ok()?;
    answer.await.ok()
}

/// Where pages are offered for indexing.
#[derive(Debug, Clone)]
pub struct IndexHandle {
    actor: ActorRef<IndexMsg>,
    waiting: Arc<AtomicUsize>,
    capacity: usize,
    stored: IndexBacklog,
    /// The index, for searches.
    pub index: Arc<SearchIndex>,
}

impl IndexHandle {
    /// Starts the indexer over `index`, with at most `capacity` pages held with their text;
    /// the backlog beyond is kept in `stored`, its entries built with `build` (and what a
    /// previous run left there is indexed now).
    pub async fn start(
        index: Arc<SearchIndex>,
        capacity: usize,
        stored: IndexBacklog,
        build: Builder,
    ) -> Result<Self, ractor::SpawnErr> {
        let waiting = Arc::new(AtomicUsize::new(0));
        let capacity = capacity.max(1);
        // Pages held with their text when the last run ended: indexed from the backlog.
        match stored.requeue_held() {
            Ok(0) => {}
            Ok(pages) => {
                tracing::info!(pages, "pages held for the search index at the last stop wait in its backlog")
            }
            Err(e) => {
                tracing::warn!(error = %e, "pages held for the search index at the last stop could not be read")
            }
        }
        let backlog = Backlog::new(stored.clone(), build);
        let arguments = (Arc::clone(&index), Arc::clone(&waiting), capacity, backlog);
        let (actor, _) = Actor::spawn(None, Indexer, arguments).await?;
        Ok(Self { actor, waiting, capacity, stored, index })
    }

    /// Offers a page of the page cache for indexing: its entry built now (`now`) while
    /// fewer than the queue's capacity are held with their text, else its cache key (`key`)
    /// stored in the backlog, the entry built from it when the indexer gets to it.
    pub fn offer(&self, now: impl FnOnce() -> Option<IndexedPage>, key: impl FnOnce() -> CacheKey) {
        if !self.reserve() {
            match self.stored.push(key()) {
                Ok(()) => drop(self.actor.cast(IndexMsg::Stored)),
                Err(e) => {
                    tracing::warn!(error = %e, "a page was left out of the search index: the backlog could not store it")
                }
            }
            return;
        }
        let Some(page) = now() else {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return;
        };
        // Noted in the store until committed: a kill before leaves it for the next start.
        let held = self
            .stored
            .hold(key())
            .inspect_err(
                |e| tracing::warn!(error = %e, "a page held for the search index could not be noted"),
            )
            .ok();
        if self.actor.cast(IndexMsg::Add(Box::new(page), held)).is_err() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            if let Some(held) = held {
                let _ = self.stored.release(&[held]);
            }
        }
    }

    /// Offers an entry that cannot be built again later (an upload: not in the page cache);
    /// beyond the queue's capacity it waits as it is.
    pub fn offer_entry(&self, page: IndexedPage) {
        if !self.reserve() {
            let _ = self.actor.cast(IndexMsg::Later(Later(Box::new(move || Some(page)))));
            return;
        }
        if self.actor.cast(IndexMsg::Add(Box::new(page), None)).is_err() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Takes a place among the pages waiting with their text; `false` when none is free.
    fn reserve(&self) -> bool {
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Removes pages fetched before `cutoff_ms`.
    pub fn prune(&self, cutoff_ms: i64) {
        let _ = self.actor.cast(IndexMsg::Prune(cutoff_ms));
    }

    /// Stops the indexer once it has written and committed what it had (a server's
    /// graceful stop: the pages of its last seconds stay searchable).
    pub async fn shutdown(&self) {
        // Drained: the pages offered before the stop are written too (post_stop commits).
        let stopped = self.actor.drain_and_wait(Some(SHUTDOWN_WAIT)).await;
        if let Err(e) = stopped {
            tracing::warn!(
                error = %e,
                "the search index did not commit in time: its last pages are indexed at the next start (uploaded documents: `ferrocrawl index rebuild`)"
            );
        }
    }
}
