//! The running state shared by the word-processor readers (DOCX, ODT, RTF): the paragraph
//! being filled, open links, and open tables (a table inside a table cell is flattened into
//! that cell's text). Readers feed it events; it writes [`HtmlOut`].

use super::html::{self, HtmlOut};

/// What a finished paragraph becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// A plain paragraph.
    Paragraph,
    /// A heading of this level.
    Heading(u32),
    /// A list item at this depth (1 = top level).
    ListItem {
        /// Nesting depth.
        depth: usize,
        /// Numbered rather than bulleted.
        ordered: bool,
    },
}

#[derive(Debug, Default)]
struct TableBuild {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

/// Document text under construction.
#[derive(Debug, Default)]
pub(crate) struct Flow {
    out: HtmlOut,
    inline: String,
    links: Vec<(usize, String)>,
    tables: Vec<TableBuild>,
}

impl Flow {
    /// Text of the current paragraph (escaped here).
    pub(crate) fn text(&mut self, text: &str) {
        html::escape_into(&mut self.inline, text);
    }

    /// Inline HTML (a line break, an image).
    pub(crate) fn raw(&mut self, inline_html: &str) {
        self.inline.push_str(inline_html);
    }

    /// Opens a link to `href`.
    pub(crate) fn start_link(&mut self, href: String) {
        self.links.push((self.inline.len(), href));
    }

    /// Closes the innermost link.
    pub(crate) fn end_link(&mut self) {
        if let Some((start, href)) = self.links.pop() {
            let start = start.min(self.inline.len());
            let inner = self.inline.split_off(start);
            self.inline.push_str(&html::link(&href, &inner));
        }
    }

    /// Ends the current paragraph as `block` (inside a table cell it joins the cell's text).
    pub(crate) fn end_paragraph(&mut self, block: Block) {
        while !self.links.is_empty() {
            self.end_link();
        }
        let inline = std::mem::take(&mut self.inline);
        let inline = inline.trim();
        if let Some(table) = self.tables.last_mut() {
            if !inline.is_empty() {
                if !table.cell.is_empty() {
                    table.cell.push_str("<br>");
                }
                table.cell.push_str(inline);
            }
            return;
        }
        match block {
            Block::Paragraph => self.out.paragraph(inline),
            Block::Heading(level) if !inline.is_empty() => self.out.heading(level, inline),
            Block::Heading(_) => {}
            Block::ListItem { depth, ordered } => self.out.list_item(depth, ordered, inline),
        }
    }

    /// Opens a table.
    pub(crate) fn start_table(&mut self) {
        self.flush_loose_text();
        self.tables.push(TableBuild::default());
    }

    /// Ends the current cell.
    pub(crate) fn end_cell(&mut self) {
        self.flush_loose_text();
        if let Some(t) = self.tables.last_mut() {
            let cell = std::mem::take(&mut t.cell);
            t.row.push(cell);
        }
    }

    /// Ends the current row.
    pub(crate) fn end_row(&mut self) {
        if let Some(t) = self.tables.last_mut() {
            if !t.cell.is_empty() {
                let cell = std::mem::take(&mut t.cell);
                t.row.push(cell);
            }
            let row = std::mem::take(&mut t.row);
            if !row.is_empty() {
                t.rows.push(row);
            }
        }
    }

    /// Closes the innermost table.
    pub(crate) fn end_table(&mut self) {
        self.end_row();
        let Some(table) = self.tables.pop() else {
            return;
        };
        match self.tables.last_mut() {
            Some(outer) => {
                let flat: Vec<String> = table.rows.iter().map(|r| r.join(" | ")).collect();
                if !outer.cell.is_empty() {
                    outer.cell.push_str("<br>");
                }
                outer.cell.push_str(&flat.join("<br>"));
            }
            None => self.out.table(&table.rows),
        }
    }

    /// Whether a table is open.
    pub(crate) fn in_table(&self) -> bool {
        !self.tables.is_empty()
    }

    /// Text written outside any paragraph becomes one.
    fn flush_loose_text(&mut self) {
        if !self.inline.trim().is_empty() {
            self.end_paragraph(Block::Paragraph);
        }
        self.inline.clear();
    }

    /// The finished HTML document.
    pub(crate) fn finish(mut self, title: Option<&str>) -> String {
        while self.in_table() {
            self.end_table();
        }
        self.flush_loose_text();
        self.out.finish(title)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_links_and_nested_tables() {
        let mut f = Flow::default();
        f.start_table();
        f.text("Name");
        f.end_paragraph(Block::Paragraph);
        f.end_cell();
        f.start_link("https://example.com/a".into());
        f.text("A & B");
        f.end_link();
        f.end_paragraph(Block::Paragraph);
        f.end_cell();
        f.end_row();
        f.start_table();
        f.text("inner");
        f.end_paragraph(Block::Paragraph);
        f.end_cell();
        f.end_table();
        f.end_cell();
        f.end_table();
        let html = f.finish(None);
        assert!(
            html.contains("<th>Name</th><th><a href=\"https://example.com/a\">A &amp; B</a></th>"),
            "{html}"
        );
        assert!(html.contains("<td>inner</td>"), "{html}");
    }
}
