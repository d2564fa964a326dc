//! Text escaping for the Markdown writer: only what would otherwise change meaning
//! (block markers at line start, emphasis characters, brackets in link text, HTML-like
//! `<`), plus link destinations and titles that stay one token, and the lookups that
//! decide whether inline markup is needed at all.

use super::dom::{Dom, Id, NONE};
use super::tags::Tag;

/// Collapsible whitespace; a no-break space is folded in too, since Markdown has no
/// use for it and it would otherwise glue emphasis markers to words.
/// The set is defined once, by [`collapsible_len`].
pub(crate) fn is_collapsible(c: char) -> bool {
    let mut buf = [0u8; 4];
    collapsible_len(c.encode_utf8(&mut buf).as_bytes(), 0) != 0
}

/// Length in bytes of the collapsible character (see [`is_collapsible`]) starting at byte
/// `i` of UTF-8 text, or 0. Scanning bytes spares decoding characters in the Markdown
/// writer's busiest loop.
#[inline]
pub(crate) fn collapsible_len(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i) {
        Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0c) => 1,
        Some(0xc2) if bytes.get(i + 1) == Some(&0xa0) => 2,
        _ => 0,
    }
}

/// ASCII case-insensitive `starts_with`.
pub(crate) fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.as_bytes().get(..prefix.len()).is_some_and(|h| h.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Escapes characters that would end or nest bracketed text.
pub(crate) fn escape_brackets(out: &mut String, s: &str) {
    for c in s.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Writes a link destination, keeping it one token (no spaces, balanced parentheses).
pub(crate) fn push_destination(out: &mut String, url: &str) {
    let balanced = url.matches('(').count() == url.matches(')').count();
    for c in url.chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' if !balanced => out.push_str("%28"),
            ')' if !balanced => out.push_str("%29"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

/// Writes a link title in double quotes, on one line.
pub(crate) fn push_title(out: &mut String, title: &str) {
    out.push_str(" \"");
    for c in title.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Escapes one whitespace-free word of text.
pub(crate) fn escape_word(out: &mut String, word: &str, line_start: bool, in_link: bool) {
    let bytes = word.as_bytes();
    if line_start {
        let first = bytes.first().copied().unwrap_or(b' ');
        let all_same = bytes.iter().all(|&b| b == first);
        let numbered = {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            digits > 0
                && digits < 10
                && digits + 1 == bytes.len()
                && matches!(bytes.last(), Some(b'.' | b')'))
        };
        if matches!(first, b'#' | b'>') || (matches!(first, b'-' | b'+' | b'=') && all_same) {
            out.push('\\');
        } else if numbered {
            out.push_str(word.get(..word.len() - 1).unwrap_or(""));
            out.push('\\');
            out.push_str(word.get(word.len() - 1..).unwrap_or(""));
            return;
        }
    }
    escape_words(out, word, in_link);
}

/// Bytes the text writers must look at: whitespace, the lead byte of a no-break space,
/// and the characters that may need escaping. Every other byte is copied as it is.
const NOTABLE: [bool; 256] = {
    let mut table = [false; 256];
    let list = b" \t\n\r\x0c\xc2*`_[]<\\";
    let mut k = 0;
    while k < list.len() {
        table[list[k] as usize] = true;
        k += 1;
    }
    table
};

#[inline(always)]
fn notable(b: u8) -> bool {
    NOTABLE[usize::from(b)]
}

/// Whether byte `i` of `bytes` must be escaped. Neighbours outside a word are
/// whitespace, which no rule here treats as a letter, a digit or punctuation, so the
/// answer is the same for a word alone and for the word inside its text.
#[inline(always)]
fn needs_escape(bytes: &[u8], i: usize, in_link: bool) -> bool {
    match bytes.get(i) {
        Some(b'*' | b'`') => true,
        Some(b'_') => {
            let prev = if i == 0 { None } else { bytes.get(i - 1) };
            let next = bytes.get(i + 1);
            !(prev.is_some_and(u8::is_ascii_alphanumeric) && next.is_some_and(u8::is_ascii_alphanumeric))
        }
        Some(b'[' | b']') => in_link,
        Some(b'<') => {
            bytes.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, b'/' | b'!' | b'?'))
        }
        Some(b'\\') => bytes.get(i + 1).is_some_and(u8::is_ascii_punctuation),
        _ => false,
    }
}

/// Writes the words of `text` in one pass, as [`escape_word`] would one by one away
/// from a line start, each whitespace run between them as one space. Whitespace at the
/// end is not written; returns whether there was some.
pub(crate) fn escape_words(out: &mut String, text: &str, in_link: bool) -> bool {
    let bytes = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while let Some(skip) = bytes.get(i..).and_then(|rest| rest.iter().position(|&b| notable(b))) {
        i += skip;
        // A lone space between words is written as it is: it stays in the run being
        // copied (the common case, one call to copy a run of words instead of one a word).
        if bytes[i] == b' ' && i > start && i + 1 < bytes.len() && collapsible_len(bytes, i + 1) == 0 {
            i += 1;
            continue;
        }
        let sep = collapsible_len(bytes, i);
        if sep == 0 {
            if needs_escape(bytes, i, in_link) {
                out.push_str(text.get(start..i).unwrap_or(""));
                out.push('\\');
                start = i;
            }
            i += 1;
            continue;
        }
        out.push_str(text.get(start..i).unwrap_or(""));
        i += sep;
        loop {
            let more = collapsible_len(bytes, i);
            if more == 0 {
                break;
            }
            i += more;
        }
        if i >= bytes.len() {
            return true;
        }
        out.push(' ');
        start = i;
    }
    out.push_str(text.get(start..).unwrap_or(""));
    false
}

/// Letters and digits of alphabetic scripts; ideographic scripts have no spaces
/// between words, so emphasis there is never "inside a word".
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && u32::from(c) < 0x2E80
}

/// First character written after `id` on the same line, looking through inline
/// siblings and inline ancestors (a few steps at most).
pub(crate) fn next_char(dom: &Dom, id: Id) -> Option<char> {
    let mut cur = id;
    for _ in 0..8 {
        let next = dom.n(cur).next;
        if next == NONE {
            cur = dom.parent(cur);
            if cur == NONE || dom.tag(cur).is_block() {
                return None;
            }
            continue;
        }
        let tag = dom.tag(next);
        if tag.is_block() || matches!(tag, Tag::Br | Tag::Img) {
            return None;
        }
        let first = if tag == Tag::Text {
            dom.text(next).chars().next()
        } else {
            dom.descendants(next).take(16).find_map(|d| dom.text(d).chars().next())
        };
        if first.is_some() {
            return first;
        }
        cur = next;
    }
    None
}

/// Is this an in-page "skip to content" link (noise once the page is flattened)?
pub(crate) fn is_skip_link(dom: &Dom, id: Id) -> bool {
    let mut text = String::new();
    dom.text_content(id, &mut text);
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ").to_ascii_lowercase();
    joined == "skip to content" || joined == "skip to main content"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass writer gives what escaping word by word, joined by spaces, gives.
    #[test]
    fn words_in_one_pass_match_word_by_word() {
        let texts = [
            " snake_case and _lead trail_ a*b `code` ",
            "x <b> a < b \\* \\a [link] \u{a0}nbsp\u{a0} end",
            "tab\tnew\nline\r\x0c__init__ done",
            "single",
            "   ",
        ];
        for in_link in [false, true] {
            for text in texts {
                let mut one_pass = String::new();
                let trailing = escape_words(&mut one_pass, text, in_link);
                let mut by_word = String::new();
                let words: Vec<&str> = text.split(is_collapsible).filter(|w| !w.is_empty()).collect();
                for (n, w) in words.iter().enumerate() {
                    if n > 0 || text.starts_with(is_collapsible) {
                        by_word.push(' ');
                    }
                    escape_word(&mut by_word, w, false, in_link);
                }
                if words.is_empty() {
                    by_word.clear();
                }
                assert_eq!(one_pass, by_word, "{text:?} in_link={in_link}");
                assert_eq!(trailing, text.ends_with(is_collapsible), "{text:?}");
            }
        }
    }
}
