//! Workbooks (XLSX, XLS, ODS) read with calamine: each sheet becomes a heading and a table
//! whose first row is the header. Sheets and rows are bounded by [`Limits`]; what a limit
//! leaves out is named in the warning.

use std::io::Cursor;

use calamine::{Data, Ods, Reader, Sheets, Xls, Xlsx, open_workbook_from_rs};

use super::html::{HtmlOut, escape};
use super::zipped::Package;
use super::{Converted, DocError, DocKind, Limits};

/// Converts a workbook of type `kind`.
pub(crate) fn convert(kind: DocKind, bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    if matches!(kind, DocKind::Xlsx | DocKind::Ods) {
        // calamine unpacks on its own: refuse containers that claim too much first.
        Package::open(kind, bytes, limits)?.check_declared_size()?;
    }
    let mut book = open(kind, bytes)?;
    let names = book.sheet_names();
    let mut out = HtmlOut::default();
    let mut cut: Vec<String> = Vec::new();
    if names.len() > limits.max_sheets {
        cut.push(format!("only the first {} of {} sheets are included", limits.max_sheets, names.len()));
    }
    for name in names.iter().take(limits.max_sheets) {
        let range = book.worksheet_range(name).map_err(|e| failure(kind, e))?;
        let mut rows: Vec<Vec<String>> = range
            .rows()
            .take(limits.max_rows)
            .map(|row| row.iter().map(|cell| escape(&cell_text(cell))).collect())
            .collect();
        if range.height() > limits.max_rows {
            cut.push(format!("sheet {name:?} is cut to {} of {} rows", limits.max_rows, range.height()));
        }
        trim(&mut rows);
        out.heading(2, &escape(name));
        out.table(&rows);
    }
    Ok(Converted {
        html: out.finish(None),
        pages: u32::try_from(names.len()).ok(),
        warning: (!cut.is_empty()).then(|| cut.join("; ")),
        ..Converted::default()
    })
}

fn open(kind: DocKind, bytes: &[u8]) -> Result<Sheets<Cursor<&[u8]>>, DocError> {
    let data = Cursor::new(bytes);
    let book = match kind {
        DocKind::Xlsx => {
            open_workbook_from_rs::<Xlsx<_>, _>(data).map(Sheets::Xlsx).map_err(calamine::Error::from)
        }
        DocKind::Xls => {
            open_workbook_from_rs::<Xls<_>, _>(data).map(Sheets::Xls).map_err(calamine::Error::from)
        }
        _ => open_workbook_from_rs::<Ods<_>, _>(data).map(Sheets::Ods).map_err(calamine::Error::from),
    };
    book.map_err(|e| failure(kind, e))
}

fn failure(kind: DocKind, e: calamine::Error) -> DocError {
    match e {
        calamine::Error::Xls(calamine::XlsError::Password)
        | calamine::Error::Ods(calamine::OdsError::Password) => DocError::Encrypted(kind),
        other => DocError::corrupt(kind, other),
    }
}

fn cell_text(cell: &Data) -> String {
    match cell {
        Data::Empty => String::new(),
        Data::Error(e) => format!("#{e:?}"),
        other => other.to_string().trim().to_owned(),
    }
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
    use crate::documents::samples::{to_markdown, xlsx};

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

    #[test]
    fn a_reader_panic_is_a_corrupt_file() {
        // Found by fuzzing: calamine's compound-file reader slices past the end of this
        // truncated XLS. The guard in `documents::convert` turns that into an error.
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
