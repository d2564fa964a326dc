//! Target URL rules shared by every endpoint that takes URLs: http(s) only, a scheme-less
//! input gets `http://`, and the host must be an IP address, `localhost`, or a name with a
//! top-level domain.

use serde_json::Value;
use url::{Host, Url};

use super::error::ApiError;

/// Longest URL accepted.
pub const MAX_URL_LEN: usize = 8192;

/// Validates the JSON value of URL field `field`, returning the parsed URL and the text as
/// the caller sent it.
pub fn parse(value: Option<Value>, field: &str) -> Result<(Url, String), ApiError> {
    let text = match value {
        None | Some(Value::Null) => {
            return Err(ApiError::bad_request(format!("`{field}` is required")));
        }
        Some(Value::String(s)) => s,
        Some(_) => return Err(ApiError::bad_request(format!("`{field}` must be a string"))),
    };
    let url = parse_str(&text).map_err(|reason| ApiError::bad_request(format!("`{field}` {reason}")))?;
    Ok((url, text.trim().to_owned()))
}

/// Validates one URL string; the error says what is wrong (after the field name).
pub fn parse_str(text: &str) -> Result<Url, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("must not be empty".into());
    }
    if trimmed.len() > MAX_URL_LEN {
        return Err(format!("is longer than {MAX_URL_LEN} characters"));
    }
    let with_scheme = if has_scheme(trimmed) { trimmed.to_owned() } else { format!("http://{trimmed}") };
    let url = Url::parse(&with_scheme).map_err(|e| format!("is not a valid URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("must use http or https (got `{}`)", url.scheme()));
    }
    match url.host() {
        None => Err("has no host".into()),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => Ok(url),
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.');
            let tld = name.rsplit('.').next().unwrap_or_default();
            let has_tld = name.contains('.') && tld.len() >= 2 && !tld.chars().all(|c| c.is_ascii_digit());
            if has_tld || name.eq_ignore_ascii_case("localhost") {
                Ok(url)
            } else {
                Err(format!("has no valid host (`{name}` has no top-level domain)"))
            }
        }
    }
}

/// Whether `text` starts with a scheme (`mailto:`, `http:`) rather than `host:port`.
fn has_scheme(text: &str) -> bool {
    let Some((prefix, rest)) = text.split_once(':') else {
        return false;
    };
    let scheme_like = prefix.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    scheme_like && !rest.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_urls() {
        assert_eq!(parse_str("example.com/a").expect("ok").as_str(), "http://example.com/a");
        assert!(parse_str(" https://sub.example.co.uk/x?q=1 ").is_ok());
        assert!(parse_str("http://127.0.0.1:8080/").is_ok());
        assert!(parse_str("http://[::1]/").is_ok());
        assert!(parse_str("http://localhost:3000").is_ok());
        assert!(parse_str("xn--bcher-kva.example/").is_ok());
    }

    #[test]
    fn refused_urls_say_why() {
        assert!(parse_str("ftp://example.com/").unwrap_err().contains("http or https"));
        assert!(parse_str("http://intranet/").unwrap_err().contains("top-level domain"));
        assert!(parse_str("").unwrap_err().contains("empty"));
        assert!(parse_str("http://exa mple.com").is_err());
        assert!(parse_str("mailto:someone@example.com").unwrap_err().contains("`mailto`"));
        assert!(parse_str("javascript:alert(1)").is_err());
        assert!(parse(Some(Value::from(3)), "url").unwrap_err().message().contains("`url` must be a string"));
        assert!(parse(None, "url").unwrap_err().message().contains("`url` is required"));
    }
}
