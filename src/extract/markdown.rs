//! HTML-to-Markdown writer in the style of Firecrawl's output (ATX headings, `-`
//! bullets, fenced code, GFM tables). It walks the working tree once and streams into
//! one buffer; separators, list markers, spaces and opening delimiters are kept
//! pending until real content arrives, so empty elements leave no trace.

use url::Url;

use super::dom::{Dom, Id, NONE};
use super::md_code::{code_language, longest_fence, longest_run, pre_text};
use super::md_escape::{
    collapsible_len, escape_brackets, escape_word, escape_words, is_collapsible, is_skip_link, is_word_char,
    next_char, push_destination, push_title, starts_with_ci,
};
use super::tags::Tag;
use super::urls;

/// Options of the writer.
#[derive(Clone, Copy)]
pub(crate) struct MdOptions {
    /// Replace `data:` image sources with a placeholder.
    pub remove_base64_images: bool,
}

/// Renders the subtree at `root` (the root itself included) as Markdown.
pub(crate) fn render(dom: &Dom, root: Id, base: &Url, opts: MdOptions) -> String {
    let mut w = Writer::new(dom, base, opts, false);
    w.node(root);
    w.finish()
}

/// Streaming Markdown writer over the working tree.
pub(crate) struct Writer<'d, 'a> {
    pub(crate) dom: &'d Dom<'a>,
    pub(crate) base: &'d Url,
    pub(crate) opts: MdOptions,
    pub(crate) out: String,
    /// Continuation prefix of the current block nesting ("> ", list indents).
    prefix: String,
    /// List markers waiting for their item's first line: (offset in prefix, marker).
    markers: Vec<(usize, String)>,
    /// Newlines owed before the next content (2 = blank line).
    nl: u8,
    /// Shortest prefix in effect since the newlines were owed; a blank line belongs
    /// to the outer block (before a quote opens, after it closes).
    sep_prefix: usize,
    /// The owed single newline is a hard line break.
    hard: bool,
    /// A collapsible space is owed before the next content.
    space: bool,
    /// Nothing has been written yet, so leading spaces and breaks are dropped.
    fresh: bool,
    /// Opening delimiters owed before the next content.
    open: String,
    /// Inside a one-line context (heading, link text, table cell).
    inline: u32,
    /// Inside link text.
    link: u32,
    /// List nesting.
    lists: u32,
    /// Element nesting, to bound recursion on pathological pages.
    depth: u32,
}

/// Deeper than this, a subtree is written as plain text.
pub(crate) const MAX_DEPTH: u32 = 200;

impl<'d, 'a> Writer<'d, 'a> {
    pub(crate) fn new(dom: &'d Dom<'a>, base: &'d Url, opts: MdOptions, inline: bool) -> Self {
        Writer {
            dom,
            base,
            opts,
            out: String::new(),
            prefix: String::new(),
            markers: Vec::new(),
            nl: 0,
            sep_prefix: usize::MAX,
            hard: false,
            space: false,
            fresh: true,
            open: String::new(),
            inline: u32::from(inline),
            link: 0,
            lists: 0,
            depth: 0,
        }
    }

    /// Inside a one-line context?
    pub(crate) fn is_inline(&self) -> bool {
        self.inline > 0
    }

    pub(crate) fn finish(mut self) -> String {
        let end = self.out.trim_end().len();
        self.out.truncate(end);
        self.out
    }

    /// Asks for `n` newlines before the next content (a block boundary).
    fn block(&mut self, n: u8) {
        if self.inline > 0 {
            if !self.fresh {
                self.space = true;
            }
            return;
        }
        if !self.markers.is_empty() {
            return;
        }
        if n > self.nl {
            self.nl = n;
            self.hard = false;
        }
        self.sep_prefix = self.sep_prefix.min(self.prefix.len());
    }

    fn hard_break(&mut self) {
        if self.inline > 0 {
            self.space = !self.fresh;
            return;
        }
        if self.fresh || !self.markers.is_empty() {
            return;
        }
        match (self.nl, self.hard) {
            (0, _) => {
                self.nl = 1;
                self.hard = true;
            }
            (1, true) => {
                self.nl = 2;
                self.hard = false;
            }
            _ => {}
        }
    }

    /// Ends the current line and starts a new one with the prefix (and list markers).
    fn new_line(&mut self, blank: bool) {
        let end = self.out.trim_end_matches(' ').len();
        self.out.truncate(end);
        if self.hard && !blank {
            self.out.push_str("  ");
        }
        self.out.push('\n');
        if blank {
            let outer = self.sep_prefix.min(self.prefix.len());
            self.out.push_str(self.prefix.get(..outer).unwrap_or("").trim_end());
            self.out.push('\n');
        }
        self.write_prefix();
    }

    fn write_prefix(&mut self) {
        if self.markers.is_empty() {
            self.out.push_str(&self.prefix);
        } else {
            let mut at = 0;
            for (pos, marker) in std::mem::take(&mut self.markers) {
                self.out.push_str(self.prefix.get(at..pos).unwrap_or(""));
                self.out.push_str(&marker);
                at = pos + marker.len();
            }
            self.out.push_str(self.prefix.get(at..).unwrap_or(""));
        }
    }

    /// Settles owed newlines, space and delimiters before content is written;
    /// returns whether the content starts a line.
    fn flush(&mut self) -> bool {
        let mut line_start = false;
        if self.fresh {
            self.write_prefix();
            line_start = true;
        } else if self.nl > 0 {
            self.new_line(self.nl > 1);
            line_start = true;
        } else if self.space {
            self.out.push(' ');
        }
        self.nl = 0;
        self.sep_prefix = usize::MAX;
        self.hard = false;
        self.space = false;
        if !self.open.is_empty() {
            self.out.push_str(&self.open);
            self.open.clear();
            line_start = false;
        }
        self.fresh = false;
        line_start
    }

    /// Writes already-escaped content.
    pub(crate) fn put(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.flush();
        self.out.push_str(s);
    }

    fn open_inline(&mut self, delim: &str) {
        self.open.push_str(delim);
    }

    /// Withdraws a pending opener; true when it was still pending (nothing written).
    fn withdraw(&mut self, opener: &str) -> bool {
        if self.open.ends_with(opener) {
            let keep = self.open.len() - opener.len();
            self.open.truncate(keep);
            true
        } else {
            false
        }
    }

    /// Closes a delimiter; drops it instead when nothing was written since it opened.
    fn close_inline(&mut self, delim: &str) {
        if !self.withdraw(delim) {
            self.out.push_str(delim);
        }
    }

    fn children(&mut self, id: Id) {
        let mut c = self.dom.n(id).first;
        while c != NONE {
            self.node(c);
            c = self.dom.n(c).next;
        }
    }

    pub(crate) fn node(&mut self, id: Id) {
        if self.depth >= MAX_DEPTH {
            let mut text = String::new();
            self.dom.text_content(id, &mut text);
            self.text(&text);
            return;
        }
        self.depth += 1;
        self.element(id);
        self.depth -= 1;
    }

    fn element(&mut self, id: Id) {
        let tag = self.dom.tag(id);
        match tag {
            Tag::Text => self.text(self.dom.text(id)),
            Tag::Br => self.hard_break(),
            Tag::Hr => {
                if self.inline > 0 {
                    self.block(2);
                } else {
                    self.block(2);
                    self.put("---");
                    self.block(2);
                }
            }
            Tag::H1 | Tag::H2 | Tag::H3 | Tag::H4 | Tag::H5 | Tag::H6 => self.heading(id, tag),
            Tag::Blockquote => {
                self.block(2);
                let pos = self.prefix.len();
                if self.inline == 0 {
                    self.prefix.push_str("> ");
                }
                self.children(id);
                self.prefix.truncate(pos);
                self.block(2);
            }
            Tag::Ul | Tag::Ol => self.list(id, tag == Tag::Ol),
            Tag::Li => self.item(id, "- ".to_string()),
            Tag::Pre => self.pre(id),
            Tag::Code | Tag::Kbd | Tag::Samp | Tag::Tt => self.code_span(id),
            Tag::Strong | Tag::B => self.wrapped(id, "**"),
            Tag::Em | Tag::I => self.wrapped(id, "*"),
            Tag::Del | Tag::S | Tag::Strike => self.wrapped(id, "~~"),
            Tag::A => self.link(id),
            Tag::Img => self.image(id),
            Tag::Table => self.table(id),
            Tag::Dt => {
                self.block(2);
                self.children(id);
                self.block(1);
            }
            Tag::Dd => {
                self.block(1);
                self.open_inline(": ");
                self.children(id);
                self.withdraw(": ");
                self.block(2);
            }
            Tag::Iframe
            | Tag::Object
            | Tag::Embed
            | Tag::Video
            | Tag::Audio
            | Tag::Canvas
            | Tag::Math
            | Tag::Source
            | Tag::Input
            | Tag::Select
            | Tag::Button
            | Tag::Textarea
            | Tag::Option
            | Tag::Datalist
            | Tag::Progress
            | Tag::Meter => {}
            _ if tag.is_block() => {
                self.block(2);
                self.children(id);
                self.block(2);
            }
            _ => self.children(id),
        }
    }

    /// Collapses whitespace and escapes Markdown syntax in a text node.
    pub(crate) fn text(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let sep = collapsible_len(bytes, i);
            if sep == 0 {
                break;
            }
            if !self.fresh {
                self.space = true;
            }
            i += sep;
        }
        let start = i;
        while i < bytes.len() && collapsible_len(bytes, i) == 0 {
            i += 1;
        }
        // The first word settles line starts and pending markup; the rest of the text
        // continues that line, so it is written in one pass.
        self.word(s.get(start..i).unwrap_or_default());
        if i < bytes.len() && escape_words(&mut self.out, s.get(i..).unwrap_or_default(), self.link > 0) {
            self.space = true;
        }
    }

    /// Writes one word of a text node, escaped.
    fn word(&mut self, word: &str) {
        if word.is_empty() {
            return;
        }
        let line_start = self.flush();
        escape_word(&mut self.out, word, line_start, self.link > 0);
    }

    /// Emphasis inside a word (`un<em>believ</em>able`) is written without markers,
    /// which would otherwise split the word for readers and tokenizers alike.
    fn inside_word(&self, id: Id) -> bool {
        let left = !self.space
            && self.nl == 0
            && self.open.is_empty()
            && self.out.chars().next_back().is_some_and(is_word_char);
        left || next_char(self.dom, id).is_some_and(is_word_char)
    }

    fn wrapped(&mut self, id: Id, delim: &str) {
        if self.inside_word(id) {
            self.children(id);
            return;
        }
        self.open_inline(delim);
        self.children(id);
        self.close_inline(delim);
    }

    fn heading(&mut self, id: Id, tag: Tag) {
        if self.inline > 0 {
            self.block(2);
            self.children(id);
            self.block(2);
            return;
        }
        self.block(2);
        let marker = format!("{} ", "#".repeat(usize::from(tag.heading_level())));
        self.inline += 1;
        self.open_inline(&marker);
        self.children(id);
        self.withdraw(&marker);
        self.inline -= 1;
        self.block(2);
    }

    fn list(&mut self, id: Id, ordered: bool) {
        let nested = self.lists > 0;
        self.block(if nested { 1 } else { 2 });
        self.lists += 1;
        let mut n: i64 = if ordered {
            self.dom.attr(id, "start").and_then(|s| s.trim().parse().ok()).unwrap_or(1)
        } else {
            1
        };
        let mut c = self.dom.n(id).first;
        while c != NONE {
            match self.dom.tag(c) {
                Tag::Li => {
                    let marker = if ordered { format!("{n}. ") } else { "- ".to_string() };
                    self.item(c, marker);
                    n = n.saturating_add(1);
                }
                Tag::Text => self.text(self.dom.text(c)),
                _ => self.node(c),
            }
            c = self.dom.n(c).next;
        }
        self.lists -= 1;
        self.block(if nested { 1 } else { 2 });
    }

    fn item(&mut self, id: Id, marker: String) {
        if self.inline > 0 {
            self.block(1);
            self.children(id);
            self.block(1);
            return;
        }
        self.block(1);
        let pos = self.prefix.len();
        self.prefix.push_str(&" ".repeat(marker.len()));
        self.markers.push((pos, marker));
        self.children(id);
        self.prefix.truncate(pos);
        // An item that wrote nothing leaves no marker behind.
        while self.markers.last().is_some_and(|(p, _)| *p >= pos) {
            self.markers.pop();
        }
        self.nl = self.nl.min(1);
        self.block(1);
    }

    fn link(&mut self, id: Id) {
        let href = self.dom.attr(id, "href").map(str::trim).unwrap_or("");
        if href.is_empty() || starts_with_ci(href, "javascript:") || self.link > 0 {
            self.children(id);
            return;
        }
        if href.starts_with('#') && is_skip_link(self.dom, id) {
            return;
        }
        let target = urls::resolve_str(self.base, href);
        self.link += 1;
        self.inline += 1;
        self.open_inline("[");
        self.children(id);
        self.inline -= 1;
        self.link -= 1;
        if self.withdraw("[") {
            return;
        }
        self.out.push_str("](");
        push_destination(&mut self.out, &target);
        if let Some(title) = self.dom.attr(id, "title").map(str::trim).filter(|t| !t.is_empty()) {
            push_title(&mut self.out, title);
        }
        self.out.push(')');
    }

    fn image(&mut self, id: Id) {
        let Some(el) = self.dom.element(id) else {
            return;
        };
        let Some(src) = urls::image_source(el) else {
            return;
        };
        let mut md = String::from("![");
        if let Some(alt) = el.attr("alt") {
            // Brackets are dropped rather than escaped: many Markdown readers end the
            // alt text at the first `]` whatever precedes it.
            let words =
                alt.split(|c: char| c.is_whitespace() || matches!(c, '[' | ']')).filter(|w| !w.is_empty());
            for (i, w) in words.enumerate() {
                if i > 0 {
                    md.push(' ');
                }
                escape_brackets(&mut md, w);
            }
        }
        md.push_str("](");
        if starts_with_ci(src, "data:") {
            if self.opts.remove_base64_images {
                md.push_str("<Base64-Image-Removed>");
            } else {
                push_destination(&mut md, src);
            }
        } else {
            push_destination(&mut md, &urls::resolve_str(self.base, src));
        }
        if let Some(title) = el.attr("title").map(str::trim).filter(|t| !t.is_empty()) {
            push_title(&mut md, title);
        }
        md.push(')');
        self.put(&md);
    }

    fn code_span(&mut self, id: Id) {
        if self.dom.n(id).first == NONE {
            return;
        }
        let mut raw = String::new();
        self.dom.text_content(id, &mut raw);
        if raw.starts_with(is_collapsible) && !self.fresh {
            self.space = true;
        }
        let text = raw.split(is_collapsible).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
        if !text.is_empty() {
            let fence = "`".repeat(longest_run(&text, '`') + 1);
            let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
            let mut s = String::with_capacity(text.len() + 8);
            s.push_str(&fence);
            s.push_str(pad);
            s.push_str(&text);
            s.push_str(pad);
            s.push_str(&fence);
            self.put(&s);
        }
        if raw.ends_with(is_collapsible) {
            self.space = true;
        }
    }

    fn pre(&mut self, id: Id) {
        if self.inline > 0 {
            self.code_span(id);
            return;
        }
        let mut code = String::new();
        pre_text(self.dom, id, &mut code, self.depth);
        let code = code.trim_end_matches(['\n', ' ', '\t', '\r']);
        let code = code.trim_start_matches('\n');
        if code.trim().is_empty() {
            return;
        }
        let lang = code_language(self.dom, id);
        let fence = "`".repeat(longest_fence(code).max(2) + 1);
        self.block(2);
        self.put(&fence);
        self.out.push_str(&lang);
        for line in code.split('\n') {
            self.out.push('\n');
            if line.is_empty() {
                self.out.push_str(self.prefix.trim_end());
            } else {
                self.out.push_str(&self.prefix);
                self.out.push_str(line.trim_end_matches('\r'));
            }
        }
        self.out.push('\n');
        self.out.push_str(&self.prefix);
        self.out.push_str(&fence);
        self.block(2);
    }

    /// Writes a table (see `md_table`).
    fn table(&mut self, id: Id) {
        super::md_table::write_table(self, id);
    }

    /// Renders block content of `id` as a paragraph-like block (layout tables).
    pub(crate) fn block_children(&mut self, id: Id) {
        self.block(2);
        self.children(id);
        self.block(2);
    }

    /// Renders the children of `id` on one line into a new string.
    pub(crate) fn one_line(&self, id: Id) -> String {
        let mut w = Writer::new(self.dom, self.base, self.opts, true);
        w.depth = self.depth;
        w.children(id);
        w.finish()
    }

    /// Writes finished lines (table rows) as a block.
    pub(crate) fn put_lines(&mut self, lines: &[String]) {
        self.block(2);
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                self.nl = 1;
            }
            self.put(line);
        }
        self.block(2);
    }
}
