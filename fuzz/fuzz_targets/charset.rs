//! The charset detector: byte-order marks, a Content-Type charset (the input's first line)
//! and `<meta>` declarations, then decoding.
#![no_main]

use ferrocrawl::scrape::engine::charset::{decode, detect};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (header, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (std::str::from_utf8(&data[..at]).ok(), &data[at + 1..]),
        None => (None, data),
    };
    let _ = detect(body, header);
    let _ = decode(body, header);
    let _ = decode(data, None);
});
