//! The browser engine: a pool of Chromium processes (the system's `chromium`), started on
//! first use and restarted when one dies, handing out tabs, each in its own incognito
//! context whose only way out is the address-checking [`proxy`]: a fresh one, or for a
//! plain scrape a cleaned one an earlier plain scrape left ([`warm`]). [`render`] loads a page
//! in a tab (emulation, smart wait, actions, screenshot, branding); interact sessions keep
//! a tab open. The `BrowserSupervisor` actor owns the pool's lifecycle.

pub mod actions;
pub mod adblock;
pub mod branding;
pub mod launch;
mod processes;
pub mod proxy;
pub mod render;
pub mod tab;
pub mod warm;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, OnceCell, Semaphore};

use super::guard::AddressPolicy;
use crate::config::Settings;
use launch::Instance;
use proxy::GuardProxy;
pub use render::{RenderRequest, Rendered, Shot};
pub use tab::Tab;
pub use warm::WarmKey;

/// Longest a stopping server waits for a browser to close itself.
const CLOSE_WAIT: Duration = Duration::from_secs(3);

/// Why the browser could not serve a request.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// No Chromium on this server.
    #[error("{0}")]
    Unavailable(String),
    /// The browser or the DevTools connection failed.
    #[error("the browser failed: {0}")]
    Failed(String),
    /// The target address is not allowed.
    #[error("{host} resolves to an address that is not allowed")]
    Blocked {
        /// The refused host.
        host: String,
    },
    /// The target's name does not resolve.
    #[error("could not resolve {host}")]
    Dns {
        /// The host.
        host: String,
    },
    /// Loading the page failed (connection refused, TLS, ...).
    #[error("loading the page failed: {0}")]
    Navigation(String),
    /// A page action failed.
    #[error("actions[{index}] ({kind}): {message}")]
    Action {
        /// Position of the action in the request.
        index: usize,
        /// Its type.
        kind: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl From<chromiumoxide::error::CdpError> for BrowserError {
    fn from(e: chromiumoxide::error::CdpError) -> Self {
        Self::Failed(e.to_string())
    }
}

/// The pool; cheap to clone.
#[derive(Debug, Clone)]
pub struct BrowserPool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    executable: Result<PathBuf, String>,
    launch_timeout: Duration,
    profiles: PathBuf,
    policy: Arc<AddressPolicy>,
    proxy: OnceCell<GuardProxy>,
    /// The operator's enhanced proxy, and the guard that goes through it.
    enhanced_url: Option<url::Url>,
    enhanced: OnceCell<GuardProxy>,
    slots: Vec<Mutex<Option<Arc<Instance>>>>,
    permits: Arc<Semaphore>,
    /// Tabs the pool holds at most.
    capacity: usize,
    /// Callers waiting for a tab.
    waiting: std::sync::atomic::AtomicUsize,
    launches: AtomicU64,
    /// Tabs left by plain scrapes, cleaned, for the next ones.
    shelf: Arc<warm::Shelf>,
}

/// How busy the pool is now (for metrics).
#[derive(Debug, Clone, Copy)]
pub struct PoolLoad {
    /// Live Chromium processes.
    pub browsers: usize,
    /// Tabs the pool holds at most.
    pub capacity: usize,
    /// Tabs open now.
    pub busy: usize,
    /// Callers waiting for a tab.
    pub waiting: usize,
    /// Cleaned tabs waiting for the next plain scrape.
    pub shelved: usize,
    /// Scrapes served by a reused tab so far.
    pub reused: u64,
}

impl BrowserPool {
    /// A pool per `settings.browser`, checking addresses with `policy`. Nothing starts yet;
    /// profile directories left by a process that was killed are removed.
    pub fn new(settings: &Settings, policy: Arc<AddressPolicy>) -> Self {
        let b = &settings.browser;
        let _ = std::fs::remove_dir_all(settings.storage.data_dir.join("chromium"));
        let inner = Inner {
            executable: launch::find_executable(&b.executable),
            launch_timeout: Duration::from_millis(b.launch_timeout_ms),
            profiles: settings.storage.data_dir.join("chromium"),
            policy,
            proxy: OnceCell::new(),
            enhanced_url: settings.enhanced_proxy().and_then(|u| url::Url::parse(u).ok()),
            enhanced: OnceCell::new(),
            slots: (0..b.pool_size).map(|_| Mutex::new(None)).collect(),
            permits: Arc::new(Semaphore::new(b.pool_size * b.tabs_per_browser)),
            capacity: b.pool_size * b.tabs_per_browser,
            waiting: std::sync::atomic::AtomicUsize::new(0),
            launches: AtomicU64::new(0),
            shelf: Arc::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Whether Chromium is installed; the error names the package.
    pub fn available(&self) -> Result<(), BrowserError> {
        self.inner.executable.as_ref().map(|_| ()).map_err(|e| BrowserError::Unavailable(e.clone()))
    }

    /// The outbound address policy pages are held to.
    pub fn policy(&self) -> &AddressPolicy {
        &self.inner.policy
    }

    /// Whether an enhanced proxy is configured for pages to go through.
    pub fn has_enhanced_proxy(&self) -> bool {
        self.inner.enhanced_url.is_some()
    }

    /// Opens a tab in a fresh incognito context, waiting for a free place in the pool; with
    /// `enhanced` (and an enhanced proxy configured), its requests go through that proxy.
    pub async fn open_tab(&self, enhanced: bool) -> Result<Tab, BrowserError> {
        self.open(enhanced, None).await
    }

    /// A tab for a plain scrape presenting itself as `key`: a cleaned one from the shelf
    /// when there is one (see [`warm`]), else a fresh one that goes on the shelf after.
    pub async fn open_warm(&self, key: WarmKey) -> Result<Tab, BrowserError> {
        self.open(key.enhanced, Some(key)).await
    }

    async fn open(&self, enhanced: bool, key: Option<WarmKey>) -> Result<Tab, BrowserError> {
        let executable = self.inner.executable.as_ref().map_err(|e| BrowserError::Unavailable(e.clone()))?;
        self.inner.waiting.fetch_add(1, Ordering::Relaxed);
        let permit = Arc::clone(&self.inner.permits).acquire_owned().await;
        self.inner.waiting.fetch_sub(1, Ordering::Relaxed);
        let permit = permit.map_err(|_| BrowserError::Failed("the browser pool is closed".into()))?;
        let shelf = &self.inner.shelf;
        if let Some(idle) = key.as_ref().and_then(|key| shelf.take(key)) {
            return Ok(Tab::from_shelf(idle, Arc::clone(shelf), permit));
        }
        // Open tabs stay within the pool's capacity: busy ones (this one too) and shelved.
        let busy = self.inner.capacity.saturating_sub(self.inner.permits.available_permits());
        shelf.trim(self.inner.capacity.saturating_sub(busy));
        let instance = self.instance(executable).await?;
        let policy = || Arc::clone(&self.inner.policy);
        let proxy = match self.inner.enhanced_url.as_ref().filter(|_| enhanced) {
            Some(url) => self.inner.enhanced.get_or_try_init(|| GuardProxy::start(policy(), Some(url))).await,
            None => self.inner.proxy.get_or_try_init(|| GuardProxy::start(policy(), None)).await,
        }
        .map_err(|e| BrowserError::Failed(format!("starting the browser proxy: {e}")))?;
        let watched = Arc::clone(&instance);
        let server = proxy.server();
        let mut tab = tokio::select! {
            tab = Tab::open(instance, &server, permit) => tab,
            () = watched.died() => Err(BrowserError::Failed("the browser process died".into())),
        }?;
        if let Some(key) = key {
            tab.shelve_to(key, Arc::clone(shelf));
        }
        Ok(tab)
    }

    /// The least busy live browser, starting one in an empty or dead slot when needed.
    async fn instance(&self, executable: &std::path::Path) -> Result<Arc<Instance>, BrowserError> {
        let mut best: Option<(usize, usize)> = None;
        for (i, slot) in self.inner.slots.iter().enumerate() {
            let load = match &*slot.lock().await {
                Some(instance) if instance.is_alive() => instance.tabs.load(Ordering::SeqCst),
                // An empty or dead slot is filled by the next caller that picks it.
                _ => 0,
            };
            if best.is_none_or(|(_, l)| load < l) {
                best = Some((i, load));
            }
        }
        let (index, _) = best.ok_or_else(|| BrowserError::Failed("the browser pool is empty".into()))?;
        let mut slot = self.inner.slots[index].lock().await;
        if let Some(instance) = slot.as_ref().filter(|i| i.is_alive()) {
            instance.tabs.fetch_add(1, Ordering::SeqCst);
            return Ok(Arc::clone(instance));
        }
        if slot.is_some() {
            tracing::warn!(slot = index, "a Chromium process died; starting a new one");
        }
        let instance = Arc::new(
            Instance::launch(executable, self.inner.launch_timeout, &self.inner.profiles)
                .await
                .map_err(BrowserError::Failed)?,
        );
        self.inner.launches.fetch_add(1, Ordering::SeqCst);
        tracing::info!(slot = index, pid = ?instance.pid(), "Chromium started");
        instance.tabs.fetch_add(1, Ordering::SeqCst);
        *slot = Some(Arc::clone(&instance));
        Ok(instance)
    }

    /// Process ids of the running browsers.
    pub async fn pids(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        for slot in &self.inner.slots {
            if let Some(pid) = slot.lock().await.as_ref().filter(|i| i.is_alive()).and_then(|i| i.pid()) {
                pids.push(pid);
            }
        }
        pids
    }

    /// How busy the pool is now.
    pub async fn load(&self) -> PoolLoad {
        let inner = &self.inner;
        PoolLoad {
            browsers: self.pids().await.len(),
            capacity: inner.capacity,
            busy: inner.capacity.saturating_sub(inner.permits.available_permits()),
            waiting: inner.waiting.load(Ordering::Relaxed),
            shelved: inner.shelf.len(),
            reused: inner.shelf.reused(),
        }
    }

    /// How many Chromium processes were started so far.
    pub fn launches(&self) -> u64 {
        self.inner.launches.load(Ordering::SeqCst)
    }

    /// Replaces dead browsers now instead of on the next request (called periodically).
    pub async fn heal(&self) {
        for slot in &self.inner.slots {
            let mut slot = slot.lock().await;
            if slot.as_ref().is_some_and(|i| !i.is_alive()) {
                tracing::warn!("a Chromium process died; it will be restarted on next use");
                *slot = None;
            }
        }
    }

    /// Stops every browser, each closed by itself (see [`Instance::close`]) before its
    /// profile directory is removed.
    pub async fn shutdown(&self) {
        self.inner.shelf.clear().await;
        let mut running = Vec::new();
        for slot in &self.inner.slots {
            running.extend(slot.lock().await.take());
        }
        futures::future::join_all(running.iter().map(|instance| instance.close(CLOSE_WAIT))).await;
    }
}
