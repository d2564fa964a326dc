//! What kind of document a response or upload holds, from its bytes first (so a PDF served
//! as `application/octet-stream` is still a PDF), then its Content-Type, then the file
//! name's extension.

use std::fmt;

/// A document type ferrocrawl knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocKind {
    /// Portable Document Format.
    Pdf,
    /// Word (Office Open XML).
    Docx,
    /// Word 97–2003 (binary).
    Doc,
    /// OpenDocument text.
    Odt,
    /// Rich Text Format.
    Rtf,
    /// Excel (Office Open XML).
    Xlsx,
    /// Excel 97–2003 (binary).
    Xls,
    /// OpenDocument spreadsheet.
    Ods,
}

/// Every kind, with its extension and media type.
const KINDS: [(DocKind, &str, &str); 8] = [
    (DocKind::Pdf, "pdf", "application/pdf"),
    (DocKind::Docx, "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (DocKind::Doc, "doc", "application/msword"),
    (DocKind::Odt, "odt", "application/vnd.oasis.opendocument.text"),
    (DocKind::Rtf, "rtf", "application/rtf"),
    (DocKind::Xlsx, "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (DocKind::Xls, "xls", "application/vnd.ms-excel"),
    (DocKind::Ods, "ods", "application/vnd.oasis.opendocument.spreadsheet"),
];

impl DocKind {
    /// The usual file extension (lowercase, no dot).
    pub fn extension(self) -> &'static str {
        KINDS.iter().find(|(k, ..)| *k == self).map_or("", |(_, ext, _)| ext)
    }

    /// The registered media type.
    pub fn media_type(self) -> &'static str {
        KINDS.iter().find(|(k, ..)| *k == self).map_or("", |(.., media)| media)
    }

    /// The kind a file extension names (case-insensitive, without the dot).
    pub fn from_extension(ext: &str) -> Option<DocKind> {
        KINDS.iter().find(|(_, e, _)| e.eq_ignore_ascii_case(ext)).map(|(k, ..)| *k)
    }

    fn from_media_type(media: &str) -> Option<DocKind> {
        match media {
            "text/rtf" | "application/x-rtf" => Some(DocKind::Rtf),
            "application/x-pdf" => Some(DocKind::Pdf),
            m => KINDS.iter().find(|(.., t)| *t == m).map(|(k, ..)| *k),
        }
    }
}

impl fmt::Display for DocKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.extension().to_ascii_uppercase())
    }
}

/// The document kind of `body`, served as `content_type` under the name or URL path `name`;
/// `None` for anything else (HTML, text, images…).
pub fn detect(content_type: Option<&str>, name: Option<&str>, body: &[u8]) -> Option<DocKind> {
    if let Some(kind) = sniff(body, name) {
        return Some(kind);
    }
    let media = content_type.and_then(|ct| ct.split(';').next()).map(|m| m.trim().to_ascii_lowercase());
    if let Some(kind) = media.as_deref().and_then(DocKind::from_media_type) {
        return Some(kind);
    }
    // Only a generic or missing type lets the extension decide: an HTML page at `/x.pdf`
    // is still a page.
    let generic = media.as_deref().is_none_or(|m| m.is_empty() || m.ends_with("octet-stream"));
    generic.then(|| name.and_then(extension).and_then(DocKind::from_extension)).flatten()
}

/// The extension of the last path segment of `name`.
fn extension(name: &str) -> Option<&str> {
    let path = name.split(['?', '#']).next().unwrap_or(name);
    let file = path.rsplit('/').next().unwrap_or(path);
    file.rsplit_once('.').map(|(_, ext)| ext).filter(|e| !e.is_empty())
}

/// The kind the first bytes prove, when they do.
fn sniff(body: &[u8], name: Option<&str>) -> Option<DocKind> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(body.len());
    if body[start..].starts_with(b"%PDF-") {
        return Some(DocKind::Pdf);
    }
    if body.starts_with(b"{\\rtf") {
        return Some(DocKind::Rtf);
    }
    if body.starts_with(b"PK\x03\x04") {
        return sniff_zip(body);
    }
    if is_ole(body) {
        // An OLE compound file: Word and Excel name their main stream; a password-protected
        // DOCX or XLSX is an OLE file holding an encrypted package.
        if contains(body, &utf16("WordDocument")) {
            return Some(DocKind::Doc);
        }
        if contains(body, &utf16("Workbook")) || contains(body, &utf16("Book")) {
            return Some(DocKind::Xls);
        }
        return name
            .and_then(extension)
            .and_then(DocKind::from_extension)
            .filter(|k| matches!(k, DocKind::Doc | DocKind::Xls | DocKind::Docx | DocKind::Xlsx));
    }
    None
}

/// OOXML and ODF are zip files; the entry names (stored uncompressed) tell which.
fn sniff_zip(body: &[u8]) -> Option<DocKind> {
    // ODF puts an uncompressed `mimetype` entry first.
    if let Some(rest) = body.get(30..).filter(|r| r.starts_with(b"mimetype")) {
        let head = &rest[8..rest.len().min(100)];
        if head.starts_with(b"application/vnd.oasis.opendocument.text") {
            return Some(DocKind::Odt);
        }
        if head.starts_with(b"application/vnd.oasis.opendocument.spreadsheet") {
            return Some(DocKind::Ods);
        }
    }
    if contains(body, b"word/document.xml") {
        return Some(DocKind::Docx);
    }
    if contains(body, b"xl/workbook.xml") {
        return Some(DocKind::Xlsx);
    }
    None
}

fn is_ole(body: &[u8]) -> bool {
    body.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1])
}

fn utf16(s: &str) -> Vec<u8> {
    s.bytes().flat_map(|b| [b, 0]).collect()
}

/// Whether `body` is an Office file encrypted with a password (an OLE file holding an
/// `EncryptedPackage` stream instead of the zip container).
pub(crate) fn is_encrypted_office(body: &[u8]) -> bool {
    is_ole(body) && contains(body, &utf16("EncryptedPackage"))
}

/// Substring search in linear time (uploads reach 50 MB, and a type is looked up more
/// than once per request).
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_beat_a_generic_type() {
        assert_eq!(detect(Some("application/octet-stream"), None, b"%PDF-1.7\n..."), Some(DocKind::Pdf));
        assert_eq!(detect(None, Some("/a/file"), b"{\\rtf1\\ansi hello}"), Some(DocKind::Rtf));
    }

    #[test]
    fn types_and_extensions() {
        let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document; charset=binary";
        assert_eq!(detect(Some(docx), None, b"junk"), Some(DocKind::Docx));
        assert_eq!(detect(None, Some("/files/Report.XLSX?dl=1"), b"junk"), Some(DocKind::Xlsx));
        assert_eq!(detect(Some("text/html"), Some("/page.pdf"), b"<html>"), None);
        assert_eq!(detect(Some("text/html"), None, b"<html><p>x</p>"), None);
        assert_eq!(DocKind::from_extension("Odt"), Some(DocKind::Odt));
        assert_eq!(DocKind::Xls.to_string(), "XLS");
    }

    #[test]
    fn ole_streams_tell_word_from_excel() {
        let mut doc = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
        doc.extend("WordDocument".bytes().flat_map(|b| [b, 0]));
        assert_eq!(detect(None, None, &doc), Some(DocKind::Doc));
    }
}
