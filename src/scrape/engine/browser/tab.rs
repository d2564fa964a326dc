//! One tab: a page in its own incognito browser context that sends everything through the
//! address-checking proxy. Setting a tab up for a request (device and locale emulation,
//! user agent, headers and cookies, ad blocking, a saved profile) and closing it (the
//! context and its cookies go away) live here.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::emulation::{
    SetDeviceMetricsOverrideParams, SetLocaleOverrideParams, SetTimezoneOverrideParams,
    SetTouchEmulationEnabledParams,
};
use chromiumoxide::cdp::browser_protocol::network::{
    Cookie, CookieParam, Headers, SetBlockedUrLsParams, SetCookiesParams, SetExtraHttpHeadersParams,
    SetUserAgentOverrideParams, TimeSinceEpoch,
};
use chromiumoxide::cdp::browser_protocol::page::AddScriptToEvaluateOnNewDocumentParams;
use chromiumoxide::cdp::browser_protocol::security::SetIgnoreCertificateErrorsParams;
use chromiumoxide::cdp::browser_protocol::storage;
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams, SetAutoAttachParams,
};
use tokio::sync::OwnedSemaphorePermit;

use super::launch::{DESKTOP_VIEWPORT, Instance};
use super::warm::{Idle, Shelf, WarmKey, Warmth};
use super::{BrowserError, adblock};
use crate::model::Location;
use crate::store::profiles::{ProfileState, StoredCookie};

/// Mobile viewport (CSS pixels) and pixel ratio.
const MOBILE_VIEWPORT: (u32, u32, f64) = (390, 844, 3.0);

/// How a tab presents itself for one request.
#[derive(Debug, Clone, Default)]
pub struct Presentation<'a> {
    /// User-Agent header and `navigator.userAgent`.
    pub user_agent: &'a str,
    /// Phone-sized viewport, touch, mobile user agent.
    pub mobile: bool,
    /// Locale and time zone to emulate.
    pub location: Option<&'a Location>,
    /// Extra request headers; a `Cookie` header becomes cookies of the target URL.
    pub headers: &'a [(String, String)],
    /// Block ad and tracker requests and hide cookie banners.
    pub block_ads: bool,
    /// The URL the headers' cookies belong to.
    pub url: Option<&'a url::Url>,
    /// Saved cookies and storage to start from.
    pub profile: Option<&'a ProfileState>,
    /// Accept any certificate (`skipTlsVerification`); else an invalid one fails the load.
    pub skip_tls_verification: bool,
}

/// Where a tab's DevTools connections go.
#[derive(Debug, Clone)]
pub struct DevTools {
    /// The page's own WebSocket address.
    pub page: String,
    /// The browser's WebSocket address (every context of the process).
    pub browser: String,
    /// The tab's incognito context.
    pub context: String,
    /// The page's target.
    pub target: String,
}

/// An open tab; closing it (or dropping it) disposes its context.
#[derive(Debug)]
pub struct Tab {
    page: Page,
    context: Option<BrowserContextId>,
    instance: Arc<Instance>,
    permit: Option<OwnedSemaphorePermit>,
    /// Set when the tab may go back on the shelf for the next plain scrape.
    warm: Option<Warmth>,
}

impl Tab {
    pub(super) async fn open(
        instance: Arc<Instance>,
        proxy: &str,
        permit: OwnedSemaphorePermit,
    ) -> Result<Self, BrowserError> {
        let opened = async {
            let params = CreateBrowserContextParams {
                proxy_server: Some(proxy.to_owned()),
                // Loopback goes through the proxy too, so the address policy sees it.
                proxy_bypass_list: Some("<-loopback>".to_owned()),
                ..Default::default()
            };
            let context = instance.browser.create_browser_context(params).await?;
            let target = CreateTargetParams {
                browser_context_id: Some(context.clone()),
                ..CreateTargetParams::new("about:blank")
            };
            let page = async {
                let page = instance.browser.new_page(target).await?;
                // The DevTools client holds every worker the page starts until it is told to
                // run it, and a service worker's never is: `register()` would never settle.
                let attach =
                    SetAutoAttachParams { flatten: Some(true), ..SetAutoAttachParams::new(true, false) };
                page.execute(attach).await?;
                Ok::<_, chromiumoxide::error::CdpError>(page)
            };
            match page.await {
                Ok(page) => Ok((page, context)),
                Err(e) => {
                    let _ = instance.browser.dispose_browser_context(context).await;
                    Err(e)
                }
            }
        };
        match opened.await {
            Ok((page, context)) => {
                Ok(Self { page, context: Some(context), instance, permit: Some(permit), warm: None })
            }
            Err(e) => {
                instance.tabs.fetch_sub(1, Ordering::SeqCst);
                Err(e.into())
            }
        }
    }

    /// A shelved tab, taken for a request that presents itself as `idle.key`.
    pub(super) fn from_shelf(idle: Idle, shelf: Arc<Shelf>, permit: OwnedSemaphorePermit) -> Self {
        let warm = Warmth { key: idle.key, shelf, uses: idle.uses, origins: Default::default() };
        Self {
            page: idle.page,
            context: Some(idle.context),
            instance: idle.instance,
            permit: Some(permit),
            warm: Some(warm),
        }
    }

    /// Lets the tab go back on `shelf` after its scrape, as a tab presenting itself as `key`.
    pub(super) fn shelve_to(&mut self, key: WarmKey, shelf: Arc<Shelf>) {
        self.warm = Some(Warmth { key, shelf, uses: 0, origins: Default::default() });
    }

    /// Whether the tab came from the shelf (it served a scrape before), set up as the
    /// request needs.
    pub fn reused(&self) -> bool {
        self.warm.as_ref().is_some_and(|warm| warm.uses > 0)
    }

    /// Notes that the tab showed a document of `origin` (cleaned before the tab is reused).
    pub fn visited(&self, origin: String) {
        if let Some(warm) = &self.warm {
            warm.origins.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(origin);
        }
    }

    /// Ends the tab's use: a tab that may be reused (`reusable`, e.g. its scrape
    /// succeeded) is cleaned and shelved in the background; any other is closed.
    pub async fn release(mut self, reusable: bool) {
        let warm = self.warm.take().filter(|_| reusable);
        let (Some(warm), Some(context), Some(permit)) = (warm, self.context.take(), self.permit.take())
        else {
            self.dispose().await;
            return;
        };
        let idle = Idle {
            key: warm.key,
            page: self.page.clone(),
            context,
            instance: Arc::clone(&self.instance),
            uses: warm.uses + 1,
        };
        let origins = warm.origins.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        tokio::spawn(warm.shelf.put_back(idle, origins, permit));
    }

    /// The page.
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// Whether the browser behind the tab is still running.
    pub fn browser_alive(&self) -> bool {
        self.instance.is_alive()
    }

    /// Resolves when the browser behind the tab dies.
    pub async fn browser_died(&self) {
        self.instance.died().await;
    }

    /// Tells whether the browser behind the tab lives, without holding the tab.
    pub fn liveness(&self) -> super::launch::Liveness {
        self.instance.liveness()
    }

    /// Where this tab's DevTools connections go: its page's and its browser's WebSocket
    /// addresses, its context and its page's target.
    pub fn devtools(&self) -> DevTools {
        let browser = self.instance.devtools_url();
        let base = browser.split("/devtools/").next().unwrap_or(browser);
        let target = self.page.target_id().as_ref().to_owned();
        DevTools {
            page: format!("{base}/devtools/page/{target}"),
            browser: browser.to_owned(),
            context: self.context.as_ref().map(|c| c.as_ref().to_owned()).unwrap_or_default(),
            target,
        }
    }

    /// Sets the viewport of a desktop or a phone (again on a reused tab: a full-page
    /// screenshot clears it).
    pub async fn emulate_screen(&self, mobile: bool) -> Result<(), BrowserError> {
        let (width, height, ratio) =
            if mobile { MOBILE_VIEWPORT } else { (DESKTOP_VIEWPORT.0, DESKTOP_VIEWPORT.1, 1.0) };
        let metrics = SetDeviceMetricsOverrideParams::new(i64::from(width), i64::from(height), ratio, mobile);
        self.page.execute(metrics).await?;
        Ok(())
    }

    /// Applies `how` before the first navigation.
    pub async fn present(&self, how: &Presentation<'_>) -> Result<(), BrowserError> {
        let page = &self.page;
        if how.skip_tls_verification {
            // Per page, as Puppeteer's ignoreHTTPSErrors does it: other tabs keep checking.
            page.execute(SetIgnoreCertificateErrorsParams::new(true)).await?;
        }
        self.emulate_screen(how.mobile).await?;
        if how.mobile {
            page.execute(SetTouchEmulationEnabledParams { enabled: true, max_touch_points: Some(5) }).await?;
        }
        let languages = how.location.map(|l| l.languages.as_slice()).unwrap_or_default();
        let accept_language = (!languages.is_empty()).then(|| accept_language(languages));
        page.execute(SetUserAgentOverrideParams {
            user_agent: how.user_agent.to_owned(),
            accept_language: accept_language.clone(),
            platform: None,
            user_agent_metadata: None,
        })
        .await?;
        if let Some(locale) = languages.first() {
            page.execute(SetLocaleOverrideParams { locale: Some(locale.replace('_', "-")) }).await?;
        }
        if let Some(zone) = how.location.and_then(|l| l.country.as_deref()).and_then(time_zone_of) {
            page.execute(SetTimezoneOverrideParams::new(zone)).await?;
        }
        let (cookies, headers): (Vec<_>, Vec<_>) =
            how.headers.iter().partition(|(name, _)| name.eq_ignore_ascii_case("cookie"));
        if !headers.is_empty() {
            let map: serde_json::Map<String, serde_json::Value> =
                headers.iter().map(|(n, v)| (n.clone(), serde_json::Value::String(v.clone()))).collect();
            page.execute(SetExtraHttpHeadersParams::new(Headers::new(serde_json::Value::Object(map))))
                .await?;
        }
        if let Some(url) = how.url {
            let params: Vec<CookieParam> = cookies
                .iter()
                .flat_map(|(_, v)| v.split(';'))
                .filter_map(|pair| pair.split_once('='))
                .map(|(name, value)| CookieParam {
                    url: Some(url.to_string()),
                    ..CookieParam::new(name.trim(), value.trim())
                })
                .collect();
            if !params.is_empty() {
                page.execute(SetCookiesParams::new(params)).await?;
            }
        }
        if how.block_ads {
            page.execute(SetBlockedUrLsParams { url_patterns: Some(adblock::patterns()) }).await?;
            self.add_script(&adblock::hide_banners_script()).await?;
        }
        if let Some(profile) = how.profile {
            self.restore(profile).await?;
        }
        Ok(())
    }

    /// Runs `source` in every document this tab loads, before the page's own scripts.
    pub async fn add_script(&self, source: &str) -> Result<(), BrowserError> {
        self.page.execute(AddScriptToEvaluateOnNewDocumentParams::new(source)).await?;
        Ok(())
    }

    async fn restore(&self, profile: &ProfileState) -> Result<(), BrowserError> {
        if !profile.cookies.is_empty() {
            let cookies = profile.cookies.iter().map(cookie_param).collect();
            // Storage commands naming a context go to the browser, not the page.
            let params = storage::SetCookiesParams { cookies, browser_context_id: self.context.clone() };
            self.instance.browser.execute(params).await?;
        }
        if !profile.local_storage.is_empty() {
            let data = serde_json::to_string(&profile.local_storage).unwrap_or_else(|_| "{}".into());
            self.add_script(&format!(
                "(() => {{ const saved = {data}; const items = saved[location.origin]; if (!items) return; \
                 try {{ for (const [k, v] of items) if (localStorage.getItem(k) === null) localStorage.setItem(k, v); }} catch (e) {{}} }})();"
            ))
            .await?;
        }
        Ok(())
    }

    /// The context's cookies and the current origin's local storage, merged into `base`.
    pub async fn snapshot_profile(&self, base: Option<&ProfileState>) -> Result<ProfileState, BrowserError> {
        let cookies = self
            .instance
            .browser
            .execute(storage::GetCookiesParams { browser_context_id: self.context.clone() })
            .await?
            .result
            .cookies;
        let mut state = base.cloned().unwrap_or_default();
        state.cookies = cookies.iter().map(stored_cookie).collect();
        let current: Option<(String, Vec<(String, String)>)> = self
            .page
            .evaluate(
                "(() => { try { return [location.origin, Object.entries(localStorage)]; } catch (e) { return null; } })()",
            )
            .await?
            .into_value()
            .ok()
            .flatten();
        if let Some((origin, items)) = current.filter(|(o, _)| o.starts_with("http")) {
            state.local_storage.insert(origin, items);
        }
        Ok(state)
    }

    /// Closes the page and disposes its context.
    pub async fn close(mut self) {
        self.dispose().await;
    }

    /// Closes the page and disposes its context, for owners that hold the tab by reference;
    /// its place in the pool is freed when the tab is dropped.
    pub async fn dispose(&mut self) {
        if let Some(context) = self.context.take() {
            close_in(self.page.clone(), Arc::clone(&self.instance), context).await;
        }
    }
}

impl Drop for Tab {
    fn drop(&mut self) {
        if let Some(context) = self.context.take() {
            let page = self.page.clone();
            let instance = Arc::clone(&self.instance);
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(close_in(page, instance, context));
            }
        }
    }
}

/// Closes `page` and disposes `context` in `instance`; nothing to do when the browser died
/// (waiting for its answer would take the whole DevTools request timeout).
pub(super) async fn close_in(page: Page, instance: Arc<Instance>, context: BrowserContextId) {
    if instance.is_alive() {
        let work = async {
            let _ = page.close().await;
            let _ = instance.browser.dispose_browser_context(context).await;
        };
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, work).await;
    }
    instance.tabs.fetch_sub(1, Ordering::SeqCst);
}

/// Longest wait for a tab to close.
const CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn cookie_param(c: &StoredCookie) -> CookieParam {
    CookieParam {
        domain: Some(c.domain.clone()),
        path: Some(c.path.clone()),
        secure: Some(c.secure),
        http_only: Some(c.http_only),
        expires: c.expires.map(|e| TimeSinceEpoch::new(e as f64)),
        ..CookieParam::new(c.name.clone(), c.value.clone())
    }
}

fn stored_cookie(c: &Cookie) -> StoredCookie {
    StoredCookie {
        name: c.name.clone(),
        value: c.value.clone(),
        domain: c.domain.clone(),
        path: c.path.clone(),
        // Session cookies carry -1.
        expires: (!c.session && c.expires > 0.0).then_some(c.expires as i64),
        secure: c.secure,
        http_only: c.http_only,
    }
}

/// The language list Chromium turns into `Accept-Language` (it adds the q weights itself).
fn accept_language(languages: &[String]) -> String {
    languages.join(",")
}

/// A representative time zone of a country (its capital's), for the common ones.
pub fn time_zone_of(country: &str) -> Option<&'static str> {
    let zone = match country.to_ascii_lowercase().as_str() {
        "us" | "us-generic" | "us-whitelist" => "America/New_York",
        "ca" => "America/Toronto",
        "mx" => "America/Mexico_City",
        "br" => "America/Sao_Paulo",
        "ar" => "America/Argentina/Buenos_Aires",
        "cl" => "America/Santiago",
        "co" => "America/Bogota",
        "gb" | "uk" => "Europe/London",
        "ie" => "Europe/Dublin",
        "pt" => "Europe/Lisbon",
        "es" => "Europe/Madrid",
        "fr" => "Europe/Paris",
        "be" => "Europe/Brussels",
        "nl" => "Europe/Amsterdam",
        "de" => "Europe/Berlin",
        "ch" => "Europe/Zurich",
        "at" => "Europe/Vienna",
        "it" => "Europe/Rome",
        "dk" => "Europe/Copenhagen",
        "no" => "Europe/Oslo",
        "se" => "Europe/Stockholm",
        "fi" => "Europe/Helsinki",
        "pl" => "Europe/Warsaw",
        "cz" => "Europe/Prague",
        "gr" => "Europe/Athens",
        "ro" => "Europe/Bucharest",
        "ua" => "Europe/Kyiv",
        "tr" => "Europe/Istanbul",
        "ru" => "Europe/Moscow",
        "il" => "Asia/Jerusalem",
        "ae" => "Asia/Dubai",
        "sa" => "Asia/Riyadh",
        "eg" => "Africa/Cairo",
        "za" => "Africa/Johannesburg",
        "ng" => "Africa/Lagos",
        "ke" => "Africa/Nairobi",
        "in" => "Asia/Kolkata",
        "pk" => "Asia/Karachi",
        "bd" => "Asia/Dhaka",
        "th" => "Asia/Bangkok",
        "vn" => "Asia/Ho_Chi_Minh",
        "id" => "Asia/Jakarta",
        "my" => "Asia/Kuala_Lumpur",
        "sg" => "Asia/Singapore",
        "ph" => "Asia/Manila",
        "cn" => "Asia/Shanghai",
        "hk" => "Asia/Hong_Kong",
        "tw" => "Asia/Taipei",
        "kr" => "Asia/Seoul",
        "jp" => "Asia/Tokyo",
        "au" => "Australia/Sydney",
        "nz" => "Pacific/Auckland",
        _ => return None,
    };
    Some(zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_and_time_zones() {
        assert_eq!(accept_language(&["de-DE".into(), "en".into()]), "de-DE,en");
        assert_eq!(time_zone_of("JP"), Some("Asia/Tokyo"));
        assert_eq!(time_zone_of("zz"), None);
    }
}
