//! The page cache across a cluster: a page is cached on the node that owns its site (where
//! its site's actor lives and a crawl fetches it), so a scrape through any node reads and
//! fills that node's cache, not its own. The scraper asks a [`PageKeeper`] (the cluster's,
//! which the layer carrying messages between nodes implements) which node that is; this
//! node's own cache stays the fallback when the keeper does not answer.

use futures::future::BoxFuture;
use url::Url;

use super::Scraper;
use crate::store::{CacheKey, CachedPage};

/// Keeps cached pages of sites another node owns on that node.
pub trait PageKeeper: Send + Sync + std::fmt::Debug {
    /// The page cached under `key` at the node that keeps `url`'s pages, when that is
    /// another node (`None`: this node keeps them). `Err` when that node did not answer.
    fn get<'a>(
        &'a self,
        url: &'a Url,
        key: CacheKey,
    ) -> Option<BoxFuture<'a, Result<Option<CachedPage>, String>>>;
    /// Caches `page` under `key` at the node that keeps `url`'s pages, when that is another
    /// node (`None`: this node keeps them).
    fn put(
        &self,
        url: &Url,
        key: CacheKey,
        page: CachedPage,
    ) -> Option<BoxFuture<'static, Result<(), String>>>;
}

impl Scraper {
    /// The page cached under `key`, at the node that keeps `url`'s pages (this node's own
    /// cache when that is this node, or when that node does not answer).
    pub(super) async fn cached(
        &self,
        url: &Url,
        key: CacheKey,
    ) -> Result<Option<CachedPage>, super::ScrapeError> {
        if let Some(asked) = self.pages.as_ref().and_then(|keeper| keeper.get(url, key)) {
            match asked.await {
                Ok(page) => return Ok(page),
                Err(node) => {
                    tracing::debug!(%url, %node, "the page's cache node did not answer; this node's cache is read")
                }
            }
        }
        Ok(self.store.cache.get(key)?)
    }

    /// Caches `page` under `key` at the node that keeps `url`'s pages; `false` when that is
    /// this node (the caller writes it here). Sent on a task of its own: the scrape does not
    /// wait for it, and a page the node does not take is cached here instead.
    pub(super) fn cache_elsewhere(&self, url: &Url, key: CacheKey, page: &CachedPage) -> bool {
        let Some(sent) = self.pages.as_ref().and_then(|keeper| keeper.put(url, key, page.clone())) else {
            return false;
        };
        let (cache, page) = (self.store.cache.clone(), page.clone());
        tokio::spawn(async move {
            if sent.await.is_err()
                && let Err(e) = cache.put(key, &page)
            {
                tracing::warn!(error = %e, "page not cached");
            }
        });
        true
    }
}
