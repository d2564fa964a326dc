//! Feeds arbitrary bytes to the workbook converter as XLSX, XLS and ODS (the first byte
//! picks); a panic is a finding.
#![no_main]

use ferrocrawl::documents::{DocKind, convert_unguarded};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let kind = [DocKind::Xlsx, DocKind::Xls, DocKind::Ods][usize::from(pick % 3)];
    let _ = convert_unguarded(kind, rest, &ferrocrawl::documents::fuzz_limits());
});
