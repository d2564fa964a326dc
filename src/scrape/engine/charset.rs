//! Turning response bytes into text: the encoding comes from a byte-order mark, the
//! Content-Type charset, or a `<meta>` declaration in the first 1024 bytes (the HTML
//! prescan), in that order, defaulting to UTF-8. Labels follow the WHATWG Encoding
//! Standard (so `iso-8859-1` decodes as windows-1252, as browsers do).

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8};

/// Decodes `body` using the encoding the response declares; valid UTF-8 is borrowed, not
/// copied.
pub fn decode<'a>(body: &'a [u8], content_type: Option<&str>) -> Cow<'a, str> {
    let encoding = detect(body, content_type);
    let (text, _, _) = encoding.decode(body);
    text
}

/// The encoding `body` should be decoded with.
pub fn detect(body: &[u8], content_type: Option<&str>) -> &'static Encoding {
    if let Some((enc, _)) = Encoding::for_bom(body) {
        return enc;
    }
    if let Some(enc) = content_type.and_then(charset_param).and_then(Encoding::for_label) {
        return enc;
    }
    let head = &body[..body.len().min(1024)];
    match meta_charset(head).and_then(Encoding::for_label) {
        // A page cannot declare UTF-16 in ASCII-compatible markup; browsers use UTF-8.
        Some(enc) if enc.name().starts_with("UTF-16") => UTF_8,
        // Text in a legacy encoding is almost never valid UTF-8 by chance, so a body that
        // is valid UTF-8 despite its <meta> (a re-saved or migrated page) is read as UTF-8.
        Some(enc) if enc != UTF_8 && !body.is_ascii() && std::str::from_utf8(body).is_ok() => UTF_8,
        Some(enc) => enc,
        None => UTF_8,
    }
}

/// The `charset` parameter of a Content-Type value.
fn charset_param(content_type: &str) -> Option<&[u8]> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim().eq_ignore_ascii_case("charset").then(|| value.trim().trim_matches(['"', '\'']).as_bytes())
    })
}

/// The charset declared by `<meta charset>` or `<meta http-equiv=content-type content=...>`.
fn meta_charset(head: &[u8]) -> Option<&[u8]> {
    let lower: Vec<u8> = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = find(&lower[from..], b"<meta") {
        let start = from + pos;
        let end = lower[start..].iter().position(|&b| b == b'>').map_or(lower.len(), |p| start + p);
        let tag = &lower[start..end];
        if let Some(at) = find(tag, b"charset") {
            let rest = &tag[at + b"charset".len()..];
            let rest = trim_start(rest);
            if let Some(value) = rest.strip_prefix(b"=") {
                let value = trim_start(value);
                let value = value.strip_prefix(b"\"").or_else(|| value.strip_prefix(b"'")).unwrap_or(value);
                let len = value
                    .iter()
                    .position(|&b| matches!(b, b'"' | b'\'' | b';' | b' ' | b'/' | b'>'))
                    .unwrap_or(value.len());
                if len > 0 {
                    let offset = start + (value.as_ptr() as usize - tag.as_ptr() as usize);
                    return Some(&head[offset..offset + len]);
                }
            }
        }
        from = end.max(start + 1);
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_charset_wins_over_meta() {
        let body = b"<meta charset=utf-8><p>caf\xe9</p>";
        assert_eq!(decode(body, Some("text/html; charset=ISO-8859-1")), "<meta charset=utf-8><p>café</p>");
    }

    #[test]
    fn meta_charset_and_http_equiv_are_found() {
        let body = b"<html><head><META charset=\"windows-1252\"></head><p>\x93q\x94</p>";
        assert!(decode(body, Some("text/html")).contains("\u{201c}q\u{201d}"));
        let body =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\"><p>\xf0\xd2\xc9</p>";
        assert!(decode(body, None).contains("При"));
    }

    #[test]
    fn valid_utf8_outranks_a_wrong_meta_declaration() {
        let body = "<meta charset=gbk><p>腾讯新闻</p>".as_bytes();
        assert_eq!(detect(body, None), UTF_8);
        assert!(decode(body, None).contains("腾讯新闻"));
        // The HTTP header is the server's explicit statement and still wins.
        assert_eq!(
            detect(b"<meta charset=gbk><p>\xe8\x85</p>", Some("text/html; charset=gbk")).name(),
            "GBK"
        );
    }

    #[test]
    fn bom_and_default() {
        assert_eq!(decode(b"\xef\xbb\xbfhi", Some("text/html; charset=latin1")), "hi");
        assert_eq!(decode("naïve".as_bytes(), None), "naïve");
        assert_eq!(detect(b"<meta charset=utf-16>", None), UTF_8);
    }
}
