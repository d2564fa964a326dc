//! Fixture-based tests of the extraction pipeline: each `NAME.html` under
//! `tests/fixtures/extract/` has the exact expected Markdown in `NAME.md`.
//! Converter fixtures are rendered with `only_main_content = false` so that they test
//! the writer alone; `article_page` is rendered with the defaults.

use super::*;

const ARTICLE: &str = include_str!("../../tests/fixtures/extract/article_page.html");
const ARTICLE_MD: &str = include_str!("../../tests/fixtures/extract/article_page.md");
const TABLES: &str = include_str!("../../tests/fixtures/extract/tables.html");
const TABLES_MD: &str = include_str!("../../tests/fixtures/extract/tables.md");
const CODE: &str = include_str!("../../tests/fixtures/extract/code.html");
const CODE_MD: &str = include_str!("../../tests/fixtures/extract/code.md");
const LISTS: &str = include_str!("../../tests/fixtures/extract/lists.html");
const LISTS_MD: &str = include_str!("../../tests/fixtures/extract/lists.md");
const LINKS: &str = include_str!("../../tests/fixtures/extract/links_images.html");
const LINKS_MD: &str = include_str!("../../tests/fixtures/extract/links_images.md");
const META: &str = include_str!("../../tests/fixtures/extract/metadata.html");
const META_MD: &str = include_str!("../../tests/fixtures/extract/metadata.md");
const FALLBACK: &str = include_str!("../../tests/fixtures/extract/fallback_title.html");
const FALLBACK_MD: &str = include_str!("../../tests/fixtures/extract/fallback_title.md");

const ARTICLE_URL: &str = "https://fieldnotes.example/posts/rivers";
const DOCS_URL: &str = "https://example.com/docs/page";

fn url(s: &str) -> url::Url {
    url::Url::parse(s).expect("test URL")
}

fn all_content() -> ExtractOptions {
    ExtractOptions { only_main_content: false, ..ExtractOptions::default() }
}

fn markdown(html: &str, page: &str, opts: &ExtractOptions) -> String {
    let wanted = Wanted { markdown: true, ..Wanted::default() };
    extract(html, &url(page), opts, wanted).markdown.expect("markdown was asked for")
}

fn assert_fixture(got: &str, expected: &str) {
    assert_eq!(got, expected.trim_end_matches('\n'), "\n--- got ---\n{got}\n---");
}

#[test]
fn article_keeps_only_the_main_content() {
    let got = markdown(ARTICLE, ARTICLE_URL, &ExtractOptions::default());
    assert_fixture(&got, ARTICLE_MD);
    for boilerplate in [
        "Geology",
        "Popular posts",
        "Privacy policy",
        "We use cookies",
        "Advertisement",
        "Share on Twitter",
        "By Ada Stone",
        "this script must not leak",
        "font-family",
    ] {
        assert!(!got.contains(boilerplate), "{boilerplate} leaked");
    }
}

#[test]
fn whole_page_when_main_content_is_off() {
    let got = markdown(ARTICLE, ARTICLE_URL, &all_content());
    assert!(got.starts_with("[Field Notes](https://fieldnotes.example/)"));
    for kept in ["- [Geology]", "# How Rivers Shape Valleys", "### Popular posts", "[Privacy policy]"] {
        assert!(got.contains(kept), "{kept} missing");
    }
    for dropped in ["We use cookies", "Accept all", "Advertisement", "this script must not leak"] {
        assert!(!got.contains(dropped), "{dropped} leaked");
    }
}

#[test]
fn ads_and_banners_stay_when_blocking_is_off() {
    let opts = ExtractOptions { block_ads: false, ..all_content() };
    let got = markdown(ARTICLE, ARTICLE_URL, &opts);
    assert!(got.starts_with("We use cookies to improve your experience on our site."));
    assert!(got.contains("Advertisement"));
    // Form controls never render, with or without ad blocking.
    assert!(!got.contains("Accept all"));
}

#[test]
fn include_tags_select_content_in_selector_order() {
    let opts = ExtractOptions {
        include_tags: vec![".sidebar h3".into(), "article h2".into(), "article ul".into()],
        ..ExtractOptions::default()
    };
    let got = markdown(ARTICLE, ARTICLE_URL, &opts);
    assert_eq!(
        got,
        "### Popular posts\n\n## Erosion at work\n\n- **Hydraulic action**, the sheer force of moving water;\n- **Abrasion**, where pebbles grind against the bed;\n- **Solution**, where minerals dissolve in the water."
    );
}

#[test]
fn include_tags_skip_nested_matches() {
    let opts = ExtractOptions {
        include_tags: vec!["article".into(), "article p".into()],
        ..ExtractOptions::default()
    };
    let got = markdown(ARTICLE, ARTICLE_URL, &opts);
    assert_eq!(got.matches("Rivers are patient sculptors").count(), 1);
    // The caller chose the content, so the title heading and share links stay.
    assert!(got.starts_with("# How Rivers Shape Valleys"));
    assert!(got.contains("Share on Twitter"));
}

#[test]
fn exclude_tags_drop_matching_elements() {
    let opts = ExtractOptions {
        exclude_tags: vec!["ul".into(), "header".into(), "#nothing-matches".into()],
        ..all_content()
    };
    let got = markdown(ARTICLE, ARTICLE_URL, &opts);
    assert!(!got.contains("Hydraulic action"));
    assert!(!got.contains("Geology"));
    assert!(!got.contains("Glaciers and you"));
    assert!(got.contains("## Erosion at work"));
}

#[test]
fn gfm_tables() {
    assert_fixture(&markdown(TABLES, DOCS_URL, &all_content()), TABLES_MD);
}

#[test]
fn fenced_code_with_language() {
    assert_fixture(&markdown(CODE, DOCS_URL, &all_content()), CODE_MD);
}

#[test]
fn lists_quotes_and_inline_formatting() {
    assert_fixture(&markdown(LISTS, DOCS_URL, &all_content()), LISTS_MD);
}

#[test]
fn relative_links_and_images_become_absolute() {
    assert_fixture(&markdown(LINKS, DOCS_URL, &all_content()), LINKS_MD);
}

#[test]
fn base64_images_are_kept_on_request() {
    let opts = ExtractOptions { remove_base64_images: false, ..all_content() };
    let got = markdown(LINKS, DOCS_URL, &opts);
    assert!(got.contains("![Inline pixel](data:image/png;base64,iVBORw0KGgo"));
    assert!(!got.contains("Base64-Image-Removed"));
}

#[test]
fn page_links_and_images() {
    let wanted = Wanted { links: true, images: true, ..Wanted::default() };
    let out = extract(LINKS, &url(DOCS_URL), &ExtractOptions::default(), wanted);
    assert_eq!(out.markdown, None);
    assert_eq!(
        out.links.expect("links were asked for"),
        vec![
            "https://example.com/assets/v2/guide.html",
            "https://example.com/assets/faq#top",
            "https://other.example/x?y=1",
            "http://broken.example/path",
            "mailto:team@example.com",
            "https://example.com/gallery",
        ]
    );
    assert_eq!(
        out.images.expect("images were asked for"),
        vec![
            "https://example.com/assets/v2/photo.jpg",
            "https://example.com/assets/v2/large.jpg",
            "https://example.com/assets/v2/two.jpg",
            "https://example.com/lazy/real.jpg",
            "https://cdn.example/thumb.png",
        ]
    );
}

#[test]
fn cleaned_html_of_the_selected_content() {
    let wanted = Wanted { html: true, ..Wanted::default() };
    let out = extract(ARTICLE, &url(ARTICLE_URL), &ExtractOptions::default(), wanted);
    let html = out.html.expect("html was asked for");
    assert!(html.starts_with("<div>"));
    assert!(html.contains("<h2>Erosion at work</h2>"));
    assert!(html.contains(r#"<a href="https://fieldnotes.example/guides/erosion">erosion guide</a>"#));
    assert!(!html.contains("<script"));
    assert!(!html.contains("Popular posts"));
}

#[test]
fn metadata_fields() {
    let out = extract(META, &url("https://example.ca/guide"), &ExtractOptions::default(), Wanted::default());
    let m = out.metadata;
    assert_eq!(m.title.as_deref(), Some("Le guide des rivières"));
    assert_eq!(m.description.as_deref(), Some("Première description., Seconde description."));
    assert_eq!(m.language.as_deref(), Some("fr-CA"));
    assert_eq!(m.keywords.as_deref(), Some("rivières, érosion"));
    assert_eq!(m.robots.as_deref(), Some("index, follow"));
    assert_eq!(m.favicon.as_deref(), Some("https://example.ca/favicon-32.png"));
    assert_eq!(m.og_locale_alternate, vec!["en_CA", "es_MX"]);
    let field = |k: &str| m.fields.iter().find(|(name, _)| name == k).map(|(_, v)| v.as_str());
    assert_eq!(field("ogTitle"), Some("Guide des rivières (OG)"));
    assert_eq!(field("ogImage"), Some("https://example.ca/cover.jpg"));
    assert_eq!(field("ogLocale"), Some("fr_CA"));
    assert_eq!(field("ogSiteName"), Some("Exemple"));
    assert_eq!(field("dcDateCreated"), Some("2021-03-04"));
    assert_eq!(field("dcTermsSubject"), Some("Géographie"));
    assert_eq!(field("publishedTime"), Some("2021-03-04T10:00:00Z"));
    assert_eq!(field("modifiedTime"), Some("2021-05-06T11:00:00Z"));
    assert_eq!(field("articleTag"), Some("eau"));
    assert_eq!(field("articleSection"), Some("Science"));
    assert_eq!(m.fields.iter().filter(|(k, _)| k == "ogImage").count(), 1);
    let tags: Vec<&str> =
        m.meta.iter().filter(|(k, _)| k == "article:tag").map(|(_, v)| v.as_str()).collect();
    assert_eq!(tags, vec!["eau", "vallées"]);
    assert!(m.meta.contains(&("author".to_string(), "Ada Stone".to_string())));
    assert!(m.meta.contains(&("Description".to_string(), "Seconde description.".to_string())));
    assert!(!m.meta.iter().any(|(k, _)| k == "empty-content"));
    assert_fixture(&markdown(META, "https://example.ca/guide", &ExtractOptions::default()), META_MD);
}

#[test]
fn title_and_favicon_fallbacks() {
    let out =
        extract(FALLBACK, &url("https://example.org/a/b"), &ExtractOptions::default(), Wanted::default());
    assert_eq!(out.metadata.title.as_deref(), Some("Open Graph title"));
    assert_eq!(out.metadata.favicon.as_deref(), Some("https://static.example/fav.ico"));
    assert_fixture(&markdown(FALLBACK, "https://example.org/a/b", &ExtractOptions::default()), FALLBACK_MD);
}

#[test]
fn short_pages_fall_back_to_the_whole_body() {
    let html = "<html><body><nav><a href='/a'>Home</a></nav><div>Tiny note.</div></body></html>";
    let got = markdown(html, DOCS_URL, &ExtractOptions::default());
    assert!(got.contains("Tiny note."));
}

#[test]
fn selectors_are_validated() {
    assert!(validate_selector("article > p.lead, #main").is_ok());
    let err = validate_selector("div[").expect_err("unterminated attribute selector");
    assert!(err.contains("div["));
}

#[test]
fn attribute_values_per_selector() {
    let got = attributes(
        LINKS,
        &[
            ("img".to_string(), "alt".to_string()),
            ("a[href^=mailto]".to_string(), "href".to_string()),
            ("p[".to_string(), "x".to_string()),
        ],
    );
    assert_eq!(got[0].len(), 6);
    assert_eq!(got[0][0], "Relative photo");
    assert_eq!(got[1], vec!["mailto:team@example.com"]);
    assert!(got[2].is_empty());
}

#[test]
fn hostile_input_does_not_panic() {
    let deep = "<div>".repeat(5_000) + "deep text" + &"</div>".repeat(5_000);
    let inline_deep = "<a href='/x'><b><i>".repeat(5_000) + "x";
    let cases = [
        String::new(),
        "<<<>>>&&&;;".to_string(),
        "<table><tr><td><table><tr><td>x".repeat(500),
        "<ul><li>".repeat(3_000),
        "<pre>".repeat(2_000) + "code",
        deep,
        inline_deep,
        "\u{0}\u{feff}<p>\u{a0}\u{2028}</p>".to_string(),
        "<img srcset=', ,, 2x , w'><img src='data:'><a href='http://['>x</a>".to_string(),
        "<ol start='9223372036854775807'><li>a</li><li>b</li></ol>".to_string(),
        "<table><tr rowspan='4294967295'><td colspan='99999'>a</td><td>b</td></tr></table>".to_string(),
    ];
    let wanted = Wanted { markdown: true, html: true, links: true, images: true };
    for html in &cases {
        for only_main in [true, false] {
            let opts = ExtractOptions { only_main_content: only_main, ..ExtractOptions::default() };
            let out = extract(html, &url(DOCS_URL), &opts, wanted);
            assert!(out.markdown.is_some());
        }
    }
}
