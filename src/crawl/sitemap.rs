//! Sitemaps: XML `urlset` and `sitemapindex` documents (gzipped or not) and plain-text
//! lists, parsed into page URLs and nested sitemap URLs. Decompression is capped, so a
//! hostile sitemap cannot exhaust memory.

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;

/// Largest decompressed sitemap (the sitemaps protocol allows 50 MB).
pub const MAX_SITEMAP_BYTES: u64 = 50 * 1024 * 1024;

/// What a sitemap lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sitemap {
    /// Page URLs (`<url><loc>`).
    pub pages: Vec<String>,
    /// Nested sitemaps (`<sitemap><loc>`).
    pub sitemaps: Vec<String>,
}

/// Parses sitemap bytes (gzip detected by its magic number).
pub fn parse(bytes: &[u8]) -> Result<Sitemap, String> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .take(MAX_SITEMAP_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("bad gzip: {e}"))?;
        if out.len() as u64 > MAX_SITEMAP_BYTES {
            return Err(format!("decompressed sitemap is larger than {MAX_SITEMAP_BYTES} bytes"));
        }
        return parse_plain(&out);
    }
    parse_plain(bytes)
}

fn parse_plain(bytes: &[u8]) -> Result<Sitemap, String> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    if bytes.get(start) != Some(&b'<') {
        // A text sitemap: one URL per line.
        let text = String::from_utf8_lossy(bytes);
        let pages = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("http://") || l.starts_with("https://"))
            .map(str::to_owned)
            .collect();
        return Ok(Sitemap { pages, sitemaps: Vec::new() });
    }
    let mut reader = Reader::from_reader(bytes);
    reader.config_mut().trim_text(true);
    let mut out = Sitemap::default();
    let mut parent: Option<bool> = None; // Some(true) inside <sitemap>, Some(false) inside <url>
    let mut loc: Option<String> = None;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                "sitemap" => parent = Some(true),
                "url" => parent = Some(false),
                "loc" if parent.is_some() => loc = Some(String::new()),
                _ => {}
            },
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                "sitemap" | "url" => parent = None,
                "loc" => {
                    if let Some(text) = loc.take() {
                        push(&mut out, parent, text.trim().to_owned());
                    }
                }
                _ => {}
            },
            Ok(Event::Text(t)) => {
                if let Some(text) = loc.as_mut() {
                    text.push_str(&t);
                }
            }
            Ok(Event::CData(t)) => {
                if let Some(text) = loc.as_mut() {
                    text.push_str(&t);
                }
            }
            Ok(Event::GeneralRef(r)) => {
                if let Some(text) = loc.as_mut() {
                    text.push_str(&crate::xml::entity(&r));
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                return Err(format!("bad sitemap XML at byte {}: {e}", reader.buffer_position()));
            }
        }
        buf.clear();
    }
    Ok(out)
}

fn push(out: &mut Sitemap, parent: Option<bool>, loc: String) {
    if loc.is_empty() {
        return;
    }
    match parent {
        Some(true) => out.sitemaps.push(loc),
        Some(false) => out.pages.push(loc),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn urlsets_and_indexes() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one?x=1&amp;y=2</loc><lastmod>2026-01-01</lastmod></url>
  <url><loc><![CDATA[http://a.test/two]]></loc></url>
</urlset>"#;
        let map = parse(xml).expect("parse");
        assert_eq!(map.pages, vec!["http://a.test/one?x=1&y=2", "http://a.test/two"]);
        let index = br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://a.test/s1.xml</loc></sitemap><sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap>
</sitemapindex>"#;
        assert_eq!(
            parse(index).expect("parse").sitemaps,
            vec!["http://a.test/s1.xml", "http://a.test/s2.xml.gz"]
        );
    }

    #[test]
    fn gzip_and_text_sitemaps() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"<urlset><url><loc>http://a.test/z</loc></url></urlset>").expect("gzip");
        let gz = enc.finish().expect("gzip");
        assert_eq!(parse(&gz).expect("parse").pages, vec!["http://a.test/z"]);
        let text = b"http://a.test/a\n\nnot a url\nhttps://a.test/b\n";
        assert_eq!(parse(text).expect("parse").pages, vec!["http://a.test/a", "https://a.test/b"]);
    }

    #[test]
    fn gzip_bombs_are_refused() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1024 * 1024];
        for _ in 0..51 {
            enc.write_all(&zeros).expect("gzip");
        }
        let bomb = enc.finish().expect("gzip");
        assert!(bomb.len() < 1024 * 1024);
        assert!(parse(&bomb).unwrap_err().contains("larger than"));
    }

    #[test]
    fn broken_xml_is_an_error_not_a_panic() {
        assert!(parse(b"<urlset><url><loc>http://a.test/</url></urlset>").is_err());
        // Truncated documents yield what was complete.
        let cut =
            parse(b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.te").expect("partial");
        assert_eq!(cut.pages, vec!["http://a.test/1"]);
    }
}
