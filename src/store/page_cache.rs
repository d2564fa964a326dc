//! The page cache: pages as fetched (body bytes, final URL, status, content type), keyed by
//! a digest of the canonical URL and the request variant that changes what a server sends
//! (device, language). Results are re-extracted from the cached page, so one cached fetch
//! serves any formats and content options.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};

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

codec::records!(CachedPage => 1);

/// Identity of a cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheKey([u8; 32]);

/// Typed access to the `page_cache` tree.
#[derive(Debug, Clone)]
pub struct PageCache {
    tree: sled::Tree,
    q: Quarantine,
}

impl PageCache {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// The key of `canonical_url` fetched with `variant` (a stable description of the
    /// request properties that change the response).
    pub fn key(canonical_url: &str, variant: &str) -> CacheKey {
        CacheKey(codec::digest(&[b"page", canonical_url.as_bytes(), variant.as_bytes()]))
    }

    /// The cached page, if any.
    pub fn get(&self, key: CacheKey) -> Result<Option<CachedPage>> {
        self.q.get(&self.tree, &key.0)
    }

    /// Deletes pages fetched before `cutoff_ms`; returns how many.
    pub fn purge_older_than(&self, cutoff_ms: u64) -> Result<usize> {
        let mut removed = 0;
        for item in self.tree.iter() {
            let (key, value) = item?;
            let old = codec::decode::<CachedPage>(&value).map_or(true, |p| p.fetched_ms < cutoff_ms);
            if old && self.tree.remove(&key)?.is_some() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Stores or replaces a page.
    pub fn put(&self, key: CacheKey, page: &CachedPage) -> Result<()> {
        self.tree.insert(key.0, codec::encode(page)?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

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
