//! The `webhook` field of crawls and batches (contract §5.1): a URL, or an object with `url`,
//! `headers`, `metadata` (echoed in every event) and an `events` filter. Signature headers
//! are ours to set, so callers may not send them.

use serde_json::Value;

use super::error::ApiError;
use super::target;
use crate::model::{Code, EventKind, WebhookSpec};
use crate::scrape::engine::AddressPolicy;

/// Headers a caller may not set on deliveries.
const RESERVED_HEADERS: &[&str] =
    &["x-service-signature", "x-firecrawl-signature", "content-type", "content-length", "host"];

/// Validates a crawl's or batch's webhook value into a [`WebhookSpec`].
pub fn parse(value: &Value) -> Result<WebhookSpec, ApiError> {
    parse_for(value, EventKind::JOBS)
}

/// Validates a webhook value whose `events` may name the kinds in `allowed`.
pub fn parse_for(value: &Value, allowed: &[EventKind]) -> Result<WebhookSpec, ApiError> {
    let mut spec = WebhookSpec::default();
    let url = match value {
        Value::String(url) => url.clone(),
        Value::Object(obj) => {
            for (key, v) in obj {
                match key.as_str() {
                    "url" => {}
                    "headers" => spec.headers = string_map(v, "webhook.headers")?,
                    "metadata" => spec.metadata = string_map(v, "webhook.metadata")?,
                    "events" => spec.events = events(v, allowed)?,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "Unrecognized key in body: `webhook.{other}`"
                        )));
                    }
                }
            }
            obj.get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad_request("`webhook.url` is required"))?
                .to_owned()
        }
        _ => return Err(ApiError::bad_request("`webhook` must be a URL or an object with a `url`")),
    };
    let parsed =
        target::parse_str(&url).map_err(|reason| ApiError::bad_request(format!("`webhook.url` {reason}")))?;
    spec.url = parsed.to_string();
    for (name, value) in &spec.headers {
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(ApiError::bad_request(format!("`webhook.headers.{name}` is set by the server")));
        }
        let valid = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
            && reqwest::header::HeaderValue::from_str(value).is_ok();
        if !valid {
            return Err(ApiError::bad_request(format!("`webhook.headers.{name}` is not a valid header")));
        }
    }
    Ok(spec)
}

/// Refuses a receiver the outbound address policy would refuse anyway (an IP literal in a
/// private range when private targets are not allowed); names are checked at delivery.
pub fn check_allowed(spec: &WebhookSpec, policy: &AddressPolicy) -> Result<(), ApiError> {
    let url = url::Url::parse(&spec.url)
        .map_err(|e| ApiError::bad_request(format!("`webhook.url` is not a valid URL ({e})")))?;
    policy.check_literal(&url).map_err(|host| {
        ApiError::new(Code::UrlBlocked, format!("`webhook.url`: {host} is a private or reserved address"))
    })
}

fn string_map(value: &Value, field: &str) -> Result<Vec<(String, String)>, ApiError> {
    let obj =
        value.as_object().ok_or_else(|| ApiError::bad_request(format!("`{field}` must be an object")))?;
    obj.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(ApiError::bad_request(format!("`{field}.{k}` must be a string"))),
        })
        .collect()
}

fn events(value: &Value, allowed: &[EventKind]) -> Result<Vec<EventKind>, ApiError> {
    let list = value.as_array().ok_or_else(|| ApiError::bad_request("`webhook.events` must be an array"))?;
    let names = allowed.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ");
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .and_then(|t| EventKind::parse_among(t, allowed))
                .ok_or_else(|| ApiError::bad_request(format!("`webhook.events[{i}]` must be one of {names}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_and_objects() {
        assert_eq!(
            parse(&json!("http://hooks.example.com/x")).expect("ok").url,
            "http://hooks.example.com/x"
        );
        let spec = parse(&json!({
            "url": "https://hooks.example.com/fc", "headers": {"X-Token": "abc"},
            "metadata": {"run": "42"}, "events": ["page", "crawl.completed"]
        }))
        .expect("ok");
        assert_eq!(spec.headers, vec![("X-Token".to_owned(), "abc".to_owned())]);
        assert_eq!(spec.metadata, vec![("run".to_owned(), "42".to_owned())]);
        assert_eq!(spec.events, vec![EventKind::Page, EventKind::Completed]);
    }

    #[test]
    fn bad_webhooks_name_the_field() {
        for (value, field) in [
            (json!({"url": "ftp://x.example.com"}), "`webhook.url`"),
            (json!({"headers": {}}), "`webhook.url`"),
            (json!({"url": "http://h.example.com", "events": ["sometimes"]}), "`webhook.events[0]`"),
            (json!({"url": "http://h.example.com", "metadata": {"n": 1}}), "`webhook.metadata.n`"),
            (
                json!({"url": "http://h.example.com", "headers": {"X-Firecrawl-Signature": "x"}}),
                "X-Firecrawl-Signature",
            ),
            (json!({"url": "http://h.example.com", "secret": "x"}), "`webhook.secret`"),
            (json!(7), "`webhook`"),
        ] {
            let err = parse(&value).unwrap_err();
            assert!(err.message().contains(field), "{value} → {}", err.message());
        }
    }
}
