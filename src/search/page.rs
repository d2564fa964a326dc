//! What the index keeps of a scraped page: taken from the result document the pipeline
//! built anyway (title, description, language, Markdown, dates), plus the page's `<img>`
//! tags (URL, alt text, width and height attributes), read with one pass over the HTML.

use serde_json::Value;
use url::Url;

use super::index::{IndexedImage, IndexedPage};
use crate::model::Document;

/// Most images kept per page.
const MAX_IMAGES: usize = 64;
/// Most text kept per page, in bytes.
const MAX_TEXT: usize = 256 << 10;

/// The index entry of a page fetched at `fetched_ms` with `body` as served.
pub fn indexed(
    document: &Document,
    content_type: Option<&str>,
    body: &[u8],
    fetched_ms: u64,
) -> Option<IndexedPage> {
    let meta = &document.metadata;
    let url = if meta.url.is_empty() { meta.source_url.clone() } else { meta.url.clone() };
    let parsed = Url::parse(&url).ok()?;
    let extra = |key: &str| meta.extra.get(key).and_then(first_text);
    let published_ms = ["publishedTime", "dcTermsCreated", "dcDateCreated", "dcDate"]
        .iter()
        .find_map(|key| extra(key).and_then(|d| parse_date(&d)));
    let article =
        extra("og:type").is_some_and(|t| t.eq_ignore_ascii_case("article")) || published_ms.is_some();
    let mut text = document.markdown.clone().unwrap_or_default();
    if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    let html = content_type.is_none_or(|t| t.contains("html"));
    let images = if html { images(&parsed, body) } else { Vec::new() };
    let lead_image = extra("ogImage")
        .and_then(|src| parsed.join(src.trim()).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(String::from)
        .or_else(|| images.first().map(|i| i.url.clone()));
    Some(IndexedPage {
        url,
        title: meta.title.clone().unwrap_or_default(),
        description: meta.description.clone().unwrap_or_default(),
        text,
        language: meta
            .language
            .as_deref()
            .map(|l| l.split(['-', '_']).next().unwrap_or_default().to_ascii_lowercase())
            .unwrap_or_default(),
        file_type: file_type(&parsed, content_type),
        published_ms,
        article,
        fetched_ms: i64::try_from(fetched_ms).unwrap_or(i64::MAX),
        images,
        lead_image,
        team: None,
    })
}

fn first_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items.iter().find_map(first_text),
        _ => None,
    }
}

/// `pdf`, `docx`… from the content type, else the path's extension; `html` for pages.
fn file_type(url: &Url, content_type: Option<&str>) -> String {
    let media =
        content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let by_media = match media.as_str() {
        "text/html" | "application/xhtml+xml" => Some("html"),
        "application/pdf" => Some("pdf"),
        "text/plain" => Some("txt"),
        "application/json" => Some("json"),
        "application/xml" | "text/xml" => Some("xml"),
        _ => None,
    };
    if let Some(kind) = by_media {
        return kind.to_owned();
    }
    let last = url.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default();
    match last.rsplit_once('.') {
        Some((_, ext)) if (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric()) => {
            ext.to_ascii_lowercase()
        }
        _ => "html".to_owned(),
    }
}

/// The `<img>` tags of `body`: absolute URL, alt text, width and height when given in
/// pixels.
fn images(base: &Url, body: &[u8]) -> Vec<IndexedImage> {
    let mut out: Vec<IndexedImage> = Vec::new();
    let mut from = 0;
    while let Some(at) = body[from..].iter().position(|&b| b == b'<') {
        let start = from + at + 1;
        from = start;
        if !body.get(start..start + 3).is_some_and(|name| name.eq_ignore_ascii_case(b"img")) {
            continue;
        }
        let end = body[start..].iter().position(|&b| b == b'>').map_or(body.len(), |e| start + e);
        from = end;
        let tag = String::from_utf8_lossy(&body[start + 3..end]);
        let Some(src) = attribute(&tag, "src") else { continue };
        let Ok(url) = base.join(src.trim()) else { continue };
        if !matches!(url.scheme(), "http" | "https") || out.iter().any(|i| i.url == url.as_str()) {
            continue;
        }
        let pixels = |name| attribute(&tag, name).and_then(|v| v.trim().trim_end_matches("px").parse().ok());
        out.push(IndexedImage {
            url: url.to_string(),
            alt: attribute(&tag, "alt").unwrap_or_default().to_owned(),
            width: pixels("width"),
            height: pixels("height"),
        });
        if out.len() == MAX_IMAGES {
            break;
        }
    }
    out
}

/// The value of attribute `name` in a tag's inside (`src="a.png" alt='x' width=10`).
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let bytes = tag.as_bytes();
    let mut i = 0;
    while i < tag.len() {
        let found = tag[i..].char_indices().find(|(_, c)| c.is_ascii_alphabetic()).map(|(o, _)| i + o)?;
        let key_end = tag[found..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .map_or(tag.len(), |e| found + e);
        let key = &tag[found..key_end];
        let mut j = key_end;
        while j < tag.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < tag.len() && bytes[j] == b'=' {
            j += 1;
            while j < tag.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            let (value, next) = match bytes.get(j) {
                Some(&q @ (b'"' | b'\'')) => {
                    let close = tag[j + 1..].find(q as char).map_or(tag.len(), |e| j + 1 + e);
                    (&tag[j + 1..close], close + 1)
                }
                _ => {
                    let close = tag[j..].find(|c: char| c.is_ascii_whitespace()).map_or(tag.len(), |e| j + e);
                    (&tag[j..close], close)
                }
            };
            if key.eq_ignore_ascii_case(name) {
                return Some(value);
            }
            i = next.min(tag.len());
        } else {
            i = key_end.max(found + 1);
        }
    }
    None
}

/// An ISO 8601 date or date-time (`2024-05-01`, `2024-05-01T10:00:00Z`,
/// `2024-05-01T10:00:00+02:00`) as epoch ms.
pub fn parse_date(text: &str) -> Option<i64> {
    let text = text.trim();
    let number = |s: Option<&str>| s.and_then(|s| s.parse::<i64>().ok());
    let year = number(text.get(0..4))?;
    let month = number(text.get(5..7))?;
    let day = number(text.get(8..10))?;
    if text.get(4..5) != Some("-") || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut seconds, mut offset) = (0, 0);
    if let Some(time) = text.get(11..).filter(|t| t.len() >= 5) {
        let hours = number(time.get(0..2))?;
        let minutes = number(time.get(3..5))?;
        let secs = number(time.get(6..8)).unwrap_or(0);
        seconds = hours * 3600 + minutes * 60 + secs;
        if let Some(sign_at) = time.rfind(['+', '-']).filter(|&i| i >= 5) {
            let zone = &time[sign_at..];
            let (h, m) = (number(zone.get(1..3)).unwrap_or(0), number(zone.get(4..6)).unwrap_or(0));
            offset = (h * 3600 + m * 60) * if zone.starts_with('-') { -1 } else { 1 };
        }
    }
    // Days from the civil date (proleptic Gregorian).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + seconds - offset) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_with_and_without_times_and_zones() {
        assert_eq!(parse_date("1970-01-02"), Some(86_400_000));
        assert_eq!(parse_date("2021-03-04T10:00:00Z"), Some(1_614_852_000_000));
        assert_eq!(parse_date("2021-03-04T12:00:00+02:00"), Some(1_614_852_000_000));
        assert_eq!(parse_date("March 4"), None);
    }

    #[test]
    fn images_with_alt_text_and_sizes() {
        let base = Url::parse("http://site.test/blog/post").unwrap();
        let html = br#"<p><IMG class=x SRC="/a.png" alt="A red fox" width="800" height=600></p>
            <img src='b.jpg' alt='' width="50px"><img alt="no source"><img src="data:image/png;base64,xx">"#;
        let found = images(&base, html);
        assert_eq!(
            found,
            vec![
                IndexedImage {
                    url: "http://site.test/a.png".into(),
                    alt: "A red fox".into(),
                    width: Some(800),
                    height: Some(600)
                },
                IndexedImage {
                    url: "http://site.test/blog/b.jpg".into(),
                    alt: String::new(),
                    width: Some(50),
                    height: None
                },
            ]
        );
    }

    #[test]
    fn file_types_from_media_type_or_extension() {
        let url = |u| Url::parse(u).unwrap();
        assert_eq!(file_type(&url("http://a.test/x"), Some("text/html; charset=utf-8")), "html");
        assert_eq!(file_type(&url("http://a.test/r.pdf"), Some("application/octet-stream")), "pdf");
        assert_eq!(file_type(&url("http://a.test/r.DOCX"), None), "docx");
        assert_eq!(file_type(&url("http://a.test/v1.2/"), None), "html");
    }
}
