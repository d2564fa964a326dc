//! Tables in PDF text: a PDF has no table markup, only text placed on the page. Lines are
//! rebuilt from the page geometry (not the reading order, which may read a table's first
//! column as a column of text); a line whose pieces stand apart by wide gaps has cells.
//! Three or more such lines in a row, whose cells fall into the same columns and hold short
//! texts (prose set in two columns does not), are read as a table, placed where its first
//! span comes in reading order.

use std::borrow::Cow;

use pdf_oxide::layout::TextSpan;

/// Pieces of a line this far apart (in font sizes) are separate cells.
const CELL_GAP: f32 = 1.2;
/// Fewest lines that make a table (a header and two rows).
const MIN_ROWS: usize = 3;
/// Most lines one table may have: more than a page holds, and a bound on the work of
/// trying each start line of a long run of multi-cell lines.
const MAX_ROWS: usize = 150;
/// Most columns a table may have.
const MAX_COLUMNS: usize = 20;
/// Longest average cell text of a table, in characters and in words: lines of prose set in
/// columns line up too, but hold sentences.
const MAX_AVERAGE_CELL: usize = 40;
const MAX_AVERAGE_WORDS: f32 = 3.5;

/// A page's spans, cut into runs of text and the tables between them.
#[derive(Debug)]
pub(crate) enum Segment<'s> {
    /// Spans to read as paragraphs, in reading order.
    Text(Cow<'s, [TextSpan]>),
    /// Rows of cell texts; the first row is the header.
    Table(Vec<Vec<String>>),
}

/// One piece of a line: spans close together.
#[derive(Debug)]
struct Cell {
    x0: f32,
    x1: f32,
    text: String,
}

/// A line of text: the spans (by index) on one baseline.
#[derive(Debug)]
struct Line {
    spans: Vec<usize>,
    y: f32,
    size: f32,
    cells: Vec<Cell>,
}

/// Splits a page's spans (in reading order) into text and tables.
pub(crate) fn split(spans: &[TextSpan]) -> Vec<Segment<'_>> {
    let lines = lines(spans);
    // For each span, the table it belongs to.
    let mut table_of: Vec<Option<usize>> = vec![None; spans.len()];
    let mut tables: Vec<Option<Vec<Vec<String>>>> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let run = run_from(&lines, i);
        if run >= MIN_ROWS
            && let Some(rows) = table(&lines[i..i + run])
        {
            for &s in lines[i..i + run].iter().flat_map(|l| &l.spans) {
                table_of[s] = Some(tables.len());
            }
            tables.push(Some(rows));
            i += run;
        } else {
            i += 1;
        }
    }
    if tables.is_empty() {
        return vec![Segment::Text(Cow::Borrowed(spans))];
    }
    let mut out = Vec::new();
    let mut text: Vec<TextSpan> = Vec::new();
    for (span, table) in spans.iter().zip(&table_of) {
        match table {
            None => text.push(span.clone()),
            Some(t) => {
                if let Some(rows) = tables.get_mut(*t).and_then(Option::take) {
                    if !text.is_empty() {
                        out.push(Segment::Text(Cow::Owned(std::mem::take(&mut text))));
                    }
                    out.push(Segment::Table(rows));
                }
            }
        }
    }
    if !text.is_empty() {
        out.push(Segment::Text(Cow::Owned(text)));
    }
    out
}

/// Groups spans into lines by position (top to bottom, left to right), and each line's
/// spans into cells.
fn lines(spans: &[TextSpan]) -> Vec<Line> {
    let mut order: Vec<usize> = (0..spans.len()).filter(|&i| !spans[i].text.trim().is_empty()).collect();
    order.sort_by(|&a, &b| spans[b].bbox.y.total_cmp(&spans[a].bbox.y));
    let mut out: Vec<Line> = Vec::new();
    for i in order {
        let span = &spans[i];
        let size = span.font_size.max(1.0);
        match out.last_mut() {
            Some(line) if (span.bbox.y - line.y).abs() < 0.5 * size.min(line.size) => {
                line.spans.push(i);
                line.size = line.size.max(size);
            }
            _ => out.push(Line { spans: vec![i], y: span.bbox.y, size, cells: Vec::new() }),
        }
    }
    for line in &mut out {
        line.spans.sort_by(|&a, &b| spans[a].bbox.x.total_cmp(&spans[b].bbox.x));
        for &i in &line.spans {
            let span = &spans[i];
            let (x0, x1, text) = (span.bbox.x, span.bbox.x + span.bbox.width, span.text.trim());
            match line.cells.last_mut() {
                Some(cell) if x0 - cell.x1 <= CELL_GAP * line.size => {
                    if x0 - cell.x1 > 0.15 * line.size || span.text.starts_with(' ') {
                        cell.text.push(' ');
                    }
                    cell.text.push_str(text);
                    cell.x1 = cell.x1.max(x1);
                }
                _ => line.cells.push(Cell { x0, x1, text: text.to_owned() }),
            }
        }
    }
    out
}

/// How many lines from `first` on (at most [`MAX_ROWS`]) could be rows of one table: lines
/// with two or more cells, each close below the one before.
fn run_from(lines: &[Line], first: usize) -> usize {
    let mut n = 0;
    for (k, line) in lines[first..].iter().take(MAX_ROWS).enumerate() {
        if line.cells.len() < 2 {
            break;
        }
        if k > 0 {
            let prev = &lines[first + k - 1];
            let gap = (prev.y - line.y).abs();
            if gap > 2.5 * prev.size.max(line.size) || (line.size - prev.size).abs() > 0.25 * prev.size {
                break;
            }
        }
        n += 1;
    }
    n
}

/// The rows of `lines` when their cells line up in columns (each column is the union of
/// the cell extents that overlap, so left-, right- and centre-aligned columns all hold) and
/// hold short texts.
fn table(lines: &[Line]) -> Option<Vec<Vec<String>>> {
    let mut extents: Vec<(f32, f32)> =
        lines.iter().flat_map(|l| l.cells.iter().map(|c| (c.x0, c.x1))).collect();
    extents.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut columns: Vec<(f32, f32)> = Vec::new();
    for (x0, x1) in extents {
        match columns.last_mut() {
            Some(col) if x0 <= col.1 => col.1 = col.1.max(x1),
            _ => columns.push((x0, x1)),
        }
    }
    if !(2..=MAX_COLUMNS).contains(&columns.len()) {
        return None;
    }
    let (mut cells, mut chars, mut words) = (0usize, 0usize, 0usize);
    let mut rows = Vec::with_capacity(lines.len());
    for line in lines {
        let mut row = vec![String::new(); columns.len()];
        for cell in &line.cells {
            let col = columns.iter().position(|&(a, b)| cell.x0 >= a && cell.x0 <= b)?;
            if !row[col].is_empty() {
                return None;
            }
            row[col].clone_from(&cell.text);
            cells += 1;
            chars += cell.text.chars().count();
            words += cell.text.split_whitespace().count();
        }
        rows.push(row);
    }
    let cells = cells.max(1);
    let short = chars / cells <= MAX_AVERAGE_CELL && words as f32 / cells as f32 <= MAX_AVERAGE_WORDS;
    short.then_some(rows)
}
