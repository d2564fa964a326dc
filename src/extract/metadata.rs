//! Page metadata: title, description, language, favicon, Open Graph / Dublin Core /
//! article fields under their contract names, and every `<meta>` verbatim. Also the
//! two facts the content filter takes from metadata (preferred title, known author).

use scraper::Html;
use scraper::node::Element;
use url::Url;

use super::urls;

/// Metadata of a page.
#[derive(Debug, Clone, Default)]
pub struct PageMetadata {
    /// First `<title>` (trimmed, whitespace collapsed); fallback `og:title`, then `twitter:title`.
    pub title: Option<String>,
    /// `meta name=description`; several are joined with ", ".
    pub description: Option<String>,
    /// `<html lang>`.
    pub language: Option<String>,
    /// `meta name=keywords`.
    pub keywords: Option<String>,
    /// `meta name=robots`.
    pub robots: Option<String>,
    /// Absolute favicon URL: `link[rel=icon]` first, else any rel containing "icon".
    pub favicon: Option<String>,
    /// Every `og:locale:alternate`.
    pub og_locale_alternate: Vec<String>,
    /// Contract fields under their camelCase names, each at most once: ogTitle,
    /// ogDescription, ogUrl, ogImage, ogAudio, ogDeterminer, ogLocale, ogSiteName,
    /// ogVideo, dcTermsCreated, dcDateCreated, dcDate, dcTermsType, dcType,
    /// dcTermsAudience, dcTermsSubject, dcSubject, dcDescription, dcTermsKeywords,
    /// modifiedTime (article:modified_time), publishedTime (article:published_time),
    /// articleTag, articleSection. (og:* from meta property; dc from meta name
    /// "dcterms.created", "dc.date.created", "dc.date", "dcterms.type", "dc.type",
    /// "dcterms.audience", "dcterms.subject", "dc.subject", "dc.description",
    /// "dcterms.keywords"; case-insensitive names.)
    pub fields: Vec<(String, String)>,
    /// Every `<meta>` with a name, property or itemprop and a content attribute, key
    /// verbatim, in document order, repeats kept (the caller turns repeats into arrays).
    pub meta: Vec<(String, String)>,
}

/// `property` values mapped to contract names.
const PROPERTY_FIELDS: &[(&str, &str)] = &[
    ("og:title", "ogTitle"),
    ("og:description", "ogDescription"),
    ("og:url", "ogUrl"),
    ("og:image", "ogImage"),
    ("og:audio", "ogAudio"),
    ("og:determiner", "ogDeterminer"),
    ("og:locale", "ogLocale"),
    ("og:site_name", "ogSiteName"),
    ("og:video", "ogVideo"),
    ("article:modified_time", "modifiedTime"),
    ("article:published_time", "publishedTime"),
    ("article:tag", "articleTag"),
    ("article:section", "articleSection"),
];

/// `name` values mapped to contract names.
const NAME_FIELDS: &[(&str, &str)] = &[
    ("dcterms.created", "dcTermsCreated"),
    ("dc.date.created", "dcDateCreated"),
    ("dc.date", "dcDate"),
    ("dcterms.type", "dcTermsType"),
    ("dc.type", "dcType"),
    ("dcterms.audience", "dcTermsAudience"),
    ("dcterms.subject", "dcTermsSubject"),
    ("dc.subject", "dcSubject"),
    ("dc.description", "dcDescription"),
    ("dcterms.keywords", "dcTermsKeywords"),
];

/// Metadata-derived hints for the content filter, in the order they are trusted.
const TITLE_KEYS: &[&str] = &[
    "dc:title",
    "dcterm:title",
    "og:title",
    "weibo:article:title",
    "weibo:webpage:title",
    "title",
    "twitter:title",
    "parsely-title",
];
const AUTHOR_KEYS: &[&str] = &["dc:creator", "dcterm:creator", "author", "parsely-author"];

/// What the content filter takes from metadata.
#[derive(Default)]
pub(crate) struct FilterHints {
    /// Title declared in metadata, if any.
    pub meta_title: Option<String>,
    /// The `<title>` text.
    pub doc_title: String,
    /// An author is declared in metadata.
    pub has_author: bool,
}

fn collapse(s: &str) -> String {
    s.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
}

fn text_of(html: &Html, el_id: ego_tree::NodeId) -> String {
    let mut s = String::new();
    if let Some(node) = html.tree.get(el_id) {
        for d in node.descendants() {
            if let Some(t) = d.value().as_text() {
                s.push_str(t);
            }
        }
    }
    s
}

/// Normalized key for the filter hints: lower case, no whitespace, dots as colons.
fn hint_key(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '.' { ':' } else { c.to_ascii_lowercase() })
        .collect()
}

fn push_field(fields: &mut Vec<(String, String)>, name: &str, value: &str) {
    if !fields.iter().any(|(k, _)| k == name) {
        fields.push((name.to_string(), value.to_string()));
    }
}

/// Collects metadata from the whole document. Relative URLs resolve against `base`.
pub(crate) fn collect(html: &Html, base: &Url) -> (PageMetadata, FilterHints) {
    let mut md = PageMetadata::default();
    let mut hints = FilterHints::default();
    let mut doc_title: Option<String> = None;
    let mut descriptions: Vec<&str> = Vec::new();
    let mut hint_titles: Vec<(usize, String)> = Vec::new();
    let (mut icon_exact, mut icon_any): (Option<&str>, Option<&str>) = (None, None);
    let (mut og_title, mut tw_title) = (None, None);
    for node in html.tree.nodes() {
        let Some(el) = node.value().as_element() else {
            continue;
        };
        match el.name() {
            "html" if md.language.is_none() => {
                md.language = el.attr("lang").map(str::trim).filter(|l| !l.is_empty()).map(str::to_string);
            }
            "title" if doc_title.is_none() && &*el.name.ns == "http://www.w3.org/1999/xhtml" => {
                doc_title = Some(text_of(html, node.id()));
            }
            "link" => {
                let (Some(rel), Some(href)) = (el.attr("rel"), el.attr("href")) else {
                    continue;
                };
                let mut tokens = rel.split_ascii_whitespace();
                if icon_exact.is_none() && tokens.any(|t| t.eq_ignore_ascii_case("icon")) {
                    icon_exact = Some(href);
                } else if icon_any.is_none() && rel.to_ascii_lowercase().contains("icon") {
                    icon_any = Some(href);
                }
            }
            "meta" => meta(
                el,
                &mut md,
                &mut descriptions,
                &mut hint_titles,
                &mut hints,
                &mut og_title,
                &mut tw_title,
            ),
            _ => {}
        }
    }
    let doc_title = doc_title.unwrap_or_default();
    let collapsed = collapse(&doc_title);
    md.title = Some(collapsed)
        .filter(|t| !t.is_empty())
        .or(og_title.map(str::trim).filter(|t| !t.is_empty()).map(str::to_string))
        .or(tw_title.map(str::trim).filter(|t| !t.is_empty()).map(str::to_string));
    if !descriptions.is_empty() {
        md.description = Some(descriptions.join(", "));
    }
    md.favicon = icon_exact.or(icon_any).and_then(|h| urls::resolve(base, h)).map(String::from);
    hint_titles.sort_by_key(|(rank, _)| *rank);
    hints.meta_title = hint_titles.into_iter().next().map(|(_, t)| t);
    hints.doc_title = doc_title;
    (md, hints)
}

fn meta<'h>(
    el: &'h Element,
    md: &mut PageMetadata,
    descriptions: &mut Vec<&'h str>,
    hint_titles: &mut Vec<(usize, String)>,
    hints: &mut FilterHints,
    og_title: &mut Option<&'h str>,
    tw_title: &mut Option<&'h str>,
) {
    let Some(content) = el.attr("content") else {
        return;
    };
    let name = el.attr("name");
    let property = el.attr("property");
    if let Some(key) = name.or(property).or(el.attr("itemprop")) {
        md.meta.push((key.to_string(), content.to_string()));
    }
    if let Some(p) = property {
        let lower = p.trim().to_ascii_lowercase();
        if let Some((_, field)) = PROPERTY_FIELDS.iter().find(|(k, _)| *k == lower) {
            push_field(&mut md.fields, field, content);
        }
        match lower.as_str() {
            "og:locale:alternate" => md.og_locale_alternate.push(content.to_string()),
            "og:title" => *og_title = og_title.or(Some(content)),
            "twitter:title" => *tw_title = tw_title.or(Some(content)),
            _ => {}
        }
    }
    if let Some(n) = name {
        let lower = n.trim().to_ascii_lowercase();
        if let Some((_, field)) = NAME_FIELDS.iter().find(|(k, _)| *k == lower) {
            push_field(&mut md.fields, field, content);
        }
        match lower.as_str() {
            "description" => descriptions.push(content),
            "keywords" if md.keywords.is_none() => md.keywords = Some(content.to_string()),
            "robots" if md.robots.is_none() => md.robots = Some(content.to_string()),
            "twitter:title" => *tw_title = tw_title.or(Some(content)),
            _ => {}
        }
    }
    let content = content.trim();
    if content.is_empty() {
        return;
    }
    // The filter hints accept both `property` and `name` spellings.
    for key in property.into_iter().chain(name) {
        let key = hint_key(key);
        if let Some(rank) = TITLE_KEYS.iter().position(|k| *k == key) {
            hint_titles.push((rank, content.to_string()));
        }
        if AUTHOR_KEYS.contains(&key.as_str()) {
            hints.has_author = true;
        }
    }
}
