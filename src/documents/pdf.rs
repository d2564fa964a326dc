//! PDF: text in reading order (pdf_oxide's column-aware ordering of positioned spans),
//! regrouped here into lines and paragraphs; paragraphs set larger than the body text become
//! headings, ranked by size; lines whose cells line up in columns become tables
//! (`pdf_table`). Title and author come from the document information
//! dictionary. A PDF with no text layer (scanned pages) says so in the warning: no OCR model
//! ships with ferrocrawl.

use std::collections::HashMap;

use pdf_oxide::layout::TextSpan;
use pdf_oxide::object::Object;
use pdf_oxide::{PdfDocument, ReadingOrder};

use super::html::{HtmlOut, escape};
use super::pdf_table::{self, Segment};
use super::{Converted, DocError, DocKind, Limits};

/// A paragraph is a heading when its text is this much larger than the body text…
const HEADING_RATIO: f32 = 1.2;
/// …and no longer than this.
const HEADING_MAX_CHARS: usize = 200;

/// A run of text set in one size.
#[derive(Debug, Clone, PartialEq)]
struct Para {
    size: f32,
    text: String,
}

/// What a page is read into.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Para(Para),
    /// Rows of cell texts, the first one the header.
    Table(Vec<Vec<String>>),
}

impl Item {
    fn para(&self) -> Option<&Para> {
        match self {
            Item::Para(p) => Some(p),
            Item::Table(_) => None,
        }
    }
}

/// A page's items: paragraphs from its text, and its tables where they stand.
fn page_items(spans: &[TextSpan]) -> Vec<Item> {
    let mut items = Vec::new();
    for segment in pdf_table::split(spans) {
        match segment {
            Segment::Text(spans) => items.extend(paragraphs(&spans).into_iter().map(Item::Para)),
            Segment::Table(rows) => items.push(Item::Table(rows)),
        }
    }
    items
}

/// Converts a PDF file, reading at most `limits.max_pdf_pages` pages.
pub(crate) fn convert(bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    let doc = PdfDocument::from_bytes(bytes.to_vec()).map_err(|e| DocError::corrupt(DocKind::Pdf, e))?;
    if doc.is_encrypted() && !doc.is_authenticated() {
        return Err(DocError::Encrypted(DocKind::Pdf));
    }
    let total = doc.page_count().map_err(|e| DocError::corrupt(DocKind::Pdf, e))?;
    let read = total.min(limits.max_pdf_pages);
    let mut pages: Vec<Vec<Item>> = Vec::with_capacity(read);
    let mut unreadable: Vec<usize> = Vec::new();
    for index in 0..read {
        if crate::process::cancel::requested() {
            break;
        }
        match doc.extract_spans_with_reading_order(index, ReadingOrder::ColumnAware) {
            Ok(spans) => pages.push(page_items(&spans)),
            Err(_) => unreadable.push(index + 1),
        }
    }
    if read > 0 && unreadable.len() == read {
        return Err(DocError::corrupt(DocKind::Pdf, "no page could be read"));
    }
    let title = info_string(&doc, "Title");
    let author = info_string(&doc, "Author");
    let body_size = body_size(&pages);
    let levels = heading_levels(&pages, body_size);
    let mut out = HtmlOut::default();
    let mut chars = 0usize;
    for item in pages.iter().flatten() {
        let para = match item {
            Item::Para(para) => para,
            Item::Table(rows) => {
                chars += rows.iter().flatten().map(String::len).sum::<usize>();
                out.text_table(rows);
                continue;
            }
        };
        chars += para.text.len();
        match levels.get(&size_key(para.size)) {
            Some(&level) if para.text.chars().count() <= HEADING_MAX_CHARS => {
                out.heading(level, &escape(&para.text))
            }
            _ => match list_marker(&para.text) {
                Some((ordered, len)) => out.list_item(1, ordered, &escape(para.text[len..].trim_start())),
                None => out.paragraph(&escape(&para.text)),
            },
        }
    }
    let mut warnings = Vec::new();
    if chars == 0 && read > 0 {
        warnings.push(
            "the PDF has no text layer (scanned pages?); ferrocrawl has no OCR model to read it".to_owned(),
        );
    }
    if read < total {
        warnings.push(format!("only the first {read} of {total} pages are included"));
    }
    if !unreadable.is_empty() {
        let list: Vec<String> = unreadable.iter().map(usize::to_string).collect();
        warnings.push(format!("pages {} could not be read", list.join(", ")));
    }
    Ok(Converted {
        html: out.finish(title.as_deref()),
        title,
        author,
        pages: u32::try_from(total).ok(),
        warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
    })
}

/// Groups spans (in reading order) into lines, and lines into paragraphs: a paragraph
/// ends at a change of size, a gap wider than a line and a half, or a jump to another column.
fn paragraphs(spans: &[TextSpan]) -> Vec<Para> {
    let mut out: Vec<Para> = Vec::new();
    let mut current: Option<Para> = None;
    // (baseline y, right edge x, size) of the last span placed.
    let mut last: Option<(f32, f32, f32)> = None;
    for span in spans {
        let text = span.text.trim_end_matches(['\r', '\n']);
        if text.trim().is_empty() {
            continue;
        }
        let size = span.font_size.max(1.0);
        let (x, y) = (span.bbox.x, span.bbox.y);
        let (same_line, new_para) = match last {
            None => (false, true),
            Some((ly, lx, lsize)) => {
                let dy = (y - ly).abs();
                let same_line = dy < 0.5 * lsize.min(size) && x >= lx - lsize;
                let resized = (size - lsize).abs() > 0.15 * lsize;
                let far = dy > 1.6 * lsize.max(size) || (!same_line && x > lx + 3.0 * lsize);
                (same_line, !same_line && (resized || far || list_marker(text).is_some()))
            }
        };
        if new_para && let Some(done) = current.take() {
            out.push(done);
        }
        let para = current.get_or_insert_with(|| Para { size, text: String::new() });
        if !para.text.is_empty() {
            let gap = last.map_or(0.0, |(_, lx, _)| x - lx);
            if !same_line {
                join_line(&mut para.text);
            } else if gap > 0.15 * size && !para.text.ends_with(' ') && !text.starts_with(' ') {
                para.text.push(' ');
            }
        }
        para.text.push_str(text);
        para.size = para.size.max(size);
        last = Some((y, x + span.bbox.width, size));
    }
    out.extend(current);
    for p in &mut out {
        p.text = p.text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    out.retain(|p| !p.text.is_empty());
    out
}

/// The list marker a line starts with: whether it numbers the item, and its length in
/// bytes. Bullets are the usual glyphs (or `-`, `*`); numbers are one to three digits or
/// one letter, then `.` or `)`. The marker stands alone or before a space.
fn list_marker(text: &str) -> Option<(bool, usize)> {
    let text = text.trim_start();
    let ends_marker = |rest: &str| rest.is_empty() || rest.starts_with(char::is_whitespace);
    let first = text.chars().next()?;
    if matches!(first, '•' | '◦' | '▪' | '■' | '●' | '○' | '‣' | '⁃' | '–' | '-' | '*' | '\u{f0b7}')
        && ends_marker(&text[first.len_utf8()..])
    {
        return Some((false, first.len_utf8()));
    }
    let head = text.find(['.', ')'])?;
    let label = &text[..head];
    let numbered = (1..=3).contains(&label.len()) && label.bytes().all(|b| b.is_ascii_digit());
    let lettered = label.len() == 1 && label.bytes().all(|b| b.is_ascii_alphabetic());
    ((numbered || lettered) && ends_marker(&text[head + 1..])).then_some((true, head + 1))
}

/// Ends a line inside a paragraph: a hyphen at a line end joins the word, anything else
/// becomes a space.
fn join_line(text: &mut String) {
    let trimmed = text.trim_end().len();
    text.truncate(trimmed);
    let hyphenated = text.ends_with('-') && text[..text.len() - 1].ends_with(|c: char| c.is_alphabetic());
    if hyphenated {
        text.pop();
    } else {
        text.push(' ');
    }
}

/// Font sizes rounded to half points, as map keys.
fn size_key(size: f32) -> u32 {
    (size * 2.0).round().max(0.0) as u32
}

/// The size most of the text is set in.
fn body_size(pages: &[Vec<Item>]) -> f32 {
    let mut weight: HashMap<u32, usize> = HashMap::new();
    for p in pages.iter().flatten().filter_map(Item::para) {
        *weight.entry(size_key(p.size)).or_default() += p.text.len();
    }
    weight
        .into_iter()
        .max_by_key(|&(key, w)| (w, std::cmp::Reverse(key)))
        .map_or(10.0, |(key, _)| key as f32 / 2.0)
}

/// Heading level of each size clearly above the body size: the largest is level 1.
fn heading_levels(pages: &[Vec<Item>], body: f32) -> HashMap<u32, u32> {
    let mut sizes: Vec<u32> = pages
        .iter()
        .flatten()
        .filter_map(Item::para)
        .filter(|p| p.size >= body * HEADING_RATIO && p.text.chars().count() <= HEADING_MAX_CHARS)
        .map(|p| size_key(p.size))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    sizes.into_iter().zip(1..=6).collect()
}

/// A text entry of the document information dictionary.
fn info_string(doc: &PdfDocument, key: &str) -> Option<String> {
    let info = doc.trailer().as_dict()?.get("Info")?.clone();
    let info = doc.resolve_references(&info, 2).ok()?;
    let value = info.as_dict()?.get(key)?.clone();
    let value: Object = doc.resolve_references(&value, 2).ok()?;
    let text = decode_text_string(value.as_string()?);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// A PDF text string: UTF-16BE with a byte-order mark, UTF-8 with one, or PDFDocEncoding
/// (read as Latin-1, which it matches for text).
fn decode_text_string(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = rest.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
        return String::from_utf16_lossy(&units);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    bytes.iter().map(|&b| b as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::samples::{PdfText, encrypted_pdf, pdf, to_markdown};

    fn line(x: f32, y: f32, size: f32, text: &str) -> PdfText {
        PdfText { x, y, size, text: text.to_owned() }
    }

    #[test]
    fn headings_paragraphs_and_metadata() {
        let page = vec![
            line(72.0, 720.0, 24.0, "Soil and water"),
            line(72.0, 680.0, 11.0, "Clay holds water longer than sand, so beds on clay"),
            line(72.0, 666.0, 11.0, "need less watering in a dry summer."),
            line(72.0, 620.0, 16.0, "Drainage"),
            line(72.0, 590.0, 11.0, "Raised beds drain faster."),
        ];
        let out = convert(&pdf(&[page], "Garden notes", "Gertrude Jekyll"), &Limits::default()).expect("pdf");
        assert_eq!(out.title.as_deref(), Some("Garden notes"));
        assert_eq!(out.author.as_deref(), Some("Gertrude Jekyll"));
        assert_eq!(out.pages, Some(1));
        let md = to_markdown(&out.html);
        assert!(md.contains("# Soil and water"), "{md}");
        assert!(md.contains("## Drainage"), "{md}");
        assert!(
            md.contains(
                "Clay holds water longer than sand, so beds on clay need less watering in a dry summer."
            ),
            "{md}"
        );
    }

    #[test]
    fn two_columns_read_one_after_the_other() {
        let mut page = Vec::new();
        for i in 0..12 {
            let y = 720.0 - 14.0 * i as f32;
            page.push(line(72.0, y, 10.0, &format!("left column line {i} about tomatoes")));
            page.push(line(320.0, y, 10.0, &format!("right column line {i} about beans")));
        }
        let out = convert(&pdf(&[page], "", ""), &Limits::default()).expect("pdf");
        let md = to_markdown(&out.html);
        let last_left = md.find("left column line 11").expect("left");
        let first_right = md.find("right column line 0").expect("right");
        assert!(last_left < first_right, "{md}");
    }

    #[test]
    fn aligned_short_cells_are_a_table() {
        let mut page = vec![
            line(72.0, 720.0, 16.0, "Seed trial"),
            line(72.0, 690.0, 11.0, "The beds were sown in April and measured weekly."),
        ];
        let rows = [
            ["Crop", "Bed", "Kilograms"],
            ["Beans", "North", "120"],
            ["Peas", "South", "80"],
            ["Kale", "", "4.5"],
        ];
        for (r, row) in rows.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                // The last column is right-aligned, as numbers are.
                let x = if c == 2 { 420.0 - 5.5 * cell.len() as f32 } else { 72.0 + 150.0 * c as f32 };
                page.push(line(x, 650.0 - 18.0 * r as f32, 11.0, cell));
            }
        }
        page.push(line(72.0, 560.0, 11.0, "After the table comes more prose."));
        let out = convert(&pdf(&[page], "", ""), &Limits::default()).expect("pdf");
        let md = to_markdown(&out.html);
        assert!(
            md.contains("| Crop | Bed | Kilograms |\n| --- | --- | --- |\n| Beans | North | 120 |"),
            "{md}"
        );
        assert!(md.contains("| Kale | | 4.5 |"), "{md}");
        let (before, after) =
            (md.find("measured weekly").expect("prose"), md.find("After the table").expect("prose"));
        let table = md.find("| Crop").expect("table");
        assert!(before < table && table < after, "{md}");
    }

    #[test]
    fn bulleted_and_numbered_lines_are_lists() {
        let page = vec![
            line(72.0, 720.0, 11.0, "Before sowing:"),
            line(72.0, 706.0, 11.0, "\u{2022} rake the bed"),
            line(72.0, 692.0, 11.0, "\u{2022} water it"),
            line(72.0, 664.0, 11.0, "1. sow thinly"),
            line(72.0, 650.0, 11.0, "2. cover lightly and"),
            line(84.0, 636.0, 11.0, "firm the soil"),
            line(72.0, 608.0, 11.0, "Prices rose 3.5 percent in a year."),
        ];
        let md = to_markdown(&convert(&pdf(&[page], "", ""), &Limits::default()).expect("pdf").html);
        assert!(md.contains("- rake the bed\n- water it"), "{md}");
        assert!(md.contains("1. sow thinly\n2. cover lightly and firm the soil"), "{md}");
        assert!(md.contains("Prices rose 3.5 percent in a year."), "{md}");
    }

    #[test]
    fn a_reader_panic_is_a_corrupt_file() {
        // Found by fuzzing: pdf_oxide slices a decoded string inside a character on this
        // file. The guard in `documents::convert` turns the panic into an error.
        let bytes = include_bytes!("../../tests/fixtures/documents/pdf-char-boundary.bin");
        let err = crate::documents::convert(DocKind::Pdf, bytes, &Limits::default()).expect_err("corrupt");
        assert!(matches!(err, DocError::Corrupt { kind: DocKind::Pdf, .. }), "{err:?}");
    }

    #[test]
    fn page_limits_empty_pages_and_garbage() {
        let pages: Vec<Vec<PdfText>> =
            (0..5).map(|i| vec![line(72.0, 700.0, 11.0, &format!("page {i}"))]).collect();
        let limits = Limits { max_pdf_pages: 2, ..Limits::default() };
        let out = convert(&pdf(&pages, "", ""), &limits).expect("pdf");
        assert_eq!(out.pages, Some(5));
        assert!(out.warning.as_deref().unwrap_or_default().contains("first 2 of 5 pages"));
        assert!(!to_markdown(&out.html).contains("page 2"));

        let blank = convert(&pdf(&[Vec::new()], "", ""), &Limits::default()).expect("pdf");
        assert!(blank.warning.as_deref().unwrap_or_default().contains("no text layer"));

        let err = convert(&encrypted_pdf(), &Limits::default()).expect_err("encrypted");
        assert_eq!(err, DocError::Encrypted(DocKind::Pdf));

        let err = convert(b"%PDF-1.4\nthis is not a PDF", &Limits::default()).expect_err("corrupt");
        assert!(matches!(err, DocError::Corrupt { kind: DocKind::Pdf, .. }), "{err:?}");
    }
}
