//! The scrape options as clients send them (flat on scrape and batch, nested as
//! `scrapeOptions` on crawl), and their validation into [`ScrapeOptions`]. Every rule of
//! spec §2.1/§8 lives here; options whose capability this build lacks are refused with
//! `FEATURE_NOT_AVAILABLE` naming the option, never silently ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::error::ApiError;
use super::formats;
use crate::config::TeamSettings;
use crate::extract;
use crate::model::options::{LOCKDOWN_MAX_AGE_MS, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};
use crate::model::{Code, Location, PdfParser, ProxyMode, ScrapeOptions};

/// Longest `waitFor` accepted (ms).
const MAX_WAIT_FOR_MS: u64 = 60_000;

/// Scrape options on the wire (camelCase); every field optional.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = ScrapeOptions)]
pub struct ScrapeOptionsBody {
    /// Output formats: names (`"markdown"`) or objects with a `type` (`{"type": "changeTracking", "modes": ["git-diff"]}`).
    #[schema(value_type = Option<Vec<Object>>)]
    pub formats: Option<Vec<Value>>,
    /// Keep only the main content (default true).
    pub only_main_content: Option<bool>,
    /// Language-model clean-up pass over the Markdown (needs `llm.base_url`).
    pub only_clean_content: Option<bool>,
    /// CSS selectors whose elements alone make up the content.
    pub include_tags: Option<Vec<String>>,
    /// CSS selectors whose elements are removed.
    pub exclude_tags: Option<Vec<String>>,
    /// Serve a cached copy younger than this many ms (default 172800000; 0 = always fetch).
    #[schema(minimum = 0)]
    pub max_age: Option<u64>,
    /// Cache-only read of copies at least this old (ms); 404 SCRAPE_NO_CACHED_DATA otherwise.
    #[schema(minimum = 0)]
    pub min_age: Option<u64>,
    /// Headers sent to the target (disables the shared cache for this request).
    pub headers: Option<BTreeMap<String, String>>,
    /// Extra wait before capture (ms), after the smart wait; renders in the browser.
    #[schema(minimum = 0, maximum = 60000)]
    pub wait_for: Option<u64>,
    /// Fetch as a mobile device.
    pub mobile: Option<bool>,
    /// Accept invalid TLS certificates (default true; false when headers are sent).
    pub skip_tls_verification: Option<bool>,
    /// Time budget in ms.
    #[schema(minimum = 1000, maximum = 300000)]
    pub timeout: Option<u64>,
    /// File handling: `["pdf"]` (default) or `[]`.
    #[schema(value_type = Option<Vec<Object>>)]
    pub parsers: Option<Vec<Value>>,
    /// Page actions run in the browser before capture.
    #[schema(value_type = Option<Vec<Object>>)]
    pub actions: Option<Vec<Value>>,
    /// Emulated location.
    #[serde(default, deserialize_with = "super::body::object_only")]
    pub location: Option<LocationBody>,
    /// Replace inline base64 images in Markdown (default true).
    pub remove_base64_images: Option<bool>,
    /// Accepted for client compatibility; the HTTP engine is always fast.
    pub fast_mode: Option<bool>,
    /// Remove ads and cookie banners (default true).
    pub block_ads: Option<bool>,
    /// `basic`, `enhanced` (alias `stealth`) or `auto` (default).
    pub proxy: Option<String>,
    /// Store the fetched page in the cache (default true).
    pub store_in_cache: Option<bool>,
    /// Serve from cache only, never contacting the target.
    pub lockdown: Option<bool>,
    /// Persistent browser profile `{name, saveChanges}` shared with interact sessions.
    #[schema(value_type = Option<Object>)]
    pub profile: Option<Value>,
    /// Write nothing to disk (team permission required).
    pub zero_data_retention: Option<bool>,
    /// PII redaction (not available on this server).
    #[serde(rename = "redactPII")]
    #[schema(value_type = Option<Object>)]
    pub redact_pii: Option<Value>,
    /// Threat scanning (not available on this server).
    #[schema(value_type = Option<Object>)]
    pub threat_protection: Option<Value>,
    /// Audit label, e.g. `{"username": "..."}`; logged with the request.
    #[schema(value_type = Option<Object>)]
    pub audit_metadata: Option<Value>,
    /// Mock fixture name (not available on this server).
    pub use_mock: Option<String>,
    /// Client label sent by the SDKs.
    pub origin: Option<String>,
    /// Integration label sent by the SDKs.
    pub integration: Option<String>,
}

/// `location` on the wire.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationBody {
    /// ISO 3166-1 alpha-2 country code.
    #[schema(schema_with = country_schema)]
    pub country: Option<String>,
    /// Locale tags in order of preference.
    #[schema(schema_with = languages_schema)]
    pub languages: Option<Vec<String>>,
}

/// A location's `country` as [`location`] takes it.
fn country_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(COUNTRY_PATTERN))
        .description(Some("ISO 3166-1 alpha-2 country code."))
        .build()
}

/// A location's `languages` as [`location`] takes them.
fn languages_schema() -> utoipa::openapi::Array {
    let tag = utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(LANGUAGE_PATTERN))
        .max_length(Some(MAX_LANGUAGE_CHARS));
    utoipa::openapi::ArrayBuilder::new()
        .items(tag)
        .description(Some("Locale tags in order of preference."))
        .build()
}

/// Who is asking, for permission checks.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The team's name.
    pub team: &'a str,
    /// The team's plan flags.
    pub flags: &'a TeamSettings,
    /// Whether the server has a language model.
    pub model: bool,
    /// The API key's label, for token use per key.
    pub key: &'a str,
}

impl ScrapeOptionsBody {
    /// Parses the scrape options out of `map` (keys already checked), naming fields under `prefix`.
    pub fn from_map(map: Map<String, Value>, prefix: &str) -> Result<Self, ApiError> {
        super::body::typed(Value::Object(map), prefix)
    }

    /// Validates and applies defaults. `prefix` names nested fields (`scrapeOptions.`).
    pub fn validate(self, caller: Caller<'_>, prefix: &str) -> Result<ScrapeOptions, ApiError> {
        let field = |name: &str| format!("{prefix}{name}");
        let unavailable = |name: &str, why: &str| ApiError::not_available(&field(name), why);
        let only_clean_content = self.only_clean_content.unwrap_or(false);
        if only_clean_content && !caller.model {
            return Err(unavailable("onlyCleanContent", formats::NO_MODEL));
        }
        if only_clean_content && self.zero_data_retention == Some(true) {
            return Err(ApiError::bad_request(format!(
                "`{}` is not supported for zero-data-retention requests",
                field("onlyCleanContent")
            )));
        }
        if self.redact_pii.as_ref().is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false))) {
            return Err(unavailable("redactPII", "PII redaction is a hosted-service feature"));
        }
        refuse_hosted(
            self.threat_protection.as_ref(),
            self.use_mock.as_deref(),
            self.audit_metadata.as_ref(),
            prefix,
        )?;

        let timeout_ms = self.timeout.unwrap_or(crate::model::options::DEFAULT_TIMEOUT_MS);
        if !(MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(ApiError::bad_request(format!(
                "`{}` must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS} milliseconds (got {timeout_ms})",
                field("timeout")
            )));
        }
        if let Some(wait) = self.wait_for {
            if wait > MAX_WAIT_FOR_MS {
                return Err(ApiError::bad_request(format!(
                    "`{}` must be at most {MAX_WAIT_FOR_MS} milliseconds",
                    field("waitFor")
                )));
            }
            if wait > timeout_ms / 2 {
                return Err(ApiError::bad_request(format!(
                    "`{}` must be at most half of `{}`",
                    field("waitFor"),
                    field("timeout")
                )));
            }
        }
        let wait_for_ms = self.wait_for.unwrap_or(0);
        let actions = super::actions::parse(self.actions.unwrap_or_default(), wait_for_ms, prefix)?;
        let profile = super::actions::profile(self.profile.unwrap_or(Value::Null), prefix)?;

        let formats = formats::parse(
            self.formats.unwrap_or_else(|| vec![Value::from("markdown")]),
            prefix,
            caller.model,
        )?;
        let include_tags = selectors(self.include_tags.unwrap_or_default(), &field("includeTags"))?;
        let exclude_tags = selectors(self.exclude_tags.unwrap_or_default(), &field("excludeTags"))?;
        let headers = headers(self.headers.unwrap_or_default(), &field("headers"))?;
        let location = self.location.map(|l| location(l, prefix)).transpose()?;
        let proxy = match self.proxy.as_deref() {
            None | Some("auto") => ProxyMode::Auto,
            Some("basic") => ProxyMode::Basic,
            Some("enhanced" | "stealth") => ProxyMode::Enhanced,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "`{}` must be one of basic, enhanced, stealth, auto (got `{other}`)",
                    field("proxy")
                )));
            }
        };
        let pdf = parsers(self.parsers, &field("parsers"), prefix)?;
        let lockdown = self.lockdown.unwrap_or(false);
        let zero_data_retention = self.zero_data_retention.unwrap_or(false);
        if zero_data_retention && !caller.flags.zero_data_retention {
            return Err(ApiError::new(
                Code::Forbidden,
                format!(
                    "`{}` is not enabled for team `{}`; ask the operator to set teams.{}.zero_data_retention",
                    field("zeroDataRetention"),
                    caller.team,
                    caller.team
                ),
            ));
        }
        let default_max_age =
            if lockdown { LOCKDOWN_MAX_AGE_MS } else { crate::model::options::DEFAULT_MAX_AGE_MS };
        Ok(ScrapeOptions {
            only_main_content: self.only_main_content.unwrap_or(true),
            skip_tls_verification: self.skip_tls_verification.unwrap_or(headers.is_empty()),
            formats,
            include_tags,
            exclude_tags,
            headers,
            timeout_ms,
            mobile: self.mobile.unwrap_or(false),
            location,
            remove_base64_images: self.remove_base64_images.unwrap_or(true),
            block_ads: self.block_ads.unwrap_or(true),
            proxy,
            max_age_ms: self.max_age.unwrap_or(default_max_age),
            min_age_ms: self.min_age,
            store_in_cache: self.store_in_cache.unwrap_or(true),
            lockdown,
            // Lockdown requests are handled as zero data retention (spec §2.1).
            zero_data_retention: zero_data_retention || lockdown,
            pdf,
            wait_for_ms,
            actions,
            profile,
            only_clean_content,
            payer_key: Some(caller.key.to_owned()).filter(|k| !k.is_empty()),
        })
    }
}

/// Refuses the hosted-service options (threat scanning, mock fixtures) and logs an audit
/// label, for every endpoint that accepts them.
pub fn refuse_hosted(
    threat_protection: Option<&Value>,
    use_mock: Option<&str>,
    audit_metadata: Option<&Value>,
    prefix: &str,
) -> Result<(), ApiError> {
    if threat_protection.is_some_and(|v| !v.is_null()) {
        return Err(ApiError::not_available(
            &format!("{prefix}threatProtection"),
            "threat scanning is a hosted-service feature",
        ));
    }
    if use_mock.is_some() {
        return Err(ApiError::not_available(
            &format!("{prefix}useMock"),
            "mock fixtures are a hosted-service test feature",
        ));
    }
    match audit_metadata {
        None | Some(Value::Null) => {}
        Some(audit @ Value::Object(_)) => tracing::info!(audit = %audit, "audit metadata"),
        Some(_) => {
            return Err(ApiError::bad_request(format!("`{prefix}auditMetadata` must be an object")));
        }
    }
    Ok(())
}

fn selectors(list: Vec<String>, name: &str) -> Result<Vec<String>, ApiError> {
    for (i, selector) in list.iter().enumerate() {
        extract::validate_selector(selector).map_err(|e| {
            ApiError::bad_request(format!("`{name}[{i}]` is not a valid CSS selector (`{selector}`): {e}"))
        })?;
    }
    Ok(list)
}

fn headers(map: BTreeMap<String, String>, name: &str) -> Result<Vec<(String, String)>, ApiError> {
    map.into_iter()
        .map(|(key, value)| {
            if reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_err() {
                return Err(ApiError::bad_request(format!("`{name}` has an invalid header name `{key}`")));
            }
            if reqwest::header::HeaderValue::from_str(&value).is_err() {
                return Err(ApiError::bad_request(format!("`{name}.{key}` has an invalid header value")));
            }
            Ok((key, value))
        })
        .collect()
}

/// What [`location`] takes as a country, as a JSON Schema pattern: two letters, or one of
/// the two US pools, in any case, around white space.
pub const COUNTRY_PATTERN: &str =
    r"^\s*([A-Za-z]{2}|[Uu][Ss]-([Gg][Ee][Nn][Ee][Rr][Ii][Cc]|[Ww][Hh][Ii][Tt][Ee][Ll][Ii][Ss][Tt]))\s*$";
/// What [`location`] takes as a locale tag (at most [`MAX_LANGUAGE_CHARS`]), as a pattern.
pub const LANGUAGE_PATTERN: &str = "^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$";
/// The longest locale tag.
pub const MAX_LANGUAGE_CHARS: usize = 35;

fn location(body: LocationBody, prefix: &str) -> Result<Location, ApiError> {
    let country = match body.country {
        None => None,
        Some(c) => {
            let lower = c.trim().to_ascii_lowercase();
            let valid = (lower.len() == 2 && lower.chars().all(|ch| ch.is_ascii_alphabetic()))
                || matches!(lower.as_str(), "us-generic" | "us-whitelist");
            if !valid {
                return Err(ApiError::bad_request(format!(
                    "`{prefix}location.country` must be a two-letter ISO country code (got `{c}`)"
                )));
            }
            Some(lower)
        }
    };
    let languages = body.languages.unwrap_or_default();
    for (i, lang) in languages.iter().enumerate() {
        let valid = !lang.is_empty()
            && lang.len() <= MAX_LANGUAGE_CHARS
            && lang
                .split('-')
                .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric()));
        if !valid {
            return Err(ApiError::bad_request(format!(
                "`{prefix}location.languages[{i}]` must be a locale tag such as `en-US` (got `{lang}`)"
            )));
        }
    }
    Ok(Location { country, languages })
}

fn parsers(list: Option<Vec<Value>>, name: &str, prefix: &str) -> Result<PdfParser, ApiError> {
    let Some(list) = list else {
        return Ok(PdfParser::default());
    };
    let mut parser = PdfParser { enabled: false, max_pages: None };
    for (i, entry) in list.iter().enumerate() {
        let at = format!("{name}[{i}]");
        match entry {
            Value::String(s) if s == "pdf" => parser.enabled = true,
            Value::Object(obj) if obj.get("type").and_then(Value::as_str) == Some("pdf") => {
                parser.enabled = true;
                for (key, value) in obj {
                    match key.as_str() {
                        "type" => {}
                        "maxPages" => {
                            let pages =
                                value.as_u64().filter(|p| (1..=10_000).contains(p)).ok_or_else(|| {
                                    ApiError::bad_request(format!(
                                        "`{at}.maxPages` must be an integer from 1 to 10000"
                                    ))
                                })?;
                            parser.max_pages = u32::try_from(pages).ok();
                        }
                        "mode" if value == "fast" || value == "auto" => {}
                        "mode" | "pages" | "pageMarkdown" | "blocks" | "pageMarkers" => {
                            let _ = prefix;
                            return Err(ApiError::not_available(
                                &format!("{at}.{key}"),
                                "per-page PDF output and OCR are not built into this server",
                            ));
                        }
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "Unrecognized key in body: `{at}.{other}`"
                            )));
                        }
                    }
                }
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`{at}` must be \"pdf\" or an object with \"type\": \"pdf\""
                )));
            }
        }
    }
    Ok(parser)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_location_patterns_take_what_location_takes() {
        let country = regex::Regex::new(COUNTRY_PATTERN).expect("pattern");
        let language = regex::Regex::new(LANGUAGE_PATTERN).expect("pattern");
        let read = |country: &str, language: &str| {
            let body = LocationBody { country: Some(country.into()), languages: Some(vec![language.into()]) };
            location(body, "").is_ok()
        };
        for (c, l) in [("US", "en-US"), (" de ", "de"), ("US-Generic", "zh-Hant-TW"), ("fr", "x1")] {
            assert!(read(c, l) && country.is_match(c) && language.is_match(l), "{c} {l}");
        }
        for c in ["USA", "U", "", "us generic", "1a"] {
            assert!(!read(c, "en") && !country.is_match(c), "{c}");
        }
        for l in ["", "en_US", "en-", "-en", "é"] {
            assert!(!read("us", l) && !language.is_match(l), "{l}");
        }
    }

    fn flags() -> TeamSettings {
        TeamSettings::default()
    }

    fn validate(v: Value) -> Result<ScrapeOptions, ApiError> {
        let f = flags();
        let body: ScrapeOptionsBody = super::super::body::typed(v, "")?;
        body.validate(Caller { team: "t", flags: &f, model: false, key: "" }, "")
    }

    #[test]
    fn defaults_follow_the_spec() {
        let o = validate(json!({})).expect("ok");
        assert!(o.formats.markdown && o.only_main_content && o.skip_tls_verification);
        assert_eq!(o.timeout_ms, 60_000);
        assert_eq!(o.max_age_ms, 172_800_000);
        assert_eq!(o.proxy, ProxyMode::Auto);
    }

    #[test]
    fn timeout_bounds_are_inclusive() {
        assert!(validate(json!({"timeout": 1000})).is_ok());
        assert!(validate(json!({"timeout": 300000})).is_ok());
        let err = validate(json!({"timeout": 999})).unwrap_err();
        assert!(err.message().contains("`timeout`"));
        assert!(validate(json!({"timeout": 300001})).is_err());
    }

    #[test]
    fn unbuilt_capabilities_are_refused_by_name() {
        let err = validate(json!({"onlyCleanContent": true})).unwrap_err();
        assert!(err.message().contains("llm.base_url"), "{}", err.message());
        assert_eq!(err.code(), Code::FeatureNotAvailable);
        assert!(err.message().contains("`onlyCleanContent`"), "{}", err.message());
        assert!(validate(json!({"actions": [], "onlyCleanContent": false})).is_ok());
    }

    #[test]
    fn browser_options_are_validated() {
        let o = validate(json!({"waitFor": 1000, "actions": [{"type": "scrape"}], "profile": {"name": "p"}}))
            .expect("ok");
        assert_eq!((o.wait_for_ms, o.actions.len()), (1000, 1));
        assert!(o.profile.is_some() && o.prefers_browser() && !o.may_write_cache());
        let err = validate(json!({"waitFor": 40000, "actions": [{"type": "wait", "milliseconds": 30000}], "timeout": 100000}))
            .unwrap_err();
        assert!(err.message().contains("actions"), "{}", err.message());
    }

    #[test]
    fn headers_turn_tls_verification_on_by_default() {
        let o = validate(json!({"headers": {"X-Test": "1"}})).expect("ok");
        assert!(!o.skip_tls_verification);
        let err = validate(json!({"headers": {"bad name": "1"}})).unwrap_err();
        assert!(err.message().contains("headers"));
    }

    #[test]
    fn zero_data_retention_needs_the_team_flag() {
        assert_eq!(validate(json!({"zeroDataRetention": true})).unwrap_err().code(), Code::Forbidden);
        let f = TeamSettings { zero_data_retention: true, ..flags() };
        let body: ScrapeOptionsBody =
            super::super::body::typed(json!({"zeroDataRetention": true}), "").expect("body");
        assert!(
            body.validate(Caller { team: "t", flags: &f, model: false, key: "" }, "")
                .expect("ok")
                .zero_data_retention
        );
    }

    #[test]
    fn lockdown_extends_max_age_and_retains_nothing() {
        let o = validate(json!({"lockdown": true})).expect("ok");
        assert_eq!(o.max_age_ms, LOCKDOWN_MAX_AGE_MS);
        assert!(o.zero_data_retention && o.cache_only());
    }

    #[test]
    fn location_and_proxy_are_checked() {
        let o = validate(json!({"location": {"country": "DE", "languages": ["de-DE"]}, "proxy": "stealth"}))
            .expect("ok");
        assert_eq!(o.location.expect("loc").country.as_deref(), Some("de"));
        assert_eq!(o.proxy, ProxyMode::Enhanced);
        assert!(validate(json!({"location": {"country": "Germany"}})).is_err());
        assert!(validate(json!({"proxy": "fast"})).unwrap_err().message().contains("`proxy`"));
        assert!(validate(json!({"location": {"city": "x"}})).is_err());
    }

    #[test]
    fn parsers_shapes() {
        assert!(!validate(json!({"parsers": []})).expect("ok").pdf.enabled);
        let o = validate(json!({"parsers": [{"type": "pdf", "maxPages": 3}]})).expect("ok");
        assert_eq!(o.pdf.max_pages, Some(3));
        assert!(validate(json!({"parsers": ["docx"]})).is_err());
    }

    #[test]
    fn invalid_selectors_are_named() {
        let err = validate(json!({"includeTags": ["main", "div[["]})).unwrap_err();
        assert!(err.message().contains("`includeTags[1]`"), "{}", err.message());
    }
}
