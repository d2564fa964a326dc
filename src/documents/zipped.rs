//! Zip containers (OOXML, ODF) read under a budget: every entry read counts against
//! [`Limits::max_unzipped_bytes`](super::Limits), so a zip bomb stops at the limit instead of
//! filling memory; password-protected entries are reported as encrypted.

use std::io::{Cursor, Read};

use zip::ZipArchive;
use zip::result::ZipError;

use super::{DocError, DocKind, Limits};

/// An open container.
pub(crate) struct Package<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
    kind: DocKind,
    limit: u64,
    left: u64,
}

impl<'a> Package<'a> {
    /// Opens `bytes` as a zip of a `kind` document.
    pub(crate) fn open(kind: DocKind, bytes: &'a [u8], limits: &Limits) -> Result<Self, DocError> {
        let archive = ZipArchive::new(Cursor::new(bytes)).map_err(|e| DocError::corrupt(kind, e))?;
        let limit = limits.max_unzipped_bytes;
        Ok(Self { archive, kind, limit, left: limit })
    }

    /// The text of entry `name`, or `None` when the container has no such entry.
    pub(crate) fn text(&mut self, name: &str) -> Result<Option<String>, DocError> {
        let kind = self.kind;
        let mut file = match self.archive.by_name(name) {
            Ok(file) => file,
            Err(ZipError::FileNotFound) => return Ok(None),
            Err(ZipError::UnsupportedArchive(ZipError::PASSWORD_REQUIRED)) => {
                return Err(DocError::Encrypted(kind));
            }
            Err(e) => return Err(DocError::corrupt(kind, e)),
        };
        if file.encrypted() {
            return Err(DocError::Encrypted(kind));
        }
        let mut out = Vec::with_capacity(usize::try_from(file.size().min(self.left)).unwrap_or(0));
        (&mut file).take(self.left + 1).read_to_end(&mut out).map_err(|e| DocError::corrupt(kind, e))?;
        let read = out.len() as u64;
        if read > self.left {
            return Err(DocError::TooLarge { kind, limit: self.limit });
        }
        self.left -= read;
        Ok(Some(
            String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ))
    }

    /// Entry `name`, which the format requires.
    pub(crate) fn required(&mut self, name: &str) -> Result<String, DocError> {
        self.text(name)?.ok_or_else(|| DocError::corrupt(self.kind, format!("{name} is missing")))
    }

    /// The total size the entries claim when unpacked, checked against the limit before
    /// anything is unpacked (for readers, like the spreadsheet one, that unpack on their own).
    pub(crate) fn check_declared_size(&mut self) -> Result<(), DocError> {
        let mut total = 0u64;
        for i in 0..self.archive.len() {
            let file = self.archive.by_index_raw(i).map_err(|e| DocError::corrupt(self.kind, e))?;
            if file.encrypted() {
                return Err(DocError::Encrypted(self.kind));
            }
            total = total.saturating_add(file.size());
        }
        if total > self.limit {
            return Err(DocError::TooLarge { kind: self.kind, limit: self.limit });
        }
        Ok(())
    }
}
