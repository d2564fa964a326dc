//! `ferrocrawl index rebuild`: the local search index made again from the page cache,
//! while the server is stopped (here, beside the page pipeline it reuses). Each cached
//! page is converted as a default scrape would (main content as Markdown) and indexed in
//! batches; the old index is emptied first. Pages are what the cache holds, so what the
//! retention removed stays out.

use url::Url;

use super::document::{self, PageInput};
use crate::config::Settings;
use crate::documents::Limits;
use crate::model::ScrapeOptions;
use crate::search::indexer::BATCH;
use crate::search::{IndexedPage, SearchIndex};
use crate::store::{CacheKey, PageCache, Store};

/// Rebuilds `index` from `store`'s page cache; returns how many pages it holds now.
pub fn rebuild(store: &Store, index: &SearchIndex, settings: &Settings) -> anyhow::Result<usize> {
    index.clear()?;
    // Every cached page is indexed below: what waited for the server's indexer too.
    store.index_backlog.clear()?;
    fill(store, index, settings)
}

/// Indexes every page of `store`'s page cache into `index` (replacing their entries);
/// returns how many. A server runs it by itself when it finds an empty index beside a
/// filled cache (a data directory of a release without the index, or an index set aside).
pub fn fill(store: &Store, index: &SearchIndex, settings: &Settings) -> anyhow::Result<usize> {
    let limits = crate::documents::Limits::of(&settings.documents);
    let mut batch: Vec<IndexedPage> = Vec::with_capacity(BATCH);
    let mut indexed = 0;
    for key in store.cache.keys()? {
        let Some(entry) = entry_of(&store.cache, key, &limits) else { continue };
        batch.push(entry);
        if batch.len() == BATCH {
            index.add(&batch)?;
            indexed += batch.len();
            batch.clear();
        }
    }
    index.add(&batch)?;
    index.commit()?;
    Ok(indexed + batch.len())
}

/// The index entry of the page `cache` holds under `key`, converted as a default scrape
/// would; `None` when there is none (not cached, not a success, nothing to index).
pub fn entry_of(cache: &PageCache, key: CacheKey, limits: &Limits) -> Option<IndexedPage> {
    let page = cache.get(key).ok()??;
    if !(200..300).contains(&page.status) {
        return None;
    }
    let final_url = Url::parse(&page.final_url).ok()?;
    let input = PageInput {
        source_url: &page.final_url,
        final_url: &final_url,
        status: page.status,
        content_type: page.content_type.as_deref(),
        body: &page.body,
    };
    let built = document::build(&input, &ScrapeOptions::default(), false, limits).ok()?;
    let mut doc = built.document;
    if doc.metadata.url.is_empty() {
        doc.metadata.url.clone_from(&page.final_url);
    }
    crate::search::page::indexed(&doc, page.content_type.as_deref(), &page.body, page.fetched_ms)
}
