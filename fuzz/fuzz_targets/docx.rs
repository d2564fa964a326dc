//! Feeds arbitrary bytes to the Docx converter; a panic is a finding.
#![no_main]

use ferrocrawl::documents::{DocKind, convert_unguarded};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = convert_unguarded(DocKind::Docx, data, &ferrocrawl::documents::fuzz_limits());
});
