//! GFM tables for the Markdown writer: header row, escaped pipes, one-line cells,
//! `colspan` padding; layout tables (one column, nested tables or block structure in
//! cells) degrade to plain blocks so their text stays readable.

use super::dom::{Dom, Id, NONE};
use super::markdown::Writer;
use super::tags::Tag;

fn rows_of(dom: &Dom, section: Id, out: &mut Vec<Id>) {
    out.extend(dom.elem_children(section).filter(|&r| dom.tag(r) == Tag::Tr));
}

fn cells_of<'d>(dom: &'d Dom<'_>, row: Id) -> impl Iterator<Item = Id> + 'd {
    dom.elem_children(row).filter(move |&c| matches!(dom.tag(c), Tag::Td | Tag::Th))
}

fn colspan(dom: &Dom, cell: Id) -> usize {
    dom.attr(cell, "colspan").and_then(|s| s.trim().parse::<usize>().ok()).unwrap_or(1).clamp(1, 64)
}

/// Does the table carry page layout rather than data?
fn is_layout(dom: &Dom, table: Id, rows: &[Id]) -> bool {
    let max_cols =
        rows.iter().map(|&r| cells_of(dom, r).map(|c| colspan(dom, c)).sum::<usize>()).max().unwrap_or(0);
    max_cols <= 1
        || dom.descendants(table).any(|d| {
            matches!(
                dom.tag(d),
                Tag::Table
                    | Tag::Ul
                    | Tag::Ol
                    | Tag::Pre
                    | Tag::Blockquote
                    | Tag::H1
                    | Tag::H2
                    | Tag::H3
                    | Tag::H4
                    | Tag::H5
                    | Tag::H6
                    | Tag::Dl
            )
        })
}

fn cell_text(w: &Writer, cell: Id) -> String {
    let raw = w.one_line(cell);
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn line(cells: &[String], width: usize) -> String {
    let mut s = String::from("|");
    for i in 0..width {
        let cell = cells.get(i).map_or("", String::as_str);
        s.push(' ');
        s.push_str(cell);
        if !cell.is_empty() {
            s.push(' ');
        }
        s.push('|');
    }
    s
}

/// Writes `table` as a GFM table, or as plain blocks when it is a layout table.
pub(crate) fn write_table(w: &mut Writer, table: Id) {
    let dom = w.dom;
    let (mut head, mut body, mut foot) = (Vec::new(), Vec::new(), Vec::new());
    let mut caption = NONE;
    for c in dom.elem_children(table) {
        match dom.tag(c) {
            Tag::Caption => caption = c,
            Tag::Thead => rows_of(dom, c, &mut head),
            Tag::Tbody => rows_of(dom, c, &mut body),
            Tag::Tfoot => rows_of(dom, c, &mut foot),
            Tag::Tr => body.push(c),
            _ => {}
        }
    }
    if caption != NONE {
        w.block_children(caption);
    }
    let rows: Vec<Id> = head.iter().chain(&body).chain(&foot).copied().collect();
    if rows.is_empty() {
        return;
    }
    if w.is_inline() || is_layout(dom, table, &rows) {
        for &r in &rows {
            for c in cells_of(dom, r) {
                w.block_children(c);
            }
        }
        return;
    }
    let mut grid: Vec<Vec<String>> = Vec::with_capacity(rows.len());
    for &r in &rows {
        let mut cells = Vec::new();
        for c in cells_of(dom, r) {
            cells.push(cell_text(w, c));
            for _ in 1..colspan(dom, c) {
                cells.push(String::new());
            }
        }
        grid.push(cells);
    }
    if grid.iter().all(|r| r.iter().all(String::is_empty)) {
        return;
    }
    let width = grid.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut lines = Vec::with_capacity(grid.len() + 1);
    let mut grid_rows = grid.iter();
    let header = grid_rows.next().map_or(&[][..], Vec::as_slice);
    lines.push(line(header, width));
    lines.push(format!("|{}", " --- |".repeat(width)));
    lines.extend(grid_rows.map(|r| line(r, width)));
    w.put_lines(&lines);
}
