//! Small real documents built in memory, for the converter tests and the test suite's
//! fixture sites: zip containers with the parts office suites write.

use std::io::Write;

use zip::write::SimpleFileOptions;

#[cfg(test)]
use crate::extract::{self, ExtractOptions, Wanted};

/// A zip file of `(name, content)` entries, the first one stored (as ODF wants `mimetype`).
pub fn zip_of(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (i, (name, content)) in entries.iter().enumerate() {
        let method = if i == 0 { zip::CompressionMethod::Stored } else { zip::CompressionMethod::Deflated };
        zip.start_file(*name, SimpleFileOptions::default().compression_method(method)).expect("zip entry");
        zip.write_all(content.as_bytes()).expect("zip write");
    }
    zip.finish().expect("zip finish").into_inner()
}

/// A DOCX whose body is `body` (WordprocessingML paragraphs and tables).
pub fn docx(body: &str, title: &str, author: &str) -> Vec<u8> {
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    let rels = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/sales" TargetMode="External"/><Relationship Id="rId5" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/></Relationships>"#;
    let numbering = r#"<?xml version="1.0" encoding="UTF-8"?><w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num></w:numbering>"#;
    let core = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title><dc:creator>{author}</dc:creator></cp:coreProperties>"#
    );
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>"#;
    let root_rels = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>"#;
    zip_of(&[
        ("[Content_Types].xml", types),
        ("_rels/.rels", root_rels),
        ("word/document.xml", &document),
        ("word/_rels/document.xml.rels", rels),
        ("word/numbering.xml", numbering),
        ("docProps/core.xml", &core),
    ])
}

/// An ODT whose `office:text` is `text`.
pub fn odt(text: &str, title: &str, author: &str) -> Vec<u8> {
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"><office:automatic-styles><text:list-style style:name="L2"><text:list-level-style-number text:level="1"/></text:list-style></office:automatic-styles><office:body><office:text>{text}</office:text></office:body></office:document-content>"#
    );
    let meta = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"><office:meta><dc:title>{title}</dc:title><meta:initial-creator>{author}</meta:initial-creator></office:meta></office:document-meta>"#
    );
    zip_of(&[
        ("mimetype", "application/vnd.oasis.opendocument.text"),
        ("content.xml", &content),
        ("meta.xml", &meta),
    ])
}

/// An XLSX with one sheet per `(name, rows)`; cells are inline strings, or numbers when
/// they parse as one.
pub fn xlsx(sheets: &[(&str, Vec<Vec<&str>>)]) -> Vec<u8> {
    let parts: Vec<(&str, String)> = sheets
        .iter()
        .map(|(name, rows)| {
            let mut data = String::new();
            for (r, row) in rows.iter().enumerate() {
                data.push_str(&format!(r#"<row r="{}">"#, r + 1));
                for (c, value) in row.iter().enumerate() {
                    let cell = format!("{}{}", (b'A' + c as u8) as char, r + 1);
                    if value.parse::<f64>().is_ok() {
                        data.push_str(&format!(r#"<c r="{cell}"><v>{value}</v></c>"#));
                    } else {
                        data.push_str(&format!(r#"<c r="{cell}" t="inlineStr"><is><t>{value}</t></is></c>"#));
                    }
                }
                data.push_str("</row>");
            }
            (*name, data)
        })
        .collect();
    xlsx_parts(&parts, None)
}

/// An XLSX from the `<sheetData>` XML of each `(name, data)` sheet and, when given, the
/// body of a shared-string part (`<sst …>…</sst>`): for files no spreadsheet would write.
pub fn xlsx_parts(sheets: &[(&str, String)], shared: Option<&str>) -> Vec<u8> {
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut listed = String::new();
    let mut rels = String::new();
    let mut types = String::new();
    for (i, (name, data)) in sheets.iter().enumerate() {
        let n = i + 1;
        listed.push_str(&format!(r#"<sheet name="{name}" sheetId="{n}" r:id="rId{n}"/>"#));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
        types.push_str(&format!(
            r#"<Override PartName="/xl/worksheets/sheet{n}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>"#
        ));
        entries.push((
            format!("xl/worksheets/sheet{n}.xml"),
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{data}</sheetData></worksheet>"#
            ),
        ));
    }
    if let Some(sst) = shared {
        rels.push_str(r#"<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>"#);
        types.push_str(r#"<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>"#);
        entries
            .push(("xl/sharedStrings.xml".into(), format!(r#"<?xml version="1.0" encoding="UTF-8"?>{sst}"#)));
    }
    let workbook = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>{listed}</sheets></workbook>"#
    );
    let types = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>{types}</Types>"#
    );
    let root_rels = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
    let wb_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#
    );
    let mut all: Vec<(&str, &str)> = vec![
        ("[Content_Types].xml", &types),
        ("_rels/.rels", root_rels),
        ("xl/workbook.xml", &workbook),
        ("xl/_rels/workbook.xml.rels", &wb_rels),
    ];
    all.extend(entries.iter().map(|(n, c)| (n.as_str(), c.as_str())));
    zip_of(&all)
}

/// The Markdown the scrape pipeline makes of converted HTML.
#[cfg(test)]
pub(crate) fn to_markdown(html: &str) -> String {
    let url = url::Url::parse("https://example.com/files/doc").expect("url");
    let opts = ExtractOptions { only_main_content: false, ..ExtractOptions::default() };
    let wanted = Wanted { markdown: true, ..Wanted::default() };
    extract::extract(html, &url, &opts, wanted).markdown.unwrap_or_default()
}

/// A piece of text placed on a PDF page (points from the bottom left; Helvetica).
#[derive(Debug, Clone, PartialEq)]
pub struct PdfText {
    /// Left edge.
    pub x: f32,
    /// Baseline.
    pub y: f32,
    /// Font size.
    pub size: f32,
    /// The text (ASCII).
    pub text: String,
}

/// A PDF of US-letter pages holding `pages`' text, with a document information dictionary.
pub fn pdf(pages: &[Vec<PdfText>], title: &str, author: &str) -> Vec<u8> {
    pdf_with(pages, title, author, false)
}

/// A PDF that asks for a user password (its keys are junk: no password opens it).
pub fn encrypted_pdf() -> Vec<u8> {
    pdf_with(&[vec![PdfText { x: 72.0, y: 700.0, size: 12.0, text: "secret".into() }]], "", "", true)
}

fn pdf_with(pages: &[Vec<PdfText>], title: &str, author: &str, encrypted: bool) -> Vec<u8> {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)");
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 6 + 2 * i)).collect();
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
        format!(
            "<< /Title ({}) /Author ({}) /Producer (ferrocrawl samples) >>",
            escape(title),
            escape(author)
        ),
        format!("<< /Filter /Standard /V 1 /R 2 /O ({}) /U ({}) /P -44 >>", "A".repeat(32), "B".repeat(32)),
    ];
    for (i, texts) in pages.iter().enumerate() {
        let content: String = texts
            .iter()
            .map(|t| format!("BT /F1 {} Tf {} {} Td ({}) Tj ET\n", t.size, t.x, t.y, escape(&t.text)))
            .collect();
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            7 + 2 * i
        ));
        objects.push(format!("<< /Length {} >>\nstream\n{content}endstream", content.len()));
    }
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    let encrypt = if encrypted {
        " /Encrypt 5 0 R /ID [<00112233445566778899AABBCCDDEEFF> <00112233445566778899AABBCCDDEEFF>]"
    } else {
        ""
    };
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R /Info 4 0 R{encrypt} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}
