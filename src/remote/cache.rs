//! The page cache across the cluster, the asking side: each page is cached on the node that
//! owns its site ([`SiteCaches`], the cluster's [`PageKeeper`]), so a scrape through any
//! node reads and fills that node's cache. The answering side is [`super::answer`].

use std::time::Duration;

use futures::future::BoxFuture;

use super::ask;
use super::messages::jobs::{Request, Response};
use crate::cluster::Cluster;
use crate::scrape::shared_cache::PageKeeper;
use crate::store::{CacheKey, CachedPage};

/// How long a site's node may take over a cached page; then this node's own cache serves
/// (a frozen node holds a scrape that long at most, until it is judged down).
const CACHE_TIMEOUT: Duration = Duration::from_secs(2);

/// The cluster's [`PageKeeper`]: each page is cached on the node that owns its site.
#[derive(Debug)]
pub struct SiteCaches(pub Cluster);

impl SiteCaches {
    /// The node that keeps the cached pages of `url`'s site, when it is another one.
    fn keeper(&self, url: &url::Url) -> Option<String> {
        let origin = crate::actors::sites::origin_of(url)?;
        let owner = self.0.site_owner(origin.as_str());
        (owner != self.0.name()).then_some(owner)
    }
}

impl PageKeeper for SiteCaches {
    fn get<'a>(
        &'a self,
        url: &'a url::Url,
        key: CacheKey,
    ) -> Option<BoxFuture<'a, Result<Option<CachedPage>, String>>> {
        let node = self.keeper(url)?;
        Some(Box::pin(async move {
            match ask(&self.0, &node, &Request::Cached(*key.as_bytes()), CACHE_TIMEOUT).await? {
                Response::CachedPage(page) => Ok(page.map(|page| *page)),
                other => Err(format!("unexpected answer from node `{node}`: {other:?}")),
            }
        }))
    }

    fn put(
        &self,
        url: &url::Url,
        key: CacheKey,
        page: CachedPage,
    ) -> Option<BoxFuture<'static, Result<(), String>>> {
        let node = self.keeper(url)?;
        let cluster = self.0.clone();
        Some(Box::pin(async move {
            let request = Request::Cache { key: *key.as_bytes(), page: Box::new(page) };
            match ask(&cluster, &node, &request, CACHE_TIMEOUT).await? {
                Response::Done => Ok(()),
                other => Err(format!("unexpected answer from node `{node}`: {other:?}")),
            }
        }))
    }
}
