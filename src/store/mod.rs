//! Persistence: the only module that touches sled. One database per node under the data
//! directory; each record family has its own tree (names in [`trees`]) and a typed,
//! synchronous API. Keys are big-endian so they sort.
//!
//! Upgrades lose nothing: **a release opens the data directory of every earlier release**
//! (`CHANGELOG.md` lists each release's stored format; each has a frozen fixture that the
//! upgrade tests open). Every typed record carries a version tag and this build decodes
//! every version a release wrote (`codec` says how to add a field without breaking a data
//! directory); the layout itself is versioned and upgraded in place, crash-safe
//! (`migrate`); caches are dropped on a change of their format and made again; a record
//! that still does not decode is moved to quarantine ([`quarantine`]), never deleted, and
//! fails only what it belonged to.
//! Point reads and writes are fast enough to call from async code; scans over many
//! records belong in `spawn_blocking`.

pub mod activity;
pub mod browser_sessions;
pub mod check;
mod codec;
pub mod files;
pub mod history;
pub mod idempotency;
pub mod index_backlog;
pub mod jobs;
pub mod keys;
pub mod ledger;
mod legacy;
pub mod llm_jobs;
pub mod members;
mod migrate;
pub mod outbox;
pub mod page_cache;
pub mod profiles;
pub mod quarantine;
pub mod replays;
pub mod reports;
pub mod scrapes;
mod secrets;
pub mod space;
pub mod teams;
pub mod tokens;

use std::path::Path;

pub use activity::ActivityLog;
pub use history::{Baseline, HistoryStore};
pub use idempotency::IdempotencyStore;
pub use jobs::JobStore;
pub use keys::{KeyStore, NewKey};
pub use ledger::Ledger;
pub use outbox::Outbox;
pub use page_cache::{CacheKey, CachedPage, PageCache};
pub use scrapes::{ScrapeRecord, ScrapeStore};
pub use teams::TeamStore;

/// Names of the sled trees, in one place.
pub mod trees {
    /// Store-wide facts such as the schema version.
    pub const META: &str = "meta";
    /// API key hash → key record.
    pub const API_KEYS: &str = "api_keys";
    /// Scrape id → stored result.
    pub const SCRAPES: &str = "scrapes";
    /// Cache key → fetched page.
    pub const PAGE_CACHE: &str = "page_cache";
    /// (cache key, part number) → a part of a large cached body.
    pub const PAGE_BODIES: &str = "page_bodies";
    /// (team, URL, tag) → last Markdown, for change tracking.
    pub const CHANGE_HISTORY: &str = "change_history";
    /// (team, URL, tag) → what change tracking's json mode extracted last (JSON).
    pub const CHANGE_EXTRACTED: &str = "change_extracted";
    /// (team, key) → job id.
    pub const IDEMPOTENCY: &str = "idempotency";
    /// Team name → team record.
    pub const TEAMS: &str = "teams";
    /// (team, month) → credits used.
    pub const LEDGER: &str = "credit_ledger";
    /// (team, month, key label) → language-model tokens used.
    pub const TOKENS: &str = "token_ledger";
    /// (ledger, team, month, node) → that node's total as it reported it to this node, the
    /// team's owner.
    pub const REPORTS: &str = "team_reports";
    /// Extract or agent job id → its request, state and result.
    pub const LLM_JOBS: &str = "model_jobs";
    /// (team, time, id) → activity record.
    pub const ACTIVITY: &str = "activity";
    /// File id → screenshot or PDF.
    pub const FILES: &str = "files";
    /// (team, name) → saved browser profile.
    pub const PROFILES: &str = "browser_profiles";
    /// Scrape id → URL and options, for interact sessions.
    pub const REPLAYS: &str = "scrape_replays";
    /// Browser session id → owner, times and cost.
    pub const BROWSER_SESSIONS: &str = "browser_sessions";
    /// (tree, key) → a record that did not decode, with the error.
    pub const QUARANTINE: &str = "quarantine";
    /// Sequence number → cache key of a page the search index has yet to take.
    pub const INDEX_BACKLOG: &str = "index_backlog";
    /// Sequence number → cache key of a page the indexer holds with its text, until its commit.
    pub const INDEX_HELD: &str = "index_held";
}

/// sled segment size: 8 MiB keeps the blob threshold (a quarter of it) above any node.
pub const SEGMENT_BYTES: usize = 8 << 20;
/// sled's page cache when the configuration does not say (`storage.cache_mb`).
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

/// Version of the on-disk layout this build writes (see `migrate`).
pub const SCHEMA_VERSION: u32 = 2;

/// A failure of the storage layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// sled reported an I/O or corruption problem.
    #[error("database error: {0}")]
    Db(#[from] sled::Error),
    /// A value could not be encoded or decoded.
    #[error("record encoding error: {0}")]
    Codec(#[from] codec::CodecError),
    /// A JSON payload inside a record is damaged.
    #[error("stored JSON is damaged: {0}")]
    Json(#[from] serde_json::Error),
    /// The database was written by a newer build.
    #[error("data directory has schema version {found}; this build understands up to {SCHEMA_VERSION}")]
    FutureSchema {
        /// Version found on disk.
        found: u32,
    },
    /// The data directory is already open in another process.
    #[error("the data directory is in use by another ferrocrawl process (stop it first): {0}")]
    Locked(String),
    /// The data directory's disk is below its free-space floor (`space`).
    #[error(
        "the data directory's disk has {} MiB free, below storage.min_free_mb ({} MiB): \
         nothing new is stored until space is freed",
        free / (1 << 20),
        min_free / (1 << 20)
    )]
    Full {
        /// Bytes free.
        free: u64,
        /// The floor, bytes.
        min_free: u64,
    },
}

impl crate::model::ErrorCode for StoreError {
    fn code(&self) -> crate::model::Code {
        match self {
            Self::Locked(_) => crate::model::Code::Unavailable,
            Self::Full { .. } => crate::model::Code::StorageUnavailable,
            Self::Db(db) if space::is_disk_full(db) => crate::model::Code::StorageUnavailable,
            _ => crate::model::Code::Unknown,
        }
    }
}

/// Result of storage operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The opened database and its typed views.
#[derive(Debug, Clone)]
pub struct Store {
    db: sled::Db,
    /// API keys.
    pub keys: KeyStore,
    /// Stored scrape results.
    pub scrapes: ScrapeStore,
    /// Fetched pages reused by later scrapes.
    pub cache: PageCache,
    /// Markdown baselines for change tracking.
    pub history: HistoryStore,
    /// Crawl and batch jobs.
    pub jobs: JobStore,
    /// Claimed idempotency keys.
    pub idempotency: IdempotencyStore,
    /// Webhook events waiting for delivery.
    pub outbox: Outbox,
    /// Team records.
    pub teams: TeamStore,
    /// Credits used.
    pub ledger: Ledger,
    /// Language-model tokens used.
    pub tokens: tokens::TokenLedger,
    /// Other nodes' totals, as reported to this node as a team's owner.
    pub reports: reports::ReportStore,
    /// Extract and agent jobs.
    pub llm_jobs: llm_jobs::LlmJobStore,
    /// What teams started, for a day.
    pub activity: ActivityLog,
    /// Screenshots and PDFs.
    pub files: files::FileStore,
    /// Saved browser profiles.
    pub profiles: profiles::ProfileStore,
    /// Replay contexts of scrapes.
    pub replays: replays::ReplayStore,
    /// Browser sessions, live and destroyed.
    pub browser_sessions: browser_sessions::SessionStore,
    /// Pages the search index has yet to take.
    pub index_backlog: index_backlog::IndexBacklog,
    /// Records that did not decode.
    pub quarantine: quarantine::Quarantine,
    /// Free space on the disk, against `storage.min_free_mb`.
    pub space: space::Space,
    meta: sled::Tree,
}

/// Attempts to open a database whose lock is taken (about 4.5 s in all).
const LOCK_ATTEMPTS: u64 = 9;

/// Whether opening failed because the database file is locked.
fn is_lock_error(io: &std::io::Error) -> bool {
    io.kind() == std::io::ErrorKind::WouldBlock || io.to_string().contains("could not acquire lock")
}

/// Opens the database `config` describes. A lock conflict is usually another process
/// holding the directory, but can also be brief: a child this process is forking at that
/// moment holds a copy of the file until it executes, and a handle of this process just
/// dropped releases it once sled's writer threads finish. Tries for a while before calling
/// it taken.
pub(super) fn open_db(config: &sled::Config) -> Result<sled::Db> {
    let mut attempt = 0;
    loop {
        match config.open() {
            Ok(db) => return Ok(db),
            Err(sled::Error::Io(io)) if is_lock_error(&io) && attempt < LOCK_ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(100 * attempt));
            }
            Err(sled::Error::Io(io)) if is_lock_error(&io) => return Err(StoreError::Locked(io.to_string())),
            Err(other) => return Err(StoreError::Db(other)),
        }
    }
}

impl Store {
    /// Opens (creating if needed) the database under `data_dir/db`.
    pub fn open(data_dir: &Path) -> Result<Self> {
        Self::open_at(data_dir, DEFAULT_CACHE_BYTES, false, 0)
    }

    /// Opens the store the `[storage]` settings describe, with `cache_mb` of sled page
    /// cache: what stays in memory however large the database grows. A scratch store lives
    /// only as long as this process uses it: it is written like any other but never synced
    /// to disk (there is nothing to recover it for), and sled deletes it when the last
    /// handle drops.
    pub fn open_with(storage: &crate::config::StorageSettings) -> Result<Self> {
        let min_free = if storage.scratch { 0 } else { storage.min_free_bytes() };
        Self::open_at(&storage.data_dir, storage.cache_bytes(), storage.scratch, min_free)
    }

    fn open_at(data_dir: &Path, cache_bytes: u64, scratch: bool, min_free: u64) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(sled::Error::Io)?;
        let config = sled::Config::new()
            .path(data_dir.join("db"))
            .temporary(scratch)
            .flush_every_ms(Some(500))
            // Nodes holding many result documents would otherwise exceed the default blob
            // threshold (a quarter segment) and be written as one file each.
            .segment_size(SEGMENT_BYTES)
            .cache_capacity(cache_bytes);
        let db = open_db(&config)?;
        migrate::run(&db)?;
        let q = quarantine::Quarantine::new(db.open_tree(trees::QUARANTINE)?);
        Ok(Self {
            keys: KeyStore::new(db.open_tree(trees::API_KEYS)?, q.clone()),
            scrapes: ScrapeStore::new(db.open_tree(trees::SCRAPES)?, q.clone()),
            cache: PageCache::new(
                db.open_tree(trees::PAGE_CACHE)?,
                db.open_tree(trees::PAGE_BODIES)?,
                q.clone(),
            ),
            history: HistoryStore::new(
                db.open_tree(trees::CHANGE_HISTORY)?,
                db.open_tree(trees::CHANGE_EXTRACTED)?,
                q.clone(),
            ),
            jobs: JobStore::open(&db, q.clone())?,
            idempotency: IdempotencyStore::new(db.open_tree(trees::IDEMPOTENCY)?),
            outbox: Outbox::open(&db, q.clone())?,
            teams: TeamStore::new(db.open_tree(trees::TEAMS)?, q.clone()),
            ledger: Ledger::new(db.open_tree(trees::LEDGER)?, q.clone()),
            tokens: tokens::TokenLedger::new(db.open_tree(trees::TOKENS)?, q.clone()),
            reports: reports::ReportStore::new(db.open_tree(trees::REPORTS)?, q.clone()),
            llm_jobs: llm_jobs::LlmJobStore::new(db.open_tree(trees::LLM_JOBS)?, q.clone()),
            activity: ActivityLog::new(db.open_tree(trees::ACTIVITY)?, q.clone()),
            files: files::FileStore::new(db.open_tree(trees::FILES)?, q.clone()),
            profiles: profiles::ProfileStore::new(db.open_tree(trees::PROFILES)?, q.clone()),
            replays: replays::ReplayStore::new(db.open_tree(trees::REPLAYS)?, q.clone()),
            browser_sessions: browser_sessions::SessionStore::new(
                db.open_tree(trees::BROWSER_SESSIONS)?,
                q.clone(),
            ),
            index_backlog: index_backlog::IndexBacklog::new(
                db.clone(),
                db.open_tree(trees::INDEX_BACKLOG)?,
                db.open_tree(trees::INDEX_HELD)?,
            ),
            quarantine: q,
            space: space::Space::new(data_dir.to_path_buf(), min_free),
            meta: db.open_tree(trees::META)?,
            db,
        })
    }

    /// The server's own secret called `name` (32 random bytes made on first use and kept
    /// in the data directory), e.g. the key that signs file links.
    pub fn secret(&self, name: &str) -> Result<[u8; 32]> {
        secrets::get_or_create(&self.meta, name)
    }

    /// The cluster members an operator forgot, kept across restarts.
    pub fn forgotten_members(&self) -> members::ForgottenMembers {
        members::ForgottenMembers::new(self.meta.clone())
    }

    /// Writes everything to disk; called on shutdown.
    pub fn flush(&self) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }

    /// Bytes the database takes on disk.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }
}

/// A job store in memory only (zero-data-retention jobs): nothing of it reaches the disk,
/// and it vanishes with the process.
pub fn memory_jobs() -> Result<JobStore> {
    let db = sled::Config::new().temporary(true).open()?;
    let q = quarantine::Quarantine::new(db.open_tree(trees::QUARANTINE)?);
    JobStore::open(&db, q)
}

/// Makes everything written so far durable, waiting on tokio's blocking threads (the
/// trees of a database share one log, so flushing `tree` flushes them all).
///
/// Not sled's `flush_async`: it waits on sled's own small thread pool while holding the
/// store's read lock, and the write that would let it finish is queued on that same pool;
/// with a few jobs accepted at once and a transaction waiting for the lock, every store
/// call stalls for good. A blocking flush on tokio's blocking threads leaves sled's pool
/// free to write.
pub(crate) async fn flush_off_worker(tree: &sled::Tree) -> Result<()> {
    let tree = tree.clone();
    tokio::task::spawn_blocking(move || tree.flush())
        .await
        .map_err(|e| StoreError::Db(sled::Error::Io(std::io::Error::other(e.to_string()))))??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_has_the_current_schema_version_and_keeps_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        assert_eq!(migrate::found_version(&store.meta).expect("version"), SCHEMA_VERSION);
        drop(store);
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(migrate::found_version(&store.meta).expect("version"), SCHEMA_VERSION);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = sled::Config::new()
                .path(dir.path().join("db"))
                .segment_size(SEGMENT_BYTES)
                .open()
                .expect("sled");
            let meta = db.open_tree(trees::META).expect("tree");
            meta.insert(b"schema_version", postcard::to_allocvec(&99u32).expect("enc")).expect("insert");
            db.flush().expect("flush");
        }
        assert!(matches!(Store::open(dir.path()), Err(StoreError::FutureSchema { found: 99 })));
    }
}
