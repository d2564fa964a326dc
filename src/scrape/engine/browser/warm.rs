//! Warm tabs: a plain browser scrape (no request headers or cookies, no location, profile
//! or actions) reuses a tab that an earlier plain scrape left, instead of a fresh incognito
//! context. A fresh context costs Chromium a new renderer process and a new page; a warm
//! tab keeps both, so the next scrape starts with a navigation.
//!
//! A tab goes back on the shelf only once everything the last page left is gone: the
//! session storage of every origin it showed (read from the frame tree and the documents
//! the page loaded), then, with the page replaced by `about:blank` (from the page itself, so
//! its renderer process stays), the tab's name and history, the context's cookies and HTTP
//! cache, and every kind of stored data (local storage, IndexedDB, service workers, cache
//! storage, …) of those origins. A tab whose context holds another page (a
//! popup), whose cleaning fails or takes too long, or that served [`MAX_USES`] scrapes is
//! closed instead. Tabs are shelved by how they present themselves ([`WarmKey`]), so a
//! reused tab already has the user agent, emulation, ad blocking and certificate rule of
//! the request.
//!
//! The shelf holds at most as many tabs as the pool's capacity counts, busy ones included:
//! a fresh tab opened while the pool is full of shelved tabs closes the oldest of them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::dom_storage::{self, StorageId};
use chromiumoxide::cdp::browser_protocol::network::{ClearBrowserCacheParams, ClearBrowserCookiesParams};
use chromiumoxide::cdp::browser_protocol::page::{
    FrameTree, GetFrameTreeParams, ResetNavigationHistoryParams,
};
use chromiumoxide::cdp::browser_protocol::storage::ClearDataForOriginParams;
use chromiumoxide::cdp::browser_protocol::target::GetTargetsParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use tokio::sync::OwnedSemaphorePermit;

use super::BrowserError;
use super::launch::Instance;

/// Scrapes a tab serves at most before it is closed (a renderer's own leaks stay bounded).
pub const MAX_USES: u32 = 100;

/// Longest time cleaning a tab may take; past it the tab is closed instead.
const CLEAN_TIMEOUT: Duration = Duration::from_secs(5);

/// How a tab presents itself: a shelved tab serves only requests with the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmKey {
    /// User agent.
    pub user_agent: String,
    /// Phone emulation.
    pub mobile: bool,
    /// Ads and trackers blocked, banners hidden.
    pub block_ads: bool,
    /// Any certificate accepted.
    pub skip_tls_verification: bool,
    /// Through the enhanced proxy.
    pub enhanced: bool,
}

/// A tab on the shelf.
#[derive(Debug)]
pub(super) struct Idle {
    pub(super) key: WarmKey,
    pub page: Page,
    pub context: BrowserContextId,
    pub instance: Arc<Instance>,
    pub uses: u32,
}

/// Tabs waiting for their next plain scrape, oldest first.
#[derive(Debug, Default)]
pub(super) struct Shelf {
    idle: Mutex<Vec<Idle>>,
    reused: std::sync::atomic::AtomicU64,
}

/// What a tab that may go back on the shelf carries.
#[derive(Debug)]
pub(super) struct Warmth {
    pub(super) key: WarmKey,
    pub shelf: Arc<Shelf>,
    pub uses: u32,
    /// Origins of the documents the tab showed since it was last cleaned.
    pub origins: Mutex<BTreeSet<String>>,
}

impl Shelf {
    /// Takes a shelved tab of `key` on a live browser; shelved tabs of dead browsers go.
    pub(super) fn take(&self, key: &WarmKey) -> Option<Idle> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.retain(|tab| {
            let alive = tab.instance.is_alive();
            if !alive {
                tab.instance.tabs.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            alive
        });
        let index = idle.iter().rposition(|tab| &tab.key == key)?;
        self.reused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(idle.remove(index))
    }

    /// Closes the oldest shelved tabs until at most `keep` remain.
    pub(super) fn trim(&self, keep: usize) {
        let surplus: Vec<Idle> = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            let over = idle.len().saturating_sub(keep);
            idle.drain(..over).collect()
        };
        for tab in surplus {
            tokio::spawn(super::tab::close_in(tab.page, tab.instance, tab.context));
        }
    }

    /// Tabs on the shelf.
    pub(super) fn len(&self) -> usize {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Scrapes served by a shelved tab so far.
    pub(super) fn reused(&self) -> u64 {
        self.reused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Cleans `tab` and shelves it, or closes it when it cannot be made clean; the pool
    /// place (`permit`) is freed only after, so the next request finds it on the shelf.
    pub(super) async fn put_back(
        self: Arc<Self>,
        tab: Idle,
        origins: BTreeSet<String>,
        permit: OwnedSemaphorePermit,
    ) {
        let started = std::time::Instant::now();
        let cleaned = tab.uses < MAX_USES && tab.instance.is_alive() && {
            let work = clean(&tab.page, &tab.instance, &tab.context, origins);
            match tokio::time::timeout(CLEAN_TIMEOUT, work).await {
                Ok(Ok(())) => true,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "a tab could not be cleaned; closing it");
                    false
                }
                Err(_) => {
                    tracing::debug!("cleaning a tab took too long; closing it");
                    false
                }
            }
        };
        tracing::debug!(cleaned, elapsed_ms = started.elapsed().as_millis() as u64, "a tab came back");
        if cleaned {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(tab);
        } else {
            super::tab::close_in(tab.page, tab.instance, tab.context).await;
        }
        drop(permit);
    }

    /// Closes every shelved tab.
    pub(super) async fn clear(&self) {
        let all: Vec<Idle> = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for tab in all {
            super::tab::close_in(tab.page, tab.instance, tab.context).await;
        }
    }
}

/// Removes what the last page left in `page` and its `context`; an error when it cannot
/// be sure it did.
async fn clean(
    page: &Page,
    instance: &Instance,
    context: &BrowserContextId,
    mut origins: BTreeSet<String>,
) -> Result<(), BrowserError> {
    let tree = page.execute(GetFrameTreeParams::default()).await?.result.frame_tree;
    frame_origins(&tree, &mut origins);
    origins.retain(|origin| origin.starts_with("http"));
    // Session storage belongs to the tab, not the context: cleared while the page shows it.
    for origin in &origins {
        let id =
            StorageId { security_origin: Some(origin.clone()), storage_key: None, is_local_storage: false };
        page.execute(dom_storage::ClearParams::new(id)).await?;
    }
    blank(page).await?;
    page.execute(ResetNavigationHistoryParams::default()).await?;
    page.execute(ClearBrowserCookiesParams::default()).await?;
    page.execute(ClearBrowserCacheParams::default()).await?;
    for origin in &origins {
        page.execute(ClearDataForOriginParams::new(origin.clone(), "all")).await?;
    }
    let targets = instance.browser.execute(GetTargetsParams::default()).await?.result.target_infos;
    let others = targets
        .iter()
        .filter(|t| t.r#type == "page" && t.browser_context_id.as_ref() == Some(context))
        .filter(|t| &t.target_id != page.target_id())
        .count();
    if others > 0 {
        return Err(BrowserError::Failed(format!("{others} other pages opened in the tab's context")));
    }
    Ok(())
}

/// Replaces the page with a blank one, from the page itself: a blank page asked for by the
/// browser would take a new renderer process (and the next page another), which is what a
/// warm tab saves. Done once the page shows `about:blank` (the last page and its scripts
/// are gone) and its name is cleared.
async fn blank(page: &Page) -> Result<(), BrowserError> {
    let location = || EvaluateParams { return_by_value: Some(true), ..EvaluateParams::new("location.href") };
    page.execute(EvaluateParams::new("location.replace('about:blank')")).await?;
    loop {
        // Errors while the documents change (the old context is destroyed) are retried.
        if let Ok(answer) = page.execute(location()).await
            && answer.result.result.value.as_ref().and_then(serde_json::Value::as_str) == Some("about:blank")
        {
            // The tab's name outlives its documents (on the same site).
            page.execute(EvaluateParams::new("window.name = ''")).await?;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Adds the origin of every frame in `tree`.
fn frame_origins(tree: &FrameTree, into: &mut BTreeSet<String>) {
    into.insert(tree.frame.security_origin.clone());
    for child in tree.child_frames.iter().flatten() {
        frame_origins(child, into);
    }
}

/// The origin of `url` as a frame's `securityOrigin` spells it.
pub fn origin_of(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}
