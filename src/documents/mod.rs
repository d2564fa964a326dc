//! Documents: office files and spreadsheets turned into the same result as a web page. Each
//! converter is a pure function from bytes to simple HTML (headings, paragraphs, lists,
//! tables, links, images by reference) plus metadata; the HTML then goes through the normal
//! extraction, so Markdown and HTML formats come out exactly as they do for pages. No
//! network, no disk; every input is bounded by [`Limits`] (unzipped bytes, sheets, rows).

pub mod detect;
mod flow;
mod html;
mod odf;
mod ods;
mod ooxml;
mod pdf;
mod pdf_table;
mod rtf;
#[doc(hidden)]
pub mod samples;
mod sheets;
mod zipped;

pub use detect::{DocKind, detect};

/// Bounds applied to every document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes unpacked from a zip container (zip bombs stop here).
    pub max_unzipped_bytes: u64,
    /// Most sheets converted from a workbook.
    pub max_sheets: usize,
    /// Most rows converted per sheet.
    pub max_rows: usize,
    /// Most PDF pages converted.
    pub max_pdf_pages: usize,
}

impl Limits {
    /// The limits `settings` set.
    pub fn of(settings: &crate::config::DocumentSettings) -> Self {
        Self {
            max_unzipped_bytes: settings.max_unzipped_mb.saturating_mul(1 << 20),
            max_sheets: settings.max_sheets,
            max_rows: settings.max_rows,
            max_pdf_pages: settings.max_pdf_pages,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_unzipped_bytes: 200 << 20, max_sheets: 50, max_rows: 10_000, max_pdf_pages: 2_000 }
    }
}

/// Small limits that keep fuzzing fast.
#[doc(hidden)]
pub fn fuzz_limits() -> Limits {
    Limits { max_unzipped_bytes: 8 << 20, max_sheets: 8, max_rows: 1_000, max_pdf_pages: 20 }
}

/// A converted document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted {
    /// The document as simple HTML (`<html><head><title>…` when it has a title).
    pub html: String,
    /// Title from the document's properties.
    pub title: Option<String>,
    /// Author from the document's properties.
    pub author: Option<String>,
    /// Pages (or sheets, for workbooks), when the format has them.
    pub pages: Option<u32>,
    /// Something the reader should know (content left out by a limit).
    pub warning: Option<String>,
}

/// Why a document could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocError {
    /// The bytes are not a valid file of the detected type.
    #[error("the {kind} file could not be read: {detail}")]
    Corrupt {
        /// Detected type.
        kind: DocKind,
        /// What went wrong.
        detail: String,
    },
    /// The file is password-protected.
    #[error("the {0} file is encrypted")]
    Encrypted(DocKind),
    /// Unpacking would exceed [`Limits::max_unzipped_bytes`].
    #[error("the {kind} file unpacks to more than {limit} bytes")]
    TooLarge {
        /// Detected type.
        kind: DocKind,
        /// The limit.
        limit: u64,
    },
}

impl DocError {
    fn corrupt(kind: DocKind, detail: impl std::fmt::Display) -> Self {
        Self::Corrupt { kind, detail: detail.to_string() }
    }
}

/// Converts `bytes` of type `kind`. A converter that panics on a hostile file (the PDF and
/// spreadsheet readers are third-party code) is reported as a corrupt file, never a crash.
pub fn convert(kind: DocKind, bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    if detect::is_encrypted_office(bytes) {
        return Err(DocError::Encrypted(kind));
    }
    std::panic::catch_unwind(|| convert_unguarded(kind, bytes, limits))
        .unwrap_or_else(|_| Err(DocError::corrupt(kind, "the file's structure is invalid")))
}

/// [`convert`] without the panic guard, for the fuzz targets (`fuzz/`): a panic there is a
/// finding.
#[doc(hidden)]
pub fn convert_unguarded(kind: DocKind, bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    match kind {
        DocKind::Docx => ooxml::convert(bytes, limits),
        DocKind::Odt => odf::convert(bytes, limits),
        DocKind::Rtf => rtf::convert(bytes),
        DocKind::Xlsx | DocKind::Xls | DocKind::Ods => sheets::convert(kind, bytes, limits),
        DocKind::Pdf => pdf::convert(bytes, limits),
        DocKind::Doc => word97(bytes),
    }
}

/// Word 97–2003 (`.doc`): office_oxide reads the binary format (text in order, headings,
/// lists, tables) and writes HTML, which goes through the same extraction as the rest.
fn word97(bytes: &[u8]) -> Result<Converted, DocError> {
    let doc = office_document(DocKind::Doc, bytes)?;
    Ok(Converted { html: doc.to_html(), ..Converted::default() })
}

/// Opens a DOC, XLS or XLSX file with office_oxide, whose readers bound what a file can
/// make them allocate; an encrypted file is reported as such.
fn office_document(kind: DocKind, bytes: &[u8]) -> Result<office_oxide::Document, DocError> {
    use office_oxide::{DocumentFormat, OfficeError};
    let format = match kind {
        DocKind::Xls => DocumentFormat::Xls,
        DocKind::Xlsx => DocumentFormat::Xlsx,
        _ => DocumentFormat::Doc,
    };
    office_oxide::Document::from_reader(std::io::Cursor::new(bytes.to_vec()), format).map_err(|e| match e {
        OfficeError::Xls(office_oxide::xls::XlsError::Encrypted) => DocError::Encrypted(kind),
        other => DocError::corrupt(kind, other),
    })
}
