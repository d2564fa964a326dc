//! Turning a fetched page into a result document: decide what the bytes are (HTML, plain
//! text, JSON, or a file type this build cannot convert), decode them, run the extraction
//! once, and fill only the formats that were asked for plus the page's metadata. Request
//! facts (scrape id, cache state, credits) are added by the pipeline.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;
use url::Url;

use super::engine::{charset, js_shell};
use crate::documents::{self, DocError, DocKind, Limits};
use crate::extract::{self, ExtractOptions, PageMetadata, Wanted};
use crate::model::document::AttributeValues;
use crate::model::{Document, Metadata, ScrapeOptions};

/// A page as fetched or cached.
#[derive(Debug, Clone, Copy)]
pub struct PageInput<'a> {
    /// The URL as the caller sent it.
    pub source_url: &'a str,
    /// The URL after redirects.
    pub final_url: &'a Url,
    /// HTTP status.
    pub status: u16,
    /// Content-Type header.
    pub content_type: Option<&'a str>,
    /// Body bytes.
    pub body: &'a [u8],
}

/// What kind of content a response holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentKind {
    /// HTML (or XHTML/XML, read the same way).
    Html,
    /// Plain text, returned verbatim.
    Text,
    /// JSON, returned in a fenced block.
    Json,
    /// A file type not converted by this build, named by its media type.
    Unsupported(String),
}

/// Classifies a response by its Content-Type, sniffing the bytes when that is missing or
/// generic.
pub fn classify(content_type: Option<&str>, body: &[u8]) -> ContentKind {
    let media = content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match media.as_str() {
        "text/html" | "application/xhtml+xml" | "application/xml" | "text/xml" => ContentKind::Html,
        m if m.ends_with("+xml") => ContentKind::Html,
        "application/json" => ContentKind::Json,
        m if m.ends_with("+json") => ContentKind::Json,
        m if m.starts_with("text/") => ContentKind::Text,
        "" | "application/octet-stream" | "binary/octet-stream" => sniff(body),
        other => ContentKind::Unsupported(other.to_owned()),
    }
}

fn sniff(body: &[u8]) -> ContentKind {
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(body.len());
    let head = &body[start..body.len().min(start + 512)];
    if head.starts_with(b"%PDF-") {
        return ContentKind::Unsupported("application/pdf".into());
    }
    if head.starts_with(b"PK\x03\x04") {
        return ContentKind::Unsupported("application/zip".into());
    }
    if head.first() == Some(&b'<') {
        return ContentKind::Html;
    }
    if matches!(head.first(), Some(b'{' | b'[')) && serde_json::from_slice::<Value>(&body[start..]).is_ok() {
        return ContentKind::Json;
    }
    if std::str::from_utf8(body).is_ok() {
        ContentKind::Text
    } else {
        ContentKind::Unsupported("application/octet-stream".into())
    }
}

/// A built document and, when asked for, every link of the page (for crawling).
#[derive(Debug, Clone)]
pub struct Built {
    /// The result document.
    pub document: Document,
    /// Absolute links of the page, when discovery was asked for.
    pub links: Vec<String>,
    /// PDF pages converted (billed one credit each).
    pub pdf_pages: Option<u32>,
    /// An HTML page with scripts whose content is nearly empty or a loading notice: the
    /// browser would show more.
    pub placeholder: bool,
}

/// Why a response could not become a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// A media type this build does not convert.
    Unsupported(String),
    /// A document that could not be read.
    Document(DocError),
}

/// Builds the document for `page`; with `discover`, also returns the page's links even when
/// the `links` format was not requested. Office files and spreadsheets are converted within
/// `limits`.
pub fn build(
    page: &PageInput<'_>,
    options: &ScrapeOptions,
    discover: bool,
    limits: &Limits,
) -> Result<Built, BuildError> {
    if let Some(kind) = documents::detect(page.content_type, Some(page.final_url.path()), page.body) {
        return build_document(page, options, kind, limits);
    }
    let kind = classify(page.content_type, page.body);
    let formats = &options.formats;
    let mut doc = Document::default();
    let mut discovered = Vec::new();
    let mut placeholder = false;
    let text = match &kind {
        ContentKind::Unsupported(media) => return Err(BuildError::Unsupported(media.clone())),
        _ => charset::decode(page.body, page.content_type),
    };
    let page_meta = match kind {
        ContentKind::Html => {
            let out =
                extract::extract(&text, page.final_url, &extract_options(options), wanted(options, discover));
            doc.markdown = out.markdown;
            doc.html = out.html;
            placeholder = out.placeholder && js_shell::has_scripts(page.body);
            if discover {
                discovered = out.links.clone().unwrap_or_default();
            }
            doc.links = if formats.links { out.links } else { None };
            doc.images = out.images;
            if !formats.attributes.is_empty() {
                let values = extract::attributes(&text, &formats.attributes);
                doc.attributes = Some(
                    formats
                        .attributes
                        .iter()
                        .zip(values)
                        .map(|((selector, attribute), values)| AttributeValues {
                            selector: selector.clone(),
                            attribute: attribute.clone(),
                            values,
                        })
                        .collect(),
                );
            }
            Some(out.metadata)
        }
        ContentKind::Json => {
            doc.markdown = formats.markdown.then(|| format!("```json\n{}\n```", text.trim_end()));
            doc.html = formats.html.then(|| pre(&text));
            None
        }
        _ => {
            doc.markdown = formats.markdown.then(|| text.clone().into_owned());
            doc.html = formats.html.then(|| pre(&text));
            None
        }
    };
    if page_meta.is_none() {
        doc.links = formats.links.then(Vec::new);
        doc.images = formats.images.then(Vec::new);
        doc.attributes = (!formats.attributes.is_empty()).then(Vec::new);
    }
    doc.raw_html = formats.raw_html.then(|| text.into_owned());
    doc.raw_base64 = formats.raw_base64.then(|| base64::engine::general_purpose::STANDARD.encode(page.body));
    doc.metadata = metadata(page, page_meta.unwrap_or_default());
    Ok(Built { document: doc, links: discovered, pdf_pages: None, placeholder })
}

/// What extraction should keep, as the scrape options say.
fn extract_options(options: &ScrapeOptions) -> ExtractOptions {
    ExtractOptions {
        only_main_content: options.only_main_content,
        include_tags: options.include_tags.clone(),
        exclude_tags: options.exclude_tags.clone(),
        remove_base64_images: options.remove_base64_images,
        block_ads: options.block_ads,
    }
}

/// The outputs extraction should produce; links also when the crawl needs them.
fn wanted(options: &ScrapeOptions, discover: bool) -> Wanted {
    let formats = &options.formats;
    Wanted {
        markdown: formats.markdown,
        html: formats.html,
        links: formats.links || discover,
        images: formats.images,
    }
}

/// A document converted to HTML, then extracted like a page (whole content: a document
/// has no navigation to filter out).
fn build_document(
    page: &PageInput<'_>,
    options: &ScrapeOptions,
    kind: DocKind,
    limits: &Limits,
) -> Result<Built, BuildError> {
    let formats = &options.formats;
    if kind == DocKind::Pdf && !options.pdf.enabled {
        return Ok(pdf_as_base64(page, options));
    }
    let mut limits = *limits;
    if kind == DocKind::Pdf
        && let Some(max) = options.pdf.max_pages
    {
        limits.max_pdf_pages = limits.max_pdf_pages.min(max as usize);
    }
    let converted = documents::convert(kind, page.body, &limits).map_err(BuildError::Document)?;
    // A document has no navigation or ads to filter out: its whole content is kept.
    let whole = ExtractOptions { only_main_content: false, block_ads: false, ..extract_options(options) };
    let out = extract::extract(&converted.html, page.final_url, &whole, wanted(options, false));
    let mut doc = Document {
        markdown: out.markdown,
        html: out.html,
        links: out.links,
        images: out.images,
        attributes: (!formats.attributes.is_empty()).then(Vec::new),
        raw_html: formats.raw_html.then(|| converted.html.clone()),
        raw_base64: formats.raw_base64.then(|| base64::engine::general_purpose::STANDARD.encode(page.body)),
        warning: converted.warning,
        ..Document::default()
    };
    let mut meta = metadata(page, out.metadata);
    meta.title = converted.title.or(meta.title);
    if let Some(author) = converted.author {
        meta.extra.insert("author".into(), Value::String(author));
    }
    let mut pdf_pages = None;
    if let (DocKind::Pdf, Some(pages)) = (kind, converted.pages) {
        meta.extra.insert("numPages".into(), Value::from(pages));
        pdf_pages = Some(pages.min(u32::try_from(limits.max_pdf_pages).unwrap_or(u32::MAX)));
    }
    doc.metadata = meta;
    Ok(Built { document: doc, links: Vec::new(), pdf_pages, placeholder: false })
}

/// A PDF left unparsed (`parsers: []`): the whole file, base64-encoded, as the Markdown (and
/// HTML when asked), billed as one page.
fn pdf_as_base64(page: &PageInput<'_>, options: &ScrapeOptions) -> Built {
    let encoded = base64::engine::general_purpose::STANDARD.encode(page.body);
    let formats = &options.formats;
    let document = Document {
        markdown: formats.markdown.then(|| encoded.clone()),
        html: formats.html.then(|| encoded.clone()),
        raw_base64: formats.raw_base64.then(|| encoded.clone()),
        metadata: metadata(page, PageMetadata::default()),
        ..Document::default()
    };
    Built { document, links: Vec::new(), pdf_pages: None, placeholder: false }
}

fn pre(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 11);
    out.push_str("<pre>");
    extract::escape_html(&mut out, text);
    out.push_str("</pre>");
    out
}

/// Keys the named metadata fields own; `<meta>` tags with these names are not repeated.
const NAMED_KEYS: &[&str] = &[
    "title",
    "description",
    "language",
    "keywords",
    "robots",
    "favicon",
    "sourceURL",
    "url",
    "statusCode",
    "error",
    "scrapeId",
    "contentType",
    "proxyUsed",
    "cacheState",
    "cachedAt",
    "creditsUsed",
    "concurrencyLimited",
    "concurrencyQueueDurationMs",
    "ogLocaleAlternate",
];

fn metadata(page: &PageInput<'_>, meta: PageMetadata) -> Metadata {
    let mut extra: BTreeMap<String, Value> = BTreeMap::new();
    for (key, value) in meta.fields {
        extra.entry(key).or_insert(Value::String(value));
    }
    for (key, value) in meta.meta {
        if NAMED_KEYS.contains(&key.as_str()) {
            continue;
        }
        match extra.get_mut(&key) {
            None => {
                extra.insert(key, Value::String(value));
            }
            Some(Value::Array(values)) => values.push(Value::String(value)),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, Value::String(value)]);
            }
        }
    }
    let error = (page.status >= 400).then(|| {
        reqwest::StatusCode::from_u16(page.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("HTTP error")
            .to_owned()
    });
    Metadata {
        title: meta.title,
        description: meta.description,
        language: meta.language,
        keywords: meta.keywords,
        robots: meta.robots,
        favicon: meta.favicon,
        og_locale_alternate: (!meta.og_locale_alternate.is_empty()).then_some(meta.og_locale_alternate),
        source_url: page.source_url.to_owned(),
        url: page.final_url.to_string(),
        status_code: page.status,
        error,
        content_type: page.content_type.map(str::to_owned),
        extra,
        ..Metadata::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_classified() {
        assert_eq!(classify(Some("text/html; charset=utf-8"), b""), ContentKind::Html);
        assert_eq!(classify(Some("application/ld+json"), b"{}"), ContentKind::Json);
        assert_eq!(classify(Some("text/plain"), b"hi"), ContentKind::Text);
        assert_eq!(classify(Some("image/png"), b""), ContentKind::Unsupported("image/png".into()));
        assert_eq!(classify(None, b"  <!doctype html><p>x"), ContentKind::Html);
        assert_eq!(
            classify(Some("application/octet-stream"), b"%PDF-1.7"),
            ContentKind::Unsupported("application/pdf".into())
        );
        assert_eq!(classify(None, br#"{"a":1}"#), ContentKind::Json);
    }

    #[test]
    fn json_and_text_shortcuts() {
        let url = Url::parse("http://a.test/data").expect("url");
        let page = PageInput {
            source_url: "http://a.test/data",
            final_url: &url,
            status: 200,
            content_type: Some("application/json"),
            body: br#"{"a": 1}"#,
        };
        let doc = build(&page, &ScrapeOptions::default(), false, &Limits::default()).expect("doc").document;
        assert_eq!(doc.markdown.as_deref(), Some("```json\n{\"a\": 1}\n```"));
        let page = PageInput { content_type: Some("text/plain"), body: b"plain *text*", ..page };
        let doc = build(&page, &ScrapeOptions::default(), false, &Limits::default()).expect("doc").document;
        assert_eq!(doc.markdown.as_deref(), Some("plain *text*"));
    }

    #[test]
    fn status_errors_are_reported_in_metadata() {
        let url = Url::parse("http://a.test/missing").expect("url");
        let page = PageInput {
            source_url: "http://a.test/missing",
            final_url: &url,
            status: 404,
            content_type: Some("text/html"),
            body: b"<title>Gone</title><p>Not here</p>",
        };
        let doc = build(&page, &ScrapeOptions::default(), false, &Limits::default()).expect("doc").document;
        assert_eq!(doc.metadata.status_code, 404);
        assert_eq!(doc.metadata.error.as_deref(), Some("Not Found"));
    }

    #[test]
    fn discovery_returns_links_without_adding_the_format() {
        let url = Url::parse("http://a.test/dir/").expect("url");
        let page = PageInput {
            source_url: "http://a.test/dir/",
            final_url: &url,
            status: 200,
            content_type: Some("text/html"),
            body: b"<p>Hello <a href=\"next\">next page</a> and <a href=\"/top\">top</a></p>",
        };
        let built = build(&page, &ScrapeOptions::default(), true, &Limits::default()).expect("doc");
        assert_eq!(built.links, vec!["http://a.test/dir/next", "http://a.test/top"]);
        assert!(built.document.links.is_none(), "links were not requested as a format");
        assert!(
            build(&page, &ScrapeOptions::default(), false, &Limits::default()).expect("doc").links.is_empty()
        );
    }

    #[test]
    fn repeated_meta_keys_become_arrays() {
        let url = Url::parse("http://a.test/").expect("url");
        let meta = PageMetadata {
            meta: vec![
                ("article:tag".into(), "a".into()),
                ("article:tag".into(), "b".into()),
                ("viewport".into(), "width=device-width".into()),
                ("description".into(), "dup".into()),
            ],
            ..Default::default()
        };
        let page = PageInput { source_url: "x", final_url: &url, status: 200, content_type: None, body: b"" };
        let m = metadata(&page, meta);
        assert_eq!(m.extra["article:tag"], serde_json::json!(["a", "b"]));
        assert_eq!(m.extra["viewport"], "width=device-width");
        assert!(!m.extra.contains_key("description"));
    }
}
