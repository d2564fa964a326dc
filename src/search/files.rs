//! The index writer's view of the index's files: tantivy's [`MmapDirectory`] for everything
//! but reading, which goes through positional reads into buffers instead of maps.
//!
//! A merge reads every byte of the segments it merges. Read through maps, those pages count
//! as the server's resident memory until the merge ends: on a 100 000-page crawl the last
//! merges mapped most of the index at once (file-backed memory rose from 30 to 130 MB). Read
//! into buffers, only the buffer in use is held; the bytes themselves stay in the system's
//! cache, which is not the process's. Searches keep reading through maps (the reader opens
//! the index over a [`MmapDirectory`] of its own): they touch little of each file, and a
//! map spares them a copy of every term dictionary.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::HasLen;
use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback, WatchHandle,
    WritePtr,
};

/// The index's folder, its files read with positional reads.
#[derive(Clone, Debug)]
pub(crate) struct ReadDirectory {
    root: PathBuf,
    inner: MmapDirectory,
}

impl ReadDirectory {
    /// The index in `root` (which must exist).
    pub(crate) fn open(root: &Path) -> Result<Self, OpenDirectoryError> {
        Ok(Self { root: root.to_path_buf(), inner: MmapDirectory::open(root)? })
    }
}

/// One open file of the index (tantivy-common's `WrapFile` reads the same way but fails on
/// an empty range; these give an empty buffer).
#[derive(Debug)]
struct ReadFile {
    file: File,
    len: usize,
}

impl HasLen for ReadFile {
    fn len(&self) -> usize {
        self.len
    }
}

impl FileHandle for ReadFile {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        let mut buffer = vec![0; range.len()];
        self.file.read_exact_at(&mut buffer, range.start as u64)?;
        Ok(OwnedBytes::new(buffer))
    }
}

impl Directory for ReadDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let opened = File::open(self.root.join(path)).and_then(|file| {
            let len = usize::try_from(file.metadata()?.len()).map_err(io::Error::other)?;
            Ok(ReadFile { file, len })
        });
        match opened {
            Ok(file) => Ok(Arc::new(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(OpenReadError::FileDoesNotExist(path.to_owned()))
            }
            Err(e) => Err(OpenReadError::wrap_io_error(e, path.to_owned())),
        }
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the positional reads give is what the maps give, ranges at the file's edges
    /// and empty ones included; a missing file is reported as missing.
    #[test]
    fn reads_what_a_map_reads() {
        let dir = tempfile::tempdir().expect("temp dir");
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("segment.pos"), &bytes).expect("write");
        let read = ReadDirectory::open(dir.path()).expect("open");
        let mapped = MmapDirectory::open(dir.path()).expect("open");
        let (a, b) = (
            read.open_read(Path::new("segment.pos")).unwrap(),
            mapped.open_read(Path::new("segment.pos")).unwrap(),
        );
        assert_eq!(a.len(), bytes.len());
        for range in [0..10_000, 0..1, 9_999..10_000, 4_096..8_193, 5..5] {
            let (x, y) =
                (a.read_bytes_slice(range.clone()).unwrap(), b.read_bytes_slice(range.clone()).unwrap());
            assert_eq!(x.as_slice(), y.as_slice(), "{range:?}");
            assert_eq!(x.as_slice(), &bytes[range]);
        }
        assert!(matches!(read.open_read(Path::new("gone.idx")), Err(OpenReadError::FileDoesNotExist(_))));
    }
}
