//! Class and id vocabulary of the content filter: which words in an element's `class`
//! or `id` hint at content, at boilerplate, at a byline or at a share bar.
//!
//! Each string is scanned once, case-insensitively, against all words at the same time
//! (an Aho-Corasick automaton reporting every match, overlapping ones too), so the filter
//! never runs a pattern per word.

/// Word that suggests boilerplate strong enough to drop the element outright.
pub(crate) const UNLIKELY: u8 = 1;
/// Word that vetoes [`UNLIKELY`] (the element may still be a content wrapper).
pub(crate) const MAYBE: u8 = 2;
/// Word that raises the element's weight.
pub(crate) const POSITIVE: u8 = 4;
/// Word that lowers the element's weight.
pub(crate) const NEGATIVE: u8 = 8;
/// Word that marks an author line.
pub(crate) const BYLINE: u8 = 16;
/// Whole word "share"/"sharedaddy": a share bar.
pub(crate) const SHARE: u8 = 32;
/// Whole word naming page chrome that is never content (cookie, newsletter, related...;
/// see `chrome`).
pub(crate) const CHROME: u8 = 64;
/// Whole word naming content (content, article, main, body...): vetoes [`CHROME`].
pub(crate) const CONTENT: u8 = 128;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Anywhere in the string.
    Sub,
    /// Delimited by spaces or the ends of the string.
    SpaceToken,
    /// Not glued to a letter or digit on either side.
    Word,
}

struct Pat {
    word: &'static [u8],
    flags: u8,
    kind: Kind,
}

const fn sub(word: &'static str, flags: u8) -> Pat {
    Pat { word: word.as_bytes(), flags, kind: Kind::Sub }
}

const fn word(word: &'static str, flags: u8) -> Pat {
    Pat { word: word.as_bytes(), flags, kind: Kind::Word }
}

const U: u8 = UNLIKELY;
const N: u8 = NEGATIVE;
const P: u8 = POSITIVE;
const M: u8 = MAYBE;

static PATS: &[Pat] = &[
    sub("-ad-", U | N),
    sub("ai2html", U),
    sub("banner", U | N),
    sub("breadcrumbs", U),
    sub("combx", U | N),
    sub("comment", U | N),
    sub("community", U),
    sub("cover-wrap", U),
    sub("disqus", U),
    sub("extra", U),
    sub("footer", U | N),
    sub("gdpr", U | N),
    sub("header", U),
    sub("legends", U),
    sub("menu", U),
    sub("related", U | N),
    sub("remark", U),
    sub("replies", U),
    sub("rss", U),
    sub("shoutbox", U | N),
    sub("sidebar", U | N),
    sub("skyscraper", U | N),
    sub("social", U),
    sub("sponsor", U | N),
    sub("supplemental", U),
    sub("ad-break", U),
    sub("agegate", U),
    sub("pagination", U | P),
    sub("pager", U),
    sub("popup", U),
    sub("yom-remote", U),
    sub("and", M),
    sub("article", M | P),
    sub("body", M | P),
    sub("column", M),
    sub("content", M | P),
    sub("main", M | P),
    sub("mathjax", M),
    sub("shadow", M),
    sub("entry", P),
    sub("hentry", P),
    sub("h-entry", P),
    sub("page", P),
    sub("post", P),
    sub("text", P),
    sub("blog", P),
    sub("story", P),
    sub("hidden", N),
    Pat { word: b"hid", flags: N, kind: Kind::SpaceToken },
    sub("com-", N),
    sub("contact", N),
    sub("masthead", N),
    sub("media", N),
    sub("meta", N),
    sub("outbrain", N),
    sub("promo", N),
    sub("scroll", N),
    sub("share", N),
    sub("shopping", N),
    sub("tags", N),
    sub("widget", N),
    sub("byline", BYLINE),
    sub("author", BYLINE),
    sub("dateline", BYLINE),
    sub("writtenby", BYLINE),
    sub("p-author", BYLINE),
    word("share", SHARE | CHROME),
    word("sharedaddy", SHARE),
    word("cookie", CHROME),
    word("cookies", CHROME),
    word("consent", CHROME),
    word("gdpr", CHROME),
    word("newsletter", CHROME),
    word("newsletters", CHROME),
    word("subscribe", CHROME),
    word("subscription", CHROME),
    word("sharing", CHROME),
    word("sharebar", CHROME),
    word("social", CHROME),
    word("breadcrumb", CHROME),
    word("breadcrumbs", CHROME),
    word("related", CHROME),
    word("comment", CHROME),
    word("comments", CHROME),
    word("advert", CHROME),
    word("adverts", CHROME),
    word("advertisement", CHROME),
    word("promo", CHROME),
    word("promos", CHROME),
    word("popup", CHROME),
    word("modal", CHROME),
    word("authorbox", CHROME),
    word("author-box", CHROME),
    word("author-bio", CHROME),
    word("author-info", CHROME),
    word("author-card", CHROME),
    word("author-profile", CHROME),
    word("about-author", CHROME),
    word("about-the-author", CHROME),
    word("content", CONTENT),
    word("article", CONTENT),
    word("main", CONTENT),
    word("body", CONTENT),
    word("entry", CONTENT),
    word("story", CONTENT),
];

fn is_alnum(b: Option<&u8>) -> bool {
    b.is_some_and(|c| c.is_ascii_alphanumeric())
}

fn is_space(b: Option<&u8>) -> bool {
    b.is_none_or(|&c| c == b' ')
}

/// Every word of [`PATS`] at once, ASCII case ignored (a DFA: one step a byte).
static AUTOMATON: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| {
    aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(PATS.iter().map(|p| p.word))
        .expect("the vocabulary builds")
});

/// Flags of every word found in `s` (a class attribute or an id).
pub(crate) fn scan(s: &str) -> u8 {
    // Most elements have no class or id: no search set up for them.
    if s.is_empty() {
        return 0;
    }
    let hay = s.as_bytes();
    let mut flags = 0u8;
    for m in AUTOMATON.find_overlapping_iter(hay) {
        let Some(pat) = PATS.get(m.pattern().as_usize()) else { continue };
        let (start, end) = (m.start(), m.end());
        let before = if start == 0 { None } else { hay.get(start - 1) };
        let after = hay.get(end);
        let ok = match pat.kind {
            Kind::Sub => true,
            Kind::SpaceToken => is_space(before) && is_space(after),
            Kind::Word => !is_alnum(before) && !is_alnum(after),
        };
        if ok {
            flags |= pat.flags;
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_case_insensitively() {
        assert_eq!(scan("Site-Header") & UNLIKELY, UNLIKELY);
        assert_eq!(scan("entry-content") & (POSITIVE | MAYBE), POSITIVE | MAYBE);
        assert_eq!(scan("x hid") & NEGATIVE, NEGATIVE);
        assert_eq!(scan("hide") & NEGATIVE, 0);
        assert_eq!(scan("share-bar") & SHARE, SHARE);
        assert_eq!(scan("shared") & SHARE, 0);
        assert_eq!(scan("post_share") & SHARE, SHARE);
        // Matches that overlap all count: "share" (glued to "d", no) inside "sharedaddy" (yes).
        assert_eq!(scan("x Sharedaddy") & SHARE, SHARE);
        assert_eq!(scan("combx-comment") & (UNLIKELY | NEGATIVE), UNLIKELY | NEGATIVE);
        assert_eq!(scan(""), 0);
        assert_eq!(scan("cookie-banner") & CHROME, CHROME);
        assert_eq!(scan("x Modal-Window") & CHROME, CHROME);
        assert_eq!(scan("shared") & CHROME, 0);
        assert_eq!(scan("modality") & CHROME, 0);
        assert_eq!(scan("entry-content share-on") & (CHROME | CONTENT), CHROME | CONTENT);
    }
}
