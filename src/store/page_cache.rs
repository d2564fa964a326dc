//! The page cache: pages as fetched (body bytes, final URL, status, content type), keyed by
//! a digest of the canonical URL and the request variant that changes what a server sends
//! (device, language). Results are re-extracted from the cached page, so one cached fetch
//! serves any formats and content options.
//!
//! A body of more than [`INLINE_BYTES`] is kept apart, compressed (LZ4, quick to pack and
//! to unpack; HTML shrinks several times) in parts of at most [`PART_BYTES`] in the
//! `page_bodies` tree, and the entry holds only how many. sled splits a tree's nodes
//! by the number of keys, not their size, and must read a whole node into memory to read
//! or change one key of it. Entries are keyed by digests (any page of any site), so with
//! bodies inline every lookup (a crawl asks the cache for each page) and every write read a
//! node of some sixteen pages, hundreds of kilobytes, and such nodes filled the process's
//! memory on a long crawl. Apart, the entries' nodes stay a few kilobytes; and the parts'
//! keys begin with their generation, which grows with the time of the write, so new parts
//! are appended at the end of `page_bodies` (one node there is written at a time) and a
//! body's parts are read from one node.
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
use super::{Result, codec};

/// Bodies larger than this are stored apart, in parts.
const INLINE_BYTES: usize = 1 << 10;

/// Largest part of a body stored apart.
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
/// `parts` parts of generation `generation` in `page_bodies`, keyed by the generation
/// first (then the entry's key and the part) and compressed (LZ4, its length first).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StoredPage {
    page: CachedPage,
    parts: u32,
    generation: u64,
    /// Always set (the format of release 0.2.0 on); an entry without it is read as a miss.
    packed: bool,
}

/// The cache's format: the record version of its entries. The cache is not converted
/// from another format: a data directory whose cache has another is dropped as it opens
/// (`migrate`), and its pages are fetched again.
pub(super) const FORMAT: u32 = 4;

impl codec::Record for StoredPage {
    const VERSION: u8 = FORMAT as u8;
}

/// Identity of a cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A key from its bytes; `None` when they are not 32.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }
}

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
        let Some(mut stored) = self.q.get::<StoredPage>(&self.tree, &key.0)? else {
            return Ok(None);
        };
        if stored.parts == 0 {
            return Ok(Some(stored.page));
        }
        if !stored.packed {
            return Ok(None);
        }
        let mut body = Vec::with_capacity(stored.parts as usize * PART_BYTES);
        for part in 0..stored.parts {
            let Some(bytes) = self.bodies.get(part_key(key, &stored, part))? else { return Ok(None) };
            body.extend_from_slice(&bytes);
        }
        let Some(body) = unpack(&body) else {
            tracing::warn!("a cached page's stored body could not be decompressed; read as a miss");
            return Ok(None);
        };
        stored.page.body = body;
        Ok(Some(stored.page))
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
        let apart = page.body.len() > INLINE_BYTES;
        let packed = if apart { lz4_flex::block::compress_prepend_size(&page.body) } else { Vec::new() };
        let (parts, generation) = match apart {
            true => (u32::try_from(packed.len().div_ceil(PART_BYTES)).unwrap_or(u32::MAX), new_generation()),
            false => (0, 0),
        };
        let entry = StoredPage {
            page: CachedPage {
                body: if apart { Vec::new() } else { page.body.clone() },
                ..page.clone_without_body()
            },
            parts,
            generation,
            packed: true,
        };
        for (part, bytes) in (0..parts).zip(packed.chunks(PART_BYTES)) {
            self.bodies.insert(part_key(key, &entry, part), bytes)?;
        }
        let before = self.tree.insert(key.0, codec::encode(&entry)?)?;
        match before.map(|b| codec::decode::<StoredPage>(&b)) {
            Some(Ok(replaced)) => self.remove_parts(key, &replaced),
            _ => Ok(()),
        }
    }

    /// Deletes the parts of `stored`, an entry of `key` no longer in the tree.
    fn remove_parts(&self, key: CacheKey, stored: &StoredPage) -> Result<()> {
        for part in 0..stored.parts {
            self.bodies.remove(part_key(key, stored, part))?;
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

/// The body `packed` holds, unless it is damaged: its stated length must be one LZ4 could
/// have packed into that many bytes (at most 255 to 1), so damage never asks for a huge
/// allocation.
fn unpack(packed: &[u8]) -> Option<Vec<u8>> {
    let stated = u32::from_le_bytes(packed.get(..4)?.try_into().ok()?) as usize;
    if stated > packed.len().saturating_mul(255) {
        return None;
    }
    lz4_flex::block::decompress_size_prepended(packed).ok()
}

/// A generation for a body's parts: the time of the write in microseconds (shifted to
/// leave room below), and always more than the last one this process made, so later parts
/// sort after earlier ones and no two writes share one.
fn new_generation() -> u64 {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX >> 8));
    let now = (micros << 8).max(1);
    let previous = LAST
        .fetch_update(std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or_else(|last| last);
    now.max(previous + 1)
}

/// Key of part `part` of the body of entry `key` stored as `stored`: the generation, the
/// entry's key, the part number.
fn part_key(key: CacheKey, stored: &StoredPage, part: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(44);
    out.extend_from_slice(&stored.generation.to_be_bytes());
    out.extend_from_slice(&key.0);
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
    /// (Noise, which LZ4 cannot shrink: stored in as many parts as it is long.)
    fn body(len: usize, seed: u8) -> Vec<u8> {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ u64::from(seed);
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
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
        let smaller = page(body(2 * PART_BYTES - 1024, 2), 20);
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
        let stored = codec::decode::<StoredPage>(&store.cache.tree.get(key.0).expect("get").expect("entry"))
            .expect("decode");
        store.cache.bodies.remove(part_key(key, &stored, 1)).expect("remove");
        assert_eq!(store.cache.get(key).expect("get"), None);
    }

    #[test]
    fn bodies_are_stored_compressed_and_damage_reads_as_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let key = PageCache::key("http://a.test/html", "desktop");
        let html = "<div class=\"card\"><p>Heirloom tomatoes, tested in our trials.</p></div>\n".repeat(3000);
        let html = page(html.into_bytes(), 1);
        store.cache.put(key, &html).expect("put");
        let stored: usize = store.cache.bodies.iter().values().map(|v| v.expect("value").len()).sum();
        assert!(stored * 5 < html.body.len(), "{} bytes kept for {}", stored, html.body.len());
        assert_eq!(store.cache.get(key).expect("get"), Some(html));
        // A damaged part (its stated length too) is a miss, not an error or a huge allocation.
        let entry = codec::decode::<StoredPage>(&store.cache.tree.get(key.0).expect("get").expect("entry"))
            .expect("decode");
        store.cache.bodies.insert(part_key(key, &entry, 0), vec![0xFF; 64]).expect("insert");
        assert_eq!(store.cache.get(key).expect("get"), None);
        store.cache.bodies.insert(part_key(key, &entry, 0), vec![0x00, 0x10, 0, 0, 0x1F]).expect("insert");
        assert_eq!(store.cache.get(key).expect("get"), None);
    }

    #[test]
    fn a_cache_of_another_format_is_dropped_as_the_store_opens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = PageCache::key("http://a.test/big", "desktop");
        {
            let store = Store::open(dir.path()).expect("open");
            store.cache.put(key, &page(body(2 * PART_BYTES, 3), 10)).expect("put");
            // As a build whose cache had another format left it.
            let meta = store.db.open_tree(super::super::trees::META).expect("meta");
            meta.insert(b"page_cache_format", postcard::to_allocvec(&(FORMAT - 1)).expect("v")).expect("put");
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("open again");
        assert_eq!(store.cache.get(key).expect("get"), None, "dropped, not decoded");
        assert!(store.cache.is_empty());
        assert_eq!(store.db.open_tree(super::super::trees::PAGE_BODIES).expect("bodies").len(), 0);
        // This format's cache stays across a restart.
        store.cache.put(key, &page(body(2 * PART_BYTES, 3), 10)).expect("put");
        store.flush().expect("flush");
        drop(store);
        let store = Store::open(dir.path()).expect("open a third time");
        assert!(store.cache.get(key).expect("get").is_some(), "kept");
    }

    #[test]
    fn bodies_go_apart_in_the_order_they_were_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        // Keys are digests, in no order; their bodies' parts follow the order of the writes.
        let keys: Vec<CacheKey> =
            (0..20).map(|n| PageCache::key(&format!("http://a.test/{n}"), "desktop")).collect();
        for (n, key) in keys.iter().enumerate() {
            store.cache.put(*key, &page(body(4 * 1024, n as u8), n as u64)).expect("put");
            assert!(
                store.cache.tree.get(key.0).expect("get").expect("entry").len() < 100,
                "the entry is small"
            );
        }
        let written: Vec<[u8; 32]> = store
            .cache
            .bodies
            .iter()
            .keys()
            .map(|k| k.expect("key")[8..40].try_into().expect("a key"))
            .collect();
        assert_eq!(written, keys.iter().map(|k| k.0).collect::<Vec<_>>());
        for (n, key) in keys.iter().enumerate() {
            assert_eq!(store.cache.get(*key).expect("get").expect("entry").body, body(4 * 1024, n as u8));
        }
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
