//! Upgrades of the data directory's layout, run when the store opens. The layout's version
//! is `schema_version` in the `meta` tree; a newer one than this build knows is refused.
//!
//! **The promise:** a release opens the data directory of every earlier release (each has
//! a frozen fixture in `tests/fixtures/datadir/`, opened by `tests/integration/upgrade.rs`).
//! Nothing is kept for the commits between releases: the steps and the old record versions
//! decoded here are those of releases. Caches that can be made again (the page cache) are
//! dropped on a change of their format, not converted ([`drop_stale_caches`]).
//!
//! Each step is crash-safe: it works through one tree at a time in batches, and every
//! batch is one transaction that also records, in `meta`, the last key it converted. A
//! process killed in the middle (kill -9, power loss) resumes after the last committed
//! batch on the next start; records are never converted twice or lost. The version is
//! raised in the transaction that ends the last step.
//!
//! Steps:
//! - 0 → current: a new, empty database.
//! - 1 → 2 (release 0.1.0's data directories): every typed record gets its version tag
//!   (`codec`); version-1 payloads are kept as they are, tagged as version 1, and decoded by
//!   their types' `upgrade`. The page cache of that release is dropped instead.

use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use super::{Result, SCHEMA_VERSION, StoreError, codec, jobs, outbox, trees};

const SCHEMA_VERSION_KEY: &[u8] = b"schema_version";
/// Records converted per transaction.
const BATCH: usize = 256;

/// Trees whose values are typed records (postcard), which version 2 tags (the page cache's
/// are dropped: see [`drop_stale_caches`]).
pub(super) const TYPED_TREES: &[&str] = &[
    trees::API_KEYS,
    trees::SCRAPES,
    trees::CHANGE_HISTORY,
    trees::TEAMS,
    trees::LEDGER,
    trees::ACTIVITY,
    trees::FILES,
    trees::PROFILES,
    trees::REPLAYS,
    jobs::trees::JOBS,
    jobs::trees::COUNTERS,
    jobs::trees::QUEUE,
    jobs::trees::ERRORS,
    outbox::trees::OUTBOX,
];

/// The layout version recorded in `meta` (0 when none is).
pub(super) fn found_version(meta: &sled::Tree) -> Result<u32> {
    match meta.get(SCHEMA_VERSION_KEY)? {
        // Stored as a bare postcard integer since the first release.
        Some(bytes) => Ok(postcard::from_bytes::<u32>(&bytes).map_err(codec::CodecError::from)?),
        None => Ok(0),
    }
}

fn version_bytes(version: u32) -> Result<Vec<u8>> {
    Ok(postcard::to_allocvec(&version).map_err(codec::CodecError::from)?)
}

/// `meta` key of the page cache's format: the record version of its entries.
const CACHE_FORMAT_KEY: &[u8] = b"page_cache_format";

/// Brings `db` to [`SCHEMA_VERSION`]; refuses a newer layout.
pub(super) fn run(db: &sled::Db) -> Result<()> {
    let meta = db.open_tree(trees::META)?;
    let found = found_version(&meta)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::FutureSchema { found });
    }
    if found == 0 && db.tree_names().iter().all(|name| db.open_tree(name).is_ok_and(|t| t.is_empty())) {
        meta.insert(SCHEMA_VERSION_KEY, version_bytes(SCHEMA_VERSION)?)?;
        meta.insert(CACHE_FORMAT_KEY, version_bytes(super::page_cache::FORMAT)?)?;
        return Ok(());
    }
    drop_stale_caches(db, &meta, found)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    if found <= 1 {
        tracing::info!(from = found, to = 2, "upgrading the data directory");
        tag_records(db, &meta, &mut failpoint)?;
    }
    finish(&meta, SCHEMA_VERSION)?;
    db.flush()?;
    tracing::info!(version = SCHEMA_VERSION, "data directory upgraded");
    Ok(())
}

/// Drops the page cache (its entries, their bodies and the search index's notes of them)
/// when it was written in another format than this build's, and records this build's: a
/// cache is made again as pages are fetched, not converted. A directory of layout `found`
/// 2 without a record of the cache's format is release 0.2.0's, whose entries are this
/// build's format.
fn drop_stale_caches(db: &sled::Db, meta: &sled::Tree, found: u32) -> Result<()> {
    let current = super::page_cache::FORMAT;
    let stored = match meta.get(CACHE_FORMAT_KEY)? {
        Some(bytes) => Some(postcard::from_bytes::<u32>(&bytes).map_err(codec::CodecError::from)?),
        None if found == 2 => Some(current),
        None => None,
    };
    if stored == Some(current) && meta.contains_key(CACHE_FORMAT_KEY)? {
        return Ok(());
    }
    if stored != Some(current) {
        let cache = db.open_tree(trees::PAGE_CACHE)?;
        if !cache.is_empty() {
            tracing::info!(
                entries = cache.len(),
                "the page cache of an earlier format is dropped; pages are fetched again"
            );
        }
        for name in [trees::PAGE_CACHE, trees::PAGE_BODIES, trees::INDEX_BACKLOG, trees::INDEX_HELD] {
            db.open_tree(name)?.clear()?;
        }
    }
    meta.insert(CACHE_FORMAT_KEY, version_bytes(current)?)?;
    Ok(())
}

/// `meta` key of the last key converted in `tree`, and of the mark that `tree` is done.
fn progress_keys(tree: &str) -> (Vec<u8>, Vec<u8>) {
    (format!("migrate/2/{tree}/last").into_bytes(), format!("migrate/2/{tree}/done").into_bytes())
}

/// Step 1 → 2: puts the version-1 tag in front of every typed record, tree by tree.
/// `after_batch` is told how many batches are committed so far.
fn tag_records(db: &sled::Db, meta: &sled::Tree, after_batch: &mut dyn FnMut(usize)) -> Result<()> {
    let mut batches = 0usize;
    for &name in TYPED_TREES {
        let tree = db.open_tree(name)?;
        let (marker, done) = progress_keys(name);
        while !meta.contains_key(&done)? {
            let after = meta.get(&marker)?;
            let range = match &after {
                Some(last) => {
                    tree.range::<&[u8], _>((std::ops::Bound::Excluded(&last[..]), std::ops::Bound::Unbounded))
                }
                None => tree.iter(),
            };
            let mut chunk = Vec::with_capacity(BATCH);
            for item in range.take(BATCH) {
                chunk.push(item?);
            }
            let last = chunk.last().map(|(k, _)| k.to_vec());
            let result: std::result::Result<(), TransactionError<StoreError>> =
                (&tree, meta).transaction(|(tree, meta)| {
                    for (key, value) in &chunk {
                        let mut tagged = Vec::with_capacity(value.len() + 2);
                        tagged.extend_from_slice(&[codec::TAG, 1]);
                        tagged.extend_from_slice(value);
                        tree.insert(key, tagged)?;
                    }
                    match &last {
                        Some(last) => meta.insert(marker.as_slice(), last.as_slice())?,
                        None => meta.insert(done.as_slice(), &[][..])?,
                    };
                    Ok::<_, ConflictableTransactionError<StoreError>>(())
                });
            result.map_err(|e| match e {
                TransactionError::Abort(e) => e,
                TransactionError::Storage(e) => StoreError::Db(e),
            })?;
            // Each batch is made durable before the next, so a crash loses at most the one
            // in progress, which the marker says to redo.
            db.flush()?;
            batches += 1;
            after_batch(batches);
        }
    }
    Ok(())
}

/// Records `version` and forgets the steps' progress marks, in one transaction (a crash
/// before it leaves the marks, so nothing is converted twice).
fn finish(meta: &sled::Tree, version: u32) -> Result<()> {
    let bytes = version_bytes(version)?;
    let result: std::result::Result<(), TransactionError<StoreError>> = meta.transaction(|meta| {
        meta.insert(SCHEMA_VERSION_KEY, bytes.as_slice())?;
        for &name in TYPED_TREES {
            let (marker, done) = progress_keys(name);
            meta.remove(marker)?;
            meta.remove(done)?;
        }
        Ok::<_, ConflictableTransactionError<StoreError>>(())
    });
    result.map_err(|e| match e {
        TransactionError::Abort(e) => e,
        TransactionError::Storage(e) => StoreError::Db(e),
    })
}

/// Lets the crash-recovery test stop the process after `TEST_FERROCRAWL_FAILPOINT_MIGRATION`
/// batches (debug builds only), as a kill -9 would.
fn failpoint(batches: usize) {
    if cfg!(debug_assertions)
        && std::env::var("TEST_FERROCRAWL_FAILPOINT_MIGRATION").ok().and_then(|v| v.parse::<usize>().ok())
            == Some(batches)
    {
        eprintln!("failpoint: stopping the process during the migration, after {batches} batches");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::super::legacy::v1;
    use super::super::{Store, codec, jobs};
    use super::*;
    use crate::model::JobId;

    /// A version-1 data directory: untagged postcard records, as the first release wrote.
    fn version_one(dir: &std::path::Path, queued: usize) -> JobId {
        let db = super::super::open_db(&sled::Config::new().path(dir.join("db")).segment_size(8 << 20))
            .expect("sled");
        db.open_tree(trees::META)
            .expect("meta")
            .insert(SCHEMA_VERSION_KEY, version_bytes(1).expect("v"))
            .expect("v");
        let id = JobId::new();
        let record = v1::JobRecord {
            kind: v1::JobKind::Crawl,
            team: "t".into(),
            url: "http://a.test/".into(),
            options: serde_json::from_value(serde_json::json!({
                "include_paths": ["^/blog"], "exclude_paths": [], "max_discovery_depth": null,
                "sitemap": "Skip", "ignore_query_parameters": false, "deduplicate_similar_urls": true,
                "regex_on_full_url": false, "limit": 77, "crawl_entire_domain": true,
                "allow_external_links": false, "allow_subdomains": false, "ignore_robots_txt": false,
                "robots_user_agent": null, "delay_ms": null, "max_concurrency": 3,
                "scrape": serde_json::to_value(crate::model::ScrapeOptions::default()).expect("scrape"),
                "webhook": null
            }))
            .expect("v1 options"),
            status: v1::JobStatus::Scraping,
            created_ms: 1,
            expires_ms: u64::MAX,
            finished_ms: None,
            error: None,
        };
        let jobs_tree = db.open_tree(jobs::trees::JOBS).expect("jobs");
        jobs_tree.insert(id.as_bytes(), postcard::to_allocvec(&record).expect("record")).expect("insert");
        let queue = db.open_tree(jobs::trees::QUEUE).expect("queue");
        for n in 0..queued as u64 {
            let mut key = id.as_bytes().to_vec();
            key.extend_from_slice(&n.to_be_bytes());
            let entry = jobs::QueueEntry { url: format!("http://a.test/{n}"), depth: 1 };
            queue.insert(key, postcard::to_allocvec(&entry).expect("entry")).expect("insert");
        }
        db.flush().expect("flush");
        id
    }

    #[test]
    fn version_one_records_read_after_the_upgrade() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = version_one(dir.path(), 3);
        let store = Store::open(dir.path()).expect("open upgrades");
        assert_eq!(found_version(&store.meta).expect("version"), SCHEMA_VERSION);
        let record = store.jobs.record(id).expect("read").expect("the job");
        assert_eq!((record.options.limit, record.options.max_concurrency), (77, Some(3)));
        assert_eq!(record.options.include_paths, vec!["^/blog".to_owned()]);
        assert_eq!(store.jobs.queued(id, 0, 10).expect("queued").len(), 3);
        let report = super::super::check::run(&store).expect("check");
        assert!(report.is_clean(), "{:?}", report.failures);
    }

    #[test]
    fn an_interrupted_upgrade_resumes_and_tags_each_record_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = version_one(dir.path(), 3 * BATCH + 10);
        {
            let config = sled::Config::new().path(dir.path().join("db")).segment_size(8 << 20);
            let db = super::super::open_db(&config).expect("sled");
            let meta = db.open_tree(trees::META).expect("meta");
            // Stop after the second batch, as a crash would: nothing after it runs.
            struct Crash;
            let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tag_records(&db, &meta, &mut |batches| {
                    if batches == 2 {
                        std::panic::panic_any(Crash);
                    }
                })
            }));
            assert!(stopped.is_err(), "the upgrade was interrupted");
            assert_eq!(found_version(&meta).expect("version"), 1, "not finished");
        }
        let store = Store::open(dir.path()).expect("the upgrade resumes");
        assert_eq!(found_version(&store.meta).expect("version"), SCHEMA_VERSION);
        let queued = store.jobs.queued(id, 0, usize::MAX).expect("queued");
        assert_eq!(queued.len(), 3 * BATCH + 10, "every entry reads, none tagged twice");
        assert!(store.jobs.record(id).expect("read").is_some());
        assert!(super::super::check::run(&store).expect("check").is_clean());
        let raw = store.db.open_tree(jobs::trees::QUEUE).expect("queue");
        assert!(raw.iter().values().all(|v| v.expect("value")[..2] == [codec::TAG, 1]));
    }
}
