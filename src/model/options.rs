//! Validated scrape options: what the API layer produces from a request body after checking
//! every field, with defaults applied. Scrape, batch and crawl pass this one type down to
//! the pipeline; it is plain data so it can be persisted with a job. Jobs store it as
//! JSON, and every struct here reads with `#[serde(default)]`: a field added later must
//! default to the behaviour from before it existed, so older records still read
//! (`store::codec` has the rule).

use serde::{Deserialize, Serialize};

use super::actions::{Action, Profile, ScreenshotSpec};

/// Default request timeout (spec §2.1).
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Smallest accepted timeout.
pub const MIN_TIMEOUT_MS: u64 = 1_000;
/// Largest accepted timeout.
pub const MAX_TIMEOUT_MS: u64 = 300_000;
/// Default freshness of cached pages: two days.
pub const DEFAULT_MAX_AGE_MS: u64 = 172_800_000;
/// Freshness used with `lockdown`: two years.
pub const LOCKDOWN_MAX_AGE_MS: u64 = 63_072_000_000;

/// How the page is fetched with respect to proxies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ProxyMode {
    /// Direct connection.
    Basic,
    /// Through the configured enhanced proxy when there is one.
    Enhanced,
    /// Direct first; retried through the enhanced proxy when the direct fetch is refused.
    #[default]
    Auto,
}

/// Emulated location: country code and preferred languages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Location {
    /// Lowercase ISO 3166-1 alpha-2 code, when given.
    pub country: Option<String>,
    /// Locale tags in order of preference, e.g. `de-DE`.
    pub languages: Vec<String>,
}

/// The `changeTracking` format's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ChangeTrackingSpec {
    /// Whether a unified diff of the Markdown is wanted (`git-diff` mode).
    pub git_diff: bool,
    /// Separates independent histories of the same URL.
    pub tag: Option<String>,
    /// `json` mode: what to extract and compare with the last extraction.
    pub json: Option<JsonSpec>,
}

/// What the `json` format (or change tracking's `json` mode) extracts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct JsonSpec {
    /// The caller's JSON Schema as JSON text (text, so that every encoding carries it).
    pub schema: Option<String>,
    /// What to extract, in words.
    pub prompt: Option<String>,
}

impl JsonSpec {
    /// The schema as a JSON value.
    pub fn schema_value(&self) -> Option<serde_json::Value> {
        self.schema.as_deref().and_then(|text| serde_json::from_str(text).ok())
    }
}

/// The deprecated `query` format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct QuerySpec {
    /// The question.
    pub prompt: String,
    /// `directQuote` mode: the answer is verbatim text of the page.
    pub direct_quote: bool,
}

/// Which outputs the caller asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Formats {
    /// `markdown`
    pub markdown: bool,
    /// `html` (cleaned)
    pub html: bool,
    /// `rawHtml`
    pub raw_html: bool,
    /// `rawBase64`: the body bytes, base64-encoded
    pub raw_base64: bool,
    /// `links`
    pub links: bool,
    /// `images`
    pub images: bool,
    /// `changeTracking`
    pub change_tracking: Option<ChangeTrackingSpec>,
    /// `attributes`: (selector, attribute) pairs
    pub attributes: Vec<(String, String)>,
    /// `screenshot`
    pub screenshot: Option<ScreenshotSpec>,
    /// `branding`
    pub branding: bool,
    /// `json`
    pub json: Option<JsonSpec>,
    /// `summary`
    pub summary: bool,
    /// `question`: the question
    pub question: Option<String>,
    /// `query` (deprecated)
    pub query: Option<QuerySpec>,
    /// `highlights`: what to find
    pub highlights: Option<String>,
}

impl Formats {
    /// Whether a language model produces any of these formats.
    pub fn need_model(&self) -> bool {
        self.json.is_some()
            || self.summary
            || self.question.is_some()
            || self.query.is_some()
            || self.highlights.is_some()
            || self.change_tracking.as_ref().is_some_and(|c| c.json.is_some())
    }
}

/// How PDFs are handled (`parsers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PdfParser {
    /// Convert PDFs to text (`["pdf"]`, the default); `false` returns them base64-encoded.
    pub enabled: bool,
    /// Upper bound on pages converted, when set.
    pub max_pages: Option<u32>,
}

impl Default for PdfParser {
    fn default() -> Self {
        Self { enabled: true, max_pages: None }
    }
}

/// Every option of a scrape, validated, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScrapeOptions {
    /// Requested outputs.
    pub formats: Formats,
    /// Keep only the main content (header, navigation, footer removed).
    pub only_main_content: bool,
    /// CSS selectors whose elements alone make up the content.
    pub include_tags: Vec<String>,
    /// CSS selectors whose elements are removed.
    pub exclude_tags: Vec<String>,
    /// Extra request headers sent to the target.
    pub headers: Vec<(String, String)>,
    /// Whole-scrape time budget in milliseconds.
    pub timeout_ms: u64,
    /// Fetch as a mobile device.
    pub mobile: bool,
    /// Accept invalid TLS certificates.
    pub skip_tls_verification: bool,
    /// Emulated location.
    pub location: Option<Location>,
    /// Replace inline base64 images in Markdown with a placeholder.
    pub remove_base64_images: bool,
    /// Remove ads and cookie banners.
    pub block_ads: bool,
    /// Proxy choice.
    pub proxy: ProxyMode,
    /// Accept cached pages younger than this many milliseconds (0: always fetch).
    pub max_age_ms: u64,
    /// Cache-only read of pages at least this old.
    pub min_age_ms: Option<u64>,
    /// Store the fetched page in the cache.
    pub store_in_cache: bool,
    /// Serve from cache only; never contact the target.
    pub lockdown: bool,
    /// Write nothing to disk for this request.
    pub zero_data_retention: bool,
    /// PDF handling.
    pub pdf: PdfParser,
    /// Extra wait before capture, after the smart wait (ms).
    pub wait_for_ms: u64,
    /// Page actions run before capture.
    pub actions: Vec<Action>,
    /// Persistent browser profile.
    pub profile: Option<Profile>,
    /// Language-model cleaning pass over the Markdown (`onlyCleanContent`).
    pub only_clean_content: bool,
    /// Not an option of the API: the label of the API key the request came with, so the
    /// language-model tokens its pages use are counted per key.
    pub payer_key: Option<String>,
}

impl Default for ScrapeOptions {
    fn default() -> Self {
        Self {
            formats: Formats { markdown: true, ..Formats::default() },
            only_main_content: true,
            include_tags: Vec::new(),
            exclude_tags: Vec::new(),
            headers: Vec::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            mobile: false,
            skip_tls_verification: true,
            location: None,
            remove_base64_images: true,
            block_ads: true,
            proxy: ProxyMode::Auto,
            max_age_ms: DEFAULT_MAX_AGE_MS,
            min_age_ms: None,
            store_in_cache: true,
            lockdown: false,
            zero_data_retention: false,
            pdf: PdfParser::default(),
            wait_for_ms: 0,
            actions: Vec::new(),
            profile: None,
            only_clean_content: false,
            payer_key: None,
        }
    }
}

impl ScrapeOptions {
    /// Whether the request may be answered from the page cache at all.
    ///
    /// Requests that send their own headers are personal (cookies, auth) and are never
    /// served from or written to the shared cache; change tracking needs a fresh copy, and
    /// browser output (actions, screenshots, branding) exists only in a live page.
    pub fn may_read_cache(&self) -> bool {
        if self.lockdown || self.min_age_ms.is_some() {
            return true;
        }
        self.max_age_ms > 0
            && self.headers.is_empty()
            && self.formats.change_tracking.is_none()
            && !self.wants_browser_output()
            && !self.is_personal()
    }

    /// Whether only a browser can serve the request (nothing else produces its output).
    pub fn wants_browser_output(&self) -> bool {
        !self.actions.is_empty() || self.formats.screenshot.is_some() || self.formats.branding
    }

    /// Whether the browser should render the page even though HTTP could fetch it.
    pub fn prefers_browser(&self) -> bool {
        self.wants_browser_output() || self.wait_for_ms > 0 || self.mobile || self.profile.is_some()
    }

    /// Sensitive requests (actions, a profile) are never written to the shared cache.
    fn is_personal(&self) -> bool {
        !self.actions.is_empty() || self.profile.is_some()
    }

    /// Whether a language model works on this request's pages.
    pub fn need_model(&self) -> bool {
        self.formats.need_model() || self.only_clean_content
    }

    /// Whether only the cache may be used (never the target).
    pub fn cache_only(&self) -> bool {
        self.lockdown || self.min_age_ms.is_some()
    }

    /// Whether a freshly fetched page may be written to the cache.
    pub fn may_write_cache(&self) -> bool {
        self.store_in_cache
            && self.headers.is_empty()
            && !self.zero_data_retention
            && !self.lockdown
            && !self.is_personal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personal_requests_bypass_the_cache() {
        let mut o = ScrapeOptions::default();
        assert!(o.may_read_cache() && o.may_write_cache());
        o.headers.push(("Cookie".into(), "a=b".into()));
        assert!(!o.may_read_cache() && !o.may_write_cache());
    }

    #[test]
    fn cache_only_modes_always_read() {
        let o = ScrapeOptions { lockdown: true, max_age_ms: 0, ..Default::default() };
        assert!(o.may_read_cache() && o.cache_only() && !o.may_write_cache());
        let o = ScrapeOptions { min_age_ms: Some(1), ..Default::default() };
        assert!(o.cache_only());
    }

    #[test]
    fn zero_data_retention_never_writes() {
        let o = ScrapeOptions { zero_data_retention: true, ..Default::default() };
        assert!(!o.may_write_cache());
    }

    #[test]
    fn options_survive_postcard() {
        let o = ScrapeOptions {
            location: Some(Location { country: Some("de".into()), languages: vec!["de-DE".into()] }),
            ..Default::default()
        };
        let bytes = postcard::to_allocvec(&o).expect("encode");
        let back: ScrapeOptions = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(back, o);
    }
}
