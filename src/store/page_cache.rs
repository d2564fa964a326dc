//! The page cache: pages as fetched (body bytes, final URL, status, content type), keyed by
//! a digest of the canonical URL and the request variant that changes what a server sends
//! (device, language). Results are re-extracted from the cached page, so one cached fetch
//! serves any formats and content options.
//!
//! A body of more than [`PART_BYTES`] is kept apart, in parts of that size in the
//! `page_bodies` tree, and the entry holds only how many. sled splits a tree's nodes by the
//! number of keys, not their size, so an entry of several megabytes would sit in a node with
//! other entries, and every lookup or write that lands in that node (keys are digests: any
//! page of any site) would read or rewrite those megabytes. With the parts apart, the
//! entries' nodes stay small, and a node of parts holds at most a few of them.
//!
//! No transaction: a sled transaction holds a lock that stops every other read and write of
//! the process while it commits, too long for megabytes that may be written on a thread of
//! the lowest priority ([`crate::scrape`]'s heavy lane). Each stored body has a random
//! generation in its parts' keys instead, so the parts of one body never change: a put
//! writes the new generation's parts, swaps the entry, and deletes the parts of the entry it
//! replaced; a get reads the entry, then its generation's parts, and a part deleted in
//! between (the entry was replaced meanwhile) reads as a miss, never as a mixed body.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec, legacy};

/// Bodies larger than this are stored in parts of this size.
const PART_BYTES: usize = 64 << 10;

/// A fetched page as kept in the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedPage {
    /// URL after redirects.
    pub final_url: String,
    /// HTTP status.
    pub status: u16,
    /// Content-Type header.
    pub content_type: Option<String>,
    /// Body bytes as received (decompressed).
    pub body: Vec<u8>,
    /// When it was fetched (epoch ms).
    pub fetched_ms: u64,
    /// Whether the enhanced proxy fetched it.
    pub via_proxy: bool,
    /// Whether the body is the DOM of a page Chromium rendered.
    pub rendered: bool,
}

/// An entry of the `page_cache` tree: the page, with its body empty when it is kept in
/// `parts` parts of generation `generation` in `page_bodies`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StoredPage {
    page: CachedPage,
    parts: u32,
    /// Nonzero for parts written since version 3; 0 for version 2's parts, whose keys have
    /// no generation.
    generation: u64,
}

impl codec::Record for StoredPage {
    /// Version 3 names its parts' generation; version 2 kept parts without one; version 1
    /// was the page with its body inline.
    const VERSION: u8 = 3;

    fn upgrade(version: u8, payload: &[u8]) -> std::result::Result<Self, codec::CodecError> {
        let (old, parts): (legacy::v1::CachedPage, u32) = match version {
            1 => (postcard::from_bytes(payload)?, 0),
            2 => {
                let old: legacy::v2::StoredPage = postcard::from_bytes(payload)?;
                (old.page, old.parts)
            }
            found => return Err(codec::CodecError::UnknownVersion { found, current: Self::VERSION }),
        };
        let page = CachedPage {
            final_url: old.final_url,
            status: old.status,
            content_type: old.content_type,
            body: old.body,
            fetched_ms: old.fetched_ms,
            via_proxy: old.via_proxy,
            rendered: old.rendered,
        };
        Ok(Self { page, parts, generation: 0 })
    }
}

/// Identity of a cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheKey([u8; 32]);

/// Typed access to the `page_cache` tree and its `page_bodies`.
#[derive(Debug, Clone)]
pub struct PageCache {
    tree: sled::Tree,
    bodies: sled::Tree,
    q: Quarantine,
}

impl PageCache {
    pub(super) fn new(tree: sled::Tree, bodies: sled::Tree, q: Quarantine) -> Self {
        Self { tree, bodies, q }
    }

    /// The key of `canonical_url` fetched with `variant` (a stable description of the
    /// request properties that change the response).
    pub fn key(canonical_url: &str, variant: &str) -> CacheKey {
        CacheKey(codec::digest(&[b"page", canonical_url.as_bytes(), variant.as_bytes()]))
    }

    /// The cached page, if any (none when a part of its body is missing).
    pub fn get(&self, key: CacheKey) -> Result<Option<CachedPage>> {
        let Some(StoredPage { mut page, parts, generation }) =
            self.q.get::<StoredPage>(&self.tree, &key.0)?
        else {
            return Ok(None);
        };
        page.body.reserve(parts as usize * PART_BYTES);
        for part in 0..parts {
            let Some(bytes) = self.bodies.get(part_key(key, generation, part))? else { return Ok(None) };
            page.body.extend_from_slice(&bytes);
        }
        Ok(Some(page))
    }

    /// Whether no page is cached.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// The keys of every cached page (for a pass over them all, e.g. rebuilding the
    /// search index).
    pub fn keys(&self) -> Result<Vec<CacheKey>> {
        self.tree.iter().keys().map(|key| Ok(CacheKey(key?.as_ref().try_into().unwrap_or([0; 32])))).collect()
    }

    /// Deletes pages fetched before `cutoff_ms`; returns how many.
    pub fn purge_older_than(&self, cutoff_ms: u64) -> Result<usize> {
        let mut removed = 0;
        for item in self.tree.iter() {
            let (key, value) = item?;
            let stored = codec::decode::<StoredPage>(&value).ok();
            if stored.as_ref().is_some_and(|s| s.page.fetched_ms >= cutoff_ms) {
                continue;
            }
            // Only what is still the value read above: a fresh page may have replaced it.
            if self.tree.compare_and_swap(&key, Some(&value), None::<&[u8]>)?.is_err() {
                continue;
            }
            if let Some(stored) = stored {
                self.remove_parts(CacheKey(key.as_ref().try_into().unwrap_or([0; 32])), &stored)?;
            }
            removed += 1;
        }
        Ok(removed)
    }

    /// Stores or replaces a page.
    pub fn put(&self, key: CacheKey, page: &CachedPage) -> Result<()> {
        let apart = page.body.len() > PART_BYTES;
        let (parts, generation) = match apart {
            true => {
                (u32::try_from(page.body.len().div_ceil(PART_BYTES)).unwrap_or(u32::MAX), new_generation())
            }
            false => (0, 0),
        };
        if apart {
            for (part, bytes) in (0..).zip(page.body.chunks(PART_BYTES)) {
                self.bodies.insert(part_key(key, generation, part), bytes)?;
            }
        }
        let entry = StoredPage {
            page: CachedPage {
                body: if apart { Vec::new() } else { page.body.clone() },
                ..page.clone_without_body()
            },
            parts,
            generation,
        };
        let before = self.tree.insert(key.0, codec::encode(&entry)?)?;
        match before.map(|b| codec::decode::<StoredPage>(&b)) {
            Some(Ok(replaced)) => self.remove_parts(key, &replaced),
            _ => Ok(()),
        }
    }

    /// Deletes the parts of `stored`, an entry of `key` no longer in the tree.
    fn remove_parts(&self, key: CacheKey, stored: &StoredPage) -> Result<()> {
        for part in 0..stored.parts {
            self.bodies.remove(part_key(key, stored.generation, part))?;
        }
        Ok(())
    }
}

impl CachedPage {
    /// The page with an empty body, made without copying the body.
    fn clone_without_body(&self) -> Self {
        Self {
            final_url: self.final_url.clone(),
            status: self.status,
            content_type: self.content_type.clone(),
            body: Vec::new(),
            fetched_ms: self.fetched_ms,
            via_proxy: self.via_proxy,
            rendered: self.rendered,
        }
    }
}

/// A random nonzero generation for a body's parts.
fn new_generation() -> u64 {
    let mut bytes = [0; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    u64::from_ne_bytes(bytes).max(1)
}

/// Key of part `part` of generation `generation` of the body of entry `key`: the entry's
/// key, the generation (none for generation 0, version 2's parts), the part number.
fn part_key(key: CacheKey, generation: u64, part: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(44);
    out.extend_from_slice(&key.0);
    if generation != 0 {
        out.extend_from_slice(&generation.to_be_bytes());
    }
    out.extend_from_slice(&part.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn page(body: Vec<u8>, fetched_ms: u64) -> CachedPage {
        CachedPage {
            final_url: "http://a.test/big".into(),
            status: 200,
            content_type: Some("text/html".into()),
            body,
            fetched_ms,
            via_proxy: false,
            rendered: true,
        }
    }

    /// A body of `len` bytes that differs at every offset and between `seed`s.
    fn body(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
    }

    #[test]
    fn large_bodies_are_kept_in_parts_and_read_back_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let key = PageCache::key("http://a.test/big", "desktop");
        let parts = || store.db.open_tree(super::super::trees::PAGE_BODIES).expect("tree").len();

        let large = page(body(5 * PART_BYTES + 17, 1), 10);
        store.cache.put(key, &large).expect("put");
        assert_eq!(parts(), 6);
        assert!(store.cache.tree.get(key.0).expect("get").expect("entry").len() < 100, "the entry is small");
        assert_eq!(store.cache.get(key).expect("get"), Some(large));

        // Replaced by a smaller large body, then by a small one: no part is left behind.
        let smaller = page(body(2 * PART_BYTES, 2), 20);
        store.cache.put(key, &smaller).expect("put");
        assert_eq!((parts(), store.cache.get(key).expect("get")), (2, Some(smaller)));
        let small = page(b"<p>x</p>".to_vec(), 30);
        store.cache.put(key, &small).expect("put");
        assert_eq!((parts(), store.cache.get(key).expect("get")), (0, Some(small)));

        // Purged with its parts; a missing part reads as a miss, not a short body.
        store.cache.put(key, &page(body(3 * PART_BYTES, 3), 40)).expect("put");
        assert_eq!(store.cache.purge_older_than(41).expect("purge"), 1);
        assert_eq!((parts(), store.cache.get(key).expect("get")), (0, None));
        store.cache.put(key, &page(body(3 * PART_BYTES, 3), 50)).expect("put");
        let generation =
            codec::decode::<StoredPage>(&store.cache.tree.get(key.0).expect("get").expect("entry"))
                .expect("decode")
                .generation;
        store.cache.bodies.remove(part_key(key, generation, 1)).expect("remove");
        assert_eq!(store.cache.get(key).expect("get"), None);
    }

    #[test]
    fn version_1_entries_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let key = PageCache::key("http://a.test/old", "desktop");
        let old = legacy::v1::CachedPage {
            final_url: "http://a.test/old".into(),
            status: 200,
            content_type: None,
            body: body(3 * PART_BYTES, 4),
            fetched_ms: 7,
            via_proxy: true,
            rendered: false,
        };
        let mut bytes = vec![codec::TAG, 1];
        bytes.extend(postcard::to_allocvec(&old).expect("encode"));
        store.cache.tree.insert(key.0, bytes).expect("insert");
        let read = store.cache.get(key).expect("get").expect("an entry");
        assert_eq!((read.body, read.fetched_ms, read.via_proxy), (old.body, 7, true));
        assert!(crate::store::check::run(&store).expect("check").is_clean());
    }

    #[test]
    fn version_2_entries_read_with_their_parts_and_leave_none_behind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let key = PageCache::key("http://a.test/v2", "desktop");
        let whole = body(2 * PART_BYTES + 5, 6);
        let old = legacy::v2::StoredPage {
            page: legacy::v1::CachedPage {
                final_url: "http://a.test/v2".into(),
                status: 200,
                content_type: None,
                body: Vec::new(),
                fetched_ms: 9,
                via_proxy: false,
                rendered: false,
            },
            parts: 3,
        };
        let mut bytes = vec![codec::TAG, 2];
        bytes.extend(postcard::to_allocvec(&old).expect("encode"));
        store.cache.tree.insert(key.0, bytes).expect("insert");
        for (part, chunk) in (0u32..).zip(whole.chunks(PART_BYTES)) {
            let mut part_key = key.0.to_vec();
            part_key.extend_from_slice(&part.to_be_bytes());
            store.cache.bodies.insert(part_key, chunk).expect("insert");
        }
        assert_eq!(store.cache.get(key).expect("get").expect("an entry").body, whole);
        assert!(crate::store::check::run(&store).expect("check").is_clean());
        // Replaced: the new body's parts are the only ones left.
        let new = page(body(2 * PART_BYTES, 7), 20);
        store.cache.put(key, &new).expect("put");
        assert_eq!((store.cache.bodies.len(), store.cache.get(key).expect("get")), (2, Some(new)));
    }

    #[test]
    fn variants_are_separate_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let page = CachedPage {
            final_url: "http://a.test/".into(),
            status: 200,
            content_type: Some("text/html".into()),
            body: b"<p>x</p>".to_vec(),
            fetched_ms: 1,
            via_proxy: false,
            rendered: false,
        };
        let desktop = PageCache::key("http://a.test/", "desktop");
        let mobile = PageCache::key("http://a.test/", "mobile");
        store.cache.put(desktop, &page).expect("put");
        assert_eq!(store.cache.get(desktop).expect("get"), Some(page.clone()));
        assert_eq!(store.cache.get(mobile).expect("get"), None);
        store.cache.put(mobile, &CachedPage { fetched_ms: 100, ..page }).expect("put");
        assert_eq!(store.cache.purge_older_than(50).expect("purge"), 1);
        assert!(store.cache.get(mobile).expect("get").is_some());
        assert!(store.cache.get(desktop).expect("get").is_none());
    }
}
