//! Code helpers of the Markdown writer: verbatim text of `pre` blocks, the language
//! of a code block from its classes, and fence/backtick sizing.

use super::dom::{Dom, Id, NONE};
use super::tags::Tag;

/// Longest run of `ch` in `s` (sizes the backtick fence of a code span).
pub(crate) fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        if c == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// Longest backtick run opening a line of `code` (a fence must be longer).
pub(crate) fn longest_fence(code: &str) -> usize {
    code.lines().map(|l| l.trim_start().chars().take_while(|&c| c == '`').count()).max().unwrap_or(0)
}

/// Text of a `pre`, verbatim, with `br` and block children as line breaks.
pub(crate) fn pre_text(dom: &Dom, id: Id, out: &mut String, depth: u32) {
    if depth >= super::markdown::MAX_DEPTH {
        dom.text_content(id, out);
        return;
    }
    let mut c = dom.n(id).first;
    while c != NONE {
        let tag = dom.tag(c);
        match tag {
            Tag::Text => out.push_str(dom.text(c)),
            Tag::Br => out.push('\n'),
            _ => {
                let block = tag.is_block() && tag != Tag::Pre;
                if block && !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                pre_text(dom, c, out, depth + 1);
                if block && !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        c = dom.n(c).next;
    }
}

fn language_from_class(class: &str) -> Option<String> {
    if let Some(i) = class.find("brush:") {
        let rest = class.get(i + 6..).unwrap_or("").trim_start();
        let lang: String = rest.chars().take_while(|c| !c.is_whitespace() && *c != ';').collect();
        if !lang.is_empty() {
            return Some(lang);
        }
    }
    class.split_ascii_whitespace().find_map(|tok| {
        ["language-", "lang-", "highlight-source-", "highlight-"]
            .iter()
            .find_map(|p| tok.strip_prefix(p))
            .filter(|l| !l.is_empty() && *l != "none" && *l != "plaintext")
            .map(str::to_string)
    })
}

/// Language of a code block, from the `pre`, its `code` child or its wrapper.
pub(crate) fn code_language(dom: &Dom, pre: Id) -> String {
    let code = dom.first_elem_child(pre);
    let mut ids = vec![pre];
    if code != NONE && dom.tag(code) == Tag::Code {
        ids.push(code);
    }
    let parent = dom.parent(pre);
    if parent != NONE && dom.is_elem(parent) {
        ids.push(parent);
    }
    ids.iter()
        .find_map(|&i| {
            dom.attr(i, "data-lang")
                .map(str::to_string)
                .filter(|l| !l.trim().is_empty())
                .or_else(|| language_from_class(dom.class(i)))
        })
        .map(|l| l.chars().filter(|c| !c.is_whitespace() && *c != '`').collect())
        .unwrap_or_default()
}
