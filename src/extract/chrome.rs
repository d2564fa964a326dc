//! Page chrome: the regions of a page that are never its main content, whatever the
//! length of the page. The main-content filter (`article`) scores text and relaxes its
//! rules when little text is found, which on a short page would bring navigation and
//! banners back; these regions are therefore dropped by rules that are never relaxed.
//!
//! Two kinds, decided per element while the working tree is built:
//!
//! - **regions** by element or role: `nav`, `aside`, `header`/`footer` outside the page's
//!   `article`/`main`, `role=navigation|banner|contentinfo|complementary|search`, modal
//!   dialogs (`aria-modal=true`, `role=alertdialog`);
//! - **named** by a whole word of a class or id (not glued to letters or digits): cookie,
//!   consent, gdpr, newsletter, subscribe, share, social, breadcrumb, related, comments,
//!   advert, promo, popup, modal, author boxes (`patterns::CHROME`, found by the same
//!   one-pass scan that reads the filter's other class words).
//!
//! An element that encloses the page's declared content (`main`, `article`,
//! `role=main`, `itemprop=articleBody`) is never chrome, and a named one that encloses
//! the page's `h1` or names content in the same attribute (`entry-content share-on`) is
//! kept too: class words also sit on page-level wrappers.
//!
//! Chrome, like ad slots, is only marked while building: the content filter scores the page
//! as it is (taking a region out would change which container wins), and the marked
//! subtrees are dropped from whatever content it chooses. Marking is one backwards sweep
//! over the arena, linear at any depth.

use super::dom::{Dom, Id, NONE};
use super::patterns;
use super::tags::Tag;

/// Why an element is chrome, as found while building.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// By element or role.
    Region,
    /// By class or id words.
    Named,
}

/// Roles of regions that are never content.
const REGION_ROLES: &[&str] =
    &["navigation", "banner", "contentinfo", "complementary", "search", "alertdialog"];

/// The chrome kind of an element (tag `tag`; vocabulary flags of its class and id from
/// `patterns::scan`; its id, role and `aria-modal`), or `None`. `in_article` says whether
/// an `article` or `main` encloses it.
pub(crate) fn kind(
    tag: Tag,
    flags: (u8, u8),
    id: &str,
    role: &str,
    aria_modal: bool,
    in_article: bool,
) -> Option<Kind> {
    if matches!(tag, Tag::Html | Tag::Body | Tag::Main | Tag::Article) {
        return None;
    }
    let region = match tag {
        Tag::Nav | Tag::Aside => true,
        Tag::Header | Tag::Footer => !in_article,
        _ => false,
    };
    if region || aria_modal || role.split_ascii_whitespace().any(|r| REGION_ROLES.contains(&r)) {
        return Some(Kind::Region);
    }
    if tag.is_phrasing() || matches!(tag, Tag::A | Tag::Span | Tag::Other) {
        // Inline words (`<a class="popup">` glossaries, share icons) are part of the text.
        return None;
    }
    let names = |f: u8| f & patterns::CHROME != 0 && f & patterns::CONTENT == 0;
    let (class, id_flags) = flags;
    (names(class) || (names(id_flags) && is_short_name(id))).then_some(Kind::Named)
}

/// Whether an id reads as a component name (`comments`, `cookie-notice`) rather than a
/// slug made from a heading (`sharing-with-a-single-developer`).
fn is_short_name(id: &str) -> bool {
    id.split(['-', '_']).filter(|p| !p.is_empty()).count() <= 3
}

/// Mark of an ad slot or consent container (ad blocking on) holding little text.
pub(crate) const AD: u8 = 0x10;
/// Mark of a chrome region (by element or role).
pub(crate) const REGION: u8 = 0x20;
/// Mark of named chrome (by class or id words).
pub(crate) const NAMED: u8 = 0x40;
/// Every drop mark.
pub(crate) const ALL: u8 = AD | REGION | NAMED;

/// Flagged ad or consent containers with at least this much text are kept.
const AD_MAX_TEXT: u32 = 2000;

/// Does the markup declare this element as the page's content?
fn declares_content(dom: &Dom, id: Id) -> bool {
    matches!(dom.tag(id), Tag::Main | Tag::Article)
        || dom.attr(id, "role") == Some("main")
        || dom.attr(id, "itemprop").is_some_and(|v| v.split_ascii_whitespace().any(|t| t == "articleBody"))
}

/// Sets the drop marks of a freshly built tree: `ads` (flagged while building) that hold
/// little text, and the `chrome` found while building that does not enclose the page's
/// content. Marked nodes stay in place, so the main-content filter scores the page as it
/// is, and are dropped from whatever content is finally chosen ([`Dom::drop_marked`]).
pub(crate) fn mark(dom: &mut Dom, ads: &[Id], chrome: &[(Id, Kind)]) {
    if ads.is_empty() && chrome.is_empty() {
        return;
    }
    // Nodes are numbered in document order, so every child comes after its parent: one
    // backwards sweep gives each node its subtree's text length and whether the subtree
    // holds declared content or an h1.
    const DECLARED: u8 = 1;
    const HEADING: u8 = 2;
    let count = dom.nodes.len();
    let mut text = vec![0u32; count];
    let mut holds = vec![0u8; count];
    for id in (1..count as Id).rev() {
        let i = id as usize;
        if let Some(info) = dom.text_info(id) {
            text[i] = info.seg.len;
        } else if dom.is_elem(id) {
            if declares_content(dom, id) {
                holds[i] |= DECLARED;
            }
            if dom.tag(id) == Tag::H1 {
                holds[i] |= HEADING;
            }
        }
        let parent = dom.parent(id);
        if parent != NONE {
            let p = parent as usize;
            text[p] = text[p].saturating_add(text[i]);
            holds[p] |= holds[i];
        }
    }
    for &id in ads {
        if text[id as usize] < AD_MAX_TEXT {
            dom.n_mut(id).mark |= AD;
        }
    }
    for &(id, kind) in chrome {
        // What the element encloses, itself excluded (an `article` is never chrome).
        let inner = holds[id as usize];
        let bit = match kind {
            Kind::Region if inner & DECLARED == 0 => REGION,
            Kind::Named if inner == 0 => NAMED,
            _ => continue,
        };
        dom.n_mut(id).mark |= bit;
    }
}

/// The drop marks to apply to `root` of `dom`: every kind, unless that leaves nothing to
/// show, then fewer (a page that is all "related" is better returned than emptied).
pub(crate) fn mask_for(dom: &Dom, root: Id) -> u8 {
    [ALL, AD | REGION, AD].into_iter().find(|&mask| has_content_outside(dom, root, mask)).unwrap_or(AD)
}

/// Whether `root` shows text or an image outside the subtrees marked with `mask`.
pub(crate) fn has_content_outside(dom: &Dom, root: Id, mask: u8) -> bool {
    let mut id = dom.n(root).first;
    while id != NONE {
        if dom.n(id).mark & mask != 0 {
            id = dom.next_skipping_children(id, root);
            continue;
        }
        let visible = match dom.tag(id) {
            Tag::Text => dom.text_info(id).is_some_and(|info| !info.seg.empty),
            Tag::Img => true,
            _ => false,
        };
        if visible {
            return true;
        }
        id = dom.next_in(id, root);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{ExtractOptions, Wanted, extract};

    fn main_markdown(html: &str, opts: &ExtractOptions) -> String {
        let url = url::Url::parse("https://blog.example/post").expect("url");
        extract(html, &url, opts, Wanted { markdown: true, ..Wanted::default() }).markdown.expect("markdown")
    }

    const SHORT: &str = r#"<html><head><title>Spring notes</title></head><body>
        <header class="site-header"><a href="/">Garden Diary</a></header>
        <nav><a href="/a">Home</a> <a href="/b">Archive</a></nav>
        <div id="cookie" class="cookie cookie-banner">We use cookies. <button>Accept all</button></div>
        <main><article><h1>Spring notes</h1><p>The first short paragraph about sowing peas in March.</p>
        <p>The second one, about frost and fleece.</p></article></main>
        <aside><h3>Elsewhere</h3><a href="/x">Other post</a></aside>
        <footer>Copyright 2026 Garden Diary</footer></body></html>"#;

    #[test]
    fn a_short_page_keeps_its_text_and_drops_its_chrome() {
        let md = main_markdown(SHORT, &ExtractOptions::default());
        assert!(md.contains("sowing peas") && md.contains("frost and fleece"), "{md}");
        for chrome in ["cookies", "Accept all", "Garden Diary", "Archive", "Elsewhere", "Copyright"] {
            assert!(!md.contains(chrome), "{chrome:?} kept in:\n{md}");
        }
    }

    #[test]
    fn named_boxes_inside_a_long_article_are_dropped() {
        let body = "<p>Rivers carve valleys over millennia, moving sediment downstream, shaping plains.</p>"
            .repeat(12);
        let html = format!(
            r#"<html><body><article><h1>Rivers</h1>{body}
            <div class="author-bio"><p>Jane writes about water, rivers and lakes for many magazines.</p></div>
            <section id="comments"><p>Great post, I loved the part about sediment and plains.</p></section>
            <div class="related-posts"><p>Lakes of the north, and how they formed over time.</p></div>
            <div class="newsletter-signup"><p>Get our weekly letter about rivers, lakes and seas.</p></div>
            </article></body></html>"#
        );
        let md = main_markdown(&html, &ExtractOptions::default());
        assert!(md.contains("Rivers carve valleys"), "{md}");
        for boilerplate in ["Jane writes", "Great post", "Lakes of the north", "weekly letter"] {
            assert!(!md.contains(boilerplate), "{boilerplate:?} kept in:\n{md}");
        }
    }

    #[test]
    fn chrome_named_in_include_tags_or_with_main_content_off_is_kept() {
        let included =
            ExtractOptions { include_tags: vec!["nav".into(), "#cookie".into()], ..Default::default() };
        let md = main_markdown(SHORT, &included);
        assert!(md.contains("Archive") && md.contains("We use cookies"), "{md}");
        let whole = ExtractOptions { only_main_content: false, block_ads: false, ..Default::default() };
        let md = main_markdown(SHORT, &whole);
        assert!(md.contains("Archive") && md.contains("Garden Diary"), "{md}");
    }

    #[test]
    fn wrappers_that_hold_the_content_are_not_chrome() {
        let html = r#"<html><body><div class="page has-comments"><h1>Title</h1>
            <div><p>A short text in a wrapper whose class names comments.</p></div></div></body></html>"#;
        let md = main_markdown(html, &ExtractOptions::default());
        assert!(md.contains("A short text in a wrapper"), "{md}");
        let header = r#"<html><body><header><main><p>Everything lives in the header here.</p></main></header></body></html>"#;
        assert!(main_markdown(header, &ExtractOptions::default()).contains("Everything lives"));
    }

    #[test]
    fn a_page_of_only_chrome_is_not_emptied() {
        let html = r#"<html><body><div class="related"><p>Only related links here, nothing else.</p></div></body></html>"#;
        assert!(main_markdown(html, &ExtractOptions::default()).contains("Only related links"));
    }

    #[test]
    fn named_chrome_is_whole_words_and_content_words_veto() {
        let named = |class: &str| kind(Tag::Div, (patterns::scan(class), 0), "", "", false, false).is_some();
        for chrome in
            ["cookie-banner", "share", "post_share", "related-posts", "comments", "newsletter-signup"]
        {
            assert!(named(chrome), "{chrome}");
        }
        for content in
            ["shared", "sharedaddy2", "commentary", "entry-content share-on", "article-related", "modality"]
        {
            assert!(!named(content), "{content}");
        }
        assert!(named("x Modal-Window"));
        let by_id = |id: &str| kind(Tag::Div, (0, patterns::scan(id)), id, "", false, false).is_some();
        assert!(by_id("comments") && by_id("cookie-notice"));
        assert!(!by_id("sharing-with-a-single-developer"), "a heading's slug");
    }

    #[test]
    fn regions_by_element_and_role() {
        let none = (0, 0);
        assert_eq!(kind(Tag::Nav, none, "", "", false, true), Some(Kind::Region));
        assert_eq!(kind(Tag::Header, none, "", "", false, false), Some(Kind::Region));
        assert_eq!(kind(Tag::Header, none, "", "", false, true), None);
        assert_eq!(kind(Tag::Div, none, "", "search", false, false), Some(Kind::Region));
        assert_eq!(kind(Tag::Div, none, "", "", true, false), Some(Kind::Region));
        assert_eq!(kind(Tag::Body, (patterns::scan("modal-open"), 0), "", "", false, false), None);
        assert_eq!(kind(Tag::Div, (patterns::scan("related"), 0), "", "", false, false), Some(Kind::Named));
    }
}
