//! Rendering one page: set the tab up, navigate, wait smartly (network idle and a quiet DOM,
//! bounded), add `waitFor`, run the actions, then capture the HTML, the screenshot and the
//! branding. A browser that dies mid-way gets the work tried again on another one.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived, ResourceType,
};
use futures::StreamExt;
use tokio::time::Instant;
use url::Url;

use super::proxy::BLOCKED_HEADER;
use super::tab::{Presentation, Tab};
use super::{BrowserError, BrowserPool, WarmKey, actions, adblock, branding, warm};
use crate::model::actions::ScreenshotSpec;
use crate::model::document::{PageSnapshot, ScriptValue};
use crate::model::{Action, Location};
use crate::scrape::engine::guard::ResolveError;
use crate::store::profiles::ProfileState;

/// Times a render whose browser died is tried again. Twice: a crash that takes every
/// browser of the pool (the machine short of memory) may leave a second browser whose death
/// is not yet noticed when the first retry picks it.
const RENDER_RETRIES: usize = 2;

/// The network must be idle this long to count as settled.
const NETWORK_QUIET: Duration = Duration::from_millis(300);
/// The DOM must be unchanged this long (ms) to count as settled.
const DOM_QUIET_MS: f64 = 300.0;
/// Poll interval of the smart wait.
const POLL: Duration = Duration::from_millis(50);

/// Records when the DOM last changed, for the smart wait.
const MUTATION_SCRIPT: &str = "(() => { window.__fcLastMutation = performance.now(); \
    new MutationObserver(() => { window.__fcLastMutation = performance.now(); })\
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true }); })();";

/// What to render and how.
#[derive(Debug, Clone)]
pub struct RenderRequest<'a> {
    /// The page.
    pub url: &'a Url,
    /// Request headers (a `Cookie` header becomes cookies).
    pub headers: &'a [(String, String)],
    /// Emulate a phone.
    pub mobile: bool,
    /// Locale and time zone.
    pub location: Option<&'a Location>,
    /// Block ads and hide cookie banners.
    pub block_ads: bool,
    /// Extra wait after the smart wait (ms).
    pub wait_for_ms: u64,
    /// Actions to run before capture.
    pub actions: &'a [Action],
    /// Screenshot of the final page.
    pub screenshot: Option<ScreenshotSpec>,
    /// Compute the branding.
    pub branding: bool,
    /// User agent to present.
    pub user_agent: &'a str,
    /// Saved profile to start from.
    pub profile: Option<&'a ProfileState>,
    /// Return the profile state afterwards (to save it).
    pub save_profile: bool,
    /// Longest smart wait.
    pub smart_wait_max: Duration,
    /// When the whole render must be done.
    pub deadline: Instant,
    /// Accept any certificate (`skipTlsVerification`).
    pub skip_tls_verification: bool,
    /// Go through the enhanced proxy (`proxy: enhanced`, when one is configured).
    pub enhanced: bool,
}

impl RenderRequest<'_> {
    /// How the tab presents itself, when this is a plain scrape that may use a reused tab:
    /// no request headers or cookies, location, profile or actions.
    pub fn warm_key(&self) -> Option<WarmKey> {
        let plain = self.headers.is_empty()
            && self.location.is_none()
            && self.profile.is_none()
            && !self.save_profile
            && self.actions.is_empty();
        plain.then(|| WarmKey {
            user_agent: self.user_agent.to_owned(),
            mobile: self.mobile,
            block_ads: self.block_ads,
            skip_tls_verification: self.skip_tls_verification,
            enhanced: self.enhanced,
        })
    }
}

/// An encoded image.
#[derive(Debug, Clone)]
pub struct Shot {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// `image/png` or `image/jpeg`.
    pub mime: &'static str,
}

/// Action outputs before files are stored.
#[derive(Debug, Clone, Default)]
pub struct RawActionResults {
    /// Screenshots.
    pub screenshots: Vec<Shot>,
    /// HTML snapshots.
    pub scrapes: Vec<PageSnapshot>,
    /// Script values.
    pub javascript_returns: Vec<ScriptValue>,
    /// PDFs.
    pub pdfs: Vec<Vec<u8>>,
}

/// A rendered page.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// URL after redirects (and actions).
    pub final_url: Url,
    /// Status of the main document.
    pub status: u16,
    /// Its content type.
    pub content_type: Option<String>,
    /// Whether the main document is not HTML (the caller should fetch it over HTTP instead).
    pub not_html: bool,
    /// The DOM as HTML.
    pub html: String,
    /// The screenshot format's image.
    pub screenshot: Option<Shot>,
    /// Action outputs.
    pub actions: RawActionResults,
    /// Branding, when asked for.
    pub branding: Option<serde_json::Value>,
    /// Profile state to save, when asked for.
    pub profile: Option<ProfileState>,
}

impl BrowserPool {
    /// Renders a page; tried again on another browser when the browser died during the
    /// work, up to [`RENDER_RETRIES`] times.
    pub async fn render(&self, request: &RenderRequest<'_>) -> Result<Rendered, BrowserError> {
        self.check_target(request.url).await?;
        let mut retries = 0;
        loop {
            match self.render_once(request).await {
                (Err(BrowserError::Failed(error)), true) if retries < RENDER_RETRIES => {
                    retries += 1;
                    tracing::warn!(%error, retries, "the browser died while rendering; trying again");
                }
                (result, _) => return result,
            }
        }
    }

    /// One attempt in a new tab, and whether its browser died (or could not be reached).
    async fn render_once(&self, request: &RenderRequest<'_>) -> (Result<Rendered, BrowserError>, bool) {
        let opened = match request.warm_key() {
            Some(key) => self.open_warm(key).await,
            None => self.open_tab(request.enhanced).await,
        };
        let tab = match opened {
            Ok(tab) => tab,
            Err(e) => {
                let died = matches!(e, BrowserError::Failed(_));
                return (Err(e), died);
            }
        };
        let result = watched_render(&tab, request).await;
        let died = !tab.browser_alive();
        tab.release(result.is_ok() && !died).await;
        (result, died)
    }

    /// Opens a tab and brings the page to the state a render of `request` reaches before
    /// capture (emulation, navigation, smart wait, `waitFor`, actions); for interact sessions.
    /// Action outputs are discarded.
    pub async fn replay(&self, request: &RenderRequest<'_>) -> Result<Tab, BrowserError> {
        self.check_target(request.url).await?;
        let tab = self.open_tab(request.enhanced).await?;
        match prepare(&tab, request).await {
            Ok(_) => Ok(tab),
            Err(e) => {
                tab.close().await;
                Err(e)
            }
        }
    }

    /// A blank tab for a session made without a scrape, starting from `profile`'s cookies
    /// and storage when given.
    pub async fn blank(&self, user_agent: &str, profile: Option<&ProfileState>) -> Result<Tab, BrowserError> {
        let tab = self.open_tab(false).await?;
        let how = Presentation {
            user_agent,
            mobile: false,
            location: None,
            headers: &[],
            block_ads: false,
            url: None,
            profile,
            skip_tls_verification: false,
        };
        match tab.present(&how).await {
            Ok(()) => Ok(tab),
            Err(e) => {
                tab.close().await;
                Err(e)
            }
        }
    }

    /// Refuses targets the address policy forbids, before any browser work.
    pub async fn check_target(&self, url: &Url) -> Result<(), BrowserError> {
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        match self.policy().resolve(host, port).await {
            Ok(_) => Ok(()),
            Err(ResolveError::Blocked { host }) => Err(BrowserError::Blocked { host }),
            Err(ResolveError::NotFound { host, .. }) => Err(BrowserError::Dns { host }),
        }
    }
}

/// The page state before capture: main document status and type, and the action outputs.
struct Prepared {
    status: u16,
    content_type: Option<String>,
    actions: RawActionResults,
}

/// Sets the tab up, navigates, waits and runs the actions.
async fn prepare(tab: &Tab, request: &RenderRequest<'_>) -> Result<Prepared, BrowserError> {
    if tab.reused() {
        // Presented as this request asks when it was opened; only the viewport may differ.
        tab.emulate_screen(request.mobile).await?;
    } else {
        tab.present(&Presentation {
            user_agent: request.user_agent,
            mobile: request.mobile,
            location: request.location,
            headers: request.headers,
            block_ads: request.block_ads,
            url: Some(request.url),
            profile: request.profile,
            skip_tls_verification: request.skip_tls_verification,
        })
        .await?;
        tab.add_script(MUTATION_SCRIPT).await?;
    }
    let (status, content_type, blocked) =
        navigate(tab, request.url, request.smart_wait_max, request.deadline).await?;
    if blocked {
        return Err(BrowserError::Blocked { host: request.url.host_str().unwrap_or_default().to_owned() });
    }
    if request.wait_for_ms > 0 {
        tokio::time::sleep_until(
            (Instant::now() + Duration::from_millis(request.wait_for_ms)).min(request.deadline),
        )
        .await;
    }
    let actions = actions::run(tab, request.actions, request.smart_wait_max, request.deadline).await?;
    Ok(Prepared { status, content_type, actions })
}

/// [`render_in`], ended early when the browser dies.
async fn watched_render(tab: &Tab, request: &RenderRequest<'_>) -> Result<Rendered, BrowserError> {
    tokio::select! {
        result = render_in(tab, request) => result,
        () = tab.browser_died() => Err(BrowserError::Failed("the browser process died".into())),
    }
}

/// The whole render in one tab.
async fn render_in(tab: &Tab, request: &RenderRequest<'_>) -> Result<Rendered, BrowserError> {
    let Prepared { status, content_type, actions } = prepare(tab, request).await?;
    let not_html = content_type.as_deref().is_some_and(|t| !is_markup(t));
    let page = tab.page();
    if request.block_ads {
        let _ = page.evaluate(adblock::remove_banners_script()).await;
    }
    let screenshot = match request.screenshot {
        Some(spec) => Some(actions::screenshot(page, spec).await?),
        None => None,
    };
    let branding = if request.branding { Some(branding::compute(page).await?) } else { None };
    let html = page.content().await?;
    let final_url =
        page.url().await?.and_then(|u| Url::parse(&u).ok()).unwrap_or_else(|| request.url.clone());
    let profile =
        if request.save_profile { Some(tab.snapshot_profile(request.profile).await?) } else { None };
    Ok(Rendered { final_url, status, content_type, not_html, html, screenshot, actions, branding, profile })
}

fn is_markup(content_type: &str) -> bool {
    let t = content_type.to_ascii_lowercase();
    t.contains("html") || t.contains("xml") || t.starts_with("text/")
}

/// Loads `url` and waits for it to settle; returns the main document's status and type,
/// and whether the proxy refused it.
pub async fn navigate(
    tab: &Tab,
    url: &Url,
    smart_wait_max: Duration,
    deadline: Instant,
) -> Result<(u16, Option<String>, bool), BrowserError> {
    let page = tab.page();
    let network = NetworkWatch::start(page).await?;
    tab.visited(warm::origin_of(url));
    let outcome = tokio::time::timeout_at(deadline, page.goto(url.as_str())).await;
    match outcome {
        Err(_) => {
            network.stop();
            return Err(BrowserError::Navigation("the page did not load in time".into()));
        }
        Ok(Err(e)) => {
            network.stop();
            let text = e.to_string();
            return Err(if text.contains("ERR_NAME_NOT_RESOLVED") {
                BrowserError::Dns { host: url.host_str().unwrap_or_default().to_owned() }
            } else {
                BrowserError::Navigation(text)
            });
        }
        Ok(Ok(_)) => {}
    }
    let main_frame = page.mainframe().await?;
    settle(tab, &network, smart_wait_max, deadline).await;
    network.stop();
    for origin in network.document_origins() {
        tab.visited(origin);
    }
    let document = main_frame.and_then(|frame| network.document_of(frame.inner()));
    let Some(document) = document else { return Ok((200, None, false)) };
    Ok((document.status, Some(document.mime_type), document.blocked))
}

/// Waits until the network is idle and the DOM quiet, or `smart_wait_max` passes.
///
/// The network is watched here (no question to the page): while a request is in flight
/// the wait checks again every [`POLL`], and once none is, it sleeps until the network
/// has been quiet for [`NETWORK_QUIET`]. Only then is the page asked how long its DOM has
/// been unchanged, and the wait sleeps for what is missing of [`DOM_QUIET_MS`]. A page
/// that settles at once is asked once, at the moment it has settled.
pub async fn settle(tab: &Tab, network: &NetworkWatch, smart_wait_max: Duration, deadline: Instant) {
    let until = (Instant::now() + smart_wait_max).min(deadline);
    loop {
        let idle = network.idle_for();
        let wait = if idle.is_zero() {
            POLL
        } else if idle < NETWORK_QUIET {
            NETWORK_QUIET - idle
        } else {
            let unchanged_ms = tab
                .page()
                .evaluate("performance.now() - (window.__fcLastMutation || 0)")
                .await
                .ok()
                .and_then(|v| v.into_value::<f64>().ok());
            match unchanged_ms {
                Some(ms) if ms < DOM_QUIET_MS => Duration::from_secs_f64((DOM_QUIET_MS - ms) / 1000.0),
                // Quiet (or a page that cannot say), and the network still is.
                _ if network.idle_for() >= NETWORK_QUIET => return,
                _ => POLL,
            }
        };
        let wake = Instant::now() + wait;
        tokio::time::sleep_until(wake.min(until)).await;
        if wake >= until {
            return;
        }
    }
}

/// The response that delivered a frame's document.
#[derive(Debug, Clone)]
pub struct DocumentResponse {
    frame: String,
    /// Origin of the document.
    origin: Option<String>,
    status: u16,
    mime_type: String,
    blocked: bool,
}

/// What the network watch has seen.
#[derive(Debug)]
struct Traffic {
    in_flight: HashSet<String>,
    changed: Instant,
    documents: Vec<DocumentResponse>,
}

/// Counts the page's requests in flight from DevTools network events, and keeps the
/// responses that delivered documents (the page's status code and type).
#[derive(Debug)]
pub struct NetworkWatch {
    state: Arc<Mutex<Traffic>>,
    task: tokio::task::JoinHandle<()>,
}

impl NetworkWatch {
    /// Starts watching `page`.
    pub async fn start(page: &chromiumoxide::Page) -> Result<Self, BrowserError> {
        let mut sent = page.event_listener::<EventRequestWillBeSent>().await?;
        let mut finished = page.event_listener::<EventLoadingFinished>().await?;
        let mut failed = page.event_listener::<EventLoadingFailed>().await?;
        let mut responses = page.event_listener::<EventResponseReceived>().await?;
        let traffic = Traffic { in_flight: HashSet::new(), changed: Instant::now(), documents: Vec::new() };
        let state = Arc::new(Mutex::new(traffic));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let (id, starts) = tokio::select! {
                    Some(e) = responses.next() => {
                        if e.r#type == ResourceType::Document {
                            let headers = e.response.headers.inner();
                            let blocked = headers
                                .as_object()
                                .is_some_and(|m| m.keys().any(|k| k.eq_ignore_ascii_case(BLOCKED_HEADER)));
                            let document = DocumentResponse {
                                frame: e.frame_id.as_ref().map(|f| f.inner().clone()).unwrap_or_default(),
                                origin: Url::parse(&e.response.url).ok().map(|u| warm::origin_of(&u)),
                                status: u16::try_from(e.response.status).unwrap_or(200),
                                mime_type: e.response.mime_type.clone(),
                                blocked,
                            };
                            let mut guard = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            guard.documents.push(document);
                        }
                        continue;
                    }
                    Some(e) = sent.next() => {
                        // Long-lived connections never finish; they do not keep a page busy.
                        if matches!(e.r#type, Some(ResourceType::WebSocket | ResourceType::EventSource)) {
                            continue;
                        }
                        (e.request_id.inner().clone(), true)
                    }
                    Some(e) = finished.next() => (e.request_id.inner().clone(), false),
                    Some(e) = failed.next() => (e.request_id.inner().clone(), false),
                    else => break,
                };
                let mut guard = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if starts {
                    guard.in_flight.insert(id);
                } else {
                    guard.in_flight.remove(&id);
                }
                guard.changed = Instant::now();
            }
        });
        Ok(Self { state, task })
    }

    /// How long no request has been in flight (zero while one is).
    pub fn idle_for(&self) -> Duration {
        let guard = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.in_flight.is_empty() { guard.changed.elapsed() } else { Duration::ZERO }
    }

    /// The last response that delivered `frame`'s document.
    pub fn document_of(&self, frame: &str) -> Option<DocumentResponse> {
        let guard = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.documents.iter().rev().find(|d| d.frame == frame).cloned()
    }

    /// Origins of the documents loaded so far, in any frame.
    pub fn document_origins(&self) -> Vec<String> {
        let guard = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.documents.iter().filter_map(|d| d.origin.clone()).collect()
    }

    /// Stops watching.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for NetworkWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
