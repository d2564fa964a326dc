//! Bounds on the shape of the markup, applied before it is parsed: how deeply elements
//! nest, and how many attributes one element has.
//!
//! html5ever's tree builder looks through the stack of open elements for every tag (its
//! "in scope" checks), so a page of tens of thousands of nested or unclosed elements costs
//! time growing with the square of its depth: 64 000 nested lists took 45 s. Browsers bound
//! the depth of the tree they build (Chromium stops nesting at 512 levels); so does this
//! module, by dropping the start tags that would open elements deeper than [`MAX_DEPTH`],
//! and their end tags, while keeping every character of text. Content past the bound
//! stays in the element at the bound, in document order, which is what a reader sees.
//!
//! The depth is estimated with a small model of the parser: void elements open nothing,
//! an element that closes an open one of the same name by itself (`li`, `p`, `td`, `tr`,
//! `option`, `dt`, `dd`) does so here too, raw text (`script`, `style`, `textarea`,
//! `title`) and comments are skipped whole. The model only decides what happens past the
//! bound; a page that stays within it passes through untouched and uncopied.
//!
//! html5ever's tokenizer also compares each attribute of a tag with every earlier one (to
//! drop duplicates), so one element of 100 000 attributes took over a second. A start tag
//! keeps its first [`MAX_ATTRIBUTES`] attributes here; the rest are cut, as no page needs
//! more (and an attribute holds no text a reader sees).

use std::borrow::Cow;

/// Elements nest at most this deep (as in Chromium's parser).
pub(crate) const MAX_DEPTH: usize = 512;

/// A start tag keeps at most this many attributes.
pub(crate) const MAX_ATTRIBUTES: usize = 100;
/// A tag shorter than this cannot hold more than [`MAX_ATTRIBUTES`] attributes (each takes
/// at least a name character and a separator), so only longer ones are counted.
const LONG_TAG: usize = 2 * MAX_ATTRIBUTES;

/// What the model needs to know of an element by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Opens nothing (`br`, `img`, ...).
    Void,
    /// Closes an open element of the same name by itself (`li`, `p`, `td`, ...).
    Sibling,
    /// Holds raw text, not markup (`script`, `style`, ...).
    RawText,
    /// Any other element.
    Other,
}

/// The class of the element named `name` (any case). One lookup per tag of every page, so
/// a match on the lower-cased bytes, not a search of name lists.
fn class(name: &str) -> Class {
    let mut lower = [0u8; 8];
    let Some(buffer) = lower.get_mut(..name.len()) else { return Class::Other };
    buffer.copy_from_slice(name.as_bytes());
    buffer.make_ascii_lowercase();
    match &*buffer {
        b"area" | b"base" | b"br" | b"col" | b"embed" | b"hr" | b"img" | b"input" | b"link" | b"meta"
        | b"param" | b"source" | b"track" | b"wbr" => Class::Void,
        b"li" | b"p" | b"td" | b"th" | b"tr" | b"option" | b"dt" | b"dd" => Class::Sibling,
        b"script" | b"style" | b"textarea" | b"title" | b"xmp" | b"noembed" | b"noframes" => Class::RawText,
        _ => Class::Other,
    }
}

/// A tag read from the markup.
struct Tag<'a> {
    /// From its `<` to its `>` (included).
    end: usize,
    name: &'a str,
    closing: bool,
    self_closing: bool,
}

/// Reads the tag starting at `at` (a `<`), or `None` when it is not a tag (text `<`).
fn tag_at(html: &str, at: usize) -> Option<Tag<'_>> {
    let bytes = html.as_bytes();
    let mut i = at + 1;
    let closing = bytes.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let start = i;
    while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b':') {
        i += 1;
    }
    if i == start || !bytes[start].is_ascii_alphabetic() {
        return None;
    }
    let name = &html[start..i];
    // The end of the tag, skipping quoted attribute values (long ones are common: class
    // lists, styles, inline images).
    loop {
        let Some(off) = memchr::memchr3(b'>', b'"', b'\'', &bytes[i..]) else {
            i = bytes.len();
            break;
        };
        i += off;
        let quote = bytes[i];
        if quote == b'>' {
            break;
        }
        i = memchr::memchr(quote, &bytes[i + 1..]).map_or(bytes.len(), |close| i + 1 + close + 1);
    }
    let end = (i + 1).min(bytes.len());
    let self_closing = i > 0 && bytes.get(i - 1) == Some(&b'/');
    Some(Tag { end, name, closing, self_closing })
}

/// Where the raw text of `<name>` that started before `from` ends (its `</name`), or the end.
fn raw_text_end(html: &str, from: usize, name: &str) -> usize {
    let bytes = html.as_bytes();
    let mut i = from;
    while let Some(off) = memchr::memmem::find(&bytes[i..], b"</") {
        let at = i + off;
        let after = at + 2;
        if bytes.len() >= after + name.len()
            && bytes[after..after + name.len()].eq_ignore_ascii_case(name.as_bytes())
        {
            return at;
        }
        i = after;
    }
    bytes.len()
}

/// Where the first [`MAX_ATTRIBUTES`] attributes of the start tag ending at `end` (whose
/// name ends at `name_end`) end, when it has more; `None` when it has no more.
/// Attributes are read as the tokenizer reads them: a name up to a space, `/`, `>` or `=`,
/// then an optional `=` and a quoted or bare value.
fn attributes_cut(html: &str, name_end: usize, end: usize) -> Option<usize> {
    let bytes = &html.as_bytes()[..end];
    let mut i = name_end;
    let mut count = 0;
    loop {
        let after_last = i;
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] == b'>' {
            return None;
        }
        if count == MAX_ATTRIBUTES {
            return Some(after_last);
        }
        count += 1;
        // The name (a leading '=' belongs to it).
        i += 1;
        while i < bytes.len()
            && !matches!(bytes[i], b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>' | b'=')
        {
            i += 1;
        }
        let after_name = i;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes.get(i) != Some(&b'=') {
            i = after_name;
            continue;
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        match bytes.get(i) {
            Some(&quote @ (b'"' | b'\'')) => {
                i = memchr::memchr(quote, &bytes[i + 1..]).map_or(bytes.len(), |close| i + 1 + close + 1);
            }
            _ => {
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
            }
        }
    }
}

/// `html` with no element nested deeper than [`MAX_DEPTH`] and no start tag of more than
/// [`MAX_ATTRIBUTES`] attributes (borrowed when already so).
pub(crate) fn bound(html: &str) -> Cow<'_, str> {
    bound_at(html, MAX_DEPTH)
}

fn bound_at(html: &str, max: usize) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    // A page with fewer tags than the bound cannot nest past it; its tags are still read
    // for their attributes when one of them could hold too many.
    let nesting = memchr::memchr_iter(b'<', bytes).count() > max;
    if !nesting && bytes.len() < LONG_TAG {
        return Cow::Borrowed(html);
    }
    // Open elements (names as written, up to the bound), and how many deeper start tags of
    // each (lower-cased) name were dropped, so their end tags are dropped too. Names are
    // borrowed from the page: this scan runs on every page, and allocates only past the
    // bound.
    let mut open: Vec<&str> = Vec::new();
    let mut deeper = 0usize;
    let mut dropped: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', &bytes[i..]) {
        let at = i + off;
        if bytes[at..].starts_with(b"<!--") {
            i = memchr::memmem::find(&bytes[at + 4..], b"-->").map_or(bytes.len(), |e| at + 4 + e + 3);
            continue;
        }
        if matches!(bytes.get(at + 1), Some(b'!' | b'?')) {
            i = memchr::memchr(b'>', &bytes[at..]).map_or(bytes.len(), |e| at + e + 1);
            continue;
        }
        let Some(tag) = tag_at(html, at) else {
            i = at + 1;
            continue;
        };
        let name = tag.name;
        let kind = class(name);
        let same = |o: &&str| o.eq_ignore_ascii_case(name);
        let mut drop_tag = false;
        if !nesting {
            // Only the attributes were to be bounded.
        } else if tag.closing {
            let deeper_one = if deeper > 0 {
                dropped.get_mut(&name.to_ascii_lowercase()).filter(|n| **n > 0)
            } else {
                None
            };
            if let Some(n) = deeper_one {
                *n -= 1;
                deeper -= 1;
                drop_tag = true;
            } else if let Some(pos) = open.iter().rposition(same) {
                open.truncate(pos);
            }
        } else if !(kind == Class::Void || tag.self_closing) {
            if kind == Class::Sibling && open.last().is_some_and(same) {
                open.pop();
            }
            if open.len() >= max {
                drop_tag = true;
                deeper += 1;
                *dropped.entry(name.to_ascii_lowercase()).or_insert(0) += 1;
            } else {
                open.push(name);
            }
        }
        if !drop_tag && !tag.closing && tag.end - at > LONG_TAG {
            let name_end = at + 1 + name.len();
            if let Some(cut) = attributes_cut(html, name_end, tag.end) {
                let buffer = out.get_or_insert_with(|| String::with_capacity(html.len()));
                buffer.push_str(&html[copied..cut]);
                buffer.push_str(if tag.self_closing { "/>" } else { ">" });
                copied = tag.end;
            }
        }
        if drop_tag {
            let buffer = out.get_or_insert_with(|| String::with_capacity(html.len()));
            buffer.push_str(&html[copied..at]);
            // A space keeps words on either side of the dropped tag apart.
            buffer.push(' ');
            copied = tag.end;
        }
        i = tag.end;
        if !tag.closing && kind == Class::RawText && !tag.self_closing {
            i = raw_text_end(html, i, name);
        }
    }
    match out {
        Some(mut buffer) => {
            buffer.push_str(&html[copied..]);
            Cow::Owned(buffer)
        }
        None => Cow::Borrowed(html),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shallow_pages_pass_through_uncopied() {
        let html = "<html><body><ul><li>a<li>b</ul><p>x<p>y<script>if (a<b) {}</script><br></body></html>";
        assert!(matches!(bound_at(html, 8), Cow::Borrowed(_)));
        let flat: String = "<li>item".repeat(5000);
        assert!(matches!(bound_at(&format!("<ul>{flat}</ul>"), 8), Cow::Borrowed(_)), "siblings do not nest");
    }

    #[test]
    fn deep_nesting_keeps_its_text_within_the_bound() {
        let html = format!("{}deep text{}", "<div>word ".repeat(20), "</div>".repeat(20));
        let bounded = bound_at(&html, 5);
        assert_eq!(bounded.matches("<div>").count(), 5);
        assert_eq!(bounded.matches("</div>").count(), 5);
        assert_eq!(bounded.matches("word").count(), 20, "no text is lost");
        assert!(bounded.contains("deep text"));
        let unclosed = format!("<p>{}end", "<b>bold ".repeat(50));
        let bounded = bound_at(&unclosed, 3);
        assert!(bounded.matches("<b>").count() <= 3);
        assert_eq!(bounded.matches("bold").count(), 50);
    }

    #[test]
    fn quoted_attribute_values_may_hold_angle_brackets() {
        let html = format!("{}x", r#"<div title="a>b" data-x='c>d'>"#.repeat(10));
        let bounded = bound_at(&html, 4);
        assert_eq!(bounded.matches("<div").count(), 4, "each tag ends at its own '>'");
        assert_eq!(bounded.matches("a>b").count(), 4);
        let unterminated = format!("{}<div class=\"open", "<div>".repeat(10));
        assert_eq!(bound_at(&unterminated, 4).matches("<div>").count(), 4);
    }

    #[test]
    fn a_start_tag_keeps_its_first_attributes_only() {
        let many: String = (0..MAX_ATTRIBUTES + 50).map(|i| format!(" data-a{i}=\"v>{i}\"")).collect();
        let html = format!("<p>before</p><a href=\"/x\"{many}>text</a><img src=\"/i.png\"{many}/>after");
        let bounded = bound(&html);
        // `href` and `src` are the first of each tag's attributes.
        assert_eq!(bounded.matches("data-a").count(), 2 * (MAX_ATTRIBUTES - 1), "{bounded}");
        assert!(bounded.contains(&format!("data-a{}=\"v>{0}\">text</a>", MAX_ATTRIBUTES - 2)), "{bounded}");
        assert!(bounded.contains(&format!("data-a{}=\"v>{0}\"/>after", MAX_ATTRIBUTES - 2)), "{bounded}");
        assert!(bounded.starts_with("<p>before</p><a href=\"/x\" data-a0="));
        // Bare values, names without values, and exactly the bound: untouched.
        let bare: String = (0..MAX_ATTRIBUTES).map(|i| format!(" b{i}=v{i} c{i}")).collect();
        let cut = bound(&format!("<div{bare}>x</div>")).into_owned();
        assert_eq!(
            cut,
            format!("<div{}>x</div>", &bare[..bare.find(&format!(" b{}", MAX_ATTRIBUTES / 2)).unwrap()])
        );
        let exact: String = (0..MAX_ATTRIBUTES).map(|i| format!(" d{i}")).collect();
        let html = format!("<div{exact}>x</div>");
        assert!(matches!(bound(&html), Cow::Borrowed(_)));
    }

    #[test]
    fn raw_text_and_comments_are_not_read_as_tags() {
        let html =
            format!("<script>{}</script><!-- {} --><div>x</div>", "<div>".repeat(50), "<div>".repeat(50));
        assert!(matches!(bound_at(&html, 3), Cow::Borrowed(_)));
    }
}
