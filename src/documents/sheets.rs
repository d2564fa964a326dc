//! Workbooks (XLSX, XLS, ODS): each sheet becomes a heading and a table whose first row is
//! the header. XLSX and XLS are read by office_oxide, whose readers bound what a hostile
//! file can make them allocate (sparse sheets stay sparse, shared strings and record counts
//! are checked against the file); ODS by our own streaming reader (`ods`). calamine was
//! used first and dropped: a 1 KB file could make it reserve hundreds of gigabytes (a cell
//! at the sheet's far corner, an inflated shared-string count), which aborts the process.
//! Sheets, rows and columns are bounded by [`Limits`]; what a limit leaves out is named in
//! the warning.

use office_oxide::ir::{Element, InlineContent};

use super::html::{HtmlOut, escape};
use super::zipped::Package;
use super::{Converted, DocError, DocKind, Limits, ods};

/// Most columns converted per sheet (Excel allows 16 384; a table that wide reads as noise).
pub(crate) const MAX_COLUMNS: usize = 1024;
/// Most cells converted per workbook. The converted table goes through the HTML pipeline,
/// whose tree costs a few hundred bytes a cell: a million cells took 457 MB for a 1.3 KB
/// file; 200 000 (ten thousand rows of twenty columns) keep it near a hundred.
pub(crate) const MAX_CELLS: usize = 200_000;

/// One sheet's cell texts (rows may be ragged). Readers keep within the row, column and
/// cell limits and record what they left out; the renderer only renders.
#[derive(Debug, Default)]
pub(crate) struct Sheet {
    pub name: String,
    pub rows: Vec<Vec<String>>,
    /// Rows the sheet has, including those beyond the row limit.
    pub height: usize,
    /// Columns beyond [`MAX_COLUMNS`] were left out.
    pub wide: bool,
}

/// A workbook as read.
#[derive(Debug, Default)]
pub(crate) struct Book {
    pub sheets: Vec<Sheet>,
    /// Sheets the workbook has, including those beyond the sheet limit.
    pub total_sheets: usize,
    /// Rows were left out once [`MAX_CELLS`] cells were read.
    pub cells_cut: bool,
    pub title: Option<String>,
    pub author: Option<String>,
}

/// Converts a workbook of type `kind`.
pub(crate) fn convert(kind: DocKind, bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    let book = match kind {
        DocKind::Ods => ods::read(bytes, limits)?,
        _ => office(kind, bytes, limits)?,
    };
    let mut out = HtmlOut::default();
    let mut cut: Vec<String> = Vec::new();
    if book.total_sheets > limits.max_sheets {
        cut.push(format!(
            "only the first {} of {} sheets are included",
            limits.max_sheets, book.total_sheets
        ));
    }
    for mut sheet in book.sheets {
        if sheet.height > limits.max_rows {
            cut.push(format!(
                "sheet {:?} is cut to {} of {} rows",
                sheet.name, limits.max_rows, sheet.height
            ));
        }
        if sheet.wide {
            cut.push(format!("sheet {:?} is cut to {MAX_COLUMNS} columns", sheet.name));
        }
        trim(&mut sheet.rows);
        out.heading(2, &escape(&sheet.name));
        out.text_table(&sheet.rows);
    }
    if book.cells_cut {
        cut.push(format!("only the first {MAX_CELLS} cells are included"));
    }
    let title = book.title.filter(|t| !t.trim().is_empty());
    Ok(Converted {
        html: out.finish(title.as_deref()),
        title,
        author: book.author.filter(|a| !a.trim().is_empty()),
        pages: u32::try_from(book.total_sheets).ok(),
        warning: (!cut.is_empty()).then(|| cut.join("; ")),
    })
}

/// XLSX and XLS through office_oxide's document model: one section per sheet, its cells in
/// the section's table.
fn office(kind: DocKind, bytes: &[u8], limits: &Limits) -> Result<Book, DocError> {
    if kind == DocKind::Xlsx {
        // Our unzip budget holds for XLSX too: refuse a package that claims too much.
        Package::open(kind, bytes, limits)?.check_declared_size()?;
    }
    let doc = super::office_document(kind, bytes)?;
    let ir = doc.to_ir();
    let mut cells_left = MAX_CELLS;
    let mut cells_cut = false;
    let mut sheets = Vec::new();
    for section in ir.sections.iter().take(limits.max_sheets) {
        let table = section.elements.iter().find_map(|e| match e {
            Element::Table(t) => Some(t),
            _ => None,
        });
        let mut sheet = Sheet {
            name: section.title.clone().unwrap_or_default(),
            height: table.map_or(0, |t| t.rows.len()),
            ..Sheet::default()
        };
        for row in table.map_or(&[][..], |t| &t.rows).iter().take(limits.max_rows) {
            let width = row.cells.len().min(MAX_COLUMNS);
            if width > cells_left {
                cells_cut = true;
                break;
            }
            cells_left -= width;
            sheet.wide |= row.cells.len() > MAX_COLUMNS;
            sheet.rows.push(row.cells.iter().take(MAX_COLUMNS).map(|c| cell_text(&c.content)).collect());
        }
        sheets.push(sheet);
    }
    Ok(Book {
        sheets,
        total_sheets: ir.sections.len(),
        cells_cut,
        title: ir.metadata.title.clone(),
        author: ir.metadata.author.clone(),
    })
}

/// The text of a cell's paragraphs, one space between them.
fn cell_text(content: &[Element]) -> String {
    let mut text = String::new();
    for element in content {
        if let Element::Paragraph(p) = element {
            if !text.is_empty() {
                text.push(' ');
            }
            for inline in &p.content {
                match inline {
                    InlineContent::Text(span) => text.push_str(&span.text),
                    InlineContent::LineBreak => text.push(' '),
                    _ => {}
                }
            }
        }
    }
    text.trim().to_owned()
}

/// Drops empty trailing rows and the columns that are empty in every row.
fn trim(rows: &mut Vec<Vec<String>>) {
    while rows.last().is_some_and(|r| r.iter().all(String::is_empty)) {
        rows.pop();
    }
    let width =
        rows.iter().map(|r| r.iter().rposition(|c| !c.is_empty()).map_or(0, |i| i + 1)).max().unwrap_or(0);
    for row in rows.iter_mut() {
        row.truncate(width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::samples::{to_markdown, xlsx, xlsx_parts, zip_of};

    #[test]
    fn every_sheet_is_a_heading_and_a_table() {
        let book = xlsx(&[
            ("Sales", vec![vec!["Region", "Total"], vec!["North", "42"], vec!["South", "7.5"]]),
            ("Staff", vec![vec!["Name", "Role"], vec!["Ada", "Analyst"]]),
        ]);
        let out = convert(DocKind::Xlsx, &book, &Limits::default()).expect("xlsx");
        assert_eq!(out.pages, Some(2));
        let md = to_markdown(&out.html);
        assert!(md.contains("## Sales"), "{md}");
        assert!(
            md.contains("| Region | Total |")
                && md.contains("| North | 42 |")
                && md.contains("| South | 7.5 |"),
            "{md}"
        );
        assert!(md.contains("## Staff") && md.contains("| Ada | Analyst |"), "{md}");
        assert_eq!(out.warning, None);
    }

    /// Files of a kilobyte that made the previous reader reserve hundreds of gigabytes (and
    /// so abort the process): a cell at the sheet's far corner, and a shared-string table
    /// that claims four billion entries.
    #[test]
    fn hostile_workbooks_stay_small() {
        let corner = r#"<row r="1"><c r="A1"><v>1</v></c><c r="B1"><v>2</v></c></row><row r="1048576"><c r="XFD1048576"><v>3</v></c></row>"#;
        let out =
            convert(DocKind::Xlsx, &xlsx_parts(&[("Far", corner.to_owned())], None), &Limits::default())
                .expect("sparse sheet");
        assert!(to_markdown(&out.html).contains("| 1 | 2 |"), "{}", out.html);
        assert!(out.warning.unwrap_or_default().contains("columns"));

        let sst = r#"<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="4000000000" uniqueCount="4000000000"><si><t>kale</t></si></sst>"#;
        let cells = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>0</v></c></row>"#;
        let out =
            convert(DocKind::Xlsx, &xlsx_parts(&[("S", cells.to_owned())], Some(sst)), &Limits::default())
                .expect("inflated shared strings");
        assert!(out.html.contains("kale"), "{}", out.html);
    }

    fn ods(table: &str) -> Vec<u8> {
        let content = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>{table}</office:spreadsheet></office:body></office:document-content>"#
        );
        zip_of(&[("mimetype", "application/vnd.oasis.opendocument.spreadsheet"), ("content.xml", &content)])
    }

    #[test]
    fn ods_cells_values_and_repeats() {
        let table = r#"<table:table table:name="Beds"><table:table-row><table:table-cell office:value-type="string"><text:p>Bed</text:p></table:table-cell><table:table-cell table:number-columns-repeated="2"/><table:table-cell><text:p>Crop</text:p><text:p>and<text:s text:c="2"/>notes</text:p></table:table-cell></table:table-row>
<table:table-row table:number-rows-repeated="2"><table:table-cell office:value-type="float" office:value="3"/><table:table-cell table:number-columns-repeated="2"><text:p>x</text:p></table:table-cell></table:table-row>
<table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table>
<table:table table:name="Empty"/><table:table table:name="Third"><table:table-row><table:table-cell><text:p>c</text:p></table:table-cell></table:table-row></table:table>"#;
        let limits = Limits { max_sheets: 2, ..Limits::default() };
        let out = convert(DocKind::Ods, &ods(table), &limits).expect("ods");
        let md = to_markdown(&out.html);
        assert!(md.contains("## Beds") && md.contains("| Bed | | | Crop and notes |"), "{md}");
        assert_eq!(md.matches("| 3 | x | x | |").count(), 2, "{md}");
        assert_eq!(out.pages, Some(3));
        let warning = out.warning.unwrap_or_default();
        assert!(warning.contains("2 of 3 sheets") && !warning.contains("rows"), "{warning}");
    }

    #[test]
    fn ods_repeats_to_the_sheet_edge_are_bounded() {
        let table = r#"<table:table table:name="S"><table:table-row table:number-rows-repeated="1048576"><table:table-cell table:number-columns-repeated="16384" office:value-type="string"><text:p>x</text:p></table:table-cell></table:table-row></table:table>"#;
        let limits = Limits { max_rows: 100, ..Limits::default() };
        let out = convert(DocKind::Ods, &ods(table), &limits).expect("ods");
        let warning = out.warning.unwrap_or_default();
        assert!(warning.contains("100 of 1048576 rows") && warning.contains("1024 columns"), "{warning}");
        assert_eq!(out.html.matches("<tr>").count(), 100);
        let out = convert(DocKind::Ods, &ods(table), &Limits::default()).expect("ods");
        assert!(out.warning.unwrap_or_default().contains(&format!("first {MAX_CELLS} cells")));
    }

    #[test]
    fn a_reader_panic_is_a_corrupt_file() {
        // Found by fuzzing: the first workbook reader sliced past the end of this
        // truncated XLS. The guard in `documents::convert` turns any panic into an error.
        let bytes = include_bytes!("../../tests/fixtures/documents/xls-truncated-cfb.bin");
        let err = crate::documents::convert(DocKind::Xls, bytes, &Limits::default()).expect_err("corrupt");
        assert!(matches!(err, DocError::Corrupt { kind: DocKind::Xls, .. }), "{err:?}");
    }

    #[test]
    fn limits_cut_sheets_and_rows_and_say_so() {
        let rows: Vec<Vec<&str>> = (0..30).map(|_| vec!["x"]).collect();
        let book = xlsx(&[("A", rows.clone()), ("B", rows)]);
        let limits = Limits { max_sheets: 1, max_rows: 10, ..Limits::default() };
        let out = convert(DocKind::Xlsx, &book, &limits).expect("xlsx");
        let warning = out.warning.unwrap_or_default();
        assert!(warning.contains("1 of 2 sheets") && warning.contains("10 of 30 rows"), "{warning}");
        assert!(!to_markdown(&out.html).contains("## B"));
    }
}
