//! The simple HTML every converter writes: escaped text, blocks, lists with nesting, and
//! tables whose first row is the header (so the Markdown writer makes a GFM table).

/// HTML under construction.
#[derive(Debug, Default)]
pub(crate) struct HtmlOut {
    body: String,
    /// Open list levels (true = ordered).
    lists: Vec<bool>,
}

pub(crate) use crate::extract::escape_html as escape_into;

/// `text` escaped.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text);
    out
}

/// A link (`href` empty: the text alone), as inline HTML.
pub(crate) fn link(href: &str, inner_html: &str) -> String {
    if href.is_empty() {
        inner_html.to_owned()
    } else {
        format!("<a href=\"{}\">{inner_html}</a>", escape(href))
    }
}

/// An image by reference, as inline HTML.
pub(crate) fn image(src: &str, alt: &str) -> String {
    format!("<img src=\"{}\" alt=\"{}\">", escape(src), escape(alt))
}

impl HtmlOut {
    /// A heading (level clamped to 1..=6) of already-escaped inline HTML.
    pub(crate) fn heading(&mut self, level: u32, inner_html: &str) {
        self.close_lists(0);
        let level = level.clamp(1, 6);
        self.body.push_str(&format!("<h{level}>{inner_html}</h{level}>\n"));
    }

    /// A paragraph of inline HTML; blank ones are dropped.
    pub(crate) fn paragraph(&mut self, inner_html: &str) {
        if inner_html.trim().is_empty() {
            return;
        }
        self.close_lists(0);
        self.body.push_str(&format!("<p>{inner_html}</p>\n"));
    }

    /// A list item at nesting `depth` (1 = top level). Items stay open so that a deeper
    /// list goes inside its parent item, as HTML nests lists; a change between bullets
    /// and numbers at the same depth starts a new list.
    pub(crate) fn list_item(&mut self, depth: usize, ordered: bool, inner_html: &str) {
        let depth = depth.max(1);
        self.close_lists(depth);
        if self.lists.get(depth - 1).is_some_and(|&open| open != ordered) {
            // A bulleted list right after a numbered one (or the reverse) is a new list.
            self.close_lists(depth - 1);
        }
        if self.lists.len() == depth {
            self.body.push_str("</li>\n");
        }
        while self.lists.len() < depth {
            self.body.push_str(if ordered { "<ol>" } else { "<ul>" });
            self.lists.push(ordered);
        }
        self.body.push_str(&format!("<li>{inner_html}"));
    }

    /// A table of plain-text cells (escaped here); the first row becomes the header.
    pub(crate) fn text_table(&mut self, rows: &[Vec<String>]) {
        let escaped: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| escape(c)).collect()).collect();
        self.table(&escaped);
    }

    /// A table of rows of inline-HTML cells; the first row becomes the header.
    pub(crate) fn table(&mut self, rows: &[Vec<String>]) {
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        if width == 0 {
            return;
        }
        self.close_lists(0);
        self.body.push_str("<table>\n");
        for (i, row) in rows.iter().enumerate() {
            let cell = if i == 0 { "th" } else { "td" };
            self.body.push_str("<tr>");
            for c in 0..width {
                let inner = row.get(c).map_or("", String::as_str);
                self.body.push_str(&format!("<{cell}>{inner}</{cell}>"));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    fn close_lists(&mut self, keep: usize) {
        while self.lists.len() > keep {
            let ordered = self.lists.pop().unwrap_or(false);
            self.body.push_str(if ordered { "</li></ol>\n" } else { "</li></ul>\n" });
        }
    }

    /// The whole document, with `title` in its head.
    pub(crate) fn finish(mut self, title: Option<&str>) -> String {
        self.close_lists(0);
        let head = title.map(|t| format!("<title>{}</title>", escape(t))).unwrap_or_default();
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\">{head}</head><body>\n{}</body></html>",
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_nest_and_close() {
        let mut out = HtmlOut::default();
        out.list_item(1, false, "a");
        out.list_item(2, true, "b");
        out.paragraph("after");
        let html = out.finish(Some("T & U"));
        assert!(html.contains("<ul><li>a<ol><li>b</li></ol>\n</li></ul>\n<p>after</p>"), "{html}");
        assert!(html.contains("<title>T &amp; U</title>"));
    }
}
