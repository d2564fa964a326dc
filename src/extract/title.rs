//! The article title as the content filter sees it, used to drop the in-page heading
//! that merely repeats the title (the title is reported separately in metadata).

use super::dom::Dom;
use super::stats::is_space;
use super::tags::Tag;

const SEPARATORS: &[char] = &['|', '-', '\\', '/', '>', '»'];
const HIERARCHICAL: &[char] = &['\\', '/', '>', '»'];

fn word_count(s: &str) -> usize {
    // Splitting on whitespace runs, as `split(/\s+/)` does, counts empty ends too.
    let trimmed_words = s.split(is_space).filter(|w| !w.is_empty()).count();
    let lead = usize::from(s.starts_with(is_space));
    let trail = usize::from(s.ends_with(is_space) && !s.trim_matches(is_space).is_empty());
    (trimmed_words + lead + trail).max(1)
}

/// Trims and collapses runs of two or more whitespace characters into one space.
pub(crate) fn normalize(s: &str) -> String {
    let s = s.trim_matches(is_space);
    let mut out = String::with_capacity(s.len());
    let mut run = 0usize;
    let mut first_ws = ' ';
    for c in s.chars() {
        if is_space(c) {
            if run == 0 {
                first_ws = c;
            }
            run += 1;
            continue;
        }
        match run {
            0 => {}
            1 => out.push(first_ws),
            _ => out.push(' '),
        }
        run = 0;
        out.push(c);
    }
    out
}

/// Index of the last separator that is followed by a space.
fn last_separator_then_space(s: &str) -> Option<usize> {
    let mut found = None;
    let mut prev: Option<(usize, char)> = None;
    for (i, c) in s.char_indices() {
        if c == ' '
            && let Some((pi, pc)) = prev
            && SEPARATORS.contains(&pc)
        {
            found = Some(pi);
        }
        prev = Some((i, c));
    }
    found
}

/// Does `s` contain " X " with X a separator?
fn has_spaced(s: &str, set: &[char]) -> bool {
    let chars: Vec<char> = s.chars().collect();
    chars.windows(3).any(|w| w[0] == ' ' && w[2] == ' ' && set.contains(&w[1]))
}

/// Derives the article title from the document `<title>`, cutting site names off.
pub(crate) fn article_title(doc_title: &str, dom: &Dom) -> String {
    let orig = doc_title.trim_matches(is_space).to_string();
    let mut cur = orig.clone();
    let mut hierarchical = false;
    if has_spaced(&cur, SEPARATORS) {
        hierarchical = has_spaced(&cur, HIERARCHICAL);
        if let Some(i) = last_separator_then_space(&orig) {
            cur = orig.get(..i).unwrap_or("").to_string();
        }
        if word_count(&cur) < 3
            && let Some(i) = orig.find(SEPARATORS)
        {
            let sep_len = orig[i..].chars().next().map_or(1, char::len_utf8);
            cur = orig.get(i + sep_len..).unwrap_or("").to_string();
        }
    } else if cur.contains(": ") {
        let trimmed = cur.trim_matches(is_space);
        let mut text = String::new();
        let matches_heading = dom.descendants(0).any(|id| {
            if !matches!(dom.tag(id), Tag::H1 | Tag::H2) {
                return false;
            }
            text.clear();
            dom.text_content(id, &mut text);
            text.trim_matches(is_space) == trimmed
        });
        if !matches_heading {
            let last = orig.rfind(':').map_or(0, |i| i + 1);
            cur = orig.get(last..).unwrap_or("").to_string();
            let first = orig.find(':').unwrap_or(0);
            if word_count(&cur) < 3 {
                cur = orig.get(first + 1..).unwrap_or("").to_string();
            } else if word_count(orig.get(..first).unwrap_or("")) > 5 {
                cur = orig.clone();
            }
        }
    } else {
        let units = cur.encode_utf16().count();
        if !(15..=150).contains(&units) {
            let mut h1s = dom.descendants(0).filter(|&id| dom.tag(id) == Tag::H1);
            if let (Some(h1), None) = (h1s.next(), h1s.next()) {
                let mut text = String::new();
                dom.text_content(h1, &mut text);
                cur = normalize(&text);
            }
        }
    }
    cur = normalize(&cur);
    let words = word_count(&cur);
    if words <= 4 {
        let stripped: String = orig.chars().filter(|c| !SEPARATORS.contains(c)).collect();
        if !hierarchical || words + 1 != word_count(&stripped) {
            cur = orig;
        }
    }
    cur
}

fn tokens(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// How much of `b`'s wording also appears in `a` (1 = all of it, 0 = none).
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    let ta = tokens(a);
    let tb = tokens(b);
    if ta.is_empty() || tb.is_empty() {
        return 0.0;
    }
    let joined_len =
        |v: &[&String]| -> usize { v.iter().map(|t| t.len()).sum::<usize>() + v.len().saturating_sub(1) };
    let all: Vec<&String> = tb.iter().collect();
    let uniq: Vec<&String> = tb.iter().filter(|t| !ta.contains(t)).collect();
    let total = joined_len(&all);
    if total == 0 {
        return 0.0;
    }
    1.0 - joined_len(&uniq) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_counts_shared_words() {
        assert!(similarity("Hello big world", "hello world") > 0.99);
        assert!(similarity("Hello", "goodbye moon") < 0.01);
    }

    #[test]
    fn normalize_collapses_long_runs_only() {
        assert_eq!(normalize("  a  b\nc "), "a b\nc");
    }
}
