//! OpenDocument spreadsheets (ODS): `content.xml` read as a stream into bounded sheets.
//! Spreadsheets repeat rows and cells out to the sheet's edge (`number-rows-repeated`,
//! `number-columns-repeated`, often a million times); repeats are counted, and only the
//! rows and cells that hold text are materialized, within the sheet, row and column limits
//! and a text budget, so a tiny file cannot claim billions of cells.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::sheets::{Book, MAX_CELLS, MAX_COLUMNS, Sheet};
use super::zipped::Package;
use super::{DocError, DocKind, Limits, odf};
use crate::xml::{attr, entity};

/// Reads an ODS workbook.
pub(crate) fn read(bytes: &[u8], limits: &Limits) -> Result<Book, DocError> {
    let mut pkg = Package::open(DocKind::Ods, bytes, limits)?;
    let content = pkg.required("content.xml")?;
    let (title, author) = odf::properties(&mut pkg)?;
    let mut reader = Reading::new(limits);
    reader.run(&content)?;
    Ok(Book {
        sheets: reader.sheets,
        total_sheets: reader.total_sheets,
        cells_cut: reader.cells_cut,
        title,
        author,
    })
}

/// The cell being read.
#[derive(Default)]
struct CellBuild {
    text: String,
    /// `office:value` and friends, for a cell that shows no text of its own.
    value: Option<String>,
    repeat: u64,
}

struct Reading {
    max_sheets: usize,
    max_rows: usize,
    /// Characters left to materialize (repeats multiply text).
    budget: u64,
    /// Cells left to materialize in the whole workbook.
    cells_left: usize,
    cells_cut: bool,
    limit: u64,
    sheets: Vec<Sheet>,
    total_sheets: usize,
    /// The sheet being filled (`None` past the sheet limit).
    sheet: Option<Sheet>,
    /// Rows seen in the sheet so far, empty ones included.
    seen_rows: u64,
    /// Empty rows waiting for a row with text (trailing ones are never stored).
    empty_rows: u64,
    row: Vec<String>,
    /// The current row has a cell with text (kept or not).
    row_has_text: bool,
    row_repeat: u64,
    /// Empty cells waiting for a cell with text.
    empty_cells: u64,
    cell: Option<CellBuild>,
    /// Tables nested inside the current cell (their text joins the cell).
    nested: usize,
}

fn repeat(e: &BytesStart<'_>, name: &str) -> u64 {
    attr(e, name).and_then(|v| v.trim().parse().ok()).unwrap_or(1).max(1)
}

impl Reading {
    fn new(limits: &Limits) -> Self {
        Self {
            max_sheets: limits.max_sheets,
            max_rows: limits.max_rows,
            budget: limits.max_unzipped_bytes,
            cells_left: MAX_CELLS,
            cells_cut: false,
            limit: limits.max_unzipped_bytes,
            sheets: Vec::new(),
            total_sheets: 0,
            sheet: None,
            seen_rows: 0,
            empty_rows: 0,
            row: Vec::new(),
            row_has_text: false,
            row_repeat: 1,
            empty_cells: 0,
            cell: None,
            nested: 0,
        }
    }

    fn run(&mut self, content: &str) -> Result<(), DocError> {
        let mut xml = Reader::from_str(content);
        while !crate::process::cancel::requested() {
            let event = xml.read_event().map_err(|e| DocError::corrupt(DocKind::Ods, e))?;
            match event {
                Event::Start(e) => self.start(&e, false)?,
                Event::Empty(e) => self.start(&e, true)?,
                Event::End(e) => self.end(e.local_name().as_ref())?,
                Event::Text(t) => self.text(&t),
                Event::GeneralRef(r) => self.text(&entity(&r)),
                Event::Eof => return Ok(()),
                _ => {}
            }
        }
        Ok(())
    }

    fn start(&mut self, e: &BytesStart<'_>, empty: bool) -> Result<(), DocError> {
        let name = e.local_name();
        let name = name.as_ref();
        if self.cell.is_some() {
            match name {
                "table" if !empty => self.nested += 1,
                "p" | "h" => self.separate(),
                "s" => self.text(&odf::spaces(e)),
                "tab" | "line-break" => self.text(" "),
                _ => {}
            }
            return Ok(());
        }
        match name {
            "table" => {
                self.start_sheet(attr(e, "name").unwrap_or_default());
                if empty {
                    self.end_sheet();
                }
            }
            "table-row" => {
                self.row.clear();
                self.row_has_text = false;
                self.empty_cells = 0;
                self.row_repeat = repeat(e, "number-rows-repeated");
                if empty {
                    self.end_row()?;
                }
            }
            "table-cell" | "covered-table-cell" => {
                let value = ["value", "date-value", "time-value", "boolean-value", "string-value"]
                    .iter()
                    .find_map(|a| attr(e, a));
                self.cell = Some(CellBuild {
                    value,
                    repeat: repeat(e, "number-columns-repeated"),
                    ..Default::default()
                });
                if empty {
                    self.end_cell()?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, name: &str) -> Result<(), DocError> {
        match name {
            "table" if self.nested > 0 => self.nested -= 1,
            "table-cell" | "covered-table-cell" if self.nested == 0 && self.cell.is_some() => {
                self.end_cell()?
            }
            "table-row" if self.cell.is_none() => self.end_row()?,
            "table" if self.cell.is_none() => self.end_sheet(),
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, text: &str) {
        if let Some(cell) = &mut self.cell {
            cell.text.push_str(text);
        }
    }

    /// A new paragraph in a cell: a space between it and what came before.
    fn separate(&mut self) {
        if let Some(cell) = &mut self.cell
            && !cell.text.is_empty()
        {
            cell.text.push(' ');
        }
    }

    fn start_sheet(&mut self, name: String) {
        self.total_sheets += 1;
        self.seen_rows = 0;
        self.empty_rows = 0;
        self.sheet = (self.sheets.len() < self.max_sheets).then(|| Sheet { name, ..Sheet::default() });
    }

    fn end_sheet(&mut self) {
        if let Some(sheet) = self.sheet.take() {
            self.sheets.push(sheet);
        }
    }

    /// Charges `chars` materialized characters against the budget.
    fn charge(&mut self, chars: u64) -> Result<(), DocError> {
        self.budget = self
            .budget
            .checked_sub(chars)
            .ok_or(DocError::TooLarge { kind: DocKind::Ods, limit: self.limit })?;
        Ok(())
    }

    /// Whether cells read now can still be kept (a sheet within the limits, rows and cells
    /// left); past that, rows are only counted.
    fn storing(&self) -> bool {
        self.cells_left > 0 && self.sheet.as_ref().is_some_and(|s| s.rows.len() < self.max_rows)
    }

    fn end_cell(&mut self) -> Result<(), DocError> {
        let Some(cell) = self.cell.take() else {
            return Ok(());
        };
        let shown = cell.text.trim();
        let text = if shown.is_empty() { cell.value.as_deref().unwrap_or("").trim() } else { shown };
        if text.is_empty() {
            self.empty_cells = self.empty_cells.saturating_add(cell.repeat);
            return Ok(());
        }
        self.row_has_text = true;
        if !self.storing() {
            return Ok(());
        }
        let room = MAX_COLUMNS.saturating_sub(self.row.len()) as u64;
        let gap = self.empty_cells.min(room);
        self.row.extend((0..gap).map(|_| String::new()));
        self.empty_cells = 0;
        let copies = cell.repeat.min(room - gap);
        if copies < cell.repeat
            && let Some(sheet) = &mut self.sheet
        {
            sheet.wide = true;
        }
        self.row.extend((0..copies).map(|_| text.to_owned()));
        Ok(())
    }

    fn end_row(&mut self) -> Result<(), DocError> {
        let repeat = self.row_repeat;
        self.seen_rows = self.seen_rows.saturating_add(repeat);
        if !std::mem::take(&mut self.row_has_text) {
            self.empty_rows = self.empty_rows.saturating_add(repeat);
            return Ok(());
        }
        let row = std::mem::take(&mut self.row);
        let Some(sheet) = &mut self.sheet else {
            return Ok(());
        };
        sheet.height = usize::try_from(self.seen_rows).unwrap_or(usize::MAX);
        let room = self.max_rows.saturating_sub(sheet.rows.len()) as u64;
        if row.is_empty() {
            // Read while nothing more could be kept: counted only.
            self.cells_cut |= room > 0;
            return Ok(());
        }
        let gap = self.empty_rows.min(room);
        sheet.rows.extend((0..gap).map(|_| Vec::new()));
        self.empty_rows = 0;
        let wanted = repeat.min(room - gap);
        let copies = wanted.min((self.cells_left / row.len()) as u64);
        self.cells_cut |= copies < wanted;
        self.cells_left -= usize::try_from(copies).unwrap_or(0) * row.len();
        let width: u64 = row.iter().map(|c| c.len() as u64 + 1).sum();
        self.charge(copies.saturating_mul(width))?;
        if let Some(sheet) = &mut self.sheet {
            sheet.rows.extend((0..copies).map(|_| row.clone()));
        }
        Ok(())
    }
}
