//! `ferrocrawl index rebuild`: the local search index made again from the page cache,
//! while the server is stopped (here, beside the page pipeline it reuses). Each cached
//! page is converted as a default scrape would (main content as Markdown) and indexed in
//! batches; the old index is emptied first. Pages are what the cache holds, so what the
//! retention removed stays out.

use url::Url;

use super::document::{self, PageInput};
use crate::config::Settings;
use crate::model::ScrapeOptions;
use crate::search::indexer::BATCH;
use crate::search::{IndexedPage, SearchIndex};
use crate::store::Store;

/// Rebuilds `index` from `store`'s page cache; returns how many pages it holds now.
pub fn rebuild(store: &Store, index: &SearchIndex, settings: &Settings) -> anyhow::Result<usize> {
    index.clear()?;
    fill(store, index, settings)
}

/// Indexes every page of `store`'s page cache into `index` (replacing their entries);
/// returns how many. A server runs it by itself when it finds an empty index beside a
/// filled cache (a data directory of a release without the index, or an index set aside).
pub fn fill(store: &Store, index: &SearchIndex, settings: &Settings) -> anyhow::Result<usize> {
    let options = ScrapeOptions::default();
    let limits = settings.documents.limits();
    let mut batch: Vec<IndexedPage> = Vec::with_capacity(BATCH);
    let mut indexed = 0;
    for key in store.cache.keys()? {
        let Some(page) = store.cache.get(key)? else { continue };
        if !(200..300).contains(&page.status) {
            continue;
        }
        let Ok(final_url) = Url::parse(&page.final_url) else { continue };
        let input = PageInput {
            source_url: &page.final_url,
            final_url: &final_url,
            status: page.status,
            content_type: page.content_type.as_deref(),
            body: &page.body,
        };
        let Ok(built) = document::build(&input, &options, false, &limits) else { continue };
        let mut doc = built.document;
        if doc.metadata.url.is_empty() {
            doc.metadata.url.clone_from(&page.final_url);
        }
        let Some(entry) =
            crate::search::page::indexed(&doc, page.content_type.as_deref(), &page.body, page.fetched_ms)
        else {
            continue;
        };
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
