//! The scrape result as Firecrawl clients read it (contract §3): only the requested formats
//! are present, and `metadata` always carries the source URL, final URL, status code, scrape
//! id, proxy used and credits. Stored results keep this JSON shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One scraped page or document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    /// Markdown of the (main) content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
    /// Cleaned HTML of the (main) content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// The page's HTML as served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_html: Option<String>,
    /// The body bytes, base64-encoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_base64: Option<String>,
    /// Absolute links of the page, in order of appearance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<String>>,
    /// Absolute image URLs of the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<String>>,
    /// Values of the requested element attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Vec<AttributeValues>>,
    /// Comparison with the previous scrape of the same URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_tracking: Option<ChangeTracking>,
    /// Screenshot URL (a `data:` URL for zero-data-retention requests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
    /// Outputs of page actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<ActionResults>,
    /// The page's brand identity (colours, fonts, typography, components, images).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branding: Option<Value>,
    /// Data extracted by the language model (`json` format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// The page summarised (`summary` format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The answer to the `question` (or `query`) format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Verbatim passages of the page matching the `highlights` query, one per paragraph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highlights: Option<String>,
    /// Something the caller should know about this result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Page and request metadata.
    pub metadata: Metadata,
}

impl Document {
    /// Adds `text` to the result's warning.
    pub fn add_warning(&mut self, text: &str) {
        self.warning = Some(match self.warning.take() {
            Some(before) => format!("{before} {text}"),
            None => text.to_owned(),
        });
    }
}

/// What page actions produced, in action order within each list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionResults {
    /// Screenshot URLs.
    pub screenshots: Vec<String>,
    /// HTML snapshots.
    pub scrapes: Vec<PageSnapshot>,
    /// Values of `executeJavascript` actions.
    pub javascript_returns: Vec<ScriptValue>,
    /// PDF URLs.
    pub pdfs: Vec<String>,
}

/// The HTML of the page at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSnapshot {
    /// The page's URL then.
    pub url: String,
    /// Its HTML then.
    pub html: String,
}

/// A script's completion value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptValue {
    /// JavaScript type (`string`, `number`, `object`, `undefined`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The value as JSON (`null` for undefined and values JSON cannot hold).
    pub value: Value,
}

/// Which engine produced the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// A plain HTTP fetch.
    Http,
    /// Rendered by Chromium.
    Chromium,
}

/// Values found for one requested (selector, attribute) pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeValues {
    /// The CSS selector.
    pub selector: String,
    /// The attribute name.
    pub attribute: String,
    /// The attribute's value on each matching element.
    pub values: Vec<String>,
}

/// Whether the page came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// Served from the cache.
    Hit,
    /// Fetched from the target.
    Miss,
}

/// Which network path fetched the page, as Firecrawl reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProxyUsed {
    /// A direct connection.
    #[default]
    Basic,
    /// The enhanced proxy.
    Stealth,
}

/// Metadata of a result (contract §3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// `<title>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Meta description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `<html lang>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Meta keywords.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keywords: Option<String>,
    /// Meta robots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robots: Option<String>,
    /// Absolute favicon URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub favicon: Option<String>,
    /// `og:locale:alternate` values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub og_locale_alternate: Option<Vec<String>>,
    /// The URL as the caller sent it.
    #[serde(rename = "sourceURL")]
    pub source_url: String,
    /// The final URL after redirects.
    pub url: String,
    /// The target's HTTP status.
    pub status_code: u16,
    /// The target's error text for non-success statuses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Id of this scrape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrape_id: Option<String>,
    /// The response's content type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Direct or enhanced proxy.
    pub proxy_used: ProxyUsed,
    /// The engine that produced the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Cache hit or miss, when the cache was consulted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_state: Option<CacheState>,
    /// When the cached copy was fetched, on a hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_at: Option<String>,
    /// Credits billed for this result.
    pub credits_used: u32,
    /// Whether the request waited for the team's concurrency limit.
    pub concurrency_limited: bool,
    /// How long it waited, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_queue_duration_ms: Option<u64>,
    /// Open Graph, Dublin Core and every other `<meta>` key, verbatim; repeated keys are arrays.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Outcome of comparing this scrape with the previous one of the same URL and tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeTracking {
    /// When the previous scrape happened; `None` for the first one.
    pub previous_scrape_at: Option<String>,
    /// `new`, `same`, `changed` or `removed`.
    pub change_status: ChangeStatus,
    /// `hidden` for a crawl page that following links from the crawl's start URL did not
    /// reach (it came from the sitemap); `visible` otherwise.
    pub visibility: Visibility,
    /// Unified diff of the Markdown (git-diff mode, when changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// json mode: each extracted field that changed, as `{previous, current}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
}

/// How the page changed since the previous scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeStatus {
    /// No earlier scrape.
    New,
    /// Content unchanged.
    Same,
    /// Content changed.
    Changed,
    /// The page is gone (404).
    Removed,
}

/// Whether the page is reachable by links: always visible for a single scrape or a batch;
/// a crawl that follows links and reads sitemaps says `hidden` for the pages only its
/// sitemaps led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// Reachable by links (or not a crawl page).
    Visible,
    /// No longer linked: reached only through the sitemap.
    Hidden,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requested_formats_are_serialized() {
        let doc = Document {
            markdown: Some("# Hi".into()),
            metadata: Metadata {
                source_url: "http://a.test".into(),
                url: "http://a.test/".into(),
                status_code: 200,
                ..Default::default()
            },
            ..Default::default()
        };
        let json = serde_json::to_value(&doc).expect("json");
        let keys: Vec<_> = json.as_object().expect("object").keys().cloned().collect();
        assert_eq!(keys, vec!["markdown", "metadata"]);
        assert_eq!(json["metadata"]["sourceURL"], "http://a.test");
        assert_eq!(json["metadata"]["proxyUsed"], "basic");
        assert_eq!(json["metadata"]["statusCode"], 200);
    }

    #[test]
    fn extra_meta_keys_round_trip() {
        let mut meta = Metadata { status_code: 200, ..Default::default() };
        meta.extra.insert("og:title".into(), Value::from("T"));
        meta.extra.insert("article:tag".into(), Value::from(vec!["a", "b"]));
        let doc = Document { metadata: meta, ..Default::default() };
        let text = serde_json::to_string(&doc).expect("json");
        let back: Document = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, doc);
    }
}
