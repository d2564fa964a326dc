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
    let rels = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/sales" TargetMode="External"/><Relationship Id="rId5" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/></Relationships>"#;
    let numbering = r#"<?xml version="1.0" encoding="UTF-8"?><w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num></w:numbering>"#;
    let core = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title><dc:creator>{author}</dc:creator></cp:coreProperties>"#
    );
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    zip_of(&[
        ("[Content_Types].xml", types),
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
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut listed = String::new();
    let mut rels = String::new();
    let mut types = String::new();
    for (i, (name, rows)) in sheets.iter().enumerate() {
        let n = i + 1;
        listed.push_str(&format!(r#"<sheet name="{name}" sheetId="{n}" r:id="rId{n}"/>"#));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
        types.push_str(&format!(
            r#"<Override PartName="/xl/worksheets/sheet{n}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>"#
        ));
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
        entries.push((
            format!("xl/worksheets/sheet{n}.xml"),
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{data}</sheetData></worksheet>"#
            ),
        ));
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
