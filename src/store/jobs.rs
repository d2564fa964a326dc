//! Durable crawl and batch jobs. Everything a job needs to resume after a crash lives here:
//! its record, counters, the queue of URLs not yet done, the seen-set, results, errors and
//! robots-blocked URLs. Completing a page is one transaction (result stored, queue entry
//! removed, counters bumped, discovered links enqueued), so after a `kill -9` every
//! reachable page ends up in the results exactly once. Keys start with the job id, so each
//! job is a contiguous range in every tree; memory use does not grow with the job.

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError, TransactionalTree};

use super::codec::{CodecError, Record};
use super::outbox::{NewEvent, Outbox, push_tx};
use super::quarantine::Quarantine;
use super::{Result, StoreError, codec, legacy};
use crate::model::{CrawlOptions, JobId, JobStatus};

/// Tree names of the job store.
pub mod trees {
    /// Job id → [`super::JobRecord`].
    pub const JOBS: &str = "jobs";
    /// Job id → [`super::Counters`].
    pub const COUNTERS: &str = "job_counters";
    /// Job id + sequence → [`super::QueueEntry`] (work not yet done).
    pub const QUEUE: &str = "job_queue";
    /// Job id + URL-key digest → () (every URL ever enqueued).
    pub const SEEN: &str = "job_seen";
    /// Job id + result index → document JSON.
    pub const PAGES: &str = "job_pages";
    /// Job id + error index → [`super::ErrorEntry`].
    pub const ERRORS: &str = "job_errors";
    /// Job id + index → URL refused by robots.txt.
    pub const BLOCKED: &str = "job_blocked";
}

pub use crate::model::JobKind;

/// What a job is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Crawl or batch.
    pub kind: JobKind,
    /// Owner.
    pub team: String,
    /// The start URL (crawl) or first URL (batch).
    pub url: String,
    /// Options, stored as JSON so that they may grow (see `codec`).
    #[serde(with = "codec::json")]
    pub options: CrawlOptions,
    /// Lifecycle.
    pub status: JobStatus,
    /// Creation (epoch ms).
    pub created_ms: u64,
    /// When it is deleted (epoch ms).
    pub expires_ms: u64,
    /// When it became terminal.
    pub finished_ms: Option<u64>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

impl Record for JobRecord {
    /// Version 2 keeps the options as JSON; version 1 held them as positional postcard.
    const VERSION: u8 = 2;

    fn upgrade(version: u8, payload: &[u8]) -> std::result::Result<Self, CodecError> {
        match version {
            1 => {
                let old: legacy::v1::JobRecord = postcard::from_bytes(payload)?;
                Ok(JobRecord {
                    kind: legacy::convert(&old.kind)?,
                    team: old.team,
                    url: old.url,
                    options: legacy::convert(&old.options)?,
                    status: legacy::convert(&old.status)?,
                    created_ms: old.created_ms,
                    expires_ms: old.expires_ms,
                    finished_ms: old.finished_ms,
                    error: old.error,
                })
            }
            found => Err(CodecError::UnknownVersion { found, current: Self::VERSION }),
        }
    }
}

/// Progress counts of a job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Next queue sequence number.
    pub next_seq: u64,
    /// Unique URLs enqueued (what `limit` counts).
    pub enqueued: u64,
    /// Pages stored.
    pub completed: u64,
    /// Pages that failed.
    pub failed: u64,
    /// URLs refused by robots.txt.
    pub blocked: u64,
    /// Credits billed.
    pub credits: u64,
}

impl Counters {
    /// URLs still queued or in flight.
    pub fn pending(&self) -> u64 {
        self.enqueued.saturating_sub(self.completed + self.failed + self.blocked)
    }
}

/// A URL waiting to be fetched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEntry {
    /// The URL.
    pub url: String,
    /// Link hops from the start page (sitemap URLs are 0).
    pub depth: u32,
}

/// A URL to add, with its identity for the seen-set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntry {
    /// Dedup key (see `crawl::keys`).
    pub key: String,
    /// The entry.
    pub entry: QueueEntry,
}

/// URLs to queue, produced as they are written: a batch's come straight from its request
/// body, so that up to 100 000 of them are never all held as values at once.
pub trait EntrySource: std::fmt::Debug + Send + 'static {
    /// The entries, in order.
    fn entries(&self) -> Box<dyn Iterator<Item = NewEntry> + '_>;

    /// About how many entries there are.
    fn count(&self) -> usize;
}

impl EntrySource for Vec<NewEntry> {
    fn entries(&self) -> Box<dyn Iterator<Item = NewEntry> + '_> {
        Box::new(self.iter().cloned())
    }

    fn count(&self) -> usize {
        self.len()
    }
}

/// A failed page as `/errors` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEntry {
    /// Id of the failed page's scrape.
    pub id: String,
    /// When it failed (epoch ms).
    pub at_ms: u64,
    /// The URL.
    pub url: String,
    /// Error code.
    pub code: String,
    /// Message.
    pub error: String,
}

/// How a queued URL ended.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    /// Done: the document JSON and its credits.
    Page {
        /// Document JSON, in the buffer the store keeps (inserted without a copy); `None`
        /// when the page went to a tap and is not kept.
        document: Option<&'a sled::IVec>,
        /// Credits billed.
        credits: u64,
    },
    /// Failed.
    Failed(&'a ErrorEntry),
    /// Refused by robots.txt.
    Blocked(&'a str),
}

/// A queue entry's end: its outcome and the links it revealed (a start page that fails the
/// include/exclude patterns is an error but its links are still followed).
#[derive(Debug, Clone, Copy)]
pub struct Settlement<'a> {
    /// What happened.
    pub outcome: Outcome<'a>,
    /// Links to enqueue.
    pub links: &'a [NewEntry],
    /// For a page that redirected: the seen-set key of the URL it landed on. A page whose
    /// landing URL the job already has (linked directly, or landed on before) is a
    /// duplicate and is not kept; otherwise the landing URL is claimed, so a link to it is
    /// not followed later. Claim and check happen in the transaction that settles the page,
    /// so the rule holds across restarts.
    pub lands_on: Option<&'a str>,
    /// The page's webhook event, queued only if the page is kept.
    pub event: Option<&'a NewEvent>,
}

impl<'a> Settlement<'a> {
    /// A settlement with no redirect claim and no event.
    pub fn new(outcome: Outcome<'a>, links: &'a [NewEntry]) -> Self {
        Self { outcome, links, lands_on: None, event: None }
    }
}

/// What settling one queue entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// The entry was settled before (a repeated completion after a restart): nothing changed.
    Repeated,
    /// Settled now; the entries its links added.
    Done(Queued),
    /// A page that landed on a URL the job already has: dropped, not counted and not
    /// billed (its links were still followed).
    Duplicate(Queued),
}

impl Settled {
    /// The entries the settlement added, if it happened now.
    pub fn added(&self) -> Option<&Queued> {
        match self {
            Self::Repeated => None,
            Self::Done(q) | Self::Duplicate(q) => Some(q),
        }
    }
}

/// Entries added to the queue, with their sequence numbers.
pub type Queued = Vec<(u64, QueueEntry)>;

codec::records!(Counters => 1, QueueEntry => 1, ErrorEntry => 1);

/// Typed access to the job trees.
#[derive(Debug, Clone)]
pub struct JobStore {
    outbox: Outbox,
    q: Quarantine,
    jobs: sled::Tree,
    counters: sled::Tree,
    queue: sled::Tree,
    seen: sled::Tree,
    pages: sled::Tree,
    errors: sled::Tree,
    blocked: sled::Tree,
}

fn key(id: JobId, n: u64) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..16].copy_from_slice(id.as_bytes());
    k[16..].copy_from_slice(&n.to_be_bytes());
    k
}

fn seen_key(id: JobId, url_key: &str) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[..16].copy_from_slice(id.as_bytes());
    k[16..].copy_from_slice(&codec::digest(&[url_key.as_bytes()])[..16]);
    k
}

fn suffix(k: &[u8]) -> u64 {
    let mut n = [0u8; 8];
    if let Some(tail) = k.get(16..24) {
        n.copy_from_slice(tail);
    }
    u64::from_be_bytes(n)
}

/// Most URLs [`JobStore::create`] writes in one transaction.
pub const CREATE_CHUNK: usize = 500;

/// An iterator of entries taken [`CREATE_CHUNK`] at a time.
struct Chunks<I: Iterator<Item = NewEntry>> {
    entries: std::iter::Peekable<I>,
}

impl<I: Iterator<Item = NewEntry>> Chunks<I> {
    fn new(entries: I) -> Self {
        Self { entries: entries.peekable() }
    }

    /// The next entries (empty at the end).
    fn next_chunk(&mut self) -> Vec<NewEntry> {
        self.entries.by_ref().take(CREATE_CHUNK).collect()
    }

    /// Whether entries are left after the last chunk.
    fn more(&mut self) -> bool {
        self.entries.peek().is_some()
    }
}

type TxResult<T> = std::result::Result<T, ConflictableTransactionError<StoreError>>;

fn abort<E: Into<StoreError>>(e: E) -> ConflictableTransactionError<StoreError> {
    ConflictableTransactionError::Abort(e.into())
}

fn unwrap_tx<T>(r: std::result::Result<T, TransactionError<StoreError>>) -> Result<T> {
    r.map_err(|e| match e {
        TransactionError::Abort(e) => e,
        TransactionError::Storage(e) => StoreError::Db(e),
    })
}

/// Adds the entries not seen before, within `limit`; returns what was queued.
fn enqueue_tx(
    id: JobId,
    counters: &mut Counters,
    limit: u64,
    entries: &[NewEntry],
    seen: &TransactionalTree,
    queue: &TransactionalTree,
) -> TxResult<Vec<(u64, QueueEntry)>> {
    let mut added = Vec::new();
    for new in entries {
        if counters.enqueued >= limit {
            break;
        }
        let sk = seen_key(id, &new.key);
        if seen.get(sk)?.is_some() {
            continue;
        }
        seen.insert(&sk[..], &[][..])?;
        let seq = counters.next_seq;
        counters.next_seq += 1;
        counters.enqueued += 1;
        queue.insert(&key(id, seq)[..], codec::encode(&new.entry).map_err(abort)?)?;
        added.push((seq, new.entry.clone()));
    }
    Ok(added)
}

impl JobStore {
    /// Opens the job trees of `db`.
    pub fn open(db: &sled::Db, q: Quarantine) -> Result<Self> {
        let store = Self {
            outbox: Outbox::open(db, q.clone())?,
            q,
            jobs: db.open_tree(trees::JOBS)?,
            counters: db.open_tree(trees::COUNTERS)?,
            queue: db.open_tree(trees::QUEUE)?,
            seen: db.open_tree(trees::SEEN)?,
            pages: db.open_tree(trees::PAGES)?,
            errors: db.open_tree(trees::ERRORS)?,
            blocked: db.open_tree(trees::BLOCKED)?,
        };
        let unborn = store.sweep_unborn()?;
        if unborn > 0 {
            tracing::warn!(
                entries = unborn,
                "removed the queued URLs of jobs whose creation a crash interrupted"
            );
        }
        Ok(store)
    }

    /// The outbox of this store's database (job events are written with job changes).
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// Creates a job with its first URLs and its `started` event; returns how many URLs were
    /// queued (duplicates and those past the limit are not). The job exists from the moment
    /// its record is written, in one step with the last of its URLs, its counters and its
    /// event; the URLs before those are written first, [`CREATE_CHUNK`] to a step. sled keeps
    /// every page version a transaction replaces until the transaction ends, so one step over
    /// a batch of 100 000 URLs would hold close to a gigabyte; steps of a few thousand hold a
    /// few megabytes. A crash between the steps leaves queue entries of a job that never
    /// existed (and was never acknowledged): [`JobStore::open`] removes them.
    pub fn create(
        &self,
        id: JobId,
        record: &JobRecord,
        first: impl IntoIterator<Item = NewEntry>,
        started: Option<&NewEvent>,
    ) -> Result<usize> {
        let record_bytes = codec::encode(record)?;
        let limit = record.options.limit;
        let mut c = Counters::default();
        let mut chunks = Chunks::new(first.into_iter());
        loop {
            let chunk = chunks.next_chunk();
            if chunks.more() {
                c = unwrap_tx((&self.seen, &self.queue).transaction(|(seen, queue)| {
                    let mut n = c;
                    enqueue_tx(id, &mut n, limit, &chunk, seen, queue)?;
                    Ok(n)
                }))?;
                continue;
            }
            let trees = (
                &self.jobs,
                &self.counters,
                &self.seen,
                &self.queue,
                &self.outbox.state,
                &self.outbox.bodies,
            );
            c = unwrap_tx(trees.transaction(|(jobs, counters, seen, queue, ob_state, ob_bodies)| {
                let mut n = c;
                enqueue_tx(id, &mut n, limit, &chunk, seen, queue)?;
                jobs.insert(&id.as_bytes()[..], record_bytes.clone())?;
                counters.insert(&id.as_bytes()[..], codec::encode(&n).map_err(abort)?)?;
                if let Some(event) = started {
                    push_tx(ob_state, ob_bodies, event)?;
                }
                Ok(n)
            }))?;
            return Ok(c.enqueued as usize);
        }
    }

    /// Removes the queue and seen entries of jobs that have no record: what a crash left of a
    /// [`JobStore::create`] that had not finished. Only safe while no job is being created.
    fn sweep_unborn(&self) -> Result<usize> {
        let mut removed = 0;
        for tree in [&self.queue, &self.seen] {
            // One look-up per job: jump from each job's first key to the next job's.
            let mut from = 0u128;
            while let Some(item) = tree.range(from.to_be_bytes()..).next() {
                let (k, _) = item?;
                let Some(prefix) = k.get(..16) else { break };
                let mut id = [0u8; 16];
                id.copy_from_slice(prefix);
                if !self.jobs.contains_key(id)? {
                    for k in tree.scan_prefix(id).keys() {
                        tree.remove(k?)?;
                        removed += 1;
                    }
                }
                match u128::from_be_bytes(id).checked_add(1) {
                    Some(next) => from = next,
                    None => break,
                }
            }
        }
        Ok(removed)
    }

    /// Ends a job: status (and error) set and its event queued in one step. A job already
    /// ended keeps its first ending, and no second event is queued. Returns the record.
    pub fn finish(
        &self,
        id: JobId,
        status: JobStatus,
        at_ms: u64,
        error: Option<&str>,
        event: Option<&NewEvent>,
    ) -> Result<Option<JobRecord>> {
        let trees = (&self.jobs, &self.outbox.state, &self.outbox.bodies);
        unwrap_tx(trees.transaction(|(jobs, ob_state, ob_bodies)| {
            let Some(bytes) = jobs.get(id.as_bytes())? else { return Ok(None) };
            let mut record: JobRecord = codec::decode(&bytes).map_err(abort)?;
            if record.status.is_terminal() {
                return Ok(Some(record));
            }
            record.status = status;
            record.finished_ms = Some(at_ms);
            record.error = error.map(str::to_owned);
            jobs.insert(&id.as_bytes()[..], codec::encode(&record).map_err(abort)?)?;
            if let Some(event) = event {
                push_tx(ob_state, ob_bodies, event)?;
            }
            Ok(Some(record))
        }))
    }

    /// Makes everything written so far durable (an acknowledged job must survive a crash);
    /// see [`super::flush_off_worker`].
    pub async fn flush(&self) -> Result<()> {
        super::flush_off_worker(&self.jobs).await
    }

    /// The job's record.
    pub fn record(&self, id: JobId) -> Result<Option<JobRecord>> {
        self.q.get(&self.jobs, id.as_bytes())
    }

    /// The job's counters.
    pub fn counters(&self, id: JobId) -> Result<Counters> {
        Ok(self.q.get(&self.counters, id.as_bytes())?.unwrap_or_default())
    }

    /// Up to `max` queued entries with sequence ≥ `from`, in order.
    pub fn queued(&self, id: JobId, from: u64, max: usize) -> Result<Vec<(u64, QueueEntry)>> {
        let mut out = Vec::new();
        for item in self.queue.range(key(id, from)..key(id, u64::MAX)).take(max) {
            let (k, v) = item?;
            if let Some(entry) = self.q.read(&self.queue, &k, &v)? {
                out.push((suffix(&k), entry));
            }
        }
        Ok(out)
    }

    /// Whether any entry is queued.
    pub fn has_queued(&self, id: JobId) -> Result<bool> {
        Ok(self.queue.range(key(id, 0)..key(id, u64::MAX)).next().transpose()?.is_some())
    }

    /// Adds URLs to a batch, raising its limit by their number and reopening it if it had
    /// finished, in steps of [`CREATE_CHUNK`] URLs; each step does all three at once, so a job
    /// can never end with work queued. Returns how many URLs were queued.
    pub fn append(&self, id: JobId, entries: impl IntoIterator<Item = NewEntry>) -> Result<usize> {
        let mut added = 0;
        let mut chunks = Chunks::new(entries.into_iter());
        loop {
            let chunk = chunks.next_chunk();
            if chunk.is_empty() {
                return Ok(added);
            }
            added += unwrap_tx((&self.jobs, &self.counters, &self.seen, &self.queue).transaction(
                |(jobs, counters, seen, queue)| {
                    let mut record: JobRecord = match jobs.get(id.as_bytes())? {
                        Some(b) => codec::decode(&b).map_err(abort)?,
                        None => return Ok(0),
                    };
                    let mut c: Counters = match counters.get(id.as_bytes())? {
                        Some(b) => codec::decode(&b).map_err(abort)?,
                        None => return Ok(0),
                    };
                    record.options.limit = record.options.limit.saturating_add(chunk.len() as u64);
                    let queued = enqueue_tx(id, &mut c, record.options.limit, &chunk, seen, queue)?;
                    if !queued.is_empty() {
                        record.status = JobStatus::Scraping;
                        record.finished_ms = None;
                    }
                    jobs.insert(&id.as_bytes()[..], codec::encode(&record).map_err(abort)?)?;
                    counters.insert(&id.as_bytes()[..], codec::encode(&c).map_err(abort)?)?;
                    Ok(queued.len())
                },
            ))?;
        }
    }

    /// Adds URLs (sitemap discoveries) outside a page completion.
    pub fn enqueue(&self, id: JobId, limit: u64, entries: &[NewEntry]) -> Result<Vec<(u64, QueueEntry)>> {
        unwrap_tx((&self.counters, &self.seen, &self.queue).transaction(|(counters, seen, queue)| {
            let mut c: Counters = match counters.get(id.as_bytes())? {
                Some(b) => codec::decode(&b).map_err(abort)?,
                None => return Ok(Vec::new()),
            };
            let added = enqueue_tx(id, &mut c, limit, entries, seen, queue)?;
            counters.insert(&id.as_bytes()[..], codec::encode(&c).map_err(abort)?)?;
            Ok(added)
        }))
    }

    /// Settles queue entry `seq` (a duplicate completion after a restart is ignored).
    pub fn settle(&self, id: JobId, seq: u64, limit: u64, settlement: Settlement<'_>) -> Result<Settled> {
        Ok(self.settle_batch(id, limit, &[(seq, settlement)])?.pop().unwrap_or(Settled::Repeated))
    }

    /// Settles several queue entries in one transaction (group commit: every sled
    /// transaction costs synchronous log writes, so finished pages are committed together).
    /// Returns, per entry, what [`Self::settle`] returns.
    pub fn settle_batch(
        &self,
        id: JobId,
        limit: u64,
        batch: &[(u64, Settlement<'_>)],
    ) -> Result<Vec<Settled>> {
        let trees = (
            &self.counters,
            &self.queue,
            &self.seen,
            &self.pages,
            &self.errors,
            &self.blocked,
            &self.outbox.state,
            &self.outbox.bodies,
        );
        unwrap_tx(trees.transaction(
            |(counters, queue, seen, pages, errors, blocked, ob_state, ob_bodies)| {
                let mut c: Counters = match counters.get(id.as_bytes())? {
                    Some(b) => codec::decode(&b).map_err(abort)?,
                    None => return Ok(vec![Settled::Repeated; batch.len()]),
                };
                let mut results = Vec::with_capacity(batch.len());
                for (seq, settlement) in batch {
                    if queue.remove(&key(id, *seq)[..])?.is_none() {
                        results.push(Settled::Repeated);
                        continue;
                    }
                    let mut duplicate = false;
                    match settlement.outcome {
                        Outcome::Page { document, credits } => {
                            if let Some(landed) = settlement.lands_on {
                                let sk = seen_key(id, landed);
                                duplicate = seen.insert(&sk[..], &[][..])?.is_some();
                            }
                            if duplicate {
                                // Not a page of its own: it no longer counts against the limit.
                                c.enqueued = c.enqueued.saturating_sub(1);
                            } else {
                                if let Some(document) = document {
                                    pages.insert(&key(id, c.completed)[..], document.clone())?;
                                }
                                c.completed += 1;
                                c.credits += credits;
                            }
                        }
                        Outcome::Failed(entry) => {
                            errors.insert(&key(id, c.failed)[..], codec::encode(entry).map_err(abort)?)?;
                            c.failed += 1;
                        }
                        Outcome::Blocked(url) => {
                            blocked.insert(&key(id, c.blocked)[..], url.as_bytes())?;
                            c.blocked += 1;
                        }
                    }
                    if let Some(event) = settlement.event.filter(|_| !duplicate) {
                        push_tx(ob_state, ob_bodies, event)?;
                    }
                    let added = enqueue_tx(id, &mut c, limit, settlement.links, seen, queue)?;
                    results.push(if duplicate { Settled::Duplicate(added) } else { Settled::Done(added) });
                }
                counters.insert(&id.as_bytes()[..], codec::encode(&c).map_err(abort)?)?;
                Ok(results)
            },
        ))
    }

    /// Result documents from index `skip`: at most `max_items`, and stopping once
    /// `max_bytes` is exceeded (always at least one).
    pub fn pages(&self, id: JobId, skip: u64, max_items: usize, max_bytes: usize) -> Result<Vec<sled::IVec>> {
        let mut out = Vec::new();
        let mut bytes = 0;
        for item in self.pages.range(key(id, skip)..key(id, u64::MAX)).take(max_items) {
            let (_, v) = item?;
            bytes += v.len();
            out.push(v);
            if bytes >= max_bytes {
                break;
            }
        }
        Ok(out)
    }

    /// Failed pages and robots-blocked URLs.
    pub fn errors(&self, id: JobId) -> Result<(Vec<ErrorEntry>, Vec<String>)> {
        let mut errors = Vec::new();
        for item in self.errors.range(key(id, 0)..key(id, u64::MAX)) {
            let (k, v) = item?;
            errors.extend(self.q.read(&self.errors, &k, &v)?);
        }
        let mut blocked = Vec::new();
        for item in self.blocked.range(key(id, 0)..key(id, u64::MAX)) {
            blocked.push(String::from_utf8_lossy(&item?.1).into_owned());
        }
        Ok((errors, blocked))
    }

    /// Every job, oldest first (small records; the results are elsewhere). A record that
    /// does not decode is quarantined and left out: it fails its own job only.
    pub fn all(&self) -> Result<Vec<(JobId, JobRecord)>> {
        let mut out = Vec::new();
        for item in self.jobs.iter() {
            let (k, v) = item?;
            let Some(id) = JobId::from_bytes(&k) else {
                continue;
            };
            if let Some(record) = self.q.read(&self.jobs, &k, &v)? {
                out.push((id, record));
            }
        }
        Ok(out)
    }

    /// Deletes every trace of a job.
    pub fn delete(&self, id: JobId) -> Result<()> {
        for tree in [&self.queue, &self.pages, &self.errors, &self.blocked] {
            for k in tree.range(key(id, 0)..key(id, u64::MAX)).keys() {
                tree.remove(k?)?;
            }
        }
        let mut lo = [0u8; 32];
        lo[..16].copy_from_slice(id.as_bytes());
        let mut hi = [0xffu8; 32];
        hi[..16].copy_from_slice(id.as_bytes());
        for k in self.seen.range(lo..=hi).keys() {
            self.seen.remove(k?)?;
        }
        self.counters.remove(id.as_bytes())?;
        self.jobs.remove(id.as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
