//! Serializes a subtree of the working tree back to HTML for the `html` output, with
//! link and image URLs made absolute and scripting/styling attributes left out.

use url::Url;

use super::dom::{Data, Dom, Id, NONE};
use super::tags::Tag;
use super::urls;

/// Appends `s` to `out` as HTML text or attribute value: `&`, `<`, `>`, `"` and the
/// no-break space written as references. The one HTML escaper of the crate (the document
/// converters and the pipeline use it too).
pub fn escape_html(out: &mut String, s: &str) {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let rep = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\u{a0}' => "&nbsp;",
            _ => continue,
        };
        out.push_str(s.get(start..i).unwrap_or(""));
        out.push_str(rep);
        start = i + c.len_utf8();
    }
    out.push_str(s.get(start..).unwrap_or(""));
}

fn is_dropped_attr(name: &str) -> bool {
    name == "style" || name.starts_with("on")
}

fn open_tag(dom: &Dom, id: Id, base: &Url, out: &mut String) {
    let tag = dom.tag(id);
    let name = match (tag, dom.element(id)) {
        (Tag::Other, Some(el)) => el.name(),
        _ => tag.name(),
    };
    out.push('<');
    out.push_str(name);
    if let Data::Elem(el) = dom.n(id).data {
        for (k, v) in el.attrs() {
            if is_dropped_attr(k) {
                continue;
            }
            let value = match (k, tag) {
                ("href", Tag::A) => urls::resolve_str(base, v),
                ("src", Tag::Img) => continue,
                ("src" | "poster", _) => urls::resolve_str(base, v),
                _ => v.to_string(),
            };
            out.push(' ');
            out.push_str(k);
            out.push_str("=\"");
            escape_html(out, &value);
            out.push('"');
        }
        if tag == Tag::Img
            && let Some(src) = urls::image_source(el)
        {
            let abs = if src.starts_with("data:") { src.to_string() } else { urls::resolve_str(base, src) };
            out.push_str(" src=\"");
            escape_html(out, &abs);
            out.push('"');
        }
    }
    out.push('>');
}

fn close_name<'a>(dom: &Dom<'a>, id: Id) -> &'a str {
    match (dom.tag(id), dom.element(id)) {
        (Tag::Other, Some(el)) => el.name(),
        (tag, _) => tag.name(),
    }
}

/// Serializes `root` and its subtree.
pub(crate) fn to_html(dom: &Dom, root: Id, base: &Url) -> String {
    let mut out = String::new();
    write_node(dom, root, base, &mut out);
    out
}

fn write_node(dom: &Dom, root: Id, base: &Url, out: &mut String) {
    // Iterative walk: deep documents must not exhaust the stack.
    let mut cur = root;
    loop {
        let tag = dom.tag(cur);
        let mut descend = false;
        match tag {
            Tag::Text => escape_html(out, dom.text(cur)),
            Tag::Document => descend = true,
            _ => {
                open_tag(dom, cur, base, out);
                if !tag.is_void() {
                    descend = true;
                }
            }
        }
        if descend && dom.n(cur).first != NONE {
            cur = dom.n(cur).first;
            continue;
        }
        if descend && tag != Tag::Document {
            close(dom, cur, out);
        }
        // Climb until a next sibling exists, closing elements on the way.
        loop {
            if cur == root {
                return;
            }
            let next = dom.n(cur).next;
            if next != NONE {
                cur = next;
                break;
            }
            cur = dom.parent(cur);
            if cur == NONE {
                return;
            }
            if dom.tag(cur) != Tag::Document {
                close(dom, cur, out);
            }
        }
    }
}

fn close(dom: &Dom, id: Id, out: &mut String) {
    out.push_str("</");
    out.push_str(close_name(dom, id));
    out.push('>');
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_is_escaped_around_other_characters() {
        let mut out = String::new();
        super::escape_html(&mut out, "a<b> & \"c\"\u{a0}é\u{a0}\u{c2}\u{e0}ü<");
        assert_eq!(out, "a&lt;b&gt; &amp; &quot;c&quot;&nbsp;é&nbsp;\u{c2}\u{e0}ü&lt;");
        let mut out = String::from("kept ");
        super::escape_html(&mut out, "plain");
        assert_eq!(out, "kept plain");
    }
}
