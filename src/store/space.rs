//! Free space on the data directory's disk. sled cannot take back a write the disk refused
//! (the database stops answering until it is reopened), so the store never lets it get
//! there: below `storage.min_free_mb` of free space the store is *short of space*, and
//! what would add data refuses with `STORAGE_UNAVAILABLE` (503) or is skipped instead: new
//! jobs are refused, pages are not cached, scrape results are not kept. Jobs already running pause their next pages;
//! scrapes still answer (their result is not kept). Once space is back, everything goes on
//! by itself. The free space is read with `statvfs` at most every [`RECHECK`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::StoreError;

/// How long a reading of the free space is trusted.
const RECHECK: Duration = Duration::from_millis(200);

/// The free space of the disk under one data directory, against its floor.
#[derive(Debug, Clone)]
pub struct Space(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    min_free: u64,
    since: Instant,
    /// Milliseconds after `since` of the last reading, plus one (0: never read).
    read_at: AtomicU64,
    free: AtomicU64,
}

impl Space {
    /// The disk under `dir`, short of space below `min_free` bytes (0: never).
    pub fn new(dir: PathBuf, min_free: u64) -> Self {
        Self(Arc::new(Inner {
            dir,
            min_free,
            since: Instant::now(),
            read_at: AtomicU64::new(0),
            free: AtomicU64::new(u64::MAX),
        }))
    }

    /// Bytes free for this process on the disk (`u64::MAX` when it cannot be read).
    pub fn free_bytes(&self) -> u64 {
        let inner = &self.0;
        let now = inner.since.elapsed().as_millis() as u64 + 1;
        let read_at = inner.read_at.load(Ordering::Relaxed);
        if read_at == 0 || now.saturating_sub(read_at) >= RECHECK.as_millis() as u64 {
            let free = match rustix::fs::statvfs(&inner.dir) {
                Ok(stat) => stat.f_bavail.saturating_mul(stat.f_frsize),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the data disk's free space");
                    u64::MAX
                }
            };
            inner.free.store(free, Ordering::Relaxed);
            inner.read_at.store(now, Ordering::Relaxed);
        }
        inner.free.load(Ordering::Relaxed)
    }

    /// Whether the disk has less free space than the floor.
    pub fn is_short(&self) -> bool {
        self.0.min_free > 0 && self.free_bytes() < self.0.min_free
    }

    /// `Err(StoreError::Full)` when the disk is short of space.
    pub fn ensure(&self) -> Result<(), StoreError> {
        if self.is_short() {
            return Err(StoreError::Full { free: self.free_bytes(), min_free: self.0.min_free });
        }
        Ok(())
    }
}

/// Whether a database error is the disk refusing a write for want of space.
pub fn is_disk_full(error: &sled::Error) -> bool {
    matches!(error, sled::Error::Io(io)
        if io.kind() == std::io::ErrorKind::StorageFull || io.raw_os_error() == Some(libc::ENOSPC))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_above_the_disks_free_space_is_short_and_zero_never_is() {
        let dir = std::env::temp_dir();
        let free = Space::new(dir.clone(), 0).free_bytes();
        assert!(free > 0 && free < u64::MAX, "{free}");
        assert!(!Space::new(dir.clone(), 0).is_short());
        assert!(!Space::new(dir.clone(), 1).is_short());
        let short = Space::new(dir, u64::MAX);
        assert!(short.is_short());
        let err = short.ensure().expect_err("short");
        assert!(err.to_string().contains("storage.min_free_mb"), "{err}");
    }

    #[test]
    fn a_write_refused_for_space_is_told_apart() {
        let full = sled::Error::Io(std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(is_disk_full(&full));
        assert!(!is_disk_full(&sled::Error::Io(std::io::Error::other("lock"))));
    }
}
